//! The shapes every repository repeats, written once (issue 13 §5):
//!
//! - statements: diesel code in a read or a write transaction ([`read_with!`], [`write_with!`]);
//!   insert a row ([`insert_row!`], [`insert_absent!`]); find one row by its primary key or a
//!   filter ([`find_row!`], [`find_where!`]); load rows ([`load_rows!`]); update or delete what
//!   a filter selects ([`update_rows!`], [`delete_rows!`], [`update_one!`], [`update_one_if!`]);
//!   one page of rows ([`page_rows!`], [`read_page!`]); a change with its effects in the same
//!   transaction ([`insert_with_effects!`], [`update_with_effects!`], [`replace_versioned!`]);
//! - what came back, in the domain's terms: [`found`], [`loaded`], [`counted`], [`page_of`];
//! - the usual error mapping: [`duplicate_or`], [`unreadable`]; and [`advisory_lock`].
//!
//! Macros rather than generic functions for the statements: the same diesel expression is
//! compiled once per backend (like `with_conn!`), which generic bounds over two connection types
//! would have to spell out for every query shape. The macros evaluate their query arguments
//! inside the transaction's closure (which is `move`), so a query may borrow what the closure
//! took; only row values (`$row`, `$key`, `$effects`) are evaluated before it.

use std::future::Future;

use diesel::RunQueryDsl;
use idconsent_kernel::{Page, PageRequest};

use crate::cached::CacheStatement;
use crate::db::AnyConnection;
use crate::error::DbError;

/// Runs `$body`, diesel code on the backend's connection `$c`, in a read: a future of
/// `Result<T, DbError>` for a body of `Result<T, E>` (`E` a diesel error or [`DbError`]).
macro_rules! read_with {
    ($db:expr, |$c:ident| $body:expr) => {
        $db.read(move |conn| Ok($crate::with_conn!(conn, |$c| $body)?))
    };
}
pub(crate) use read_with;

/// Runs `$body`, diesel code on the backend's connection `$c`, in a write transaction: a future
/// of `Result<T, DbError>`; an error rolls the transaction back.
macro_rules! write_with {
    ($db:expr, |$c:ident| $body:expr) => {
        $db.write(move |conn| Ok($crate::with_conn!(conn, |$c| $body)?))
    };
}
pub(crate) use write_with;

/// Inserts `$row` into `$table` in a write transaction; a future of `Result<(), DbError>`.
macro_rules! insert_row {
    ($db:expr, $table:expr, $row:expr) => {{
        let row = $row;
        $db.write(move |conn| {
            $crate::with_conn!(conn, |c| diesel::insert_into($table)
                .values(&row)
                .execute(c))?;
            Ok(())
        })
    }};
}
pub(crate) use insert_row;

/// The row of `$table` whose primary key is `$key`, selected as `$row`; a future of
/// `Result<Option<$row>, DbError>`.
macro_rules! find_row {
    ($db:expr, $table:expr, $key:expr, $row:ty) => {{
        let key = $key;
        $crate::repo::find_where!($db, $table.find(key), $row)
    }};
}
pub(crate) use find_row;

/// The first row `$query` (a filtered table) selects, as `$row`; a future of
/// `Result<Option<$row>, DbError>`.
macro_rules! find_where {
    ($db:expr, $query:expr, $row:ty) => {
        $crate::repo::read_with!($db, |c| $query
            .select(<$row>::as_select())
            .get_result::<$row>(c)
            .optional())
    };
}
pub(crate) use find_where;

/// The rows `$query` (filtered, ordered, limited) selects, as `$row`; a future of
/// `Result<Vec<$row>, DbError>`.
macro_rules! load_rows {
    ($db:expr, $query:expr, $row:ty) => {
        $crate::repo::read_with!($db, |c| $query.select(<$row>::as_select()).load::<$row>(c))
    };
}
pub(crate) use load_rows;

/// Updates the rows `$target` selects with `$change` in a write transaction; a future of
/// `Result<usize, DbError>`, how many changed. With its condition in `$target`, this is the
/// compare-and-set of one row: 1 when the condition held, 0 when not (or there is no row).
macro_rules! update_rows {
    ($db:expr, $target:expr, $change:expr) => {
        $crate::repo::write_with!($db, |c| $crate::cached::CacheStatement::cached(
            diesel::update($target).set($change)
        )
        .execute(c))
    };
}
pub(crate) use update_rows;

/// Deletes the rows `$target` selects in a write transaction; a future of
/// `Result<usize, DbError>`, how many went.
macro_rules! delete_rows {
    ($db:expr, $target:expr) => {
        $crate::repo::write_with!($db, |c| diesel::delete($target).execute(c))
    };
}
pub(crate) use delete_rows;

