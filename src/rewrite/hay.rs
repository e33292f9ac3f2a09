//! What every search of a stage works on and answers with, shared by the stream, the sweep and the link
//! matcher: the hay, the next-match answer and the UTF-8 helpers that keep matches on character
//! boundaries. It depends on nothing else in the engine.

/// The bytes a stage searches, what its automata read instead (the same bytes but for rules with multi-line
/// anchors, which read their line view, see `super::lines`), and the automata's byte before them (`None` at
/// the start of the body), which `\b` and `^` look at.
#[derive(Clone, Copy)]
pub(super) struct Hay<'a> {
    pub(super) bytes: &'a [u8],
    /// As long as `bytes`; what the automata and the prefilter read.
    pub(super) view: &'a [u8],
    pub(super) before: Option<u8>,
    /// The stage's input before `bytes`, as much as the rule looks back (see `Rule::look_behind_len`).
    pub(super) tail: &'a [u8],
}

impl Hay<'_> {
    /// The byte before `at` as the automata read it.
    pub(super) fn look_behind(&self, at: usize) -> Option<u8> {
        match at.checked_sub(1) {
            Some(i) => Some(self.view[i]),
            None => self.before,
        }
    }

    /// Whether JavaScript may start a match at `at`: a character boundary, or, for a rule that works on
    /// UTF-16 units (no `u` flag), the low half of an astral character.
    #[inline]
    pub(super) fn can_start(&self, at: usize, units: bool) -> bool {
        at >= self.bytes.len() || !is_continuation(self.bytes[at]) || (units && low_half(self.bytes, at))
    }
}

/// `tail` made the last `keep` bytes of the input before the next hay, `settled` the bytes just written out.
pub(super) fn keep_tail(tail: &mut Vec<u8>, settled: &[u8], keep: usize) {
    let from_tail = keep.saturating_sub(settled.len()).min(tail.len());
    tail.drain(..tail.len() - from_tail);
    tail.extend_from_slice(&settled[settled.len().saturating_sub(keep)..]);
}

/// Whether `at` is the last byte of a 4-byte character in `bytes` (where its low surrogate starts). Hays of
/// rules that work on UTF-16 units start at character boundaries, so the three bytes before are in `bytes`.
pub(super) fn low_half(bytes: &[u8], at: usize) -> bool {
    at >= 3
        && at < bytes.len()
        && (0xF0..=0xF4).contains(&bytes[at - 3])
        && bytes[at - 2..=at].iter().all(|&b| is_continuation(b))
}

/// Where the character that `at` falls inside starts (`at` itself at a boundary). A character cut by the end
/// of `bytes` counts as inside.
pub(super) fn char_start(bytes: &[u8], at: usize) -> usize {
    for back in 1..=3 {
        let Some(lead) = at.checked_sub(back) else { break };
        if !is_continuation(bytes[lead]) {
            return if utf8_width(bytes[lead]) > back { lead } else { at };
        }
    }
    at
}

/// `bytes[from..to]` of a rule that works on UTF-16 units. A half of an astral character cut off by a match at
/// either edge is written as that lone surrogate in its 3-byte form (as in WTF-8), which
/// [`resolve_surrogates`] turns into UTF-8 once the neighbouring output is known: JavaScript's result may put
/// the two halves back together (`"😀".replace(/(?:)/g, "")`), or leave one alone (U+FFFD in Node's UTF-8).
pub(super) fn unit_text(bytes: &[u8], from: usize, to: usize) -> std::borrow::Cow<'_, [u8]> {
    let head = from < to && low_half(bytes, from);
    let start = from + usize::from(head);
    let tail = to >= start + 3 && low_half(bytes, to);
    if !head && !tail {
        return std::borrow::Cow::Borrowed(&bytes[from..to]);
    }
    let end = if tail { to - 3 } else { to };
    let mut text = Vec::with_capacity(to - from + 6);
    if head {
        push_surrogate(&mut text, surrogates_of(bytes, from - 3).1);
    }
    text.extend_from_slice(&bytes[start..end]);
    if tail {
        push_surrogate(&mut text, surrogates_of(bytes, to - 3).0);
    }
    std::borrow::Cow::Owned(text)
}

/// The UTF-16 surrogates of the 4-byte character at `at`.
pub(super) fn surrogates_of(bytes: &[u8], at: usize) -> (u16, u16) {
    let cp = (u32::from(bytes[at] & 0x07) << 18)
        | (u32::from(bytes[at + 1] & 0x3F) << 12)
        | (u32::from(bytes[at + 2] & 0x3F) << 6)
        | u32::from(bytes[at + 3] & 0x3F);
    let units = cp - 0x10000;
    (0xD800 + (units >> 10) as u16, 0xDC00 + (units & 0x3FF) as u16)
}

