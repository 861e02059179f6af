//! Error categories of the specification (§7) and field-level validation details.

use std::fmt;

use serde::Serialize;

/// The error types of spec §7, one to one. Every domain error names its category; the HTTP
/// layer turns a category into a status code and the envelope's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCategory {
    /// 400: malformed request or missing required fields.
    BadRequest,
    /// 401: invalid or missing credentials.
    Unauthorized,
    /// 403: the caller may not do this.
    Forbidden,
    /// 404: the resource does not exist (or is not visible to the caller).
    NotFound,
    /// 409: conflicts with the current state of a resource.
    Conflict,
    /// 422: well-formed but invalid values.
    Validation,
    /// 429: too many requests; retry after a cooldown.
    RateLimited,
    /// 500: an internal failure; never caused by input.
    Internal,
}

impl ErrorCategory {
    pub const ALL: [ErrorCategory; 8] = [
        Self::BadRequest,
        Self::Unauthorized,
        Self::Forbidden,
        Self::NotFound,
        Self::Conflict,
        Self::Validation,
        Self::RateLimited,
        Self::Internal,
    ];

    pub const fn status(self) -> u16 {
        match self {
            Self::BadRequest => 400,
            Self::Unauthorized => 401,
            Self::Forbidden => 403,
            Self::NotFound => 404,
            Self::Conflict => 409,
            Self::Validation => 422,
            Self::RateLimited => 429,
            Self::Internal => 500,
        }
    }

    /// The `type` string of the error envelope.
    pub const fn type_name(self) -> &'static str {
        match self {
            Self::BadRequest => "bad_request",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::Validation => "validation_error",
            Self::RateLimited => "rate_limited",
            Self::Internal => "server_error",
        }
    }
}

/// What is wrong with one field, by its JSON path (`transaction.amount`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Every problem found in a request, so a client can fix them all in one go (422).
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
pub struct ValidationErrors(Vec<FieldError>);

impl ValidationErrors {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn single(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self(vec![FieldError::new(field, message)])
    }

    pub fn push(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldError::new(field, message));
    }

    /// Records the error of `result` under `field` and returns its value, if any. Lets a
    /// conversion check every field before giving up:
    ///
    /// ```
    /// # use idconsent_kernel::{PhoneNumber, ValidationErrors};
    /// let mut errors = ValidationErrors::new();
    /// let phone = errors.check("recipient", PhoneNumber::parse("555-1234"));
    /// assert!(phone.is_none());
    /// assert!(errors.finish().is_err());
    /// ```
    pub fn check<T, E: fmt::Display>(
        &mut self,
        field: impl Into<String>,
        result: Result<T, E>,
    ) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(error) => {
                self.push(field, error.to_string());
                None
            }
        }
    }

    /// `Ok(())` when nothing was recorded.
    pub fn finish(self) -> Result<(), ValidationErrors> {
        if self.0.is_empty() { Ok(()) } else { Err(self) }
    }

    /// When nothing was recorded, assembles the checked values (every `check` returned
    /// `Some`, so `build` can use `?` on them); otherwise returns every recorded error.
    ///
    /// ```
    /// # use idconsent_kernel::{PhoneNumber, EmailAddress, ValidationErrors};
    /// let mut errors = ValidationErrors::new();
    /// let phone = errors.check("phone", PhoneNumber::parse("+15551234567"));
    /// let email = errors.check("email", EmailAddress::parse("ops@example.com"));
    /// let (phone, email) = errors.finish_with(|| Some((phone?, email?))).unwrap();
    /// assert_eq!(phone.as_str(), "+15551234567");
    /// ```
    pub fn finish_with<T>(self, build: impl FnOnce() -> Option<T>) -> Result<T, ValidationErrors> {
        self.finish()?;
        build().ok_or_else(|| ValidationErrors::single("body", "is invalid"))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn fields(&self) -> &[FieldError] {
        &self.0
    }

    pub fn into_fields(self) -> Vec<FieldError> {
        self.0
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [] => f.write_str("invalid request"),
            [only] => write!(f, "{}: {}", only.field, only.message),
            [first, rest @ ..] => {
                write!(
                    f,
                    "{}: {} (and {} more)",
                    first.field,
                    first.message,
                    rest.len()
                )
            }
        }
    }
}

impl From<FieldError> for ValidationErrors {
    fn from(error: FieldError) -> Self {
        Self(vec![error])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_map_to_the_spec_table() {
        let table: Vec<(u16, &str)> = ErrorCategory::ALL
            .iter()
            .map(|c| (c.status(), c.type_name()))
            .collect();
        assert_eq!(
            table,
            vec![
                (400, "bad_request"),
                (401, "unauthorized"),
                (403, "forbidden"),
                (404, "not_found"),
                (409, "conflict"),
                (422, "validation_error"),
                (429, "rate_limited"),
                (500, "server_error"),
            ]
        );
    }

    #[test]
    fn check_collects_every_failure() {
        let mut errors = ValidationErrors::new();
        assert_eq!(errors.check("a", Ok::<_, String>(1)), Some(1));
        assert_eq!(errors.check("b", Err::<i32, _>("bad b")), None);
        assert_eq!(errors.check("c", Err::<i32, _>("bad c")), None);
        let errors = errors.finish().unwrap_err();
        assert_eq!(errors.fields().len(), 2);
        assert_eq!(errors.to_string(), "b: bad b (and 1 more)");
    }
}
