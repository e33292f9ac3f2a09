//! What a look-around rule's runs have learnt within one hay ([`LookMemo`]): where lookahead runs have
//! been, and the unbounded lookbehinds' automata carried from hay to hay.

use regex_automata::dfa::{dense, Automaton};
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::Anchored;

use crate::rewrite::js_regex::BodyMatch;
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

type Dfa = dense::DFA<Vec<u32>>;

/// Where lookahead runs have been, by look-around, position and automaton state: a run that comes where
/// another has been ends as that one did, or goes on from where that one stopped. Without it a lookahead
/// such as `(?=[^<]*>)` would read on from every position; with it each byte is read about once per state.
/// Positions are one hay's: the stage clears it for each.
///
/// The runs are kept by position in a ring: a run reads at most `maxMatchBytes` ahead of where it starts,
/// and starts only go forward, so a slot whose position is behind the run being made is free. Runs read
/// the ring near their start and near their cap, two fronts that move forward, which the caches follow (a
/// hash map of the same runs spent half the time of `/(?=(?:a+)+c)a/` waiting on memory, more the longer
/// the body).
///
/// It also carries the unbounded lookbehinds' automata from hay to hay.
#[derive(Default)]
pub(crate) struct LookMemo {
    ring: Vec<Slot>,
    /// Slots of another hay are stale: theirs is not this.
    hay: u32,
    /// By look-around: a carried lookbehind's automaton state at the hay's start, after all the text before
    /// it (`None` before the first hay, which is the text's start).
    pub(super) carried: Vec<Option<StateID>>,
    /// By look-around: its states after each of the hay's first bytes, as far as asked.
    from_hay_start: Vec<Vec<StateID>>,
    /// The stage's tail and this hay as one text, for look-arounds inside look-arounds (see `look_nested`).
    pub(super) joined: Option<Box<Joined>>,
}

/// The stage's tail and a hay joined, made once a hay for the look-arounds inside look-arounds, which may be
/// asked at positions in the tail; with the memo of the runs over it, whose positions are its own.
#[derive(Default)]
pub(crate) struct Joined {
    /// The hay it was made for (see [`LookMemo::clear`]), once made.
    hay: Option<u32>,
    pub(super) bytes: Vec<u8>,
    pub(super) view: Vec<u8>,
    /// The byte before `view`, `None` where it starts the text.
    pub(super) before: Option<u8>,
    pub(super) memo: LookMemo,
    /// How the runs of lookahead bodies with look-arounds inside ended, by look-around and position: the
    /// threads each came there with, how it ended and where that was decided (see `js_regex::BodyRuns`).
    pub(super) runs: std::sync::Mutex<BodyRunsSeen>,
}

/// One run that passed a position: the threads it came with, how it ended and where that was decided.
pub(super) type RunSeen = (Vec<(u32, u64)>, BodyMatch, usize);

/// See [`Joined::runs`].
#[derive(Default)]
pub(super) struct BodyRunsSeen {
    pub(super) by_position: HashMap<(u32, usize), Vec<RunSeen>>,
    /// How many entries were left by the last pruning (see `look_nested`).
    pub(super) after_pruning: usize,
}

/// The runs that passed one position: most positions see one.
#[derive(Clone, Default)]
struct Slot {
    hay: u32,
    pos: usize,
    runs: smallvec::SmallVec<[(u32, StateID, Outcome); 1]>,
}

/// How a lookahead run from a (position, state) went on. For a lookahead with groups a run goes on past its
/// first match, until its body's preferred match is known (its automaton dies): then `Yes` and `No` say
/// whether a match came after that pair.
#[derive(Clone, Copy)]
pub(super) enum Outcome {
    Yes,
    No,
    /// The data ended first.
    Undecided,
    /// The run stopped at its cap here, in this state, having matched on the way or not: a later run, whose
    /// cap is further, goes on from here.
    Stopped(usize, StateID, bool),
}

/// The ring's first size, in positions.
const FIRST_RING: usize = 256;

