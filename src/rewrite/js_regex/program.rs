//! The Pike VM program of [`super::JsCaptures`]: compiled from the translated pattern, with JavaScript's
//! repetition rules (each iteration clears its groups; an optional one that matched empty fails) made
//! explicit, read forward or, for a lookbehind's body, backward.

use regex_automata::util::look::Look;
use regex_syntax::hir::{Class, Hir, HirKind};
use regex_syntax::utf8::Utf8Sequences;

use super::groups::js_name;
use super::semantics::nullable;

/// Largest program accepted; a pattern whose unrolled repetitions exceed it is refused as too complex.
const MAX_INSTRUCTIONS: usize = 1 << 20;
/// Repetitions with a nullable body a program may have (one bit each per thread).
const MAX_LOOPS: usize = 64;

/// Why a pattern has no program.
#[derive(Debug)]
pub(crate) struct TooComplex(pub(crate) String);

#[derive(Debug, Clone, Copy)]
pub(super) enum Inst {
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

/// The program of `hir` (see [`super::JsCaptures::reversed`] for `reverse`): its instructions, for each the
/// bits of the loops it is inside, and each group's JavaScript name (index 0 is the whole match).
#[allow(clippy::type_complexity)]
pub(super) fn compile(hir: &Hir, reverse: bool) -> Result<(Vec<Inst>, Vec<u64>, Vec<Option<String>>), TooComplex> {
    let (mut numbers, mut names) = (vec![Number::Group(0)], vec![None]);
    number_groups(hir, &mut numbers, &mut names);
    let mut compiler = Compiler { insts: Vec::new(), masks: Vec::new(), loops: 0, inside: 0, numbers, reverse };
    compiler.hir(hir)?;
    compiler.push(Inst::Match)?;
    Ok((compiler.insts, compiler.masks, names))
}

/// What a capture of the translated pattern stands for: a JavaScript group (its number) or a look-around.
#[derive(Debug, Clone, Copy)]
enum Number {
    Group(u32),
    Look(u32),
}

/// `numbers[i]`: what the pattern's capture `i` stands for, in the order they open; `names[g]`: group `g`'s
/// JavaScript name.
fn number_groups(hir: &Hir, numbers: &mut Vec<Number>, names: &mut Vec<Option<String>>) {
    match hir.kind() {
        HirKind::Capture(cap) => {
            let look = cap.name.as_deref().and_then(|n| n.strip_prefix("_..")).and_then(|k| k.parse().ok());
            numbers.push(look.map_or(Number::Group(names.len() as u32), Number::Look));
            if look.is_none() {
                names.push(cap.name.as_deref().map(|n| js_name(n).into_owned()));
            }
            number_groups(&cap.sub, numbers, names);
        }
        HirKind::Concat(subs) | HirKind::Alternation(subs) => {
            subs.iter().for_each(|s| number_groups(s, numbers, names))
        }
        HirKind::Repetition(rep) => number_groups(&rep.sub, numbers, names),
        _ => {}
    }
}

struct Compiler {
    insts: Vec<Inst>,
    masks: Vec<u64>,
    loops: usize,
    /// Bits of the loops being compiled into.
    inside: u64,
    numbers: Vec<Number>,
    /// Compiling the program that reads the text backward (see [`JsCaptures::reversed`]).
    reverse: bool,
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
                let mut bytes = lit.0.to_vec();
                if self.reverse {
                    bytes.reverse();
                }
                for b in bytes {
                    self.push(Inst::Byte(b, b))?;
                }
                Ok(())
            }
            HirKind::Class(Class::Bytes(class)) => {
                let seqs: Vec<Vec<(u8, u8)>> = class.ranges().iter().map(|r| vec![(r.start(), r.end())]).collect();
                self.alternatives(&seqs)
            }
            HirKind::Class(Class::Unicode(class)) => {
                let reverse = self.reverse;
                let seqs: Vec<Vec<(u8, u8)>> = class
                    .ranges()
                    .iter()
                    .flat_map(|r| Utf8Sequences::new(r.start(), r.end()))
                    .map(|seq| {
                        let mut seq: Vec<(u8, u8)> = seq.as_slice().iter().map(|r| (r.start, r.end)).collect();
                        if reverse {
                            seq.reverse();
                        }
                        seq
                    })
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
                    self.push(Inst::Save(2 * index))?;
                    self.hir(&cap.sub)?;
                    self.push(Inst::Save(2 * index + 1)).map(drop)
                }
            },
            HirKind::Concat(subs) if self.reverse => subs.iter().rev().try_for_each(|sub| self.hir(sub)),
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
