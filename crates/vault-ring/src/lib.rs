#![doc = include_str!("../README.md")]

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
use idconsent_kernel::{KeyedHash, Sealed, SecretVault, VaultError};
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

const SEALED_PREFIX: &str = "v1.";
const AAD: &[u8] = b"idconsent-vault-v1";

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
}

impl fmt::Debug for AesGcmVault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AesGcmVault")
    }
}

impl SecretVault for AesGcmVault {
    fn seal(&self, plaintext: &[u8]) -> Sealed {
        let mut nonce = [0u8; NONCE_LEN];
        // Without randomness a nonce could repeat and break GCM: stopping is the only safe answer.
        if self.random.fill(&mut nonce).is_err() {
            panic!("the operating system random source failed");
        }
        let mut in_out = plaintext.to_vec();
        let sealed = self.key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(AAD),
            &mut in_out,
        );
        if sealed.is_err() {
            panic!("AES-GCM sealing failed: the plaintext exceeds GCM's limit");
        }
        let mut blob = Vec::with_capacity(NONCE_LEN + in_out.len());
        blob.extend_from_slice(&nonce);
        blob.extend_from_slice(&in_out);
        Sealed::from_stored(format!("{SEALED_PREFIX}{}", BASE64URL.encode(blob)))
    }

    fn open(&self, sealed: &Sealed) -> Result<Vec<u8>, VaultError> {
        let encoded = sealed
            .as_str()
            .strip_prefix(SEALED_PREFIX)
            .ok_or(VaultError)?;
        let blob = BASE64URL.decode(encoded).map_err(|_| VaultError)?;
        if blob.len() < NONCE_LEN + AES_256_GCM.tag_len() {
            return Err(VaultError);
        }
        let (nonce, ciphertext) = blob.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| VaultError)?;
        let mut in_out = ciphertext.to_vec();
        let plaintext = self
            .key
            .open_in_place(nonce, Aad::from(AAD), &mut in_out)
            .map_err(|_| VaultError)?;
        Ok(plaintext.to_vec())
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

    #[test]
    fn sealing_round_trips_and_never_repeats() {
        let vault = AesGcmVault::new(&master(1));
        let first = vault.seal(b"sk_secret");
        let second = vault.seal(b"sk_secret");
        assert_ne!(first, second);
        assert_eq!(vault.open(&first).unwrap(), b"sk_secret");
        assert_eq!(vault.open(&second).unwrap(), b"sk_secret");
        assert!(first.as_str().starts_with("v1."));
        assert!(!first.as_str().contains("sk_secret"));
    }

    #[test]
    fn tampering_or_another_key_fails_to_open() {
        let vault = AesGcmVault::new(&master(1));
        let sealed = vault.seal(b"whsec_abc");
        let mut text = sealed.as_str().to_owned().into_bytes();
        let last = text.len() - 2;
        text[last] = if text[last] == b'A' { b'B' } else { b'A' };
        let tampered = Sealed::from_stored(String::from_utf8(text).unwrap());
        assert_eq!(vault.open(&tampered), Err(VaultError));
        assert_eq!(AesGcmVault::new(&master(2)).open(&sealed), Err(VaultError));
        assert_eq!(
            vault.open(&Sealed::from_stored("v1.AAAA".into())),
            Err(VaultError)
        );
        assert_eq!(
            vault.open(&Sealed::from_stored("plain".into())),
            Err(VaultError)
        );
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
