use crate::events::MANDATE_SIGNED;
use std::sync::Arc;

use idconsent_approval::{Decision, Recipient};
use idconsent_kernel::id::{ApplicationId, MandateId, TypedId};
use idconsent_kernel::{
    Clock, Environment, IdGenerator, Metering, Metric, Nudge, Page, PageRequest, QuotaExceeded,
    Timestamp, ValidationErrors, WebUrl,
};
use idconsent_notification::{Address, Invitations, Invitee, NewMessage, NotificationSender};
use idconsent_webhook::{Effects, Outbox};

use crate::error::MandateError;
use crate::events::MandateBody;
use crate::model::{AUTHORIZATION_WINDOW, Mandate, MandateStatus, MandateType};
use crate::ports::{MandateQuery, MandateRepository, RecipientDirectory, StoreError};
use crate::validation::{check_changes, check_description, check_recipient, check_terms};

/// How often a change is recomputed from a fresh read after another change got in first. Each
/// lost race is a change that succeeded, so this only refuses under a storm of writes.
const REPLACE_ATTEMPTS: usize = 8;

#[derive(Debug, Clone)]
pub struct MandateSettings {
    /// Whether callback URLs may target private or loopback hosts.
    pub allow_private_callbacks: bool,
    /// The hosted page where an email recipient decides (`{base}/mandates`); a mandate's page
    /// is `{page_url}/{id}`.
    pub page_url: String,
}

impl Default for MandateSettings {
    fn default() -> Self {
        Self {
            allow_private_callbacks: false,
            page_url: "http://localhost:8080/mandates".into(),
        }
    }
}

/// The application asking, as its signed request established it.
#[derive(Debug, Clone)]
pub struct Requester {
    pub application_id: ApplicationId,
    pub environment: Environment,
    /// The application's callback URL, used when a mandate names none.
    pub default_callback_url: Option<String>,
}

/// A create request as received (spec §2.5); numbers as their JSON text.
#[derive(Debug, Clone, Default)]
pub struct CreateMandate {
    pub recipient: String,
    pub kind: String,
    pub amount: Option<String>,
    pub currency: Option<String>,
    pub frequency: Option<String>,
    pub description: String,
    pub callback_url: Option<String>,
}

/// A PUT as received: `None` leaves a field alone, `Some(None)` (JSON `null`) removes an
/// optional term.
#[derive(Debug, Clone, Default)]
pub struct ChangeMandate {
    pub description: Option<String>,
    pub amount: Option<Option<String>>,
    pub currency: Option<String>,
    pub frequency: Option<Option<String>>,
}

/// The ports a [`MandateService`] works through.
#[derive(Debug, Clone)]
pub struct MandatePorts {
    pub mandates: Arc<dyn MandateRepository>,
    pub recipients: Arc<dyn RecipientDirectory>,
    pub metering: Arc<dyn Metering>,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGenerator>,
    pub outbox_written: Option<Arc<dyn Nudge>>,
    /// Emails an email recipient the link to the hosted page.
    pub notifications: Arc<dyn NotificationSender>,
    /// Who a sandbox invitation may go to, and the send allowance it counts against.
    pub invitations: Arc<Invitations>,
}

#[derive(Debug, Clone)]
pub struct MandateService {
    ports: MandatePorts,
    settings: MandateSettings,
}

impl MandateService {
    pub fn new(ports: MandatePorts, settings: MandateSettings) -> Self {
        Self { ports, settings }
    }

    pub fn now(&self) -> Timestamp {
        self.ports.clock.now()
    }

    /// The hosted page where an email recipient decides; `None` for a phone recipient, who
    /// decides in the app.
    pub fn page_url(&self, mandate: &Mandate) -> Option<String> {
        matches!(mandate.recipient, Recipient::Email(_)).then(|| {
            format!(
                "{}/{}",
                self.settings.page_url.trim_end_matches('/'),
                mandate.id
            )
        })
    }

