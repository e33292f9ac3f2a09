//! Rules with look-arounds (`(?=…)`, `(?!…)`, `(?<=…)`, `(?<!…)`), run without backtracking as the
//! PLDI 2024 paper on linear JavaScript matching does (Barrière and Pit-Claudel): the pattern is one Pike VM
//! program ([`js_regex::JsCaptures`]) in which each look-around is an instruction that asks an oracle, and
//! the oracle answers from the look-around's own automaton, run from that position (forward for a
//! lookahead, backward for a lookbehind). A match is found in one pass however many starts are in play.
//!
//! Streaming bounds what the oracle may read. A lookahead reads on within `maxMatchBytes` of its position
//! (the stage holds back until it is decided; one still undecided there fails, as a longer match is given
//! up on). A lookbehind whose body's longest match is bounded reads back at most that far: the stage keeps
//! that many bytes of what it already wrote out (see `Rule::look_behind_len`). One with no bound runs its
//! body's forward automaton, unanchored, over the whole text instead, its state carried from hay to hay
//! ([`LookMemo::carried`]): a match of the body ends at a position exactly where the lookbehind holds there.
//!
//! With the m flag's `^` or `$` anywhere, the rule reads the line view (see `lines`): the look-arounds' automata
//! too, and a lookbehind's bytes from the stage's tail are put in that view first. Annex B's quantified
//! lookaheads are rewritten by the parser (once, or not at all).
//!
//! Capture groups inside a positive look-around take the values of its body's preferred match where it held
//! (JavaScript never backtracks into a look-around): the program marks where (see
//! `JsCaptures::mark_look_groups`), and after the rule's match the body's own program finds them, forward for
//! a lookahead, over the reversed text for a lookbehind (whose body JavaScript matches right to left). So that
//! the match is there, a lookahead with groups reads on past its body's first match until its automaton dies.
//! An unbounded lookbehind's groups are read back at most [`MAX_LOOK_BEHIND`] bytes (see `behind_groups`).
//!
//! A look-around inside another is asked by its body's program (see `look_nested`). Not taken, each refused by
//! name: look-arounds in a rule whose automata read the view of lone low surrogates, and an unbounded
//! lookbehind whose body may begin where JavaScript has no position (see `look_rule::carried_dfa`).
//!
//! This module holds the look-arounds' automata and what they answer; `look_rule` builds a rule with
//! them and searches it.

use regex_automata::dfa::{dense, Automaton};
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::Anchored;
use regex_syntax::hir::{Class, Hir, HirKind};

use super::hay::{is_continuation, low_half, Hay};
pub(super) use super::look_memo::LookMemo;
use super::look_memo::Outcome;
use crate::rewrite::js_regex::{JsCaptures, LOOK_MARK};

type Dfa = dense::DFA<Vec<u32>>;

/// Each group's start and end (index 0: the whole match), `None` where it did not take part.
pub(super) type Spans = Vec<Option<(usize, usize)>>;

/// A match's groups as [`LookArounds::groups`] finds them.
pub(super) struct LookGroups {
    pub(super) spans: Spans,
    /// How far before the buffer the spans' positions start: a lookbehind's group may begin in the stage's tail.
    pub(super) shift: usize,
    /// An unbounded lookbehind's groups would need more than [`MAX_LOOK_BEHIND`] bytes before where it held:
    /// the match is then left as it is, as an over-long one is.
    pub(super) beyond_reach: bool,
}

/// The longest lookbehind body taken, in bytes: the stage keeps this much of what it wrote out.
pub(super) const MAX_LOOK_BEHIND: usize = 1024;

