//! End users' passkeys: the WebAuthn relying party, and how a new device joins an enrolled
//! phone whose user has no device left (the recovery's cooling-off period, ADR 0013).

use std::time::Duration;

#[derive(Debug, Clone, clap::Args)]
pub struct PasskeyArgs {
    /// WebAuthn relying-party ID: the domain passkeys are bound to.
    #[arg(long, env = "IDC_RP_ID", default_value = "localhost", global = true)]
    pub rp_id: String,

    /// Comma-separated origins the app's WebAuthn calls may come from.
    #[arg(
        long,
        env = "IDC_RP_ORIGINS",
        default_value = "http://localhost:8080",
        global = true
    )]
    pub rp_origins: String,

    /// Hours a recovery waits before a new device of an enrolled phone becomes active without
    /// an approval from one of its devices (they can reject it meanwhile).
    #[arg(
        long,
        env = "IDC_RECOVERY_COOLING_OFF_HOURS",
        default_value_t = 72,
        global = true
    )]
    pub recovery_cooling_off_hours: u64,
}

#[derive(Debug, Clone)]
pub struct PasskeyConfig {
    pub rp_id: String,
    /// Comma-separated, as configured.
    pub rp_origins: String,
    pub recovery_cooling_off: Duration,
}

impl PasskeyArgs {
    pub fn resolve(self) -> PasskeyConfig {
        PasskeyConfig {
            rp_id: self.rp_id,
            rp_origins: self.rp_origins,
            recovery_cooling_off: Duration::from_secs(
                self.recovery_cooling_off_hours.clamp(1, 24 * 30) * 3600,
            ),
        }
    }
}
