//! The ES256 key ring that signs OAuth access tokens ([`crate::Es256TokenSigner`]) and
//! publishes their JWKS.
//!
//! # Key directory
//!
//! ```text
//! <dir>/keys.json     {"version":1,"keys":[{"kid":"…","createdAt":"2026-11-21T10:00:00.000Z","retiredAt":null}, …]}
//! <dir>/<kid>.pem     the key's PKCS#8 private key (P-256), PEM
//! ```
//!
//! Files are written with mode 0600 (the directory, when created here, 0700); `keys.json` is
//! replaced atomically. The `kid` of a generated key is its RFC 7638 JWK thumbprint; a key placed
//! there by hand may use any `kid` of ASCII letters, digits, `-` and `_`.
//!
//! Exactly one key signs: the newest one not retired. [`Es256KeyRing::rotate`] adds a new key
//! and retires the previous one; a retired key stays published (in the JWKS and accepted by
//! `verify`) until `retired_at + token_lifetime`, when every token it signed has expired, and
//! is deleted from the directory by the next [`Es256KeyRing::prune`] (which `rotate` and
//! `open_or_create` run) after that.

mod directory;

use directory::{create_private_dir, load_keys, write_index, write_private_file};

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_kernel::Timestamp;
use josekit::JoseError;
use josekit::jwk::KeyPair;
use josekit::jwk::alg::ec::EcKeyPair;
use josekit::jws::ES256;
use josekit::jws::alg::ecdsa::EcdsaJwsVerifier;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How long an access token lives unless the ring is told otherwise.
pub const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(60 * 60);

/// The JOSE `typ` of an access token (RFC 9068 §2.1).
pub(crate) const TOKEN_TYPE: &str = "at+jwt";
pub(crate) const ES256_SIGNATURE_LEN: usize = 64;

/// A key ring problem: the directory could not be read or written, or holds something invalid.
#[derive(Debug, thiserror::Error)]
pub enum KeyRingError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: {message}", path.display())]
    Index { path: PathBuf, message: String },
    #[error("ES256 key {kid}: {message}")]
    Key { kid: String, message: String },
    #[error("no active ES256 signing key in {}", .0.display())]
    NoActiveKey(PathBuf),
}

/// What the ring knows about one key, without the key itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyRingEntry {
    pub kid: String,
    pub created_at: Timestamp,
    pub retired_at: Option<Timestamp>,
    /// When the key starts signing (`None`: at once). A rotation shared by several processes
    /// publishes the new key first and signs with it only once every process has reloaded the
    /// ring, so no process meets a token signed by a key it does not know yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activates_at: Option<Timestamp>,
}

/// A key kept outside the ring's directory (in the database): what the ring knows about it and
/// its private key as PKCS#8 PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredKey {
    pub info: KeyRingEntry,
    pub pem: Vec<u8>,
}

impl fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredKey")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// A key parsed once: the signer, the verifier, the encoded protected header and the public JWK.
///
/// josekit reads, writes and verifies the keys; the signature itself is ring's, which signs
/// P-256 in about 17 µs here against OpenSSL's 24 µs through josekit (docs/performance.md):
/// the token exchange signs once per request.
pub(crate) struct KeyMaterial {
    pub(crate) signer: EcdsaKeyPair,
    pub(crate) random: SystemRandom,
    pub(crate) verifier: EcdsaJwsVerifier,
    /// base64url of `{"alg":"ES256","typ":"at+jwt","kid":…}`, the first part of every token.
    pub(crate) encoded_header: String,
    public_jwk: Value,
}

impl fmt::Debug for KeyMaterial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyMaterial").finish_non_exhaustive()
    }
}

#[derive(Debug, Clone)]
pub(crate) struct RingKey {
    info: KeyRingEntry,
    pub(crate) material: Arc<KeyMaterial>,
}

#[derive(Serialize)]
struct ProtectedHeader<'a> {
    alg: &'static str,
    typ: &'static str,
    kid: &'a str,
}