/// A rule's look-arounds, in the order the pattern opens them.
#[derive(Debug)]
pub(super) struct LookArounds {
    pub(super) items: Vec<LookItem>,
    /// Bytes before a position that a lookbehind may read (see where it is set).
    behind_len: usize,
    /// The rule works on UTF-16 units (no `u`): a lookbehind's match may begin on a low half.
    pub(super) units: bool,
    /// The rule reads the line view (see `lines`), which the stage's tail is not in.
    pub(super) lines: bool,
    /// A lookbehind of no bounded length is read back by a run, not carried (its groups, or it is inside
    /// another look-around): the stage keeps [`LONG_REACH`] bytes for it.
    long_reach: bool,
    /// The carried positive lookbehind every match begins with, if any: a match may start only where it holds.
    lead: Option<u32>,
    /// The rule's shape when it is a middle of one length between look-arounds at its edges.
    pub(super) edges: Option<Edges>,
}

/// A rule that is `(?<=…)MIDDLE(?=…)` (either look may be negative or missing), with no other look-around, no
/// group inside one, and a middle whose matches all have one length: a match starting at a position can only
/// end at one place, so the looks need asking there only (see `look_rule`). Also a rule that is a leading
/// positive lookbehind (groups inside it or not) and a middle of any length, with no look after it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Edges {
    pub(super) behind: Option<u32>,
    pub(super) ahead: Option<u32>,
}

#[derive(Debug)]
pub(super) struct LookItem {
    pub(super) ahead: bool,
    pub(super) negative: bool,
    /// A lookahead's forward automaton, or a lookbehind's reverse one; both anchored.
    pub(super) dfa: Dfa,
    /// A lookahead whose body matches at most [`SHORT_LOOK_AHEAD`] bytes: a run reads no further, so it is
    /// linear without [`LookMemo`], whose bookkeeping would cost more than the run (`(?!\w)` at a word's end).
    pub(super) short: bool,
    /// A positive look-around's capture groups, resolved after the rule's match.
    pub(super) groups: Option<BodyGroups>,
    /// A lookbehind whose body has no bounded length: `dfa` is the body's forward automaton, unanchored, run
    /// from the text's start and carried from hay to hay (see [`LookMemo::carried`]). A match of the body ends
    /// at a position exactly where the lookbehind holds there.
    pub(super) carried: bool,
    /// The body's program where it has look-arounds inside; `dfa` is then the automaton of the body with them
    /// taken as holding (see `look_nested`).
    pub(super) nested: Option<JsCaptures>,
    /// A lookbehind's bytes before its position that its run may read (its body's longest match, what the
    /// look-arounds inside read back, and 4 more), `None` where that has no bound within [`MAX_LOOK_BEHIND`].
    pub(super) reach: Option<usize>,
    /// Inside another look-around's body: asked only in the joined text (see `look_nested`), so never carried;
    /// a lookbehind of no bound there reads back what the stage keeps at most.
    pub(super) inner: bool,
}

impl LookItem {
    /// Whether it holds where its body was found, or not.
    pub(super) fn answer(&self, found: Found) -> bool {
        match found {
            Found::Yes => !self.negative,
            Found::No => self.negative,
            Found::TooFar => false,
        }
    }
}

/// What a positive look-around with capture groups needs to give them their values.
#[derive(Debug)]
pub(super) struct BodyGroups {
    /// The JavaScript number of the first group inside.
    pub(super) first: u32,
    /// The body's program: read forward for a lookahead, [`JsCaptures::reversed`] for a lookbehind.
    pub(super) program: JsCaptures,
}

/// The longest lookahead body run without [`LookMemo`], in bytes.
pub(super) const SHORT_LOOK_AHEAD: usize = 64;

/// How a lookahead run ended.
enum RunEnd {
    /// Its automaton died, or the data ended with the body.
    Decided,
    Undecided,
    Stopped(usize, StateID),
}

/// Whether a look-around's body matches at a position.
pub(super) enum Found {
    Yes,
    No,
    /// Not decided within `maxMatchBytes`.
    TooFar,
}