/// Appends a lone surrogate in its 3-byte form.
pub(super) fn push_surrogate(out: &mut Vec<u8>, unit: u16) {
    out.extend_from_slice(&[0xE0 | (unit >> 12) as u8, 0x80 | ((unit >> 6) & 0x3F) as u8, 0x80 | (unit & 0x3F) as u8]);
}

/// The lone surrogate written at `at` in its 3-byte form, if any.
fn surrogate_at(bytes: &[u8], at: usize) -> Option<u16> {
    match bytes.get(at..at + 3)? {
        &[0xED, b @ 0xA0..=0xBF, c @ 0x80..=0xBF] => Some(0xD000 | (u16::from(b & 0x3F) << 6) | u16::from(c & 0x3F)),
        _ => None,
    }
}

/// Rewrites `buf[from..]`, whose lone surrogates are in their 3-byte form, as UTF-8 the way JavaScript's
/// string would be written: a high surrogate right before a low one becomes their character, any other
/// U+FFFD. With `keep_last_high`, a high surrogate at the very end is taken off and returned instead (what
/// comes next may pair with it).
pub(super) fn resolve_surrogates(buf: &mut Vec<u8>, from: usize, keep_last_high: bool) -> Option<u16> {
    let (mut read, mut write) = (from, from);
    // Each step writes no more than it reads, so the rewrite works in place.
    while read < buf.len() {
        let Some(unit) = surrogate_at(buf, read) else {
            buf[write] = buf[read];
            (read, write) = (read + 1, write + 1);
            continue;
        };
        if unit < 0xDC00 {
            if let Some(low) = surrogate_at(buf, read + 3).filter(|&low| low >= 0xDC00) {
                let cp = 0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                let c = char::from_u32(cp).expect("a surrogate pair is a character");
                c.encode_utf8(&mut buf[write..write + 4]);
                (read, write) = (read + 6, write + 4);
                continue;
            }
            if keep_last_high && read + 3 == buf.len() {
                buf.truncate(write);
                return Some(unit);
            }
        }
        buf[write..write + 3].copy_from_slice(REPLACEMENT_CHARACTER);
        (read, write) = (read + 3, write + 3);
    }
    buf.truncate(write);
    None
}

/// U+FFFD in UTF-8.
pub(super) const REPLACEMENT_CHARACTER: &[u8] = "\u{FFFD}".as_bytes();
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    Match {
        start: usize,
        end: usize,
    },
    /// No match can start before this position; bytes from it on are held back.
    Pending(usize),
    /// No match in the data seen so far can start anywhere (or, at the end, no match at all).
    Exhausted,
    /// Literal rules that share a search must run one after another from this position on, where their
    /// shared search would differ from the rules in turn (see `literals::group`); bytes from it on are held
    /// back for them.
    InTurn(usize),
}

pub(super) fn is_continuation(byte: u8) -> bool {
    (0x80..0xC0).contains(&byte)
}

/// Bytes in the UTF-8 character starting with `byte` (1 for bytes that start none).
pub(super) fn utf8_width(byte: u8) -> usize {
    match byte {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 1,
    }
}

/// `bytes[from..to]`, a match or a group; see [`unit_text`] for a rule that works on UTF-16 units.
pub(super) fn match_text(bytes: &[u8], from: usize, to: usize, units: bool) -> std::borrow::Cow<'_, [u8]> {
    if units {
        unit_text(bytes, from, to)
    } else {
        std::borrow::Cow::Borrowed(&bytes[from..to])
    }
}

/// [`match_text`] of a span of the stage's tail followed by the hay, which begins in the tail (a lookbehind's
/// group): `from` and `to` count from the tail's start. Also whether it holds a lone surrogate.
pub(super) fn tail_text(hay: &Hay<'_>, from: usize, to: usize, units: bool) -> (Vec<u8>, bool) {
    // With the three bytes before, which tell whether it begins on a low half.
    let start = from.saturating_sub(3);
    let piece = match to <= hay.tail.len() {
        true => hay.tail[start..to].to_vec(),
        false => [&hay.tail[start..], &hay.bytes[..to - hay.tail.len()]].concat(),
    };
    match match_text(&piece, from - start, to - start, units) {
        std::borrow::Cow::Owned(text) => (text, true),
        std::borrow::Cow::Borrowed(text) => (text.to_vec(), false),
    }
}

/// Writes `bytes[from..to]`, text outside any match; for a rule that works on UTF-16 units, a half of an astral
/// character cut off by a match at either edge is a lone surrogate (see [`unit_text`]). Returns whether one was
/// written.
pub(super) fn emit_plain(out: &mut Vec<u8>, bytes: &[u8], from: usize, to: usize, units: bool) -> bool {
    let text = match_text(bytes, from, to, units);
    out.extend_from_slice(&text);
    matches!(text, std::borrow::Cow::Owned(_))
}