impl KeyMaterial {
    fn new(kid: &str, key_pair: &EcKeyPair) -> Result<Self, KeyRingError> {
        let key_error = |error: JoseError| KeyRingError::Key {
            kid: kid.to_owned(),
            message: error.to_string(),
        };
        let random = SystemRandom::new();
        let signer = ring_signing_key(key_pair, &random).ok_or_else(|| KeyRingError::Key {
            kid: kid.to_owned(),
            message: "not a P-256 private key".into(),
        })?;
        let mut verifier = ES256
            .verifier_from_der(key_pair.to_der_public_key())
            .map_err(key_error)?;
        verifier.set_key_id(kid);
        let header = serde_json::to_vec(&ProtectedHeader {
            alg: "ES256",
            typ: TOKEN_TYPE,
            kid,
        })
        .map_err(|error| KeyRingError::Key {
            kid: kid.to_owned(),
            message: error.to_string(),
        })?;
        let (x, y) = public_coordinates(key_pair).ok_or_else(|| KeyRingError::Key {
            kid: kid.to_owned(),
            message: "no public coordinates".into(),
        })?;
        Ok(Self {
            signer,
            random,
            verifier,
            encoded_header: URL_SAFE_NO_PAD.encode(header),
            public_jwk: json!({
                "kty": "EC",
                "crv": "P-256",
                "x": x,
                "y": y,
                "kid": kid,
                "use": "sig",
                "alg": "ES256",
            }),
        })
    }
}

/// The key pair as ring takes it: the private scalar and the uncompressed public point.
fn ring_signing_key(key_pair: &EcKeyPair, random: &SystemRandom) -> Option<EcdsaKeyPair> {
    let jwk = key_pair.to_jwk_key_pair();
    let decoded = |name: &str| URL_SAFE_NO_PAD.decode(jwk.parameter(name)?.as_str()?).ok();
    let private_scalar = decoded("d")?;
    let mut public_point = vec![0x04];
    public_point.extend(decoded("x")?);
    public_point.extend(decoded("y")?);
    EcdsaKeyPair::from_private_key_and_public_key(
        &ECDSA_P256_SHA256_FIXED_SIGNING,
        &private_scalar,
        &public_point,
        random,
    )
    .ok()
}

/// The base64url `x` and `y` of a key's public point.
fn public_coordinates(key_pair: &EcKeyPair) -> Option<(String, String)> {
    let jwk = key_pair.to_jwk_public_key();
    let coordinate = |name: &str| jwk.parameter(name)?.as_str().map(str::to_owned);
    Some((coordinate("x")?, coordinate("y")?))
}

