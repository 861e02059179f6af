//! The wallet file: everything the app would keep on the phone, as JSON.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_passkey_soft::SoftPasskey;
use serde::{Deserialize, Serialize};

/// Where the wallet talks to when nothing else is said: the dev server's default bind address.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:8080";
/// The WebAuthn origin the wallet claims; must be one of the server's `IDC_RP_ORIGINS`.
pub const DEFAULT_ORIGIN: &str = "http://localhost:8080";

/// The saved state. The passkey's private key is stored unprotected: a development wallet.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletFile {
    pub version: u32,
    pub server: String,
    pub origin: String,
    /// The `X-Device-ID` of this "installation", drawn once.
    pub installation_id: String,
    #[serde(default)]
    pub phone: Option<String>,
    #[serde(default)]
    pub enrollment_id: Option<String>,
    #[serde(default)]
    pub device_id: Option<String>,
    #[serde(default)]
    pub credential_id: Option<String>,
    /// A registered device waiting for approval by another device of the phone (or for the end
    /// of its recovery); `finish` completes the enrollment once it is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_device_id: Option<String>,
    /// Standard base64 of [`SoftPasskey::save`] (keys and signature counter).
    #[serde(default)]
    pub passkey: Option<String>,
    #[serde(default)]
    pub tokens: Option<Tokens>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: String,
    /// Unix seconds after which the access token is no longer used.
    pub expires_at: u64,
}

/// The wallet file and where it lives.
#[derive(Debug)]
pub struct Wallet {
    pub path: PathBuf,
    pub file: WalletFile,
}

impl Wallet {
    /// A new wallet with a fresh installation id (not yet written).
    pub fn create(path: &Path, server: String, origin: String) -> anyhow::Result<Self> {
        let mut random = [0u8; 16];
        getrandom::fill(&mut random).context("the operating system has no random source")?;
        Ok(Self {
            path: path.to_owned(),
            file: WalletFile {
                version: 1,
                server,
                origin,
                installation_id: format!("wallet-{}", hex::encode(random)),
                phone: None,
                enrollment_id: None,
                device_id: None,
                credential_id: None,
                pending_device_id: None,
                passkey: None,
                tokens: None,
            },
        })
    }

    /// The wallet at `path`, or `None` when there is no file.
    pub fn open(path: &Path) -> anyhow::Result<Option<Self>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return Err(error).with_context(|| format!("cannot read {}", path.display()));
            }
        };
        let file: WalletFile = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a wallet file", path.display()))?;
        if file.version != 1 {
            bail!(
                "{} is a wallet file of version {}, this wallet reads version 1",
                path.display(),
                file.version
            );
        }
        Ok(Some(Self {
            path: path.to_owned(),
            file,
        }))
    }

    /// The wallet at `path`, which must hold an enrolled device.
    pub fn open_enrolled(path: &Path) -> anyhow::Result<Self> {
        let wallet = Self::open(path)?.with_context(|| {
            format!(
                "no wallet at {}; run `idconsent-wallet enroll --phone <E.164>` first (or pass --wallet)",
                path.display()
            )
        })?;
        if wallet.file.device_id.is_none() || wallet.file.phone.is_none() {
            bail!(
                "the wallet at {} has no enrolled device; run `idconsent-wallet enroll --phone <E.164>` first",
                path.display()
            );
        }
        Ok(wallet)
    }

    pub fn phone(&self) -> anyhow::Result<&str> {
        self.file
            .phone
            .as_deref()
            .context("the wallet has no phone number")
    }

    /// The passkey, created on first use.
    pub fn passkey(&self) -> anyhow::Result<SoftPasskey> {
        match &self.file.passkey {
            Some(encoded) => {
                let bytes = BASE64
                    .decode(encoded)
                    .context("the wallet's passkey is not base64")?;
                SoftPasskey::load(&bytes).context("the wallet's passkey cannot be loaded")
            }
            None => SoftPasskey::new().context("cannot create a software passkey"),
        }
    }

    /// Stores the passkey (its counter moves with every signature) and writes the file.
    pub fn keep_passkey(&mut self, passkey: &SoftPasskey) -> anyhow::Result<()> {
        let bytes = passkey.save().context("cannot serialise the passkey")?;
        self.file.passkey = Some(BASE64.encode(bytes));
        self.save()
    }

    /// Writes the file atomically (temporary file, then rename), readable by its owner only:
    /// it holds a private key and tokens.
    pub fn save(&self) -> anyhow::Result<()> {
        let text =
            serde_json::to_string_pretty(&self.file).context("cannot serialise the wallet")?;
        let directory = match self.path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
            _ => PathBuf::from("."),
        };
        let name = self
            .path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| "wallet.json".into());
        let temporary = directory.join(format!(".{name}.{}.tmp", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let written = options
            .open(&temporary)
            .and_then(|mut file| {
                file.write_all(text.as_bytes())?;
                file.write_all(b"\n")?;
                file.sync_all()
            })
            .and_then(|()| std::fs::rename(&temporary, &self.path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written.with_context(|| format!("cannot write {}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_wallet_round_trips_through_its_file() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("w.json");
        assert!(Wallet::open(&path).unwrap().is_none());
        let mut wallet =
            Wallet::create(&path, DEFAULT_SERVER.into(), DEFAULT_ORIGIN.into()).unwrap();
        let passkey = wallet.passkey().unwrap();
        wallet.file.phone = Some("+15551234567".into());
        wallet.keep_passkey(&passkey).unwrap();

        let opened = Wallet::open(&path).unwrap().unwrap();
        assert_eq!(opened.file.installation_id, wallet.file.installation_id);
        assert!(opened.file.installation_id.starts_with("wallet-"));
        assert_eq!(opened.phone().unwrap(), "+15551234567");
        assert_eq!(
            opened.passkey().unwrap().save().unwrap(),
            passkey.save().unwrap()
        );
        // Not enrolled: no device yet.
        assert!(Wallet::open_enrolled(&path).is_err());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_foreign_file_is_refused() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("w.json");
        std::fs::write(&path, "{}").unwrap();
        assert!(Wallet::open(&path).is_err());
    }
}
