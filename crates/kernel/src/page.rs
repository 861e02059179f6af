//! Pagination: `page` from 1, `limit` 1–100 (default 20).

use serde::Serialize;

use crate::error::ValidationErrors;

/// Which slice of a list a caller asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    page: u32,
    limit: u32,
}

impl PageRequest {
    pub const DEFAULT_LIMIT: u32 = 20;
    pub const MAX_LIMIT: u32 = 100;

    /// Checks the raw query values; missing values take the defaults.
    pub fn new(page: Option<i64>, limit: Option<i64>) -> Result<Self, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let page = match page {
            None => 1,
            Some(page) if (1..=1_000_000).contains(&page) => page as u32,
            Some(_) => {
                errors.push("page", "must be between 1 and 1000000");
                1
            }
        };
        let limit = match limit {
            None => Self::DEFAULT_LIMIT,
            Some(limit) if (1..=i64::from(Self::MAX_LIMIT)).contains(&limit) => limit as u32,
            Some(_) => {
                errors.push("limit", "must be between 1 and 100");
                Self::DEFAULT_LIMIT
            }
        };
        errors.finish()?;
        Ok(Self { page, limit })
    }

    pub fn page(&self) -> u32 {
        self.page
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Rows to skip.
    pub fn offset(&self) -> u64 {
        u64::from(self.page - 1) * u64::from(self.limit)
    }
}

impl Default for PageRequest {
    fn default() -> Self {
        Self {
            page: 1,
            limit: Self::DEFAULT_LIMIT,
        }
    }
}

/// One page of a list with the numbers a client needs to fetch the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub request: PageRequest,
    pub total: u64,
}

impl<T> Page<T> {
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            request: self.request,
            total: self.total,
        }
    }

    pub fn pagination(&self) -> Pagination {
        Pagination {
            page: self.request.page,
            limit: self.request.limit,
            total: self.total,
        }
    }
}

/// The `pagination` object of list responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Pagination {
    pub page: u32,
    pub limit: u32,
    pub total: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_to_the_first_twenty() {
        let request = PageRequest::new(None, None).unwrap();
        assert_eq!(
            (request.page(), request.limit(), request.offset()),
            (1, 20, 0)
        );
    }

    #[test]
    fn computes_offsets() {
        assert_eq!(PageRequest::new(Some(3), Some(50)).unwrap().offset(), 100);
    }

    #[test]
    fn refuses_out_of_range_values_by_field() {
        let errors = PageRequest::new(Some(0), Some(101)).unwrap_err();
        let fields: Vec<&str> = errors.fields().iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["page", "limit"]);
        assert!(PageRequest::new(None, Some(0)).is_err());
        assert!(PageRequest::new(Some(-1), None).is_err());
    }
}
