//! The server's allocator and its one setting: freed memory goes back to the OS at once.
//!
//! mimalloc rather than glibc's malloc: a request allocates many small, short-lived buffers, and
//! glibc's allocator was 12 % of the server's time under load. Built without transparent huge
//! pages (`no_thp`): with them every 2 MiB region it touched stayed resident, 18 MiB more peak
//! RSS for no measurable speed.
//!
//! mimalloc v3 keeps freed pages committed for a second (`purge_delay` = 1000 ms) in case they
//! are wanted again. Under load that second holds every burst's buffers, which is most of the
//! server's peak RSS above its idle set: 85 MiB against 64 MiB with no delay, at the same
//! throughput and CPU per request (docs/performance.md, "memory"). `MIMALLOC_PURGE_DELAY`, when
//! set, still decides.

use libmimalloc_sys::{mi_option_get, mi_option_set, mi_option_t};

/// The allocator itself; the binary names it `#[global_allocator]`.
pub use mimalloc::MiMalloc;

/// `mi_option_purge_delay` in v3's `mi_option_e` (libmimalloc-sys names no constant for it);
/// the test below checks the index against the option's documented default.
const PURGE_DELAY: mi_option_t = 15;

/// Purges freed memory immediately unless `MIMALLOC_PURGE_DELAY` says otherwise. Call it first
/// thing in `main`: it only changes how soon memory is returned, never what is allocated.
pub fn return_freed_memory_promptly() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: setting an option is a plain store into mimalloc's option table, valid at
        // any time and from any thread.
        #[allow(unsafe_code)]
        unsafe {
            mi_option_set(PURGE_DELAY, 0)
        };
    }
}

/// The purge delay in force, in milliseconds.
pub fn purge_delay_millis() -> std::ffi::c_long {
    // SAFETY: reading an option is a plain load from mimalloc's option table.
    #[allow(unsafe_code)]
    unsafe {
        mi_option_get(PURGE_DELAY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test, so that nothing else in this binary changes the option between its steps.
    #[test]
    fn the_index_names_the_purge_delay_and_the_setting_zeroes_it() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // No other option of v3 defaults to 1000.
        assert_eq!(purge_delay_millis(), 1000);
        return_freed_memory_promptly();
        assert_eq!(purge_delay_millis(), 0);
    }
}
