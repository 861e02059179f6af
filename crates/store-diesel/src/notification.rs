//! `MessageStore` on diesel.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::{MessageId, TypedId};
use idconsent_notification::{
    Address, Channel, DeliveryStatus, Message, MessageStore, MessageStoreError,
};

use crate::db::{AnyConnection, Db};
use crate::error::DbError;
use crate::repo::{duplicate_or, insert_row, load_rows, read_with, write_with};
use crate::schema::outgoing_messages;

/// The outbox of SMS and email.
#[derive(Debug, Clone)]
pub struct DieselMessageStore {
    db: Db,
}

impl DieselMessageStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, QueryableByName, Selectable, Insertable)]
#[diesel(table_name = outgoing_messages)]
struct MessageRow {
    id: String,
    channel: String,
    recipient: String,
    subject: String,
    body: String,
    code: Option<String>,
    link: Option<String>,
    status: String,
    attempts: i32,
    last_error: Option<String>,
    next_attempt_at: i64,
    created_at: i64,
    delivered_at: Option<i64>,
}

impl MessageRow {
    fn from_message(message: &Message) -> Self {
        Self {
            id: message.id.as_str().to_owned(),
            channel: message.channel().as_str().to_owned(),
            recipient: message.to.as_str().to_owned(),
            subject: message.subject.clone(),
            body: message.body.clone(),
            code: message.code.clone(),
            link: message.link.clone(),
            status: message.status.as_str().to_owned(),
            attempts: i32::try_from(message.attempts).unwrap_or(i32::MAX),
            last_error: message.last_error.clone(),
            next_attempt_at: message.next_attempt_at.as_millis(),
            created_at: message.created_at.as_millis(),
            delivered_at: message.delivered_at.map(Timestamp::as_millis),
        }
    }

    fn into_message(self) -> Result<Message, MessageStoreError> {
        let corrupt = |what: &str| corrupt_row(format!("outgoing_messages.{what} of {}", self.id));
        Ok(Message {
            to: Address::parse(&self.recipient).map_err(|_| corrupt("recipient"))?,
            status: DeliveryStatus::parse(&self.status).ok_or_else(|| corrupt("status"))?,
            attempts: u32::try_from(self.attempts).map_err(|_| corrupt("attempts"))?,
            id: MessageId::from_trusted(self.id),
            subject: self.subject,
            body: self.body,
            code: self.code,
            link: self.link,
            last_error: self.last_error,
            next_attempt_at: Timestamp::from_millis(self.next_attempt_at),
            created_at: Timestamp::from_millis(self.created_at),
            delivered_at: self.delivered_at.map(Timestamp::from_millis),
        })
    }
}

fn corrupt_row(what: String) -> MessageStoreError {
    MessageStoreError::Unavailable(format!("unreadable stored value: {what}").into())
}

fn unavailable(error: DbError) -> MessageStoreError {
    MessageStoreError::Unavailable(Box::new(error))
}

fn into_messages(rows: Vec<MessageRow>) -> Result<Vec<Message>, MessageStoreError> {
    rows.into_iter().map(MessageRow::into_message).collect()
}

#[async_trait]
impl MessageStore for DieselMessageStore {
    async fn insert(&self, message: &Message) -> Result<(), MessageStoreError> {
        let row = MessageRow::from_message(message);
        insert_row!(self.db, outgoing_messages::table, row)
            .await
            .map_err(duplicate_or(MessageStoreError::Duplicate, unavailable))
    }

    async fn list_for(&self, to: &str, limit: u32) -> Result<Vec<Message>, MessageStoreError> {
        let to = to.to_owned();
        let rows = load_rows!(
            self.db,
            outgoing_messages::table
                .filter(outgoing_messages::recipient.eq(to))
                .order((outgoing_messages::created_at, outgoing_messages::id))
                .limit(i64::from(limit)),
            MessageRow
        )
        .await
        .map_err(unavailable)?;
        into_messages(rows)
    }