impl LookArounds {
    /// The look-arounds `(ahead, negative, automaton)` in the pattern's order (a lookbehind's automaton is its
    /// body's reverse one); `behind_len` as the stage keeps it; `units` for a rule without `u`; `lines` for one
    /// that reads the line view; `lead` the carried lookbehind every match begins with.
    pub(super) fn new(
        items: Vec<LookItem>,
        behind_len: usize,
        (units, lines): (bool, bool),
        lead: Option<u32>,
    ) -> LookArounds {
        let long_reach = items.iter().any(|item| {
            let read_back = !item.ahead && item.reach.is_none();
            read_back && (!item.carried || item.groups.is_some())
        });
        LookArounds { items, behind_len, units, lines, long_reach, lead, edges: None }
    }

    /// The rule is the lookbehind it begins with and a pattern without look-arounds after it: where the
    /// lookbehind holds, the pattern's own automaton finds the match (see `look_rule`).
    pub(super) fn lead_only(&self) -> bool {
        self.lead == Some(0) && self.items.len() == 1
    }

    /// Whether a lookbehind every match begins with tells where matches may start (see `lead_from`).
    pub(super) fn has_lead(&self) -> bool {
        self.lead.is_some()
    }

    /// The first position from `at` on where a match may start, as the lookbehind every match begins with
    /// tells (`at` without one); `None` where none can in this hay. Its automaton reads each byte once, where
    /// the program would start a thread at every position and ask it there (`(?<=href=")[^"]*`, whose
    /// pattern without the lookbehind matches everywhere).
    pub(super) fn lead_from(&self, memo: &mut LookMemo, hay: &Hay, last: bool, at: usize) -> Option<usize> {
        let Some(k) = self.lead else { return Some(at) };
        let dfa = &self.items[k as usize].dfa;
        let view = hay.view;
        let mut state = memo.carried_state(k as usize, dfa, view, at)?;
        for (p, &byte) in view.iter().enumerate().skip(at) {
            // The automaton reports a match one byte late (see `holds`).
            let next = dfa.next_state(state, byte);
            if dfa.is_match_state(next) {
                return Some(p);
            }
            state = next;
        }
        // The end: where more may come, the program waits there; at the text's end, the body may end there.
        (!last || dfa.is_match_state(dfa.next_eoi_state(state))).then_some(view.len())
    }

    /// Bytes of the input before a position that the lookbehinds may read.
    pub(super) fn behind_len(&self) -> usize {
        match self.long_reach {
            true => self.behind_len.max(LONG_REACH),
            false => self.behind_len,
        }
    }

    /// Moves the carried lookbehinds' automata on to `upto`, where the next hay begins.
    pub(super) fn settle(&self, memo: &mut LookMemo, hay: &Hay, upto: usize) {
        for (k, item) in self.items.iter().enumerate().filter(|(_, item)| item.carried) {
            if let Some(state) = memo.carried_state(k, &item.dfa, hay.view, upto) {
                memo.carried[k] = Some(state);
            }
        }
    }

    /// Whether look-around `k` holds at `at` in `hay`; `None` while the data so far cannot tell.
    pub(super) fn holds(
        &self,
        k: u32,
        (hay, last): (&Hay, bool),
        max_match: usize,
        at: usize,
        memo: &mut LookMemo,
    ) -> Option<bool> {
        let Some(item) = self.items.get(k as usize) else { return Some(false) };
        let found = match item.nested {
            Some(_) => self.nested_found(k, (hay, last), max_match, at, memo)?,
            None => self.found((k, item), (hay, last), max_match, at, memo)?,
        };
        Some(item.answer(found))
    }

