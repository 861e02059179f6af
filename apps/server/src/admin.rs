//! `idconsent admin …`: the operator's tasks from a shell, through the same domain services as
//! `/v1/admin/…`. Messages they cause (approval emails) are queued in the outbox and delivered
//! by the running server.

use std::io::Write;

use clap::Subcommand;
use idconsent_kernel::PageRequest;
use idconsent_merchant::model::Merchant;
use idconsent_store_diesel::Db;
use secrecy::ExposeSecret;

use crate::config::Config;
use crate::wiring::Deployment;

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Merchant accounts and the go-live review.
    #[command(subcommand)]
    Merchants(MerchantCommand),
    /// The ES256 keys that sign OAuth access tokens (in IDC_OAUTH_KEYS_DIR).
    #[command(subcommand)]
    OauthKeys(OauthKeyCommand),
    /// Plans, closing months, invoices.
    #[command(subcommand)]
    Billing(BillingCommand),
}

#[derive(Debug, Subcommand)]
pub enum BillingCommand {
    /// Set a merchant's plan: free, basic, growth or enterprise (custom limits only there).
    Plan {
        merchant: String,
        plan: String,
        /// Enterprise: requests per minute.
        #[arg(long)]
        per_minute: Option<u64>,
        /// Enterprise: requests per UTC day, or `unlimited`.
        #[arg(long)]
        per_day: Option<String>,
        /// Enterprise: requests in flight at once.
        #[arg(long)]
        concurrent: Option<u64>,
    },
    /// Issue every merchant's invoice for a month that has ended (YYYY-MM); idempotent.
    ClosePeriod { period: String },
    /// Mark an invoice paid.
    MarkPaid { invoice: String },
}

#[derive(Debug, Subcommand)]
pub enum OauthKeyCommand {
    /// Add a new signing key: every server publishes it within the reload interval and signs
    /// with it after `IDC_OAUTH_KEY_ACTIVATION_SECONDS`; the previous key keeps verifying (and
    /// stays in the JWKS) until its last token expires. No restart needed.
    Rotate,
    /// The keys in the database: kid, created, signing from, retired.
    List,
}

#[derive(Debug, Subcommand)]
pub enum MerchantCommand {
    /// List merchants, newest first.
    List {
        /// onboarding, in_review, live or rejected
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 1)]
        page: i64,
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// Approve a merchant in review: live keys for every application.
    Approve { id: String },
    /// Reject a merchant in review with a reason that is emailed to them.
    Reject {
        id: String,
        #[arg(long)]
        reason: String,
    },
}

pub async fn run(config: Config, command: AdminCommand) -> Result<(), String> {
    let database_url = config.database_url.expose_secret().to_owned();
    let db_options = config.db.clone();
    let db = tokio::task::spawn_blocking(move || -> Result<Db, String> {
        let db = Db::open(&database_url, &db_options).map_err(|e| e.to_string())?;
        db.migrate().map_err(|e| e.to_string())?;
        Ok(db)
    })
    .await
    .map_err(|e| e.to_string())??;
    let context = crate::wiring::build(config, db)
        .await
        .map_err(|e| e.to_string())?;
    let merchants = &context.services.merchants;
    let mut out = std::io::stdout();
    match command {
        AdminCommand::Merchants(MerchantCommand::List {
            status,
            page,
            limit,
        }) => {
            let page = PageRequest::new(Some(page), Some(limit)).map_err(|e| e.to_string())?;
            let list = merchants
                .list_merchants(status.as_deref(), page)
                .await
                .map_err(|e| e.to_string())?;
            let _ = writeln!(
                out,
                "{:<32} {:<10} {:<24} EMAIL",
                "ID", "STATUS", "BUSINESS"
            );
            for merchant in &list.items {
                let _ = writeln!(out, "{}", line(merchant));
            }
            let _ = writeln!(out, "({} of {})", list.items.len(), list.total);
        }
        AdminCommand::Merchants(MerchantCommand::Approve { id }) => {
            let merchant = merchants
                .approve_merchant(&id)
                .await
                .map_err(|e| e.to_string())?;
            let _ = writeln!(out, "approved: {}", line(&merchant));
        }
        AdminCommand::OauthKeys(OauthKeyCommand::Rotate) => {
            let rotated = context
                .services
                .oauth_keys
                .rotate()
                .await
                .map_err(|e| e.to_string())?;
            let _ = writeln!(
                out,
                "new OAuth signing key {} (published now, signing from {})",
                rotated.kid, rotated.activates_at
            );
        }
        AdminCommand::OauthKeys(OauthKeyCommand::List) => {
            for key in context
                .services
                .oauth_keys
                .list()
                .await
                .map_err(|e| e.to_string())?
            {
                let retired = key.retired_at.map(|at| at.to_string());
                let _ = writeln!(
                    out,
                    "{:<44} created {}  signs from {}  retired {}",
                    key.kid,
                    key.created_at,
                    key.activates_at,
                    retired.as_deref().unwrap_or("-")
                );
            }
        }
        AdminCommand::Merchants(MerchantCommand::Reject { id, reason }) => {
            let merchant = merchants
                .reject_merchant(&id, &reason)
                .await
                .map_err(|e| e.to_string())?;
            let _ = writeln!(out, "rejected: {}", line(&merchant));
        }
        AdminCommand::Billing(command) => billing(&context, command, &mut out).await?,
    }
    Ok(())
}

async fn billing(
    context: &Deployment,
    command: BillingCommand,
    out: &mut impl Write,
) -> Result<(), String> {
    let billing = &context.services.billing;
    match command {
        BillingCommand::Plan {
            merchant,
            plan,
            per_minute,
            per_day,
            concurrent,
        } => {
            let per_day = match per_day.as_deref() {
                None => None,
                Some("unlimited") => Some(None),
                Some(text) => {
                    Some(Some(text.parse::<u64>().map_err(|_| {
                        "--per-day must be a number or `unlimited`".to_owned()
                    })?))
                }
            };
            let custom = (per_minute.is_some() || per_day.is_some() || concurrent.is_some())
                .then_some(idconsent_billing::CustomLimits {
                    per_minute,
                    per_day,
                    concurrent,
                });
            let terms = billing
                .set_plan(&merchant, &plan, custom.as_ref())
                .await
                .map_err(|e| e.to_string())?;
            let limits = terms.limits;
            let _ = writeln!(
                out,
                "{merchant}: {} ({}/min, {}/day, {} at once)",
                terms.plan.as_str(),
                limits.per_minute,
                limits
                    .per_day
                    .map_or_else(|| "unlimited".to_owned(), |day| day.to_string()),
                limits.concurrent
            );
        }
        BillingCommand::ClosePeriod { period } => {
            let closed = billing
                .close_period(&period)
                .await
                .map_err(|e| e.to_string())?;
            let _ = writeln!(
                out,
                "{}: {} invoices issued, {} merchants already invoiced",
                closed.period, closed.issued, closed.already_invoiced
            );
        }
        BillingCommand::MarkPaid { invoice } => {
            let invoice = billing
                .mark_paid(&invoice)
                .await
                .map_err(|e| e.to_string())?;
            let _ = writeln!(
                out,
                "{}: {} {} {:.2} USD",
                invoice.id,
                invoice.period,
                invoice.status.as_str(),
                invoice.amount_cents as f64 / 100.0
            );
        }
    }
    Ok(())
}

fn line(merchant: &Merchant) -> String {
    format!(
        "{:<32} {:<10} {:<24} {}",
        merchant.id,
        merchant.status.as_str(),
        merchant.business_name.chars().take(24).collect::<String>(),
        merchant.email
    )
}
