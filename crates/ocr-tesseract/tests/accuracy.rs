//! Accuracy on a generated set (docs/identity.md): passports and ID-card backs with random
//! names, numbers, dates and tilts, read and parsed; the figures of docs/identity.md come from
//! `cargo test -p idconsent-ocr-tesseract --test accuracy -- --ignored --nocapture`. The test
//! fails below 95 % field-for-field reads; a wrong read that passes every check digit fails it
//! at once (that would be a silent error, the one thing the parser must never produce).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use idconsent_ocr_tesseract::{TesseractMrz, fixtures};
use idconsent_verification::MrzReader;
use idconsent_verification::mrz::{compose_td1, compose_td3, parse_mrz};

struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
    fn chars(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| char::from(alphabet[self.below(alphabet.len() as u64) as usize]))
            .collect()
    }
    fn date(&mut self, from: u64, years: u64) -> String {
        let month = 1 + self.below(12);
        let day = 1 + self.below(28);
        format!("{:02}{month:02}{day:02}", (from + self.below(years)) % 100)
    }
}

const SURNAMES: [&str; 10] = [
    "ERIKSSON",
    "MUSTERMANN",
    "OKAFOR",
    "NGUYEN",
    "GARCIA LOPEZ",
    "OBRIEN",
    "KOWALSKA",
    "SATO",
    "VAN DER BERG",
    "ABDULLAH",
];
const GIVEN: [&str; 8] = [
    "ANNA MARIA",
    "ERIKA",
    "CHINEDU",
    "THI MAI",
    "JOSE LUIS",
    "SEAN",
    "ZOFIA",
    "YUKI",
];
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement over 60 generated documents (about a minute); docs/identity.md"]
async fn generated_documents_read_back() {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/models");
    let reader = TesseractMrz::locate(Path::new("tesseract"), &models, 2)
        .expect("run scripts/setup-identity.sh first");
    let mut random = Lcg(2026);
    let (mut exact, mut refused, mut total) = (0, 0, 0);
    for n in 0..60 {
        let surname = random.pick(&SURNAMES);
        let given = random.pick(&GIVEN);
        let number = random.chars(ALNUM, 9);
        let birth = random.date(50, 50);
        let expiry = random.date(27, 10);
        let sex = if random.below(2) == 0 { 'F' } else { 'M' };
        let tilt = (random.below(81) as f64 - 40.0) / 10.0;
        let (lines, image): (Vec<String>, Vec<u8>) = if n % 3 == 2 {
            let mrz = compose_td1(
                "I", "UTO", &number, "", &birth, sex, &expiry, "UTO", "", surname, given,
            );
            (mrz.to_vec(), fixtures::id_card_back(&mrz, tilt).unwrap())
        } else {
            let mrz = compose_td3(
                "P", "UTO", surname, given, &number, "UTO", &birth, sex, &expiry, "",
            );
            (mrz.to_vec(), fixtures::passport(&mrz, None, tilt).unwrap())
        };
        total += 1;
        let text = reader.read_mrz(&image).await.unwrap();
        match parse_mrz(&text, 2026) {
            Ok(data) => {
                let right = data.surname == surname
                    && data.given_names == given
                    && data.document_number == number
                    && data.sex == Some(sex);
                assert!(
                    right,
                    "a wrong read passed every check digit: {lines:?} → {data:?}"
                );
                exact += 1;
            }
            Err(error) => {
                refused += 1;
                println!("refused ({error}), tilt {tilt}: {lines:?}\n{text}");
            }
        }
    }
    println!("{exact}/{total} read field for field, {refused} refused, 0 wrong");
    assert!(exact * 100 >= total * 95, "{exact}/{total}");
}
