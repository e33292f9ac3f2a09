//! Group values with JavaScript's semantics, for rules where the engine's would differ (see
//! [`super::semantics::needs_js_captures`]): a small Pike VM over the translated pattern that knows
//! JavaScript's two repetition rules. At every iteration the body's groups are cleared, and an optional
//! iteration that matched empty fails. The latter depends on where the iteration began, so a thread carries one
//! bit per repetition with a nullable body ("this iteration consumed something") and threads are merged by
//! instruction and those bits: a later, less preferred thread in the same state has the same futures.
//!
//! It runs only on a match the automata already found, from its start to its known end, so its cost is
//! bounded by the match's length times the program's size: the rewrite stays linear in the body.

use std::collections::HashSet;

use regex_automata::util::look::{Look, LookMatcher};
use regex_syntax::hir::{Class, Hir, HirKind};
use regex_syntax::utf8::Utf8Sequences;

use super::groups::js_name;
use super::semantics::nullable;

/// Largest program accepted; a pattern whose unrolled repetitions exceed it is refused as too complex.
const MAX_INSTRUCTIONS: usize = 1 << 20;
/// Repetitions with a nullable body a program may have (one bit each per thread).
const MAX_LOOPS: usize = 64;

#[derive(Debug, Clone, Copy)]
enum Inst {
    /// Consumes one byte in the range, then goes on with the next instruction.
    Byte(u8, u8),
    /// Tries the first target, then the second.
    Split(u32, u32),
    Jump(u32),
    Save(u32),
    /// Clears slots `from..to` (a repetition body's groups, at each iteration).
    Clear(u32, u32),
    Look(Look),
    /// An optional iteration of loop `k` begins: nothing consumed yet.
    Enter(u32),
    /// An optional iteration of loop `k` ends: it must have consumed something.
    Check(u32),
    /// Look-around `k` of the pattern must hold here (asked of the caller's oracle).
    LookAround(u32),
    Match,
}

/// A compiled pattern for [`JsCaptures::captures`].
#[derive(Debug)]
pub(crate) struct JsCaptures {
    insts: Vec<Inst>,
    /// For each instruction, the bits of the loops it is inside (the others cannot change its future).
    masks: Vec<u64>,
    /// Capture groups, group 0 included.
    groups: usize,
    names: Vec<Option<String>>,
}

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

/// Why a pattern has no program.
#[derive(Debug)]
pub(crate) struct TooComplex(pub(crate) String);

