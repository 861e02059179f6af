//! Generating QR codes and reading them back.

use std::sync::Arc;
use std::time::Duration;

use idconsent_kernel::id::{ApplicationId, QrCodeId, TypedId};
use idconsent_kernel::{
    Clock, Environment, ErrorCategory, ErrorCorrection, IdGenerator, QrError, QrFormat, QrOptions,
    QrRenderer, Timestamp, ValidationErrors,
};

use crate::model::{QrStatus, StoredQr};
use crate::negotiation::{FormatError, choose_format};
use crate::ports::{QrCodeRepository, StoreError};

/// Most bytes of data a code may hold (the largest QR code holds 2,953 at level L).
pub const MAX_DATA_BYTES: usize = 2048;
const DEFAULT_LIFETIME_SECS: i64 = 3600;
const LIFETIME_SECS: std::ops::RangeInclusive<i64> = 60..=86_400;

#[derive(Debug, thiserror::Error)]
pub enum QrCodeError {
    #[error("{0}")]
    Invalid(ValidationErrors),
    #[error("QR code not found")]
    NotFound,
    #[error("The QR code has expired")]
    Expired,
    #[error("QR code storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl QrCodeError {
    pub fn category(&self) -> ErrorCategory {
        match self {
            QrCodeError::Invalid(_) => ErrorCategory::Validation,
            QrCodeError::NotFound => ErrorCategory::NotFound,
            // 410 is not a category of its own: the HTTP layer maps `Expired` itself.
            QrCodeError::Expired => ErrorCategory::NotFound,
            QrCodeError::Unavailable(_) => ErrorCategory::Internal,
        }
    }
}

impl From<StoreError> for QrCodeError {
    fn from(error: StoreError) -> Self {
        QrCodeError::Unavailable(Box::new(error))
    }
}

impl From<FormatError> for QrCodeError {
    fn from(error: FormatError) -> Self {
        QrCodeError::Invalid(ValidationErrors::single("format", error.to_string()))
    }
}

/// Who asks: the application of the signed request, in its key's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QrRequester {
    pub application_id: ApplicationId,
    pub environment: Environment,
}

/// `POST /v1/qr/generate` as the service takes it (JSON types already checked).
#[derive(Debug, Clone, Default)]
pub struct GenerateQr {
    pub data: String,
    pub format: Option<String>,
    pub size: Option<i64>,
    pub error_correction: Option<String>,
    pub expires_in: Option<i64>,
}

/// A generated code and its image in the stored format.
#[derive(Debug, Clone)]
pub struct Generated {
    pub code: StoredQr,
    pub image: Vec<u8>,
}

/// An image to answer `GET /v1/qr/:id/image` with.
#[derive(Debug, Clone)]
pub struct QrImage {
    pub bytes: Vec<u8>,
    pub format: QrFormat,
    /// Strong: the bytes of an id in one format never change.
    pub etag: String,
    /// How long a cache may keep it: until the code expires.
    pub max_age: Duration,
}

#[derive(Debug, Clone)]
pub struct QrCodeService {
    codes: Arc<dyn QrCodeRepository>,
    renderer: Arc<dyn QrRenderer>,
    ids: Arc<dyn IdGenerator>,
    clock: Arc<dyn Clock>,
}

