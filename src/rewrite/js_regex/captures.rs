//! Group values with JavaScript's semantics, for rules where the engine's would differ (see
//! [`super::semantics::needs_js_captures`]): a small Pike VM over the translated pattern that knows
//! JavaScript's two repetition rules. At every iteration the body's groups are cleared, and an optional
//! iteration that matched empty fails. The latter depends on where the iteration began, so a thread carries one
//! bit per repetition with a nullable body ("this iteration consumed something") and threads are merged by
//! instruction and those bits: a later, less preferred thread in the same state has the same futures.
//!
//! The program is compiled in `program`. It runs only on a match the automata already found, from its start to its known end, so its cost is
//! bounded by the match's length times the program's size: the rewrite stays linear in the body.

use std::collections::HashSet;

use regex_automata::util::look::{Look, LookMatcher};
use regex_syntax::hir::Hir;

use super::program::{self, Inst, TooComplex};

/// A compiled pattern for [`JsCaptures::captures`].
#[derive(Debug)]
pub(crate) struct JsCaptures {
    insts: Vec<Inst>,
    /// For each instruction, the bits of the loops it is inside (the others cannot change its future).
    masks: Vec<u64>,
    /// Capture groups, group 0 included.
    groups: usize,
    names: Vec<Option<String>>,
    /// For each look-around, the first of its groups when they are to be resolved after the match (see
    /// [`JsCaptures::mark_look_groups`]).
    look_groups: Vec<Option<u32>>,
}

/// The end a group's slots hold while they mark where its look-around held (see
/// [`JsCaptures::mark_look_groups`]).
pub(crate) const LOOK_MARK: usize = usize::MAX;

/// What [`JsCaptures::leftmost`] searches.
pub(crate) struct LookSearch<'a> {
    /// What the automata read.
    pub(crate) hay: &'a [u8],
    pub(crate) before: Option<u8>,
    pub(crate) last: bool,
    /// A start whose threads are still alive after this many bytes is given up on.
    pub(crate) max_match: usize,
    /// Where JavaScript may start a match (character boundaries).
    pub(crate) can_start: &'a dyn Fn(usize) -> bool,
    /// The first position at or after the given one where a match may start (`None`: nowhere).
    pub(crate) skip_to: &'a dyn Fn(usize) -> Option<usize>,
}

/// How [`JsCaptures::leftmost`] ends.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Leftmost {
    Match(usize, usize),
    /// The data ends while a match may still start here or grow: more input decides.
    Pending(usize),
    NoMatch,
    /// The match from here outgrew the cap: the caller searches again after it.
    Abandoned(usize),
}

impl JsCaptures {
    /// Compiles the translated pattern's `hir` (with its groups).
    /// Compiles the translated pattern's `hir` (with its groups). An empty group named
    /// [`super::look_placeholder`]`(k)` is look-around `k`; the groups after it keep JavaScript's numbers.
    pub(crate) fn new(hir: &Hir) -> Result<JsCaptures, TooComplex> {
        JsCaptures::compile(hir, false)
    }

    /// The program of `hir` read backward: run over the reversed text, it matches as JavaScript matches a
    /// lookbehind's body (right to left, each part with its own preferences). Its group spans are in the
    /// reversed text, start and end swapped.
    pub(crate) fn reversed(hir: &Hir) -> Result<JsCaptures, TooComplex> {
        JsCaptures::compile(hir, true)
    }

    fn compile(hir: &Hir, reverse: bool) -> Result<JsCaptures, TooComplex> {
        let (insts, masks, names) = program::compile(hir, reverse)?;
        Ok(JsCaptures { insts, masks, groups: names.len(), names, look_groups: Vec::new() })
    }

    /// Marks the groups of the look-arounds given (`firsts[k]`: the first group of look-around `k`, for a
    /// positive one with groups): where such a look-around holds, its first group's slots take its position
    /// and [`LOOK_MARK`], and the caller fills in its groups from the body's own match there. JavaScript keeps
    /// that match whatever follows (no backtracking into a look-around), so it is the body's preferred one.
    pub(crate) fn mark_look_groups(&mut self, firsts: Vec<Option<u32>>) {
        self.look_groups = firsts;
    }

