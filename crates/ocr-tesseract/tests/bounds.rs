//! The clean-up before OCR within a stated memory and time bound on hostile shapes (issue 31,
//! item 4; docs/security.md, "Image preparation"). One test in its own binary: the peak RSS it
//! reads is this process's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use idconsent_image_analysis::fixtures::stripes;
use idconsent_ocr_tesseract::prepare;

/// The most `prepare` may add to the process's peak resident memory for any accepted upload.
const PREPARE_PEAK_MIB: u64 = 256;
/// The longest `prepare` may take on any accepted shape (this crate is optimised in tests too).
const PREPARE_TIME: Duration = Duration::from_secs(10);
/// Past this the watchdog ends the test process, so a regression costs the machine no more.
const WATCHDOG_MIB: u64 = 1536;

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap()
}

/// Resets this process's peak RSS (`VmHWM`) to its current RSS.
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
}

#[test]
fn hostile_shapes_are_refused_and_accepted_ones_prepared_within_the_bound() {
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let rss = status_kib("VmRSS") >> 10;
                if rss > WATCHDOG_MIB {
                    eprintln!("prepare passed {rss} MiB of resident memory: stopped");
                    std::process::exit(101);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };

    // The upload: 64 × 8192 passes the decode bounds (0.5 megapixels, sides within
    // 64–8192) but is no document; an 8192 × 64 strip neither.
    for (width, height) in [(64, 8192), (8192, 64)] {
        let image = stripes(width, height);
        reset_peak();
        let base = status_kib("VmRSS");
        let started = Instant::now();
        let prepared = prepare(&image);
        let (elapsed, grown) = (started.elapsed(), (status_kib("VmHWM") - base) >> 10);
        eprintln!(
            "{width}x{height}: {:?} in {elapsed:?}, peak +{grown} MiB",
            prepared.as_ref().err()
        );
        assert!(prepared.is_err(), "{width}x{height} was prepared");
        assert!(grown < 64, "{width}x{height}: +{grown} MiB");
    }

    // The most extreme shapes still accepted: 4:1 either way, the smallest upscaled 2×, the
    // longest sides, and the most pixels (40 megapixels).
    for (width, height) in [
        (256, 1024),
        (1024, 256),
        (2048, 8192),
        (8192, 2048),
        (700, 2800),
        (7300, 5479),
    ] {
        let image = stripes(width, height);
        reset_peak();
        let base = status_kib("VmRSS");
        let started = Instant::now();
        let prepared = prepare(&image);
        let (elapsed, grown) = (started.elapsed(), (status_kib("VmHWM") - base) >> 10);
        eprintln!("{width}x{height}: prepared in {elapsed:?}, peak +{grown} MiB");
        assert!(prepared.is_ok(), "{width}x{height}: {prepared:?}");
        assert!(grown < PREPARE_PEAK_MIB, "{width}x{height}: +{grown} MiB");
        assert!(elapsed < PREPARE_TIME, "{width}x{height}: {elapsed:?}");
    }
    done.store(true, Ordering::SeqCst);
    watchdog.join().unwrap();
}
