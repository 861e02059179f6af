//! The ordered gates every signed request passes after its signature is verified and before its
//! handler runs: rate limits, quotas, metering. Each gate is a port; the server runs the chain in
//! one place (its `Signed` extractor), so a new gate never touches a handler.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use idconsent_kernel::{FieldError, Timestamp};

use crate::signed::Caller;

/// A signed request on its way to its handler, as a gate sees it.
#[derive(Debug, Clone, Copy)]
pub struct GateRequest<'a> {
    pub caller: &'a Caller,
    pub method: &'a str,
    /// The route's pattern (`/v1/consents/auth/{sessionId}`), never the concrete path.
    pub route: &'a str,
    pub at: Timestamp,
}

/// Something a gate holds while its request runs (a concurrency slot). It is released when
/// dropped: when the request completes, fails, or its client goes away.
pub trait Hold: Send + Sync + fmt::Debug {}

impl<T: Send + Sync + fmt::Debug> Hold for T {}

/// A gate's yes: headers for the response (2xx and 4xx alike) and what it holds meanwhile.
#[derive(Debug, Default)]
pub struct Admission {
    pub headers: Vec<(&'static str, String)>,
    pub holds: Vec<Box<dyn Hold>>,
}

impl Admission {
    fn absorb(&mut self, other: Admission) {
        self.headers.extend(other.headers);
        self.holds.extend(other.holds);
    }
}

/// The status a refusal answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// 429 `rate_limited`: a per-minute, per-day or concurrency limit.
    RateLimited,
    /// 429 `rate_limited` with a `quota_exceeded` detail: a monthly quota.
    QuotaExceeded,
    /// 403 `forbidden`.
    Forbidden,
    /// 503 `service_unavailable`: the gate cannot decide right now.
    Unavailable,
}

/// A gate's no: the request runs no handler and answers with this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub kind: RefusalKind,
    pub message: String,
    /// `Retry-After`, in seconds.
    pub retry_after_secs: Option<u64>,
    /// The envelope's `details` (e.g. which limit).
    pub details: Vec<FieldError>,
    /// Response headers, the admitting gates' before this one's.
    pub headers: Vec<(&'static str, String)>,
}

impl Refusal {
    pub fn new(kind: RefusalKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            retry_after_secs: None,
            details: Vec::new(),
            headers: Vec::new(),
        }
    }
}

/// One step of the chain.
///
/// Contract: `admit` decides from the request alone, before its body is used; a refusal has no
/// lasting effect (whatever it counted is undone or is the count of refusals itself); what an
/// admission holds is released by dropping it.
#[async_trait]
pub trait Gate: Send + Sync + fmt::Debug {
    /// For logs and metrics: `rate_limit`, `metering`.
    fn name(&self) -> &'static str;
    async fn admit(&self, request: &GateRequest<'_>) -> Result<Admission, Refusal>;
}

/// The gates of a deployment, in the order they run (empty: every request passes).
#[derive(Debug, Default, Clone)]
pub struct GateChain {
    gates: Vec<Arc<dyn Gate>>,
}

impl GateChain {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a gate: it runs after those already in the chain.
    pub fn then(mut self, gate: Arc<dyn Gate>) -> Self {
        self.gates.push(gate);
        self
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.gates.iter().map(|gate| gate.name()).collect()
    }

    /// Runs every gate in order and stops at the first refusal, which carries the headers of
    /// the gates that admitted before it; their holds are released at once.
    pub async fn admit(&self, request: &GateRequest<'_>) -> Result<Admission, Refusal> {
        let mut admitted = Admission::default();
        for gate in &self.gates {
            match gate.admit(request).await {
                Ok(admission) => admitted.absorb(admission),
                Err(mut refusal) => {
                    let mut headers = std::mem::take(&mut admitted.headers);
                    headers.append(&mut refusal.headers);
                    refusal.headers = headers;
                    return Err(refusal);
                }
            }
        }
        Ok(admitted)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use idconsent_kernel::Environment;
    use idconsent_kernel::id::{ApplicationId, MerchantId, TypedId};

    use super::*;

    /// Counts the requests it holds; admits up to `capacity` at once.
    #[derive(Debug)]
    struct Slots {
        name: &'static str,
        capacity: usize,
        held: Arc<AtomicUsize>,
    }

    #[derive(Debug)]
    struct Slot(Arc<AtomicUsize>);

    impl Drop for Slot {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    #[async_trait]
    impl Gate for Slots {
        fn name(&self) -> &'static str {
            self.name
        }
        async fn admit(&self, _: &GateRequest<'_>) -> Result<Admission, Refusal> {
            if self.held.fetch_add(1, Ordering::SeqCst) >= self.capacity {
                self.held.fetch_sub(1, Ordering::SeqCst);
                let mut refusal = Refusal::new(RefusalKind::RateLimited, "full");
                refusal.headers.push(("X-Gate", self.name.into()));
                return Err(refusal);
            }
            Ok(Admission {
                headers: vec![("X-Gate", self.name.into())],
                holds: vec![Box::new(Slot(self.held.clone()))],
            })
        }
    }

    fn caller() -> Caller {
        crate::testing::caller(
            &MerchantId::from_trusted("mer_1".into()),
            &ApplicationId::from_trusted("app_1".into()),
            Environment::Sandbox,
        )
    }

    #[tokio::test]
    async fn gates_run_in_order_and_a_refusal_releases_what_earlier_gates_hold() {
        let first = Arc::new(AtomicUsize::new(0));
        let second = Arc::new(AtomicUsize::new(0));
        let chain = GateChain::new()
            .then(Arc::new(Slots {
                name: "first",
                capacity: 2,
                held: first.clone(),
            }))
            .then(Arc::new(Slots {
                name: "second",
                capacity: 1,
                held: second.clone(),
            }));
        assert_eq!(chain.names(), ["first", "second"]);
        let caller = caller();
        let request = GateRequest {
            caller: &caller,
            method: "POST",
            route: "/v1/consents/auth",
            at: Timestamp::from_millis(0),
        };
        let admitted = chain.admit(&request).await.unwrap();
        let names: Vec<&str> = admitted.headers.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(names, ["first", "second"]);
        assert_eq!(
            (first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)),
            (1, 1)
        );

        // The second gate is full: refused with both gates' headers, and the first gate's slot
        // taken for this request is released again.
        let refusal = chain.admit(&request).await.unwrap_err();
        let names: Vec<&str> = refusal.headers.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(names, ["first", "second"]);
        assert_eq!(
            (first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)),
            (1, 1)
        );

        drop(admitted);
        assert_eq!(
            (first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)),
            (0, 0)
        );
        assert!(
            GateChain::new()
                .admit(&request)
                .await
                .unwrap()
                .headers
                .is_empty()
        );
    }
}
