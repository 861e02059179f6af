//! The time of each analysis stage of one verification, on generated documents: the MRZ
//! reader's clean-up, the whole MRZ read (clean-up and the Tesseract process), parsing, the
//! liveness signals of a selfie, and a licence back's PDF417. Needs `scripts/setup-identity.sh`.
//! `taskset -c 0 cargo bench -p idconsent-ocr-tesseract --bench stages` (docs/performance.md).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use idconsent_barcode_rxing::RxingPdf417;
use idconsent_image_analysis::ImageAnalysis;
use idconsent_ocr_tesseract::{TesseractMrz, fixtures, prepare};
use idconsent_verification::aamva::compose_aamva;
use idconsent_verification::mrz::{parse_mrz, specimen_td3};
use idconsent_verification::{BarcodeReader, ImageAnalyzer, MrzReader};

fn stages(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/models");
    let reader = TesseractMrz::locate(Path::new("tesseract"), &models, 1)
        .expect("run scripts/setup-identity.sh first");
    let mrz = specimen_td3();
    let passport = fixtures::passport(&mrz, None, 1.5).unwrap();
    let text = runtime.block_on(reader.read_mrz(&passport)).unwrap();
    let selfie = idconsent_image_analysis::fixtures::natural(1);
    let payload = compose_aamva(
        "636014",
        &[
            ("DAQ", "D1234567"),
            ("DCS", "RIVERA"),
            ("DAC", "MARISOL"),
            ("DBB", "04151988"),
            ("DBA", "04152030"),
        ],
    );
    let licence = idconsent_barcode_rxing::fixtures::licence_back(&payload);

    let mut group = c.benchmark_group("identity");
    group.sample_size(10);
    group.bench_function("mrz clean-up (1250×880 JPEG)", |b| {
        b.iter(|| prepare(&passport).unwrap())
    });
    group.bench_function("mrz read (clean-up + tesseract)", |b| {
        b.iter(|| runtime.block_on(reader.read_mrz(&passport)).unwrap())
    });
    group.bench_function("mrz parse", |b| b.iter(|| parse_mrz(&text, 2026).unwrap()));
    group.bench_function("liveness signals (640×480 JPEG)", |b| {
        b.iter(|| {
            runtime
                .block_on(ImageAnalysis.liveness_signals(&selfie))
                .unwrap()
        })
    });
    group.bench_function("pdf417 read (licence back)", |b| {
        b.iter(|| runtime.block_on(RxingPdf417.read_pdf417(&licence)).unwrap())
    });
    group.finish();
}

criterion_group!(benches, stages);
criterion_main!(benches);
