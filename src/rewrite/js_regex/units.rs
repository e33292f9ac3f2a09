//! Without the `u` flag JavaScript matches UTF-16 code units: an astral character (4 bytes in UTF-8) is two
//! units, a high surrogate then a low one, and every matcher that consumes one unit may take half of it. Here
//! a high half is the character's first three bytes and a low half its last byte. A unit set holds surrogates
//! as stand-ins (see [`unit_char`]) and matches the halves of the astral characters that have them. In valid
//! UTF-8 a lone continuation byte can only be read right after a high half or where a match starts on a low
//! half, so `[\x80-\xBF]` is exactly "a low half".
//!
//! Which low surrogate a last byte stands for also depends on the byte before it (the low four bits of the
//! third byte), which a match that starts on the low half never reads. So a pattern that names some low
//! surrogates but not all (`\uDE00`, `[😀]`, `[^😀]`) runs on a view of the text ([`LowView`]) in which the
//! last byte of every astral character says which of the pattern's sets of low surrogates it is in.
//!
//! A match that splits a pair leaves a lone surrogate in V8's result, which UTF-8 cannot hold: Node writes it
//! as U+FFFD, and so does the stream (see `stage`), in the text around the match and in `$&` and groups.

use std::collections::HashMap;

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};
use regex_syntax::utf8::Utf8Sequences;

use super::classes::NEVER;
use super::parser::{unsupported, Parser};
use crate::error::JsRegexError;

/// Where a unit set keeps the surrogates: unit `0xD800 + k` is `U+100000 + k` (plane 16, which no unit set
/// holds otherwise: a unit is at most U+FFFF). A negated set holds the stand-ins it did not, as JS's does.
const STAND_IN: u32 = 0x10_0000;
/// Low surrogates, as offsets from 0xDC00.
const LOWS: usize = 0x400;
/// Distinct sets of low surrogates a view can tell apart: one continuation byte each.
const MAX_LOW_CLASSES: usize = 64;

/// One high half (the first three bytes of a 4-byte sequence) or one low half (its last byte).
const HALF: &str = r"(?-u:[\xF0-\xF4][\x80-\xBF][\x80-\xBF]|[\x80-\xBF])";

/// Low surrogates (offsets from 0xDC00) in ranges.
pub(super) type LowSet = Vec<(u16, u16)>;

/// The char a unit set holds for UTF-16 unit `unit` (a surrogate's stand-in, or the character itself).
fn unit_char(unit: u32) -> char {
    let cp = if (0xD800..0xE000).contains(&unit) { STAND_IN + unit - 0xD800 } else { unit };
    char::from_u32(cp).expect("a unit or its stand-in is a scalar value")
}

/// Adds the scalar values in `first..=last` (all but the surrogates) to a set.
pub(super) fn push_scalar_range(set: &mut ClassUnicode, first: u32, last: u32) {
    let first = if (0xD800..0xE000).contains(&first) { 0xE000 } else { first };
    let last = if (0xD800..0xE000).contains(&last) { 0xD7FF } else { last };
    if first <= last {
        set.push(ClassUnicodeRange::new(unit_char(first), unit_char(last)));
    }
}

/// Adds the UTF-16 units `first..=last` to a unit set (non-`u` mode).
pub(super) fn push_unit_range(set: &mut ClassUnicode, first: u32, last: u32) {
    push_scalar_range(set, first, last);
    let (s_first, s_last) = (first.max(0xD800), last.min(0xDFFF));
    if s_first <= s_last {
        set.push(ClassUnicodeRange::new(unit_char(s_first), unit_char(s_last)));
    }
}

/// The members of `set` in `STAND_IN + from ..= STAND_IN + to`, as offsets from `from`.
fn stand_ins(set: &ClassUnicode, from: u32, to: u32) -> Vec<(u16, u16)> {
    let (lo, hi) = (STAND_IN + from, STAND_IN + to);
    set.ranges()
        .iter()
        .filter_map(|r| {
            let (a, b) = ((r.start() as u32).max(lo), (r.end() as u32).min(hi));
            (a <= b).then(|| ((a - lo) as u16, (b - lo) as u16))
        })
        .collect()
}

/// Which of a pattern's sets of low surrogates each low surrogate is in, as a class number: the text's view
/// (see the module) writes the last byte of an astral character as `0x80 + class`.
#[derive(Debug, Clone)]
pub(crate) struct LowView {
    class: Box<[u8; LOWS]>,
}

