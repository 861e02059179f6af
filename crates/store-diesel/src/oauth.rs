//! OAuth access requests, grants and issued tokens on diesel. Single use of a code is enforced
//! by a compare-and-set in the database, never in memory.

use std::sync::Arc;

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_consent::SessionStatus;
use idconsent_kernel::id::{ApplicationId, ClientId, SessionId, TypedId};
use idconsent_kernel::{Environment, Sealed, Timestamp};
use idconsent_oauth::ports::{Decide, OAuthRepository, Redemption, StoreError, Verdict};
use idconsent_oauth::{
    AccessRequest, ChallengeMethod, ClaimKey, Grant, GrantWithSession, IssuedToken, SessionState,
};
use serde_json::Value;

use crate::cached::CacheStatement;
use crate::db::{AnyConnection, Batcher, Db};
use crate::error::DbError;
use crate::repo::{duplicate_or, find_row, find_where, found, insert_row, unreadable, update_rows};
use crate::schema::{consent_sessions, oauth_grants, oauth_requests, oauth_tokens};

mod batches;

use batches::{
    GRANT_READS_PER_BATCH, SPENDS_PER_BATCH, Spend, read_grants_with_sessions, redeem_in_batches,
    spend_batch,
};

#[derive(Debug, Clone)]
pub struct DieselOAuthStore {
    db: Db,
    /// On PostgreSQL, the token exchanges' grant reads and compare-and-sets arriving together,
    /// one statement each (and one commit for the spends; ADR 0035).
    batches: Option<ExchangeBatches>,
}

type ExchangeBatches = (
    Arc<Batcher<String, Option<GrantRead>>>,
    Arc<Batcher<Spend, bool>>,
);

impl DieselOAuthStore {
    pub fn new(db: Db) -> Self {
        let reads = db.batcher(
            "grant-reads",
            GRANT_READS_PER_BATCH,
            Box::new(read_grants_with_sessions),
        );
        let spends = db.batcher("spends", SPENDS_PER_BATCH, Box::new(spend_batch));
        let batches = reads.zip(spends).map(|(r, s)| (Arc::new(r), Arc::new(s)));
        Self { db, batches }
    }
}

fn unavailable(error: DbError) -> StoreError {
    StoreError::Unavailable(Box::new(error))
}

fn corrupt(table: &str, column: &str, id: &str) -> StoreError {
    StoreError::Unavailable(unreadable(table, column, id))
}

fn to_json(values: &[impl AsRef<str>]) -> String {
    Value::Array(values.iter().map(|v| Value::from(v.as_ref())).collect()).to_string()
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = oauth_requests)]
struct RequestRow {
    session_id: String,
    application_id: String,
    client_id: String,
    environment: String,
    redirect_uri: String,
    code_challenge: String,
    code_challenge_method: String,
    claims: String,
    scopes: String,
    state: Option<String>,
    description: Option<String>,
    created_at: i64,
}

impl RequestRow {
    fn from_request(r: &AccessRequest) -> Self {
        let claims: Vec<&str> = r.claims.iter().map(|c| c.as_str()).collect();
        Self {
            session_id: r.session_id.as_str().to_owned(),
            application_id: r.application_id.as_str().to_owned(),
            client_id: r.client_id.as_str().to_owned(),
            environment: r.environment.as_str().to_owned(),
            redirect_uri: r.redirect_uri.clone(),
            code_challenge: r.code_challenge.clone(),
            code_challenge_method: r.code_challenge_method.as_str().to_owned(),
            claims: to_json(&claims),
            scopes: to_json(&r.scopes),
            state: r.state.clone(),
            description: r.description.clone(),
            created_at: r.created_at.as_millis(),
        }
    }

