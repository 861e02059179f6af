//! ICAO 9303 machine-readable zones (passports TD3, ID cards TD1, TD2) as read by OCR.
//!
//! OCR output is noisy, so the zone is searched for among the lines, common character
//! confusions are repaired according to what each field may hold, and every check digit is
//! verified: a misread must fail loudly rather than pass as a different document.

use idconsent_kernel::CalendarDate;

mod compose;

use compose::fit;
pub use compose::{compose_td1, compose_td3, specimen_td1, specimen_td3};

/// The three ICAO 9303 layouts: TD1 (3×30), TD2 (2×36), TD3 (2×44).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum MrzFormat {
    Td1,
    Td2,
    Td3,
}

/// The fields of a zone whose check digits all matched.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MrzData {
    pub format: MrzFormat,
    pub document_code: String,
    pub issuing_state: String,
    pub surname: String,
    pub given_names: String,
    pub document_number: String,
    pub nationality: String,
    pub birth_date: CalendarDate,
    pub sex: Option<char>,
    pub expiry_date: CalendarDate,
    /// Optional data with fillers removed; separate runs (TD1 has two fields) joined by a space.
    pub optional_data: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MrzError {
    #[error("no machine-readable zone was found")]
    NotFound,
    #[error("the check digit of {0} does not match")]
    CheckDigit(&'static str),
    #[error("{0} is not a valid date")]
    BadDate(&'static str),
    #[error("{0} has characters that cannot be read")]
    Unreadable(&'static str),
}

/// Characters `[start, end)` of one line of the zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    line: usize,
    start: usize,
    end: usize,
}

const fn span(line: usize, start: usize, end: usize) -> Span {
    Span { line, start, end }
}

/// A single character: (line, column).
type Pos = (usize, usize);

/// The character right after a span, where its check digit sits.
fn after(s: Span) -> Pos {
    (s.line, s.end)
}

const CODE: Span = span(0, 0, 2);
const STATE: Span = span(0, 2, 5);
const NONE: Span = span(0, 0, 0);

/// Where each field sits, so one parser (and one composer) serves all three formats.
#[derive(Debug)]
struct Layout {
    format: MrzFormat,
    width: usize,
    names: Span,
    /// Followed by its check digit.
    number: Span,
    /// Where a document number longer than nine characters continues (ICAO 9303-5 §4.2.4).
    extension: Option<Span>,
    nationality: Span,
    /// Followed by its check digit, then the sex.
    birth: Span,
    /// Followed by its check digit.
    expiry: Span,
    optional: [Span; 2],
    /// Whether the first optional field is followed by a check digit (the TD3 personal number).
    optional_checked: bool,
    /// The spans under the composite check digit, which follows the last one.
    composite: [Span; 4],
}

impl Layout {
    fn lines(&self) -> usize {
        if self.format == MrzFormat::Td1 { 3 } else { 2 }
    }
}

const TD1: Layout = Layout {
    format: MrzFormat::Td1,
    width: 30,
    names: span(2, 0, 30),
    number: span(0, 5, 14),
    extension: Some(span(0, 15, 30)),
    nationality: span(1, 15, 18),
    birth: span(1, 0, 6),
    expiry: span(1, 8, 14),
    optional: [span(0, 15, 30), span(1, 18, 29)],
    optional_checked: false,
    composite: [
        span(0, 5, 30),
        span(1, 0, 7),
        span(1, 8, 15),
        span(1, 18, 29),
    ],
};

/// TD2 (ICAO 9303-6) and TD3 differ only in width and in what follows the optional data.
const fn two_line(format: MrzFormat, width: usize) -> Layout {
    let td2 = width == 36;
    Layout {
        format,
        width,
        names: span(0, 5, width),
        number: span(1, 0, 9),
        extension: if td2 { Some(span(1, 28, 35)) } else { None },
        nationality: span(1, 10, 13),
        birth: span(1, 13, 19),
        expiry: span(1, 21, 27),
        optional: [span(1, 28, if td2 { 35 } else { 42 }), NONE],
        optional_checked: !td2,
        composite: [
            NONE,
            span(1, 0, 10),
            span(1, 13, 20),
            span(1, 21, width - 1),
        ],
    }
}

const TD2: Layout = two_line(MrzFormat::Td2, 36);
const TD3: Layout = two_line(MrzFormat::Td3, 44);

fn value(c: u8) -> u32 {
    match c {
        b'0'..=b'9' => u32::from(c - b'0'),
        b'A'..=b'Z' => u32::from(c - b'A') + 10,
        _ => 0,
    }
}

fn check_of(bytes: impl IntoIterator<Item = u8>) -> u8 {
    const WEIGHTS: [u32; 3] = [7, 3, 1];
    let sum: u32 = bytes
        .into_iter()
        .zip(WEIGHTS.iter().cycle())
        .map(|(c, w)| value(c) * w)
        .sum();
    // The remainder is below 10, so the cast cannot truncate.
    b'0' + (sum % 10) as u8
}

/// ICAO 9303 check digit ('0'..='9') of a field (digits as values, A–Z as 10–35, '<' as 0,
/// weights 7,3,1). Other characters count as 0, like the filler.
pub fn check_digit(field: &str) -> char {
    char::from(check_of(field.bytes().map(|b| b.to_ascii_uppercase())))
}

/// A character table: `from[i]` is read as `to[i]`.
type Table = (&'static [u8], &'static [u8]);
/// Letters OCR reads in place of digits, for fields that can only hold digits.
const AS_DIGIT: Table = (b"OQDILZSBG", b"000112586");
/// Digits OCR reads in place of letters, for fields that can only hold letters.
const AS_LETTER: Table = (b"015826", b"OISBZG");
/// Confusions tried one at a time in alphanumeric document numbers.
const SWAPS: Table = (b"OISB0158", b"0158OISB");

fn mapped((from, to): Table, c: u8) -> u8 {
    from.iter().position(|&f| f == c).map_or(c, |i| to[i])
}

/// Keeps only the MRZ alphabet; filler look-alikes become fillers, other noise goes.
fn normalise_line(raw: &str) -> Vec<u8> {
    let kept: Vec<u8> = raw
        .chars()
        .filter_map(|c| match c.to_ascii_uppercase() {
            c @ ('A'..='Z' | '0'..='9' | '<' | '(') => Some(c as u8),
            '«' | '‹' => Some(b'<'),
            _ => None,
        })
        .collect();
    // '(' is a filler only between fillers; elsewhere it is a stray mark.
    let between_fillers = |i: usize| i > 0 && kept[i - 1] == b'<' && kept.get(i + 1) == Some(&b'<');
    (0..kept.len())
        .filter_map(|i| match kept[i] {
            b'(' => between_fillers(i).then_some(b'<'),
            c => Some(c),
        })
        .collect()
}

/// OCR often drops or adds a trailing filler: a line one or two characters off is fitted
/// to `width` only when the difference is in its filler run.
fn fit_line(line: &[u8], width: usize) -> Option<Vec<u8>> {
    let len = line.len();
    if len == width {
        Some(line.to_vec())
    } else if len + 2 >= width && len < width && line.last() == Some(&b'<') {
        let mut fitted = line.to_vec();
        fitted.resize(width, b'<');
        Some(fitted)
    } else if len > width && len <= width + 2 && line[width..].iter().all(|&c| c == b'<') {
        Some(line[..width].to_vec())
    } else {
        None
    }
}

/// The last group of consecutive lines that fits one of the layouts.
fn find_zone(text: &str) -> Option<(&'static Layout, Vec<Vec<u8>>)> {
    let lines: Vec<Vec<u8>> = text
        .lines()
        .map(normalise_line)
        .filter(|line| !line.is_empty())
        .collect();
    for end in (0..lines.len()).rev() {
        for layout in [&TD1, &TD3, &TD2] {
            let Some(start) = (end + 1).checked_sub(layout.lines()) else {
                continue;
            };
            let fitted: Option<Vec<Vec<u8>>> = lines[start..=end]
                .iter()
                .map(|line| fit_line(line, layout.width))
                .collect();
            if let Some(fitted) = fitted {
                return Some((layout, fitted));
            }
        }
    }
    None
}

/// The zone's lines, repaired in place so the composite check sees the repaired fields.
struct Zone(Vec<Vec<u8>>);

impl Zone {
    fn at(&self, (line, column): Pos) -> u8 {
        self.0[line][column]
    }

    fn set(&mut self, (line, column): Pos, c: u8) {
        self.0[line][column] = c;
    }

    fn text(&self, s: Span) -> &[u8] {
        &self.0[s.line][s.start..s.end]
    }

    fn positions(s: Span) -> impl Iterator<Item = Pos> {
        (s.start..s.end).map(move |column| (s.line, column))
    }

    fn write(&mut self, s: Span, text: &str) {
        let text = fit(text, s.end - s.start);
        for (pos, c) in Self::positions(s).zip(text.bytes()) {
            self.set(pos, c);
        }
    }

    fn write_check(&mut self, s: Span) {
        self.set(after(s), check_of(self.text(s).iter().copied()));
    }

    /// Reads the check digit at `check` as a digit (never bending it otherwise) and compares.
    fn matches(&mut self, spans: &[Span], check: Pos) -> bool {
        self.set(check, mapped(AS_DIGIT, self.at(check)));
        let bytes = spans.iter().flat_map(|&s| self.text(s).iter().copied());
        check_of(bytes) == self.at(check)
    }

    /// Maps a date to digits and verifies its check digit.
    fn verify_date(&mut self, field: Span, name: &'static str) -> Result<(), MrzError> {
        for pos in Self::positions(field) {
            self.set(pos, mapped(AS_DIGIT, self.at(pos)));
        }
        self.matches(&[field], after(field))
            .then_some(())
            .ok_or(MrzError::CheckDigit(name))
    }

    /// Reads and verifies the document number, trying single O/0, I/1, S/5, B/8 swaps when the
    /// read fails its check; a repair is accepted only when exactly one swap matches (and the
    /// composite check still has to agree). Returns the number and how many characters of the
    /// extension field it took.
    fn document_number(&mut self, layout: &Layout) -> Result<(String, usize), MrzError> {
        const FAILED: MrzError = MrzError::CheckDigit("documentNumber");
        let mut positions: Vec<Pos> = Self::positions(layout.number).collect();
        let mut check = after(layout.number);
        let mut consumed = 0;
        if self.at(check) == b'<'
            && let Some(extension) = layout.extension
        {
            let rest = self
                .text(extension)
                .iter()
                .take_while(|&&c| c != b'<')
                .count();
            let mut more = Self::positions(extension).take(rest);
            positions.extend(more.by_ref().take(rest.saturating_sub(1)));
            check = more.next().ok_or(FAILED)?;
            consumed = rest + 1;
        }
        self.set(check, mapped(AS_DIGIT, self.at(check)));
        let expected = self.at(check);
        let read: Vec<u8> = positions.iter().map(|&pos| self.at(pos)).collect();
        let number = if check_of(read.iter().copied()) == expected {
            read
        } else {
            let mut repairs = (0..read.len()).filter_map(|i| {
                let mut candidate = read.clone();
                candidate[i] = mapped(SWAPS, read[i]);
                (candidate[i] != read[i] && check_of(candidate.iter().copied()) == expected)
                    .then_some(candidate)
            });
            match (repairs.next(), repairs.next()) {
                (Some(only), None) => only,
                _ => return Err(FAILED),
            }
        };
        for (&pos, &c) in positions.iter().zip(&number) {
            self.set(pos, c);
        }
        let number = number
            .iter()
            .filter(|&&c| c != b'<')
            .map(|&c| char::from(c));
        Ok((number.collect(), consumed))
    }

    /// A country or document code: letters only, fillers removed.
    fn letters(&self, field: Span, name: &'static str) -> Result<String, MrzError> {
        let text: String = self
            .text(field)
            .iter()
            .map(|&c| mapped(AS_LETTER, c))
            .filter(|&c| c != b'<')
            .map(char::from)
            .collect();
        if text.chars().all(|c| c.is_ascii_uppercase()) {
            Ok(text)
        } else {
            Err(MrzError::Unreadable(name))
        }
    }
}

/// Splits on fillers and joins the runs with single spaces.
fn words(text: &[u8]) -> String {
    let runs: Vec<String> = text
        .split(|&c| c == b'<')
        .filter(|run| !run.is_empty())
        .map(|run| run.iter().map(|&c| char::from(c)).collect())
        .collect();
    runs.join(" ")
}

fn names(field: &[u8]) -> Result<(String, String), MrzError> {
    let text: Vec<u8> = field.iter().map(|&c| mapped(AS_LETTER, c)).collect();
    if text.iter().any(|c| c.is_ascii_digit()) {
        return Err(MrzError::Unreadable("name"));
    }
    match text.windows(2).position(|pair| pair == b"<<") {
        Some(i) => Ok((words(&text[..i]), words(&text[i + 2..]))),
        None => Ok((words(&text), String::new())),
    }
}

/// YYMMDD to a date, `century` choosing the four-digit year from the two-digit one.
fn date(
    digits: &[u8],
    name: &'static str,
    century: impl Fn(i32) -> i32,
) -> Result<CalendarDate, MrzError> {
    if digits.len() != 6 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(MrzError::Unreadable(name));
    }
    let pair = |i: usize| i32::from(digits[i] - b'0') * 10 + i32::from(digits[i + 1] - b'0');
    let text = format!("{:04}-{:02}-{:02}", century(pair(0)), pair(2), pair(4));
    CalendarDate::parse(&text).map_err(|_| MrzError::BadDate(name))
}

/// Finds an MRZ in OCR output (lines in any surrounding noise: blank lines, spaces inside lines,
/// stray short lines, lower case) and parses it. `reference_year` (e.g. 2026) resolves two-digit
/// years: a birth year is the latest year ≤ reference_year ending in those digits; an expiry year
/// is in [reference_year - 50, reference_year + 49].
pub fn parse_mrz(ocr_text: &str, reference_year: i32) -> Result<MrzData, MrzError> {
    let (layout, lines) = find_zone(ocr_text).ok_or(MrzError::NotFound)?;
    let mut zone = Zone(lines);

    let (document_number, consumed) = zone.document_number(layout)?;
    zone.verify_date(layout.birth, "birthDate")?;
    zone.verify_date(layout.expiry, "expiryDate")?;
    let optional = layout.optional[0];
    if layout.optional_checked {
        // A personal number that is all fillers may have a filler as its check digit.
        let unused = zone
            .text(optional)
            .iter()
            .chain([&zone.at(after(optional))])
            .all(|&c| c == b'<');
        if !unused && !zone.matches(&[optional], after(optional)) {
            return Err(MrzError::CheckDigit("optionalData"));
        }
    }
    if !zone.matches(&layout.composite, after(layout.composite[3])) {
        return Err(MrzError::CheckDigit("composite"));
    }

    let birth_date = date(zone.text(layout.birth), "birthDate", |yy| {
        reference_year - (reference_year - yy).rem_euclid(100)
    })?;
    let expiry_date = date(zone.text(layout.expiry), "expiryDate", |yy| {
        let earliest = reference_year - 50;
        earliest + (yy - earliest).rem_euclid(100)
    })?;
    let sex = match zone.at((layout.birth.line, layout.birth.end + 1)) {
        b'M' => Some('M'),
        b'F' => Some('F'),
        b'<' | b'X' => None,
        _ => return Err(MrzError::Unreadable("sex")),
    };
    let (surname, given_names) = names(zone.text(layout.names))?;
    let optional: Vec<String> = layout
        .optional
        .iter()
        .map(|&s| {
            let skip = if Some(s) == layout.extension {
                consumed
            } else {
                0
            };
            words(zone.text(s).get(skip..).unwrap_or_default())
        })
        .filter(|run| !run.is_empty())
        .collect();

    Ok(MrzData {
        format: layout.format,
        document_code: zone.letters(CODE, "documentCode")?,
        issuing_state: zone.letters(STATE, "issuingState")?,
        surname,
        given_names,
        document_number,
        nationality: zone.letters(layout.nationality, "nationality")?,
        birth_date,
        sex,
        expiry_date,
        optional_data: optional.join(" "),
    })
}