impl LowView {
    /// The classes of the lows the sets tell apart; `None` when none is needed (every set is all or nothing).
    fn new(sets: &[LowSet], offset: usize) -> Result<Option<LowView>, JsRegexError> {
        if sets.is_empty() {
            return Ok(None);
        }
        let mut class = Box::new([0u8; LOWS]);
        let mut ids: HashMap<Vec<bool>, u8> = HashMap::new();
        for (low, slot) in class.iter_mut().enumerate() {
            let key: Vec<bool> = sets
                .iter()
                .map(|set| set.iter().any(|&(a, b)| usize::from(a) <= low && low <= usize::from(b)))
                .collect();
            let next = ids.len();
            if next >= MAX_LOW_CLASSES && !ids.contains_key(&key) {
                return Err(unsupported(
                    format!("more than {MAX_LOW_CLASSES} different sets of lone low surrogates"),
                    offset,
                    " (without `u` each needs a class of its own)",
                ));
            }
            *slot = *ids.entry(key).or_insert(next as u8);
        }
        Ok(Some(LowView { class }))
    }

    /// The view byte of a low surrogate (offset from 0xDC00).
    fn byte(&self, low: usize) -> u8 {
        0x80 + self.class[low]
    }

    /// Rewrites the last byte of every astral character of `text` in `view` (a copy of it, or its line view,
    /// which leaves 4-byte characters alone).
    pub(crate) fn apply(&self, text: &[u8], view: &mut [u8]) {
        let mut at = 0;
        while let Some(lead) = text[at..].iter().position(|b| (0xF0..=0xF4).contains(b)) {
            let lead = at + lead;
            match text.get(lead + 1..lead + 4) {
                Some(&[b1, b2, b3]) if [b1, b2, b3].iter().all(|b| b & 0xC0 == 0x80) => {
                    view[lead + 3] = self.byte(usize::from(b2 & 0x0F) << 6 | usize::from(b3 & 0x3F));
                    at = lead + 4;
                }
                _ => at = lead + 1,
            }
        }
    }

    /// [`LowView::apply`] to the characters that end at or after `from`: a stream's view of held bytes is
    /// final up to `from`, and the character cut there ends after it.
    pub(crate) fn apply_from(&self, text: &[u8], view: &mut [u8], from: usize) {
        // A lead byte is never a continuation byte: the search may start inside a character.
        let start = from.saturating_sub(3).min(text.len());
        self.apply(&text[start..], &mut view[start..]);
    }
}