    /// Validates and stores a mandate awaiting authorisation, charging it to the month's
    /// mandate quota in the same transaction.
    pub async fn create(
        &self,
        requester: &Requester,
        input: CreateMandate,
    ) -> Result<Mandate, MandateError> {
        let live = requester.environment == Environment::Live;
        let mut errors = ValidationErrors::new();
        let recipient = check_recipient(&mut errors, &input.recipient);
        let kind = MandateType::parse(&input.kind);
        if kind.is_none() {
            errors.push("type", format!("must be {}", MandateType::choices()));
        }
        let terms = check_terms(
            &mut errors,
            input.amount.as_deref(),
            input.currency.as_deref(),
            input.frequency.as_deref(),
        );
        let description = check_description(&mut errors, &input.description);
        let callback_url = match &input.callback_url {
            Some(url) => errors
                .check(
                    "callbackUrl",
                    WebUrl::parse(url).and_then(|url| {
                        url.check_target(live, self.settings.allow_private_callbacks)
                            .map(|()| url)
                    }),
                )
                .map(|url| Some(url.as_str().to_owned())),
            None => Some(requester.default_callback_url.clone()),
        };
        let (recipient, kind, terms, description, callback_url) = errors
            .finish_with(|| Some((recipient?, kind?, terms?, description?, callback_url?)))?;
        if let (true, Recipient::Phone(phone)) = (live, &recipient)
            && !self.ports.recipients.is_enrolled(phone).await?
        {
            return Err(MandateError::NotFound("Recipient is not enrolled"));
        }
        // An email recipient is invited: admitted (sandbox rules, send allowance) before
        // anything is stored or sent.
        if let Recipient::Email(email) = &recipient {
            let invitee = Invitee {
                field: "recipient",
                email,
            };
            self.ports
                .invitations
                .admit(&requester.application_id, requester.environment, &[invitee])
                .await?;
        }

        let now = self.now();
        let mandate = Mandate {
            id: self.ports.ids.next(),
            application_id: requester.application_id.clone(),
            environment: requester.environment,
            recipient,
            kind,
            terms,
            description,
            callback_url,
            status: MandateStatus::PendingAuthorization,
            authorized_terms: None,
            created_at: now,
            updated_at: now,
            authorization_deadline: Some(now.plus(AUTHORIZATION_WINDOW)),
            authorized_at: None,
            cancelled_at: None,
            version: 0,
        };
        let charge = self
            .ports
            .metering
            .charge(
                &mandate.application_id,
                mandate.environment,
                Metric::Mandates,
                now,
            )
            .await
            .map_err(|error| MandateError::Unavailable(Box::new(error)))?;
        let effects = Effects {
            outbox: Vec::new(),
            charges: charge.into_iter().collect(),
        };
        self.ports
            .mandates
            .create(&mandate, &effects)
            .await
            .map_err(|error| self.store_error(error))?;
        self.invite(&mandate).await;
        Ok(mandate)
    }

    /// Emails an email recipient the hosted page's link. Best effort, after the mandate is
    /// stored: the merchant has the same link (`approvalUrl`), and a failure here must not
    /// make a retried create store a second mandate.
    async fn invite(&self, mandate: &Mandate) {
        let (Recipient::Email(email), Some(url)) = (&mandate.recipient, self.page_url(mandate))
        else {
            return;
        };
        let Ok(to) = Address::parse(email.as_str()) else {
            return;
        };
        let _ = self
            .ports
            .notifications
            .send(NewMessage {
                to,
                subject: "A mandate awaits your authorisation".into(),
                body: format!(
                    "You are asked to authorise a {}: {}. Review it, then authorise or decline: \
                     {url}",
                    mandate.kind.as_str().replace('_', " "),
                    mandate.description
                ),
                code: None,
                link: Some(url),
            })
            .await;
    }

    /// A mandate as its creator sees it; any other application or environment gets "not
    /// found".
    pub async fn get(&self, requester: &Requester, id: &str) -> Result<Mandate, MandateError> {
        let mandate = self.load(id).await?;
        if mandate.application_id != requester.application_id
            || mandate.environment != requester.environment
        {
            return Err(not_found());
        }
        Ok(mandate)
    }

    /// Any mandate by id (approvals, hosted page); "not found" for a malformed id.
    pub async fn load(&self, id: &str) -> Result<Mandate, MandateError> {
        let id = MandateId::parse(id).map_err(|_| not_found())?;
        self.ports.mandates.find(&id).await?.ok_or_else(not_found)
    }

