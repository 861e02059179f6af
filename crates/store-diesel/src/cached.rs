//! Keeps the prepared statements of hot queries that diesel would prepare afresh on every run.
//!
//! Diesel caches a prepared statement only when it can prove the SQL is one of a bounded set:
//! it never caches an `UPDATE`, an `INSERT` of a row with optional values, an `IN (…)` list on
//! SQLite, or raw SQL (`sql_query`). Each run of such a query then costs a fresh
//! `sqlite3_prepare` (7 % of the server under consent load, docs/performance.md) or, on
//! PostgreSQL, a parse and plan by the server (one round trip either way: diesel sends unnamed
//! statements with their parameters).
//!
//! [`Cached`] tells diesel a query is safe to cache, keyed by its SQL text and bind types (not
//! by its Rust type), so two different texts never share a statement. Wrap only queries whose
//! text comes from a small, fixed set: constant SQL, an `UPDATE` with a fixed `SET` list, an
//! `IN` list whose length is bounded (a lease of at most a few hundred rows) — never SQL that
//! embeds values.
//!
//! Where it takes effect: every query on SQLite; on PostgreSQL the queries that load rows
//! (`load`, `get_result`). Diesel's PostgreSQL `execute` takes the query by reference, and a
//! reference does not pass the cache decision on, so an executed statement stays unnamed there
//! (it costs PostgreSQL a parse and a plan, not a round trip). The hottest inserts are therefore
//! loaded with a `RETURNING` column on PostgreSQL instead of executed — the replay guard
//! (`insert_absent!`), the consent session, the OAuth token: a fifth of PostgreSQL's CPU per
//! consent (docs/performance.md, 2026-11-27 third session). On SQLite they stay executed
//! ([`insert_counted!`]): there `RETURNING` buys nothing and costs a temporary result per
//! statement (the replay guard's and the token's inserts took 31 k more instructions, 5 % of a
//! token exchange: docs/performance.md, 2026-11-27 fourth session).

use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::{QueryResult, RunQueryDsl};

/// A query whose prepared statement the connection keeps (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cached<Q>(Q);

/// `.cached()` on any query.
pub(crate) trait CacheStatement: Sized {
    /// Keep this query's prepared statement, keyed by its SQL text.
    fn cached(self) -> Cached<Self> {
        Cached(self)
    }
}

impl<Q> CacheStatement for Q {}

impl<Q> QueryId for Cached<Q> {
    type QueryId = ();
    // The cache key is then the SQL text and the bind types.
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q, DB> QueryFragment<DB> for Cached<Q>
where
    Q: QueryFragment<DB>,
    DB: Backend,
{
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, _backend: &DB) -> QueryResult<bool> {
        Ok(true)
    }
}

impl<Q: Query> Query for Cached<Q> {
    type SqlType = Q::SqlType;
}

impl<Q, Conn> RunQueryDsl<Conn> for Cached<Q> {}

/// Runs the `INSERT` `$insert` on `$conn` (an [`crate::AnyConnection`]) with its prepared
/// statement kept, and returns how many rows it wrote: executed on SQLite, loaded with
/// `RETURNING 1` on PostgreSQL (see the module docs for why each).
macro_rules! insert_counted {
    ($conn:expr, $insert:expr) => {
        match $conn {
            $crate::AnyConnection::Sqlite(c) => {
                diesel::RunQueryDsl::execute($crate::cached::CacheStatement::cached($insert), c)
            }
            $crate::AnyConnection::Postgres(c) => diesel::RunQueryDsl::load::<i32>(
                $crate::cached::CacheStatement::cached(
                    $insert.returning(diesel::dsl::sql::<diesel::sql_types::Integer>("1")),
                ),
                c,
            )
            .map(|inserted| inserted.len()),
        }
    };
}
pub(crate) use insert_counted;

