//! Whether matches of two regular languages can overlap in some text: the compile-time test behind
//! searching regex rules together (see `regex_groups`).
//!
//! A language is read from its Thompson NFA as it stands, assertions (`\b`, `^`) taken as always true, so
//! each answer covers more strings than the pattern matches: "may overlap" can be wrong, "cannot" cannot.
//! Two matches overlap when some non-empty text `w` is both a suffix of one and a prefix of the other, or
//! lies inside one and is the other whole; [`may_overlap`] walks both automata side by side on the same
//! bytes to find such a `w`.

use std::collections::HashSet;

use regex_automata::nfa::thompson::{self, State, NFA};
use regex_automata::util::primitives::StateID;
use regex_syntax::hir::Hir;

/// NFA states beyond which a language is not analysed (its rule keeps a stage of its own).
const STATE_LIMIT: usize = 4096;

/// The bytes a set may hold, as a 256-bit mask.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(super) struct ByteSet([u128; 2]);

impl ByteSet {
    fn add_range(&mut self, lo: u8, hi: u8) {
        for byte in lo..=hi {
            self.0[usize::from(byte >> 7)] |= 1 << (byte & 127);
        }
    }

    pub(super) fn union(self, other: ByteSet) -> ByteSet {
        ByteSet([self.0[0] | other.0[0], self.0[1] | other.0[1]])
    }

    pub(super) fn iter(self) -> impl Iterator<Item = u8> {
        (0..=255u8).filter(move |&b| self.0[usize::from(b >> 7)] & (1 << (b & 127)) != 0)
    }
}

/// Where a byte leads: the consuming states reached without reading more, and whether a match is.
#[derive(Default)]
struct Closure {
    /// Indexes into [`Language::steps`] of states that can still reach a match.
    states: Vec<u32>,
    matches: bool,
}

impl Closure {
    /// Some text read so far can still be completed into a match.
    fn goes_on(&self) -> bool {
        self.matches || !self.states.is_empty()
    }
}

/// A regular language as its automaton, reduced to the states that lie on some match.
pub(super) struct Language {
    /// Each consuming state's transitions: a byte range and the closure it leads to.
    steps: Vec<Vec<(u8, u8, u32)>>,
    /// The consuming states that lie on some match.
    live: Vec<bool>,
    closures: Vec<Closure>,
    start: u32,
    /// Bytes a match can start with, end with, and hold anywhere.
    pub(super) first: ByteSet,
    pub(super) last: ByteSet,
    pub(super) bytes: ByteSet,
}

impl Language {
    /// `None` when the pattern's automaton is too big to analyse.
    pub(super) fn of(hir: &Hir) -> Option<Language> {
        let nfa = thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .nfa_size_limit(Some(STATE_LIMIT * 64))
                    .which_captures(thompson::WhichCaptures::None),
            )
            .build_from_hir(hir)
            .ok()?;
        if nfa.states().len() > STATE_LIMIT {
            return None;
        }
        Some(Builder::new(&nfa).language(nfa.start_anchored()))
    }

    /// The empty text is a match.
    pub(super) fn can_be_empty(&self) -> bool {
        self.closures[self.start as usize].matches
    }

    fn goes_on(&self, closure: u32) -> bool {
        self.closures[closure as usize].goes_on()
    }
}

/// Builds a [`Language`]: closures by NFA state, then the states kept (those on some match).
struct Builder<'a> {
    nfa: &'a NFA,
    /// Consuming NFA states by their index in `steps`, and back.
    consuming: Vec<StateID>,
    index_of: Vec<Option<u32>>,
    /// Closure index by NFA state.
    closure_of: Vec<Option<u32>>,
    closures: Vec<(Vec<u32>, bool)>,
}

