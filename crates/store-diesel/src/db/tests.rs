//! Tests of the `Db` handle: inline reads, the SQLite writer's group commit.

use super::*;

#[test]
fn sqlite_urls_name_a_path() {
    assert_eq!(
        sqlite_path("sqlite://data/idconsent.db"),
        Some("data/idconsent.db")
    );
    assert_eq!(sqlite_path("sqlite:///tmp/x.db"), Some("/tmp/x.db"));
    assert_eq!(sqlite_path("sqlite:x.db?mode=rwc"), Some("x.db"));
    assert_eq!(sqlite_path("sqlite://"), None);
    assert_eq!(sqlite_path("postgres://localhost/test"), None);
}

#[test]
fn error_messages_never_show_passwords() {
    assert_eq!(
        redact_url("postgres://app:s3cret@db.internal:5432/idc"),
        "postgres://app:***@db.internal:5432/idc"
    );
    assert_eq!(redact_url("mysql://host/db"), "mysql://host/db");
}

#[test]
fn unknown_schemes_are_refused() {
    let error = Db::open("mysql://root:pw@localhost/db", &DbOptions::default()).unwrap_err();
    assert!(error.to_string().contains("root:***@"), "{error}");
}

/// SQLite reads with an idle connection run on the calling thread.
#[cfg(feature = "testing")]
mod inline_reads {
    use super::super::DbError;
    use crate::testing::TestDatabase;

    #[tokio::test]
    async fn a_read_runs_on_the_calling_thread() {
        let database = TestDatabase::sqlite();
        let caller = std::thread::current().id();
        let ran_on = database
            .db
            .read(|_| Ok(std::thread::current().id()))
            .await
            .unwrap();
        assert_eq!(ran_on, caller);
    }

    #[tokio::test]
    async fn a_panicking_read_is_an_error_and_the_next_read_works() {
        let database = TestDatabase::sqlite();
        let panicked = database
            .db
            .read(|_| -> Result<(), DbError> { panic!("a bug in a repository") })
            .await;
        assert!(matches!(panicked, Err(DbError::Task)), "{panicked:?}");
        database.db.ping().await.unwrap();
    }

    /// Between write groups a read may borrow the writer's connection; a read that panics
    /// inside a transaction must not leave that transaction open for the next group.
    #[tokio::test]
    async fn a_read_panicking_in_a_transaction_leaves_the_writer_working() {
        use diesel::Connection;
        use diesel::connection::SimpleConnection;

        let database = TestDatabase::sqlite();
        let panicked = database
            .db
            .read(|conn| -> Result<(), DbError> {
                crate::with_conn!(conn, |c| c.transaction(|_| -> Result<(), DbError> {
                    panic!("a bug in a repository")
                }))
            })
            .await;
        assert!(matches!(panicked, Err(DbError::Task)), "{panicked:?}");
        database
            .db
            .write(|conn| {
                crate::with_conn!(conn, |c| c.batch_execute(
                    "CREATE TABLE after_panic (id BIGINT PRIMARY KEY NOT NULL); \
                     INSERT INTO after_panic (id) VALUES (1)"
                ))?;
                Ok(())
            })
            .await
            .unwrap();
        let count = database
            .db
            .read(|conn| {
                use diesel::RunQueryDsl;
                use diesel::dsl::sql;
                Ok(crate::with_conn!(conn, |c| diesel::select(sql::<
                    diesel::sql_types::BigInt,
                >(
                    "(SELECT COUNT(*) FROM after_panic)"
                ))
                .get_result::<i64>(c))?)
            })
            .await
            .unwrap();
        assert_eq!(count, 1, "the write committed and the read sees it");
    }
}

/// Group commit on SQLite: writes queued behind a busy writer run as one group.
#[cfg(feature = "testing")]
mod group_commit {
    use diesel::connection::SimpleConnection;
    use diesel::sql_types::BigInt;
    use diesel::{QueryableByName, RunQueryDsl};

    use super::super::{AnyConnection, Db, DbError};
    use crate::testing::TestDatabase;

    #[derive(QueryableByName)]
    struct Id {
        #[diesel(sql_type = BigInt)]
        id: i64,
    }

    fn sqlite(conn: AnyConnection<'_>) -> &mut diesel::SqliteConnection {
        match conn {
            AnyConnection::Sqlite(c) => c,
            AnyConnection::Postgres(_) => unreachable!("a SQLite test"),
        }
    }

    async fn table(db: &Db) {
        db.write(|conn| {
            Ok(sqlite(conn).batch_execute("CREATE TABLE t (id BIGINT PRIMARY KEY NOT NULL)")?)
        })
        .await
        .unwrap();
    }

    async fn insert(db: Db, id: i64, then: Result<(), DbError>) -> Result<(), DbError> {
        db.write(move |conn| {
            sqlite(conn).batch_execute(&format!("INSERT INTO t (id) VALUES ({id})"))?;
            then
        })
        .await
    }

