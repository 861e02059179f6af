//! Where a decided request sends the browser (RFC 6749 §4.1.2 and §4.1.2.1):
//! `redirectUri?code=…&state=…` once approved, `redirectUri?error=access_denied&state=…` once
//! rejected or expired. An approved request whose code is spent or expired sends `state` alone,
//! so a merchant that already exchanged the code never receives a spent one. Every redirect
//! names us in `iss` (RFC 9207), so a client talking to several providers knows whose code or
//! error this is.

use idconsent_consent::SessionStatus;

use crate::service::RequestStatus;

impl RequestStatus {
    /// The redirect of a decided request, naming `issuer`; `None` while it is pending.
    pub fn redirect(&self, issuer: &str) -> Option<String> {
        let mut params: Vec<(&str, &str)> = Vec::with_capacity(3);
        match self.session.status_at(self.now) {
            SessionStatus::Pending => return None,
            SessionStatus::Approved => {
                if let Some(code) = &self.code {
                    params.push(("code", code));
                }
            }
            SessionStatus::Rejected | SessionStatus::Expired => {
                params.push(("error", "access_denied"))
            }
        }
        if let Some(state) = &self.request.state {
            params.push(("state", state));
        }
        params.push(("iss", issuer));
        Some(with_query(&self.request.redirect_uri, &params))
    }
}

/// `uri` with `params` added to its query (keeping the query it has). Registered redirect URIs
/// have no fragment; one would stay last all the same.
fn with_query(uri: &str, params: &[(&str, &str)]) -> String {
    let (base, fragment) = match uri.split_once('#') {
        Some((base, fragment)) => (base, Some(fragment)),
        None => (uri, None),
    };
    let mut out = String::with_capacity(base.len() + 128);
    out.push_str(base);
    let mut separator = match base.split_once('?') {
        None => Some('?'),
        Some((_, "")) => None,
        Some((_, query)) if query.ends_with('&') => None,
        Some(_) => Some('&'),
    };
    for (name, value) in params {
        if let Some(separator) = separator {
            out.push(separator);
        }
        percent_encode(name, &mut out);
        out.push('=');
        percent_encode(value, &mut out);
        separator = Some('&');
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// RFC 3986 percent-encoding of everything but the unreserved characters.
fn percent_encode(text: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use idconsent_consent::{Session, Transaction};
    use idconsent_kernel::id::TypedId;
    use idconsent_kernel::{Currency, Environment, Intent, Money, PhoneNumber, Timestamp};

    use super::*;
    use crate::model::AccessRequest;
    use crate::pkce::ChallengeMethod;

    fn status(session: SessionStatus, code: Option<&str>, state: Option<&str>) -> RequestStatus {
        let created = Timestamp::from_millis(1_764_000_000_000);
        let session = Session {
            id: TypedId::parse("cs_01JDKX0000000000000000000Z").unwrap(),
            application_id: TypedId::parse("app_01JDKX0000000000000000000Z").unwrap(),
            client_id: TypedId::parse("cli_01JDKX0000000000000000000Z").unwrap(),
            environment: Environment::Live,
            recipient: PhoneNumber::parse("+15551234567").unwrap(),
            intent: Intent::Oauth,
            transaction: Transaction {
                kind: "oauth".into(),
                description: "Share your verified phone".into(),
                amount: Money::from_minor(0, Currency::parse("USD").unwrap()).unwrap(),
                payee: "Example Shop".into(),
            },
            callback_url: "https://shop.example/hooks".into(),
            status: session,
            created_at: created,
            expires_at: created.plus(Duration::from_secs(300)),
            decided_at: None,
        };
        RequestStatus {
            request: AccessRequest {
                session_id: session.id.clone(),
                application_id: session.application_id.clone(),
                client_id: session.client_id.clone(),
                environment: session.environment,
                redirect_uri: "https://shop.example/cb?shop=1".into(),
                code_challenge: "c".repeat(43),
                code_challenge_method: ChallengeMethod::S256,
                claims: Vec::new(),
                scopes: Vec::new(),
                state: state.map(str::to_owned),
                description: None,
                created_at: created,
            },
            session,
            grant: None,
            claims: None,
            code: code.map(str::to_owned),
            now: created.plus(Duration::from_secs(1)),
        }
    }

    const ISSUER: &str = "https://id.example";

    #[test]
    fn a_decided_request_redirects_with_its_code_or_its_refusal_and_the_state() {
        assert_eq!(
            status(SessionStatus::Pending, None, Some("s")).redirect(ISSUER),
            None
        );
        assert_eq!(
            status(SessionStatus::Approved, Some("ac_1"), Some("a b")).redirect(ISSUER),
            Some(
                "https://shop.example/cb?shop=1&code=ac_1&state=a%20b&iss=https%3A%2F%2Fid.example"
                    .into()
            )
        );
        // A spent or expired code is never sent again: the state alone.
        assert_eq!(
            status(SessionStatus::Approved, None, Some("s")).redirect(ISSUER),
            Some("https://shop.example/cb?shop=1&state=s&iss=https%3A%2F%2Fid.example".into())
        );
        assert_eq!(
            status(SessionStatus::Rejected, None, None).redirect(ISSUER),
            Some(
                "https://shop.example/cb?shop=1&error=access_denied&iss=https%3A%2F%2Fid.example"
                    .into()
            )
        );
        let mut expired = status(SessionStatus::Pending, None, Some("s"));
        expired.now = expired.session.expires_at;
        assert_eq!(
            expired.redirect(ISSUER),
            Some("https://shop.example/cb?shop=1&error=access_denied&state=s&iss=https%3A%2F%2Fid.example".into())
        );
    }

    #[test]
    fn parameters_are_appended_and_encoded() {
        let params = [("code", "ac_1f"), ("state", "a b&c=d/é")];
        assert_eq!(
            with_query("https://shop.example/cb", &params),
            "https://shop.example/cb?code=ac_1f&state=a%20b%26c%3Dd%2F%C3%A9"
        );
        assert_eq!(
            with_query("https://shop.example/cb?shop=1", &params[..1]),
            "https://shop.example/cb?shop=1&code=ac_1f"
        );
        assert_eq!(
            with_query("https://shop.example/cb?", &params[..1]),
            "https://shop.example/cb?code=ac_1f"
        );
        assert_eq!(
            with_query("https://shop.example/cb?x=1&", &params[..1]),
            "https://shop.example/cb?x=1&code=ac_1f"
        );
        assert_eq!(
            with_query("https://shop.example/cb#top", &params[..1]),
            "https://shop.example/cb?code=ac_1f#top"
        );
        assert_eq!(
            with_query("https://shop.example/cb", &[]),
            "https://shop.example/cb"
        );
    }
}