/// `values` padded to a power-of-two length by repeating its last value, for an `IN (…)` list
/// of a cached query: a repeated value does not change what the list matches, and the lists'
/// texts stay few (one per power of two up to the largest batch) instead of one per length.
pub(crate) fn in_list<T: Clone>(mut values: Vec<T>) -> Vec<T> {
    if let Some(last) = values.last().cloned() {
        values.resize(values.len().next_power_of_two(), last);
    }
    values
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use diesel::connection::{Instrumentation, InstrumentationEvent, SimpleConnection};
    use diesel::prelude::*;
    use diesel::sql_types::{BigInt, Text};
    use std::sync::{Arc, Mutex};

    use super::{CacheStatement, in_list};

    diesel::table! {
        items (id) {
            id -> BigInt,
            name -> Text,
        }
    }

    /// Counts the statements the connection prepared to keep.
    #[derive(Default)]
    struct Prepared(Arc<Mutex<Vec<String>>>);

    impl Instrumentation for Prepared {
        fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
            if let InstrumentationEvent::CacheQuery { sql, .. } = event {
                self.0.lock().unwrap().push(sql.to_owned());
            }
        }
    }

    fn connection() -> (SqliteConnection, Arc<Mutex<Vec<String>>>) {
        let mut conn = SqliteConnection::establish(":memory:").unwrap();
        conn.batch_execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
            .unwrap();
        let prepared = Arc::new(Mutex::new(Vec::new()));
        conn.set_instrumentation(Prepared(prepared.clone()));
        (conn, prepared)
    }

    #[test]
    fn an_update_is_prepared_once_and_reused_with_new_values() {
        let (mut conn, prepared) = connection();
        diesel::insert_into(items::table)
            .values((items::id.eq(1), items::name.eq("a")))
            .execute(&mut conn)
            .unwrap();
        prepared.lock().unwrap().clear();
        for name in ["b", "c", "d"] {
            let changed = diesel::update(items::table.find(1))
                .set(items::name.eq(name))
                .cached()
                .execute(&mut conn)
                .unwrap();
            assert_eq!(changed, 1);
        }
        let name: String = items::table
            .find(1)
            .select(items::name)
            .first(&mut conn)
            .unwrap();
        assert_eq!(name, "d", "each run used its own values");
        let updates = prepared.lock().unwrap().clone();
        assert_eq!(updates.len(), 1, "prepared once: {updates:?}");
        // Without the wrapper diesel prepares an UPDATE on every run and keeps none.
        diesel::update(items::table.find(1))
            .set(items::name.eq("e"))
            .execute(&mut conn)
            .unwrap();
        assert_eq!(prepared.lock().unwrap().len(), 1);
    }

    #[test]
    fn different_sql_texts_never_share_a_statement() {
        let (mut conn, prepared) = connection();
        for (id, name) in [(1, "a"), (2, "b"), (3, "c")] {
            diesel::insert_into(items::table)
                .values((items::id.eq(id), items::name.eq(name)))
                .execute(&mut conn)
                .unwrap();
        }
        prepared.lock().unwrap().clear();
        let names = |conn: &mut SqliteConnection, ids: &[i64]| -> Vec<String> {
            items::table
                .filter(items::id.eq_any(ids))
                .order(items::id)
                .select(items::name)
                .cached()
                .load(conn)
                .unwrap()
        };
        assert_eq!(names(&mut conn, &[1, 3]), ["a", "c"]);
        assert_eq!(names(&mut conn, &[2]), ["b"]);
        assert_eq!(names(&mut conn, &[3, 1]), ["a", "c"]);
        assert_eq!(names(&mut conn, &[1, 2, 3]), ["a", "b", "c"]);
        // One statement per list length: 2, 1 and 3 values.
        assert_eq!(prepared.lock().unwrap().len(), 3);
        // Padded, lengths 3 and 4 share one.
        let padded = in_list(vec![1, 2, 3]);
        assert_eq!(padded, [1, 2, 3, 3]);
        assert_eq!(names(&mut conn, &padded), ["a", "b", "c"]);
        assert_eq!(
            names(&mut conn, &in_list(vec![3, 2, 1, 1])),
            ["a", "b", "c"]
        );
        assert_eq!(prepared.lock().unwrap().len(), 4);
        assert!(in_list(Vec::<i64>::new()).is_empty());

        let raw = |conn: &mut SqliteConnection, id: i64| -> Vec<String> {
            #[derive(QueryableByName)]
            struct Name {
                #[diesel(sql_type = Text)]
                name: String,
            }
            diesel::sql_query("SELECT name FROM items WHERE id = ?")
                .bind::<BigInt, _>(id)
                .cached()
                .load::<Name>(conn)
                .unwrap()
                .into_iter()
                .map(|row| row.name)
                .collect()
        };
        assert_eq!(raw(&mut conn, 2), ["b"]);
        assert_eq!(raw(&mut conn, 3), ["c"]);
        assert_eq!(prepared.lock().unwrap().len(), 5);
    }
}