/// The RFC 7638 thumbprint of a P-256 public key: a stable, file-name-safe `kid`.
fn thumbprint(x: &str, y: &str) -> String {
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

fn valid_kid(kid: &str) -> bool {
    !kid.is_empty()
        && kid.len() <= 128
        && kid
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// The ES256 (P-256) keys that sign and verify access tokens, kept in a directory.
///
/// Cheap to clone: the parsed keys are shared.
#[derive(Debug, Clone)]
pub struct Es256KeyRing {
    dir: PathBuf,
    pub(crate) token_lifetime: Duration,
    /// In creation order; the index file keeps the same order.
    keys: Vec<RingKey>,
    /// Index into `keys` of the signing key.
    active: usize,
}

impl Es256KeyRing {
    /// Production: loads the keys in `dir` and fails if there is no active one. Never writes, so
    /// the directory may be a read-only mount.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, KeyRingError> {
        Self::open_with_lifetime(dir, DEFAULT_TOKEN_LIFETIME)
    }

    /// Development: loads the keys in `dir`, creating the directory and a first key when there
    /// is no active key, and prunes expired retired keys.
    pub fn open_or_create(dir: impl Into<PathBuf>, now: Timestamp) -> Result<Self, KeyRingError> {
        Self::open_or_create_with_lifetime(dir, DEFAULT_TOKEN_LIFETIME, now)
    }

    /// [`Self::open`] for tokens that live `token_lifetime` (at most).
    pub fn open_with_lifetime(
        dir: impl Into<PathBuf>,
        token_lifetime: Duration,
    ) -> Result<Self, KeyRingError> {
        let dir = dir.into();
        let keys = load_keys(&dir)?;
        let active = active_index(&keys).ok_or_else(|| KeyRingError::NoActiveKey(dir.clone()))?;
        Ok(Self {
            dir,
            token_lifetime,
            keys,
            active,
        })
    }

    /// [`Self::open_or_create`] for tokens that live `token_lifetime` (at most).
    pub fn open_or_create_with_lifetime(
        dir: impl Into<PathBuf>,
        token_lifetime: Duration,
        now: Timestamp,
    ) -> Result<Self, KeyRingError> {
        let dir = dir.into();
        create_private_dir(&dir)?;
        let keys = load_keys(&dir)?;
        let mut ring = Self {
            active: active_index(&keys).unwrap_or(0),
            dir,
            token_lifetime,
            keys,
        };
        if active_index(&ring.keys).is_none() {
            ring.rotate(now)?;
        } else {
            ring.prune(now)?;
        }
        Ok(ring)
    }

    /// A ring of keys kept elsewhere, as they stand at `now`: the signing key is the newest one
    /// active at `now` (activated, not retired); keys activating later are published (they
    /// verify) but do not sign yet. The ring never writes; the owner of the keys rotates and
    /// prunes them and builds a new ring.
    pub fn from_stored(
        stored: Vec<StoredKey>,
        token_lifetime: Duration,
        now: Timestamp,
    ) -> Result<Self, KeyRingError> {
        let dir = PathBuf::from("(database)");
        let mut keys: Vec<RingKey> = Vec::with_capacity(stored.len());
        for StoredKey { info, pem } in stored {
            if !valid_kid(&info.kid) || keys.iter().any(|key| key.info.kid == info.kid) {
                return Err(KeyRingError::Key {
                    kid: info.kid,
                    message: "invalid or duplicate kid".into(),
                });
            }
            let key_pair = ES256
                .key_pair_from_pem(&pem)
                .map_err(|error| KeyRingError::Key {
                    kid: info.kid.clone(),
                    message: error.to_string(),
                })?;
            let material = Arc::new(KeyMaterial::new(&info.kid, &key_pair)?);
            keys.push(RingKey { info, material });
        }
        let active =
            active_index_at(&keys, now).ok_or_else(|| KeyRingError::NoActiveKey(dir.clone()))?;
        Ok(Self {
            dir,
            token_lifetime,
            keys,
            active,
        })
    }

    /// A fresh P-256 key: its `kid` (RFC 7638 thumbprint) and its PKCS#8 PEM.
    pub fn generate_key() -> Result<(String, Vec<u8>), KeyRingError> {
        let key_pair = ES256
            .generate_key_pair()
            .map_err(|error| KeyRingError::Key {
                kid: "(new)".into(),
                message: error.to_string(),
            })?;
        let (x, y) = public_coordinates(&key_pair).ok_or_else(|| KeyRingError::Key {
            kid: "(new)".into(),
            message: "no public coordinates".into(),
        })?;
        Ok((thumbprint(&x, &y), key_pair.to_pem_private_key()))
    }

    /// The keys of a ring directory with their PEMs, to move them elsewhere (import).
    pub fn export(dir: &Path) -> Result<Vec<StoredKey>, KeyRingError> {
        let mut stored = Vec::new();
        for key in load_keys(dir)? {
            let pem_path = dir.join(format!("{}.pem", key.info.kid));
            let pem = fs::read(&pem_path).map_err(|source| KeyRingError::Io {
                path: pem_path,
                source,
            })?;
            stored.push(StoredKey {
                info: key.info,
                pem,
            });
        }
        Ok(stored)
    }

    /// Adds a new signing key and retires the current one at `now`; returns the new `kid`.
    /// Expired retired keys are pruned in the same step.
    pub fn rotate(&mut self, now: Timestamp) -> Result<String, KeyRingError> {
        let key_pair = ES256
            .generate_key_pair()
            .map_err(|error| KeyRingError::Key {
                kid: "(new)".into(),
                message: error.to_string(),
            })?;
        let (x, y) = public_coordinates(&key_pair).ok_or_else(|| KeyRingError::Key {
            kid: "(new)".into(),
            message: "no public coordinates".into(),
        })?;
        let kid = thumbprint(&x, &y);
        let material = Arc::new(KeyMaterial::new(&kid, &key_pair)?);
        let pem_path = self.dir.join(format!("{kid}.pem"));
        write_private_file(&pem_path, &key_pair.to_pem_private_key())?;

        let mut keys = self.keys.clone();
        for key in &mut keys {
            key.info.retired_at.get_or_insert(now);
        }
        keys.push(RingKey {
            info: KeyRingEntry {
                kid: kid.clone(),
                created_at: now,
                retired_at: None,
                activates_at: None,
            },
            material,
        });
        self.commit(keys, now)?;
        Ok(kid)
    }

    /// Deletes the retired keys whose tokens have all expired (`retired_at + token_lifetime <=
    /// now`) from the index and the directory.
    pub fn prune(&mut self, now: Timestamp) -> Result<(), KeyRingError> {
        if self.keys.iter().all(|key| self.is_published(key, now)) {
            return Ok(());
        }
        self.commit(self.keys.clone(), now)
    }

    /// Drops expired retired keys from `keys`, writes the index, deletes the dropped keys' files
    /// and makes `keys` the ring's.
    fn commit(&mut self, keys: Vec<RingKey>, now: Timestamp) -> Result<(), KeyRingError> {
        let (kept, dropped): (Vec<RingKey>, Vec<RingKey>) = keys
            .into_iter()
            .partition(|key| self.is_published(key, now));
        let active =
            active_index(&kept).ok_or_else(|| KeyRingError::NoActiveKey(self.dir.clone()))?;
        write_index(&self.dir, &kept)?;
        for key in &dropped {
            let path = self.dir.join(format!("{}.pem", key.info.kid));
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(source) => return Err(KeyRingError::Io { path, source }),
            }
        }
        self.keys = kept;
        self.active = active;
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn token_lifetime(&self) -> Duration {
        self.token_lifetime
    }

    /// The `kid` of the signing key.
    pub fn active_kid(&self) -> &str {
        &self.active_key().info.kid
    }

    /// Every key the ring holds, in creation order (including retired keys not yet pruned).
    pub fn keys(&self) -> impl Iterator<Item = &KeyRingEntry> {
        self.keys.iter().map(|key| &key.info)
    }

    /// The RFC 7517 key set of the keys published at `now`.
    pub fn jwks(&self, now: Timestamp) -> Value {
        let keys: Vec<Value> = self
            .keys
            .iter()
            .filter(|key| self.is_published(key, now))
            .map(|key| key.material.public_jwk.clone())
            .collect();
        json!({ "keys": keys })
    }

    pub(crate) fn active_key(&self) -> &RingKey {
        // Every constructor and `commit` set `active` from `active_index` of the ring's keys.
        &self.keys[self.active]
    }

    /// Whether tokens signed by `key` may still be unexpired at `now`.
    fn is_published(&self, key: &RingKey, now: Timestamp) -> bool {
        key.info
            .retired_at
            .is_none_or(|retired| now < retired.plus(self.token_lifetime))
    }

    pub(crate) fn published_key(&self, kid: &str, now: Timestamp) -> Option<&RingKey> {
        self.keys
            .iter()
            .find(|key| key.info.kid == kid && self.is_published(key, now))
    }
}

/// The newest key signing at `now`: activated and not yet retired (the later one on a tie).
fn active_index_at(keys: &[RingKey], now: Timestamp) -> Option<usize> {
    keys.iter()
        .enumerate()
        .filter(|(_, key)| {
            key.info.activates_at.is_none_or(|at| at <= now)
                && key.info.retired_at.is_none_or(|at| at > now)
        })
        .max_by_key(|(index, key)| (key.info.activates_at.unwrap_or(key.info.created_at), *index))
        .map(|(index, _)| index)
}

/// The newest key not retired (the later one on a tie).
fn active_index(keys: &[RingKey]) -> Option<usize> {
    keys.iter()
        .enumerate()
        .filter(|(_, key)| key.info.retired_at.is_none())
        .max_by_key(|(index, key)| (key.info.created_at, *index))
        .map(|(index, _)| index)
}

/// New ES256 keys for the shared key store (`idconsent_oauth::SigningKeys`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Es256KeyGenerator;

impl idconsent_oauth::KeyGenerator for Es256KeyGenerator {
    fn generate(&self) -> Result<(String, Vec<u8>), idconsent_oauth::SigningKeyError> {
        Es256KeyRing::generate_key()
            .map_err(|error| idconsent_oauth::SigningKeyError::Unavailable(Box::new(error)))
    }
}

impl Es256KeyRing {
    /// A ring of the shared store's keys, as they stand at `now`.
    pub fn from_signing_keys(
        keys: Vec<idconsent_oauth::SigningKey>,
        token_lifetime: Duration,
        now: Timestamp,
    ) -> Result<Self, KeyRingError> {
        let stored = keys
            .into_iter()
            .map(|key| StoredKey {
                info: KeyRingEntry {
                    kid: key.kid,
                    created_at: key.created_at,
                    retired_at: key.retired_at,
                    activates_at: Some(key.activates_at),
                },
                pem: key.pem,
            })
            .collect();
        Self::from_stored(stored, token_lifetime, now)
    }

    /// The keys of a ring directory, for an import into the shared store.
    pub fn export_signing_keys(
        dir: &Path,
    ) -> Result<Vec<idconsent_oauth::SigningKey>, KeyRingError> {
        Ok(Self::export(dir)?
            .into_iter()
            .map(|key| idconsent_oauth::SigningKey {
                activates_at: key.info.activates_at.unwrap_or(key.info.created_at),
                kid: key.info.kid,
                pem: key.pem,
                created_at: key.info.created_at,
                retired_at: key.info.retired_at,
            })
            .collect())
    }
}