impl LookMemo {
    pub(crate) fn clear(&mut self) {
        // Stale slots are told by their hay number; at its wrap they are wiped.
        self.hay = self.hay.wrapping_add(1);
        if self.hay == 0 {
            self.ring.iter_mut().for_each(|slot| *slot = Slot::default());
            self.hay = 1;
        }
        self.from_hay_start.iter_mut().for_each(Vec::clear);
    }

    /// How the run of look-around `k` that came to `pos` in `state` went on, if one did.
    pub(super) fn run(&self, k: u32, pos: usize, state: StateID) -> Option<Outcome> {
        let slot = self.ring.get(pos & self.ring.len().wrapping_sub(1))?;
        if slot.hay != self.hay || slot.pos != pos {
            return None;
        }
        slot.runs.iter().find(|&&(look, at, _)| look == k && at == state).map(|&(.., outcome)| outcome)
    }

    /// Remembers how the run that passed `(k, pos, state)` went on; `(start, cap)` is the span the run being
    /// made may read, whose positions must keep their slots.
    pub(super) fn remember_run(
        &mut self,
        (k, pos, state): (u32, usize, StateID),
        outcome: Outcome,
        (start, cap): (usize, usize),
    ) {
        loop {
            let mask = self.ring.len().wrapping_sub(1);
            match self.ring.get_mut(pos & mask) {
                Some(slot) if slot.hay != self.hay || slot.pos == pos || slot.pos < start => {
                    if slot.hay != self.hay || slot.pos != pos {
                        (slot.hay, slot.pos) = (self.hay, pos);
                        slot.runs.clear();
                    }
                    match slot.runs.iter_mut().find(|(look, at, _)| *look == k && *at == state) {
                        Some(known) => known.2 = outcome,
                        None => slot.runs.push((k, state, outcome)),
                    }
                    return;
                }
                // A position the runs may still come to holds the slot: more slots. The ring is at most
                // twice the span a run reads (`maxMatchBytes`), as positions further apart never collide.
                _ => self.grow((cap - start + 1).max(pos - start + 1)),
            }
        }
    }

    /// Doubles the ring (at least to `span` positions), keeping this hay's runs.
    fn grow(&mut self, span: usize) {
        let size = (2 * self.ring.len()).max(span.next_power_of_two()).max(FIRST_RING);
        let old = std::mem::replace(&mut self.ring, vec![Slot::default(); size]);
        for slot in old.into_iter().filter(|slot| slot.hay == self.hay && !slot.runs.is_empty()) {
            let at = slot.pos & (size - 1);
            self.ring[at] = slot;
        }
    }

    /// This hay's joined text, made by `make` if it is not yet (the caller gives it back with
    /// [`LookMemo::give_back`]).
    pub(super) fn take_joined(&mut self, make: impl FnOnce(&mut Joined)) -> Box<Joined> {
        let mut joined = self.joined.take().unwrap_or_default();
        if joined.hay != Some(self.hay) {
            joined.hay = Some(self.hay);
            joined.memo.clear();
            *joined.runs.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner) = BodyRunsSeen::default();
            make(&mut joined);
        }
        joined
    }

    pub(super) fn give_back(&mut self, joined: Box<Joined>) {
        self.joined = Some(joined);
    }

    /// Carried lookbehind `k`'s automaton state after the hay's first `at` bytes.
    pub(super) fn carried_state(&mut self, k: usize, dfa: &Dfa, view: &[u8], at: usize) -> Option<StateID> {
        if self.carried.len() <= k {
            self.carried.resize(k + 1, None);
            self.from_hay_start.resize_with(k + 1, Vec::new);
        }
        let start = match self.carried[k] {
            Some(state) => state,
            None => *self.carried[k].insert(dfa.start_state(&start::Config::new().anchored(Anchored::No)).ok()?),
        };
        let run = &mut self.from_hay_start[k];
        if run.is_empty() {
            run.push(start);
        }
        while run.len() <= at {
            let i = run.len() - 1;
            run.push(dfa.next_state(run[i], view[i]));
        }
        Some(run[at])
    }
}