    /// The application's mandates, newest first. `status` is `active`, `pending` (or
    /// `pending_authorization`), `cancelled` or `expired`; `kind` a mandate type.
    pub async fn list(
        &self,
        requester: &Requester,
        status: Option<&str>,
        kind: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Mandate>, MandateError> {
        let mut errors = ValidationErrors::new();
        let status = status.and_then(|text| {
            let status = match text {
                "pending" => Some(MandateStatus::PendingAuthorization),
                other => MandateStatus::parse(other),
            };
            if status.is_none() {
                errors.push("status", "must be active, pending, cancelled or expired");
            }
            status
        });
        let kind = kind.and_then(|text| {
            let kind = MandateType::parse(text);
            if kind.is_none() {
                errors.push("type", format!("must be {}", MandateType::choices()));
            }
            kind
        });
        errors.finish()?;
        let query = MandateQuery {
            application_id: requester.application_id.clone(),
            environment: requester.environment,
            status,
            kind,
            now: self.now(),
        };
        Ok(self.ports.mandates.list(&query, page).await?)
    }

    /// PUT: the description may change while the mandate is open; new terms on an active
    /// mandate send it back for re-authorisation. 409 on a cancelled or expired mandate.
    pub async fn change(
        &self,
        requester: &Requester,
        id: &str,
        input: ChangeMandate,
    ) -> Result<Mandate, MandateError> {
        let mandate = self.get(requester, id).await?;
        let changes = check_changes(&input, &mandate.terms)?;
        // Even a change back to the authorised terms (which makes the mandate active again)
        // signs nothing: only the recipient's approval does.
        self.transition(mandate, Effects::default, Signs::No, |mandate, now| {
            Ok(mandate.change(&changes, now)?)
        })
        .await
    }

    /// DELETE: cancels (kept and still readable); cancelling again changes nothing.
    pub async fn cancel(&self, requester: &Requester, id: &str) -> Result<Mandate, MandateError> {
        let mandate = self.get(requester, id).await?;
        self.transition(mandate, Effects::default, Signs::No, |mandate, now| {
            Ok(mandate.cancel(now)?)
        })
        .await
    }

    /// Applies the recipient's decision: approval activates the mandate with `mandate.signed`,
    /// a decline cancels it; `also` is written in the same transaction. `check` sees the
    /// mandate as it will be decided (after every retry's fresh read) and may refuse it — the
    /// approval target refuses one that changed since the challenge was issued.
    pub async fn decide(
        &self,
        mandate: Mandate,
        decision: Decision,
        check: &(dyn Fn(&Mandate) -> Result<(), MandateError> + Send + Sync),
        also: Effects,
    ) -> Result<Mandate, MandateError> {
        let decided = self
            .transition(
                mandate,
                || also.clone(),
                Signs::OnApproval,
                |mandate, now| {
                    check(mandate)?;
                    match decision {
                        Decision::Approve => mandate.approve(now)?,
                        Decision::Reject => mandate.decline(now)?,
                    }
                    Ok(true)
                },
            )
            .await?;
        Ok(decided)
    }

    /// The sandbox helpers (`mk_test_` keys only): decide as the recipient would, with the same
    /// events (no `auth.*`: no passkey was used).
    pub async fn decide_in_sandbox(
        &self,
        requester: &Requester,
        id: &str,
        decision: Decision,
    ) -> Result<Mandate, MandateError> {
        if requester.environment != Environment::Sandbox {
            return Err(MandateError::Forbidden(
                "Sandbox helpers work only with mk_test_ keys",
            ));
        }
        let mandate = self.get(requester, id).await?;
        self.decide(mandate, decision, &|_| Ok(()), Effects::default())
            .await
    }

    /// Records the expiry of every pending mandate whose deadline has passed. Safe with several
    /// processes: each expiry is a compare-and-swap on the mandate's version.
    pub async fn expire_due(&self) -> Result<usize, MandateError> {
        let now = self.now();
        let mut expired = 0;
        for mut mandate in self.ports.mandates.due_for_expiry(now, 200).await? {
            let loaded_version = mandate.version;
            if mandate.expire(now).is_ok()
                && self
                    .ports
                    .mandates
                    .replace(&mandate, loaded_version, &Effects::default())
                    .await?
            {
                expired += 1;
            }
        }
        Ok(expired)
    }

    /// Applies `apply` to the mandate and stores it with its effects (plus `mandate.signed`
    /// when `signs` says so and it became active), recomputing from a fresh read when another
    /// writer got in first. `apply` returning `Ok(false)` means nothing changed: nothing is
    /// written.
    async fn transition(
        &self,
        mut mandate: Mandate,
        also: impl Fn() -> Effects,
        signs: Signs,
        apply: impl Fn(&mut Mandate, Timestamp) -> Result<bool, MandateError>,
    ) -> Result<Mandate, MandateError> {
        for _ in 0..REPLACE_ATTEMPTS {
            let loaded_version = mandate.version;
            let mut next = mandate.clone();
            let now = self.now();
            if !apply(&mut next, now)? {
                return Ok(mandate);
            }
            let mut effects = also();
            if signs == Signs::OnApproval && next.status == MandateStatus::Active {
                effects.outbox.push(self.signed_event(&next, now));
            }
            if self
                .ports
                .mandates
                .replace(&next, loaded_version, &effects)
                .await
                .map_err(|error| self.store_error(error))?
            {
                if !effects.outbox.is_empty() {
                    self.nudge();
                }
                return Ok(next);
            }
            mandate = self
                .ports
                .mandates
                .find(&mandate.id)
                .await?
                .ok_or_else(not_found)?;
        }
        Err(MandateError::Conflict(
            "The mandate is changing too fast; try again".into(),
        ))
    }

    fn signed_event(&self, mandate: &Mandate, now: Timestamp) -> Outbox {
        let urls: Vec<&str> = mandate.callback_url.as_deref().into_iter().collect();
        Outbox::new(
            self.ports.ids.as_ref(),
            MANDATE_SIGNED,
            mandate.application_id.clone(),
            mandate.environment,
            now,
            MandateBody::of(mandate, now),
            &urls,
        )
    }

    fn store_error(&self, error: StoreError) -> MandateError {
        match error {
            StoreError::Quota(quota) => self.quota(quota),
            other => other.into(),
        }
    }

    fn quota(&self, quota: QuotaExceeded) -> MandateError {
        MandateError::QuotaExceeded {
            quota,
            retry_after_secs: quota.retry_after_secs(self.now()),
        }
    }

    fn nudge(&self) {
        if let Some(nudge) = &self.ports.outbox_written {
            nudge.nudge();
        }
    }
}

/// Whether a transition can be the recipient's signature (`mandate.signed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signs {
    /// A decision: an approval signs.
    OnApproval,
    /// The merchant's change or cancellation: never a signature.
    No,
}

fn not_found() -> MandateError {
    MandateError::NotFound("Mandate not found")
}