    /// Each group's name (index 0 is the whole match).
    pub(crate) fn names(&self) -> &[Option<String>] {
        &self.names
    }

    /// The groups (index 0 included) of the most preferred way of matching `hay[start..end]`, which must be
    /// JavaScript's match (assertions look at the bytes around it); `None` if there is no such way.
    pub(crate) fn captures(&self, hay: &[u8], start: usize, end: usize) -> Option<Vec<Option<(usize, usize)>>> {
        self.captures_with(hay, start, end, &mut |_, _| Some(true))
    }

    /// [`JsCaptures::captures`] of a pattern with look-arounds: `oracle(k, at)` says whether look-around `k`
    /// holds at `at` (`None` is taken as not holding: the match is known to be final).
    pub(crate) fn captures_with(
        &self,
        hay: &[u8],
        start: usize,
        end: usize,
        oracle: &mut dyn FnMut(u32, usize) -> Option<bool>,
    ) -> Option<Vec<Option<(usize, usize)>>> {
        let look = crate::rewrite::lines::look_matcher();
        let mut oracle = |k, at| Some(oracle(k, at).unwrap_or(false));
        let slots = 2 * self.groups;
        let mut current: Vec<Thread> = Vec::new();
        let mut next = Vec::new();
        let mut seen = Seen::new(self.insts.len());
        let first = Thread { pc: 0, bits: 0, slots: Slots::from_elem(None, slots) };
        let mut ctx =
            Ctx { look: &look, hay, before: None, last: true, oracle: &mut oracle, stack: Vec::new(), mirror: None };
        self.closure(&mut current, &mut seen, &mut ctx, start, first);
        let mut at = start;
        loop {
            if at == end {
                let thread = current.into_iter().find(|t| matches!(self.insts[t.pc as usize], Inst::Match))?;
                let mut groups: Vec<Option<(usize, usize)>> =
                    thread.slots.chunks(2).map(|pair| pair[0].zip(pair[1])).collect();
                groups[0] = Some((start, end));
                return Some(groups);
            }
            if current.is_empty() {
                return None;
            }
            seen.clear();
            let byte = hay[at];
            for thread in current.drain(..) {
                if let Inst::Byte(lo, hi) = self.insts[thread.pc as usize] {
                    if (lo..=hi).contains(&byte) {
                        // Every iteration in progress has now consumed something.
                        let moved = Thread { pc: thread.pc + 1, bits: u64::MAX, slots: thread.slots };
                        self.closure(&mut next, &mut seen, &mut ctx, at + 1, moved);
                    }
                }
            }
            std::mem::swap(&mut current, &mut next);
            at += 1;
        }
    }

