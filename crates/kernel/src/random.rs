//! Randomness as a port: OTPs, tokens, keys and ids draw from a [`RandomSource`].

use std::fmt;
use std::sync::Mutex;

/// A source of random bytes.
///
/// Production code uses [`OsRandom`] (the operating system's CSPRNG). Tests may use
/// [`SeededRandom`] to make ids and codes repeatable; it is not secure and must never be wired
/// into a server.
pub trait RandomSource: Send + Sync + fmt::Debug {
    fn fill(&self, dest: &mut [u8]);
}

impl dyn RandomSource + '_ {
    pub fn bytes<const N: usize>(&self) -> [u8; N] {
        let mut buf = [0u8; N];
        self.fill(&mut buf);
        buf
    }

    pub fn u64(&self) -> u64 {
        u64::from_le_bytes(self.bytes::<8>())
    }

    pub fn u128(&self) -> u128 {
        u128::from_le_bytes(self.bytes::<16>())
    }

    /// A uniformly distributed integer in `0..bound` (rejection sampling, no modulo bias).
    pub fn below(&self, bound: u64) -> u64 {
        assert!(bound > 0, "bound must be positive");
        let zone = u64::MAX - (u64::MAX % bound);
        loop {
            let value = self.u64();
            if value < zone {
                return value % bound;
            }
        }
    }

    /// A string of `len` decimal digits, uniformly distributed (leading zeros allowed),
    /// as one-time passcodes use.
    pub fn digits(&self, len: usize) -> String {
        (0..len)
            .map(|_| char::from(b'0' + self.below(10) as u8))
            .collect()
    }

    /// `len` random bytes as lowercase hex.
    pub fn hex(&self, len: usize) -> String {
        let mut buf = vec![0u8; len];
        self.fill(&mut buf);
        let mut out = String::with_capacity(len * 2);
        for byte in buf {
            out.push(HEX[usize::from(byte >> 4)] as char);
            out.push(HEX[usize::from(byte & 0x0f)] as char);
        }
        out
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The operating system's cryptographically secure generator.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsRandom;

impl RandomSource for OsRandom {
    fn fill(&self, dest: &mut [u8]) {
        // getrandom fails only when the OS has no entropy source at all; continuing without
        // randomness would mint guessable secrets, so stopping is the only safe answer.
        #[allow(clippy::expect_used)]
        getrandom::fill(dest).expect("the operating system random source is unavailable");
    }
}

/// A deterministic generator (SplitMix64) for tests that want repeatable output.
#[derive(Debug)]
pub struct SeededRandom {
    state: Mutex<u64>,
}

impl SeededRandom {
    pub fn new(seed: u64) -> Self {
        Self {
            state: Mutex::new(seed),
        }
    }

    fn next(&self) -> u64 {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl RandomSource for SeededRandom {
    fn fill(&self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(8) {
            let bytes = self.next().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn digits_have_the_requested_length_and_only_digits() {
        let random: Arc<dyn RandomSource> = Arc::new(OsRandom);
        for _ in 0..100 {
            let code = random.digits(6);
            assert_eq!(code.len(), 6);
            assert!(code.bytes().all(|b| b.is_ascii_digit()));
        }
    }

    #[test]
    fn digits_cover_every_value() {
        let random: Arc<dyn RandomSource> = Arc::new(SeededRandom::new(7));
        let mut seen = [false; 10];
        for _ in 0..1_000 {
            seen[usize::from(random.digits(1).as_bytes()[0] - b'0')] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn seeded_random_repeats_and_os_random_does_not() {
        let a: Arc<dyn RandomSource> = Arc::new(SeededRandom::new(1));
        let b: Arc<dyn RandomSource> = Arc::new(SeededRandom::new(1));
        assert_eq!(a.hex(16), b.hex(16));
        let os: Arc<dyn RandomSource> = Arc::new(OsRandom);
        assert_ne!(os.hex(16), os.hex(16));
    }
}
