//! One face comparison: a generated passport page with the astronaut portrait against the
//! portrait itself (both faces found, aligned, embedded). Needs `scripts/setup-identity.sh`.
//! `taskset -c 0 cargo bench -p idconsent-face-dlib --features dlib --bench compare`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use idconsent_face_dlib::DlibFaces;
use idconsent_ocr_tesseract::fixtures;
use idconsent_verification::FaceMatcher;
use idconsent_verification::mrz::compose_td3;

fn compare(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
    let matcher = DlibFaces::locate(&data.join("models")).expect("run scripts/setup-identity.sh");
    let portrait = std::fs::read(data.join("fixtures/faces/astronaut.png")).unwrap();
    let mrz = compose_td3(
        "P", "UTO", "COLLINS", "EILEEN", "N0000001", "UTO", "561119", 'F', "300101", "",
    );
    let passport = fixtures::passport(&mrz, Some(&portrait), 1.0).unwrap();
    let mut group = c.benchmark_group("identity");
    group.sample_size(10);
    group.bench_function("face compare (1250×880 page vs 512×512 selfie)", |b| {
        b.iter(|| {
            runtime
                .block_on(matcher.compare(&passport, &portrait))
                .unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, compare);
criterion_main!(benches);
