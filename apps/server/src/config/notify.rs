//! Notification transports: SMTP email and the HTTP SMS gateway (production only).

use idconsent_notification::SendLimitSettings;
use secrecy::SecretString;

use super::secret;

#[derive(Debug, Clone, clap::Args)]
pub struct NotifyArgs {
    /// SMTP server for email, e.g. `smtps://user:pass@smtp.example.com:465`.
    #[arg(long, env = "IDC_SMTP_URL", value_parser = secret, hide_env_values = true, global = true)]
    pub smtp_url: Option<SecretString>,

    /// Sender of every email.
    #[arg(
        long,
        env = "IDC_SMTP_FROM",
        default_value = "idconsent <no-reply@idconsent.localhost>",
        global = true
    )]
    pub smtp_from: String,

    /// HTTP SMS gateway endpoint (receives `POST {"to", "body"}`).
    #[arg(long, env = "IDC_SMS_GATEWAY_URL", global = true)]
    pub sms_gateway_url: Option<String>,

    /// One header sent to the SMS gateway, e.g. `Authorization: Bearer abc`.
    #[arg(long, env = "IDC_SMS_GATEWAY_AUTH_HEADER", value_parser = secret, hide_env_values = true, global = true)]
    pub sms_gateway_auth_header: Option<SecretString>,

    /// Calls that send an SMS or email code (enrollment, merchant registration, resends) each
    /// client — IP address, application — may make per hour.
    #[arg(
        long,
        env = "IDC_SMS_LIMIT_PER_CLIENT",
        default_value_t = 30,
        global = true
    )]
    pub sms_limit_per_client: u64,

    /// Such calls per minute from everyone together.
    #[arg(
        long,
        env = "IDC_SMS_LIMIT_GLOBAL",
        default_value_t = 600,
        global = true
    )]
    pub sms_limit_global: u64,
}

/// SMTP settings for the email transport.
#[derive(Debug, Clone)]
pub struct SmtpSettings {
    pub url: SecretString,
    pub from: String,
}

/// SMS gateway settings.
#[derive(Debug, Clone)]
pub struct SmsSettings {
    pub url: String,
    pub auth_header: Option<SecretString>,
}

#[derive(Debug, Clone, Default)]
pub struct NotifyConfig {
    pub smtp: Option<SmtpSettings>,
    pub sms: Option<SmsSettings>,
    pub send_limits: SendLimitSettings,
}

impl NotifyArgs {
    pub fn resolve(self) -> NotifyConfig {
        NotifyConfig {
            smtp: self.smtp_url.map(|url| SmtpSettings {
                url,
                from: self.smtp_from,
            }),
            sms: self.sms_gateway_url.map(|url| SmsSettings {
                url,
                auth_header: self.sms_gateway_auth_header,
            }),
            send_limits: SendLimitSettings {
                per_client: self.sms_limit_per_client,
                global: self.sms_limit_global,
            },
        }
    }
}