    /// The groups (index 0 included) of the preferred match starting at `start` in `hay` whose end
    /// `accept_end` allows (a look-around's body where it held: see [`JsCaptures::mark_look_groups`]). The
    /// text is all there; `before` and `last` as in [`LookSearch`]; `mirror` for a [`JsCaptures::reversed`]
    /// program: the text the right way round and where `hay`'s start is in it. Also whether the run came to
    /// the end of `hay` with a thread that still counted: with more bytes after it, the preferred match might
    /// be another. `oracle` answers the look-arounds inside (at positions in `hay`; `None` is taken as not
    /// holding, as the match is final).
    pub(crate) fn preferred(
        &self,
        hay: &[u8],
        (before, last): (Option<u8>, bool),
        start: usize,
        mirror: Option<(&[u8], usize)>,
        accept_end: &dyn Fn(usize) -> bool,
        oracle: &mut dyn FnMut(u32, usize) -> Option<bool>,
    ) -> PreferredRun {
        let look = crate::rewrite::lines::look_matcher();
        let mut oracle = |k, at| Some(oracle(k, at).unwrap_or(false));
        let mut ctx = Ctx { look: &look, hay, before, last, oracle: &mut oracle, stack: Vec::new(), mirror };
        let (mut current, mut next) = (Vec::new(), Vec::new());
        let mut seen = Seen::new(self.insts.len());
        let first = Thread { pc: 0, bits: 0, slots: Slots::from_elem(None, 2 * self.groups) };
        self.closure(&mut current, &mut seen, &mut ctx, start, first);
        let mut best = None;
        let mut at = start;
        let mut ran_out = false;
        loop {
            seen.clear();
            for thread in current.drain(..) {
                // Assertions at the end, too, may answer otherwise with bytes after it.
                ran_out |= at == hay.len();
                match self.insts.get(thread.pc as usize) {
                    // Less preferred threads cannot win: they go.
                    Some(Inst::Match) if accept_end(at) => {
                        best = Some((at, thread.slots));
                        break;
                    }
                    Some(&Inst::Byte(lo, hi)) if at < hay.len() && (lo..=hi).contains(&hay[at]) => {
                        let moved = Thread { pc: thread.pc + 1, bits: u64::MAX, slots: thread.slots };
                        self.closure(&mut next, &mut seen, &mut ctx, at + 1, moved);
                    }
                    _ => {}
                }
            }
            if next.is_empty() {
                break;
            }
            std::mem::swap(&mut current, &mut next);
            at += 1;
        }
        let groups = best.map(|(end, slots)| {
            let mut groups: Vec<Option<(usize, usize)>> = slots.chunks(2).map(|pair| pair[0].zip(pair[1])).collect();
            groups[0] = Some((start, end));
            groups
        });
        PreferredRun { groups, ran_out }
    }

