//! Composing zones from fields: the generated documents of tests and load scripts print them.

use super::{CODE, Layout, STATE, TD1, TD3, Zone, after, check_digit, check_of};

/// Upper-cases and turns anything outside the MRZ alphabet (spaces, hyphens) into fillers.
fn field(text: &str) -> String {
    text.chars()
        .map(|c| match c.to_ascii_uppercase() {
            c @ ('A'..='Z' | '0'..='9') => c,
            _ => '<',
        })
        .collect()
}

/// Pads with fillers or truncates to exactly `width` characters.
pub(super) fn fit(text: &str, width: usize) -> String {
    let mut fitted: String = field(text).chars().take(width).collect();
    while fitted.len() < width {
        fitted.push('<');
    }
    fitted
}

/// The fields of a zone to compose; `optional[1]` exists only in TD1.
#[derive(Debug)]
struct Fields<'a> {
    code: &'a str,
    state: &'a str,
    surname: &'a str,
    given_names: &'a str,
    number: &'a str,
    nationality: &'a str,
    birth: &'a str,
    sex: char,
    expiry: &'a str,
    optional: [&'a str; 2],
}

fn compose(layout: &Layout, f: &Fields) -> Vec<String> {
    let mut zone = Zone(vec![vec![b'<'; layout.width]; layout.lines()]);
    zone.write(CODE, f.code);
    zone.write(STATE, f.state);
    let (surname, given) = (field(f.surname.trim()), field(f.given_names.trim()));
    let names = if given.is_empty() {
        surname
    } else {
        format!("{surname}<<{given}")
    };
    zone.write(layout.names, &names);
    let number = field(f.number.trim());
    match layout.extension {
        Some(extension) if number.len() > 9 => {
            // The check digit position holds a filler; the number goes on in optional data.
            let (head, tail) = number.split_at(9);
            zone.write(layout.number, head);
            let optional = format!("{tail}{}<{}", check_digit(&number), f.optional[0]);
            zone.write(extension, &optional);
        }
        _ => {
            zone.write(layout.number, &number);
            zone.write_check(layout.number);
            zone.write(layout.optional[0], f.optional[0]);
        }
    }
    zone.write(layout.optional[1], f.optional[1]);
    zone.write(layout.nationality, f.nationality);
    zone.write(layout.birth, f.birth);
    zone.write_check(layout.birth);
    let sex = match f.sex.to_ascii_uppercase() {
        c @ ('M' | 'F' | 'X') => c as u8,
        _ => b'<',
    };
    zone.set((layout.birth.line, layout.birth.end + 1), sex);
    zone.write(layout.expiry, f.expiry);
    zone.write_check(layout.expiry);
    let optional = layout.optional[0];
    if layout.optional_checked && zone.text(optional).iter().any(|&c| c != b'<') {
        zone.write_check(optional);
    }
    let composite = layout
        .composite
        .iter()
        .flat_map(|&s| zone.text(s).iter().copied());
    zone.set(after(layout.composite[3]), check_of(composite));
    zone.0
        .into_iter()
        .map(|line| line.into_iter().map(char::from).collect())
        .collect()
}

/// Composes TD3 lines from fields (the test fixtures and the load scripts print passports with it).
#[allow(clippy::too_many_arguments)]
pub fn compose_td3(
    document_code: &str,
    issuing_state: &str,
    surname: &str,
    given_names: &str,
    document_number: &str,
    nationality: &str,
    birth_yymmdd: &str,
    sex: char,
    expiry_yymmdd: &str,
    personal_number: &str,
) -> [String; 2] {
    let fields = Fields {
        code: document_code,
        state: issuing_state,
        surname,
        given_names,
        number: document_number,
        nationality,
        birth: birth_yymmdd,
        sex,
        expiry: expiry_yymmdd,
        optional: [personal_number, ""],
    };
    let mut lines = compose(&TD3, &fields).into_iter();
    [(); 2].map(|()| lines.next().unwrap_or_default())
}

/// Composes TD1 lines (ID cards, 3×30); a document number longer than nine characters continues
/// in optional data 1 as ICAO 9303-5 prescribes.
#[allow(clippy::too_many_arguments)]
pub fn compose_td1(
    document_code: &str,
    issuing_state: &str,
    document_number: &str,
    optional1: &str,
    birth_yymmdd: &str,
    sex: char,
    expiry_yymmdd: &str,
    nationality: &str,
    optional2: &str,
    surname: &str,
    given_names: &str,
) -> [String; 3] {
    let fields = Fields {
        code: document_code,
        state: issuing_state,
        surname,
        given_names,
        number: document_number,
        nationality,
        birth: birth_yymmdd,
        sex,
        expiry: expiry_yymmdd,
        optional: [optional1, optional2],
    };
    let mut lines = compose(&TD1, &fields).into_iter();
    [(); 3].map(|()| lines.next().unwrap_or_default())
}

/// The ICAO 9303 specimen passport (Anna Maria Eriksson of Utopia), valid until 2032: what the
/// generated documents of tests, benches and load scripts print.
pub fn specimen_td3() -> [String; 2] {
    compose_td3(
        "P",
        "UTO",
        "ERIKSSON",
        "ANNA MARIA",
        "L898902C3",
        "UTO",
        "740812",
        'F',
        "320415",
        "",
    )
}

/// The ICAO 9303 specimen ID card (TD1), valid until 2032.
pub fn specimen_td1() -> [String; 3] {
    compose_td1(
        "I",
        "UTO",
        "D23145890",
        "",
        "740812",
        'F',
        "320415",
        "UTO",
        "",
        "ERIKSSON",
        "ANNA MARIA",
    )
}
