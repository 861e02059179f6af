//! The audit page's font: DejaVu Sans embedded as a CID-keyed TrueType font (Identity-H) with a
//! ToUnicode map, so signer names in Latin, Greek, Cyrillic and the other scripts it covers
//! print and copy correctly. The standard Helvetica covers Latin-1 only.
//!
//! The font comes from the `dejavu` crate (DejaVu Sans 2.37, compiled in), so building needs no
//! system font package and nothing is fetched at run time.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

use lopdf::{Dictionary, Document, Object, ObjectId, Stream, dictionary};

/// DejaVu Sans 2.37 as the `dejavu` crate ships it: no system font is needed to build.
fn dejavu_sans() -> &'static [u8] {
    dejavu::sans::regular()
}
const NAME: &str = "DejaVuSans";

#[derive(Debug, thiserror::Error)]
#[error("the embedded font cannot be read")]
pub struct FontError;

/// The font file as a compressed `FontFile2` stream, compressed once per process: deflating
/// 750 KB for every certificate would cost more than the rest of the signing.
fn compressed_font_file() -> Result<&'static Stream, FontError> {
    static FILE: OnceLock<Option<Stream>> = OnceLock::new();
    FILE.get_or_init(|| {
        let mut file = Stream::new(
            dictionary! { "Length1" => dejavu_sans().len() as i64 },
            dejavu_sans().to_vec(),
        );
        file.compress().ok().map(|()| file)
    })
    .as_ref()
    .ok_or(FontError)
}

/// Glyphs of the embedded font, and the ones a document has used.
pub struct EmbeddedFont {
    face: ttf_parser::Face<'static>,
    /// Glyph id → the text it stands for, for the ToUnicode map.
    used: BTreeMap<u16, char>,
}

impl std::fmt::Debug for EmbeddedFont {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedFont")
            .field("used", &self.used.len())
            .finish()
    }
}

impl EmbeddedFont {
    pub fn dejavu_sans() -> Result<Self, FontError> {
        Ok(Self {
            face: ttf_parser::Face::parse(dejavu_sans(), 0).map_err(|_| FontError)?,
            used: BTreeMap::new(),
        })
    }

    /// `text` as 2-byte glyph ids for a `Tj` under Identity-H; characters the font lacks print
    /// as `?`.
    pub fn encode(&mut self, text: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len() * 2);
        for c in text.chars() {
            let (c, glyph) = match self.face.glyph_index(c) {
                Some(glyph) => (c, glyph),
                None => ('?', self.face.glyph_index('?').unwrap_or_default()),
            };
            self.used.insert(glyph.0, c);
            out.extend(glyph.0.to_be_bytes());
        }
        out
    }

    /// Adds the font's objects to `document` and returns the Type0 font to name in resources.
    pub fn add_to(&self, document: &mut Document) -> Result<ObjectId, FontError> {
        let file_id = document.add_object(compressed_font_file()?.clone());
        let scale = 1000.0 / f32::from(self.face.units_per_em());
        let scaled = |value: i16| ((f32::from(value)) * scale).round() as i64;
        let bbox = self.face.global_bounding_box();
        let descriptor_id = document.add_object(dictionary! {
            "Type" => "FontDescriptor",
            "FontName" => NAME,
            "Flags" => 32,
            "FontBBox" => vec![
                scaled(bbox.x_min).into(),
                scaled(bbox.y_min).into(),
                scaled(bbox.x_max).into(),
                scaled(bbox.y_max).into(),
            ],
            "ItalicAngle" => 0,
            "Ascent" => scaled(self.face.ascender()),
            "Descent" => scaled(self.face.descender()),
            "CapHeight" => scaled(self.face.capital_height().unwrap_or(self.face.ascender())),
            "StemV" => 80,
            "FontFile2" => file_id,
        });
        let widths: Vec<Object> = self
            .used
            .keys()
            .flat_map(|glyph| {
                let advance = self
                    .face
                    .glyph_hor_advance(ttf_parser::GlyphId(*glyph))
                    .unwrap_or_default();
                let width = (f32::from(advance) * scale).round() as i64;
                [
                    Object::Integer(i64::from(*glyph)),
                    vec![width.into()].into(),
                ]
            })
            .collect();
        let cid_font_id = document.add_object(dictionary! {
            "Type" => "Font",
            "Subtype" => "CIDFontType2",
            "BaseFont" => NAME,
            "CIDSystemInfo" => dictionary! {
                "Registry" => Object::string_literal("Adobe"),
                "Ordering" => Object::string_literal("Identity"),
                "Supplement" => 0,
            },
            "FontDescriptor" => descriptor_id,
            "CIDToGIDMap" => "Identity",
            "DW" => 1000,
            "W" => widths,
        });
        let to_unicode_id = document.add_object(Stream::new(
            Dictionary::new(),
            self.to_unicode().into_bytes(),
        ));
        Ok(document.add_object(dictionary! {
            "Type" => "Font",
            "Subtype" => "Type0",
            "BaseFont" => NAME,
            "Encoding" => "Identity-H",
            "DescendantFonts" => vec![Object::Reference(cid_font_id)],
            "ToUnicode" => to_unicode_id,
        }))
    }

    /// The CMap that maps each used glyph back to its character (copy, search, extraction).
    fn to_unicode(&self) -> String {
        let mut cmap = String::from(
            "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n\
             /CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n\
             /CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n\
             1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n",
        );
        let entries: Vec<(&u16, &char)> = self.used.iter().collect();
        for chunk in entries.chunks(100) {
            let _ = writeln!(cmap, "{} beginbfchar", chunk.len());
            for (glyph, c) in chunk {
                let mut units = [0u16; 2];
                let utf16: String = c
                    .encode_utf16(&mut units)
                    .iter()
                    .map(|unit| format!("{unit:04X}"))
                    .collect();
                let _ = writeln!(cmap, "<{glyph:04X}> <{utf16}>");
            }
            cmap.push_str("endbfchar\n");
        }
        cmap.push_str("endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n");
        cmap
    }
}