    /// Whether the pattern (a look-around's body with look-arounds inside) matches from `start` in `hay` at all,
    /// ending where `accept_end` allows, reading no byte at or after `limit`. Which match does not matter: a
    /// look-around holds if any does. `before`, `last`, `mirror` and `oracle` as in [`JsCaptures::preferred`],
    /// but an oracle's `None` (or an assertion's at the end of `hay`) leaves the answer undecided. `runs`: how
    /// runs from other starts in the same `hay` ended, which this one learns from and adds to.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn body_matches(
        &self,
        hay: &[u8],
        (before, last): (Option<u8>, bool),
        (start, limit): (usize, usize),
        mirror: Option<(&[u8], usize)>,
        accept_end: &dyn Fn(usize) -> bool,
        oracle: &mut dyn FnMut(u32, usize) -> Option<bool>,
        runs: Option<&dyn BodyRuns>,
    ) -> BodyMatch {
        let look = crate::rewrite::lines::look_matcher();
        let mut ctx = Ctx { look: &look, hay, before, last, oracle, stack: Vec::new(), mirror };
        let (mut current, mut next) = (Vec::new(), Vec::new());
        let mut seen = Seen::new(self.insts.len());
        let first = Thread { pc: 0, bits: 0, slots: Slots::from_elem(None, 2 * self.groups) };
        self.closure(&mut current, &mut seen, &mut ctx, start, first);
        let (mut at, mut waits, mut at_limit) = (start, false, false);
        let mut visited = Vec::new();
        let ended = loop {
            if let Some(runs) = runs {
                let threads = self.threads_key(&current);
                if let Some(ended) = runs.ended(at, &threads).filter(|&(_, decided)| decided <= limit) {
                    break ended;
                }
                visited.push((at, threads));
            }
            seen.clear();
            let mut matched = false;
            for thread in current.drain(..) {
                match self.insts.get(thread.pc as usize) {
                    Some(Inst::Match) if accept_end(at) => {
                        matched = true;
                        break;
                    }
                    Some(&Inst::Byte(lo, hi)) if at < hay.len().min(limit) => {
                        if (lo..=hi).contains(&hay[at]) {
                            let moved = Thread { pc: thread.pc + 1, bits: u64::MAX, slots: thread.slots };
                            self.closure(&mut next, &mut seen, &mut ctx, at + 1, moved);
                        }
                    }
                    Some(Inst::Byte(..)) if at == limit => at_limit = true,
                    Some(Inst::Byte(..)) => waits |= !last,
                    Some(_) => {}
                    // Blocked on an assertion or look-around that more bytes decide.
                    None => waits = true,
                }
            }
            if matched {
                break (BodyMatch::Yes, at);
            }
            if next.is_empty() {
                break match (waits, at_limit) {
                    (true, _) => (BodyMatch::Undecided, at),
                    (false, true) => (BodyMatch::AtLimit, at),
                    (false, false) => (BodyMatch::No, at),
                };
            }
            std::mem::swap(&mut current, &mut next);
            at += 1;
        };
        if let Some(runs) = runs.filter(|_| ended.0 != BodyMatch::AtLimit) {
            runs.learn(visited, ended);
        }
        ended.0
    }

    /// A thread list as [`BodyRuns`] knows it: each thread's instruction and the loop bits that matter there,
    /// in order (which thread is preferred does not change whether one matches).
    fn threads_key(&self, threads: &[Thread]) -> Vec<(u32, u64)> {
        let mask = |pc: u32| self.masks.get(pc as usize).copied().unwrap_or(0);
        let mut key: Vec<(u32, u64)> = threads.iter().map(|t| (t.pc, t.bits & mask(t.pc))).collect();
        key.sort_unstable();
        key
    }

    /// The leftmost match from `from` on, with JavaScript's preferences, in one pass over `search.hay` (a
    /// Pike VM: one thread per instruction, earlier starts first): how rules with look-arounds are searched.
    /// With `sticky`, only a match starting at `from`.
    pub(crate) fn leftmost(
        &self,
        search: &LookSearch<'_>,
        from: usize,
        sticky: bool,
        oracle: &mut dyn FnMut(u32, usize) -> Option<bool>,
    ) -> Leftmost {
        let look = crate::rewrite::lines::look_matcher();
        let (hay, len) = (search.hay, search.hay.len());
        let mut ctx =
            Ctx { look: &look, hay, before: search.before, last: search.last, oracle, stack: Vec::new(), mirror: None };
        let (mut current, mut next) = (Vec::new(), Vec::new());
        let mut seen = Seen::new(self.insts.len());
        let mut found = None;
        let mut at = from;
        loop {
            if current.is_empty() && found.is_none() && !sticky {
                match (search.skip_to)(at) {
                    // What the list saw was at the old position.
                    Some(next) if next > at => {
                        at = next;
                        seen.clear();
                    }
                    Some(_) => {}
                    None => return Leftmost::NoMatch,
                }
            }
            // A thread waiting on more input outranks every later start: none is added after one.
            let waits = current.iter().any(|t: &Thread| t.pc == BLOCKED);
            if found.is_none() && !waits && (!sticky || at == from) && (search.can_start)(at) {
                let mut slots = Slots::from_elem(None, 2 * self.groups);
                slots[0] = Some(at);
                self.closure(&mut current, &mut seen, &mut ctx, at, Thread { pc: 0, bits: 0, slots });
            }
            // The most preferred thread waits on more input: whatever the others do, so does the answer.
            if let Some(first) = current.first().filter(|t| t.pc == BLOCKED) {
                return Leftmost::Pending(first.slots[0].unwrap_or(at));
            }
            // Earlier starts come first: the first thread's start is the oldest still in play.
            if let Some(oldest) = current.first().and_then(|t: &Thread| t.slots[0]) {
                if at - oldest > search.max_match {
                    return Leftmost::Abandoned(oldest);
                }
            }
            seen.clear();
            let mut waiting = None;
            for thread in current.drain(..) {
                match (thread.pc, self.insts.get(thread.pc as usize)) {
                    // A match ending where the data ends may still grow, or end inside a character: more
                    // input decides, as for the automata.
                    (_, Some(Inst::Match)) if at == len && !search.last => {
                        waiting = waiting.or(thread.slots[0]);
                        break;
                    }
                    (_, Some(Inst::Match)) => {
                        found = Some((thread.slots[0].unwrap_or(at), at));
                        break;
                    }
                    (_, Some(&Inst::Byte(lo, hi))) if at < len && (lo..=hi).contains(&hay[at]) => {
                        let moved = Thread { pc: thread.pc + 1, bits: u64::MAX, slots: thread.slots };
                        self.closure(&mut next, &mut seen, &mut ctx, at + 1, moved);
                    }
                    // A byte thread that does not match here dies.
                    (_, Some(Inst::Byte(..))) if at < len => {}
                    // Less preferred threads cannot change the answer while it waits: they go.
                    (BLOCKED, _) if at < len => {
                        next.push(thread);
                        break;
                    }
                    // Alive or undecided at the end of the data.
                    _ if !search.last => {
                        waiting = waiting.or(thread.slots[0]);
                    }
                    _ => {}
                }
            }
            if let Some(start) = waiting {
                return Leftmost::Pending(start);
            }
            if at >= len || next.is_empty() && (found.is_some() || sticky) {
                return found.map_or(Leftmost::NoMatch, |(start, end)| Leftmost::Match(start, end));
            }
            std::mem::swap(&mut current, &mut next);
            at += 1;
        }
    }

    /// Adds `thread` and everything it reaches without consuming, in order of preference, to `list`.
    fn closure(&self, list: &mut Vec<Thread>, seen: &mut Seen, ctx: &mut Ctx<'_>, at: usize, thread: Thread) {
        let mut stack = std::mem::take(&mut ctx.stack);
        stack.push(thread);
        while let Some(mut t) = stack.pop() {
            let pc = t.pc as usize;
            if !seen.insert(t.pc, t.bits & self.masks[pc]) {
                continue;
            }
            match self.insts[pc] {
                Inst::Byte(..) | Inst::Match => list.push(t),
                Inst::Split(a, b) => {
                    stack.push(Thread { pc: b, bits: t.bits, slots: t.slots.clone() });
                    stack.push(Thread { pc: a, ..t });
                }
                Inst::Jump(a) => stack.push(Thread { pc: a, ..t }),
                Inst::Save(slot) => {
                    t.slots[slot as usize] = Some(at);
                    stack.push(Thread { pc: t.pc + 1, ..t });
                }
                Inst::Clear(from, to) => {
                    t.slots[from as usize..to as usize].fill(None);
                    stack.push(Thread { pc: t.pc + 1, ..t });
                }
                Inst::Look(l) => match ctx.look_at(l, at) {
                    Some(true) => stack.push(Thread { pc: t.pc + 1, ..t }),
                    Some(false) => {}
                    None => list.push(Thread { pc: BLOCKED, ..t }),
                },
                Inst::LookAround(k) => match (ctx.oracle)(k, at) {
                    Some(true) => {
                        if let Some(&Some(first)) = self.look_groups.get(k as usize) {
                            t.slots[2 * first as usize] = Some(at);
                            t.slots[2 * first as usize + 1] = Some(LOOK_MARK);
                        }
                        stack.push(Thread { pc: t.pc + 1, ..t })
                    }
                    Some(false) => {}
                    None => list.push(Thread { pc: BLOCKED, ..t }),
                },
                Inst::Enter(k) => stack.push(Thread { pc: t.pc + 1, bits: t.bits & !(1 << k), slots: t.slots }),
                Inst::Check(k) => {
                    if t.bits & (1 << k) != 0 {
                        stack.push(Thread { pc: t.pc + 1, ..t });
                    }
                }
            }
        }
        ctx.stack = stack;
    }
}