    fn into_request(self) -> Result<AccessRequest, StoreError> {
        let bad = |column: &str| corrupt("oauth_requests", column, &self.session_id);
        let claims: Vec<String> = serde_json::from_str(&self.claims).map_err(|_| bad("claims"))?;
        Ok(AccessRequest {
            claims: claims
                .iter()
                .map(|c| ClaimKey::parse(c).ok_or_else(|| bad("claims")))
                .collect::<Result<_, _>>()?,
            scopes: serde_json::from_str(&self.scopes).map_err(|_| bad("scopes"))?,
            environment: Environment::parse(&self.environment).ok_or_else(|| bad("environment"))?,
            code_challenge_method: ChallengeMethod::parse(&self.code_challenge_method)
                .ok_or_else(|| bad("code_challenge_method"))?,
            session_id: SessionId::from_trusted(self.session_id),
            application_id: ApplicationId::from_trusted(self.application_id),
            client_id: ClientId::from_trusted(self.client_id),
            redirect_uri: self.redirect_uri,
            code_challenge: self.code_challenge,
            state: self.state,
            description: self.description,
            created_at: Timestamp::from_millis(self.created_at),
        })
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = oauth_grants)]
struct GrantRow {
    code_id: String,
    code_hash: String,
    sealed_code: String,
    session_id: String,
    application_id: String,
    redirect_uri: String,
    code_challenge: String,
    code_challenge_method: String,
    subject: String,
    scopes: String,
    claims: String,
    state: Option<String>,
    approved_at: i64,
    expires_at: i64,
    consumed_at: Option<i64>,
    token_id: Option<String>,
}

impl GrantRow {
    fn from_grant(g: &Grant) -> Self {
        Self {
            code_id: g.code_id.clone(),
            code_hash: g.code_hash.clone(),
            sealed_code: g.sealed_code.as_str().to_owned(),
            session_id: g.session_id.as_str().to_owned(),
            application_id: g.application_id.as_str().to_owned(),
            redirect_uri: g.redirect_uri.clone(),
            code_challenge: g.code_challenge.clone(),
            code_challenge_method: g.code_challenge_method.as_str().to_owned(),
            subject: g.subject.clone(),
            scopes: to_json(&g.scopes),
            claims: g.claims.to_string(),
            state: g.state.clone(),
            approved_at: g.approved_at.as_millis(),
            expires_at: g.expires_at.as_millis(),
            consumed_at: g.consumed_at.map(Timestamp::as_millis),
            token_id: g.token_id.clone(),
        }
    }

    fn into_grant(self) -> Result<Grant, StoreError> {
        let bad = |column: &str| corrupt("oauth_grants", column, &self.session_id);
        Ok(Grant {
            scopes: serde_json::from_str(&self.scopes).map_err(|_| bad("scopes"))?,
            claims: serde_json::from_str::<Value>(&self.claims).map_err(|_| bad("claims"))?,
            code_challenge_method: ChallengeMethod::parse(&self.code_challenge_method)
                .ok_or_else(|| bad("code_challenge_method"))?,
            code_id: self.code_id,
            code_hash: self.code_hash,
            sealed_code: Sealed::from_stored(self.sealed_code),
            session_id: SessionId::from_trusted(self.session_id),
            application_id: ApplicationId::from_trusted(self.application_id),
            redirect_uri: self.redirect_uri,
            code_challenge: self.code_challenge,
            subject: self.subject,
            state: self.state,
            approved_at: Timestamp::from_millis(self.approved_at),
            expires_at: Timestamp::from_millis(self.expires_at),
            consumed_at: self.consumed_at.map(Timestamp::from_millis),
            token_id: self.token_id,
        })
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = oauth_tokens)]
struct TokenRow {
    token_id: String,
    application_id: String,
    client_id: String,
    environment: String,
    subject: String,
    scopes: String,
    claims: String,
    issued_at: i64,
    expires_at: i64,
    revoked_at: Option<i64>,
}

impl TokenRow {
    fn from_token(t: &IssuedToken) -> Self {
        Self {
            token_id: t.token_id.clone(),
            application_id: t.application_id.as_str().to_owned(),
            client_id: t.client_id.as_str().to_owned(),
            environment: t.environment.as_str().to_owned(),
            subject: t.subject.clone(),
            scopes: to_json(&t.scopes),
            claims: t.claims.to_string(),
            issued_at: t.issued_at.as_millis(),
            expires_at: t.expires_at.as_millis(),
            revoked_at: t.revoked_at.map(Timestamp::as_millis),
        }
    }

