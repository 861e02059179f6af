//! A signature request, its signers, its audit trail and the transitions between statuses.
//!
//! Every transition is a pure function of the request and the time: the service applies one to
//! a request it loaded and stores the result only if nobody changed the request meanwhile
//! (`SignatureRepository::replace`), so two concurrent signatures cannot both count.

use idconsent_kernel::id::{ApplicationId, SignatureRequestId};
use idconsent_kernel::{EmailAddress, Environment, Timestamp};
use serde::{Deserialize, Serialize};

/// `pending` → `completed` (the last signer signed) | `declined` (a signer declined) |
/// `expired` (`expiresAt` passed first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestStatus {
    Pending,
    Completed,
    Declined,
    Expired,
}

impl RequestStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestStatus::Pending => "pending",
            RequestStatus::Completed => "completed",
            RequestStatus::Declined => "declined",
            RequestStatus::Expired => "expired",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [
            RequestStatus::Pending,
            RequestStatus::Completed,
            RequestStatus::Declined,
            RequestStatus::Expired,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }
}

/// `awaiting_signature` → `signed` | `declined`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignerStatus {
    AwaitingSignature,
    Signed,
    Declined,
}

impl SignerStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SignerStatus::AwaitingSignature => "awaiting_signature",
            SignerStatus::Signed => "signed",
            SignerStatus::Declined => "declined",
        }
    }
}

/// One person asked to sign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Signer {
    pub email: EmailAddress,
    pub name: String,
    pub status: SignerStatus,
    /// When they signed or declined.
    pub decided_at: Option<Timestamp>,
    pub ip_address: Option<String>,
    pub biometric_verified: bool,
}

/// How a signer's answer was given, as the audit trail records it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Evidence {
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    /// The signer confirmed their address with the emailed code.
    pub email_code_verified: bool,
    /// A passkey assertion over the context that names the document and the signer.
    pub biometric_verified: bool,
    /// The merchant's sandbox helper answered for the signer.
    pub sandbox: bool,
}

/// What happened, in order; printed on the certificate's audit page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    Created,
    Signed,
    Declined,
    Completed,
    Expired,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub at: Timestamp,
    pub action: AuditAction,
    /// The signer concerned, if any.
    pub signer: Option<EmailAddress>,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    pub email_code_verified: Option<bool>,
    pub biometric_verified: Option<bool>,
    /// Done by the merchant's sandbox helper rather than by the signer.
    pub sandbox: bool,
    /// The SHA-256 (hex) of the document as uploaded.
    pub document_sha256: String,
}

/// A signature request as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureRequest {
    pub id: SignatureRequestId,
    pub application_id: ApplicationId,
    pub environment: Environment,
    /// Lower-case hex SHA-256 of the uploaded bytes.
    pub document_sha256: String,
    pub document_size: u64,
    pub document_pages: u32,
    pub signers: Vec<Signer>,
    /// Where `signature.completed` goes: the request's `callbackUrl`, else its application's
    /// (decided at creation), else nowhere.
    pub callback_url: Option<String>,
    pub require_biometric: bool,
    pub status: RequestStatus,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub completed_at: Option<Timestamp>,
    pub audit: Vec<AuditEntry>,
    /// Bumped by every transition; `replace` succeeds only on the version it was loaded at.
    pub version: i64,
}

/// Why a transition cannot happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransitionError {
    #[error("No such signer on this request")]
    UnknownSigner,
    #[error("The signature request is {}", .0.as_str())]
    NotPending(RequestStatus),
    #[error("This signer has already {}", .0.as_str())]
    AlreadyAnswered(SignerStatus),
    #[error("This request requires a passkey confirmation")]
    BiometricRequired,
}

fn same_address(a: &EmailAddress, b: &EmailAddress) -> bool {
    a.as_str().eq_ignore_ascii_case(b.as_str())
}

impl SignatureRequest {
    /// The blob key of the document as uploaded.
    pub fn document_key(&self) -> String {
        format!("signatures/{}/original.pdf", self.id)
    }

    /// The blob key of the signed certificate PDF.
    pub fn certificate_key(&self) -> String {
        format!("signatures/{}/certificate.pdf", self.id)
    }

    /// The status as of `now`: a pending request past its expiry is expired even before the
    /// sweeper has recorded it.
    pub fn status_at(&self, now: Timestamp) -> RequestStatus {
        if self.status == RequestStatus::Pending && now >= self.expires_at {
            RequestStatus::Expired
        } else {
            self.status
        }
    }