/// What a closure reads besides the program: the hay, its assertions and the look-arounds' oracle; and its
/// work list.
/// How runs of [`JsCaptures::body_matches`] from other starts ended: a run that comes to a position with the
/// same threads ends as that one did (where it was decided), so it stops there. Without it each start of a
/// lookahead whose body reads far would read it all again (`(?=a*b(?!c))` on a long run of `a`).
pub(crate) trait BodyRuns {
    /// How a run that came to `at` with `threads` ended, and where that was decided, if one did.
    fn ended(&self, at: usize, threads: &[(u32, u64)]) -> Option<(BodyMatch, usize)>;
    /// Remembers that the runs that came to these positions with these threads ended so.
    fn learn(&self, visited: Vec<(usize, Vec<(u32, u64)>)>, ended: (BodyMatch, usize));
}

/// How [`JsCaptures::body_matches`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyMatch {
    Yes,
    No,
    /// No match yet, and bytes after `hay` (or a look-around inside) may still give one.
    Undecided,
    /// No match before the limit, where threads were still alive.
    AtLimit,
}

/// What [`JsCaptures::preferred`] found.
pub(crate) struct PreferredRun {
    pub(crate) groups: Option<Vec<Option<(usize, usize)>>>,
    /// The run read to the end of its bytes with threads that were not outranked.
    pub(crate) ran_out: bool,
}