    /// Whether look-around `k`'s automaton matches at `at` in `hay` (for a body with look-arounds inside, the
    /// body with them taken as holding); `None` while the data so far cannot tell.
    pub(super) fn found(
        &self,
        (k, item): (u32, &LookItem),
        (hay, last): (&Hay, bool),
        max_match: usize,
        at: usize,
        memo: &mut LookMemo,
    ) -> Option<Found> {
        Some(if item.ahead {
            ahead((k, item), hay, last, max_match, at, memo)?
        } else if item.carried {
            let state = memo.carried_state(k as usize, &item.dfa, hay.view, at)?;
            // The automaton reports a match one byte late: on the byte after `at`, or at the text's end.
            let next = match hay.view.get(at) {
                Some(&byte) => item.dfa.next_state(state, byte),
                None if last => item.dfa.next_eoi_state(state),
                None => return None,
            };
            if item.dfa.is_match_state(next) {
                Found::Yes
            } else {
                Found::No
            }
        } else {
            let reach = (item.reach.unwrap_or(LONG_REACH), self.behind_len());
            behind(&item.dfa, hay, (last, self.units, self.lines), reach, item.reach.is_none(), at)?
        })
    }

    /// The groups of the match `hay[start..end]`, found by `program` in `buf` (the hay's view, or a copy of it
    /// beginning `base` bytes earlier with the byte before it). `memo` is the stage's.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn groups(
        &self,
        program: &JsCaptures,
        hay: &Hay,
        last: bool,
        max_match: usize,
        (buf, base): (&[u8], usize),
        (start, end): (usize, usize),
        memo: &mut LookMemo,
    ) -> Option<LookGroups> {
        let mut oracle = |k, at: usize| self.holds(k, (hay, last), max_match, at.checked_sub(base)?, memo);
        let lead_groups = self.items.first().and_then(|item| item.groups.as_ref());
        let mut groups =
            match lead_groups.filter(|g| self.lead_only() && g.program.names().len() == program.names().len()) {
                // Every group is the leading lookbehind's, which held where the match starts: the rule's program
                // need not read the match again to tell.
                Some(body) => {
                    let mut groups = vec![None; program.names().len()];
                    groups[0] = Some((start + base, end + base));
                    groups[body.first as usize] = Some((start + base, LOOK_MARK));
                    groups
                }
                None => program.captures_with(buf, start + base, end + base, &mut oracle)?,
            };
        // Positions from here on count from the tail's start.
        let shift = hay.tail.len();
        let mut beyond_reach = false;
        for span in groups.iter_mut().flatten() {
            *span = (span.0 + shift, span.1.saturating_add(shift));
        }
        // The look-arounds inside others have their groups found with theirs.
        for (k, item) in self.items.iter().enumerate().filter(|(_, item)| !item.inner) {
            let Some(body) = &item.groups else { continue };
            let first = body.first as usize;
            let Some(Some((at, mark))) = groups.get(first).copied() else { continue };
            if mark != LOOK_MARK.saturating_add(shift) {
                continue;
            }
            // Where the look-around held, in the hay.
            let at = at - shift - base;
            // The body's groups, counted from the tail's start.
            let found = match (&item.nested, item.ahead) {
                (Some(_), _) => self.nested_groups(k as u32, (hay, last), max_match, at, memo),
                (None, true) => {
                    let accept_end = |end| hay.can_start(end, self.units);
                    let run =
                        body.program.preferred(hay.view, (hay.before, last), at, None, &accept_end, &mut no_looks);
                    let to_tail_start = |(a, b): (usize, usize)| (a + shift, b + shift);
                    Ok(run.groups.map(|found| found.into_iter().map(|span| span.map(to_tail_start)).collect()))
                }
                (None, false) => self.behind_groups(&body.program, hay, (at, item.reach), &mut no_looks),
            };
            let found = found.unwrap_or_else(|BeyondReach| {
                beyond_reach = true;
                None
            });
            let Some(found) = found else {
                groups[first] = None;
                continue;
            };
            for (i, span) in found.into_iter().enumerate().skip(1) {
                groups[first + i - 1] = span.map(|(a, b)| (a + base, b + base));
            }
        }
        Some(LookGroups { spans: groups, shift, beyond_reach })
    }

    /// The groups of lookbehind body `program` (reversed) that held at `at`, counted from the tail's start (a
    /// look-around inside that held: its position and [`LOOK_MARK`]). `reach` is the item's. An unbounded
    /// body's run reads back as far as it goes on: a reach that doubles while the run comes to its start with
    /// threads that count, up to what the stage keeps, whole text or chunks alike. That bound keeps it linear:
    /// each match's run reads at most that far, where a run to wherever the preferred match begins would read
    /// a long word again for each match in it (`(?<=(\w+))\w`). `oracle` answers the look-arounds inside, at
    /// positions in `hay`.
    pub(super) fn behind_groups(
        &self,
        program: &JsCaptures,
        hay: &Hay,
        (at, reach): (usize, Option<usize>),
        oracle: &mut dyn FnMut(u32, usize) -> Option<bool>,
    ) -> Result<Option<Spans>, BeyondReach> {
        let kept = self.behind_len();
        let unbounded = reach.is_none();
        let most = reach.unwrap_or((at + hay.tail.len()).min(kept));
        let mut reach = reach.unwrap_or(FIRST_REACH.min(most));
        loop {
            let behind = Behind::new(hay, self.lines, (reach, kept), at);
            let len = behind.context.len();
            let (reversed, text) = behind.reversed(hay.view.get(at..at + 1));
            let starts_here = |end: usize| behind.starts_here(len - end, self.units);
            // Reversed, the run's positions count back from `at`.
            let mut oracle = |k, back: usize| oracle(k, at.checked_sub(back)?);
            let run = program.preferred(&reversed, (None, true), 0, Some((&text, len)), &starts_here, &mut oracle);
            // A bounded body's run never reads as far back as its context goes, but from the text's start.
            if run.ran_out && unbounded && !behind.whole {
                if reach >= most {
                    return Err(BeyondReach);
                }
                reach = reach.saturating_mul(2).min(most);
                continue;
            }
            // Reversed spans: the end is where the group starts.
            let origin = hay.tail.len() + at;
            let flip = |g: Option<(usize, usize)>| match g {
                Some((back, LOOK_MARK)) => Some((origin - back, LOOK_MARK)),
                g => g.map(|(a, b)| (origin - b, origin - a)),
            };
            return Ok(run.groups.map(|groups| groups.into_iter().map(flip).collect()));
        }
    }
}