    fn into_token(self) -> Result<IssuedToken, StoreError> {
        let bad = |column: &str| corrupt("oauth_tokens", column, &self.token_id);
        Ok(IssuedToken {
            scopes: serde_json::from_str(&self.scopes).map_err(|_| bad("scopes"))?,
            claims: serde_json::from_str::<Value>(&self.claims).map_err(|_| bad("claims"))?,
            environment: Environment::parse(&self.environment).ok_or_else(|| bad("environment"))?,
            token_id: self.token_id,
            application_id: ApplicationId::from_trusted(self.application_id),
            client_id: ClientId::from_trusted(self.client_id),
            subject: self.subject,
            issued_at: Timestamp::from_millis(self.issued_at),
            expires_at: Timestamp::from_millis(self.expires_at),
            revoked_at: self.revoked_at.map(Timestamp::from_millis),
        })
    }
}

/// A grant as read for an exchange: its row, and its session's status and environment (none
/// if the session is gone).
type GrantRead = (GrantRow, Option<String>, Option<String>);

/// The grant of `code_id` with its session's state, in one statement.
fn read_grant_with_session(
    conn: AnyConnection<'_>,
    code_id: &str,
) -> Result<Option<GrantWithSession>, StoreError> {
    let row = crate::with_conn!(conn, |c| oauth_grants::table
        .left_join(consent_sessions::table.on(consent_sessions::id.eq(oauth_grants::session_id)))
        .filter(oauth_grants::code_id.eq(code_id))
        .select((
            GrantRow::as_select(),
            consent_sessions::status.nullable(),
            consent_sessions::environment.nullable(),
        ))
        .get_result::<GrantRead>(c)
        .optional())
    .map_err(|error| unavailable(error.into()))?;
    row.map(grant_with_session).transpose()
}

fn grant_with_session(
    (row, status, environment): GrantRead,
) -> Result<GrantWithSession, StoreError> {
    let session = match (status, environment) {
        (Some(status), Some(environment)) => {
            let bad = |column: &str| corrupt("consent_sessions", column, &row.session_id);
            Some(SessionState {
                status: SessionStatus::parse(&status).ok_or_else(|| bad("status"))?,
                environment: Environment::parse(&environment).ok_or_else(|| bad("environment"))?,
            })
        }
        _ => None,
    };
    Ok(GrantWithSession {
        grant: row.into_grant()?,
        session,
    })
}

/// The single-use compare-and-set: marks an unspent grant spent, and stores the token issued
/// from it. `false` when another exchange spent it first.
fn spend_grant(
    mut conn: AnyConnection<'_>,
    code_id: &str,
    at: i64,
    issued: Option<&IssuedToken>,
) -> Result<bool, DbError> {
    let token = issued.map(TokenRow::from_token);
    let statement = SpendGrant {
        code_id,
        at,
        token_id: issued.map(|token| token.token_id.as_str()),
    };
    if let (AnyConnection::Postgres(c), Some(token)) = (&mut conn, &token) {
        return spend_and_store_token(c, &statement, token);
    }
    let spent = crate::with_conn!(conn.reborrow(), |c| statement.execute(c))? == 1;
    if let (true, Some(token)) = (spent, &token) {
        crate::cached::insert_counted!(
            conn,
            diesel::insert_into(oauth_tokens::table).values(token)
        )?;
    }
    Ok(spent)
}

/// [`SpendGrant`] and the token's insert in one statement, for PostgreSQL: one round trip, and
/// atomic on its own, so the exchange needs no transaction there (ADR 0034). The token is
/// inserted only from the grant's row the update returns.
const SPEND_AND_STORE_TOKEN: &str = "WITH spent AS (UPDATE oauth_grants \
    SET consumed_at = $1, token_id = $2 WHERE code_id = $3 AND consumed_at IS NULL \
    RETURNING code_id) \
    INSERT INTO oauth_tokens (token_id, application_id, client_id, environment, subject, scopes, \
    claims, issued_at, expires_at, revoked_at) \
    SELECT $2, $4, $5, $6, $7, $8, $9, $10, $11, $12 FROM spent RETURNING 1 AS stored";

