#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The MRZ and AAMVA parsers against specimens, tampered reads and OCR noise.

use idconsent_kernel::CalendarDate;
use idconsent_verification::aamva::{AamvaData, AamvaError, compose_aamva, parse_aamva};
use idconsent_verification::mrz::{
    MrzData, MrzError, MrzFormat, check_digit, compose_td1, compose_td3, parse_mrz,
};

const TD3_LINE1: &str = "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<";
const TD3_LINE2: &str = "L898902C36UTO7408122F1204159ZE184226B<<<<<10";
const TD1_LINES: [&str; 3] = [
    "I<UTOD231458907<<<<<<<<<<<<<<<",
    "7408122F1204159UTO<<<<<<<<<<<6",
    "ERIKSSON<<ANNA<MARIA<<<<<<<<<<",
];

fn date(text: &str) -> CalendarDate {
    CalendarDate::parse(text).unwrap()
}

/// Parses lines joined as OCR would print them, in 2026.
fn parse<S: AsRef<str>>(lines: &[S]) -> Result<MrzData, MrzError> {
    let lines: Vec<&str> = lines.iter().map(AsRef::as_ref).collect();
    parse_mrz(&lines.join("\n"), 2026)
}

fn td3(line2: &str) -> Result<MrzData, MrzError> {
    parse(&[TD3_LINE1, line2])
}

/// A passport of Jane Doe with the given number and dates.
fn passport(number: &str, birth: &str, expiry: &str) -> [String; 2] {
    compose_td3(
        "P", "UTO", "DOE", "JANE", number, "UTO", birth, 'F', expiry, "",
    )
}

/// Replaces the character at `index` of a line.
fn replaced(line: &str, index: usize, c: char) -> String {
    let mut chars: Vec<char> = line.chars().collect();
    chars[index] = c;
    chars.into_iter().collect()
}

#[test]
fn check_digits_follow_icao_9303() {
    assert_eq!(check_digit("L898902C3"), '6');
    assert_eq!(check_digit("740812"), '2');
    assert_eq!(check_digit("120415"), '9');
    assert_eq!(check_digit("ZE184226B<<<<<"), '1');
    assert_eq!(check_digit("D23145890"), '7');
    assert_eq!(check_digit("<<<<"), '0');
}

#[test]
fn the_td3_specimen_parses() {
    let data = td3(TD3_LINE2).unwrap();
    assert_eq!(data.format, MrzFormat::Td3);
    assert_eq!(data.document_code, "P");
    assert_eq!(data.issuing_state, "UTO");
    assert_eq!(data.surname, "ERIKSSON");
    assert_eq!(data.given_names, "ANNA MARIA");
    assert_eq!(data.document_number, "L898902C3");
    assert_eq!(data.nationality, "UTO");
    assert_eq!(data.birth_date, date("1974-08-12"));
    assert_eq!(data.sex, Some('F'));
    assert_eq!(data.expiry_date, date("2012-04-15"));
    assert_eq!(data.optional_data, "ZE184226B");
    let json = serde_json::to_value(&data).unwrap();
    assert_eq!(json["format"], "TD3");
    assert_eq!(json["birthDate"], "1974-08-12");
    assert_eq!(json["givenNames"], "ANNA MARIA");
}

#[test]
fn the_td1_specimen_parses() {
    let data = parse(&TD1_LINES).unwrap();
    assert_eq!(data.format, MrzFormat::Td1);
    assert_eq!(data.document_code, "I");
    assert_eq!(data.issuing_state, "UTO");
    assert_eq!(data.document_number, "D23145890");
    assert_eq!(data.birth_date, date("1974-08-12"));
    assert_eq!(data.expiry_date, date("2012-04-15"));
    assert_eq!(data.sex, Some('F'));
    assert_eq!(data.nationality, "UTO");
    assert_eq!(data.surname, "ERIKSSON");
    assert_eq!(data.given_names, "ANNA MARIA");
    assert_eq!(data.optional_data, "");
}