    /// The signer `email` names, in any case: signers' addresses differ in more than case
    /// (checked at creation), so an address names at most one, and every spelling of it the
    /// same one.
    pub fn signer(&self, email: &EmailAddress) -> Option<&Signer> {
        self.signers
            .iter()
            .find(|signer| same_address(&signer.email, email))
    }

    fn audit_entry(
        &self,
        at: Timestamp,
        action: AuditAction,
        signer: Option<&EmailAddress>,
        evidence: Option<&Evidence>,
    ) -> AuditEntry {
        AuditEntry {
            at,
            action,
            signer: signer.cloned(),
            ip_address: evidence.and_then(|e| e.ip_address.clone()),
            user_agent: evidence.and_then(|e| e.user_agent.clone()),
            email_code_verified: evidence.map(|e| e.email_code_verified),
            biometric_verified: evidence.map(|e| e.biometric_verified),
            sandbox: evidence.is_some_and(|e| e.sandbox),
            document_sha256: self.document_sha256.clone(),
        }
    }

    /// The first audit entry, written with the request.
    pub fn record_creation(&mut self) {
        let entry = self.audit_entry(self.created_at, AuditAction::Created, None, None);
        self.audit.push(entry);
    }

    fn answerable(&self, email: &EmailAddress, at: Timestamp) -> Result<usize, TransitionError> {
        let status = self.status_at(at);
        if status != RequestStatus::Pending {
            return Err(TransitionError::NotPending(status));
        }
        let index = self
            .signers
            .iter()
            .position(|signer| same_address(&signer.email, email))
            .ok_or(TransitionError::UnknownSigner)?;
        match self.signers[index].status {
            SignerStatus::AwaitingSignature => Ok(index),
            answered => Err(TransitionError::AlreadyAnswered(answered)),
        }
    }

    /// The signer signs; the request completes when it was the last one. Returns whether it
    /// completed.
    pub fn sign(
        &mut self,
        email: &EmailAddress,
        evidence: &Evidence,
        at: Timestamp,
    ) -> Result<bool, TransitionError> {
        let index = self.answerable(email, at)?;
        if self.require_biometric && !evidence.biometric_verified && !evidence.sandbox {
            return Err(TransitionError::BiometricRequired);
        }
        let signer = &mut self.signers[index];
        signer.status = SignerStatus::Signed;
        signer.decided_at = Some(at);
        signer.ip_address = evidence.ip_address.clone();
        signer.biometric_verified = evidence.biometric_verified;
        let entry = self.audit_entry(at, AuditAction::Signed, Some(email), Some(evidence));
        self.audit.push(entry);
        self.version += 1;
        let completed = self
            .signers
            .iter()
            .all(|signer| signer.status == SignerStatus::Signed);
        if completed {
            self.status = RequestStatus::Completed;
            self.completed_at = Some(at);
            let entry = self.audit_entry(at, AuditAction::Completed, None, None);
            self.audit.push(entry);
        }
        Ok(completed)
    }

    /// The signer declines, which ends the request for everyone.
    pub fn decline(
        &mut self,
        email: &EmailAddress,
        evidence: &Evidence,
        at: Timestamp,
    ) -> Result<(), TransitionError> {
        let index = self.answerable(email, at)?;
        let signer = &mut self.signers[index];
        signer.status = SignerStatus::Declined;
        signer.decided_at = Some(at);
        signer.ip_address = evidence.ip_address.clone();
        signer.biometric_verified = evidence.biometric_verified;
        let entry = self.audit_entry(at, AuditAction::Declined, Some(email), Some(evidence));
        self.audit.push(entry);
        self.status = RequestStatus::Declined;
        self.version += 1;
        Ok(())
    }