/// An unbounded lookbehind's groups need more of the text than the stage keeps.
pub(super) struct BeyondReach;

/// The first reach of a run that reads back from where a lookbehind of no bound held, in bytes.
pub(super) const FIRST_REACH: usize = 256;

/// What the stage keeps for a lookbehind of no bound that runs read back (see `LookArounds::long_reach`).
const LONG_REACH: usize = MAX_LOOK_BEHIND + 4;

/// The oracle of a body without look-arounds inside.
fn no_looks(_: u32, _: usize) -> Option<bool> {
    Some(false)
}

/// The most bytes `hir` can match (`None`: no bound). Unlike regex-syntax's `maximum_len`, which is `None`
/// for a concatenation with a part that never matches (a lone surrogate under `v`) and then for any
/// alternation holding one, a part that never matches counts as matching nothing.
pub(super) fn longest(hir: &Hir) -> Option<usize> {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Some(0),
        HirKind::Literal(lit) => Some(lit.0.len()),
        HirKind::Class(Class::Bytes(class)) => Some(usize::from(!class.ranges().is_empty())),
        HirKind::Class(Class::Unicode(class)) => Some(class.ranges().last().map_or(0, |r| r.end().len_utf8())),
        HirKind::Capture(cap) => longest(&cap.sub),
        HirKind::Concat(subs) => subs.iter().try_fold(0usize, |sum, sub| sum.checked_add(longest(sub)?)),
        HirKind::Alternation(subs) => subs.iter().try_fold(0usize, |most, sub| Some(most.max(longest(sub)?))),
        HirKind::Repetition(rep) => match (longest(&rep.sub)?, rep.max) {
            (0, _) => Some(0),
            (len, Some(max)) => len.checked_mul(usize::try_from(max).ok()?),
            (_, None) => None,
        },
    }
}

