#![doc = include_str!("../README.md")]

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
use idconsent_kernel::{KeyedHash, Sealed, SealedFor, SecretVault, VaultError};
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use ring::{hkdf, hmac};

/// The root secret (`IDC_MASTER_KEY`) from which every working key is derived.
#[derive(Clone)]
pub struct MasterKey([u8; 32]);

impl MasterKey {
    pub fn new(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// A 32-byte key for one purpose (HKDF-SHA256, salt `idconsent`, info = purpose).
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        struct Len32;
        impl hkdf::KeyType for Len32 {
            fn len(&self) -> usize {
                32
            }
        }
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"idconsent").extract(&self.0);
        let info = [purpose.as_bytes()];
        let mut out = [0u8; 32];
        // Expanding 32 bytes from SHA-256 HKDF cannot fail (the limit is 255 * 32).
        if let Ok(okm) = prk.expand(&info, Len32) {
            let _ = okm.fill(&mut out);
        }
        out
    }
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterKey(***)")
    }
}

/// Sealed values before bindings: a fixed associated-data label. Opened only to re-seal them.
const LEGACY_PREFIX: &str = "v1.";
const LEGACY_AAD: &[u8] = b"idconsent-vault-v1";
/// Sealed values bound to what they belong to (`SealedFor`).
const SEALED_PREFIX: &str = "v2.";
const AAD_LABEL: &[u8] = b"idconsent-vault-v2";

/// AES-256-GCM sealing of secrets that must be read back.
pub struct AesGcmVault {
    key: LessSafeKey,
    random: SystemRandom,
}

impl AesGcmVault {
    pub fn new(master: &MasterKey) -> Self {
        let bytes = master.derive("secret-vault/aes-256-gcm");
        let key = match UnboundKey::new(&AES_256_GCM, &bytes) {
            Ok(key) => LessSafeKey::new(key),
            Err(_) => panic!("AES-256-GCM rejected a 32-byte key"),
        };
        Self {
            key,
            random: SystemRandom::new(),
        }
    }

    /// Seals in the legacy unbound `v1.` format, which `open` refuses: only for tests of the
    /// upgrade path (`reseal`).
    pub fn seal_legacy(&self, plaintext: &[u8]) -> Sealed {
        self.seal_with(plaintext, LEGACY_AAD, LEGACY_PREFIX)
    }

    fn seal_with(&self, plaintext: &[u8], aad: &[u8], prefix: &str) -> Sealed {
        let mut nonce = [0u8; NONCE_LEN];
        // Without randomness a nonce could repeat and break GCM: stopping is the only safe answer.
        if self.random.fill(&mut nonce).is_err() {
            panic!("the operating system random source failed");
        }
        let mut in_out = plaintext.to_vec();
        let sealed = self.key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad),
            &mut in_out,
        );
        if sealed.is_err() {
            panic!("AES-GCM sealing failed: the plaintext exceeds GCM's limit");
        }
        let mut blob = Vec::with_capacity(NONCE_LEN + in_out.len());
        blob.extend_from_slice(&nonce);
        blob.extend_from_slice(&in_out);
        Sealed::from_stored(format!("{prefix}{}", BASE64URL.encode(blob)))
    }

    fn open_with(&self, encoded: &str, aad: &[u8]) -> Result<Vec<u8>, VaultError> {
        let blob = BASE64URL.decode(encoded).map_err(|_| VaultError)?;
        if blob.len() < NONCE_LEN + AES_256_GCM.tag_len() {
            return Err(VaultError);
        }
        let (nonce, ciphertext) = blob.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| VaultError)?;
        let mut in_out = ciphertext.to_vec();
        let plaintext = self
            .key
            .open_in_place(nonce, Aad::from(aad), &mut in_out)
            .map_err(|_| VaultError)?;
        Ok(plaintext.to_vec())
    }
}

/// The associated data of a bound value: label, kind and owner, each ended by a NUL so no two
/// bindings give the same bytes.
fn bound_aad(binding: SealedFor<'_>) -> Vec<u8> {
    let mut aad =
        Vec::with_capacity(AAD_LABEL.len() + binding.kind.len() + binding.owner.len() + 3);
    for part in [AAD_LABEL, binding.kind.as_bytes(), binding.owner.as_bytes()] {
        aad.extend_from_slice(part);
        aad.push(0);
    }
    aad
}

impl fmt::Debug for AesGcmVault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AesGcmVault")
    }
}

impl SecretVault for AesGcmVault {
    fn seal(&self, plaintext: &[u8], binding: SealedFor<'_>) -> Sealed {
        self.seal_with(plaintext, &bound_aad(binding), SEALED_PREFIX)
    }

    /// Only bound (`v2.`) values open: an unbound legacy value must be re-sealed first, so a
    /// legacy value planted in another row cannot be read through it.
    fn open(&self, sealed: &Sealed, binding: SealedFor<'_>) -> Result<Vec<u8>, VaultError> {
        let encoded = sealed
            .as_str()
            .strip_prefix(SEALED_PREFIX)
            .ok_or(VaultError)?;
        self.open_with(encoded, &bound_aad(binding))
    }

