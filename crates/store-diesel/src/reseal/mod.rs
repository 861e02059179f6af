//! Start-up re-sealing of secrets stored before sealed values were bound to their rows
//! (ADR 0026): every sealed column is read, each value still in the unbound `v1.` format is
//! opened and sealed again for its row, in one transaction. Values already bound are left alone,
//! so after the first start this reads a handful of indexed rows and writes nothing.

use diesel::prelude::*;
use idconsent_kernel::id::{ApplicationId, TypedId};
use idconsent_kernel::{Environment, Sealed, SealedFor, SecretVault};
use idconsent_merchant::model::sealing;
use idconsent_oauth::{grant_code_sealed_for, sealed_signing_key};
use std::sync::Arc;

use crate::db::{AnyConnection, Db};
use crate::error::DbError;
use crate::schema::{api_credentials, applications, oauth_grants, oauth_signing_keys};

/// The prefix of bound sealed values; anything else is re-sealed.
const BOUND: &str = "v2.%";

/// Why re-sealing stopped; nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum ResealError {
    #[error("a stored secret ({what}) cannot be opened with this master key")]
    Unreadable { what: String },
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Re-seals every legacy value; returns how many were re-sealed.
pub async fn reseal_legacy_secrets(
    db: &Db,
    vault: Arc<dyn SecretVault>,
) -> Result<usize, ResealError> {
    let outcome = db
        .write(move |mut conn| {
            let mut resealed = 0;
            let vault = vault.as_ref();
            match reseal_all(&mut conn, vault, &mut resealed) {
                Ok(()) => Ok(Ok(resealed)),
                // Roll back what was done so far: a half re-sealed database is still readable,
                // but an operator should fix the key first.
                Err(Failure::Unreadable(what)) => Err(DbError::Rollback(what)),
                Err(Failure::Db(error)) => Err(error),
            }
        })
        .await;
    match outcome {
        Ok(result) => result,
        Err(DbError::Rollback(what)) => Err(ResealError::Unreadable {
            what: what.to_owned(),
        }),
        Err(error) => Err(error.into()),
    }
}

