//! A regex rule's search for its next final match over a stage's hay (the stage's own search, beside
//! the one-pass [`super::sweep`]): an unanchored forward scan finds where the leftmost match ends, the
//! reverse DFA where it starts; when the data ends inside a possible match, the prefix DFA, single
//! anchored attempts or the sweep find the earliest start still in play.

use regex_automata::dfa::Automaton;
use regex_automata::util::start;
use regex_automata::{Anchored, PatternID};

use super::hay::Next;
use super::look_around::LookMemo;
use super::rule::Dfa;
use super::search::{Attempt, RegexSearch, Run};
use super::sweep::Sweep;

/// How the unanchored scan from one position ends.
pub(super) enum Scan {
    /// The leftmost match is final and ends at `end`; the scan stopped at `died`. `pattern`: a group's
    /// pattern that matched (0 for a rule on its own).
    Match {
        end: usize,
        died: usize,
        pattern: usize,
    },
    NoMatch,
    /// The data ends while a match may still start or grow.
    Undecided,
}

impl RegexSearch<'_> {
    /// The next match from `from` once it is final, or where the bytes that may still belong to one start.
    #[cfg(test)]
    pub(super) fn next_match(&self, from: usize, abandoned: &mut u64) -> Next {
        self.next_match_resumed(from, abandoned, &mut None, &mut Default::default())
    }

    /// [`RegexSearch::next_match`] going on from `run`, the anchored run from `from` as far as the last
    /// search read it, when there is one; `run` is left as the run of the start this search returns as
    /// pending (if it found that start by an anchored run), else `None`.
    /// `memo`: what a rule's lookaheads found in this hay so far (see `look_around`).
    pub(super) fn next_match_resumed(
        &self,
        from: usize,
        abandoned: &mut u64,
        run: &mut Option<Run>,
        memo: &mut LookMemo,
    ) -> Next {
        if let Some(looks) = &self.re.looks {
            *run = None;
            return self.look_around_match(looks, from, abandoned, memo);
        }
        if let Some(resumed) = run.take().filter(|r| r.start == from).and_then(|r| self.resume(r)) {
            *run = Some(resumed);
            return Next::Pending(from);
        }
        if self.re.sticky {
            return self.sticky_match(from, abandoned, run);
        }
        let hay = self.hay;
        let mut from = from;
        loop {
            let (end, died, pattern) = match self.scan_forward(from, usize::MAX) {
                Scan::Match { end, died, pattern } => (end, died, pattern),
                Scan::NoMatch => return Next::Exhausted,
                Scan::Undecided => return self.pending_start(from, abandoned, run),
            };
            let start = self.match_start(from, end, pattern);
            if !hay.can_start(start, self.re.units) {
                // A match inside a UTF-8 character: JS never sees that position (but for the low half of an
                // astral character without `u`).
                from = start + 1;
                continue;
            }
            // The anchored run from `start` dies no later than the unanchored scan did: only when that
            // was past the cap may it have outgrown it. Then the starts from here on are settled by the
            // sweep, which stays linear however many of them outgrow the cap.
            if died - start > self.max_match {
                let mut steps = 0;
                return match self.attempt(start, &mut steps) {
                    Attempt::Match(checked) => {
                        debug_assert_eq!(checked, end);
                        Next::Match { start, end }
                    }
                    _ => self.sweep(start, abandoned),
                };
            }
            return Next::Match { start, end };
        }
    }

    /// Leftmost-first unanchored scan from `from`, linear in the data: finds the end of the leftmost
    /// match once it is final. While no match is in progress it skips to the next candidate position.
    /// Reading more than `budget` bytes from a candidate, it stops as [`Scan::Undecided`].
    pub(super) fn scan_forward(&self, from: usize, budget: usize) -> Scan {
        let (re, hay, last) = (self.re, self.hay, self.last);
        let dfa = &re.dfa;
        let start_at = |at: usize| re.unanchored_starts.get(hay.look_behind(at));
        let hay = hay.view;
        let len = hay.len();
        let Some(mut at) = self.next_candidate(from) else { return Scan::NoMatch };
        let Some(mut state) = start_at(at) else { return Scan::NoMatch };
        let mut found = None;
        let pattern = |state| dfa.match_pattern(state, 0).as_usize();
        let mut stop = at.saturating_add(budget);
        while at < len {
            if at == stop {
                return Scan::Undecided;
            }
            state = dfa.next_state(state, hay[at]);
            at += 1;
            if dfa.is_special_state(state) {
                if dfa.is_match_state(state) {
                    found = Some((at - 1, pattern(state)));
                } else if dfa.is_dead_state(state) || dfa.is_quit_state(state) {
                    return found.map_or(Scan::NoMatch, |(end, pattern)| Scan::Match { end, died: at - 1, pattern });
                } else if dfa.is_start_state(state) && found.is_none() {
                    match self.next_candidate(at) {
                        None => return Scan::NoMatch,
                        Some(next) if next > at => {
                            at = next;
                            stop = at.saturating_add(budget);
                            let Some(fresh) = start_at(at) else { return Scan::NoMatch };
                            state = fresh;
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        if !last {
            return Scan::Undecided;
        }
        state = dfa.next_eoi_state(state);
        if dfa.is_match_state(state) {
            found = Some((len, pattern(state)));
        }
        found.map_or(Scan::NoMatch, |(end, pattern)| Scan::Match { end, died: len, pattern })
    }

    /// The start of the leftmost match ending at `end`: the earliest start the reverse DFA accepts (a
    /// group's, for the pattern that matched).
    pub(super) fn match_start(&self, from: usize, end: usize, pattern: usize) -> usize {
        let look_ahead = self.hay.view.get(end).copied();
        let anchored = match PatternID::new(pattern) {
            Ok(id) if !self.re.members.is_empty() => Anchored::Pattern(id),
            _ => Anchored::Yes,
        };
        self.earliest_reverse_match(&self.re.reverse, anchored, from, end, look_ahead).unwrap_or(from)
    }

    /// Reads `hay[from..end]` backwards with an anchored reverse DFA; returns the earliest position at
    /// or after `from` where it matches. `look_ahead` is the byte after `end` (`None`: the end of the
    /// body, or not known yet).
    fn earliest_reverse_match(
        &self,
        rev: &Dfa,
        anchored: Anchored,
        from: usize,
        end: usize,
        look_ahead: Option<u8>,
    ) -> Option<usize> {
        let hay = self.hay.view;
        let config = start::Config::new().anchored(anchored).look_behind(look_ahead);
        let Ok(mut state) = rev.start_state(&config) else { return Some(from) };
        let mut earliest = None;
        let mut at = end;
        while at > from {
            at -= 1;
            state = rev.next_state(state, hay[at]);
            if rev.is_special_state(state) {
                if rev.is_match_state(state) {
                    earliest = Some(at + 1);
                } else if rev.is_dead_state(state) || rev.is_quit_state(state) {
                    return earliest;
                }
            }
        }
        // Matches are reported one byte late: one more step says whether one starts at `from`.
        state = match self.hay.look_behind(from) {
            Some(byte) => rev.next_state(state, byte),
            None => rev.next_eoi_state(state),
        };
        if rev.is_match_state(state) {
            earliest = Some(from);
        }
        earliest
    }

    /// The data ends inside a possible match: the earliest candidate whose anchored run is still
    /// alive (everything before it can go out), or a match that became final meanwhile. Trying the
    /// candidates one by one is cheapest when their runs are short; once that has cost more than a
    /// few steps per byte, the sweep settles the rest in one pass.
    fn pending_start(&self, from: usize, abandoned: &mut u64, run: &mut Option<Run>) -> Next {
        let (dfa, bytes) = (&self.re.dfa, self.hay.view);
        let len = bytes.len();
        let mut from = from;
        // Within the cap no start can be abandoned, so the first start that may still match is the
        // answer, and reading back from the end finds it in a few steps.
        if let Some(prefixes) = self.re.prefix_reverse.as_ref().filter(|_| len - from <= self.max_match) {
            // With no such start, only the end of the data is left to try.
            // The byte after the data is not known yet; live runs never end with a look-around.
            from = self.earliest_reverse_match(prefixes, Anchored::Yes, from, len, None).unwrap_or(len);
        }
        let budget = 2 * (len - from) + 64;
        let mut steps = 0;
        while from <= len {
            let Some(at) = self.next_candidate(from) else { return Next::Exhausted };
            if let Some(&byte) = bytes.get(at) {
                // Most starts die on their first byte: that costs one lookup, not an attempt.
                let alive = self.hay.can_start(at, self.re.units)
                    && self
                        .re
                        .anchored_starts
                        .get(self.hay.look_behind(at))
                        .is_some_and(|state| !dfa.is_dead_state(dfa.next_state(state, byte)));
                if !alive {
                    from = at + 1;
                    continue;
                }
            }
            if steps > budget {
                return self.sweep(at, abandoned);
            }
            match self.attempt(at, &mut steps) {
                Attempt::Match(end) => return Next::Match { start: at, end },
                Attempt::Alive(state) => {
                    *run = Some(Run { start: at, state, read_to: len });
                    return Next::Pending(at);
                }
                Attempt::Abandoned => *abandoned += 1,
                Attempt::NoMatch => {}
            }
            from = at + 1;
        }
        Next::Exhausted
    }

    /// Its index (up to ~60 bytes per start still in play, at most `max_match + 1` of them) lives only
    /// for this call: sweeps are rare, and a stage should not keep that memory.
    fn sweep(&self, from: usize, abandoned: &mut u64) -> Next {
        Sweep::default().first_viable(self, from, abandoned)
    }
}

/// The first viable start from `from`, found three ways: by trying every candidate in turn (the
/// reference), by the sweep (both with the count of abandoned starts), and by a stage's own search
/// (unanchored scan, then the prefix DFA or the sweep at the end of the data).
#[cfg(test)]
pub(super) fn first_viable_three_ways(
    re: &super::rule::RegexRule,
    bytes: &[u8],
    before: Option<u8>,
    from: usize,
    last: bool,
    max_match: usize,
) -> ((Next, u64), (Next, u64), Next) {
    let search = RegexSearch { re, hay: super::hay::Hay { bytes, view: bytes, before, tail: &[] }, last, max_match };
    let len = bytes.len();
    let naive = (|| {
        let mut abandoned = 0;
        let mut at = from;
        while at <= len {
            let Some(candidate) = search.next_candidate(at) else { break };
            if !search.hay.can_start(candidate, re.units) {
                at = candidate + 1;
                continue;
            }
            match search.attempt(candidate, &mut 0) {
                Attempt::Match(end) => return (Next::Match { start: candidate, end }, abandoned),
                Attempt::Alive(_) => return (Next::Pending(candidate), abandoned),
                Attempt::Abandoned => abandoned += 1,
                Attempt::NoMatch => {}
            }
            at = candidate + 1;
        }
        (Next::Exhausted, abandoned)
    })();
    let mut abandoned = 0;
    let swept = search.sweep(from, &mut abandoned);
    (naive, (swept, abandoned), search.next_match(from, &mut 0))
}
