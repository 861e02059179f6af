//! The token exchange on PostgreSQL in batches (ADR 0035): the grant reads and the spends of
//! the exchanges arriving together, one statement each.

use diesel::prelude::*;
use idconsent_oauth::ports::{Decide, Redemption, StoreError, Verdict};

use super::{
    GrantRead, GrantRow, TokenRow, grant_with_session, revoke_first_token, spend_grant, unavailable,
};
use crate::cached::CacheStatement;
use crate::db::{Batcher, Db};
use crate::error::DbError;
use crate::schema::{consent_sessions, oauth_grants};

/// Grants looked up together at most: one statement with one array.
pub(super) const GRANT_READS_PER_BATCH: usize = 128;

/// The grant reads of a batch on PostgreSQL (ADR 0035), in one statement; answers in order.
pub(super) fn read_grants_with_sessions(
    c: &mut diesel::PgConnection,
    code_ids: Vec<String>,
) -> Result<Vec<Option<GrantRead>>, DbError> {
    let rows: Vec<GrantRead> = oauth_grants::table
        .left_join(consent_sessions::table.on(consent_sessions::id.eq(oauth_grants::session_id)))
        .filter(oauth_grants::code_id.eq_any(&code_ids))
        .select((
            GrantRow::as_select(),
            consent_sessions::status.nullable(),
            consent_sessions::environment.nullable(),
        ))
        .cached()
        .load(c)?;
    let mut found: std::collections::HashMap<String, GrantRead> = rows
        .into_iter()
        .map(|row| (row.0.code_id.clone(), row))
        .collect();
    // A code asked twice in one batch (a replay racing its original) gets the row twice.
    let mut answers: Vec<Option<GrantRead>> = Vec::with_capacity(code_ids.len());
    for (position, code_id) in code_ids.iter().enumerate() {
        let repeated = code_ids[position + 1..].contains(code_id);
        answers.push(if repeated {
            found.get(code_id).cloned()
        } else {
            found.remove(code_id)
        });
    }
    Ok(answers)
}

/// The exchange on PostgreSQL (ADR 0035): the grant read in the next batch of reads, the
/// verdict on the caller's task, then the compare-and-set with its token in the next batch of
/// spends — one statement (and one commit) each for the exchanges arriving together. A code spent without a token (a failed
/// verifier) and a reused code take a statement of their own: they are rare.
pub(super) async fn redeem_in_batches(
    db: &Db,
    (reads, spends): (&Batcher<String, Option<GrantRead>>, &Batcher<Spend, bool>),
    id: String,
    now: i64,
    decide: Decide,
) -> Result<Redemption, StoreError> {
    let Some(found) = reads.call(id.clone()).await.map_err(unavailable)? else {
        return Ok(Redemption::Untouched);
    };
    let found = grant_with_session(found)?;
    let issued = match decide(&found) {
        Verdict::Ignore => return Ok(Redemption::Untouched),
        Verdict::Spend => None,
        Verdict::Issue(token) => Some(token),
    };
    let spent = match (&found.grant.consumed_at, &issued) {
        (Some(_), _) => false,
        (None, Some(token)) => spends
            .call(Spend {
                code_id: id.clone(),
                at: now,
                token: TokenRow::from_token(token),
            })
            .await
            .map_err(unavailable)?,
        (None, None) => {
            let id = id.clone();
            db.write_autocommit(move |conn| spend_grant(conn, &id, now, None))
                .await
                .map_err(unavailable)?
        }
    };
    if spent {
        return Ok(Redemption::Spent {
            found: Box::new(found),
            issued,
        });
    }
    db.write_autocommit(move |conn| revoke_first_token(conn, &id, now))
        .await
        .map_err(unavailable)?;
    Ok(Redemption::Reused)
}

/// An exchange's compare-and-set waiting for the next batch (PostgreSQL).
pub(crate) struct Spend {
    code_id: String,
    at: i64,
    token: TokenRow,
}

/// Spends written together at most: one statement with twelve arrays.
pub(super) const SPENDS_PER_BATCH: usize = 128;

/// A batch of [`SPEND_AND_STORE_TOKEN`]: each grant is spent (if unspent) with the token of its
/// input row, and a token is stored only if its grant row was spent with it. Of two exchanges
/// of one code in a batch the update takes one input row; the other's token matches no spent
/// grant and is not stored: that exchange is told the code was spent before it.
const SPEND_BATCH: &str = "WITH input AS (SELECT * FROM unnest($1::text[], $2::bigint[], \
    $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], \
    $10::bigint[], $11::bigint[], $12::bigint[]) AS t(code_id, at, token_id, application_id, \
    client_id, environment, subject, scopes, claims, issued_at, expires_at, revoked_at)), \
    spent AS (UPDATE oauth_grants g SET consumed_at = i.at, token_id = i.token_id FROM input i \
    WHERE g.code_id = i.code_id AND g.consumed_at IS NULL RETURNING g.token_id) \
    INSERT INTO oauth_tokens (token_id, application_id, client_id, environment, subject, scopes, \
    claims, issued_at, expires_at, revoked_at) \
    SELECT i.token_id, i.application_id, i.client_id, i.environment, i.subject, i.scopes, \
    i.claims, i.issued_at, i.expires_at, i.revoked_at FROM input i JOIN spent s \
    ON s.token_id = i.token_id RETURNING token_id";

#[derive(QueryableByName)]
struct StoredToken {
    #[diesel(sql_type = diesel::sql_types::Text)]
    token_id: String,
}

/// Runs a batch of spends; answers, in order, whether each spent its code.
pub(super) fn spend_batch(
    c: &mut diesel::PgConnection,
    batch: Vec<Spend>,
) -> Result<Vec<bool>, DbError> {
    use diesel::sql_types::{Array, BigInt, Nullable, Text};
    let text = |f: fn(&Spend) -> &str| batch.iter().map(f).collect::<Vec<&str>>();
    let number = |f: fn(&Spend) -> i64| batch.iter().map(f).collect::<Vec<i64>>();
    let stored: Vec<StoredToken> = diesel::sql_query(SPEND_BATCH)
        .bind::<Array<Text>, _>(text(|s| &s.code_id))
        .bind::<Array<BigInt>, _>(number(|s| s.at))
        .bind::<Array<Text>, _>(text(|s| &s.token.token_id))
        .bind::<Array<Text>, _>(text(|s| &s.token.application_id))
        .bind::<Array<Text>, _>(text(|s| &s.token.client_id))
        .bind::<Array<Text>, _>(text(|s| &s.token.environment))
        .bind::<Array<Text>, _>(text(|s| &s.token.subject))
        .bind::<Array<Text>, _>(text(|s| &s.token.scopes))
        .bind::<Array<Text>, _>(text(|s| &s.token.claims))
        .bind::<Array<BigInt>, _>(number(|s| s.token.issued_at))
        .bind::<Array<BigInt>, _>(number(|s| s.token.expires_at))
        .bind::<Array<Nullable<BigInt>>, _>(
            batch.iter().map(|s| s.token.revoked_at).collect::<Vec<_>>(),
        )
        .cached()
        .load(c)?;
    let stored: std::collections::HashSet<String> =
        stored.into_iter().map(|row| row.token_id).collect();
    Ok(batch
        .iter()
        .map(|spend| stored.contains(&spend.token.token_id))
        .collect())
}