#[test]
fn compose_reproduces_the_specimens() {
    let (name, number) = (["Eriksson", "Anna Maria"], "L898902C3");
    let td3 = compose_td3(
        "P",
        "UTO",
        name[0],
        name[1],
        number,
        "UTO",
        "740812",
        'F',
        "120415",
        "ZE184226B",
    );
    assert_eq!(td3, [TD3_LINE1, TD3_LINE2]);
    let (number, dates) = ("D23145890", ["740812", "120415"]);
    let td1 = compose_td1(
        "I", "UTO", number, "", dates[0], 'F', dates[1], "UTO", "", name[0], name[1],
    );
    assert_eq!(td1, TD1_LINES);
}

#[test]
fn td2_parses_with_its_own_layout() {
    let line1 = "I<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<";
    let line2 = "D231458907UTO7408122F1204159<<<<<<<6";
    let data = parse(&[line1, line2]).unwrap();
    assert_eq!(data.format, MrzFormat::Td2);
    assert_eq!(data.document_number, "D23145890");
    assert_eq!(data.surname, "ERIKSSON");
    assert_eq!(data.expiry_date, date("2012-04-15"));
    let tampered = replaced(line2, 35, '7');
    assert_eq!(
        parse(&[line1, &tampered]),
        Err(MrzError::CheckDigit("composite"))
    );
}

#[test]
fn each_tampered_check_digit_names_its_field() {
    // Digits chosen so no single O/0, I/1, S/5, B/8 swap of the number matches them instead.
    let cases = [
        (9, '1', "documentNumber"),
        (19, '3', "birthDate"),
        (27, '0', "expiryDate"),
        (42, '2', "optionalData"),
        (43, '1', "composite"),
    ];
    for (index, digit, field) in cases {
        let line2 = replaced(TD3_LINE2, index, digit);
        assert_eq!(td3(&line2), Err(MrzError::CheckDigit(field)), "{line2}");
    }
    // With '1' the swap 0→O would match the number's check digit; the composite catches it.
    let td1_cases = [
        (0, 14, '2', "documentNumber"),
        (0, 14, '1', "composite"),
        (1, 6, '3', "birthDate"),
        (1, 14, '3', "expiryDate"),
        (1, 29, '7', "composite"),
    ];
    for (line, index, digit, field) in td1_cases {
        let mut lines = TD1_LINES.map(String::from);
        lines[line] = replaced(&lines[line], index, digit);
        assert_eq!(parse(&lines), Err(MrzError::CheckDigit(field)), "{lines:?}");
    }
}

#[test]
fn a_changed_field_fails_its_check_digit() {
    let birth = replaced(TD3_LINE2, 15, '1');
    assert_eq!(td3(&birth), Err(MrzError::CheckDigit("birthDate")));
    let number = replaced(TD3_LINE2, 2, '7');
    assert_eq!(td3(&number), Err(MrzError::CheckDigit("documentNumber")));
}

#[test]
fn ocr_confusions_in_dates_and_numbers_are_repaired() {
    // O for 0 in the birth date, S for 5 in the expiry date, 'O' as a check digit.
    let data = td3("L898902C36UTO74O8122F12041S9ZE184226B<<<<<1O").unwrap();
    assert_eq!(data.birth_date, date("1974-08-12"));
    assert_eq!(data.expiry_date, date("2012-04-15"));
    // O for 0 in the document number.
    let data = td3(&replaced(TD3_LINE2, 5, 'O')).unwrap();
    assert_eq!(data.document_number, "L898902C3");
    // S for 5, and 0 for O, in composed document numbers.
    for (number, misread) in [("X5K27Q4M1", "XSK27Q4M1"), ("XOK27Q4M1", "X0K27Q4M1")] {
        let [line1, line2] = passport(number, "900101", "300101");
        let data = parse(&[line1, line2.replacen(number, misread, 1)]).unwrap();
        assert_eq!(data.document_number, number);
    }
    // Digits in letter fields.
    let noisy = TD3_LINE1
        .replace("ERIKSSON", "ERIK55ON")
        .replace("<UTO", "<UT0");
    let data = parse(&[&noisy, TD3_LINE2]).unwrap();
    assert_eq!(
        (data.surname.as_str(), data.issuing_state.as_str()),
        ("ERIKSSON", "UTO")
    );
}

