//! Look-arounds inside look-arounds (`(?<=ab(?=c)\wd)`, `(?=a(?<!b{2})c)`). A body with look-arounds inside has
//! no automaton that answers for it, so its program (see `js_regex::JsCaptures`; read backward for a
//! lookbehind, as JavaScript matches one) is run from the position it is asked at, and the look-arounds inside
//! are asked at theirs by the same oracle, recursively. A lookbehind reads back into the stage's tail, and a
//! lookahead inside it reads forward from there, so all of it runs on the tail and the hay joined into one
//! text ([`Joined`], made once a hay) with a memo of its own; the automaton of the body with the look-arounds
//! inside taken as holding answers first where it can say no (most positions).
//!
//! Each answer is a run of the body's program from one position: bounded by `maxMatchBytes` ahead (a run still
//! alive there fails, as an undecided lookahead does) and by what the stage keeps behind (a lookbehind whose
//! body may be longer reads back at most [`MAX_LOOK_BEHIND`] bytes; still alive there, it fails). The groups of
//! such a body are found as a look-around's always are: by its program, where it held, after the rule's match;
//! those of the look-arounds inside it, where they held in that match, and so on down.

use super::hay::Hay;
use super::look_around::{Behind, BeyondReach, Found, LookArounds, LookMemo, Spans, FIRST_REACH};
use super::look_memo::BodyRunsSeen;
use super::look_memo::Joined;
use crate::rewrite::js_regex::{BodyMatch, BodyRuns, LOOK_MARK};
use std::sync::{Mutex, PoisonError};

impl Joined {
    /// Makes it the stage's tail (`kept` bytes at most: fewer are the whole text before) and `hay`, in the view
    /// the rule reads.
    fn fill(&mut self, hay: &Hay, lines: bool, kept: usize) {
        self.bytes.clear();
        self.bytes.extend_from_slice(hay.tail);
        self.bytes.extend_from_slice(hay.bytes);
        self.view.clear();
        match lines {
            true => super::lines::line_view(hay.tail, &mut self.view),
            false => self.view.extend_from_slice(hay.tail),
        }
        self.view.extend_from_slice(hay.view);
        self.before = match hay.tail.is_empty() {
            true => hay.before,
            // A run that reads back to here while the text goes on further back gives up (see `behind`).
            false => (hay.tail.len() >= kept).then_some(0),
        };
    }
}

impl LookArounds {
    /// Whether the body of look-around `k`, which has look-arounds inside, matches at `at` in `hay`.
    pub(super) fn nested_found(
        &self,
        k: u32,
        (hay, last): (&Hay, bool),
        max_match: usize,
        at: usize,
        memo: &mut LookMemo,
    ) -> Option<Found> {
        let at = hay.tail.len() + at;
        self.in_joined((hay, memo), |text, memos| self.found_in_joined(k, (text, last), max_match, at, memos))
    }

    /// The groups of look-around `k` (positive, with look-arounds inside), which held at `at` in `hay`: its
    /// body's match and groups, counted from the tail's start.
    pub(super) fn nested_groups(
        &self,
        k: u32,
        (hay, last): (&Hay, bool),
        max_match: usize,
        at: usize,
        memo: &mut LookMemo,
    ) -> Result<Option<Spans>, BeyondReach> {
        let at = hay.tail.len() + at;
        self.in_joined((hay, memo), |text, memos| self.body_groups(k, (text, last), max_match, at, memos))
    }

    /// `run` on the joined text of `hay` (made once a hay), where `hay`'s positions are `hay.tail.len()` further.
    fn in_joined<T>(&self, (hay, memo): (&Hay, &mut LookMemo), run: impl FnOnce(&Hay, Memos) -> T) -> T {
        let mut joined = memo.take_joined(|joined| joined.fill(hay, self.lines, self.behind_len()));
        let Joined { bytes, view, before, memo: joined_memo, runs, .. } = &mut *joined;
        let text = Hay { bytes, view, before: *before, tail: &[] };
        let found = run(&text, (joined_memo, runs));
        memo.give_back(joined);
        found
    }

    /// Whether look-around `k` holds at `at` in the joined text.
    fn holds_in_joined(&self, k: u32, text: (&Hay, bool), max_match: usize, at: usize, memo: Memos) -> Option<bool> {
        let item = &self.items[k as usize];
        Some(item.answer(self.found_in_joined(k, text, max_match, at, memo)?))
    }

