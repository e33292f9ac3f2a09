//! Without the `u` flag JavaScript matches UTF-16 code units: an astral character (4 bytes in UTF-8) is two
//! units, a high surrogate then a low one, and every matcher that consumes one unit may take half of it. Here
//! a high half is the character's first three bytes and a low half its last byte: every unit set that holds
//! the surrogates (`.`, `[^<]`, `\S`, `\W`, ...; a set holds all of them or none, since class bounds cannot be
//! lone surrogates) also matches those pieces. In valid UTF-8 a lone continuation byte can only be read right
//! after a high half or where a match starts on a low half, so `[\x80-\xBF]` is exactly "a low half".
//!
//! A match that splits a pair leaves a lone surrogate in V8's result, which UTF-8 cannot hold: Node writes it
//! as U+FFFD, and so does the stream (see `stream`), in the text around the match and in `$&` and groups.

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};

use super::classes::NEVER;
use super::parser::Parser;

/// One high half (the first three bytes of a 4-byte sequence) or one low half (its last byte).
const HALF: &str = r"(?-u:[\xF0-\xF4][\x80-\xBF][\x80-\xBF]|[\x80-\xBF])";

impl Parser<'_> {
    /// Writes a unit set (non-`u` mode): its BMP characters, and the halves of astral characters when the
    /// set holds the surrogates.
    pub(super) fn emit_unit_set(&mut self, set: &ClassUnicode) {
        let halves = set.ranges().iter().any(|r| r.start() <= '\u{D7FF}' && r.end() >= '\u{E000}');
        let mut bmp = set.clone();
        bmp.intersect(&ClassUnicode::new([ClassUnicodeRange::new('\0', '\u{FFFF}')]));
        if !halves {
            self.emit_code_points(&bmp);
            return;
        }
        self.out.push_str("(?:");
        if !bmp.ranges().is_empty() {
            self.emit_code_points(&bmp);
            self.out.push('|');
        }
        self.out.push_str(HALF);
        self.out.push(')');
    }

    /// A lone high surrogate `\uD8xx` (non-`u` mode): the high half of the astral characters that have it.
    pub(super) fn emit_high_half(&mut self, high: u32) {
        let first = char::from_u32(0x10000 + ((high - 0xD800) << 10)).expect("a high surrogate starts a plane range");
        self.out.push_str(&high_half(first));
    }

    /// An astral character `c` under a quantifier (non-`u` mode): JavaScript repeats only its low half, and in
    /// valid UTF-8 a low half follows a high half at most once.
    pub(super) fn emit_quantified_astral(&mut self, c: char, min: u64, max: Option<u64>, lazy: bool) {
        let full = format!("\\x{{{:X}}}", c as u32);
        let high = high_half(c);
        let text = match (min, max) {
            (2.., _) => NEVER.to_string(),
            (1, _) => full,
            (0, Some(0)) => high,
            (0, _) if lazy => format!("(?:{high}|{full})"),
            (0, _) => format!("(?:{full}|{high})"),
        };
        self.out.push_str(&text);
    }
}

/// The high half `c` starts with: its first two bytes, and the third byte's two high payload bits (the low
/// four belong to the low surrogate).
fn high_half(c: char) -> String {
    let mut bytes = [0; 4];
    c.encode_utf8(&mut bytes);
    let third = bytes[2] & 0xF0;
    format!(r"(?-u:\x{:02X}\x{:02X}[\x{:02X}-\x{:02X}])", bytes[0], bytes[1], third, third | 0x0F)
}
