//! The liveness signals of one image. A photographed screen carries a periodic pattern (the
//! beat between the screen's pixel grid and the camera's sensor): one sharp spectral peak. A
//! printed photo carries the halftone screen: a two-dimensional grid, a peak *and* its
//! perpendicular twin. Natural skin and backgrounds have smooth, peak-free spectra.

use idconsent_verification::LivenessSignals;
use image::DynamicImage;
use image::imageops::FilterType;
use rustfft::FftPlanner;
use rustfft::num_complex::Complex;

/// The side of the square the spectrum is computed on.
const SPECTRUM_SIDE: usize = 256;
/// Frequencies below this radius (in bins) are the picture's content, not a texture.
const LOW_CUTOFF: f64 = 16.0;
/// The longest side sharpness is measured at, so the figure does not depend on resolution.
const SHARPNESS_SIDE: u32 = 512;

/// Resolutions of common screens and phone screenshots (either orientation).
const SCREEN_SIZES: [(u32, u32); 16] = [
    (1920, 1080),
    (1280, 720),
    (1366, 768),
    (1440, 900),
    (1536, 864),
    (2560, 1440),
    (3840, 2160),
    (1170, 2532),
    (1179, 2556),
    (1290, 2796),
    (1284, 2778),
    (1125, 2436),
    (1242, 2688),
    (828, 1792),
    (750, 1334),
    (1080, 2400),
];

/// Measures every signal; `jpeg_quality` comes from the file, not the pixels.
pub fn measure(image: &DynamicImage, jpeg_quality: Option<u8>) -> LivenessSignals {
    let (width, height) = (image.width(), image.height());
    let (moire, halftone) = periodicity(image);
    LivenessSignals {
        moire: round2(moire),
        halftone: round2(halftone),
        sharpness: round2(sharpness(image)),
        pixels: u64::from(width) * u64::from(height),
        screen_sized: SCREEN_SIZES
            .iter()
            .any(|&(w, h)| (width, height) == (w, h) || (width, height) == (h, w)),
        jpeg_quality,
    }
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

/// Variance of the 4-neighbour Laplacian of the grey image.
fn sharpness(image: &DynamicImage) -> f64 {
    let grey = if image.width().max(image.height()) > SHARPNESS_SIDE {
        image
            .resize(SHARPNESS_SIDE, SHARPNESS_SIDE, FilterType::Triangle)
            .to_luma8()
    } else {
        image.to_luma8()
    };
    let (w, h) = (grey.width() as usize, grey.height() as usize);
    if w < 3 || h < 3 {
        return 0.0;
    }
    let pixels = grey.as_raw();
    let at = |x: usize, y: usize| f64::from(pixels[y * w + x]);
    let mut sum = 0.0;
    let mut squares = 0.0;
    let mut count = 0.0;
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            let laplacian =
                at(x - 1, y) + at(x + 1, y) + at(x, y - 1) + at(x, y + 1) - 4.0 * at(x, y);
            sum += laplacian;
            squares += laplacian * laplacian;
            count += 1.0;
        }
    }
    let mean = sum / count;
    squares / count - mean * mean
}

/// `(moire, halftone)`: the strongest spectral peak outside the low frequencies, as a multiple
/// of the mean power around it; and the weaker of that peak and its perpendicular twin.
fn periodicity(image: &DynamicImage) -> (f64, f64) {
    let side = image.width().min(image.height());
    let left = (image.width() - side) / 2;
    let top = (image.height() - side) / 2;
    let n = SPECTRUM_SIDE;
    let grey = image
        .crop_imm(left, top, side, side)
        .resize_exact(n as u32, n as u32, FilterType::Triangle)
        .to_luma32f();
    let values = grey.as_raw();
    let mean = values.iter().map(|v| f64::from(*v)).sum::<f64>() / values.len() as f64;
    // A Hann window keeps the square's edges from reading as a texture.
    let hann: Vec<f64> = (0..n)
        .map(|i| 0.5 - 0.5 * (2.0 * std::f64::consts::PI * i as f64 / (n - 1) as f64).cos())
        .collect();
    let mut data: Vec<Complex<f64>> = values
        .iter()
        .enumerate()
        .map(|(i, v)| Complex::new((f64::from(*v) - mean) * hann[i / n] * hann[i % n], 0.0))
        .collect();
    let fft = FftPlanner::new().plan_fft_forward(n);
    for row in data.chunks_exact_mut(n) {
        fft.process(row);
    }
    let mut column = vec![Complex::new(0.0, 0.0); n];
    for x in 0..n {
        for y in 0..n {
            column[y] = data[y * n + x];
        }
        fft.process(&mut column);
        for y in 0..n {
            data[y * n + x] = column[y];
        }
    }
    // Power with the zero frequency in the middle; (u, v) in -n/2..n/2.
    let half = (n / 2) as i64;
    let power = |u: i64, v: i64| {
        let x = u.rem_euclid(n as i64) as usize;
        let y = v.rem_euclid(n as i64) as usize;
        data[y * n + x].norm_sqr()
    };
    let surroundings = |u: i64, v: i64| {
        let mut sum = 0.0;
        let mut count = 0.0;
        for dv in -3i64..=3 {
            for du in -3i64..=3 {
                if du.abs().max(dv.abs()) >= 2 {
                    sum += power(u + du, v + dv);
                    count += 1.0;
                }
            }
        }
        sum / count
    };
    let ratio = |u: i64, v: i64| power(u, v) / surroundings(u, v).max(f64::MIN_POSITIVE);

    let mut best = (0.0, 0i64, 0i64);
    // One half-plane is enough: the spectrum of a real image is symmetric.
    for v in 0..half - 4 {
        for u in -half + 4..half - 4 {
            let radius = ((u * u + v * v) as f64).sqrt();
            if radius < LOW_CUTOFF || radius > (half - 4) as f64 {
                continue;
            }
            let found = ratio(u, v);
            if found > best.0 {
                best = (found, u, v);
            }
        }
    }
    let (moire, u, v) = best;
    // The perpendicular twin of (u, v) is (-v, u); allow a bin of slack either way.
    let mut twin: f64 = 0.0;
    for dv in -1..=1 {
        for du in -1..=1 {
            twin = twin.max(ratio(-v + du, u + dv));
        }
    }
    (moire, moire.min(twin))
}
