//! Team members: invitations, acceptance, listing and removal (CONTRACT §2.2).

use idconsent_kernel::id::{MerchantUserId, TypedId};
use idconsent_kernel::{EmailAddress, ValidationErrors};
use idconsent_notification::{Address, NewMessage};

use crate::credentials::generate_link_token;
use crate::error::MerchantError;
use crate::model::{MerchantUser, Permission, Role, UserStatus};
use crate::onboarding::{Resend, check_password};
use crate::ports::{CodePurpose, RepositoryError, conflicts};
use crate::service::{Actor, MerchantService, SessionToken, required_text};

impl MerchantService {
    /// Invites a member (owner or admin only; never as owner) and emails the invitation link.
    pub async fn invite_member(
        &self,
        actor: &Actor,
        email: &str,
        name: &str,
        role: &str,
    ) -> Result<MerchantUser, MerchantError> {
        actor.require(Permission::ManageTeam)?;
        let mut errors = ValidationErrors::new();
        let email = errors.check("email", EmailAddress::parse(email));
        let name = required_text(&mut errors, "name", name, 200);
        let role = match Role::parse(role) {
            Some(Role::Owner) => {
                errors.push(
                    "role",
                    "must be admin, developer or viewer; owners cannot be invited",
                );
                None
            }
            Some(role) => Some(role),
            None => {
                errors.push("role", "must be admin, developer or viewer");
                None
            }
        };
        let (email, name, role) = errors.finish_with(|| Some((email?, name?, role?)))?;
        if self.ports.team.find_by_email(&email).await?.is_some() {
            return Err(MerchantError::Conflict(
                "This email already belongs to a team member".into(),
            ));
        }
        let now = self.now();
        let member = MerchantUser {
            id: self.ports.ids.next::<MerchantUserId>(),
            merchant_id: actor.user.merchant_id.clone(),
            email,
            name,
            role,
            status: UserStatus::Invited,
            password_hash: None,
            failed_logins: 0,
            locked_until: None,
            created_at: now,
            updated_at: now,
        };
        match self.ports.team.add(&member).await {
            Err(RepositoryError::Duplicate) => {
                return Err(MerchantError::Conflict(
                    "This email already belongs to a team member".into(),
                ));
            }
            other => other?,
        }
        let merchant = self.load_merchant(&member.merchant_id).await?;
        let token = generate_link_token(self.ports.random.as_ref());
        self.store_code(
            CodePurpose::Invitation,
            member.id.as_str(),
            &token,
            self.settings.invitation_ttl,
            1,
            Resend::Always,
        )
        .await?;
        let link = format!(
            "{}/accept-invite?token={token}",
            self.settings.dashboard_url
        );
        self.ports
            .notifications
            .send(NewMessage {
                to: Address::Email(member.email.clone()),
                subject: format!("You are invited to {} on idconsent", merchant.business_name),
                body: format!(
                    "Hello {},\n\n{} invited you to join {} on idconsent as {}. Accept within 7 days:\n\n{link}\n",
                    member.name,
                    actor.user.name,
                    merchant.business_name,
                    member.role
                ),
                code: None,
                link: Some(link),
            })
            .await
            .map_err(MerchantError::unavailable)?;
        Ok(member)
    }

    /// Accepts an invitation with a new password (no session needed) and signs the member in.
    pub async fn accept_invitation(
        &self,
        token: &str,
        password: &str,
    ) -> Result<SessionToken, MerchantError> {
        let mut errors = ValidationErrors::new();
        let password = check_password(&mut errors, "password", password);
        let password = errors.finish_with(|| password)?;
        let hash = self
            .ports
            .hasher
            .hex(CodePurpose::Invitation.as_str(), token.as_bytes());
        let code = self
            .ports
            .codes
            .find_by_hash(CodePurpose::Invitation, &hash)
            .await?
            .filter(|code| code.expires_at > self.now())
            .ok_or(MerchantError::InvalidLink)?;
        let member_id =
            MerchantUserId::parse(&code.subject).map_err(|_| MerchantError::InvalidLink)?;
        let password_hash = self.ports.passwords.hash(&password).await?;
        if !self
            .ports
            .codes
            .consume(CodePurpose::Invitation, &code.subject)
            .await?
        {
            return Err(MerchantError::InvalidLink);
        }
        match self
            .ports
            .team
            .activate(&member_id, &password_hash, self.now())
            .await
        {
            Err(RepositoryError::Conflict(conflicts::NOT_INVITED) | RepositoryError::NotFound) => {
                return Err(MerchantError::InvalidLink);
            }
            other => other?,
        }
        let member = self
            .ports
            .team
            .find(&member_id)
            .await?
            .ok_or(MerchantError::InvalidLink)?;
        self.issue_session(&member)
    }

    /// Everyone on the team, invited or active.
    pub async fn team(&self, actor: &Actor) -> Result<Vec<MerchantUser>, MerchantError> {
        Ok(self.ports.team.list(&actor.user.merchant_id).await?)
    }

    /// Removes a member (owner or admin). Admins cannot remove owners; the last owner stays.
    pub async fn remove_member(
        &self,
        actor: &Actor,
        member_id: &str,
    ) -> Result<MerchantUser, MerchantError> {
        actor.require(Permission::ManageTeam)?;
        let member = match MerchantUserId::parse(member_id) {
            Ok(id) => self.ports.team.find(&id).await?,
            Err(_) => None,
        }
        .filter(|m| m.merchant_id == actor.user.merchant_id && m.status != UserStatus::Removed)
        .ok_or(MerchantError::NotFound("Team member"))?;
        if member.role == Role::Owner && actor.user.role != Role::Owner {
            return Err(MerchantError::Forbidden(
                "Only an owner can remove an owner",
            ));
        }
        match self
            .ports
            .team
            .remove(&member.merchant_id, &member.id, self.now())
            .await
        {
            Err(RepositoryError::Conflict(conflicts::LAST_OWNER)) => {
                return Err(MerchantError::Conflict(
                    "The last owner cannot be removed".into(),
                ));
            }
            Err(RepositoryError::NotFound) => return Err(MerchantError::NotFound("Team member")),
            other => other?,
        }
        Ok(MerchantUser {
            status: UserStatus::Removed,
            ..member
        })
    }
}
