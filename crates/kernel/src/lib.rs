#![doc = include_str!("../README.md")]

pub mod clock;
pub mod date;
pub mod email;
pub mod error;
pub mod id;
pub mod money;
pub mod page;
pub mod phone;
pub mod random;

pub use clock::{Clock, ManualClock, SystemClock, Timestamp};
pub use date::CalendarDate;
pub use email::EmailAddress;
pub use error::{ErrorCategory, FieldError, ValidationErrors};
pub use id::{IdGenerator, TypedId, UlidGenerator};
pub use money::{Currency, Money};
pub use page::{Page, PageRequest};
pub use phone::PhoneNumber;
pub use random::{OsRandom, RandomSource, SeededRandom};