/// Lookahead `k`'s body run forward from `at`, as far as `memo` does not already know where it ends. With
/// groups, on until the body's preferred match is known.
fn ahead(
    (k, item): (u32, &LookItem),
    hay: &Hay,
    last: bool,
    max_match: usize,
    at: usize,
    memo: &mut LookMemo,
) -> Option<Found> {
    let (dfa, remember, whole) = (&item.dfa, !item.short, item.groups.is_some());
    let config = start::Config::new().anchored(Anchored::Yes).look_behind(hay.look_behind(at));
    let Ok(mut state) = dfa.start_state(&config) else { return Some(Found::No) };
    let view = hay.view;
    let limit = at.saturating_add(max_match).saturating_add(1);
    let end = view.len().min(limit);
    let mut pos = at;
    let mut visited = Vec::new();
    // Whether the body matched, and how many of the pairs visited come before its last match.
    let (mut matched, mut matched_after) = (false, 0);
    let run_end = loop {
        // Every pair passed through learns how this run ends, so that the next run jumps straight there.
        if remember {
            visited.push((pos, state));
        }
        match remember.then(|| memo.run(k, pos, state)).flatten() {
            Some(Outcome::Stopped(further, next, on_the_way)) if further > pos && further <= end => {
                if on_the_way {
                    (matched, matched_after) = (true, visited.len());
                }
                (pos, state) = (further, next);
                continue;
            }
            Some(Outcome::Stopped(..)) | None => {}
            Some(Outcome::Yes) => {
                (matched, matched_after) = (true, visited.len());
                break RunEnd::Decided;
            }
            Some(Outcome::No) => break RunEnd::Decided,
            Some(Outcome::Undecided) => break RunEnd::Undecided,
        }
        if pos == end {
            if end == limit {
                break RunEnd::Stopped(pos, state);
            } else if !last {
                break RunEnd::Undecided;
            }
            if dfa.is_match_state(dfa.next_eoi_state(state)) {
                (matched, matched_after) = (true, visited.len());
            }
            break RunEnd::Decided;
        }
        state = dfa.next_state(state, view[pos]);
        pos += 1;
        if dfa.is_match_state(state) {
            (matched, matched_after) = (true, visited.len());
            if !whole {
                break RunEnd::Decided;
            }
        }
        if dfa.is_dead_state(state) || dfa.is_quit_state(state) {
            break RunEnd::Decided;
        }
    };
    for (i, (pos, state)) in visited.into_iter().enumerate() {
        let after = i < matched_after;
        let outcome = match run_end {
            RunEnd::Decided if after => Outcome::Yes,
            RunEnd::Decided => Outcome::No,
            RunEnd::Undecided => Outcome::Undecided,
            RunEnd::Stopped(further, next) => Outcome::Stopped(further, next, after),
        };
        memo.remember_run((k, pos, state), outcome, (at, end));
    }
    match run_end {
        RunEnd::Decided if matched => Some(Found::Yes),
        RunEnd::Decided => Some(Found::No),
        RunEnd::Undecided => None,
        RunEnd::Stopped(..) => Some(Found::TooFar),
    }
}

/// The bytes before a position that a lookbehind may read: from the hay, and from the stage's tail before it
/// (put in the line view for a rule that reads it).
pub(super) struct Behind<'a> {
    /// What the automata read.
    pub(super) context: std::borrow::Cow<'a, [u8]>,
    /// The text itself where it is not `context` (the line view's U+2028 has a `\n` inside): it tells where
    /// characters start.
    bytes: Option<std::borrow::Cow<'a, [u8]>>,
    /// `context` begins where the text does.
    pub(super) whole: bool,
}

