//! Signature requests as objects a signer approves with a passkey (purpose `signature`).
//!
//! One request has several signers, and each confirms for themself, so the purpose id names
//! both: `sr_…:<signer email>`. The address may be typed in any case; the canonical id names
//! the signer as the request does, so every spelling is one signer (and one set of attempts on
//! the hosted page). The context the challenge commits to names the document's SHA-256 and the
//! signer, so an assertion proves who signed which bytes.

use std::sync::Arc;

use async_trait::async_trait;
use idconsent_approval::commitment::context_hash;
use idconsent_approval::{
    AlsoFn, ApprovalTarget, ApprovedVia, Approver, Audience, Decision, Document, Line, Page,
    PageVisitors, PurposeKind, Recipient, Shown, Target, TargetError, Words,
};
use idconsent_kernel::{EmailAddress, Timestamp};
use serde::Serialize;

use crate::error::SignatureError;
use crate::model::{Evidence, RequestStatus, SignatureRequest, SignerStatus};
use crate::service::{Answer, SignatureService};

/// The purpose id of one signer of one request.
pub fn purpose_id(request: &SignatureRequest, signer: &EmailAddress) -> String {
    format!("{}:{}", request.id, signer)
}

/// What a signer confirms, and what the challenge commits to (SHA-256 of its canonical JSON,
/// ADR 0006). Built only here, from the stored request.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureContext<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    signature_request_id: &'a str,
    document_sha256: &'a str,
    document_pages: u32,
    signer: ShownSigner<'a>,
    expires_at: Timestamp,
}

#[derive(Debug, Serialize)]
struct ShownSigner<'a> {
    email: &'a str,
    name: &'a str,
}

impl<'a> SignatureContext<'a> {
    /// `None` when `email` is not a signer of `request`.
    pub fn of(request: &'a SignatureRequest, email: &EmailAddress) -> Option<Self> {
        let signer = request.signer(email)?;
        Some(Self {
            kind: "signature",
            signature_request_id: request.id.as_str(),
            document_sha256: &request.document_sha256,
            document_pages: request.document_pages,
            signer: ShownSigner {
                email: signer.email.as_str(),
                name: &signer.name,
            },
            expires_at: request.expires_at,
        })
    }
}

/// What the signing page shows before it knows which signer is asking: the request and its
/// document, no signer. The page carries its hash ([`page_hash`]); a signer's answer made on a
/// page that showed anything else is refused.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SignaturePage<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    signature_request_id: &'a str,
    document_sha256: &'a str,
    document_pages: u32,
    signers: usize,
    expires_at: Timestamp,
}

fn page_of(request: &SignatureRequest) -> Result<serde_json::Value, serde_json::Error> {
    serde_json::to_value(SignaturePage {
        kind: "signature_page",
        signature_request_id: request.id.as_str(),
        document_sha256: &request.document_sha256,
        document_pages: request.document_pages,
        signers: request.signers.len(),
        expires_at: request.expires_at,
    })
}

/// Hex SHA-256 of what the signing page of `request` shows (the `Target::page_hash` of each of
/// its signers).
pub fn page_hash(request: &SignatureRequest) -> String {
    page_of(request)
        .map(|page| hex::encode(context_hash(&page)))
        .unwrap_or_default()
}

/// What every signer reads on the request's page: the document's size and fingerprint.
pub fn shown(request: &SignatureRequest) -> Shown {
    Shown {
        title: "Sign a document".into(),
        requester: None,
        lines: vec![
            Line::plain(
                "summary",
                format!(
                    "A PDF of {} page(s) awaits {} signer(s), until {}.",
                    request.document_pages,
                    request.signers.len(),
                    request.expires_at.to_rfc3339()
                ),
            ),
            Line::labelled(
                "sha256",
                "Its SHA-256 fingerprint",
                request.document_sha256.clone(),
            ),
        ],
        notes: vec![],
        words: Words {
            question: "Do you sign this document?".into(),
            approve: "Sign".into(),
            reject: "Decline".into(),
            approved: "Signed.".into(),
            declined: "Declined.".into(),
        },
    }
}

