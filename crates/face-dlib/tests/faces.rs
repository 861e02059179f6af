//! The dlib matcher on the standard test portraits that `scripts/setup-identity.sh` takes from
//! the scikit-image wheel (public-domain and CC0 photographs: the NASA astronaut portrait and
//! the "cameraman"), one of them printed on a generated passport. Needs `--features dlib` and
//! the models; without them the test says so (and fails under `REQUIRE_BACKENDS=…,identity`).

#![cfg(feature = "dlib")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use idconsent_face_dlib::DlibFaces;
use idconsent_ocr_tesseract::fixtures;
use idconsent_verification::mrz::compose_td3;
use idconsent_verification::testing::engine_or_skip;
use idconsent_verification::verdict::{FACE_MATCH, FACE_MISMATCH};
use idconsent_verification::{FaceComparison, FaceMatcher, FaceSource};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data")
}

fn matcher() -> Option<(DlibFaces, PathBuf)> {
    let faces = data().join("fixtures/faces");
    let found = DlibFaces::locate(&data().join("models")).and_then(|matcher| {
        if faces.join("astronaut.png").exists() {
            Ok((matcher, faces))
        } else {
            Err("no test portraits: run scripts/setup-identity.sh".into())
        }
    });
    engine_or_skip("face matching", found)
}

fn passport_with(photo: &[u8]) -> Vec<u8> {
    let mrz = compose_td3(
        "P", "UTO", "COLLINS", "EILEEN", "N0000001", "UTO", "561119", 'F', "300101", "",
    );
    fixtures::passport(&mrz, Some(photo), 1.0).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holder_matches_and_someone_else_does_not() {
    let Some((matcher, faces)) = matcher() else {
        return;
    };
    let astronaut = std::fs::read(faces.join("astronaut.png")).unwrap();
    let cameraman = std::fs::read(faces.join("camera.png")).unwrap();
    let document = passport_with(&astronaut);

    let same = matcher.compare(&document, &astronaut).await.unwrap();
    let FaceComparison::Distance(same) = same else {
        panic!("{same:?}")
    };
    assert!(same <= FACE_MATCH, "the holder at {same}");

    let other = matcher.compare(&document, &cameraman).await.unwrap();
    let FaceComparison::Distance(other) = other else {
        panic!("{other:?}")
    };
    assert!(other >= FACE_MISMATCH, "someone else at {other}");
    println!("same person {same:.3}, different person {other:.3}");
    assert_eq!(matcher.models().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_picture_without_a_face_says_where_it_was_missing() {
    let Some((matcher, faces)) = matcher() else {
        return;
    };
    let astronaut = std::fs::read(faces.join("astronaut.png")).unwrap();
    let coffee = std::fs::read(faces.join("coffee.png")).unwrap();
    let blank_passport = passport_with(&coffee);
    assert_eq!(
        matcher
            .compare(&passport_with(&astronaut), &coffee)
            .await
            .unwrap(),
        FaceComparison::NoFace(FaceSource::Selfie)
    );
    assert_eq!(
        matcher.compare(&blank_passport, &astronaut).await.unwrap(),
        FaceComparison::NoFace(FaceSource::Document)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_matcher_passes_the_face_matcher_contract() {
    let Some((matcher, faces)) = matcher() else {
        return;
    };
    let read = |name: &str| std::fs::read(faces.join(name)).unwrap();
    let astronaut = read("astronaut.png");
    idconsent_verification::analysis_contract::face_matcher(
        &matcher,
        &passport_with(&astronaut),
        &astronaut,
        &read("camera.png"),
        &read("coffee.png"),
    )
    .await;
}

/// What the liveness endpoint's face check costs on a clean frame (docs/identity.md): a
/// portrait (HOG proposes, the CNN confirms a crop) and a frame without a face (HOG proposes
/// nothing, the CNN scans the whole frame).
#[tokio::test]
#[ignore = "prints the time of find_face"]
async fn find_face_timing() {
    let Some((matcher, faces)) = matcher() else {
        return;
    };
    let astronaut = std::fs::read(faces.join("astronaut.png")).unwrap();
    let coffee = std::fs::read(faces.join("coffee.png")).unwrap();
    for (name, image) in [("astronaut", astronaut), ("coffee", coffee)] {
        let mut times = Vec::new();
        for _ in 0..5 {
            let started = std::time::Instant::now();
            matcher.find_face(&image).await.unwrap();
            times.push(started.elapsed());
        }
        times.sort();
        println!("{name}: median {:?}", times[2]);
    }
}

/// Eight face checks at once on frames without a face (the slow case): the first is answered,
/// and those that would wait past `FIND_FACE_WAIT` say the detector is busy instead of queueing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn face_checks_do_not_queue_without_bound() {
    let Some((matcher, faces)) = matcher() else {
        return;
    };
    let matcher = std::sync::Arc::new(matcher);
    let coffee = std::fs::read(faces.join("coffee.png")).unwrap();
    let started = std::time::Instant::now();
    let checks: Vec<_> = (0..8)
        .map(|_| {
            let (matcher, coffee) = (matcher.clone(), coffee.clone());
            tokio::spawn(async move { matcher.find_face(&coffee).await })
        })
        .collect();
    let mut answered = 0;
    let mut busy = 0;
    for check in checks {
        match check.await.unwrap() {
            Ok(found) => {
                assert!(!found);
                answered += 1;
            }
            Err(idconsent_verification::AnalysisError::Unavailable(why)) => {
                assert!(why.contains("busy"), "{why}");
                busy += 1;
            }
            Err(other) => panic!("{other}"),
        }
    }
    assert!(
        answered >= 1 && busy >= 1,
        "{answered} answered, {busy} busy"
    );
    println!(
        "{answered} answered, {busy} busy in {:?}",
        started.elapsed()
    );
}