impl QrCodeService {
    pub fn new(
        codes: Arc<dyn QrCodeRepository>,
        renderer: Arc<dyn QrRenderer>,
        ids: Arc<dyn IdGenerator>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            codes,
            renderer,
            ids,
            clock,
        }
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Checks the request, draws the code (so that data too long for its level is a 422, not a
    /// stored code that cannot be drawn) and stores it.
    pub async fn generate(
        &self,
        requester: &QrRequester,
        input: GenerateQr,
    ) -> Result<Generated, QrCodeError> {
        let mut errors = ValidationErrors::new();
        if input.data.is_empty() || input.data.len() > MAX_DATA_BYTES {
            errors.push("data", format!("must be 1 to {MAX_DATA_BYTES} bytes"));
        }
        let format = match input.format.as_deref() {
            None => Some(QrFormat::Png),
            Some(text) => errors.check("format", QrFormat::parse(text).ok_or("must be png or svg")),
        };
        let size = match input.size {
            None => Some(QrOptions::default().size),
            Some(size) => errors.check(
                "size",
                u32::try_from(size)
                    .ok()
                    .filter(|size| (QrOptions::MIN_SIZE..=QrOptions::MAX_SIZE).contains(size))
                    .ok_or("must be between 64 and 2048"),
            ),
        };
        let error_correction = match input.error_correction.as_deref() {
            None => Some(QrOptions::default().error_correction),
            Some(text) => errors.check(
                "errorCorrection",
                ErrorCorrection::parse(text).ok_or("must be L, M, Q or H"),
            ),
        };
        let lifetime = input.expires_in.unwrap_or(DEFAULT_LIFETIME_SECS);
        if !LIFETIME_SECS.contains(&lifetime) {
            errors.push("expiresIn", "must be between 60 and 86400 seconds");
        }
        let (Some(format), Some(size), Some(error_correction)) = (format, size, error_correction)
        else {
            return Err(QrCodeError::Invalid(errors));
        };
        if !errors.is_empty() {
            return Err(QrCodeError::Invalid(errors));
        }
        let options = QrOptions {
            size,
            error_correction,
        };
        let image = self
            .renderer
            .render(&input.data, format, &options)
            .map_err(|error| match error {
                QrError::TooLong => ValidationErrors::single(
                    "data",
                    format!(
                        "does not fit in a QR code at error-correction level {}",
                        error_correction.as_str()
                    ),
                ),
                QrError::Size => ValidationErrors::single(
                    "size",
                    "is too small for this much data: each module needs at least one pixel",
                ),
            })
            .map_err(QrCodeError::Invalid)?;
        let now = self.now();
        let code = StoredQr {
            id: self.ids.next::<QrCodeId>(),
            application_id: requester.application_id.clone(),
            environment: requester.environment,
            data: input.data,
            format,
            options,
            created_at: now,
            expires_at: now.plus(Duration::from_secs(lifetime.unsigned_abs())),
        };
        self.codes.insert(&code).await?;
        Ok(Generated { code, image })
    }

    /// The code, for the application (and environment) that made it; anyone else's is not found.
    pub async fn get(&self, requester: &QrRequester, id: &str) -> Result<StoredQr, QrCodeError> {
        let code = self.find(id).await?;
        if code.application_id != requester.application_id
            || code.environment != requester.environment
        {
            return Err(QrCodeError::NotFound);
        }
        Ok(code)
    }

    /// The image, for anyone with the id (it is unguessable): 410 once expired.
    pub async fn image(
        &self,
        id: &str,
        query_format: Option<&str>,
        accept: Option<&str>,
    ) -> Result<QrImage, QrCodeError> {
        let code = self.find(id).await?;
        let format = choose_format(query_format, accept, code.format)?;
        let now = self.now();
        if code.status_at(now) == QrStatus::Expired {
            return Err(QrCodeError::Expired);
        }
        let bytes = self
            .renderer
            .render(&code.data, format, &code.options)
            .map_err(|error| QrCodeError::Unavailable(Box::new(error)))?;
        Ok(QrImage {
            bytes,
            format,
            etag: format!("\"{}.{}\"", code.id.as_str(), format.as_str()),
            max_age: code.expires_at.since(now),
        })
    }

    async fn find(&self, id: &str) -> Result<StoredQr, QrCodeError> {
        let id = QrCodeId::parse(id).map_err(|_| QrCodeError::NotFound)?;
        self.codes.find(&id).await?.ok_or(QrCodeError::NotFound)
    }
}

#[cfg(test)]
mod tests {
    use idconsent_kernel::{ManualClock, OsRandom, UlidGenerator};
    use idconsent_qr_render::QrCodegenRenderer;

    use super::*;
    use crate::testing::InMemoryQrCodes;