impl JsCaptures {
    /// Compiles the translated pattern's `hir` (with its groups).
    /// Compiles the translated pattern's `hir` (with its groups). An empty group named
    /// [`super::look_placeholder`]`(k)` is look-around `k`; the groups after it keep JavaScript's numbers.
    pub(crate) fn new(hir: &Hir) -> Result<JsCaptures, TooComplex> {
        let mut numbers = vec![Number::Group(0)];
        number_groups(hir, &mut numbers);
        let groups = numbers.iter().filter(|n| matches!(n, Number::Group(_))).count();
        let mut compiler =
            Compiler { insts: Vec::new(), masks: Vec::new(), loops: 0, inside: 0, names: vec![None; groups], numbers };
        compiler.hir(hir)?;
        compiler.push(Inst::Match)?;
        Ok(JsCaptures { insts: compiler.insts, masks: compiler.masks, groups, names: compiler.names })
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
        let mut ctx = Ctx { look: &look, hay, before: None, last: true, oracle: &mut oracle, stack: Vec::new() };
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
        let mut ctx = Ctx { look: &look, hay, before: search.before, last: search.last, oracle, stack: Vec::new() };
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
                    Some(true) => stack.push(Thread { pc: t.pc + 1, ..t }),
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
}

impl Ctx<'_> {
    /// Whether assertion `l` holds at `at`; `None` while that needs bytes not there yet.
    fn look_at(&self, l: Look, at: usize) -> Option<bool> {
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

/// What a capture of the translated pattern stands for: a JavaScript group (its number) or a look-around.
#[derive(Debug, Clone, Copy)]
enum Number {
    Group(u32),
    Look(u32),
}

/// `numbers[i]`: what the pattern's capture `i` stands for, in the order they open.
fn number_groups(hir: &Hir, numbers: &mut Vec<Number>) {
    match hir.kind() {
        HirKind::Capture(cap) => {
            let look = cap.name.as_deref().and_then(|n| n.strip_prefix("_..")).and_then(|k| k.parse().ok());
            let groups = numbers.iter().filter(|n| matches!(n, Number::Group(_))).count() as u32;
            numbers.push(look.map_or(Number::Group(groups), Number::Look));
            number_groups(&cap.sub, numbers);
        }
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs.iter().for_each(|s| number_groups(s, numbers)),
        HirKind::Repetition(rep) => number_groups(&rep.sub, numbers),
        _ => {}
    }
}

struct Compiler {
    insts: Vec<Inst>,
    masks: Vec<u64>,
    loops: usize,
    /// Bits of the loops being compiled into.
    inside: u64,
    names: Vec<Option<String>>,
    numbers: Vec<Number>,
}

impl Compiler {
    fn push(&mut self, inst: Inst) -> Result<u32, TooComplex> {
        if self.insts.len() >= MAX_INSTRUCTIONS {
            return Err(TooComplex(format!("more than {MAX_INSTRUCTIONS} steps to resolve its groups")));
        }
        self.insts.push(inst);
        self.masks.push(self.inside);
        Ok((self.insts.len() - 1) as u32)
    }

    fn here(&self) -> u32 {
        self.insts.len() as u32
    }

    fn patch(&mut self, at: u32, inst: Inst) {
        self.insts[at as usize] = inst;
    }

    fn hir(&mut self, hir: &Hir) -> Result<(), TooComplex> {
        match hir.kind() {
            HirKind::Empty => Ok(()),
            HirKind::Literal(lit) => {
                for &b in lit.0.iter() {
                    self.push(Inst::Byte(b, b))?;
                }
                Ok(())
            }
            HirKind::Class(Class::Bytes(class)) => {
                let seqs: Vec<Vec<(u8, u8)>> = class.ranges().iter().map(|r| vec![(r.start(), r.end())]).collect();
                self.alternatives(&seqs)
            }
            HirKind::Class(Class::Unicode(class)) => {
                let seqs: Vec<Vec<(u8, u8)>> = class
                    .ranges()
                    .iter()
                    .flat_map(|r| Utf8Sequences::new(r.start(), r.end()))
                    .map(|seq| seq.as_slice().iter().map(|r| (r.start, r.end)).collect())
                    .collect();
                self.alternatives(&seqs)
            }
            HirKind::Look(l) => {
                let look = Look::from_repr(l.as_repr()).ok_or_else(|| TooComplex(format!("assertion {l:?}")))?;
                self.push(Inst::Look(look)).map(drop)
            }
            HirKind::Capture(cap) => match self.numbers[cap.index as usize] {
                Number::Look(k) => self.push(Inst::LookAround(k)).map(drop),
                Number::Group(index) => {
                    self.names[index as usize] = cap.name.as_deref().map(|n| js_name(n).into_owned());
                    self.push(Inst::Save(2 * index))?;
                    self.hir(&cap.sub)?;
                    self.push(Inst::Save(2 * index + 1)).map(drop)
                }
            },
            HirKind::Concat(subs) => subs.iter().try_for_each(|sub| self.hir(sub)),
            HirKind::Alternation(subs) => {
                let mut jumps = Vec::new();
                for (i, sub) in subs.iter().enumerate() {
                    let split = (i + 1 < subs.len()).then(|| self.push(Inst::Split(0, 0))).transpose()?;
                    self.hir(sub)?;
                    if let Some(split) = split {
                        jumps.push(self.push(Inst::Jump(0))?);
                        let next = self.here();
                        self.patch(split, Inst::Split(split + 1, next));
                    }
                }
                let end = self.here();
                for jump in jumps {
                    self.patch(jump, Inst::Jump(end));
                }
                Ok(())
            }
            HirKind::Repetition(rep) => {
                let (from, to) = group_slots(&rep.sub, &self.numbers);
                let check = nullable(&rep.sub);
                let k = if check {
                    if self.loops == MAX_LOOPS {
                        return Err(TooComplex(format!("more than {MAX_LOOPS} repetitions that can match empty")));
                    }
                    self.loops += 1;
                    Some((self.loops - 1) as u32)
                } else {
                    None
                };
                for _ in 0..rep.min {
                    self.iteration(&rep.sub, (from, to), None)?;
                }
                let mut exits = Vec::new();
                match rep.max {
                    Some(max) => {
                        let count = max - rep.min;
                        for _ in 0..count {
                            exits.push(self.push(Inst::Split(0, 0))?);
                            self.iteration(&rep.sub, (from, to), k)?;
                        }
                    }
                    None => {
                        let head = self.push(Inst::Split(0, 0))?;
                        self.iteration(&rep.sub, (from, to), k)?;
                        self.push(Inst::Jump(head))?;
                        exits.push(head);
                    }
                }
                let end = self.here();
                for split in exits {
                    let body = split + 1;
                    self.patch(split, if rep.greedy { Inst::Split(body, end) } else { Inst::Split(end, body) });
                }
                Ok(())
            }
        }
    }

    /// One iteration: the body's groups cleared, and for an optional iteration of a loop `k` the check that
    /// it consumed something.
    fn iteration(&mut self, sub: &Hir, (from, to): (u32, u32), k: Option<u32>) -> Result<(), TooComplex> {
        if from < to {
            self.push(Inst::Clear(from, to))?;
        }
        let outer = self.inside;
        if let Some(k) = k {
            self.inside |= 1 << k;
            self.push(Inst::Enter(k))?;
        }
        self.hir(sub)?;
        if let Some(k) = k {
            self.push(Inst::Check(k))?;
        }
        self.inside = outer;
        Ok(())
    }

    /// One of several byte sequences (they never match the same bytes, so their order does not matter).
    fn alternatives(&mut self, seqs: &[Vec<(u8, u8)>]) -> Result<(), TooComplex> {
        let mut jumps = Vec::new();
        for (i, seq) in seqs.iter().enumerate() {
            let split = (i + 1 < seqs.len()).then(|| self.push(Inst::Split(0, 0))).transpose()?;
            for &(lo, hi) in seq {
                self.push(Inst::Byte(lo, hi))?;
            }
            if let Some(split) = split {
                jumps.push(self.push(Inst::Jump(0))?);
                let next = self.here();
                self.patch(split, Inst::Split(split + 1, next));
            }
        }
        if seqs.is_empty() {
            // Matches nothing: a byte no range holds is impossible to express, so use an empty range.
            self.push(Inst::Byte(1, 0))?;
        }
        let end = self.here();
        for jump in jumps {
            self.patch(jump, Inst::Jump(end));
        }
        Ok(())
    }
}

/// The slots of the groups inside `hir`, as a range (groups are numbered in order, so they are contiguous).
fn group_slots(hir: &Hir, numbers: &[Number]) -> (u32, u32) {
    fn walk(hir: &Hir, numbers: &[Number], range: &mut Option<(u32, u32)>) {
        match hir.kind() {
            HirKind::Capture(cap) => {
                if let Number::Group(index) = numbers[cap.index as usize] {
                    let (lo, hi) = range.get_or_insert((index, index));
                    *lo = (*lo).min(index);
                    *hi = (*hi).max(index);
                }
                walk(&cap.sub, numbers, range);
            }
            HirKind::Concat(subs) | HirKind::Alternation(subs) => subs.iter().for_each(|s| walk(s, numbers, range)),
            HirKind::Repetition(rep) => walk(&rep.sub, numbers, range),
            _ => {}
        }
    }
    let mut range = None;
    walk(hir, numbers, &mut range);
    range.map_or((0, 0), |(lo, hi)| (2 * lo, 2 * hi + 2))
}
