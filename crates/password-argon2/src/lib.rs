#![doc = include_str!("../README.md")]

use argon2::Argon2;
use argon2::password_hash::{PasswordHasher as _, PasswordVerifier as _};
use async_trait::async_trait;
use idconsent_merchant::ports::{PasswordError, PasswordHasher};

#[derive(Debug, Clone)]
pub struct Argon2Passwords {
    dummy_hash: String,
}

impl Argon2Passwords {
    /// Blocking (one hash): call at start-up.
    pub fn new() -> Result<Self, PasswordError> {
        Ok(Self {
            dummy_hash: hash("idconsent timing equaliser")?,
        })
    }
}

fn hash(password: &str) -> Result<String, PasswordError> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|error| PasswordError(error.to_string()))
}

fn verify(password: &str, hash: &str) -> bool {
    Argon2::default()
        .verify_password(password.as_bytes(), hash)
        .is_ok()
}

#[async_trait]
impl PasswordHasher for Argon2Passwords {
    async fn hash(&self, password: &str) -> Result<String, PasswordError> {
        let password = password.to_owned();
        tokio::task::spawn_blocking(move || hash(&password))
            .await
            .map_err(|error| PasswordError(error.to_string()))?
    }

    async fn verify(&self, password: &str, hash: &str) -> bool {
        let (password, hash) = (password.to_owned(), hash.to_owned());
        tokio::task::spawn_blocking(move || verify(&password, &hash))
            .await
            .unwrap_or(false)
    }

    async fn verify_dummy(&self, password: &str) {
        let _ = self.verify(password, &self.dummy_hash.clone()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_verify_and_never_repeat() {
        let passwords = Argon2Passwords::new().unwrap();
        let first = passwords.hash("correct horse battery").await.unwrap();
        let second = passwords.hash("correct horse battery").await.unwrap();
        assert!(first.starts_with("$argon2id$v=19$"), "{first}");
        assert_ne!(first, second);
        assert!(passwords.verify("correct horse battery", &first).await);
        assert!(!passwords.verify("correct horse batterY", &first).await);
        assert!(
            !passwords
                .verify("correct horse battery", "not a hash")
                .await
        );
        passwords.verify_dummy("anything").await;
    }
}