    async fn ids(db: &Db) -> Vec<i64> {
        db.read(|conn| {
            Ok(diesel::sql_query("SELECT id FROM t ORDER BY id")
                .load::<Id>(sqlite(conn))?
                .into_iter()
                .map(|row| row.id)
                .collect())
        })
        .await
        .unwrap()
    }

    /// Holds the writer thread until the returned sender is dropped or sent to, so the
    /// writes submitted meanwhile queue up and run as one group.
    fn hold_writer(db: &Db) -> (std::sync::mpsc::Sender<()>, tokio::task::JoinHandle<()>) {
        let (release, held) = std::sync::mpsc::channel::<()>();
        let db = db.clone();
        let holder = tokio::spawn(async move {
            db.write(move |_| {
                let _ = held.recv();
                Ok(())
            })
            .await
            .unwrap();
        });
        (release, holder)
    }

    async fn queued(db: &Db, writes: Vec<(i64, Result<(), DbError>)>) -> Vec<Result<(), DbError>> {
        let (release, holder) = hold_writer(db);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let tasks: Vec<_> = writes
            .into_iter()
            .map(|(id, then)| tokio::spawn(insert(db.clone(), id, then)))
            .collect();
        // Every write is in the queue before the writer is free again.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        release.send(()).unwrap();
        holder.await.unwrap();
        let mut results = Vec::new();
        for task in tasks {
            results.push(task.await.unwrap());
        }
        results
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_write_is_rolled_back_alone_and_the_rest_of_its_group_commits() {
        let database = TestDatabase::sqlite();
        let db = database.db.clone();
        table(&db).await;
        insert(db.clone(), 100, Ok(())).await.unwrap();
        // Odd ids fail after inserting (a repository's rollback); 100 is a duplicate key.
        let mut writes = Vec::new();
        for id in 1..=20 {
            let then = if id % 2 == 1 {
                Err(DbError::Rollback("odd"))
            } else {
                Ok(())
            };
            writes.push((id, then));
        }
        writes.push((100, Ok(())));
        let results = queued(&db, writes).await;
        for (index, result) in results.iter().take(20).enumerate() {
            let id = index + 1;
            if id % 2 == 1 {
                assert_eq!(result.as_ref().unwrap_err().rollback_tag(), Some("odd"));
            } else {
                assert!(result.is_ok(), "{id}: {result:?}");
            }
        }
        assert!(
            matches!(
                results[20],
                Err(DbError::Query(diesel::result::Error::DatabaseError(
                    diesel::result::DatabaseErrorKind::UniqueViolation,
                    _
                )))
            ),
            "{:?}",
            results[20]
        );
        let mut expected: Vec<i64> = (1..=10).map(|n| n * 2).collect();
        expected.push(100);
        assert_eq!(ids(&db).await, expected);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_error_that_may_end_the_transaction_fails_its_whole_group() {
        let database = TestDatabase::sqlite();
        let db = database.db.clone();
        table(&db).await;
        let (release, holder) = hold_writer(&db);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let before = tokio::spawn(insert(db.clone(), 1, Ok(())));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let broken = tokio::spawn({
            let db = db.clone();
            async move {
                db.write(|conn| Ok(sqlite(conn).batch_execute("INSERT INTO missing VALUES (1)")?))
                    .await
            }
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let after = tokio::spawn(insert(db.clone(), 3, Ok(())));
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        release.send(()).unwrap();
        holder.await.unwrap();
        assert!(
            before.await.unwrap().is_err(),
            "not committed with its group"
        );
        assert!(broken.await.unwrap().is_err());
        assert!(after.await.unwrap().is_err(), "not run after the failure");
        assert_eq!(ids(&db).await, Vec::<i64>::new());
        // The writer carries on.
        insert(db.clone(), 4, Ok(())).await.unwrap();
        assert_eq!(ids(&db).await, vec![4]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_write_fails_its_group_and_the_writer_carries_on() {
        let database = TestDatabase::sqlite();
        let db = database.db.clone();
        table(&db).await;
        let (release, holder) = hold_writer(&db);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let before = tokio::spawn(insert(db.clone(), 1, Ok(())));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let panicking = tokio::spawn({
            let db = db.clone();
            async move {
                db.write(|conn| -> Result<(), DbError> {
                    sqlite(conn).batch_execute("INSERT INTO t (id) VALUES (2)")?;
                    panic!("a bug in a repository")
                })
                .await
            }
        });
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        release.send(()).unwrap();
        holder.await.unwrap();
        assert!(before.await.unwrap().is_err());
        assert!(matches!(panicking.await.unwrap(), Err(DbError::Task)));
        assert_eq!(ids(&db).await, Vec::<i64>::new());
        insert(db.clone(), 5, Ok(())).await.unwrap();
        assert_eq!(ids(&db).await, vec![5]);
    }
}
