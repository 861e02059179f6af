//! The kernel's `BlobStore` in the database (ADR 0037): uploaded documents, certificates and
//! identity images where every process on the same database reads them, for deployments on
//! PostgreSQL without an object store (and SQLite when told).
//!
//! An object is a row of `blob_objects` (its size, its number of chunks, when it was stored)
//! and its bytes in `blob_chunks` of [`CHUNK_BYTES`] each, so that no statement carries more
//! than one chunk: a `put` binds one chunk at a time (the driver copies that chunk, not the
//! object) and a `get` fills one buffer of the object's size chunk by chunk. What a call holds
//! beyond the object itself is about two chunks (one in the driver, one decoded), 2 MiB — the
//! object's own buffer is the port's (`Vec<u8>` in and out).
//!
//! A `get` reads the header and the chunks in one read-only transaction with one snapshot
//! (repeatable read on PostgreSQL, a read transaction on SQLite), so it never mixes two `put`s.
//! A `put` writes the header first: on PostgreSQL its row lock queues concurrent `put`s of one
//! key, each replacing the whole object.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_kernel::blob::{BlobError, BlobStore, StoredBlob, is_valid_key};
use idconsent_kernel::{Clock, Timestamp};
use std::sync::Arc;

use crate::db::{AnyConnection, Db};
use crate::error::DbError;
use crate::schema::{blob_chunks, blob_objects};

/// The bytes of one `blob_chunks` row at most.
pub const CHUNK_BYTES: usize = 1 << 20;

#[derive(Debug, Clone)]
pub struct DieselBlobStore {
    db: Db,
    clock: Arc<dyn Clock>,
}

impl DieselBlobStore {
    /// `clock` dates each object (`blob_objects.stored_at`), for sweeps of old keys.
    pub fn new(db: Db, clock: Arc<dyn Clock>) -> Self {
        Self { db, clock }
    }

    /// The objects under the folder `prefix` (a valid key ending in `/`; else `InvalidKey`)
    /// whose last `put` was before `stored_before`, with that time: keys greater than `after`,
    /// in ascending bytewise order, at most `limit`. A folder is a byte prefix (`_` is no
    /// wildcard): one range of the primary key, bytewise on both backends. What a sweep of
    /// orphans pages through (issue 31 §5's `BlobStore::list_stored_before`).
    pub async fn stored_before_page(
        &self,
        prefix: &str,
        stored_before: Timestamp,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Timestamp)>, BlobError> {
        if !prefix.ends_with('/') || !is_valid_key(prefix) {
            return Err(BlobError::InvalidKey);
        }
        // Keys are ASCII: the folder's keys sort below the prefix with its `/` made `0`.
        let end = format!("{}0", &prefix[..prefix.len() - 1]);
        // From just after `after`, or from the folder's start.
        let (from, inclusive) = match after {
            Some(after) if after >= prefix => (after.to_owned(), false),
            _ => (prefix.to_owned(), true),
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let before = stored_before.as_millis();
        let rows: Vec<(String, i64)> = self
            .db
            .read(move |conn| {
                Ok(crate::with_conn!(conn, |c| {
                    let page = blob_objects::table
                        .filter(blob_objects::key.lt(&end))
                        .filter(blob_objects::stored_at.lt(before))
                        .into_boxed();
                    let page = if inclusive {
                        page.filter(blob_objects::key.ge(&from))
                    } else {
                        page.filter(blob_objects::key.gt(&from))
                    };
                    page.order(blob_objects::key)
                        .limit(limit)
                        .select((blob_objects::key, blob_objects::stored_at))
                        .load(c)
                })?)
            })
            .await
            .map_err(unavailable)?;
        Ok(rows
            .into_iter()
            .map(|(key, at)| (key, Timestamp::from_millis(at)))
            .collect())
    }
}

fn valid(key: &str) -> Result<String, BlobError> {
    if is_valid_key(key) {
        Ok(key.to_owned())
    } else {
        Err(BlobError::InvalidKey)
    }
}

fn unavailable(error: DbError) -> BlobError {
    BlobError::Unavailable(Box::new(error))
}

/// The object at `$key` on connection `$c` (inside a read transaction): `None` when there is
/// none, else its bytes in a buffer of its size, filled one chunk at a time.
macro_rules! read_object {
    ($c:expr, $key:expr) => {{
        let header = blob_objects::table
            .find($key)
            .select((blob_objects::size, blob_objects::chunks))
            .first::<(i64, i32)>($c)
            .optional()?;
        match header {
            None => Ok::<_, DbError>(None),
            Some((size, chunks)) => {
                let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
                for seq in 0..chunks {
                    let chunk: Vec<u8> = blob_chunks::table
                        .find(($key, seq))
                        .select(blob_chunks::bytes)
                        .first($c)?;
                    bytes.extend_from_slice(&chunk);
                }
                if i64::try_from(bytes.len()) != Ok(size) {
                    return Err(DbError::Rollback("a stored blob lacks chunks"));
                }
                Ok(Some(bytes))
            }
        }
    }};
}

#[async_trait]
impl BlobStore for DieselBlobStore {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        let key = valid(key)?;
        let stored_at = self.clock.now();
        self.db
            .write(move |conn| write_object(conn, &key, &bytes, stored_at))
            .await
            .map_err(unavailable)
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError> {
        let key = valid(key)?;
        self.db
            .read_off_thread(move |conn| match conn {
                AnyConnection::Postgres(c) => c
                    .build_transaction()
                    .read_only()
                    .repeatable_read()
                    .run(|c| read_object!(c, &key)),
                AnyConnection::Sqlite(c) => c.transaction(|c| read_object!(c, &key)),
            })
            .await
            .map_err(unavailable)
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let key = valid(key)?;
        self.db
            .write(move |conn| {
                crate::with_conn!(conn, |c| {
                    diesel::delete(blob_chunks::table.filter(blob_chunks::blob_key.eq(&key)))
                        .execute(c)?;
                    diesel::delete(blob_objects::table.find(&key)).execute(c)?;
                });
                Ok(())
            })
            .await
            .map_err(unavailable)
    }