/// The request's status as a decision sees it: `NotPending` once it is no longer pending.
fn pending(request: &SignatureRequest, now: Timestamp) -> Result<(), TargetError> {
    let status = request.status_at(now);
    if status == RequestStatus::Pending {
        Ok(())
    } else {
        Err(TargetError::NotPending(format!(
            "The signature request is {}",
            status.as_str()
        )))
    }
}

/// The [`ApprovalTarget`] of signature requests.
#[derive(Debug, Clone)]
pub struct SignatureApprovals {
    signatures: Arc<SignatureService>,
}

impl SignatureApprovals {
    /// The purpose kind this domain serves (`purpose.type`: `signature`).
    pub const KIND: PurposeKind = PurposeKind::declared("signature");

    pub fn new(signatures: Arc<SignatureService>) -> Self {
        Self { signatures }
    }

    /// The request and its signer's address as the request spells it, however `id` typed it.
    async fn request_and_signer(
        &self,
        id: &str,
    ) -> Result<(SignatureRequest, EmailAddress), TargetError> {
        let (request_id, typed) = id.split_once(':').ok_or(TargetError::NotFound)?;
        let typed = EmailAddress::parse(typed).map_err(|_| TargetError::NotFound)?;
        let request = self
            .signatures
            .load(request_id)
            .await
            .map_err(target_error)?;
        let email = request
            .signer(&typed)
            .ok_or(TargetError::NotFound)?
            .email
            .clone();
        Ok((request, email))
    }
}

fn context_of(
    request: &SignatureRequest,
    email: &EmailAddress,
) -> Result<serde_json::Value, TargetError> {
    let context = SignatureContext::of(request, email).ok_or(TargetError::NotFound)?;
    serde_json::to_value(context).map_err(|error| TargetError::Unavailable(Box::new(error)))
}

fn audience_of(request: &SignatureRequest) -> Option<Audience> {
    request.callback_url.as_ref().map(|url| Audience {
        application_id: request.application_id.clone(),
        environment: request.environment,
        callback_url: url.clone(),
    })
}

fn target_error(error: SignatureError) -> TargetError {
    match error {
        SignatureError::NotFound(_) => TargetError::NotFound,
        SignatureError::Conflict(message) => TargetError::NotPending(message),
        other => TargetError::Unavailable(Box::new(other)),
    }
}

#[async_trait]
impl ApprovalTarget for SignatureApprovals {
    fn kind(&self) -> PurposeKind {
        Self::KIND
    }

    async fn describe(&self, id: &str) -> Result<Target, TargetError> {
        let (request, email) = self.request_and_signer(id).await?;
        pending(&request, self.signatures.now())?;
        if request
            .signer(&email)
            .is_some_and(|signer| signer.status != SignerStatus::AwaitingSignature)
        {
            return Err(TargetError::NotPending(
                "This signer has already answered".into(),
            ));
        }
        let context = context_of(&request, &email)?;
        let page = page_of(&request).map_err(|error| TargetError::Unavailable(Box::new(error)))?;
        Ok(Target {
            canonical_id: purpose_id(&request, &email),
            recipient: Recipient::Email(email),
            context,
            page: Some(page),
            audience: audience_of(&request),
            shown: shown(&request),
            passkey_required: request.require_biometric,
        })
    }

    async fn audience(&self, id: &str) -> Result<Option<Audience>, TargetError> {
        let (request, _) = self.request_and_signer(id).await?;
        Ok(audience_of(&request))
    }

