//! The first viable start, found in one pass whatever the cap.
//!
//! A rule like `[\s\S]*?</body>` can be "still alive" from every position at once. Trying each start in
//! turn costs up to `max_match` steps per start, so a body of such starts costs `n * max_match` steps
//! (a 200 KB body took minutes). The sweep instead runs the anchored DFA from every candidate start at
//! the same time, one byte per step. Runs that reach the same DFA state at the same position have the
//! same future, so they are merged into one group and stepped once: each byte costs one step per
//! distinct live state, not one per start.
//!
//! A start's outcome is the anchored run's, as [`super::search`] defines it: a match (the last match
//! state seen before the run died, or at the end of the body), no match, still alive at the end of the
//! data, or abandoned once alive after `max_match + 1` bytes. The answer is the first start, in order,
//! that matches or is still alive; abandoned starts before it are counted.

use std::collections::VecDeque;

use regex_automata::dfa::Automaton;
use regex_automata::util::primitives::StateID;

use super::hay::Next;
use super::rule::RegexRule;
use super::search::RegexSearch;

/// Runs merged because they reached the same state: a node of a union-find forest. Only a root is
/// stepped; a member's run is its group's root's run from the time its group joined it.
struct Group {
    parent: u32,
    /// When this group joined `parent`: the parent's matches from then on are this group's too.
    joined_at: usize,
    /// Members, child groups and the live list that point here; at zero the node is reused.
    refs: u32,
    state: StateID,
    /// The last position where this group's run was in a match state (while it was a root).
    last_match: Option<usize>,
    dead: bool,
}

/// The state of one [`Sweep::first_viable`] call.
#[derive(Default)]
pub(super) struct Sweep {
    groups: Vec<Group>,
    free: Vec<u32>,
    /// Roots still alive, stepped each byte.
    live: Vec<u32>,
    /// Unresolved starts, oldest first, each with the group it started in.
    members: VecDeque<(usize, u32)>,
}

impl Sweep {
    /// The first start at or after `from`, among the search's candidates, whose anchored run
    /// matches or is still alive at the end of the data. Linear in the data: each byte costs one DFA
    /// step per distinct live state.
    pub(super) fn first_viable(&mut self, search: &RegexSearch, from: usize, abandoned: &mut u64) -> Next {
        let RegexSearch { re, hay, last, max_match } = *search;
        let dfa = &re.dfa;
        let len = hay.view.len();
        let mut next_candidate = search.next_candidate(from);
        let mut at = from;
        loop {
            if self.live.is_empty() && self.members.is_empty() {
                // Nothing in flight: skip straight to the next start.
                match next_candidate {
                    Some(c) => at = at.max(c),
                    None => return Next::Exhausted,
                }
            }
            if next_candidate == Some(at) {
                // A match never starts inside a UTF-8 character (JS never sees those positions), but for
                // the halves of astral characters without `u`.
                let starts_char = hay.can_start(at, re.units);
                if let Some(state) = re.anchored_starts.get(hay.look_behind(at)).filter(|_| starts_char) {
                    if !dfa.is_dead_state(state) {
                        let id = self.alloc(state);
                        self.hold(id);
                        self.live.push(id);
                        self.hold(id);
                        self.members.push_back((at, id));
                    }
                }
                next_candidate = if at < len { search.next_candidate(at + 1) } else { None };
            }
            if at == len {
                break;
            }
            self.step(re, hay.view[at], at);
            if let Some(next) = self.resolve_front(Some(at), max_match, abandoned) {
                return next;
            }
            at += 1;
        }
        if last {
            for id in std::mem::take(&mut self.live) {
                let group = &mut self.groups[id as usize];
                if dfa.is_match_state(dfa.next_eoi_state(group.state)) {
                    group.last_match = Some(len);
                }
                group.dead = true;
                self.release(id);
            }
        }
        if let Some(next) = self.resolve_front(None, max_match, abandoned) {
            return next;
        }
        match self.members.front() {
            Some(&(start, _)) => Next::Pending(start),
            None => Next::Exhausted,
        }
    }