impl<'a> Behind<'a> {
    /// The `reach` bytes before `at`, of which the stage's tail holds up to `kept`.
    pub(super) fn new(hay: &Hay<'a>, lines: bool, (reach, kept): (usize, usize), at: usize) -> Behind<'a> {
        let from_view = &hay.view[at.saturating_sub(reach)..at];
        let from_bytes = &hay.bytes[at - from_view.len()..at];
        let from_tail = &hay.tail[hay.tail.len().saturating_sub(reach - from_view.len())..];
        // The stage keeps `kept` bytes of what it wrote out: fewer are all there is. A hay with no tail (the
        // joined text of `look_nested`) says where the text starts by its byte before.
        let all_kept = match hay.tail.is_empty() {
            true => hay.before.is_none(),
            false => hay.tail.len() < kept,
        };
        let whole = from_view.len() == at && from_tail.len() == hay.tail.len() && all_kept;
        // Most positions have what the body can reach in the view itself: no copy.
        if from_tail.is_empty() {
            return Behind { context: from_view.into(), bytes: lines.then_some(from_bytes.into()), whole };
        }
        let mut joined = Vec::with_capacity(from_tail.len() + from_view.len());
        match lines {
            true => super::lines::line_view(from_tail, &mut joined),
            false => joined.extend_from_slice(from_tail),
        }
        joined.extend_from_slice(from_view);
        let bytes = lines.then(|| [from_tail, from_bytes].concat().into());
        Behind { context: joined.into(), bytes, whole }
    }

    /// `context` reversed, which a lookbehind body's reversed program reads, and the text the right way round
    /// with the byte after (`after`), where its assertions look.
    pub(super) fn reversed(&self, after: Option<&[u8]>) -> (Vec<u8>, Vec<u8>) {
        let reversed = self.context.iter().rev().copied().collect();
        (reversed, [&self.context[..], after.unwrap_or_default()].concat())
    }

    /// Whether a body's match may start at `t`: where JavaScript has a position, not inside a character (but
    /// for the low half of an astral one without `u`).
    pub(super) fn starts_here(&self, t: usize, units: bool) -> bool {
        let bytes = self.bytes.as_deref().unwrap_or(&self.context);
        t == bytes.len() || !is_continuation(bytes[t]) || units && low_half(bytes, t)
    }
}

/// A lookbehind's body run backward from `at`, over the hay and then the stage's tail (`reach` as for
/// [`Behind::new`]). `capped`: the body may be longer than `reach`, and a run still alive there fails.
fn behind(
    dfa: &Dfa,
    hay: &Hay,
    (last, units, lines): (bool, bool, bool),
    reach: (usize, usize),
    capped: bool,
    at: usize,
) -> Option<Found> {
    // A body ending with `\b` or `$` looks at the byte after `at`.
    if at == hay.view.len() && !last {
        return None;
    }
    let config = start::Config::new().anchored(Anchored::Yes).look_behind(hay.view.get(at).copied());
    let Ok(mut state) = dfa.start_state(&config) else { return Some(Found::No) };
    let behind = Behind::new(hay, lines, reach, at);
    let context = &behind.context[..];
    for t in (0..context.len()).rev() {
        state = dfa.next_state(state, context[t]);
        if dfa.is_match_state(state) && behind.starts_here(t + 1, units) {
            return Some(Found::Yes);
        }
        if dfa.is_dead_state(state) || dfa.is_quit_state(state) {
            return Some(Found::No);
        }
    }
    // A match from the body's start ends there; from an earlier cut it would be longer than the body can be,
    // unless the text ends before `reach` while it goes on further back (the joined text of `look_nested`).
    Some(match behind.whole {
        true if dfa.is_match_state(dfa.next_eoi_state(state)) => Found::Yes,
        false if capped || context.len() < reach.0 => Found::TooFar,
        _ => Found::No,
    })
}