    async fn lease_due(
        &self,
        channel: Channel,
        now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> Result<Vec<Message>, MessageStoreError> {
        let rows = self
            .db
            .write(move |conn| lease_due_rows(conn, channel, now, lease_until, limit))
            .await
            .map_err(unavailable)?;
        let mut messages = into_messages(rows)?;
        messages.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(messages)
    }

    async fn mark_delivered(
        &self,
        id: &MessageId,
        at: Timestamp,
        erase_content: bool,
    ) -> Result<(), MessageStoreError> {
        let target = outgoing_messages::table.find(id.as_str().to_owned());
        let delivered = (
            outgoing_messages::status.eq(DeliveryStatus::Delivered.as_str()),
            outgoing_messages::attempts.eq(outgoing_messages::attempts + 1),
            outgoing_messages::delivered_at.eq(Some(at.as_millis())),
        );
        let updated = write_with!(self.db, |c| if erase_content {
            diesel::update(target)
                .set((
                    delivered,
                    outgoing_messages::body.eq(""),
                    outgoing_messages::code.eq(None::<String>),
                    outgoing_messages::link.eq(None::<String>),
                ))
                .execute(c)
        } else {
            diesel::update(target).set(delivered).execute(c)
        })
        .await
        .map_err(unavailable)?;
        found_one(updated)
    }

    async fn record_failure(
        &self,
        id: &MessageId,
        error: &str,
        next_attempt_at: Option<Timestamp>,
    ) -> Result<(), MessageStoreError> {
        let target = outgoing_messages::table.find(id.as_str().to_owned());
        let failed_attempt = (
            outgoing_messages::attempts.eq(outgoing_messages::attempts + 1),
            outgoing_messages::last_error.eq(Some(error.chars().take(500).collect::<String>())),
        );
        let updated = write_with!(self.db, |c| match next_attempt_at {
            Some(next) => diesel::update(target)
                .set((
                    failed_attempt,
                    outgoing_messages::next_attempt_at.eq(next.as_millis()),
                ))
                .execute(c),
            None => diesel::update(target)
                .set((
                    failed_attempt,
                    outgoing_messages::status.eq(DeliveryStatus::Failed.as_str()),
                ))
                .execute(c),
        })
        .await
        .map_err(unavailable)?;
        found_one(updated)
    }

    async fn count_queued(&self, channel: Channel) -> Result<u64, MessageStoreError> {
        let queued = outgoing_messages::table
            .filter(outgoing_messages::channel.eq(channel.as_str()))
            .filter(outgoing_messages::status.eq(DeliveryStatus::Queued.as_str()))
            .count();
        let count: i64 = read_with!(self.db, |c| queued.get_result(c))
            .await
            .map_err(unavailable)?;
        Ok(u64::try_from(count).unwrap_or(0))
    }
}

fn found_one(updated: usize) -> Result<(), MessageStoreError> {
    if updated == 0 {
        Err(MessageStoreError::NotFound)
    } else {
        Ok(())
    }
}

/// Pushes the due rows' next attempt to the end of the lease and returns them, in one statement.
/// PostgreSQL skips rows another lessee has locked; SQLite has a single writer, so the
/// statement is already exclusive.
fn lease_due_rows(
    conn: AnyConnection<'_>,
    channel: Channel,
    now: Timestamp,
    lease_until: Timestamp,
    limit: u32,
) -> Result<Vec<MessageRow>, DbError> {
    const LEASE: &str = "UPDATE outgoing_messages SET next_attempt_at = $1 WHERE id IN (\
        SELECT id FROM outgoing_messages \
        WHERE channel = $2 AND status = 'queued' AND next_attempt_at <= $3 \
        ORDER BY created_at, id LIMIT $4{LOCK}) RETURNING *";
    let rows = match conn {
        AnyConnection::Sqlite(c) => diesel::sql_query(LEASE.replace("{LOCK}", ""))
            .bind::<BigInt, _>(lease_until.as_millis())
            .bind::<Text, _>(channel.as_str())
            .bind::<BigInt, _>(now.as_millis())
            .bind::<BigInt, _>(i64::from(limit))
            .load(c)?,
        AnyConnection::Postgres(c) => {
            diesel::sql_query(LEASE.replace("{LOCK}", " FOR UPDATE SKIP LOCKED"))
                .bind::<BigInt, _>(lease_until.as_millis())
                .bind::<Text, _>(channel.as_str())
                .bind::<BigInt, _>(now.as_millis())
                .bind::<BigInt, _>(i64::from(limit))
                .load(c)?
        }
    };
    Ok(rows)
}