    /// An approval signs with the passkey verified; a rejection declines.
    async fn decide(
        &self,
        id: &str,
        decision: Decision,
        by: &Approver,
        also: &AlsoFn<'_>,
    ) -> Result<String, TargetError> {
        let (request, email) = self.request_and_signer(id).await?;
        // A signer signs on the hosted page, as themself; never in the app.
        let ApprovedVia::HostedPage {
            passkey,
            ip_address,
            user_agent,
            ..
        } = &by.via
        else {
            return Err(TargetError::NotFound);
        };
        if !by.is(&Recipient::Email(email.clone())) {
            return Err(TargetError::NotFound);
        }
        // What the signer agreed to must still be the request. Its context (document, signer,
        // expiry) never changes once created, so the check on this read holds for the retried
        // writes of `answer` too.
        if let Some(agreed) = &by.context_hash
            && *agreed != hex::encode(context_hash(&context_of(&request, &email)?))
        {
            return Err(TargetError::NotPending(
                "The signature request is not what was shown; reload the page".into(),
            ));
        }
        let also = audience_of(&request)
            .map(|audience| also(&audience))
            .unwrap_or_default();
        let evidence = Evidence {
            ip_address: ip_address.clone(),
            user_agent: user_agent.clone(),
            email_code_verified: true,
            biometric_verified: *passkey,
            sandbox: false,
        };
        let answer = match decision {
            Decision::Approve => Answer::Sign,
            Decision::Reject => Answer::Decline,
        };
        let answered = self
            .signatures
            .answer(request, &email, &evidence, answer, also)
            .await
            .map_err(target_error)?;
        Ok(answered.status.as_str().to_owned())
    }

    /// One page per request: each signer names their address on it.
    fn page_visitors(&self) -> PageVisitors {
        PageVisitors::NameThemselves
    }

    async fn page(&self, page_id: &str) -> Result<Page, TargetError> {
        let request = self.signatures.load(page_id).await.map_err(target_error)?;
        pending(&request, self.signatures.now())?;
        Ok(Page {
            shown: shown(&request),
            hash: page_hash(&request),
            passkey_required: request.require_biometric,
            recipient: None,
            has_document: true,
        })
    }

    async fn document(&self, page_id: &str) -> Result<Option<Document>, TargetError> {
        let request = self.signatures.load(page_id).await.map_err(target_error)?;
        match self.signatures.document(&request).await {
            Ok(bytes) => Ok(Some(Document {
                bytes,
                media_type: "application/pdf",
                file_name: format!("{}.pdf", request.id),
            })),
            Err(SignatureError::DocumentMissing) => Ok(None),
            Err(other) => Err(target_error(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use idconsent_approval::commitment::{canonical_json, context_hash};

    use super::*;
    use crate::model::tests::two_signers;

    #[test]
    fn the_context_commits_to_the_document_and_the_signer() {
        let request = two_signers(true);
        let ann = EmailAddress::parse("ann@example.com").unwrap();
        let bo = EmailAddress::parse("bo@example.com").unwrap();
        let of = |request: &SignatureRequest, email: &EmailAddress| {
            serde_json::to_value(SignatureContext::of(request, email).unwrap()).unwrap()
        };
        assert_eq!(
            String::from_utf8(canonical_json(&of(&request, &ann))).unwrap(),
            format!(
                r#"{{"documentPages":1,"documentSha256":"{}","expiresAt":"1970-01-01T00:01:40.000Z","signatureRequestId":"sr_1","signer":{{"email":"ann@example.com","name":"Ann"}},"type":"signature"}}"#,
                "ab".repeat(32)
            )
        );
        assert_ne!(
            context_hash(&of(&request, &ann)),
            context_hash(&of(&request, &bo))
        );
        let mut other_document = request.clone();
        other_document.document_sha256 = "cd".repeat(32);
        assert_ne!(
            context_hash(&of(&request, &ann)),
            context_hash(&of(&other_document, &ann))
        );
        assert!(
            SignatureContext::of(&request, &EmailAddress::parse("eve@example.com").unwrap())
                .is_none()
        );
        assert_eq!(purpose_id(&request, &ann), "sr_1:ann@example.com");
    }

    #[test]
    fn a_signer_is_named_in_any_case_and_the_page_shows_no_signer() {
        let request = two_signers(true);
        let shouted = EmailAddress::parse("ANN@EXAMPLE.COM").unwrap();
        let signer = request.signer(&shouted).unwrap();
        assert_eq!(signer.email.as_str(), "ann@example.com");
        assert_eq!(purpose_id(&request, &signer.email), "sr_1:ann@example.com");
        // One page for every signer, and it changes with the document.
        let hash = page_hash(&request);
        assert_eq!(hash.len(), 64);
        let mut other_document = request.clone();
        other_document.document_sha256 = "cd".repeat(32);
        assert_ne!(page_hash(&other_document), hash);
    }
}