    /// Records the expiry of a request still pending at `at` past its `expiresAt`.
    pub fn expire(&mut self, at: Timestamp) -> Result<(), TransitionError> {
        if self.status != RequestStatus::Pending || at < self.expires_at {
            return Err(TransitionError::NotPending(self.status));
        }
        self.status = RequestStatus::Expired;
        let entry = self.audit_entry(self.expires_at, AuditAction::Expired, None, None);
        self.audit.push(entry);
        self.version += 1;
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use idconsent_kernel::TypedId;

    pub fn two_signers(require_biometric: bool) -> SignatureRequest {
        let signer = |email: &str, name: &str| Signer {
            email: EmailAddress::parse(email).unwrap(),
            name: name.into(),
            status: SignerStatus::AwaitingSignature,
            decided_at: None,
            ip_address: None,
            biometric_verified: false,
        };
        let mut request = SignatureRequest {
            id: SignatureRequestId::from_trusted("sr_1".into()),
            application_id: ApplicationId::from_trusted("app_1".into()),
            environment: Environment::Sandbox,
            document_sha256: "ab".repeat(32),
            document_size: 1000,
            document_pages: 1,
            signers: vec![
                signer("ann@example.com", "Ann"),
                signer("bo@example.com", "Bø"),
            ],
            callback_url: None,
            require_biometric,
            status: RequestStatus::Pending,
            created_at: Timestamp::from_millis(1_000),
            expires_at: Timestamp::from_millis(100_000),
            completed_at: None,
            audit: Vec::new(),
            version: 0,
        };
        request.record_creation();
        request
    }

    fn email(text: &str) -> EmailAddress {
        EmailAddress::parse(text).unwrap()
    }

    fn passkey() -> Evidence {
        Evidence {
            email_code_verified: true,
            biometric_verified: true,
            ip_address: Some("203.0.113.9".into()),
            ..Evidence::default()
        }
    }

    #[test]
    fn the_last_signature_completes_the_request() {
        let mut request = two_signers(true);
        let at = Timestamp::from_millis(2_000);
        assert!(
            !request
                .sign(&email("ann@example.com"), &passkey(), at)
                .unwrap()
        );
        assert_eq!(request.status, RequestStatus::Pending);
        assert!(
            request
                .sign(&email("bo@example.com"), &passkey(), at)
                .unwrap()
        );
        assert_eq!(request.status, RequestStatus::Completed);
        assert_eq!(request.completed_at, Some(at));
        assert_eq!(request.version, 2);
        let actions: Vec<_> = request.audit.iter().map(|e| e.action).collect();
        assert_eq!(
            actions,
            [
                AuditAction::Created,
                AuditAction::Signed,
                AuditAction::Signed,
                AuditAction::Completed
            ]
        );
    }

    #[test]
    fn a_signer_answers_once_and_only_while_pending() {
        let mut request = two_signers(true);
        let at = Timestamp::from_millis(2_000);
        request
            .sign(&email("ann@example.com"), &passkey(), at)
            .unwrap();
        assert_eq!(
            request.sign(&email("ann@example.com"), &passkey(), at),
            Err(TransitionError::AlreadyAnswered(SignerStatus::Signed))
        );
        assert_eq!(
            request.sign(&email("eve@example.com"), &passkey(), at),
            Err(TransitionError::UnknownSigner)
        );
        request
            .decline(&email("bo@example.com"), &passkey(), at)
            .unwrap();
        assert_eq!(request.status, RequestStatus::Declined);
        let late = Timestamp::from_millis(200_000);
        assert_eq!(
            two_signers(true).sign(&email("ann@example.com"), &passkey(), late),
            Err(TransitionError::NotPending(RequestStatus::Expired))
        );
    }

    #[test]
    fn a_passkey_is_required_unless_waived_or_in_the_sandbox_helper() {
        let at = Timestamp::from_millis(2_000);
        let code_only = Evidence {
            email_code_verified: true,
            ..Evidence::default()
        };
        assert_eq!(
            two_signers(true).sign(&email("ann@example.com"), &code_only, at),
            Err(TransitionError::BiometricRequired)
        );
        assert!(
            two_signers(false)
                .sign(&email("ann@example.com"), &code_only, at)
                .is_ok()
        );
        let sandbox = Evidence {
            sandbox: true,
            ..Evidence::default()
        };
        assert!(
            two_signers(true)
                .sign(&email("ann@example.com"), &sandbox, at)
                .is_ok()
        );
    }

    #[test]
    fn expiry_needs_the_time_to_have_come() {
        let mut request = two_signers(true);
        assert!(request.expire(Timestamp::from_millis(99_999)).is_err());
        assert_eq!(
            request.status_at(Timestamp::from_millis(100_000)),
            RequestStatus::Expired
        );
        request.expire(Timestamp::from_millis(100_000)).unwrap();
        assert_eq!(request.status, RequestStatus::Expired);
        assert!(request.expire(Timestamp::from_millis(100_001)).is_err());
    }
}
