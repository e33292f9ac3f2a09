//! JavaScript's multi-line `^`/`$` (line terminators `\n`, `\r`, U+2028 and U+2029, each on its own, so that
//! there is a line start and a line end between the `\r` and the `\n` of `\r\n`) on an engine whose DFAs
//! look one byte around a position and know only one custom line terminator byte besides CRLF mode.
//!
//! A rule with such anchors (a "lines" rule) runs its automata on a view of the text, of the same length
//! (so offsets are the text's), in which every line start follows one of two bytes and every line end precedes
//! one of two bytes, none of which a pattern can take for anything else:
//! - `\r` is [`LINE_TERMINATOR`] (0xFF), the engine's custom line terminator (`(?m:^)`, `(?m:$)`);
//! - U+2028 and U+2029 (`E2 80 A8`, `E2 80 A9`) are `0D A8 0A` and `0D A9 0A`: CRLF mode's `$` holds before
//!   the `0D` (a real `\r` never shows as `0D` in the view) and its `^` after the `0A`; the bytes inside
//!   are never match positions (the text has continuation bytes there);
//! - a stray 0xFF in the text (invalid UTF-8, which no pattern matches) is 0xFE;
//! - everything else, `\n` included, is itself.
//!
//! So `^` is `(?m:^)|(?mR:^)` (after 0xFF or `0A`) and `$` is `(?m:$)|(?mR:$)` (before 0xFF, `0D` or `0A`;
//! CRLF mode's exception, `0D` then `0A`, never meets a match position), and the rule's pattern is rewritten
//! by [`line_view_hir`] to match the view's spelling of `\r`, U+2028 and U+2029. The view of a byte depends on
//! the two after it, so a stream holds back an `E2` or `E2 80` at the end of the data until they are known
//! ([`settled_len`]); a held-back hay always starts at a character boundary, so never inside a U+2028.

use regex_automata::util::look::LookMatcher;
use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind};

/// The view's `\r`, and the engine's custom line terminator for lines rules.
pub(super) const LINE_TERMINATOR: u8 = 0xFF;
/// What a stray [`LINE_TERMINATOR`] byte of the text is in the view.
const STRAY: u8 = 0xFE;
/// JavaScript's multi-line `^` in the view.
pub(super) const LINE_START: &str = "(?:(?m:^)|(?mR:^))";
/// JavaScript's multi-line `$` in the view.
pub(super) const LINE_END: &str = "(?:(?m:$)|(?mR:$))";

/// The look-around matcher of every rule's automata (only lines rules have anchors that use it).
pub(super) fn look_matcher() -> LookMatcher {
    let mut look = LookMatcher::new();
    look.set_line_terminator(LINE_TERMINATOR);
    look
}

/// Whether a translated pattern has JavaScript's multi-line anchors, so that it runs on the line view.
pub(super) fn uses_lines(hir: &Hir) -> bool {
    let looks = hir.properties().look_set();
    looks.contains(regex_syntax::hir::Look::StartLF) || looks.contains(regex_syntax::hir::Look::EndLF)
}

/// Writes the view of `text` into `view` (cleared first).
pub(super) fn line_view(text: &[u8], view: &mut Vec<u8>) {
    view.clear();
    extend_line_view(text, view);
}

/// Appends the view of `text` to `view`. The view of what comes before `text` is not touched: a stream
/// appends each chunk's view to the held bytes' as long as they end where the view is known, at a
/// [`settled_len`] (no U+2028 starts before `text` and ends inside it).
pub(super) fn extend_line_view(text: &[u8], view: &mut Vec<u8>) {
    let base = view.len();
    view.extend_from_slice(text);
    let view = &mut view[base..];
    for at in memchr::memchr3_iter(b'\r', 0xE2, LINE_TERMINATOR, text) {
        match text[at] {
            b'\r' => view[at] = LINE_TERMINATOR,
            LINE_TERMINATOR => view[at] = STRAY,
            _ => {
                if let Some(&[0x80, last @ (0xA8 | 0xA9)]) = text.get(at + 1..at + 3) {
                    view[at..at + 3].copy_from_slice(&[0x0D, last, 0x0A]);
                }
            }
        }
    }
}

/// How much of `text` (not the end of the body) has a known view: all but an `E2` or `E2 80` at its end,
/// which may start U+2028 or U+2029.
pub(super) fn settled_len(text: &[u8]) -> usize {
    match text {
        [.., 0xE2] => text.len() - 1,
        [.., 0xE2, 0x80] => text.len() - 2,
        _ => text.len(),
    }
}

/// `hir` matching the view's spelling of `\r`, U+2028 and U+2029 wherever it matched the text's.
pub(super) fn line_view_hir(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Literal(lit) => Hir::literal(view_literal(&lit.0)),
        HirKind::Class(Class::Unicode(class)) => view_class(class).unwrap_or_else(|| hir.clone()),
        HirKind::Class(Class::Bytes(class)) => {
            // Byte classes only spell halves of astral characters; one with `\r` would be a new kind.
            debug_assert!(!class.ranges().iter().any(|r| r.start() <= b'\r' && b'\r' <= r.end()));
            Hir::class(Class::Bytes(class.clone()))
        }
        HirKind::Empty | HirKind::Look(_) => hir.clone(),
        HirKind::Repetition(rep) => {
            Hir::repetition(regex_syntax::hir::Repetition { sub: Box::new(line_view_hir(&rep.sub)), ..rep.clone() })
        }
        HirKind::Capture(cap) => {
            Hir::capture(regex_syntax::hir::Capture { sub: Box::new(line_view_hir(&cap.sub)), ..cap.clone() })
        }
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(line_view_hir).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(line_view_hir).collect()),
    }
}

/// A literal's bytes (whole characters, or halves of astral ones, which never contain these) in the view.
fn view_literal(text: &[u8]) -> Vec<u8> {
    let mut view = Vec::with_capacity(text.len());
    line_view(text, &mut view);
    view
}

/// A set of characters in the view: the others as they are, and each line terminator it holds as its view
/// (one character each, so their order among the alternatives does not matter). `None`: it holds none.
fn view_class(class: &ClassUnicode) -> Option<Hir> {
    let special =
        [('\r', &[LINE_TERMINATOR][..]), ('\u{2028}', &[0x0D, 0xA8, 0x0A]), ('\u{2029}', &[0x0D, 0xA9, 0x0A])];
    let held: Vec<&[u8]> = special
        .iter()
        .filter(|(c, _)| class.ranges().iter().any(|r| r.start() <= *c && *c <= r.end()))
        .map(|(_, view)| *view)
        .collect();
    if held.is_empty() {
        return None;
    }
    let mut rest = class.clone();
    rest.difference(&ClassUnicode::new(special.iter().map(|(c, _)| ClassUnicodeRange::new(*c, *c))));
    let mut alternatives = Vec::new();
    if !rest.ranges().is_empty() {
        alternatives.push(Hir::class(Class::Unicode(rest)));
    }
    alternatives.extend(held.into_iter().map(Hir::literal));
    Some(Hir::alternation(alternatives))
}