#[derive(QueryableByName)]
struct Stored {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    #[allow(dead_code)]
    stored: i32,
}

fn spend_and_store_token(
    c: &mut diesel::PgConnection,
    spend: &SpendGrant<'_>,
    token: &TokenRow,
) -> Result<bool, DbError> {
    use diesel::sql_types::{BigInt, Nullable, Text};
    let stored = diesel::sql_query(SPEND_AND_STORE_TOKEN)
        .bind::<BigInt, _>(spend.at)
        .bind::<Text, _>(&token.token_id)
        .bind::<Text, _>(spend.code_id)
        .bind::<Text, _>(&token.application_id)
        .bind::<Text, _>(&token.client_id)
        .bind::<Text, _>(&token.environment)
        .bind::<Text, _>(&token.subject)
        .bind::<Text, _>(&token.scopes)
        .bind::<Text, _>(&token.claims)
        .bind::<BigInt, _>(token.issued_at)
        .bind::<BigInt, _>(token.expires_at)
        .bind::<Nullable<BigInt>, _>(token.revoked_at)
        .cached()
        // Loaded, not executed: PostgreSQL then keeps it prepared (crate::cached).
        .load::<Stored>(c)?;
    Ok(!stored.is_empty())
}

/// `UPDATE oauth_grants SET consumed_at, token_id WHERE code_id AND consumed_at IS NULL`,
/// written out so that both backends keep it prepared: diesel never caches its own `UPDATE`
/// statements (their changesets may skip `None` fields), and compiling this one again on every
/// exchange was a tenth of the SQLite writer's time.
#[derive(Debug, Clone, Copy)]
struct SpendGrant<'a> {
    code_id: &'a str,
    at: i64,
    token_id: Option<&'a str>,
}

impl diesel::query_builder::QueryId for SpendGrant<'_> {
    type QueryId = SpendGrant<'static>;
    const HAS_STATIC_QUERY_ID: bool = true;
}

impl<DB> diesel::query_builder::QueryFragment<DB> for SpendGrant<'_>
where
    DB: diesel::backend::Backend,
    i64: diesel::serialize::ToSql<diesel::sql_types::BigInt, DB>,
    str: diesel::serialize::ToSql<diesel::sql_types::Text, DB>,
    for<'t> Option<&'t str>:
        diesel::serialize::ToSql<diesel::sql_types::Nullable<diesel::sql_types::Text>, DB>,
{
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, DB>,
    ) -> QueryResult<()> {
        use diesel::sql_types::{BigInt, Nullable, Text};
        out.push_sql("UPDATE oauth_grants SET consumed_at = ");
        out.push_bind_param::<BigInt, _>(&self.at)?;
        out.push_sql(", token_id = ");
        out.push_bind_param::<Nullable<Text>, _>(&self.token_id)?;
        out.push_sql(" WHERE code_id = ");
        out.push_bind_param::<Text, _>(self.code_id)?;
        out.push_sql(" AND consumed_at IS NULL");
        Ok(())
    }
}

impl<C> RunQueryDsl<C> for SpendGrant<'_> {}

/// Reuse of a spent code: the token the first exchange produced is revoked.
fn revoke_first_token(conn: AnyConnection<'_>, code_id: &str, now: i64) -> Result<(), DbError> {
    crate::with_conn!(conn, |c| {
        let first: Option<Option<String>> = oauth_grants::table
            .find(code_id)
            .select(oauth_grants::token_id)
            .get_result(c)
            .optional()?;
        if let Some(Some(token_id)) = first {
            diesel::update(
                oauth_tokens::table
                    .find(token_id)
                    .filter(oauth_tokens::revoked_at.is_null()),
            )
            .set(oauth_tokens::revoked_at.eq(Some(now)))
            .execute(c)?;
        }
        Ok::<_, DbError>(())
    })
}

