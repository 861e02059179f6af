//! The contracts of the analysis ports, as functions over samples the caller provides (the
//! generated documents live with the adapters that can draw them). The scripted engines of
//! [`crate::testing`] and every real engine pass the same checks: `crates/verification/tests`,
//! `crates/ocr-tesseract`, `crates/barcode-rxing`, `crates/image-analysis`, `crates/face-dlib`.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::analysis::{
    BarcodeReader, FaceComparison, FaceMatcher, FaceSource, ImageAnalyzer, ImageRejection,
    MrzReader,
};
use crate::mrz::parse_mrz;
use crate::verdict::{FACE_MATCH, FACE_MISMATCH};

/// An [`MrzReader`]: each sample's text parses to its document number (the zone read whole,
/// every check digit holding); a page without a zone reads as no zone; reads repeat exactly;
/// models are named with a sha256.
pub async fn mrz_reader(reader: &dyn MrzReader, samples: &[(Vec<u8>, &str)], blank: &[u8]) {
    for (image, number) in samples {
        let text = reader.read_mrz(image).await.unwrap();
        let data = parse_mrz(&text, 2026).unwrap_or_else(|error| panic!("{error}: {text}"));
        assert_eq!(data.document_number, *number);
        assert_eq!(reader.read_mrz(image).await.unwrap(), text, "reads repeat");
    }
    let nothing = reader.read_mrz(blank).await.unwrap();
    assert!(parse_mrz(&nothing, 2026).is_err(), "{nothing}");
    for model in reader.models() {
        assert_eq!(model.sha256.len(), 64, "{model:?}");
    }
}

/// A [`BarcodeReader`]: each sample reads back its payload exactly; an image without a
/// symbol reads as `None`.
pub async fn barcode_reader(
    reader: &dyn BarcodeReader,
    samples: &[(Vec<u8>, String)],
    blank: &[u8],
) {
    for (image, payload) in samples {
        assert_eq!(
            reader.read_pdf417(image).await.unwrap().as_deref(),
            Some(payload.as_str())
        );
    }
    assert_eq!(reader.read_pdf417(blank).await.unwrap(), None);
}

/// A [`FaceMatcher`]: the holder is within [`FACE_MATCH`] of the document, someone else at
/// least [`FACE_MISMATCH`] away, a picture without a face says on which side it was missing,
/// and `find_face` agrees with `compare` about which pictures hold a face.
pub async fn face_matcher(
    matcher: &dyn FaceMatcher,
    document: &[u8],
    holder: &[u8],
    someone_else: &[u8],
    faceless: &[u8],
) {
    let distance = |comparison: FaceComparison| match comparison {
        FaceComparison::Distance(distance) => distance,
        other => panic!("no distance: {other:?}"),
    };
    let same = distance(matcher.compare(document, holder).await.unwrap());
    assert!(same <= FACE_MATCH, "the holder at {same}");
    let other = distance(matcher.compare(document, someone_else).await.unwrap());
    assert!(other >= FACE_MISMATCH, "someone else at {other}");
    assert_eq!(
        matcher.compare(document, faceless).await.unwrap(),
        FaceComparison::NoFace(FaceSource::Selfie)
    );
    assert_eq!(
        matcher.compare(faceless, holder).await.unwrap(),
        FaceComparison::NoFace(FaceSource::Document)
    );
    for (image, has_face) in [(holder, true), (someone_else, true), (faceless, false)] {
        assert_eq!(matcher.find_face(image).await.unwrap(), has_face);
    }
}

/// An [`ImageAnalyzer`]: every accepted sample is measured, deterministically; what is not a
/// JPEG, PNG or WebP image is refused as such.
pub async fn image_analyzer(analyzer: &dyn ImageAnalyzer, accepted: &[Vec<u8>]) {
    for image in accepted {
        analyzer.inspect(image).await.unwrap();
        let signals = analyzer.liveness_signals(image).await.unwrap();
        assert_eq!(analyzer.liveness_signals(image).await.unwrap(), signals);
    }
    for refused in [&b"GIF89a"[..], b"", b"%PDF-1.7"] {
        assert_eq!(
            analyzer.inspect(refused).await,
            Err(ImageRejection::NotAnImage)
        );
    }
}