#[test]
fn a_check_digit_is_never_bent_to_match() {
    // A letter that has no digit reading cannot stand for a check digit.
    let line2 = replaced(TD3_LINE2, 19, 'K');
    assert_eq!(td3(&line2), Err(MrzError::CheckDigit("birthDate")));
}

#[test]
fn noisy_ocr_text_still_parses() {
    // Lower case, spaces inside lines, one trailing filler missing, stray lines around.
    let line1 = TD3_LINE1[..43].to_lowercase().replace("<<anna", " <<anna ");
    let line2 = TD3_LINE2.replace("UTO", " UTO");
    let text = format!("  PASSPORT  PASSEPORT \n\nUtopia\n  {line1} \n{line2}\n\n 3 \n");
    let data = parse_mrz(&text, 2026).unwrap();
    assert_eq!(data.surname, "ERIKSSON");
    assert_eq!(data.document_number, "L898902C3");
    // Guillemets and '(' between fillers read as fillers; a '(' elsewhere is a stray mark.
    let line1 = TD3_LINE1
        .replace("<<<<", "<<«<")
        .replace("ERIKSSON", "ERIK(SSON");
    let line2 = TD3_LINE2.replace("B<<<<<", "B<<(<<");
    assert_eq!(parse(&[&line1, &line2]).unwrap().surname, "ERIKSSON");
}

#[test]
fn garbage_is_not_a_zone() {
    assert_eq!(
        parse(&["483920571638204957163820495716"]),
        Err(MrzError::NotFound)
    );
    assert_eq!(parse_mrz("", 2026), Err(MrzError::NotFound));
    assert_eq!(parse(&[TD3_LINE1]), Err(MrzError::NotFound));
}

#[test]
fn impossible_dates_are_refused() {
    let birth = passport("AB1234567", "000231", "300101");
    assert_eq!(parse(&birth), Err(MrzError::BadDate("birthDate")));
    let expiry = passport("AB1234567", "900101", "301301");
    assert_eq!(parse(&expiry), Err(MrzError::BadDate("expiryDate")));
}

#[test]
fn names_with_unreadable_digits_are_refused() {
    let line1 = TD3_LINE1.replace("ANNA", "AN3A");
    assert_eq!(
        parse(&[&line1, TD3_LINE2]),
        Err(MrzError::Unreadable("name"))
    );
}

#[test]
fn long_td1_document_numbers_continue_in_optional_data() {
    let (number, name) = ("LZ6311T475", ["MUSTERMANN", "ERIKA"]);
    let lines = compose_td1(
        "ID", "D", number, "OPT", "640812", 'F', "270101", "D", "", name[0], name[1],
    );
    assert_eq!(&lines[0][14..15], "<");
    let data = parse(&lines).unwrap();
    assert_eq!(data.document_code, "ID");
    assert_eq!(data.issuing_state, "D");
    assert_eq!(data.document_number, number);
    assert_eq!(data.optional_data, "OPT");
    assert_eq!(data.birth_date, date("1964-08-12"));
    assert_eq!(data.expiry_date, date("2027-01-01"));
}

/// A small linear congruential generator: reproducible fields without a dependency.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }

    fn text(&mut self, alphabet: &[u8], min: usize, max: usize) -> String {
        let len = min + self.below(max - min + 1);
        (0..len)
            .map(|_| char::from(alphabet[self.below(alphabet.len())]))
            .collect()
    }

    /// A YYMMDD date and the date it means in 2026 for the given earliest year.
    fn date(&mut self, earliest: usize) -> (String, CalendarDate) {
        let (yy, mm, dd) = (self.below(100), 1 + self.below(12), 1 + self.below(28));
        let year = if 1900 + yy >= earliest {
            1900 + yy
        } else {
            2000 + yy
        };
        (
            format!("{yy:02}{mm:02}{dd:02}"),
            date(&format!("{year}-{mm:02}-{dd:02}")),
        )
    }
}

const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