enum Failure {
    Unreadable(&'static str),
    Db(DbError),
}

impl From<diesel::result::Error> for Failure {
    fn from(error: diesel::result::Error) -> Self {
        Failure::Db(error.into())
    }
}

/// The value re-sealed for `binding`, or `None` when it is already bound.
fn reseal_value(
    vault: &dyn SecretVault,
    stored: &str,
    binding: SealedFor<'_>,
    what: &'static str,
) -> Result<Option<String>, Failure> {
    vault
        .reseal(&Sealed::from_stored(stored.to_owned()), binding)
        .map(|sealed| sealed.map(|sealed| sealed.as_str().to_owned()))
        .map_err(|_| Failure::Unreadable(what))
}

fn reseal_all(
    conn: &mut AnyConnection<'_>,
    vault: &dyn SecretVault,
    resealed: &mut usize,
) -> Result<(), Failure> {
    reseal_applications(conn, vault, resealed)?;
    reseal_api_keys(conn, vault, resealed)?;
    reseal_grants(conn, vault, resealed)?;
    reseal_signing_keys(conn, vault, resealed)
}

type ApplicationSecrets = (String, String, Option<String>, String, Option<String>);

fn reseal_applications(
    conn: &mut AnyConnection<'_>,
    vault: &dyn SecretVault,
    resealed: &mut usize,
) -> Result<(), Failure> {
    let legacy = applications::table
        .filter(
            applications::secret
                .not_like(BOUND)
                .or(applications::webhook_secret.not_like(BOUND))
                .or(applications::previous_secret.not_like(BOUND))
                .or(applications::previous_webhook_secret.not_like(BOUND)),
        )
        .select((
            applications::id,
            applications::secret,
            applications::previous_secret,
            applications::webhook_secret,
            applications::previous_webhook_secret,
        ));
    let rows: Vec<ApplicationSecrets> = with_conn!(conn, |c| legacy.load(&mut **c))?;
    for (id, secret, previous_secret, webhook_secret, previous_webhook_secret) in rows {
        let app = ApplicationId::from_trusted(id.clone());
        let request = sealing::request_secret(&app);
        let webhook = sealing::webhook_secret(&app);
        let optional = |value: &Option<String>, binding, what| match value {
            Some(value) => reseal_value(vault, value, binding, what),
            None => Ok(None),
        };
        let new_secret = reseal_value(vault, &secret, request, "applications.secret")?;
        let new_previous = optional(&previous_secret, request, "applications.previous_secret")?;
        let new_webhook = reseal_value(
            vault,
            &webhook_secret,
            webhook,
            "applications.webhook_secret",
        )?;
        let new_previous_webhook = optional(
            &previous_webhook_secret,
            webhook,
            "applications.previous_webhook_secret",
        )?;
        let change = (
            applications::secret.eq(new_secret.clone().unwrap_or(secret)),
            applications::previous_secret.eq(new_previous.clone().or(previous_secret)),
            applications::webhook_secret.eq(new_webhook.clone().unwrap_or(webhook_secret)),
            applications::previous_webhook_secret
                .eq(new_previous_webhook.clone().or(previous_webhook_secret)),
        );
        *resealed += [new_secret, new_previous, new_webhook, new_previous_webhook]
            .iter()
            .filter(|value| value.is_some())
            .count();
        let target = applications::table.find(id);
        with_conn!(conn, |c| diesel::update(target)
            .set(change.clone())
            .execute(&mut **c))?;
    }
    Ok(())
}

fn reseal_api_keys(
    conn: &mut AnyConnection<'_>,
    vault: &dyn SecretVault,
    resealed: &mut usize,
) -> Result<(), Failure> {
    let legacy = api_credentials::table
        .filter(api_credentials::key_sealed.not_like(BOUND))
        .select((
            api_credentials::id,
            api_credentials::application_id,
            api_credentials::environment,
            api_credentials::key_sealed,
        ));
    let rows: Vec<(i64, String, String, String)> = with_conn!(conn, |c| legacy.load(&mut **c))?;
    for (id, application, environment, sealed) in rows {
        let environment = Environment::parse(&environment)
            .ok_or(Failure::Unreadable("api_credentials.environment"))?;
        let application = ApplicationId::from_trusted(application);
        let binding = sealing::api_key(&application, environment);
        if let Some(bound) = reseal_value(vault, &sealed, binding, "api_credentials.key_sealed")? {
            *resealed += 1;
            let target = api_credentials::table.find(id);
            with_conn!(conn, |c| diesel::update(target)
                .set(api_credentials::key_sealed.eq(&bound))
                .execute(&mut **c))?;
        }
    }
    Ok(())
}

fn reseal_grants(
    conn: &mut AnyConnection<'_>,
    vault: &dyn SecretVault,
    resealed: &mut usize,
) -> Result<(), Failure> {
    let legacy = oauth_grants::table
        .filter(oauth_grants::sealed_code.not_like(BOUND))
        .select((oauth_grants::code_id, oauth_grants::sealed_code));
    let rows: Vec<(String, String)> = with_conn!(conn, |c| legacy.load(&mut **c))?;
    for (code_id, sealed) in rows {
        let binding = grant_code_sealed_for(&code_id);
        if let Some(bound) = reseal_value(vault, &sealed, binding, "oauth_grants.sealed_code")? {
            *resealed += 1;
            let target = oauth_grants::table.find(&code_id);
            with_conn!(conn, |c| diesel::update(target)
                .set(oauth_grants::sealed_code.eq(&bound))
                .execute(&mut **c))?;
        }
    }
    Ok(())
}

fn reseal_signing_keys(
    conn: &mut AnyConnection<'_>,
    vault: &dyn SecretVault,
    resealed: &mut usize,
) -> Result<(), Failure> {
    let legacy = oauth_signing_keys::table
        .filter(oauth_signing_keys::sealed_key.not_like(BOUND))
        .select((oauth_signing_keys::kid, oauth_signing_keys::sealed_key));
    let rows: Vec<(String, String)> = with_conn!(conn, |c| legacy.load(&mut **c))?;
    for (kid, sealed) in rows {
        let binding = sealed_signing_key(&kid);
        if let Some(bound) = reseal_value(vault, &sealed, binding, "oauth_signing_keys.sealed_key")?
        {
            *resealed += 1;
            let target = oauth_signing_keys::table.find(&kid);
            with_conn!(conn, |c| diesel::update(target)
                .set(oauth_signing_keys::sealed_key.eq(&bound))
                .execute(&mut **c))?;
        }
    }
    Ok(())
}