    fn reseal(
        &self,
        sealed: &Sealed,
        binding: SealedFor<'_>,
    ) -> Result<Option<Sealed>, VaultError> {
        if sealed.as_str().starts_with(SEALED_PREFIX) {
            // Already bound; it must open for this binding.
            self.open(sealed, binding)?;
            return Ok(None);
        }
        let encoded = sealed
            .as_str()
            .strip_prefix(LEGACY_PREFIX)
            .ok_or(VaultError)?;
        let plaintext = self.open_with(encoded, LEGACY_AAD)?;
        Ok(Some(self.seal(&plaintext, binding)))
    }
}

/// HMAC-SHA256 keyed hashes for values that are looked up, never read back.
pub struct HmacKeyedHash {
    key: hmac::Key,
}

impl HmacKeyedHash {
    pub fn new(master: &MasterKey) -> Self {
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, &master.derive("keyed-hash/hmac-sha256")),
        }
    }
}

impl fmt::Debug for HmacKeyedHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HmacKeyedHash")
    }
}

impl KeyedHash for HmacKeyedHash {
    fn hash(&self, purpose: &str, value: &[u8]) -> [u8; 32] {
        let mut context = hmac::Context::with_key(&self.key);
        context.update(purpose.as_bytes());
        context.update(&[0]);
        context.update(value);
        let tag = context.sign();
        let mut out = [0u8; 32];
        out.copy_from_slice(tag.as_ref());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn master(byte: u8) -> MasterKey {
        MasterKey::new([byte; 32])
    }

    const APP_SECRET: SealedFor<'static> = SealedFor::new("application.request-secret", "app_1");

    #[test]
    fn sealing_round_trips_and_never_repeats() {
        let vault = AesGcmVault::new(&master(1));
        let first = vault.seal(b"sk_secret", APP_SECRET);
        let second = vault.seal(b"sk_secret", APP_SECRET);
        assert_ne!(first, second);
        assert_eq!(vault.open(&first, APP_SECRET).unwrap(), b"sk_secret");
        assert_eq!(vault.open(&second, APP_SECRET).unwrap(), b"sk_secret");
        assert!(first.as_str().starts_with("v2."));
        assert!(!first.as_str().contains("sk_secret"));
    }

    #[test]
    fn tampering_another_key_or_another_binding_fails_to_open() {
        let vault = AesGcmVault::new(&master(1));
        let sealed = vault.seal(b"whsec_abc", APP_SECRET);
        let mut text = sealed.as_str().to_owned().into_bytes();
        let last = text.len() - 2;
        text[last] = if text[last] == b'A' { b'B' } else { b'A' };
        let tampered = Sealed::from_stored(String::from_utf8(text).unwrap());
        assert_eq!(vault.open(&tampered, APP_SECRET), Err(VaultError));
        assert_eq!(
            AesGcmVault::new(&master(2)).open(&sealed, APP_SECRET),
            Err(VaultError)
        );
        // Moved to another owner, or to another kind of secret of the same owner.
        for elsewhere in [
            SealedFor::new("application.request-secret", "app_2"),
            SealedFor::new("application.webhook-secret", "app_1"),
            // The separators keep kind and owner apart.
            SealedFor::new("application.request-secretapp_1", ""),
        ] {
            assert_eq!(
                vault.open(&sealed, elsewhere),
                Err(VaultError),
                "{elsewhere:?}"
            );
        }
        for garbage in ["v2.AAAA", "plain", "v1.AAAA"] {
            let garbage = Sealed::from_stored(garbage.into());
            assert_eq!(vault.open(&garbage, APP_SECRET), Err(VaultError));
        }
    }

    #[test]
    fn legacy_values_open_only_through_a_reseal() {
        let vault = AesGcmVault::new(&master(1));
        let legacy = vault.seal_legacy(b"sk_old");
        assert!(legacy.as_str().starts_with("v1."));
        assert_eq!(vault.open(&legacy, APP_SECRET), Err(VaultError));
        let bound = vault.reseal(&legacy, APP_SECRET).unwrap().unwrap();
        assert_eq!(vault.open(&bound, APP_SECRET).unwrap(), b"sk_old");
        // A bound value needs nothing, but must belong to the binding.
        assert_eq!(vault.reseal(&bound, APP_SECRET), Ok(None));
        let other = SealedFor::new("application.request-secret", "app_2");
        assert_eq!(vault.reseal(&bound, other), Err(VaultError));
        let tampered = Sealed::from_stored(format!("{}A", legacy.as_str()));
        assert_eq!(vault.reseal(&tampered, APP_SECRET), Err(VaultError));
    }

    #[test]
    fn keyed_hashes_depend_on_key_and_purpose() {
        let hash = HmacKeyedHash::new(&master(1));
        assert_eq!(
            hash.hash("api-key", b"mk_test_x"),
            hash.hash("api-key", b"mk_test_x")
        );
        assert_ne!(
            hash.hash("api-key", b"mk_test_x"),
            hash.hash("otp", b"mk_test_x")
        );
        assert_ne!(
            hash.hash("api-key", b"mk_test_x"),
            HmacKeyedHash::new(&master(2)).hash("api-key", b"mk_test_x")
        );
        // The separator keeps purpose and value apart.
        assert_ne!(hash.hash("ab", b"c"), hash.hash("a", b"bc"));
    }

    #[test]
    fn derived_keys_differ_per_purpose() {
        let key = master(9);
        assert_ne!(key.derive("a"), key.derive("b"));
        assert_eq!(key.derive("a"), key.derive("a"));
        assert_eq!(format!("{key:?}"), "MasterKey(***)");
    }
}