impl<'a> Builder<'a> {
    fn new(nfa: &'a NFA) -> Builder<'a> {
        let n = nfa.states().len();
        Builder { nfa, consuming: Vec::new(), index_of: vec![None; n], closure_of: vec![None; n], closures: Vec::new() }
    }

    fn consuming_index(&mut self, id: StateID) -> u32 {
        if let Some(index) = self.index_of[id.as_usize()] {
            return index;
        }
        let index = self.consuming.len() as u32;
        self.consuming.push(id);
        self.index_of[id.as_usize()] = Some(index);
        index
    }

    /// The closure of `id`: every state reached through unions, captures and assertions.
    fn closure(&mut self, id: StateID) -> u32 {
        if let Some(c) = self.closure_of[id.as_usize()] {
            return c;
        }
        let (mut states, mut matches) = (Vec::new(), false);
        let mut seen = HashSet::new();
        let mut stack = vec![id];
        while let Some(at) = stack.pop() {
            if !seen.insert(at) {
                continue;
            }
            match self.nfa.state(at) {
                State::ByteRange { .. } | State::Sparse(_) | State::Dense(_) => {
                    let index = self.consuming_index(at);
                    states.push(index);
                }
                State::Look { next, .. } | State::Capture { next, .. } => stack.push(*next),
                State::Union { alternates } => stack.extend(alternates.iter().rev()),
                State::BinaryUnion { alt1, alt2 } => stack.extend([*alt2, *alt1]),
                State::Match { .. } => matches = true,
                State::Fail => {}
            }
        }
        let c = self.closures.len() as u32;
        self.closures.push((states, matches));
        self.closure_of[id.as_usize()] = Some(c);
        c
    }

    fn transitions(&self, id: StateID) -> Vec<(u8, u8, StateID)> {
        match self.nfa.state(id) {
            State::ByteRange { trans } => vec![(trans.start, trans.end, trans.next)],
            State::Sparse(sparse) => sparse.transitions.iter().map(|t| (t.start, t.end, t.next)).collect(),
            State::Dense(dense) => {
                let mut out: Vec<(u8, u8, StateID)> = Vec::new();
                for (byte, &next) in (0..=255u8).zip(dense.transitions.iter()) {
                    if next == StateID::ZERO {
                        continue;
                    }
                    match out.last_mut() {
                        Some((_, hi, to)) if *to == next && *hi + 1 == byte => *hi = byte,
                        _ => out.push((byte, byte, next)),
                    }
                }
                out
            }
            _ => Vec::new(),
        }
    }

    fn language(mut self, start: StateID) -> Language {
        let start = self.closure(start);
        // Every consuming state reachable from the start, with its transitions (closures made as found).
        let mut steps: Vec<Vec<(u8, u8, u32)>> = Vec::new();
        let mut visited: Vec<bool> = Vec::new();
        let mut pending: Vec<u32> = self.closures[start as usize].0.clone();
        while let Some(index) = pending.pop() {
            let index = index as usize;
            if index >= visited.len() {
                visited.resize(index + 1, false);
                steps.resize(index + 1, Vec::new());
            }
            if std::mem::replace(&mut visited[index], true) {
                continue;
            }
            for (lo, hi, next) in self.transitions(self.consuming[index]) {
                let c = self.closure(next);
                steps[index].push((lo, hi, c));
                pending.extend(self.closures[c as usize].0.iter().copied());
            }
        }
        steps.resize(self.consuming.len(), Vec::new());
        // Live states: those from which a match can still be reached (a fixpoint over the transitions).
        let mut live = vec![false; steps.len()];
        loop {
            let mut changed = false;
            for (index, transitions) in steps.iter().enumerate() {
                if live[index] {
                    continue;
                }
                let reaches = transitions.iter().any(|&(_, _, c)| {
                    let (states, matches) = &self.closures[c as usize];
                    *matches || states.iter().any(|&s| live[s as usize])
                });
                if reaches {
                    live[index] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let closures: Vec<Closure> = self
            .closures
            .into_iter()
            .map(|(states, matches)| Closure {
                states: states.into_iter().filter(|&s| live[s as usize]).collect(),
                matches,
            })
            .collect();
        let (mut first, mut last, mut bytes) = (ByteSet::default(), ByteSet::default(), ByteSet::default());
        for (index, transitions) in steps.iter().enumerate() {
            if !live[index] {
                continue;
            }
            let from_start = closures[start as usize].states.contains(&(index as u32));
            for &(lo, hi, c) in transitions {
                let to = &closures[c as usize];
                if !to.goes_on() {
                    continue;
                }
                bytes.add_range(lo, hi);
                if from_start {
                    first.add_range(lo, hi);
                }
                if to.matches {
                    last.add_range(lo, hi);
                }
            }
        }
        Language { steps, live, closures, start, first, last, bytes }
    }
}

/// Whether some match of `x` and some match of `y` starting inside it (at a later byte, or the same one)
/// can share a byte: a non-empty text that is a suffix of an `x` match and a prefix of a `y` match, or
/// lies inside an `x` match and is a `y` match. Call it both ways round for any overlap. `budget` counts
/// the pairs of states visited; when it runs out the answer is "may".
pub(super) fn may_overlap(x: &Language, y: &Language, budget: &mut usize) -> bool {
    let mut seen: HashSet<(u32, u32)> = HashSet::new();
    let mut queue: Vec<(u32, u32)> = Vec::new();
    // `x` from anywhere inside a match, `y` from its start.
    let x_states = (0..x.steps.len() as u32).filter(|&s| x.live[s as usize]);
    for a in x_states {
        for &b in &y.closures[y.start as usize].states {
            if seen.insert((a, b)) {
                queue.push((a, b));
            }
        }
    }
    while let Some((a, b)) = queue.pop() {
        for &(lo1, hi1, cx) in &x.steps[a as usize] {
            for &(lo2, hi2, cy) in &y.steps[b as usize] {
                if lo1.max(lo2) > hi1.min(hi2) {
                    continue;
                }
                let (to_x, to_y) = (&x.closures[cx as usize], &y.closures[cy as usize]);
                if (to_x.matches && y.goes_on(cy)) || (to_y.matches && x.goes_on(cx)) {
                    return true;
                }
                for &a2 in &to_x.states {
                    for &b2 in &to_y.states {
                        if seen.insert((a2, b2)) {
                            if *budget == 0 {
                                return true;
                            }
                            *budget -= 1;
                            queue.push((a2, b2));
                        }
                    }
                }
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn language(pattern: &str) -> Language {
        let hir = regex_syntax::ParserBuilder::new().utf8(false).build().parse(pattern).unwrap();
        Language::of(&hir).unwrap()
    }

    fn overlap(x: &str, y: &str) -> bool {
        let (x, y) = (language(x), language(y));
        let mut budget = 1 << 20;
        may_overlap(&x, &y, &mut budget) || may_overlap(&y, &x, &mut budget)
    }

    #[test]
    fn matches_that_can_share_text_are_found() {
        // Suffix of one, prefix of the other.
        assert!(overlap("foo[0-9]+", "[0-9]bar"));
        assert!(overlap("ab", "bc"));
        // One inside the other.
        assert!(overlap("data-[a-z]+", "track"));
        assert!(overlap(r#"data-track-1="[^"]*""#, r#"data-track-2="[^"]*""#));
        // The same start.
        assert!(overlap("a+", "ab"));
        // `barf` ends in the `f` that `foo` starts with.
        assert!(overlap(r"foo\d+", "bar[a-z]+"));
    }

    #[test]
    fn matches_that_cannot_share_text_are_told_apart() {
        assert!(!overlap(r"https?://old\.example\.com", r"cdn[0-9]+\.legacy\.net"));
        assert!(!overlap(r"(sku|ticket)-[0-9]{3,}", r"legacy-host-[0-9]+\.example\.org"));
        assert!(!overlap("ab", "cd"));
        // A shared letter in the middle only: no suffix of one starts the other.
        assert!(!overlap("xay", "bac"));
    }

    #[test]
    fn edges_and_emptiness() {
        let l = language("(ab|c)d*e");
        assert_eq!(l.first.iter().collect::<Vec<_>>(), b"ac");
        assert_eq!(l.last.iter().collect::<Vec<_>>(), b"e");
        assert_eq!(l.bytes.iter().collect::<Vec<_>>(), b"abcde");
        assert!(!l.can_be_empty());
        assert!(language("a*").can_be_empty());
        assert!(language(r"\ba?").can_be_empty());
    }

    #[test]
    fn a_spent_budget_answers_may() {
        // No overlap (each needs a letter the other lacks), found only after many pairs of states.
        assert!(!overlap("[ab]{1,30}c", "[ab]{1,30}d"));
        let (x, y) = (language("[ab]{1,30}c"), language("[ab]{1,30}d"));
        let mut budget = 3;
        assert!(may_overlap(&x, &y, &mut budget));
    }
}