    /// Advances every live run by the byte at `at`, then merges runs that reached the same state.
    fn step(&mut self, re: &RegexRule, byte: u8, at: usize) {
        let dfa = &re.dfa;
        let mut i = 0;
        while i < self.live.len() {
            let id = self.live[i];
            let group = &mut self.groups[id as usize];
            if group.refs == 1 {
                // Only the live list points here: no start depends on this run any more.
                self.live.swap_remove(i);
                self.release(id);
                continue;
            }
            group.state = dfa.next_state(group.state, byte);
            if dfa.is_special_state(group.state) {
                if dfa.is_match_state(group.state) {
                    // Matches show one byte late: this one ends before `at`.
                    group.last_match = Some(at);
                } else if dfa.is_dead_state(group.state) || dfa.is_quit_state(group.state) {
                    group.dead = true;
                    self.live.swap_remove(i);
                    self.release(id);
                    continue;
                }
            }
            i += 1;
        }
        if self.live.len() > 1 {
            let groups = &self.groups;
            self.live.sort_unstable_by_key(|&id| groups[id as usize].state);
            let mut kept = 0;
            for i in 0..self.live.len() {
                let id = self.live[i];
                if kept > 0 && self.groups[self.live[kept - 1] as usize].state == self.groups[id as usize].state {
                    let root = self.live[kept - 1];
                    self.live[kept - 1] = self.union(root, id, at);
                } else {
                    self.live[kept] = id;
                    kept += 1;
                }
            }
            self.live.truncate(kept);
        }
    }

    /// Puts one of two live roots in the same state under the other (the larger); returns the root.
    fn union(&mut self, a: u32, b: u32, at: usize) -> u32 {
        let (root, child) = if self.groups[a as usize].refs >= self.groups[b as usize].refs { (a, b) } else { (b, a) };
        let node = &mut self.groups[child as usize];
        node.parent = root;
        node.joined_at = at;
        self.hold(root);
        // The child leaves the live list.
        self.release(child);
        root
    }

    /// Settles the oldest starts whose outcome is known; returns the answer once it is.
    /// `stepped` is the position just consumed, for the cap; `None` at the end of the data.
    fn resolve_front(&mut self, stepped: Option<usize>, max_match: usize, abandoned: &mut u64) -> Option<Next> {
        while let Some(&(start, id)) = self.members.front() {
            let root = self.root(id);
            if self.groups[root as usize].dead {
                let found = self.found(id);
                self.pop_front();
                match found {
                    Some(end) => return Some(Next::Match { start, end }),
                    None => continue,
                }
            }
            match stepped {
                Some(at) if start + max_match <= at => {
                    *abandoned += 1;
                    self.pop_front();
                }
                _ => return None,
            }
        }
        None
    }

    fn root(&self, mut id: u32) -> u32 {
        loop {
            let parent = self.groups[id as usize].parent;
            if parent == id {
                return id;
            }
            id = parent;
        }
    }

    /// The end of the last match of a member's run: its own group's, unless a group it joined later
    /// matched after the joining.
    fn found(&self, mut id: u32) -> Option<usize> {
        let mut found = self.groups[id as usize].last_match;
        loop {
            let group = &self.groups[id as usize];
            if group.parent == id {
                return found;
            }
            let parent = &self.groups[group.parent as usize];
            if let Some(end) = parent.last_match.filter(|&end| end >= group.joined_at) {
                found = Some(end);
            }
            id = group.parent;
        }
    }

    fn pop_front(&mut self) {
        if let Some((_, id)) = self.members.pop_front() {
            self.release(id);
        }
    }

    fn alloc(&mut self, state: StateID) -> u32 {
        let group = Group { parent: 0, joined_at: 0, refs: 0, state, last_match: None, dead: false };
        let id = match self.free.pop() {
            Some(id) => {
                self.groups[id as usize] = group;
                id
            }
            None => {
                self.groups.push(group);
                u32::try_from(self.groups.len() - 1).expect("fewer groups than bytes held")
            }
        };
        self.groups[id as usize].parent = id;
        id
    }

    fn hold(&mut self, id: u32) {
        self.groups[id as usize].refs += 1;
    }

    /// Drops one reference; a node nothing points to is reused, and lets go of its parent.
    fn release(&mut self, mut id: u32) {
        loop {
            let group = &mut self.groups[id as usize];
            group.refs -= 1;
            if group.refs > 0 {
                return;
            }
            let parent = group.parent;
            self.free.push(id);
            if parent == id {
                return;
            }
            id = parent;
        }
    }
}
