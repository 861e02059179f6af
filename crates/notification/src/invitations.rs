//! Invitations: the emails a mandate or a signature request sends its recipients (a link to the
//! hosted page), on the merchant's word alone. With a live key they go to the merchant's
//! customers, and the merchant is reviewed and billed; a sandbox key is free and open to anyone
//! who registers, so a sandbox invitation may reach only who the merchant could reach anyway:
//! the dev mailbox in dev mode, the team's own verified addresses in production. Every sandbox
//! invitation also counts against the application's send allowance (CONTRACT §9).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use idconsent_kernel::id::ApplicationId;
use idconsent_kernel::{EmailAddress, Environment, ValidationErrors};

use crate::limits::{SendLimitError, SendLimits, Sender};

/// What the 422 says of an address a sandbox invitation may not go to.
pub const SANDBOX_TEAM_ONLY: &str = "is not a verified address of your team: in sandbox, \
    invitations are sent only to your team (a live key sends to anyone)";

/// Who sandbox invitations may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxRecipients {
    /// Dev mode: every message lands in the dev mailbox, whatever its address.
    DevMailbox,
    /// Production mode: only the verified addresses of the team that owns the application.
    Team,
}

#[derive(Debug, thiserror::Error)]
#[error("the team directory failed")]
pub struct TeamDirectoryError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// The merchant team behind an application.
///
/// Contract: `verified_addresses` lists the addresses of the members of the team that owns
/// `application` who proved them (an accepted invitation; the owner's verified email) — empty
/// for an unknown application.
#[async_trait]
pub trait TeamDirectory: Send + Sync + fmt::Debug {
    async fn verified_addresses(
        &self,
        application: &ApplicationId,
    ) -> Result<Vec<EmailAddress>, TeamDirectoryError>;
}

/// An address a create call would invite, and the request field that named it.
#[derive(Debug, Clone, Copy)]
pub struct Invitee<'a> {
    pub field: &'a str,
    pub email: &'a EmailAddress,
}

#[derive(Debug, thiserror::Error)]
pub enum InvitationError {
    /// Addresses a sandbox invitation may not go to, one detail per field.
    #[error("{0}")]
    Refused(ValidationErrors),
    /// Over the application's send allowance.
    #[error("{message}")]
    Limited {
        message: &'static str,
        retry_after_secs: u64,
    },
    #[error("invitations are unavailable")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl From<SendLimitError> for InvitationError {
    fn from(error: SendLimitError) -> Self {
        match error {
            SendLimitError::Limited {
                message,
                retry_after_secs,
            } => InvitationError::Limited {
                message,
                retry_after_secs,
            },
            SendLimitError::Unavailable(source) => InvitationError::Unavailable(Box::new(source)),
        }
    }
}

/// Admits the invitations of one create call before anything is stored or sent.
#[derive(Debug, Clone)]
pub struct Invitations {
    limits: Arc<SendLimits>,
    team: Arc<dyn TeamDirectory>,
    sandbox: SandboxRecipients,
}

impl Invitations {
    pub fn new(
        limits: Arc<SendLimits>,
        team: Arc<dyn TeamDirectory>,
        sandbox: SandboxRecipients,
    ) -> Self {
        Self {
            limits,
            team,
            sandbox,
        }
    }

    /// In live, nothing to check. In sandbox: with [`SandboxRecipients::Team`] every address
    /// must be a verified team address (in any case), else `Refused` naming each field that is
    /// not; then each invitation counts one send for the application (`Limited` when over,
    /// counting only ever more: a refused burst is not given back).
    pub async fn admit(
        &self,
        application: &ApplicationId,
        environment: Environment,
        invitees: &[Invitee<'_>],
    ) -> Result<(), InvitationError> {
        if environment == Environment::Live || invitees.is_empty() {
            return Ok(());
        }
        if self.sandbox == SandboxRecipients::Team {
            let team = self
                .team
                .verified_addresses(application)
                .await
                .map_err(|error| InvitationError::Unavailable(Box::new(error)))?;
            let mut errors = ValidationErrors::new();
            for invitee in invitees {
                let known = team
                    .iter()
                    .any(|member| member.as_str().eq_ignore_ascii_case(invitee.email.as_str()));
                if !known {
                    errors.push(invitee.field, SANDBOX_TEAM_ONLY);
                }
            }
            errors.finish().map_err(InvitationError::Refused)?;
        }
        let sender = [Sender::Application(application.to_string())];
        for _ in invitees {
            self.limits.admit(&sender).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use idconsent_kernel::id::TypedId;
    use idconsent_kernel::{ManualClock, Timestamp};

    use super::*;
    use crate::limits::SendLimitSettings;
    use crate::testing::InMemoryThrottle;

    #[derive(Debug)]
    struct Team(Vec<&'static str>);

    #[async_trait]
    impl TeamDirectory for Team {
        async fn verified_addresses(
            &self,
            _: &ApplicationId,
        ) -> Result<Vec<EmailAddress>, TeamDirectoryError> {
            Ok(self
                .0
                .iter()
                .map(|email| EmailAddress::parse(email).unwrap())
                .collect())
        }
    }

    fn invitations(sandbox: SandboxRecipients, per_client: u64) -> Invitations {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_763_719_200_000)));
        let limits = SendLimits::new(
            Arc::new(InMemoryThrottle::default()),
            clock,
            SendLimitSettings {
                per_client,
                global: 1_000,
            },
        );
        Invitations::new(
            Arc::new(limits),
            Arc::new(Team(vec!["owner@shop.example"])),
            sandbox,
        )
    }

    fn email(text: &str) -> EmailAddress {
        EmailAddress::parse(text).unwrap()
    }

    fn app() -> ApplicationId {
        ApplicationId::from_trusted("app_1".into())
    }

    #[tokio::test]
    async fn in_production_sandbox_invites_only_the_team_and_names_each_other_field() {
        let invitations = invitations(SandboxRecipients::Team, 100);
        let (owner, stranger) = (email("Owner@Shop.example"), email("eve@example.com"));
        let refused = invitations
            .admit(
                &app(),
                Environment::Sandbox,
                &[
                    Invitee {
                        field: "signers[0].email",
                        email: &owner,
                    },
                    Invitee {
                        field: "signers[1].email",
                        email: &stranger,
                    },
                ],
            )
            .await;
        let Err(InvitationError::Refused(errors)) = refused else {
            panic!("{refused:?}")
        };
        let fields: Vec<&str> = errors.fields().iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["signers[1].email"]);
        let alone = [Invitee {
            field: "recipient",
            email: &owner,
        }];
        invitations
            .admit(&app(), Environment::Sandbox, &alone)
            .await
            .unwrap();
        // Live invites anyone.
        let anyone = [Invitee {
            field: "recipient",
            email: &stranger,
        }];
        invitations
            .admit(&app(), Environment::Live, &anyone)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn every_sandbox_invitation_counts_against_the_allowance() {
        let invitations = invitations(SandboxRecipients::DevMailbox, 3);
        let (a, b) = (email("a@example.com"), email("b@example.com"));
        let two = [
            Invitee {
                field: "signers[0].email",
                email: &a,
            },
            Invitee {
                field: "signers[1].email",
                email: &b,
            },
        ];
        invitations
            .admit(&app(), Environment::Sandbox, &two)
            .await
            .unwrap();
        let refused = invitations.admit(&app(), Environment::Sandbox, &two).await;
        assert!(
            matches!(refused, Err(InvitationError::Limited { .. })),
            "{refused:?}"
        );
        // Live is billed instead: not counted here.
        invitations
            .admit(&app(), Environment::Live, &two)
            .await
            .unwrap();
    }
}
