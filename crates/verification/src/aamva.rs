//! AAMVA DL/ID card design standard: the PDF417 payload on the back of US and Canadian
//! driving licences and ID cards.
//!
//! The header states where each subfile starts and how long it is; those numbers are checked
//! strictly, because a payload whose structure disagrees with itself was truncated or garbled
//! by the barcode reader and its fields cannot be trusted.

use idconsent_kernel::CalendarDate;

/// The identity fields of a DL or ID subfile.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AamvaData {
    pub issuer_id: String,
    pub version: u8,
    pub first_name: String,
    pub middle_names: Option<String>,
    pub last_name: String,
    pub date_of_birth: CalendarDate,
    pub document_number: String,
    pub expiry_date: CalendarDate,
    pub issue_date: Option<CalendarDate>,
    pub sex: Option<char>,
    pub country: String,
    pub jurisdiction: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AamvaError {
    #[error("not an AAMVA card payload")]
    NotAamva,
    #[error("the payload's structure is inconsistent: {0}")]
    Structure(String),
    #[error("required element {0} is missing")]
    Missing(&'static str),
    #[error("{0} is not a valid date")]
    BadDate(&'static str),
}

/// Compliance indicator, data element separator, record separator, segment terminator.
const COMPLIANCE: &str = "@\n\x1e\r";
const FILE_TYPE: &str = "ANSI ";
/// Compliance characters, file type, IIN, version, jurisdiction version, number of entries.
const HEADER_LEN: usize = 4 + 5 + 6 + 2 + 2 + 2;
const DESIGNATOR_LEN: usize = 10;
const SEGMENT_TERMINATOR: char = '\r';
const ELEMENT_SEPARATOR: char = '\n';

fn structure(message: impl Into<String>) -> AamvaError {
    AamvaError::Structure(message.into())
}

/// A fixed-width decimal number of the header.
fn number(payload: &str, at: usize, len: usize, what: &str) -> Result<usize, AamvaError> {
    let text = payload
        .get(at..at + len)
        .ok_or_else(|| structure(format!("the header is cut short at the {what}")))?;
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(structure(format!("the {what} is not a number")));
    }
    text.parse()
        .map_err(|_| structure(format!("the {what} is not a number")))
}

#[derive(Debug)]
struct Designator<'a> {
    kind: &'a str,
    offset: usize,
    length: usize,
}

/// Reads the subfile designators and checks that the subfiles tile the payload exactly: the
/// first starts right after the designators (so the entry count is right), each starts with
/// its type at its offset, ends with the segment terminator, and nothing follows the last
/// but an optional trailing terminator.
fn subfiles(payload: &str, entries: usize) -> Result<Vec<(&str, &str)>, AamvaError> {
    let mut designators = Vec::with_capacity(entries);
    for entry in 0..entries {
        let at = HEADER_LEN + entry * DESIGNATOR_LEN;
        let kind = payload
            .get(at..at + 2)
            .filter(|kind| {
                kind.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
            })
            .ok_or_else(|| structure(format!("subfile designator {} has no type", entry + 1)))?;
        let offset = number(payload, at + 2, 4, "subfile offset")?;
        let length = number(payload, at + 6, 4, "subfile length")?;
        designators.push(Designator {
            kind,
            offset,
            length,
        });
    }
    let mut order: Vec<usize> = (0..entries).collect();
    order.sort_by_key(|&i| designators[i].offset);
    let mut expected = HEADER_LEN + entries * DESIGNATOR_LEN;
    let mut bodies = vec![""; entries];
    for i in order {
        let d = &designators[i];
        if d.offset != expected {
            return Err(structure(format!(
                "subfile {} starts at {} where {expected} was expected",
                d.kind, d.offset
            )));
        }
        let body = payload
            .get(d.offset..d.offset + d.length)
            .ok_or_else(|| structure(format!("subfile {} runs past the payload", d.kind)))?;
        if d.length < 3 || !body.starts_with(d.kind) {
            return Err(structure(format!(
                "subfile {} does not start with its type",
                d.kind
            )));
        }
        if !body.ends_with(SEGMENT_TERMINATOR) {
            return Err(structure(format!("subfile {} is not terminated", d.kind)));
        }
        bodies[i] = &body[2..body.len() - 1];
        expected = d.offset + d.length;
    }
    match payload.get(expected..) {
        Some("" | "\r") => {}
        _ => return Err(structure("data follows the last subfile")),
    }
    // Designator order, so the first DL/ID designator wins.
    Ok(designators.iter().map(|d| d.kind).zip(bodies).collect())
}

/// The elements of a subfile: three-character identifier, then the value.
fn elements(body: &str) -> Result<Vec<(&str, &str)>, AamvaError> {
    body.split(ELEMENT_SEPARATOR)
        .filter(|line| !line.is_empty())
        .map(|line| {
            let id = line
                .get(..3)
                .filter(|id| {
                    id.bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
                })
                .ok_or_else(|| structure(format!("element {line:?} has no identifier")))?;
            Ok((id, line[3..].trim()))
        })
        .collect()
}

