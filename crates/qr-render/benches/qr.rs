//! QR rendering: encoding (optimal vs fixed mask), direct 1-bit PNG, SVG, and (with
//! `--features resvg-compare`) rasterising the SVG with resvg.
//!
//! `cargo bench -p idconsent-qr-render --features resvg-compare`
#![allow(clippy::unwrap_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use idconsent_kernel::ErrorCorrection;
use idconsent_qr_render::{MaskChoice, QrCodegenRenderer, png, svg};

const PAYLOAD: &str = "idconsent://auth/cs_01JDKXA1B2C3D4E5F6G7H8J9K0ABCDEFGHJKMN";

fn qr(c: &mut Criterion) {
    let optimal = QrCodegenRenderer::new(MaskChoice::Optimal);
    let fixed = QrCodegenRenderer::new(MaskChoice::Fixed(2));
    c.bench_function("encode (optimal mask)", |b| {
        b.iter(|| optimal.encode(PAYLOAD, ErrorCorrection::Medium).unwrap())
    });
    c.bench_function("encode (fixed mask)", |b| {
        b.iter(|| fixed.encode(PAYLOAD, ErrorCorrection::Medium).unwrap())
    });
    let code = optimal.encode(PAYLOAD, ErrorCorrection::Medium).unwrap();
    c.bench_function("png 1-bit 256px", |b| b.iter(|| png(&code, 256).unwrap()));
    c.bench_function("svg 256", |b| b.iter(|| svg(&code, 256)));
    #[cfg(feature = "resvg-compare")]
    c.bench_function("png via resvg 256px", |b| {
        b.iter(|| idconsent_qr_render::png_via_resvg(&code, 256))
    });
}

criterion_group!(benches, qr);
criterion_main!(benches);
