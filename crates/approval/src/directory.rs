//! The names a context shows: which merchant and which of its applications is asking.

use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::id::ApplicationId;

/// The merchant's business name and the application's name, as registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplicationNames {
    pub merchant: String,
    pub application: String,
}

#[derive(Debug, thiserror::Error)]
#[error("application directory failed")]
pub struct DirectoryError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// Looks up who an application belongs to.
///
/// Contract: `names` returns the current names of an existing application and its merchant,
/// `None` for an unknown application.
#[async_trait]
pub trait ApplicationDirectory: Send + Sync + fmt::Debug {
    async fn names(
        &self,
        application: &ApplicationId,
    ) -> Result<Option<ApplicationNames>, DirectoryError>;
}
