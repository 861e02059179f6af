//! OAuth access tokens (CONTRACT §5): ES256 JWTs of type `at+jwt` (RFC 9068), signed with the
//! active key of an [`Es256KeyRing`] and verifiable by anyone against its JWKS.
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

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_kernel::{Clock, Timestamp};
use idconsent_oauth::ports::{AccessTokenClaims, TokenError, TokenSigner};
use josekit::JoseError;
use josekit::jwk::KeyPair;
use josekit::jwk::alg::ec::EcKeyPair;
use josekit::jws::alg::ecdsa::EcdsaJwsVerifier;
use josekit::jws::{ES256, JwsHeader, JwsVerifier};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How long an access token lives unless the ring is told otherwise.
pub const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(60 * 60);

/// The JOSE `typ` of an access token (RFC 9068 §2.1).
const TOKEN_TYPE: &str = "at+jwt";
const INDEX_FILE: &str = "keys.json";
const INDEX_VERSION: u32 = 1;
const ES256_SIGNATURE_LEN: usize = 64;

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

#[derive(Serialize, Deserialize)]
struct IndexFile {
    version: u32,
    keys: Vec<KeyRingEntry>,
}

/// A key parsed once: the signer, the verifier, the encoded protected header and the public JWK.
///
/// josekit reads, writes and verifies the keys; the signature itself is ring's, which signs
/// P-256 in about 17 µs here against OpenSSL's 24 µs through josekit (docs/performance.md):
/// the token exchange signs once per request.
struct KeyMaterial {
    signer: EcdsaKeyPair,
    random: SystemRandom,
    verifier: EcdsaJwsVerifier,
    /// base64url of `{"alg":"ES256","typ":"at+jwt","kid":…}`, the first part of every token.
    encoded_header: String,
    public_jwk: Value,
}

impl fmt::Debug for KeyMaterial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyMaterial").finish_non_exhaustive()
    }
}

#[derive(Debug, Clone)]
struct RingKey {
    info: KeyRingEntry,
    material: Arc<KeyMaterial>,
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
    token_lifetime: Duration,
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

    fn active_key(&self) -> &RingKey {
        // Every constructor and `commit` set `active` from `active_index` of the ring's keys.
        &self.keys[self.active]
    }

    /// Whether tokens signed by `key` may still be unexpired at `now`.
    fn is_published(&self, key: &RingKey, now: Timestamp) -> bool {
        key.info
            .retired_at
            .is_none_or(|retired| now < retired.plus(self.token_lifetime))
    }

    fn published_key(&self, kid: &str, now: Timestamp) -> Option<&RingKey> {
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

fn load_keys(dir: &Path) -> Result<Vec<RingKey>, KeyRingError> {
    let index_path = dir.join(INDEX_FILE);
    let text = match fs::read(&index_path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(KeyRingError::Io {
                path: index_path,
                source,
            });
        }
    };
    let index_error = |message: String| KeyRingError::Index {
        path: index_path.clone(),
        message,
    };
    let index: IndexFile =
        serde_json::from_slice(&text).map_err(|error| index_error(error.to_string()))?;
    if index.version != INDEX_VERSION {
        return Err(index_error(format!(
            "unsupported version {}",
            index.version
        )));
    }
    let mut keys: Vec<RingKey> = Vec::with_capacity(index.keys.len());
    for info in index.keys {
        if !valid_kid(&info.kid) {
            return Err(index_error(format!("invalid kid {:?}", info.kid)));
        }
        if keys.iter().any(|key| key.info.kid == info.kid) {
            return Err(index_error(format!("duplicate kid {}", info.kid)));
        }
        let pem_path = dir.join(format!("{}.pem", info.kid));
        let pem = fs::read(&pem_path).map_err(|source| KeyRingError::Io {
            path: pem_path,
            source,
        })?;
        let key_pair = ES256
            .key_pair_from_pem(&pem)
            .map_err(|error| KeyRingError::Key {
                kid: info.kid.clone(),
                message: error.to_string(),
            })?;
        let material = Arc::new(KeyMaterial::new(&info.kid, &key_pair)?);
        keys.push(RingKey { info, material });
    }
    Ok(keys)
}

fn write_index(dir: &Path, keys: &[RingKey]) -> Result<(), KeyRingError> {
    let index = IndexFile {
        version: INDEX_VERSION,
        keys: keys.iter().map(|key| key.info.clone()).collect(),
    };
    let path = dir.join(INDEX_FILE);
    let mut text = serde_json::to_vec_pretty(&index).map_err(|error| KeyRingError::Index {
        path: path.clone(),
        message: error.to_string(),
    })?;
    text.push(b'\n');
    let temporary = dir.join(format!("{INDEX_FILE}.tmp"));
    match fs::remove_file(&temporary) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(KeyRingError::Io {
                path: temporary,
                source,
            });
        }
    }
    write_private_file(&temporary, &text)?;
    fs::rename(&temporary, &path).map_err(|source| KeyRingError::Io { path, source })
}