#[test]
fn compose_then_parse_round_trips() {
    let mut rng = Lcg(20_260_101);
    for round in 0..400 {
        let state = ["UTO", "D", "FRA", "GBR", "NLD"][rng.below(5)];
        let surname = rng.text(LETTERS, 1, 10);
        let given = format!("{} {}", rng.text(LETTERS, 1, 6), rng.text(LETTERS, 1, 6));
        // Births in 1927..=2026, expiries in 1976..=2075.
        let (birth, birth_date) = rng.date(1927);
        let (expiry, expiry_date) = rng.date(1976);
        let sex = ['M', 'F', '<'][rng.below(3)];
        let td1 = round % 2 == 1;
        let (lines, number, optional) = if td1 {
            let (number, optional) = (rng.text(ALNUM, 5, 12), rng.text(ALNUM, 0, 2));
            let lines = compose_td1(
                "I", state, &number, &optional, &birth, sex, &expiry, state, "", &surname, &given,
            );
            (lines.to_vec(), number, optional)
        } else {
            let (number, personal) = (rng.text(ALNUM, 5, 9), rng.text(ALNUM, 0, 14));
            let lines = compose_td3(
                "P", state, &surname, &given, &number, state, &birth, sex, &expiry, &personal,
            );
            (lines.to_vec(), number, personal)
        };
        let data = parse(&lines).unwrap_or_else(|e| panic!("{e}: {lines:?}"));
        assert_eq!(
            data.format,
            if td1 { MrzFormat::Td1 } else { MrzFormat::Td3 }
        );
        assert_eq!(data.document_number, number, "{lines:?}");
        assert_eq!(data.optional_data, optional, "{lines:?}");
        assert_eq!((data.surname, data.given_names), (surname, given));
        assert_eq!(
            (data.issuing_state.as_str(), data.nationality.as_str()),
            (state, state)
        );
        assert_eq!(
            (data.birth_date, data.expiry_date),
            (birth_date, expiry_date)
        );
        assert_eq!(data.sex, (sex != '<').then_some(sex));
    }
}

// --- AAMVA -----------------------------------------------------------------------------------

const FIELDS: &[(&str, &str)] = &[
    ("DAQ", "D1234567"),
    ("DCS", "PUBLIC"),
    ("DAC", "JOHN"),
    ("DAD", "QUINCY"),
    ("DBB", "07041980"),
    ("DBA", "07042030"),
    ("DBD", "07042022"),
    ("DBC", "1"),
    ("DAJ", "CA"),
    ("DCG", "USA"),
];

/// The sample fields with some changed; an empty value leaves the element out.
fn with(changes: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let changed = |id: &str| changes.iter().any(|(changed, _)| *changed == id);
    let kept = FIELDS.iter().copied().filter(|(id, _)| !changed(id));
    kept.chain(
        changes
            .iter()
            .copied()
            .filter(|(_, value)| !value.is_empty()),
    )
    .collect()
}

fn aamva(fields: &[(&str, &str)]) -> Result<AamvaData, AamvaError> {
    parse_aamva(&compose_aamva("636014", fields))
}

#[test]
fn a_composed_payload_parses() {
    let payload = compose_aamva("636014", FIELDS);
    assert!(payload.starts_with("@\n\x1e\rANSI 636014100001DL00310"));
    let data = parse_aamva(&payload).unwrap();
    assert_eq!(data.issuer_id, "636014");
    assert_eq!(data.version, 10);
    assert_eq!(data.first_name, "JOHN");
    assert_eq!(data.middle_names.as_deref(), Some("QUINCY"));
    assert_eq!(data.last_name, "PUBLIC");
    assert_eq!(data.date_of_birth, date("1980-07-04"));
    assert_eq!(data.document_number, "D1234567");
    assert_eq!(data.expiry_date, date("2030-07-04"));
    assert_eq!(data.issue_date, Some(date("2022-07-04")));
    assert_eq!(data.sex, Some('M'));
    assert_eq!(data.country, "USA");
    assert_eq!(data.jurisdiction.as_deref(), Some("CA"));
    let json = serde_json::to_value(&data).unwrap();
    assert_eq!(json["dateOfBirth"], "1980-07-04");
    assert_eq!(json["issuerId"], "636014");
    // A trailing segment terminator after the last subfile is tolerated.
    assert_eq!(parse_aamva(&format!("{payload}\r")).unwrap(), data);
}

