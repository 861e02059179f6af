//! The audit trail as text lines, laid out on A4 pages.

use idconsent_signature::{AuditAction, AuditEntry, SignatureRequest};

/// Lines per A4 page at 10 pt with 14 pt leading inside 50 pt margins.
pub const LINES_PER_PAGE: usize = 52;

/// Every line of the audit trail, in order.
pub fn audit_lines(request: &SignatureRequest) -> Vec<String> {
    let mut lines = vec![
        "Signature audit trail".to_owned(),
        format!("Request: {}", request.id),
        format!("Document SHA-256: {}", request.document_sha256),
        format!(
            "Document: {} bytes, {} page(s); passkey required: {}",
            request.document_size,
            request.document_pages,
            if request.require_biometric {
                "yes"
            } else {
                "no"
            }
        ),
        "Signers:".to_owned(),
    ];
    for signer in &request.signers {
        lines.push(format!(
            "  {} <{}>: {}",
            signer.name,
            signer.email,
            signer.status.as_str()
        ));
    }
    lines.push(String::new());
    lines.push("Events (UTC):".to_owned());
    for entry in &request.audit {
        lines.extend(entry_lines(request, entry));
    }
    lines
}

fn entry_lines(request: &SignatureRequest, entry: &AuditEntry) -> Vec<String> {
    let action = match entry.action {
        AuditAction::Created => "request created",
        AuditAction::Signed => "signed",
        AuditAction::Declined => "declined",
        AuditAction::Completed => "completed: every signer signed",
        AuditAction::Expired => "expired",
    };
    let who = entry
        .signer
        .as_ref()
        .map(|email| {
            let name = request
                .signer(email)
                .map(|signer| signer.name.as_str())
                .unwrap_or_default();
            format!(" by {name} <{email}>")
        })
        .unwrap_or_default();
    let mut lines = vec![format!("{} {action}{who}", entry.at)];
    if entry.signer.is_some() {
        let yes_no = |value: Option<bool>| match value {
            Some(true) => "passed",
            Some(false) => "not done",
            None => "-",
        };
        lines.push(format!(
            "    IP {}; email code {}; passkey {}{}",
            entry.ip_address.as_deref().unwrap_or("-"),
            yes_no(entry.email_code_verified),
            yes_no(entry.biometric_verified),
            if entry.sandbox {
                "; done by the merchant's sandbox helper"
            } else {
                ""
            }
        ));
        lines.push(format!(
            "    user agent: {}",
            entry.user_agent.as_deref().unwrap_or("-")
        ));
    }
    lines
}
