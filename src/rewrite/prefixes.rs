//! Where a pending match can start, found by reading back from the end of the data.
//!
//! When a chunk ends, a stage must hold back the bytes from the earliest start whose match may still
//! be completed by the next chunk. Trying each start forward costs a DFA run per position since the
//! last match. Instead, a reverse DFA of the rule's *non-empty prefixes* reads back from the end of
//! the data and stops as soon as no prefix can reach further: usually a few bytes.
//!
//! The prefix language is built on the rule's HIR. It never misses a start whose DFA run is alive (it
//! is the set of byte strings that follow a path of the pattern with every look-around inside them
//! satisfied, which is what keeps a DFA run alive); it may accept a few more (a look-around right
//! after the prefix is not checked), so the stage verifies the start it gets.

use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, Hir, HirKind, Repetition};
use regex_syntax::utf8::Utf8Sequences;

/// The byte strings after which an anchored DFA run of `hir` is not dead: a non-empty prefix of a
/// match, or a whole match and one more byte (DFAs report a match one byte late, so the run that
/// found it is not dead before that byte).
pub(super) fn live_runs(hir: &Hir) -> Hir {
    let any_byte = Hir::class(Class::Bytes(ClassBytes::new([ClassBytesRange::new(0, 255)])));
    Hir::alternation(vec![nonempty_prefixes(hir), Hir::concat(vec![hir.clone(), any_byte])])
}

/// A pattern matching exactly the non-empty byte strings `s` for which `s t` follows a path of `hir`
/// for some `t`, look-arounds inside `s` included. Unicode classes are spelled out in UTF-8 so that a
/// prefix may end inside a character.
fn nonempty_prefixes(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Hir::fail(),
        HirKind::Literal(literal) => byte_prefixes(literal.0.iter().map(|&b| Hir::literal([b])).collect()),
        HirKind::Class(Class::Bytes(_)) => hir.clone(),
        HirKind::Class(Class::Unicode(class)) => {
            let mut branches = Vec::new();
            for range in class.iter() {
                for sequence in Utf8Sequences::new(range.start(), range.end()) {
                    let bytes = sequence
                        .as_slice()
                        .iter()
                        .map(|r| Hir::class(Class::Bytes(ClassBytes::new([ClassBytesRange::new(r.start, r.end)]))))
                        .collect();
                    branches.push(byte_prefixes(bytes));
                }
            }
            Hir::alternation(branches)
        }
        HirKind::Repetition(repetition) => {
            if repetition.max == Some(0) {
                return Hir::fail();
            }
            // Some whole copies (fewer than the most allowed), then a prefix of one more.
            let copies = Hir::repetition(Repetition {
                min: 0,
                max: repetition.max.map(|max| max - 1),
                greedy: true,
                sub: repetition.sub.clone(),
            });
            Hir::concat(vec![copies, nonempty_prefixes(&repetition.sub)])
        }
        HirKind::Capture(capture) => nonempty_prefixes(&capture.sub),
        HirKind::Concat(parts) => Hir::alternation(
            (0..parts.len())
                .map(|i| {
                    let mut prefix: Vec<Hir> = parts[..i].to_vec();
                    prefix.push(nonempty_prefixes(&parts[i]));
                    Hir::concat(prefix)
                })
                .collect(),
        ),
        HirKind::Alternation(branches) => Hir::alternation(branches.iter().map(nonempty_prefixes).collect()),
    }
}

/// `b0 (b1 (b2 ...)?)?`: the non-empty prefixes of a sequence of single-byte patterns.
fn byte_prefixes(bytes: Vec<Hir>) -> Hir {
    bytes
        .into_iter()
        .rev()
        .fold(None, |rest: Option<Hir>, byte| {
            Some(match rest {
                None => byte,
                Some(rest) => Hir::concat(vec![
                    byte,
                    Hir::repetition(Repetition { min: 0, max: Some(1), greedy: true, sub: Box::new(rest) }),
                ]),
            })
        })
        .unwrap_or_else(Hir::fail)
}