impl Parser<'_> {
    /// Writes a unit set (non-`u` mode): its BMP characters, and the halves of the astral characters whose
    /// surrogates it holds.
    pub(super) fn emit_unit_set(&mut self, set: &ClassUnicode) {
        let mut bmp = set.clone();
        bmp.intersect(&ClassUnicode::new([ClassUnicodeRange::new('\0', '\u{FFFF}')]));
        let highs = stand_ins(set, 0, 0x3FF);
        let lows = stand_ins(set, 0x400, 0x7FF);
        if highs.is_empty() && lows.is_empty() {
            self.emit_code_points(&bmp);
            return;
        }
        let mut alternatives = Vec::new();
        if !bmp.ranges().is_empty() {
            let mark = self.out.len();
            self.emit_code_points(&bmp);
            alternatives.push(self.out.split_off(mark));
        }
        let all = [(0, 0x3FF)];
        // Every surrogate (`.`, `\S`, `[^<]`): the pattern the engine has always been given for them.
        let every = highs == all && lows == all;
        if every {
            alternatives.push(HALF.to_string());
        } else if highs == all {
            alternatives.push(r"(?-u:[\xF0-\xF4][\x80-\xBF][\x80-\xBF])".to_string());
        } else {
            alternatives.extend(highs.iter().flat_map(|&(a, b)| high_halves(a, b)));
        }
        if !every && !lows.is_empty() {
            alternatives.push(self.low_half(lows));
        }
        match alternatives.as_slice() {
            [] => self.out.push_str(NEVER),
            [one] => self.out.push_str(one),
            _ => {
                self.out.push_str("(?:");
                self.out.push_str(&alternatives.join("|"));
                self.out.push(')');
            }
        }
    }

    /// A low half in `lows` (offsets from 0xDC00). All of them: any last byte. Some: recorded for the view
    /// (first pass), or the view bytes of their classes (second pass, see [`translate_units`]).
    fn low_half(&mut self, lows: LowSet) -> String {
        if lows == [(0, 0x3FF)] {
            return r"(?-u:[\x80-\xBF])".to_string();
        }
        let Some(view) = &self.low_view else {
            self.low_sets.push(lows);
            return r"(?-u:[\x80-\xBF])".to_string();
        };
        let mut bytes: Vec<u8> =
            lows.iter().flat_map(|&(a, b)| usize::from(a)..=usize::from(b)).map(|low| view.byte(low)).collect();
        bytes.sort_unstable();
        bytes.dedup();
        let body: String = bytes.iter().map(|b| format!(r"\x{b:02X}")).collect();
        format!("(?-u:[{body}])")
    }

    /// A lone surrogate `unit` outside a class (non-`u` mode): the half of the astral characters that have it.
    pub(super) fn emit_lone_surrogate(&mut self, unit: u32) {
        let mut set = ClassUnicode::empty();
        push_unit_range(&mut set, unit, unit);
        self.emit_unit_set(&set);
    }

    /// An astral character (non-`u` mode) as a whole: as it is, or its bytes in the view.
    fn astral(&mut self, c: char) -> String {
        let low = (c as usize - 0x10000) & 0x3FF;
        let Some(view) = &self.low_view else {
            // Its low surrogate must have a class of its own in a view.
            self.astral_lows.push(vec![(low as u16, low as u16)]);
            return format!("\\x{{{:X}}}", c as u32);
        };
        let mut bytes = [0; 4];
        c.encode_utf8(&mut bytes);
        bytes[3] = view.byte(low);
        format!(r"(?-u:\x{:02X}\x{:02X}\x{:02X}\x{:02X})", bytes[0], bytes[1], bytes[2], bytes[3])
    }

    /// An astral character `c` outside a class and not quantified (non-`u` mode).
    pub(super) fn emit_astral(&mut self, c: char) {
        let text = self.astral(c);
        self.out.push_str(&text);
    }

    /// An astral character `c` under a quantifier (non-`u` mode): JavaScript repeats only its low half, and in
    /// valid UTF-8 a low half follows a high half at most once.
    pub(super) fn emit_quantified_astral(&mut self, c: char, min: u64, max: Option<u64>, lazy: bool) {
        let full = self.astral(c);
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

/// Translates with the view the pattern needs, if any: a first pass finds the sets of low surrogates the
/// pattern names, a second writes them for the view. Returns the pattern and the view.
pub(super) fn translate_units<'s>(
    src: &'s str,
    run: impl Fn(&'s str, Option<LowView>) -> Result<Parser<'s>, JsRegexError>,
) -> Result<(Parser<'s>, Option<LowView>), JsRegexError> {
    let first = run(src, None)?;
    if first.low_sets.is_empty() {
        return Ok((first, None));
    }
    let sets: Vec<LowSet> = first.low_sets.iter().chain(&first.astral_lows).cloned().collect();
    let Some(view) = LowView::new(&sets, 0)? else { return Ok((first, None)) };
    let second = run(src, Some(view.clone()))?;
    Ok((second, Some(view)))
}

/// The high halves of the astral characters whose high surrogates are `0xD800 + first ..= 0xD800 + last`:
/// their first three bytes (the ranges cover whole low surrogates, so the fourth byte is free).
fn high_halves(first: u16, last: u16) -> Vec<String> {
    let from = char::from_u32(0x10000 + (u32::from(first) << 10)).expect("astral");
    let to = char::from_u32(0x10000 + (u32::from(last) << 10) + 0x3FF).expect("astral");
    Utf8Sequences::new(from, to)
        .map(|seq| {
            let r = seq.as_slice();
            debug_assert!(r.len() == 4 && r[3].start == 0x80 && r[3].end == 0xBF);
            let ranges: String = r[..3]
                .iter()
                .map(|b| {
                    if b.start == b.end {
                        format!(r"\x{:02X}", b.start)
                    } else {
                        format!(r"[\x{:02X}-\x{:02X}]", b.start, b.end)
                    }
                })
                .collect();
            format!("(?-u:{ranges})")
        })
        .collect()
}

/// The high half `c` starts with: its first two bytes, and the third byte's two high payload bits (the low
/// four belong to the low surrogate).
fn high_half(c: char) -> String {
    let mut bytes = [0; 4];
    c.encode_utf8(&mut bytes);
    let third = bytes[2] & 0xF0;
    format!(r"(?-u:\x{:02X}\x{:02X}[\x{:02X}-\x{:02X}])", bytes[0], bytes[1], third, third | 0x0F)
}