/// What a closure reads besides the program: the hay, its assertions and the look-arounds' oracle; and its
/// work list.
struct Ctx<'a> {
    look: &'a LookMatcher,
    hay: &'a [u8],
    /// The byte before `hay` (`None`: the start of the text).
    before: Option<u8>,
    /// No bytes come after `hay`; else an assertion at its end is not known yet.
    last: bool,
    oracle: &'a mut dyn FnMut(u32, usize) -> Option<bool>,
    /// The closure's work list, kept between closures for its allocation.
    stack: Vec<Thread>,
    /// A reversed program's text the right way round, and where `hay`'s start is in it: assertions are
    /// asked there.
    mirror: Option<(&'a [u8], usize)>,
}

impl Ctx<'_> {
    /// Whether assertion `l` holds at `at`; `None` while that needs bytes not there yet.
    fn look_at(&self, l: Look, at: usize) -> Option<bool> {
        if let Some((text, origin)) = self.mirror {
            return Some(self.look.matches(l, text, origin - at));
        }
        if at == self.hay.len() && !self.last {
            return None;
        }
        match (at, self.before) {
            (0, Some(byte)) => {
                let window = [byte, self.hay.first().copied().unwrap_or(0)];
                Some(self.look.matches(l, &window[..1 + usize::from(!self.hay.is_empty())], 1))
            }
            _ => Some(self.look.matches(l, self.hay, at)),
        }
    }
}

/// The (instruction, loop bits) pairs a list holds: a stamp per instruction for the bits-free ones (most
/// programs have no repetition that can match empty), a set for the rest.
struct Seen {
    stamps: Vec<u32>,
    stamp: u32,
    with_bits: HashSet<(u32, u64)>,
}

impl Seen {
    fn new(insts: usize) -> Seen {
        Seen { stamps: vec![0; insts], stamp: 1, with_bits: HashSet::new() }
    }

    /// Whether `(pc, bits)` is new to the list.
    fn insert(&mut self, pc: u32, bits: u64) -> bool {
        if bits != 0 {
            return self.with_bits.insert((pc, bits));
        }
        let stamp = &mut self.stamps[pc as usize];
        let new = *stamp != self.stamp;
        *stamp = self.stamp;
        new
    }

    fn clear(&mut self) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.stamps.fill(0);
            self.stamp = 1;
        }
        self.with_bits.clear();
    }
}

/// A thread that waits on an assertion or look-around the data so far cannot decide.
const BLOCKED: u32 = u32::MAX;

struct Thread {
    pc: u32,
    bits: u64,
    slots: Slots,
}

/// Each group's start and end, by slot; inline up to two groups.
type Slots = smallvec::SmallVec<[Option<usize>; 4]>;