/// Creates `path` (which must not exist) readable and writable by its owner only.
fn write_private_file(path: &Path, contents: &[u8]) -> Result<(), KeyRingError> {
    let io_error = |source| KeyRingError::Io {
        path: path.to_owned(),
        source,
    };
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(io_error)?;
    file.write_all(contents).map_err(io_error)?;
    file.sync_all().map_err(io_error)
}

fn create_private_dir(dir: &Path) -> Result<(), KeyRingError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|source| KeyRingError::Io {
        path: dir.to_owned(),
        source,
    })
}

/// The `TokenSigner` port on an [`Es256KeyRing`]: RFC 9068 access tokens.
///
/// Header `{"alg":"ES256","typ":"at+jwt","kid":…}`; payload `iss`, `sub`, `aud` and `client_id`
/// (both the client ID), `scope` (space-separated), `jti`, `iat` and `exp` (seconds), plus
/// `iat_ms` / `exp_ms` when those instants are not whole seconds, so that `verify` gives back the
/// exact claims. `verify` accepts only ES256 signatures by a key the ring publishes at `now`
/// (named by `kid`), of type `at+jwt`, from this issuer, before `exp`.
pub struct Es256TokenSigner {
    issuer: String,
    clock: Arc<dyn Clock>,
    ring: RwLock<Arc<Es256KeyRing>>,
}

impl fmt::Debug for Es256TokenSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Es256TokenSigner")
            .field("issuer", &self.issuer)
            .field("active_kid", &self.read_ring().active_kid())
            .finish_non_exhaustive()
    }
}

impl Es256TokenSigner {
    /// `clock` decides which retired keys [`TokenSigner::jwks`] still publishes.
    pub fn new(ring: Es256KeyRing, issuer: impl Into<String>, clock: Arc<dyn Clock>) -> Self {
        Self {
            issuer: issuer.into(),
            clock,
            ring: RwLock::new(Arc::new(ring)),
        }
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The ring as it is now.
    pub fn ring(&self) -> Arc<Es256KeyRing> {
        Arc::clone(&self.read_ring())
    }

    /// Rotates the ring (see [`Es256KeyRing::rotate`]) and signs with the new key from now on.
    pub fn rotate(&self, now: Timestamp) -> Result<String, KeyRingError> {
        let mut guard = self.ring.write().unwrap_or_else(PoisonError::into_inner);
        let mut ring = Es256KeyRing::clone(&guard);
        let kid = ring.rotate(now)?;
        *guard = Arc::new(ring);
        Ok(kid)
    }

    /// Swaps in another ring, e.g. the directory reopened after another process rotated it.
    pub fn replace_ring(&self, ring: Es256KeyRing) {
        *self.ring.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(ring);
    }

    fn read_ring(&self) -> RwLockReadGuard<'_, Arc<Es256KeyRing>> {
        // The ring behind the lock is immutable, so a writer's panic cannot leave it half-made.
        self.ring.read().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The claims as written: borrowed, so signing copies nothing but the JSON itself.
#[derive(Serialize)]
struct SignedPayload<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    client_id: &'a str,
    scope: ScopeList<'a>,
    jti: &'a str,
    iat: i64,
    exp: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    iat_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exp_ms: Option<i64>,
}

/// Scopes written as one space-separated string without building it first.
struct ScopeList<'a>(&'a [String]);

impl fmt::Display for ScopeList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, scope) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(" ")?;
            }
            f.write_str(scope)?;
        }
        Ok(())
    }
}

impl Serialize for ScopeList<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[derive(Deserialize)]
struct ReadPayload {
    iss: String,
    sub: String,
    aud: String,
    client_id: String,
    scope: String,
    jti: String,
    iat: i64,
    exp: i64,
    iat_ms: Option<i64>,
    exp_ms: Option<i64>,
}

/// The milliseconds of `instant` when it is not a whole second (else `exp`/`iat` say it all).
fn sub_second_millis(instant: Timestamp) -> Option<i64> {
    (instant.as_millis().rem_euclid(1000) != 0).then_some(instant.as_millis())
}