    /// Whether look-around `k`'s body matches at `at` in the joined text.
    fn found_in_joined(
        &self,
        k: u32,
        (text, last): (&Hay, bool),
        max_match: usize,
        at: usize,
        (memo, runs): Memos,
    ) -> Option<Found> {
        let item = &self.items[k as usize];
        // Where the body with the look-arounds inside taken as holding cannot match, the body cannot; where it
        // is undecided within its bounds, the body cannot match within them either (and its run would read as
        // far: each such run would read its bounds again).
        let relaxed = self.found((k, item), (text, last), max_match, at, memo)?;
        let Some(program) = item.nested.as_ref().filter(|_| matches!(relaxed, Found::Yes)) else {
            return Some(relaxed);
        };
        // A look-around inside that is not decided within its bounds fails, and a body's run may then fail where
        // it would have matched: its "no" is not known either.
        let gave_up = std::cell::Cell::new(false);
        let mut oracle = |inner: u32, q| {
            let found = self.found_in_joined(inner, (text, last), max_match, q, (&mut *memo, runs))?;
            gave_up.set(gave_up.get() || matches!(found, Found::TooFar));
            Some(self.items[inner as usize].answer(found))
        };
        let no = || if gave_up.get() { Found::TooFar } else { Found::No };
        if item.ahead {
            let limit = at.saturating_add(max_match).saturating_add(1);
            let accept_end = |end| text.can_start(end, self.units);
            let seen = Seen { k, runs };
            let (range, seen) = ((at, limit), Some(&seen as &dyn BodyRuns));
            let run = program.body_matches(text.view, (text.before, last), range, None, &accept_end, &mut oracle, seen);
            return match run {
                BodyMatch::Yes => Some(Found::Yes),
                BodyMatch::No => Some(no()),
                BodyMatch::Undecided => None,
                BodyMatch::AtLimit => Some(Found::TooFar),
            };
        }
        // A body ending with `\b` or `$` looks at the byte after `at`.
        if at == text.view.len() && !last {
            return None;
        }
        let kept = self.behind_len();
        let most = at.min(kept);
        let mut reach = item.reach.unwrap_or(FIRST_REACH).min(most);
        loop {
            let behind = Behind::new(text, self.lines, (reach, kept), at);
            let len = behind.context.len();
            // Reversed, the run's positions count back from `at`.
            let mut oracle = |inner, back: usize| oracle(inner, at - back);
            let accept_end = |back: usize| behind.starts_here(len - back, self.units);
            let limit = if behind.whole { usize::MAX } else { len };
            let (reversed, mirror) = behind.reversed(text.view.get(at..at + 1));
            let mirror = Some((&mirror[..], len));
            let run = program.body_matches(&reversed, (None, true), (0, limit), mirror, &accept_end, &mut oracle, None);
            match run {
                BodyMatch::Yes => return Some(Found::Yes),
                BodyMatch::No => return Some(no()),
                BodyMatch::Undecided => return None,
                // Bytes further back might give a match.
                BodyMatch::AtLimit if reach < most && item.reach.is_none() => reach = (2 * reach).min(most),
                BodyMatch::AtLimit => return Some(Found::TooFar),
            }
        }
    }

    /// The groups of look-around `k`'s body where it held at `at` in the joined text (index 0: the body's
    /// match), those of the look-arounds inside it resolved where they held.
    fn body_groups(
        &self,
        k: u32,
        (text, last): (&Hay, bool),
        max_match: usize,
        at: usize,
        (memo, runs): Memos,
    ) -> Result<Option<Spans>, BeyondReach> {
        let item = &self.items[k as usize];
        let Some(body) = &item.groups else { return Ok(None) };
        let mut oracle = |inner, q| self.holds_in_joined(inner, (text, last), max_match, q, (&mut *memo, runs));
        let spans = match item.ahead {
            true => {
                let accept_end = |end| text.can_start(end, self.units);
                let run = body.program.preferred(text.view, (text.before, last), at, None, &accept_end, &mut oracle);
                run.groups
            }
            false => self.behind_groups(&body.program, text, (at, item.reach), &mut oracle)?,
        };
        let Some(mut spans) = spans else { return Ok(None) };
        for (inner, inside) in self.items.iter().enumerate() {
            let Some(inner_body) = &inside.groups else { continue };
            // The inner look-around's first group as the body's program numbers it.
            let Some(slot) = inner_body.first.checked_sub(body.first).map(|d| d as usize + 1) else { continue };
            let Some(&Some((held, LOOK_MARK))) = spans.get(slot) else { continue };
            match self.body_groups(inner as u32, (text, last), max_match, held, (&mut *memo, runs))? {
                Some(found) => {
                    for (i, span) in found.into_iter().enumerate().skip(1) {
                        spans[slot + i - 1] = span;
                    }
                }
                None => spans[slot] = None,
            }
        }
        Ok(Some(spans))
    }
}

/// The joined text's memo, and how its bodies' runs ended.
type Memos<'a> = (&'a mut LookMemo, &'a Mutex<BodyRunsSeen>);

/// Look-around `k`'s runs in [`BodyRunsSeen`].
struct Seen<'a> {
    k: u32,
    runs: &'a Mutex<BodyRunsSeen>,
}

impl BodyRuns for Seen<'_> {
    fn ended(&self, at: usize, threads: &[(u32, u64)]) -> Option<(BodyMatch, usize)> {
        let runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        let known = runs.by_position.get(&(self.k, at))?;
        known.iter().find(|(seen, ..)| seen == threads).map(|&(_, ended, decided)| (ended, decided))
    }

    fn learn(&self, visited: Vec<(usize, Vec<(u32, u64)>)>, (ended, decided): (BodyMatch, usize)) {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        // Runs start further on as the rule's search goes (a lookbehind's inside a little before): what lies well
        // before this one's start goes, so that what is kept stays within about `maxMatchBytes` of positions.
        let start = visited.first().map_or(0, |&(at, _)| at);
        if runs.by_position.len() > (2 * runs.after_pruning).max(PRUNE_FROM) {
            let floor = start.saturating_sub(KEEP_BEFORE_START);
            runs.by_position.retain(|&(_, at), _| at >= floor);
            runs.after_pruning = runs.by_position.len();
        }
        for (at, threads) in visited {
            runs.by_position.entry((self.k, at)).or_default().push((threads, ended, decided));
        }
    }
}

/// Entries of [`BodyRunsSeen`] below which it is never pruned.
const PRUNE_FROM: usize = 4096;

/// Positions before a run's start that pruning keeps: a lookahead inside a lookbehind is asked up to what the
/// stage keeps before the position the lookbehind is asked at.
const KEEP_BEFORE_START: usize = 4096;