/// Inserts `$row` into `$table` unless its key is taken (`ON CONFLICT DO NOTHING`), in a write
/// transaction; a future of `Result<bool, DbError>`, whether it was inserted: of racing inserts
/// of one key exactly one gets `true`.
macro_rules! insert_absent {
    ($db:expr, $table:expr, $row:expr) => {{
        let row = $row;
        // One statement: on PostgreSQL it commits alone, without BEGIN/COMMIT round trips.
        $db.write_autocommit(move |conn| {
            let inserted = $crate::cached::insert_counted!(
                conn,
                diesel::insert_into($table)
                    .values(&row)
                    .on_conflict_do_nothing()
            )?;
            Ok(inserted == 1)
        })
    }};
}
pub(crate) use insert_absent;

/// Updates the one row `$target` selects with `$change` in a write transaction; a future of
/// `Result<(), DbError>` that is the merchant store's not-found rollback when no row changed.
macro_rules! update_one {
    ($db:expr, $target:expr, $change:expr) => {{
        $db.write(move |conn| {
            let changed = $crate::with_conn!(conn, |c| $crate::cached::CacheStatement::cached(
                diesel::update($target).set($change)
            )
            .execute(c))?;
            $crate::merchant::found_one(changed)
        })
    }};
}
pub(crate) use update_one;

/// Updates row `$key` of `$table` (a schema module whose key column is `id`) with `$change` if
/// `$condition` holds, in a write transaction; a future of `Result<(), DbError>`. When nothing
/// changed it looks again: the `$conflict` rollback for a row in the wrong state, the merchant
/// store's not-found rollback for no row.
macro_rules! update_one_if {
    ($db:expr, $table:ident, $key:expr, $condition:expr, $change:expr, $conflict:expr) => {{
        let key = $key;
        $db.write(move |conn| {
            $crate::with_conn!(conn, |c| {
                let changed = diesel::update($table::table.find(&key).filter($condition))
                    .set($change)
                    .execute(c)?;
                if changed == 0 {
                    let exists = $table::table
                        .find(&key)
                        .select($table::id)
                        .get_result::<String>(c)
                        .optional()?
                        .is_some();
                    return Err($crate::DbError::Rollback(if exists {
                        $conflict
                    } else {
                        $crate::merchant::NOT_FOUND
                    }));
                }
                Ok(())
            })
        })
    }};
}
pub(crate) use update_one_if;

/// One page of the rows `$scoped()` selects (a closure giving a boxed, filtered query), ordered
/// by `$order`, with the count of all of them: `(Vec<$row>, i64)`, or `?` on the first failure.
/// Used inside a `with_conn!` body, so `$c` is the backend's connection.
macro_rules! page_rows {
    ($c:expr, $scoped:expr, $order:expr, $row:ty, $page:expr) => {{
        let page: idconsent_kernel::PageRequest = $page;
        let total: i64 = $scoped().count().get_result($c)?;
        let rows = $scoped()
            .order($order)
            .limit(i64::from(page.limit()))
            .offset(i64::try_from(page.offset()).unwrap_or(i64::MAX))
            .select(<$row>::as_select())
            .load::<$row>($c)?;
        (rows, total)
    }};
}
pub(crate) use page_rows;

/// [`page_rows!`] in a read of its own: a future of `Result<(Vec<$row>, i64), DbError>`.
/// `$scoped` is written out as a closure (`|| { … }`), so that it is compiled once per backend.
macro_rules! read_page {
    ($db:expr, $scoped:expr, $order:expr, $row:ty, $page:expr) => {{
        let page: idconsent_kernel::PageRequest = $page;
        $db.read(move |conn| {
            $crate::with_conn!(conn, |c| {
                let scoped = $scoped;
                Ok::<_, $crate::DbError>($crate::repo::page_rows!(c, scoped, $order, $row, page))
            })
        })
    }};
}
pub(crate) use read_page;

/// Inserts `$row` into `$table` with `$effects` (outbox, charges) in one write transaction; a
/// future of `Result<(), DbError>` (a duplicate key is the database's unique violation).
macro_rules! insert_with_effects {
    ($db:expr, $table:expr, $row:expr, $effects:expr) => {{
        let (row, effects) = ($row, $effects);
        $db.write(move |mut conn| {
            $crate::with_conn!(conn.reborrow(), |c| diesel::insert_into($table)
                .values(&row)
                .execute(c))?;
            $crate::usage::write_effects(conn, &effects)
        })
    }};
}
pub(crate) use insert_with_effects;