/// The instant of a seconds claim and its optional milliseconds companion, which must agree.
fn instant(secs: i64, millis: Option<i64>) -> Option<Timestamp> {
    match millis {
        Some(millis) if millis.div_euclid(1000) == secs => Some(Timestamp::from_millis(millis)),
        Some(_) => None,
        None => secs.checked_mul(1000).map(Timestamp::from_millis),
    }
}

fn is_access_token_type(typ: &str) -> bool {
    typ.eq_ignore_ascii_case(TOKEN_TYPE) || typ.eq_ignore_ascii_case("application/at+jwt")
}

impl TokenSigner for Es256TokenSigner {
    fn sign(&self, claims: &AccessTokenClaims) -> Result<String, TokenError> {
        if claims.issuer != self.issuer {
            return Err(TokenError::Sign(format!(
                "issuer {:?} is not this signer's {:?}",
                claims.issuer, self.issuer
            )));
        }
        if let Some(scope) = claims
            .scopes
            .iter()
            .find(|scope| scope.is_empty() || scope.contains(' '))
        {
            return Err(TokenError::Sign(format!("invalid scope {scope:?}")));
        }
        let ring = self.read_ring();
        // A longer-lived token could outlive its key's place in the JWKS after a rotation.
        if claims.expires_at > claims.issued_at.plus(ring.token_lifetime) {
            return Err(TokenError::Sign(format!(
                "lifetime exceeds the key ring's {:?}",
                ring.token_lifetime
            )));
        }
        let key = &ring.active_key().material;
        let payload = SignedPayload {
            iss: &claims.issuer,
            sub: &claims.subject,
            aud: &claims.audience,
            client_id: &claims.audience,
            scope: ScopeList(&claims.scopes),
            jti: &claims.token_id,
            iat: claims.issued_at.as_secs(),
            exp: claims.expires_at.as_secs(),
            iat_ms: sub_second_millis(claims.issued_at),
            exp_ms: sub_second_millis(claims.expires_at),
        };
        let mut json = Vec::with_capacity(320);
        serde_json::to_writer(&mut json, &payload)
            .map_err(|error| TokenError::Sign(error.to_string()))?;

        let encoded_len = |bytes: usize| bytes.div_ceil(3) * 4;
        let mut token = String::with_capacity(
            key.encoded_header.len() + 2 + encoded_len(json.len()) + encoded_len(64),
        );
        token.push_str(&key.encoded_header);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(&json, &mut token);
        let signature = key
            .signer
            .sign(&key.random, token.as_bytes())
            .map_err(|_| TokenError::Sign("ES256 signing failed".into()))?;
        let signature = signature.as_ref();
        if signature.len() != ES256_SIGNATURE_LEN {
            return Err(TokenError::Sign("unexpected ES256 signature length".into()));
        }
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(signature, &mut token);
        Ok(token)
    }

    fn verify(&self, token: &str, now: Timestamp) -> Result<AccessTokenClaims, TokenError> {
        let ring = self.read_ring();
        // josekit checks that the header's `alg` is the selected verifier's (ES256 only, so
        // `none` and HS256 are refused), that its `kid` matches, and the signature.
        let selector = |header: &JwsHeader| -> Result<Option<&dyn JwsVerifier>, JoseError> {
            if header.claim("crit").is_some()
                || !header.token_type().is_some_and(is_access_token_type)
            {
                return Ok(None);
            }
            Ok(header
                .key_id()
                .and_then(|kid| ring.published_key(kid, now))
                .map(|key| &key.material.verifier as &dyn JwsVerifier))
        };
        let (payload, _) = josekit::jws::deserialize_compact_with_selector(token, selector)
            .map_err(|_| TokenError::Invalid)?;
        let payload: ReadPayload =
            serde_json::from_slice(&payload).map_err(|_| TokenError::Invalid)?;
        if payload.iss != self.issuer || payload.client_id != payload.aud {
            return Err(TokenError::Invalid);
        }
        let issued_at = instant(payload.iat, payload.iat_ms).ok_or(TokenError::Invalid)?;
        let expires_at = instant(payload.exp, payload.exp_ms).ok_or(TokenError::Invalid)?;
        if now >= expires_at {
            return Err(TokenError::Invalid);
        }
        Ok(AccessTokenClaims {
            issuer: payload.iss,
            audience: payload.aud,
            subject: payload.sub,
            scopes: payload
                .scope
                .split(' ')
                .filter(|scope| !scope.is_empty())
                .map(str::to_owned)
                .collect(),
            token_id: payload.jti,
            issued_at,
            expires_at,
        })
    }

    fn jwks(&self) -> Value {
        self.read_ring().jwks(self.clock.now())
    }
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