#[test]
fn every_required_element_is_required() {
    for id in ["DAQ", "DCS", "DAC", "DBB", "DBA"] {
        assert_eq!(
            aamva(&with(&[(id, "")])),
            Err(AamvaError::Missing(id)),
            "{id}"
        );
    }
    assert_eq!(
        aamva(&with(&[("DCS", "   ")])),
        Err(AamvaError::Missing("DCS"))
    );
}

#[test]
fn optional_elements_may_be_absent() {
    let absent = [
        ("DAD", ""),
        ("DBD", ""),
        ("DBC", ""),
        ("DAJ", ""),
        ("DCG", ""),
    ];
    let data = aamva(&with(&absent)).unwrap();
    assert_eq!((data.middle_names, data.issue_date), (None, None));
    assert_eq!((data.sex, data.jurisdiction), (None, None));
    assert_eq!(data.country, "USA");
}

#[test]
fn old_versions_give_names_in_dct() {
    let old = [
        ("DAC", ""),
        ("DAD", ""),
        ("DCT", "JOHN,QUINCY ADAMS"),
        ("DBC", "2"),
    ];
    let data = aamva(&with(&old)).unwrap();
    assert_eq!(data.first_name, "JOHN");
    assert_eq!(data.middle_names.as_deref(), Some("QUINCY ADAMS"));
    assert_eq!(data.sex, Some('F'));
}

#[test]
fn tampered_structure_is_refused() {
    let payload = compose_aamva("636014", FIELDS);
    let structure = |text: &str| matches!(parse_aamva(text), Err(AamvaError::Structure(_)));
    // Offset one off, in either direction.
    assert!(structure(&payload.replacen("DL0031", "DL0032", 1)));
    assert!(structure(&payload.replacen("DL0031", "DL0030", 1)));
    // Length disagreeing with the subfile.
    let length: usize = payload[27..31].parse().unwrap();
    let designator = format!("DL0031{length:04}");
    let longer = format!("DL0031{:04}", length + 1);
    assert!(structure(&payload.replacen(&designator, &longer, 1)));
    // Entry count disagreeing with the designators.
    assert!(structure(&payload.replacen("100001DL", "100002DL", 1)));
    // Truncated, garbled, extra data, wrong separators, non-numeric header.
    assert!(structure(&payload[..payload.len() - 5]));
    assert!(structure(&payload[..25]));
    assert!(structure(&format!("{payload}DAQX\r")));
    assert!(structure(&payload.replacen("\x1e", "\x1c", 1)));
    assert!(structure(&payload.replacen("636014", "63601X", 1)));
    assert!(structure(&payload.replacen("DAJCA", "\u{1}AJCA", 1)));
}

#[test]
fn canadian_dates_are_year_first() {
    let canadian = [
        ("DCG", "CAN"),
        ("DBB", "19800704"),
        ("DBA", "20301231"),
        ("DBD", ""),
    ];
    let data = aamva(&with(&canadian)).unwrap();
    assert_eq!(data.country, "CAN");
    assert_eq!(data.date_of_birth, date("1980-07-04"));
    assert_eq!(data.expiry_date, date("2030-12-31"));
    // The US order on a Canadian card does not make a date.
    let mixed = [("DCG", "CAN"), ("DBB", "19800704"), ("DBA", "20301231")];
    assert_eq!(aamva(&with(&mixed)), Err(AamvaError::BadDate("DBD")));
}

#[test]
fn impossible_dates_are_bad() {
    let bad = [
        ("DBB", "02301990"),
        ("DBA", "13012030"),
        ("DBD", "2022"),
        ("DBB", "0704198O"),
    ];
    for (id, value) in bad {
        assert_eq!(
            aamva(&with(&[(id, value)])),
            Err(AamvaError::BadDate(id)),
            "{value}"
        );
    }
}

#[test]
fn other_text_is_not_aamva() {
    let texts = [
        "",
        "hello world",
        "@",
        TD3_LINE1,
        "%CAANYTOWN^DOE$JOHN^?",
        "@\n\x1e\rAAMVA63",
    ];
    for text in texts {
        assert_eq!(parse_aamva(text), Err(AamvaError::NotAamva), "{text:?}");
    }
}
