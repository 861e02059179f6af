//! The shapes every repository repeats, written once (issue 13 §5): insert one row, find one
//! row by its primary key. Macros rather than generic functions: the same diesel expression is
//! compiled once per backend (like `with_conn!`), which generic bounds over two connection types
//! would have to spell out for every query shape.

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
        $db.read(move |conn| {
            Ok($crate::with_conn!(conn, |c| $table
                .find(key)
                .select(<$row>::as_select())
                .get_result::<$row>(c)
                .optional())?)
        })
    }};
}
pub(crate) use find_row;

/// Updates the one row `$target` selects with `$change` in a write transaction; a future of
/// `Result<(), DbError>` that is the merchant store's not-found rollback when no row changed.
macro_rules! update_one {
    ($db:expr, $target:expr, $change:expr) => {{
        $db.write(move |conn| {
            let changed =
                $crate::with_conn!(conn, |c| diesel::update($target).set($change).execute(c))?;
            $crate::merchant::found_one(changed)
        })
    }};
}
pub(crate) use update_one;

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

/// Replaces the row of `$table` whose `$id` column equals `$row.id` with `$row` if its
/// `$version` column is still `$expected`, with `$effects` in the same transaction; a future of
/// `Result<bool, DbError>` (whether it was replaced). The version in the WHERE makes this a
/// compare-and-swap: of two writers that loaded the same version, the second changes nothing.
macro_rules! replace_versioned {
    ($db:expr, $table:expr, $id:expr, $version:expr, $row:expr, $expected:expr, $effects:expr) => {{
        let (row, expected, effects) = ($row, $expected, $effects);
        $db.write(move |mut conn| {
            let changed = $crate::with_conn!(conn.reborrow(), |c| diesel::update(
                $table.filter($id.eq(&row.id)).filter($version.eq(expected))
            )
            .set(&row)
            .execute(c))?;
            if changed == 1 {
                $crate::usage::write_effects(conn, &effects)?;
            }
            Ok(changed == 1)
        })
    }};
}
pub(crate) use replace_versioned;
