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

/// Why a pattern has no program.
#[derive(Debug)]
pub(crate) struct TooComplex(pub(crate) String);

impl JsCaptures {
    /// Compiles the translated pattern's `hir` (with its groups).
    pub(crate) fn new(hir: &Hir) -> Result<JsCaptures, TooComplex> {
        let groups = hir.properties().explicit_captures_len() + 1;
        let mut compiler =
            Compiler { insts: Vec::new(), masks: Vec::new(), loops: 0, inside: 0, names: vec![None; groups] };
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
        let look = crate::rewrite::lines::look_matcher();
        let slots = 2 * self.groups;
        let mut current: Vec<Thread> = Vec::new();
        let mut next = Vec::new();
        let mut seen = HashSet::new();
        self.closure(&mut current, &mut seen, &look, hay, start, Thread { pc: 0, bits: 0, slots: vec![None; slots] });
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
                        self.closure(&mut next, &mut seen, &look, hay, at + 1, moved);
                    }
                }
            }
            std::mem::swap(&mut current, &mut next);
            at += 1;
        }
    }

    /// Adds `thread` and everything it reaches without consuming, in order of preference, to `list`.
    fn closure(
        &self,
        list: &mut Vec<Thread>,
        seen: &mut HashSet<(u32, u64)>,
        look: &LookMatcher,
        hay: &[u8],
        at: usize,
        thread: Thread,
    ) {
        let mut stack = vec![thread];
        while let Some(mut t) = stack.pop() {
            let pc = t.pc as usize;
            if !seen.insert((t.pc, t.bits & self.masks[pc])) {
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
                Inst::Look(l) => {
                    if look.matches(l, hay, at) {
                        stack.push(Thread { pc: t.pc + 1, ..t });
                    }
                }
                Inst::Enter(k) => stack.push(Thread { pc: t.pc + 1, bits: t.bits & !(1 << k), slots: t.slots }),
                Inst::Check(k) => {
                    if t.bits & (1 << k) != 0 {
                        stack.push(Thread { pc: t.pc + 1, ..t });
                    }
                }
            }
        }
    }
}

struct Thread {
    pc: u32,
    bits: u64,
    slots: Vec<Option<usize>>,
}

struct Compiler {
    insts: Vec<Inst>,
    masks: Vec<u64>,
    loops: usize,
    /// Bits of the loops being compiled into.
    inside: u64,
    names: Vec<Option<String>>,
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
            HirKind::Capture(cap) => {
                self.names[cap.index as usize] = cap.name.as_deref().map(|n| js_name(n).into_owned());
                self.push(Inst::Save(2 * cap.index))?;
                self.hir(&cap.sub)?;
                self.push(Inst::Save(2 * cap.index + 1)).map(drop)
            }
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
                let (from, to) = group_slots(&rep.sub);
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
fn group_slots(hir: &Hir) -> (u32, u32) {
    fn walk(hir: &Hir, range: &mut Option<(u32, u32)>) {
        match hir.kind() {
            HirKind::Capture(cap) => {
                let (lo, hi) = range.get_or_insert((cap.index, cap.index));
                *lo = (*lo).min(cap.index);
                *hi = (*hi).max(cap.index);
                walk(&cap.sub, range);
            }
            HirKind::Concat(subs) | HirKind::Alternation(subs) => subs.iter().for_each(|s| walk(s, range)),
            HirKind::Repetition(rep) => walk(&rep.sub, range),
            _ => {}
        }
    }
    let mut range = None;
    walk(hir, &mut range);
    range.map_or((0, 0), |(lo, hi)| (2 * lo, 2 * hi + 2))
}