    async fn list_stored_before(
        &self,
        prefix: &str,
        stored_before: Timestamp,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredBlob>, BlobError> {
        Ok(self
            .stored_before_page(prefix, stored_before, after, limit)
            .await?
            .into_iter()
            .map(|(key, stored_at)| StoredBlob { key, stored_at })
            .collect())
    }
}

/// Replaces the object at `key` inside the caller's transaction: the header first (its row
/// queues other writers of the key), then the old chunks out and the new ones in, one statement
/// per chunk.
fn write_object(
    conn: AnyConnection<'_>,
    key: &str,
    bytes: &[u8],
    stored_at: Timestamp,
) -> Result<(), DbError> {
    let size = i64::try_from(bytes.len()).map_err(|_| DbError::Rollback("blob too large"))?;
    let chunks = i32::try_from(bytes.len().div_ceil(CHUNK_BYTES))
        .map_err(|_| DbError::Rollback("blob too large"))?;
    let header = || {
        (
            blob_objects::size.eq(size),
            blob_objects::chunks.eq(chunks),
            blob_objects::stored_at.eq(stored_at.as_millis()),
        )
    };
    crate::with_conn!(conn, |c| {
        diesel::insert_into(blob_objects::table)
            .values((blob_objects::key.eq(key), header()))
            .on_conflict(blob_objects::key)
            .do_update()
            .set(header())
            .execute(c)?;
        diesel::delete(blob_chunks::table.filter(blob_chunks::blob_key.eq(key))).execute(c)?;
        for (seq, chunk) in (0..).zip(bytes.chunks(CHUNK_BYTES)) {
            diesel::insert_into(blob_chunks::table)
                .values((
                    blob_chunks::blob_key.eq(key),
                    blob_chunks::seq.eq(seq),
                    blob_chunks::bytes.eq(chunk),
                ))
                .execute(c)?;
        }
    });
    Ok(())
}
