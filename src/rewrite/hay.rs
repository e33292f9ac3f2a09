//! What every search of a stage works on and answers with, shared by the stream, the sweep and the link
//! matcher: the hay, the next-match answer and the UTF-8 helpers that keep matches on character
//! boundaries. It depends on nothing else in the engine.

/// The bytes a stage searches, and the byte before them (`None` at the start of the body), which
/// `\b` and `^` look at.
#[derive(Clone, Copy)]
pub(super) struct Hay<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) before: Option<u8>,
}

impl Hay<'_> {
    pub(super) fn look_behind(&self, at: usize) -> Option<u8> {
        match at.checked_sub(1) {
            Some(i) => Some(self.bytes[i]),
            None => self.before,
        }
    }
}

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
