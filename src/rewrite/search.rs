//! One search of a regex rule over a stage's hay: its inputs, the positions where a match may start, and
//! the anchored DFA run from one start, whose outcome both the stage's own search (in [`super::next_match`])
//! and the one-pass [`super::sweep`] settle starts by.

use regex_automata::dfa::Automaton;
use regex_automata::util::primitives::StateID;
use regex_automata::Span;

use super::hay::Hay;
use super::rule::{Candidates, RegexRule};

impl RegexRule {
    /// Which of a group's patterns matched `hay[start..end]` (0 for a rule on its own), a match already
    /// known to be final: the DFA's match state one byte after its end names the pattern. No two members
    /// of a group can match at one start (see `regex_groups`), so there is one to name.
    pub(super) fn pattern_at(&self, hay: Hay, start: usize, end: usize) -> Option<usize> {
        if self.members.is_empty() {
            return Some(0);
        }
        let dfa = &self.dfa;
        let mut state = self.anchored_starts.get(hay.look_behind(start))?;
        for &byte in &hay.view[start..end] {
            state = dfa.next_state(state, byte);
        }
        state = match hay.view.get(end) {
            Some(&byte) => dfa.next_state(state, byte),
            None => dfa.next_eoi_state(state),
        };
        dfa.is_match_state(state).then(|| dfa.match_pattern(state, 0).as_usize())
    }
}

/// One search of a regex rule over a stage's hay.
#[derive(Clone, Copy)]
pub(super) struct RegexSearch<'a> {
    pub(super) re: &'a RegexRule,
    pub(super) hay: Hay<'a>,
    pub(super) last: bool,
    pub(super) max_match: usize,
}

/// How the anchored run from one start ends.
pub(super) enum Attempt {
    /// A final match ending here.
    Match(usize),
    NoMatch,
    /// Still alive at the end of the data, in this state: more input decides.
    Alive(StateID),
    /// Alive after `max_match` bytes: given up on, its bytes stay as they are.
    Abandoned,
}

impl RegexSearch<'_> {
    /// The smallest position at or after `from` where a match may start, given the data so far.
    pub(super) fn next_candidate(&self, from: usize) -> Option<usize> {
        let hay = self.hay.view;
        let len = hay.len();
        match &self.re.candidates {
            Candidates::Every => Some(from),
            Candidates::Prefix(pre) => {
                // A literal cut by the end of the data shows only as a partial prefix.
                let tail = len.saturating_sub(pre.max_needle_len().saturating_sub(1)).max(from);
                let hit = (from < len).then(|| pre.find(hay, Span::from(from..len))).flatten().map(|s| s.start);
                match hit {
                    Some(h) => Some(h.min(tail)),
                    None => (tail < len).then_some(tail),
                }
            }
            &Candidates::Inner { ref needle, offsets: (first, last) } => {
                // A match whose needle the end of the data cuts (or has not reached) starts at `tail` or later.
                let tail = len.saturating_sub(needle.needle().len() - 1 + last).max(from);
                let search_from = from.saturating_add(first);
                let hit =
                    (search_from < len).then(|| needle.find(&hay[search_from..])).flatten().map(|h| search_from + h);
                match hit {
                    Some(h) => Some(h.saturating_sub(last).max(from).min(tail)),
                    None => (tail < len).then_some(tail),
                }
            }
        }
    }

    /// Runs the anchored DFA from `at` over the data held.
    pub(super) fn attempt(&self, at: usize, steps: &mut usize) -> Attempt {
        let (re, last) = (self.re, self.last);
        let dfa = &re.dfa;
        let Some(mut state) = re.anchored_starts.get(self.hay.look_behind(at)) else { return Attempt::NoMatch };
        let hay = self.hay.view;
        // One byte past the cap: DFA matches are reported a byte late.
        let limit = at.saturating_add(self.max_match).saturating_add(1);
        let end = hay.len().min(limit);
        let mut found = None;
        for (i, &byte) in hay[at..end].iter().enumerate() {
            state = dfa.next_state(state, byte);
            if dfa.is_special_state(state) {
                if dfa.is_match_state(state) {
                    found = Some(at + i);
                } else if dfa.is_dead_state(state) || dfa.is_quit_state(state) {
                    *steps += i + 1;
                    return found.map_or(Attempt::NoMatch, Attempt::Match);
                }
            }
        }
        *steps += end - at;
        if end == limit {
            return Attempt::Abandoned;
        }
        if !last {
            return Attempt::Alive(state);
        }
        state = dfa.next_eoi_state(state);
        if dfa.is_match_state(state) {
            found = Some(hay.len());
        }
        found.map_or(Attempt::NoMatch, Attempt::Match)
    }
}

/// The anchored run from the start a stage holds back from (a [`super::hay::Next::Pending`] start), as far
/// as it has read: the next chunk goes on from there instead of reading the held bytes again, which made
/// tiny chunks cost `held * chunks` (a 128 KiB page whose `<body` never closes took seconds in 16-byte
/// chunks). Positions are the hay's.
#[derive(Clone, Copy, Debug)]
pub(super) struct Run {
    pub(super) start: usize,
    /// The DFA's state after reading `view[start..read_to]`.
    pub(super) state: StateID,
    pub(super) read_to: usize,
}

impl Run {
    /// The run in a hay whose first `written` bytes are written out (it starts no earlier).
    pub(super) fn after_written(self, written: usize) -> Option<Run> {
        let start = self.start.checked_sub(written)?;
        Some(Run { start, read_to: self.read_to - written, ..self })
    }
}

impl RegexSearch<'_> {
    /// `run` read on to the end of the data: `Some` with its new end while it is still alive within the cap
    /// (the start stays pending: every earlier start was settled before), `None` when it died, or outgrew the
    /// cap, or the data ends (then the full search decides, as it would have without `run`).
    pub(super) fn resume(&self, run: Run) -> Option<Run> {
        let dfa = &self.re.dfa;
        let hay = self.hay.view;
        let limit = run.start.saturating_add(self.max_match).saturating_add(1);
        let end = hay.len().min(limit);
        if self.last || run.read_to > end || end == limit {
            return None;
        }
        let mut state = run.state;
        for &byte in &hay[run.read_to..end] {
            state = dfa.next_state(state, byte);
            if dfa.is_special_state(state) && (dfa.is_dead_state(state) || dfa.is_quit_state(state)) {
                return None;
            }
        }
        Some(Run { start: run.start, state, read_to: end })
    }
}
