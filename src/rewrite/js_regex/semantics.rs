//! Where JavaScript and the engine read a repetition differently, and the rewrite of the translated pattern
//! that makes the engine's matches (spans) JavaScript's.
//!
//! JavaScript fails an optional iteration that matches empty (ES2024 RepeatMatcher: "if min = 0 and y's
//! endIndex = x's endIndex, return failure") and backtracks into the other ways the body could match; the
//! engine takes the empty iteration (bounded repetitions are unrolled) or drops it by its own rule (loops).
//! So for a body `X` that can match empty, `X{n,m}` becomes `X{n}` followed by `m - n` optional iterations of
//! `X` restricted to its non-empty ways, in the same order of preference: the same spans as JavaScript.
//!
//! Group values are another matter (JavaScript also clears the body's groups at every iteration): rules whose
//! groups depend on it get them from [`super::captures`]; [`needs_js_captures`] says which.

use regex_syntax::hir::{Hir, HirKind, Repetition};

/// `hir` with JavaScript's empty-iteration rule made explicit and capture groups removed (the automata that
/// find spans never report groups).
pub(crate) fn js_repetitions(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Repetition(rep) => {
            let sub = js_repetitions(&rep.sub);
            let optional = rep.max.is_none_or(|max| max > rep.min);
            if !(nullable(&sub) && optional) {
                return Hir::repetition(Repetition { sub: Box::new(sub), ..rep.clone() });
            }
            let mandatory = Hir::repetition(Repetition {
                min: rep.min,
                max: Some(rep.min),
                greedy: true,
                sub: Box::new(sub.clone()),
            });
            let rest = Hir::repetition(Repetition {
                min: 0,
                max: rep.max.map(|max| max - rep.min),
                greedy: rep.greedy,
                sub: Box::new(nonempty(&sub)),
            });
            Hir::concat(vec![mandatory, rest])
        }
        HirKind::Capture(cap) => js_repetitions(&cap.sub),
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(js_repetitions).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(js_repetitions).collect()),
        _ => hir.clone(),
    }
}

/// Whether the engine's group values can differ from JavaScript's: a group inside a repetition that can run
/// its body more than once (JavaScript clears the body's groups at every iteration), or a repetition whose
/// iteration rule [`js_repetitions`] rewrote (the rewritten pattern has no groups to report).
pub(crate) fn needs_js_captures(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Repetition(rep) => {
            let optional = rep.max.is_none_or(|max| max > rep.min);
            let repeats = rep.max.is_none_or(|max| max > 1);
            (has_captures(&rep.sub) && repeats) || (nullable(&rep.sub) && optional) || needs_js_captures(&rep.sub)
        }
        HirKind::Capture(cap) => needs_js_captures(&cap.sub),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs.iter().any(needs_js_captures),
        _ => false,
    }
}

fn has_captures(hir: &Hir) -> bool {
    hir.properties().explicit_captures_len() > 0
}

/// Whether `hir` can match the empty string. (Not `minimum_len`, which is `None` when a branch can never
/// match, such as an astral character repeated twice without `u`.)
pub(super) fn nullable(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => true,
        HirKind::Literal(lit) => lit.0.is_empty(),
        HirKind::Class(_) => false,
        HirKind::Repetition(rep) => rep.min == 0 || nullable(&rep.sub),
        HirKind::Capture(cap) => nullable(&cap.sub),
        HirKind::Concat(subs) => subs.iter().all(nullable),
        HirKind::Alternation(subs) => subs.iter().any(nullable),
    }
}

/// One run of a pattern's ways of matching, in order of preference: all non-empty, or all empty.
struct Piece {
    hir: Hir,
    empty: bool,
}

/// `hir` (already rewritten, so its repetitions follow JavaScript's rule) restricted to its non-empty
/// matches, with their order of preference kept.
fn nonempty(hir: &Hir) -> Hir {
    Hir::alternation(pieces(hir).into_iter().filter(|p| !p.empty).map(|p| p.hir).collect())
}

/// `hir`'s ways of matching as runs of non-empty and empty ones, in order of preference. Empty ways differ
/// only in the assertions they pass, so a run of them keeps its assertions.
fn pieces(hir: &Hir) -> Vec<Piece> {
    if !nullable(hir) {
        return vec![Piece { hir: hir.clone(), empty: false }];
    }
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => vec![Piece { hir: hir.clone(), empty: true }],
        HirKind::Capture(cap) => pieces(&cap.sub),
        HirKind::Alternation(subs) => merged(subs.iter().flat_map(pieces)),
        HirKind::Concat(subs) => {
            let mut acc = vec![Piece { hir: Hir::empty(), empty: true }];
            for sub in subs {
                let next = pieces(sub);
                let mut out = Vec::new();
                for piece in acc {
                    if piece.empty {
                        for q in &next {
                            out.push(Piece {
                                hir: Hir::concat(vec![piece.hir.clone(), q.hir.clone()]),
                                empty: q.empty,
                            });
                        }
                    } else {
                        out.push(Piece { hir: Hir::concat(vec![piece.hir, sub.clone()]), empty: false });
                    }
                }
                acc = merged(out);
            }
            acc
        }
        HirKind::Repetition(rep) if !nullable(&rep.sub) => {
            // min is 0 here (a body that cannot match empty would make the repetition non-nullable).
            if rep.max == Some(0) {
                return vec![Piece { hir: Hir::empty(), empty: true }];
            }
            let more = Piece { hir: Hir::repetition(Repetition { min: 1, ..rep.clone() }), empty: false };
            let stop = Piece { hir: Hir::empty(), empty: true };
            if rep.greedy {
                vec![more, stop]
            } else {
                vec![stop, more]
            }
        }
        HirKind::Repetition(rep) => {
            // A nullable body is only left with a fixed count: that many iterations in a row.
            let count = rep.max.unwrap_or(rep.min);
            let copies = (0..count).map(|_| (*rep.sub).clone()).collect();
            pieces(&Hir::concat(copies))
        }
        // Literals and classes never match empty.
        _ => vec![Piece { hir: hir.clone(), empty: false }],
    }
}

/// Joins neighbouring runs of the same kind.
fn merged(pieces: impl IntoIterator<Item = Piece>) -> Vec<Piece> {
    let mut out: Vec<(Vec<Hir>, bool)> = Vec::new();
    for piece in pieces {
        match out.last_mut() {
            Some((hirs, empty)) if *empty == piece.empty => hirs.push(piece.hir),
            _ => out.push((vec![piece.hir], piece.empty)),
        }
    }
    out.into_iter().map(|(hirs, empty)| Piece { hir: Hir::alternation(hirs), empty }).collect()
}
