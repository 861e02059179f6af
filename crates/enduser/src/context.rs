//! What the app shows before the user signs in or proves an enrollment, and the FIDO challenge
//! commits to (SHA-256 of its canonical JSON, ADR 0006). Other purposes are described by the
//! domain that owns the object (`ApprovalTarget::describe`). Changing a field here changes the
//! hash every wallet recomputes: the tests pin the canonical bytes.

use idconsent_kernel::id::EnrollmentId;
use serde::Serialize;

/// `{type: "enrollment", enrollmentId, phone}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnrollmentContext<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub enrollment_id: &'a EnrollmentId,
    pub phone: &'a str,
}

impl<'a> EnrollmentContext<'a> {
    pub fn new(enrollment_id: &'a EnrollmentId, phone: &'a str) -> Self {
        Self {
            kind: "enrollment",
            enrollment_id,
            phone,
        }
    }
}

/// `{type: "login", phone}`.
#[derive(Debug, Serialize)]
pub struct LoginContext<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub phone: &'a str,
}

impl<'a> LoginContext<'a> {
    pub fn new(phone: &'a str) -> Self {
        Self {
            kind: "login",
            phone,
        }
    }
}

/// `{type: "device_add", deviceId, phone, name, platform, requestedAt, recoveryEndsAt}`: a new
/// device asks to join the account; an active device of the user approves or rejects it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceAddContext<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub device_id: &'a idconsent_kernel::id::DeviceId,
    pub phone: &'a str,
    pub name: &'a str,
    pub platform: &'a str,
    pub requested_at: idconsent_kernel::Timestamp,
    /// Set when a recovery is under way: the device becomes active then unless rejected.
    pub recovery_ends_at: Option<idconsent_kernel::Timestamp>,
}

#[cfg(test)]
mod tests {
    use idconsent_approval::commitment::canonical_json;
    use idconsent_kernel::id::TypedId;

    use super::*;

    fn canonical(context: impl Serialize) -> String {
        String::from_utf8(canonical_json(&serde_json::to_value(context).unwrap())).unwrap()
    }

    #[test]
    fn the_canonical_contexts_are_pinned() {
        let enrollment = EnrollmentId::parse("enr_01JDKXA1B2C3D4E5F6G7H8J9K0").unwrap();
        assert_eq!(
            canonical(EnrollmentContext::new(&enrollment, "+15551234567")),
            r#"{"enrollmentId":"enr_01JDKXA1B2C3D4E5F6G7H8J9K0","phone":"+15551234567","type":"enrollment"}"#
        );
        assert_eq!(
            canonical(LoginContext::new("+15551234567")),
            r#"{"phone":"+15551234567","type":"login"}"#
        );
    }
}