/// Runs `$body` — diesel code on the backend's connection `$c` whose conditional update (and
/// what follows from it) answers how many rows it changed — in a write transaction, with
/// `$effects` (outbox, charges) in the same transaction only if it changed one; a future of
/// `Result<bool, DbError>`, whether it did.
macro_rules! update_with_effects {
    ($db:expr, $effects:expr, |$c:ident| $body:expr) => {{
        let effects: idconsent_webhook::Effects = $effects;
        $db.write(move |mut conn| {
            let changed = $crate::with_conn!(conn.reborrow(), |$c| $body)? == 1;
            if changed {
                $crate::usage::write_effects(conn, &effects)?;
            }
            Ok(changed)
        })
    }};
}
pub(crate) use update_with_effects;

/// Replaces the row of `$table` whose `$id` column equals `$row.id` with `$row` if its
/// `$version` column is still `$expected`, with `$effects` in the same transaction; a future of
/// `Result<bool, DbError>` (whether it was replaced). The version in the WHERE makes this a
/// compare-and-swap: of two writers that loaded the same version, the second changes nothing.
macro_rules! replace_versioned {
    ($db:expr, $table:expr, $id:expr, $version:expr, $row:expr, $expected:expr, $effects:expr) => {{
        let (row, expected) = ($row, $expected);
        $crate::repo::update_with_effects!($db, $effects, |c| diesel::update(
            $table.filter($id.eq(&row.id)).filter($version.eq(expected))
        )
        .set(&row)
        .execute(c))
    }};
}
pub(crate) use replace_versioned;

/// What a lookup found, as the domain's value: a failed read through `error`, the row through
/// `into` (which reports a row that does not read back).
pub(crate) async fn found<R, T, E>(
    lookup: impl Future<Output = Result<Option<R>, DbError>>,
    error: impl FnOnce(DbError) -> E,
    into: impl FnOnce(R) -> Result<T, E>,
) -> Result<Option<T>, E> {
    lookup.await.map_err(error)?.map(into).transpose()
}

/// What a listing loaded, as the domain's values: a failed read through `error`, each row
/// through `into`; the first row that does not read back fails the whole list.
pub(crate) async fn loaded<R, T, E>(
    load: impl Future<Output = Result<Vec<R>, DbError>>,
    error: impl FnOnce(DbError) -> E,
    into: impl FnMut(R) -> Result<T, E>,
) -> Result<Vec<T>, E> {
    load.await.map_err(error)?.into_iter().map(into).collect()
}

/// How many rows a statement changed or removed, as the ports count them; a failure through
/// `error`.
pub(crate) async fn counted<E>(
    statement: impl Future<Output = Result<usize, DbError>>,
    error: impl FnOnce(DbError) -> E,
) -> Result<u64, E> {
    let rows = statement.await.map_err(error)?;
    Ok(u64::try_from(rows).unwrap_or(u64::MAX))
}

/// The page of domain values for one page of rows (as [`page_rows!`] reads them) and the count
/// of all rows.
pub(crate) fn page_of<R, T, E>(
    (rows, total): (Vec<R>, i64),
    request: PageRequest,
    into: impl FnMut(R) -> Result<T, E>,
) -> Result<Page<T>, E> {
    Ok(Page {
        items: rows.into_iter().map(into).collect::<Result<_, _>>()?,
        request,
        total: u64::try_from(total).unwrap_or(0),
    })
}

/// The error mapping of an insert: `duplicate` for a unique violation, anything else through
/// `other`.
pub(crate) fn duplicate_or<E>(
    duplicate: E,
    other: impl FnOnce(DbError) -> E,
) -> impl FnOnce(DbError) -> E {
    move |error| {
        if error.is_unique_violation() {
            duplicate
        } else {
            other(error)
        }
    }
}

/// The source of an error about a stored value that does not read back, `column` of the row
/// `id` of `table`: the database was changed behind the adapter's back.
pub(crate) fn unreadable(
    table: &str,
    column: &str,
    id: &str,
) -> Box<dyn std::error::Error + Send + Sync> {
    format!("unreadable stored value: {table}.{column} of {id}").into()
}

/// On PostgreSQL, takes the advisory lock of `key` until the transaction ends, so that write
/// transactions about the same thing run one after another (a count checked before an insert
/// stays true until the commit); SQLite's single writer already runs them one at a time.
pub(crate) fn advisory_lock(conn: AnyConnection<'_>, key: &str) -> Result<(), DbError> {
    if let AnyConnection::Postgres(c) = conn {
        diesel::sql_query("SELECT pg_advisory_xact_lock(hashtext($1))::text")
            .bind::<diesel::sql_types::Text, _>(key)
            .cached()
            .execute(c)?;
    }
    Ok(())
}
