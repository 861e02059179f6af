//! The Tesseract reader on generated documents: what the domain's parser makes of its text.
//! Needs `tesseract` and the model (`scripts/setup-identity.sh`); without them the test says so
//! and passes, unless `REQUIRE_BACKENDS` names `identity` (CI), where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use idconsent_ocr_tesseract::{TesseractMrz, fixtures};
use idconsent_verification::MrzReader;
use idconsent_verification::mrz::{compose_td3, parse_mrz, specimen_td1, specimen_td3};
use idconsent_verification::testing::engine_or_skip;

fn reader() -> Option<TesseractMrz> {
    let models = std::env::var_os("IDC_IDENTITY_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/models"));
    engine_or_skip(
        "OCR",
        TesseractMrz::locate(Path::new("tesseract"), &models, 2),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_passport_reads_back_field_for_field() {
    let Some(reader) = reader() else { return };
    let names = [
        (
            "ERIKSSON",
            "ANNA MARIA",
            "L898902C3",
            "740812",
            'F',
            "320415",
        ),
        ("MUSTERMANN", "ERIKA", "C01X00T47", "640812", 'F', "310801"),
        (
            "OKAFOR",
            "CHINEDU EMEKA",
            "A12345678",
            "920229",
            'M',
            "290101",
        ),
        ("DE LA CRUZ", "JOSE", "X9Y8Z7654", "011231", 'M', "350630"),
    ];
    for (n, (surname, given, number, birth, sex, expiry)) in names.into_iter().enumerate() {
        let mrz = compose_td3(
            "P", "UTO", surname, given, number, "UTO", birth, sex, expiry, "",
        );
        let tilt = [0.0, 1.5, -2.5, 3.0][n];
        let image = fixtures::passport(&mrz, None, tilt).unwrap();
        let text = reader.read_mrz(&image).await.unwrap();
        let data = parse_mrz(&text, 2026).unwrap_or_else(|error| {
            panic!(
                "{surname}: {error}\nprinted:\n{}\n{}\nread:\n{text}",
                mrz[0], mrz[1]
            )
        });
        assert_eq!(data.surname, surname);
        assert_eq!(data.given_names, given);
        assert_eq!(data.document_number, number);
        assert_eq!(data.sex, Some(sex));
    }
    assert_eq!(reader.models()[0].name, "mrz.traineddata");
    assert_eq!(reader.models()[0].sha256.len(), 64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_id_card_back_reads_back() {
    let Some(reader) = reader() else { return };
    let mrz = specimen_td1();
    let image = fixtures::id_card_back(&mrz, -1.0).unwrap();
    let text = reader.read_mrz(&image).await.unwrap();
    let data = parse_mrz(&text, 2026).unwrap_or_else(|error| panic!("{error}: {text}"));
    assert_eq!(data.document_number, "D23145890");
    assert_eq!(data.surname, "ERIKSSON");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_without_a_zone_reads_as_no_zone() {
    let Some(reader) = reader() else { return };
    let blank =
        fixtures::id_card_back(&[String::new(), String::new(), String::new()], 0.0).unwrap();
    let text = reader.read_mrz(&blank).await.unwrap();
    assert!(parse_mrz(&text, 2026).is_err(), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reader_passes_the_mrz_reader_contract() {
    let Some(reader) = reader() else { return };
    let passport = specimen_td3();
    let card = specimen_td1();
    let samples = [
        (
            fixtures::passport(&passport, None, 2.0).unwrap(),
            "L898902C3",
        ),
        (fixtures::id_card_back(&card, -2.0).unwrap(), "D23145890"),
    ];
    let blank =
        fixtures::id_card_back(&[String::new(), String::new(), String::new()], 0.0).unwrap();
    idconsent_verification::analysis_contract::mrz_reader(&reader, &samples, &blank).await;
}