/// MMDDCCYY in the United States, CCYYMMDD in Canada.
fn date(value: &str, canadian: bool, id: &'static str) -> Result<CalendarDate, AamvaError> {
    if value.len() != 8 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AamvaError::BadDate(id));
    }
    let (year, month, day) = if canadian {
        (&value[..4], &value[4..6], &value[6..])
    } else {
        (&value[4..], &value[..2], &value[2..4])
    };
    CalendarDate::parse(&format!("{year}-{month}-{day}")).map_err(|_| AamvaError::BadDate(id))
}

/// Parses the PDF417 payload of an AAMVA-compliant licence or ID card.
pub fn parse_aamva(payload: &str) -> Result<AamvaData, AamvaError> {
    if !payload.starts_with('@') || payload.get(4..9) != Some(FILE_TYPE) {
        return Err(AamvaError::NotAamva);
    }
    if payload.get(..4) != Some(COMPLIANCE) {
        return Err(structure("the header's separator characters are wrong"));
    }
    let issuer_id = payload
        .get(9..15)
        .filter(|iin| iin.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| structure("the issuer identification number is not six digits"))?
        .to_string();
    let version = u8::try_from(number(payload, 15, 2, "version")?)
        .map_err(|_| structure("the version is out of range"))?;
    number(payload, 17, 2, "jurisdiction version")?;
    let entries = number(payload, 19, 2, "number of entries")?;
    if entries == 0 {
        return Err(structure("the header lists no subfiles"));
    }
    let body = subfiles(payload, entries)?
        .into_iter()
        .find(|(kind, _)| matches!(*kind, "DL" | "ID"))
        .map(|(_, body)| body)
        .ok_or_else(|| structure("there is no DL or ID subfile"))?;
    let elements = elements(body)?;
    let get = |id: &str| {
        elements
            .iter()
            .find(|(element, value)| *element == id && !value.is_empty())
            .map(|(_, value)| *value)
    };
    let required = |id: &'static str| get(id).ok_or(AamvaError::Missing(id));

    let country = get("DCG").unwrap_or("USA");
    let canadian = match country {
        "USA" => false,
        "CAN" => true,
        other => {
            return Err(structure(format!(
                "the country {other:?} is neither USA nor CAN"
            )));
        }
    };
    let last_name = required("DCS")?.to_string();
    // Versions before 4 gave first and middle names together in DCT.
    let (first_name, dct_middle) = match (get("DAC"), get("DCT")) {
        (Some(first), _) => (first.to_string(), None),
        (None, Some(given)) => {
            let (first, rest) = given
                .split_once([',', ' '])
                .map_or((given, ""), |(first, rest)| (first, rest.trim()));
            let rest = rest.replace(',', " ");
            (first.trim().to_string(), Some(rest.trim().to_string()))
        }
        (None, None) => return Err(AamvaError::Missing("DAC")),
    };
    if first_name.is_empty() {
        return Err(AamvaError::Missing("DAC"));
    }
    let middle_names = get("DAD")
        .map(str::to_string)
        .or(dct_middle)
        .filter(|middle| !middle.is_empty() && !middle.eq_ignore_ascii_case("NONE"));
    let document_number = required("DAQ")?.to_string();
    let date_of_birth = date(required("DBB")?, canadian, "DBB")?;
    let expiry_date = date(required("DBA")?, canadian, "DBA")?;
    let issue_date = get("DBD")
        .map(|value| date(value, canadian, "DBD"))
        .transpose()?;
    let sex = match get("DBC") {
        Some("1" | "M") => Some('M'),
        Some("2" | "F") => Some('F'),
        _ => None,
    };

    Ok(AamvaData {
        issuer_id,
        version,
        first_name,
        middle_names,
        last_name,
        date_of_birth,
        document_number,
        expiry_date,
        issue_date,
        sex,
        country: country.to_string(),
        jurisdiction: get("DAJ").map(str::to_string),
    })
}

/// Composes a compliant payload (version 10, one "DL" subfile) for tests and fixtures.
/// `issuer_id` should be six digits; it is padded or cut so the header stays well formed.
pub fn compose_aamva(issuer_id: &str, fields: &[(&str, &str)]) -> String {
    let elements: Vec<String> = fields
        .iter()
        .map(|(id, value)| format!("{id}{value}"))
        .collect();
    let subfile = format!(
        "DL{}{SEGMENT_TERMINATOR}",
        elements.join(&ELEMENT_SEPARATOR.to_string())
    );
    let offset = HEADER_LEN + DESIGNATOR_LEN;
    format!(
        "{COMPLIANCE}{FILE_TYPE}{issuer_id:0>6.6}100001DL{offset:04}{:04}{subfile}",
        subfile.len()
    )
}
