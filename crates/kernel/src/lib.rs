#![doc = include_str!("../README.md")]

pub mod blob;
pub mod clock;
pub mod date;
pub mod email;
pub mod environment;
pub mod error;
pub mod id;
pub mod money;
pub mod nudge;
pub mod page;
pub mod phone;
pub mod qr;
pub mod random;
pub mod secrets;
pub mod text;
pub mod throttle;
pub mod unavailable;
pub mod usage;
pub mod web_url;

pub use blob::{BlobError, BlobStore, StoredBlob};
pub use clock::{Clock, ManualClock, ShiftedClock, SystemClock, Timestamp};
pub use date::CalendarDate;
pub use email::EmailAddress;
pub use environment::{Environment, Intent};
pub use error::{ErrorCategory, FieldError, ValidationErrors};
pub use id::{IdGenerator, TypedId, UlidGenerator};
pub use money::{Currency, Money};
pub use nudge::Nudge;
pub use page::{Page, PageRequest};
pub use phone::PhoneNumber;
pub use qr::{ErrorCorrection, QrError, QrFormat, QrOptions, QrRenderer};
pub use random::{OsRandom, RandomSource, SeededRandom};
pub use secrets::{KeyedHash, Sealed, SealedFor, SecretVault, VaultError, constant_time_eq};
pub use text::{DisplayText, TextError};
pub use throttle::{Throttle, ThrottleError};
pub use unavailable::{StorageUnavailable, storage_unavailable};
pub use usage::{
    Charge, Metering, MeteringError, Metric, QuotaExceeded, Unmetered, UsageLedger, UsagePeriod,
};
pub use web_url::WebUrl;
