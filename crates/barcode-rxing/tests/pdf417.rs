//! The reader on generated licence backs: what the domain's AAMVA parser makes of the payload.

#![allow(clippy::unwrap_used)]

use idconsent_barcode_rxing::{RxingPdf417, fixtures};
use idconsent_verification::BarcodeReader;
use idconsent_verification::aamva::{compose_aamva, parse_aamva};

fn payload() -> String {
    compose_aamva(
        "636014",
        &[
            ("DAQ", "D1234567"),
            ("DCS", "RIVERA"),
            ("DAC", "MARISOL"),
            ("DAD", "ELENA"),
            ("DBB", "04151988"),
            ("DBA", "04152030"),
            ("DBD", "04152022"),
            ("DBC", "2"),
            ("DAJ", "CA"),
            ("DCG", "USA"),
        ],
    )
}

#[tokio::test]
async fn a_generated_licence_back_reads_back_field_for_field() {
    let back = fixtures::licence_back(&payload());
    let read = RxingPdf417.read_pdf417(&back).await.unwrap().unwrap();
    assert_eq!(read, payload());
    let card = parse_aamva(&read).unwrap();
    assert_eq!(card.document_number, "D1234567");
    assert_eq!(
        (card.first_name.as_str(), card.last_name.as_str()),
        ("MARISOL", "RIVERA")
    );
    assert_eq!(card.date_of_birth.to_string(), "1988-04-15");
    assert_eq!(card.expiry_date.to_string(), "2030-04-15");
}

#[tokio::test]
async fn an_image_without_a_symbol_has_none() {
    let blank = image::RgbImage::from_pixel(800, 500, image::Rgb([230, 230, 230]));
    let mut bytes = std::io::Cursor::new(Vec::new());
    blank.write_to(&mut bytes, image::ImageFormat::Png).unwrap();
    assert_eq!(
        RxingPdf417.read_pdf417(&bytes.into_inner()).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn the_reader_passes_the_barcode_reader_contract() {
    let short = compose_aamva("636015", &[("DAQ", "X1"), ("DCS", "LEE"), ("DAC", "KIM")]);
    let samples = [
        (fixtures::licence_back(&payload()), payload()),
        (fixtures::licence_back(&short), short),
    ];
    let blank = image::RgbImage::from_pixel(800, 500, image::Rgb([230, 230, 230]));
    let mut bytes = std::io::Cursor::new(Vec::new());
    blank.write_to(&mut bytes, image::ImageFormat::Png).unwrap();
    idconsent_verification::analysis_contract::barcode_reader(
        &RxingPdf417,
        &samples,
        &bytes.into_inner(),
    )
    .await;
}