#[async_trait]
impl OAuthRepository for DieselOAuthStore {
    async fn insert_request(&self, request: &AccessRequest) -> Result<(), StoreError> {
        let row = RequestRow::from_request(request);
        insert_row!(self.db, oauth_requests::table, row)
            .await
            .map_err(duplicate_or(StoreError::Duplicate, unavailable))
    }

    async fn find_request(&self, session: &SessionId) -> Result<Option<AccessRequest>, StoreError> {
        let key = session.as_str().to_owned();
        let row = find_row!(self.db, oauth_requests::table, key, RequestRow);
        found(row, unavailable, RequestRow::into_request).await
    }

    async fn insert_grant(&self, grant: &Grant) -> Result<(), StoreError> {
        insert_row!(self.db, oauth_grants::table, GrantRow::from_grant(grant))
            .await
            .map_err(duplicate_or(StoreError::Duplicate, unavailable))
    }

    async fn grant_of_session(&self, session: &SessionId) -> Result<Option<Grant>, StoreError> {
        let id = session.as_str().to_owned();
        let of_session = find_where!(
            self.db,
            oauth_grants::table.filter(oauth_grants::session_id.eq(id)),
            GrantRow
        );
        found(of_session, unavailable, GrantRow::into_grant).await
    }

    async fn redeem(
        &self,
        code_id: &str,
        at: Timestamp,
        decide: Decide,
    ) -> Result<Redemption, StoreError> {
        let id = code_id.to_owned();
        let now = at.as_millis();
        if let Some((reads, spends)) = &self.batches {
            return redeem_in_batches(&self.db, (reads, spends), id, now, decide).await;
        }
        // No transaction of its own on PostgreSQL: a read, then one write that is atomic on its
        // own (the compare-and-set with the token) — or, on reuse, a read and one revocation.
        // A transaction would add two round trips and no safety: under READ COMMITTED it does
        // not hold the grant read, the compare-and-set is what makes the code single-use.
        self.db
            .write_autocommit(move |mut conn| {
                let found = match read_grant_with_session(conn.reborrow(), &id) {
                    Ok(Some(found)) => found,
                    Ok(None) => return Ok(Ok(Redemption::Untouched)),
                    // Nothing was written: the (empty) write commits, the caller sees the error.
                    Err(error) => return Ok(Err(error)),
                };
                let issued = match decide(&found) {
                    Verdict::Ignore => return Ok(Ok(Redemption::Untouched)),
                    Verdict::Spend => None,
                    Verdict::Issue(token) => Some(token),
                };
                let spent = found.grant.consumed_at.is_none()
                    && spend_grant(conn.reborrow(), &id, now, issued.as_deref())?;
                if spent {
                    return Ok(Ok(Redemption::Spent {
                        found: Box::new(found),
                        issued,
                    }));
                }
                revoke_first_token(conn, &id, now)?;
                Ok(Ok(Redemption::Reused))
            })
            .await
            .map_err(unavailable)?
    }

    async fn find_token(&self, token_id: &str) -> Result<Option<IssuedToken>, StoreError> {
        let row = find_row!(self.db, oauth_tokens::table, token_id.to_owned(), TokenRow);
        found(row, unavailable, TokenRow::into_token).await
    }

    async fn insert_token(&self, token: &IssuedToken) -> Result<(), StoreError> {
        insert_row!(self.db, oauth_tokens::table, TokenRow::from_token(token))
            .await
            .map_err(duplicate_or(StoreError::Duplicate, unavailable))
    }

    async fn revoke_token(
        &self,
        token_id: &str,
        application: &ApplicationId,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let id = token_id.to_owned();
        let application = application.as_str().to_owned();
        let revoked = update_rows!(
            self.db,
            oauth_tokens::table
                .find(id)
                .filter(oauth_tokens::application_id.eq(application))
                .filter(oauth_tokens::revoked_at.is_null()),
            oauth_tokens::revoked_at.eq(Some(at.as_millis()))
        )
        .await
        .map_err(unavailable)?;
        Ok(revoked == 1)
    }
}