    fn service() -> (QrCodeService, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_763_719_200_000)));
        let ids = Arc::new(UlidGenerator::new(clock.clone(), Arc::new(OsRandom)));
        let service = QrCodeService::new(
            Arc::new(InMemoryQrCodes::default()),
            Arc::new(QrCodegenRenderer::default()),
            ids,
            clock.clone(),
        );
        (service, clock)
    }

    fn shop() -> QrRequester {
        QrRequester {
            application_id: ApplicationId::parse("app_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            environment: Environment::Sandbox,
        }
    }

    fn invalid_fields(error: QrCodeError) -> Vec<String> {
        match error {
            QrCodeError::Invalid(errors) => {
                errors.into_fields().into_iter().map(|f| f.field).collect()
            }
            other => panic!("not a validation error: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_code_is_generated_read_back_and_expires_on_time() {
        let (service, clock) = service();
        let generated = service
            .generate(
                &shop(),
                GenerateQr {
                    data: "https://shop.example/t/42".into(),
                    format: Some("svg".into()),
                    expires_in: Some(60),
                    ..GenerateQr::default()
                },
            )
            .await
            .unwrap();
        assert!(generated.code.id.as_str().starts_with("qr_"));
        assert!(
            String::from_utf8(generated.image)
                .unwrap()
                .starts_with("<svg")
        );
        let id = generated.code.id.as_str().to_owned();
        assert_eq!(service.get(&shop(), &id).await.unwrap(), generated.code);
        let image = service.image(&id, None, Some("image/png")).await.unwrap();
        assert_eq!(image.format, QrFormat::Png);
        assert_eq!(image.max_age, Duration::from_secs(60));
        assert_eq!(image.etag, format!("\"{id}.png\""));
        clock.advance(Duration::from_secs(60));
        assert!(matches!(
            service.image(&id, None, None).await,
            Err(QrCodeError::Expired)
        ));
        // Still readable as a record, now expired.
        let code = service.get(&shop(), &id).await.unwrap();
        assert_eq!(code.status_at(service.now()), QrStatus::Expired);
    }

    #[tokio::test]
    async fn another_application_or_environment_does_not_find_it() {
        let (service, _) = service();
        let generated = service
            .generate(
                &shop(),
                GenerateQr {
                    data: "x".into(),
                    ..GenerateQr::default()
                },
            )
            .await
            .unwrap();
        let id = generated.code.id.as_str();
        let live = QrRequester {
            environment: Environment::Live,
            ..shop()
        };
        let other = QrRequester {
            application_id: ApplicationId::parse("app_01JDKX9Q6N8V3T5R7W2Y4Z6B8D").unwrap(),
            ..shop()
        };
        for requester in [live, other] {
            assert!(matches!(
                service.get(&requester, id).await,
                Err(QrCodeError::NotFound)
            ));
        }
        assert!(matches!(
            service.get(&shop(), "qr_nope").await,
            Err(QrCodeError::NotFound)
        ));
    }

    #[tokio::test]
    async fn every_rule_is_checked_and_nothing_is_stored_when_one_fails() {
        let (service, _) = service();
        let refused = service
            .generate(
                &shop(),
                GenerateQr {
                    data: String::new(),
                    format: Some("gif".into()),
                    size: Some(63),
                    error_correction: Some("X".into()),
                    expires_in: Some(59),
                },
            )
            .await
            .unwrap_err();
        assert_eq!(
            invalid_fields(refused),
            ["data", "format", "size", "errorCorrection", "expiresIn"]
        );
        let too_much = service
            .generate(
                &shop(),
                GenerateQr {
                    data: "x".repeat(MAX_DATA_BYTES + 1),
                    ..GenerateQr::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(invalid_fields(too_much), ["data"]);
        // 2,048 bytes fit at level L but not at H.
        let at_high = service
            .generate(
                &shop(),
                GenerateQr {
                    data: "x".repeat(MAX_DATA_BYTES),
                    error_correction: Some("H".into()),
                    size: Some(2048),
                    ..GenerateQr::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(invalid_fields(at_high), ["data"]);
        // Too many modules for 64 pixels.
        let too_small = service
            .generate(
                &shop(),
                GenerateQr {
                    data: "x".repeat(1000),
                    error_correction: Some("L".into()),
                    size: Some(64),
                    ..GenerateQr::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(invalid_fields(too_small), ["size"]);
    }
}
