//! Literal rules (a string `match`, or a regex that is a plain literal) matched together in one pass.
//!
//! A literal rule with a string replacement always writes the same bytes, so its stage needs no automaton
//! of its own: alone, a `memmem` search finds its matches. Consecutive literal rules that cannot interact
//! share one search (Prexy's "many rules in one pass"): applied one after another with
//! `String.prototype.replace`, two rules interact if an earlier rule's replacement overlaps a later needle
//! (the later rule would match text the earlier one wrote), if a replacement is empty (its removal joins
//! text on both sides into a new match), if one needle lies inside another, or if a later rule's needle
//! can end where an earlier rule's begins (in turn, the earlier rule's match wins though it starts further
//! right). Needles that overlap the other way round, the earlier rule's on the left (`header` and
//! `rewrite` in `headerewrite`), do not interact: the leftmost match is the earlier rule's, and the later
//! rule's is gone in turn too. Where no interaction can happen, the leftmost search gives the same result
//! as the rules in turn. [`group`] decides it conservatively; a rule that may interact with one in the
//! open set starts the next set, in its place. Three kinds of interaction can only happen across the ends of
//! a match, so they are watched rather than kept apart (see `literal_watch`): a later needle that ends where
//! an earlier one begins, an earlier replacement whose end begins a later needle (`new-1.example.net` then
//! `token`), and one whose start ends a later needle (`domai` then `new-...`); a body where such a pair is
//! found runs the rules in turn from there on.

use std::ops::Range;
use std::sync::OnceLock;

use super::hay::{Hay, Next};
use super::literal_interactions::{interactions, Side, Watched};
use super::literal_run::{DenseMember, DenseRun, Progress};
use super::literal_search::Searcher;
use super::literal_watch::{Body, MatchAt, Watch};
use super::needle_scan::{copy_short, folded};
use super::word_bounds::{Bounded, NeedleBounds, WordBounds};

/// One literal rule: what it finds and what it writes.
#[derive(Debug, Clone)]
pub(super) struct Literal {
    pub(super) label: String,
    pub(super) needle: Vec<u8>,
    pub(super) output: Vec<u8>,
    /// Every occurrence (`g`), or the first only (a string `match`, a regex without `g`).
    pub(super) global: bool,
    /// `\b` at the needle's ends (see `word_bounds`).
    pub(super) bounds: WordBounds,
    /// ASCII letters match in either case (`i` without `u`, see `plain_text`); a set's members all do or none.
    pub(super) any_case: bool,
}

/// Literal rules searched together (one rule alone is a set of one).
#[derive(Debug, Clone)]
pub(super) struct LiteralSet {
    members: Vec<Literal>,
    /// The members match ASCII letters in either case.
    any_case: bool,
    searcher: Searcher,
    longest: usize,
    /// The needles in order, to tell whether the data's end may start one.
    sorted: Vec<Vec<u8>>,
    /// The bytes a needle may begin with (both cases where the members match any case): most of a chunk's
    /// last bytes are none, and need no look-up in `sorted`.
    first_bytes: [bool; 256],
    /// The pairs of members that meet only across a match's ends: only where one is found in the text does
    /// the shared search differ from the rules in turn (see [`group`]).
    watch: Watch,
    /// Where every member is global (its match is its needle, within its word bounds) and the search is a
    /// [`NeedleScan`](super::needle_scan::NeedleScan): what `literal_run`'s loop needs of each member.
    dense: Option<Box<[DenseMember]>>,
    /// Where the members that must be searched apart begin, after the first: the sets that run in turn
    /// once a watched pair is found.
    strict_starts: Vec<usize>,
    /// Those sets, built when first needed (most bodies never need them) and kept for the next body.
    in_turn: OnceLock<Result<InTurnSets, String>>,
    /// The members are one rule's alternatives (see `alternation`), not rules in turn.
    alternation: bool,
    /// The members' outputs end to end, then 16 bytes more, and where each one is: see [`copy_short`].
    outputs: Vec<u8>,
    output_spans: Vec<(usize, usize)>,
}

/// The sets that run in turn in a shared search's place, each with the range of its members.
pub(super) type InTurnSets = Vec<(Range<usize>, LiteralSet)>;

impl LiteralSet {
    /// `members` must not interact (see [`group`]) and have non-empty needles.
    pub(super) fn new(members: Vec<Literal>) -> Result<LiteralSet, String> {
        LiteralSet::of_group(Group { members, after: Vec::new(), before: Vec::new(), strict_starts: Vec::new() })
    }

    /// The set of one rule's alternatives (see `alternation`): searched leftmost-first, never grouped.
    pub(super) fn alternation(members: Vec<Literal>) -> Result<LiteralSet, String> {
        LiteralSet::new(members).map(|set| LiteralSet { alternation: true, ..set })
    }

    /// Whether the members are one rule's alternatives.
    pub(super) fn is_alternation(&self) -> bool {
        self.alternation
    }

    /// The set of a [`group`]'s members, which shares one search and watches for the pairs that would
    /// need the rules in turn.
    pub(super) fn of_group(group: Group) -> Result<LiteralSet, String> {
        let Group { members, after, before, strict_starts } = group;
        let any_case = members.first().is_some_and(|m| m.any_case);
        let needles: Vec<&[u8]> = members.iter().map(|m| &m.needle[..]).collect();
        let searcher = match &members[..] {
            _ if any_case => Searcher::any_case(&needles)?,
            [one] => Searcher::One(Box::new(memchr::memmem::Finder::new(&one.needle).into_owned())),
            _ => Searcher::many(&needles)?,
        };
        let longest = members.iter().map(|m| m.needle.len()).max().unwrap_or(1);
        let mut sorted: Vec<Vec<u8>> = members.iter().map(|m| folded(&m.needle, any_case)).collect();
        sorted.sort_unstable();
        let mut first_bytes = [false; 256];
        for &byte in sorted.iter().filter_map(|needle| needle.first()) {
            first_bytes[usize::from(byte)] = true;
            first_bytes[usize::from(byte.to_ascii_uppercase())] |= any_case;
        }
        let mut outputs = Vec::new();
        let mut output_spans = Vec::with_capacity(members.len());
        for member in &members {
            output_spans.push((outputs.len(), outputs.len() + member.output.len()));
            outputs.extend_from_slice(&member.output);
        }
        outputs.extend_from_slice(&[0; 16]);
        let outputs_in_order: Vec<&[u8]> = members.iter().map(|m| &m.output[..]).collect();
        let watch = Watch::new(&needles, &outputs_in_order, after, &before, any_case);
        let dense = match matches!(searcher, Searcher::Scan(_)) && members.iter().all(|m| m.global) {
            true => members
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let bounds = NeedleBounds::of(m.bounds, &m.needle);
                    let watched = (watch.next_bits(i), watch.prev_bits(i));
                    DenseMember::new(m.needle.len(), output_spans[i], watched, bounds)
                })
                .collect(),
            false => None,
        };
        Ok(LiteralSet {
            members,
            any_case,
            searcher,
            longest,
            sorted,
            first_bytes,
            watch,
            dense,
            strict_starts,
            in_turn: OnceLock::new(),
            alternation: false,
            outputs,
            output_spans,
        })
    }

    /// The sets that run one after another in this set's place once a watched pair is found, each with the
    /// range of this set's members it holds.
    pub(super) fn in_turn_sets(&self) -> Result<InTurnSets, String> {
        let built = self.in_turn.get_or_init(|| {
            let mut starts = vec![0];
            starts.extend(&self.strict_starts);
            starts.push(self.members.len());
            starts.windows(2).map(|w| Ok((w[0]..w[1], LiteralSet::new(self.members[w[0]..w[1]].to_vec())?))).collect()
        });
        built.clone()
    }

    pub(super) fn members(&self) -> &[Literal] {
        &self.members
    }

    /// Heap bytes of the search and the members' texts.
    pub(super) fn memory_usage(&self) -> usize {
        self.searcher.memory_usage()
            + self.members.iter().map(|m| 2 * m.needle.len() + m.output.len() + m.label.len()).sum::<usize>()
    }

    /// The next match at or after `from` of a member that is not `done`, and which member. A match is
    /// final as soon as it is found: no other member can overlap it (see [`group`]), and a needle cannot
    /// lie inside a longer prefix of itself. Without the end of the body, the bytes from the first place
    /// where the data's end may be the start of a needle are held back: never more than the longest
    /// needle less one byte (or than `max_match`). The search begins at `from`; the input before `emitted` is
    /// written out (a watched pair may begin in the text between).
    pub(super) fn next_match(
        &self,
        hay: Hay,
        (from, emitted): (usize, usize),
        last: bool,
        max_match: usize,
        done: &[bool],
        abandoned: &mut u64,
    ) -> (Next, usize) {
        let (hay, before) = (hay.bytes, hay.before);
        let len = hay.len();
        let mut at = from;
        while at < len {
            let Some((start, end, member)) = self.searcher.find(hay, at) else { break };
            if done[member] || end - start > max_match {
                // Longer than one match may hold back: left as it is, as the regex stages do.
                *abandoned += u64::from(!done[member]);
                // A later rule's needle may start inside it (see `group`): searched again from the next byte.
                at = start + 1;
                continue;
            }
            let literal = &self.members[member];
            match literal.bounds.check(&literal.needle, hay, before, start, last) {
                Bounded::Yes => {}
                // Not a match: the text stays, and another rule's needle may start inside it.
                Bounded::No => {
                    at = start + 1;
                    continue;
                }
                // Held with the text a watched pair may need before it (see `literal_watch`).
                Bounded::Unknown => {
                    let from = self.watch.boundary(hay, emitted, start);
                    return (Next::Pending(from), 0);
                }
            }
            let body = Body { hay, last, max_match, done };
            if let Some(next) = self.watched(&body, MatchAt { start, member, emitted }) {
                return (next, member);
            }
            return (Next::Match { start, end }, member);
        }
        if last {
            return (Next::Exhausted, 0);
        }
        let reach = self.longest.min(max_match.saturating_add(1));
        let window = len.saturating_sub(reach - 1).max(at);
        let needle = (window..len).find(|&k| self.starts_a_needle(&hay[k..]));
        // The first part of a needle watched before a match (see `literal_watch`) must still be there when
        // that match is found: held where the data may end inside the part and the needle after it.
        let pairs = len.saturating_sub(self.watch.pair_reach()).max(emitted);
        let pair = (pairs..len).find(|&k| self.watch.begins_a_pair(&hay[k..]));
        match needle.into_iter().chain(pair).min() {
            Some(k) => (Next::Pending(self.watch.boundary(hay, emitted, k)), 0),
            None => (Next::Exhausted, 0),
        }
    }

    /// At a match: [`Next::InTurn`] where a watched pair is found, [`Next::Pending`] where the data may end
    /// inside one, `None` where the match stands (see `literal_watch`).
    fn watched(&self, body: &Body, at: MatchAt) -> Option<Next> {
        self.watch.at_match(body, at)
    }

    /// Replaces, in one loop, the matches that start from `at.from` on and lie far enough from the data's
    /// end that no byte they depend on can be missing (a watched pair needs the bytes after a match): the
    /// search one match at a time ([`LiteralSet::next_match`]) settles the rest. A [`NeedleScan`] hands out
    /// the matches of a block at once; the other searchers are asked again after each match.
    pub(super) fn replace_run(
        &self,
        hay: Hay,
        mut at: Progress,
        (last, max_match): (bool, usize),
        states: &mut MemberStates,
        out: &mut Vec<u8>,
        abandoned: &mut u64,
    ) -> Progress {
        let (hay, before) = (hay.bytes, hay.before);
        let limit = hay.len().saturating_sub(2 * self.longest);
        if let (Searcher::Scan(scan), Some(members)) = (&self.searcher, &self.dense) {
            // Members left out for this body (`Stage::skip_members`) need the general loop's test per match.
            if self.longest <= max_match && !states.done.contains(&true) {
                let done = &states.done;
                let run = DenseRun {
                    members,
                    scan,
                    outputs: &self.outputs,
                    hay,
                    before,
                    at,
                    limit,
                    watched: |start, member, emitted| {
                        let body = Body { hay, last, max_match, done };
                        self.watched(&body, MatchAt { start, member, emitted }).is_some()
                    },
                    watches_before: self.watch.watches_before(),
                    matches: &mut states.matches,
                    current: &mut states.current,
                    out,
                };
                return scan.drive(hay, run);
            }
        }
        let mut starts = match &self.searcher {
            Searcher::Scan(scan) => Matches::Scan(scan.starts(hay, at.from, limit)),
            // A match that starts before the limit ends before this: the search need not read further.
            searcher => {
                Matches::Restart { searcher, hay: &hay[..hay.len().min(limit + self.longest)], from: at.from, limit }
            }
        };
        let mut stopped = false;
        while let Some((start, member)) = starts.next() {
            let literal = &self.members[member];
            let end = start + literal.needle.len();
            // Far from the data's end the bytes around a match are all there: `Unknown` cannot be.
            if literal.bounds.any()
                && !matches!(literal.bounds.check(&literal.needle, hay, before, start, last), Bounded::Yes)
            {
                continue;
            }
            if states.done[member] || end - start > max_match {
                // As in `next_match`: left as it is, and the search goes on from the next byte.
                *abandoned += u64::from(!states.done[member]);
                continue;
            }
            let near = 1 << (hay[end] % 64) & self.watch.next_bits(member)
                | 1 << (hay[start.saturating_sub(1)] % 64) & self.watch.prev_bits(member);
            let body = Body { hay, last, max_match, done: &states.done };
            if near != 0 && self.watched(&body, MatchAt { start, member, emitted: at.emitted }).is_some() {
                // The search one match at a time finds it again and says what it needs.
                (at.from, stopped) = (start, true);
                break;
            }
            copy_short(out, hay, at.emitted, start);
            let (from, to) = self.output_spans[member];
            copy_short(out, &self.outputs, from, to);
            (at.emitted, at.from) = (end, end);
            at.replaced += 1;
            states.current = member;
            if states.replaced(self) {
                at.finished = true;
                return at;
            }
            starts.skip_to(end);
        }
        if !stopped {
            at.from = at.from.max(limit);
        }
        at
    }

    /// Whether `tail` is the start of some needle (shorter than it).
    fn starts_a_needle(&self, tail: &[u8]) -> bool {
        if !tail.first().is_some_and(|&byte| self.first_bytes[usize::from(byte)]) {
            return false;
        }
        let folded_tail;
        let tail = if self.any_case {
            folded_tail = tail.to_ascii_lowercase();
            &folded_tail[..]
        } else {
            tail
        };
        let first = self.sorted.partition_point(|needle| needle.as_slice() < tail);
        self.sorted.get(first).is_some_and(|needle| needle.starts_with(tail) && needle.len() > tail.len())
    }
}

/// A set's matches from a position on, for [`LiteralSet::replace_run`], with the member of each: every
/// needle found in a [`NeedleScan`]'s blocks, or the other searchers' next match, searched again from
/// where the last one ended (or the byte after a match left alone).
enum Matches<'a> {
    Scan(super::needle_scan::Starts<'a>),
    Restart { searcher: &'a Searcher, hay: &'a [u8], from: usize, limit: usize },
}

impl Matches<'_> {
    fn next(&mut self) -> Option<(usize, usize)> {
        match self {
            Matches::Scan(starts) => starts.next(),
            Matches::Restart { searcher, hay, from, limit } => {
                if *from >= *limit {
                    return None;
                }
                let (start, _, member) = searcher.find(hay, *from).filter(|&(start, ..)| start < *limit)?;
                *from = start + 1;
                Some((start, member))
            }
        }
    }

    /// Leaves out the matches that start before `at`.
    fn skip_to(&mut self, at: usize) {
        match self {
            Matches::Scan(starts) => starts.skip_to(at),
            Matches::Restart { from, .. } => *from = at,
        }
    }
}

/// The members of a group of literal (or regex) rules, as one body goes through them.
#[derive(Default)]
pub(super) struct MemberStates {
    /// First-occurrence members that have replaced theirs.
    pub(super) done: Vec<bool>,
    pub(super) matches: Vec<u64>,
    /// The member whose match is being replaced.
    pub(super) current: usize,
}

impl MemberStates {
    /// Counts the current member's match; true when no member can match any more.
    pub(super) fn replaced(&mut self, set: &LiteralSet) -> bool {
        self.replaced_member(set.members()[self.current].global)
    }

    /// Counts the current member's match, `global` or first-match-only; true when no member can match any
    /// more (a group of regex rules' members too).
    pub(super) fn replaced_member(&mut self, global: bool) -> bool {
        let member = self.current;
        self.matches[member] += 1;
        // A global member that matched is not done: only a first-match-only one can end the set.
        !global && {
            self.done[member] = true;
            self.done.iter().all(|&done| done)
        }
    }
}

/// A set of consecutive literal rules that share one search, and what keeps it exact.
#[derive(Debug)]
pub(super) struct Group {
    pub(super) members: Vec<Literal>,
    /// Per member, the (byte, other member) pairs watched after its match (see `literal_watch::Watch`).
    after: Vec<Vec<(u32, u32)>>,
    /// (member, other member, bytes): the other's needle's first bytes watched before the member's match.
    before: Vec<(u32, u32, u32)>,
    /// See [`LiteralSet`]'s field.
    strict_starts: Vec<usize>,
}

/// A run of consecutive literal rules split into as few sets as the interactions allow (see the module's
/// doc), the order kept: each rule joins the open set unless it may interact with a rule in it. A later
/// rule's needle whose end may be where an earlier one's begins (`server` then `rewrite` in
/// `serverewrite`), that may begin where an earlier rule's replacement ends (`.net` then `token`), or that
/// may end where one begins (`domai` then `new-...`), does not split the set: the pair is watched, and only
/// a body where it is found runs the rules in turn from there (see `Next::InTurn`, `literal_watch`).
pub(super) fn group(literals: Vec<Literal>) -> Vec<Group> {
    // A rule that matches any case reads the others' texts in any case: compared folded, every interaction
    // stays one (and some are added, which only keeps rules apart).
    let any_case = literals.iter().any(|l| l.any_case);
    let needles: Vec<Vec<u8>> = literals.iter().map(|l| folded(&l.needle, any_case)).collect();
    let outputs: Vec<Vec<u8>> = literals.iter().map(|l| folded(&l.output, any_case)).collect();
    let bounds: Vec<NeedleBounds> = literals.iter().map(|l| NeedleBounds::of(l.bounds, &l.needle)).collect();
    let as_compared: Vec<Vec<u8>> = literals.iter().map(|l| folded(&l.needle, l.any_case)).collect();
    let found = interactions(
        &needles.iter().map(Vec::as_slice).collect::<Vec<_>>(),
        &outputs.iter().map(Vec::as_slice).collect::<Vec<_>>(),
        &bounds,
        &as_compared.iter().map(Vec::as_slice).collect::<Vec<_>>(),
    );
    let mut groups: Vec<Group> = Vec::new();
    // The set each rule went to, to tell whether an earlier rule it may interact with is in the open one.
    let mut group_of: Vec<usize> = Vec::with_capacity(literals.len());
    // Where the open set's members and its last strict run begin, as rule indexes.
    let (mut first, mut strict_first) = (0, 0);
    let mut open = false;
    for (index, literal) in literals.into_iter().enumerate() {
        let current = groups.len().wrapping_sub(1);
        let joins =
            open && match &found {
                Some(found) => !found.hard[index].iter().any(|&u| group_of[u as usize] == current),
                None => false,
            } && groups[current].members.iter().all(|a| {
                a.any_case == literal.any_case
                    && literal.bounds.see_alike(&literal.needle, (&a.needle, &a.output, a.bounds))
            });
        // A removal joins the text around it: no later rule may share its search.
        let ends_group = literal.output.is_empty();
        if joins {
            let group = &mut groups[current];
            let soft = found.as_ref().map_or(&[][..], |found| &found.soft[index][..]);
            let watched: Vec<&Watched> = soft.iter().filter(|pair| pair.earlier() as usize >= first).collect();
            if watched.iter().any(|pair| pair.earlier() as usize >= strict_first) {
                strict_first = index;
                group.strict_starts.push(index - first);
            }
            for pair in watched {
                let local = |rule: u32| (rule as usize - first) as u32;
                match pair.side {
                    Side::After => {
                        group.after.resize(group.after.len().max(group.members.len() + 1), Vec::new());
                        group.after[local(pair.on) as usize].push((pair.overlap, local(pair.other)));
                    }
                    Side::Before => group.before.push((local(pair.on), local(pair.other), pair.overlap)),
                }
            }
            group.members.push(literal);
        } else {
            (first, strict_first) = (index, index);
            groups.push(Group {
                members: vec![literal],
                after: Vec::new(),
                before: Vec::new(),
                strict_starts: Vec::new(),
            });
        }
        group_of.push(groups.len() - 1);
        open = !ends_group;
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hay(bytes: &[u8]) -> Hay<'_> {
        Hay { bytes, view: bytes, before: None, tail: &[] }
    }

    fn lit(needle: &str, output: &str) -> Literal {
        Literal {
            label: needle.into(),
            needle: needle.into(),
            output: output.into(),
            global: true,
            bounds: WordBounds::default(),
            any_case: false,
        }
    }

    fn sizes(literals: Vec<Literal>) -> Vec<usize> {
        group(literals).iter().map(|group| group.members.len()).collect()
    }

    /// The sets of each group when its rules run in turn.
    fn strict_sizes(literals: Vec<Literal>) -> Vec<Vec<usize>> {
        let sets = group(literals).into_iter().map(|g| LiteralSet::of_group(g).unwrap());
        sets.map(|set| set.in_turn_sets().unwrap().iter().map(|(range, _)| range.len()).collect()).collect()
    }

    /// The one set `rules` group into, with its watched pairs.
    fn shared_set(rules: Vec<Literal>) -> LiteralSet {
        LiteralSet::of_group(group(rules).remove(0)).unwrap()
    }

    /// The set's answer for `text`, searched from `at` (where the search goes on, where the written input ends).
    fn next_in(set: &LiteralSet, text: &[u8], at: (usize, usize), last: bool, done: &[bool]) -> Next {
        set.next_match(hay(text), at, last, 100, done, &mut 0).0
    }

    #[test]
    fn independent_rules_share_one_search() {
        assert_eq!(sizes(vec![lit("alpha.test", "beta.test"), lit("cdn-1", "cdn-2"), lit("q", "yz")]), [3]);
        // A rule's replacement may contain its own needle: it never reads what it wrote.
        assert_eq!(sizes(vec![lit("foo.com", "www.foo.com"), lit("bar", "baz")]), [2]);
    }

    #[test]
    fn rules_that_may_interact_keep_their_own_stage() {
        // A replacement that a later needle matches: chained rules.
        assert_eq!(sizes(vec![lit("old", "mid"), lit("mid", "new"), lit("q", "r")]), [1, 2]);
        // A needle inside another; a suffix of one that starts another.
        assert_eq!(sizes(vec![lit("cat", "1"), lit("concat", "2"), lit("zz", "3")]), [1, 2]);
        // A pair that may interact is split where the second comes; the rules around it still group.
        assert_eq!(
            sizes(vec![lit("u", "v"), lit("w", "v"), lit("bcd", "1"), lit("bc", "2"), lit("e", "f"), lit("g", "h")]),
            [3, 3]
        );
        // A replacement matters only to the rules after it.
        assert_eq!(sizes(vec![lit("mid", "x"), lit("old", "mid"), lit("q", "r")]), [3]);
        // One rule that may interact with all the others does not split them from each other.
        assert_eq!(
            sizes(vec![lit("red", "a fox"), lit("blue", "a box"), lit("ox", "O"), lit("green", "grunt")]),
            [2, 2]
        );
    }

    #[test]
    fn needles_that_overlap_share_a_search_where_the_earlier_rule_is_on_the_left() {
        // `header` then `rewrite` overlap as `headerewrite`: the leftmost match is `header`'s, the earlier rule's,
        // as in turn.
        assert_eq!(sizes(vec![lit("header", "H"), lit("rewrite", "W"), lit("rust", "R"), lit("stream", "S")]), [4]);
        assert_eq!(strict_sizes(vec![lit("header", "H"), lit("rewrite", "W")]), [[2]]);
        let set = LiteralSet::new(vec![lit("header", "H"), lit("rewrite", "W")]).unwrap();
        let mut abandoned = 0;
        assert!(matches!(
            set.next_match(hay(b"headerewrite rewrite"), (0, 0), true, 100, &[false, false], &mut abandoned),
            (Next::Match { start: 0, end: 6 }, 0)
        ));
        // A first-match-only rule that is done leaves its needle to the others, overlaps included.
        assert!(matches!(
            set.next_match(hay(b"headerewrite"), (0, 0), true, 100, &[true, false], &mut abandoned),
            (Next::Match { start: 5, end: 12 }, 1)
        ));
    }

    #[test]
    fn a_later_needle_that_may_end_where_an_earlier_one_begins_is_watched() {
        // `server` (later) before `rewrite`: in turn `rewrite` wins, the leftmost search would pick `server`.
        let rules = || vec![lit("rewrite", "W"), lit("q", "Q"), lit("server", "V")];
        assert_eq!(sizes(rules()), [3]);
        assert_eq!(strict_sizes(rules()), [[2, 1]]);
        let set = shared_set(rules());
        let next = |text: &[u8], last: bool| next_in(&set, text, (0, 0), last, &[false; 3]);
        // Alone, `server` stands; followed by `ewrite` the pair is found and the rules must run in turn.
        assert!(matches!(next(b"a server b", true), Next::Match { start: 2, end: 8 }));
        assert!(matches!(next(b"a serverewrite", true), Next::InTurn(2)));
        // The data may end inside the pair: held from `server` on until it is known.
        assert!(matches!(next(b"a serverew", false), Next::Pending(2)));
        assert!(matches!(next(b"a serverew", true), Next::Match { start: 2, end: 8 }));
        // An earlier rule that is done (first match only) is no threat.
        assert!(matches!(
            next_in(&set, b"a serverewrite", (0, 0), true, &[true, false, false]),
            Next::Match { start: 2, end: 8 }
        ));
    }

    #[test]
    fn a_later_needle_that_may_begin_where_an_earlier_replacement_ends_is_watched() {
        // `k` written as `xa`, then `ab`: in turn `ab` is found across the replacement's end and a `b` after it.
        let rules = || vec![lit("k", "xa"), lit("q", "Q"), lit("ab", "2")];
        assert_eq!(sizes(rules()), [3]);
        assert_eq!(strict_sizes(rules()), [[2, 1]]);
        let set = shared_set(rules());
        let next = |text: &[u8], last: bool| next_in(&set, text, (0, 0), last, &[false; 3]);
        assert!(matches!(next(b"a k c", true), Next::Match { start: 2, end: 3 }));
        assert!(matches!(next(b"a kb", true), Next::InTurn(2)));
        // The data may end before the byte that tells.
        assert!(matches!(next(b"a k", false), Next::Pending(2)));
        assert!(matches!(next(b"a k", true), Next::Match { start: 2, end: 3 }));
        // A later rule that is done leaves nothing to find.
        assert!(matches!(
            next_in(&set, b"a kb", (0, 0), true, &[false, false, true]),
            Next::Match { start: 2, end: 3 }
        ));
    }

    #[test]
    fn a_later_needle_that_may_end_where_an_earlier_replacement_begins_is_watched() {
        // `mm` written as `ay`, then `pa`: in turn `pa` is found across the replacement's start, from the `p`
        // before the match, which the search has passed but not written.
        let rules = || vec![lit("mm", "ay"), lit("q", "Q"), lit("pa", "1")];
        assert_eq!(sizes(rules()), [3]);
        assert_eq!(strict_sizes(rules()), [[2, 1]]);
        let set = shared_set(rules());
        let next = |text: &[u8], at: (usize, usize), last: bool| next_in(&set, text, at, last, &[false; 3]);
        assert!(matches!(next(b"x mm c", (0, 0), true), Next::Match { start: 2, end: 4 }));
        // In turn from the `p`, the first byte of the later rule's match.
        assert!(matches!(next(b"xpmm", (0, 0), true), Next::InTurn(1)));
        // A `p` already written (the end of an earlier match, which looked ahead for this) is not looked at.
        assert!(matches!(next(b"xpmm", (2, 2), true), Next::Match { start: 2, end: 4 }));
        // The data may end inside the needle's first part and the match after it: held from the part.
        assert!(matches!(next(b"xpm", (0, 0), false), Next::Pending(1)));
        assert!(matches!(next(b"xpm", (0, 0), true), Next::Exhausted));
        // A later rule that is done leaves nothing to find.
        assert!(matches!(
            next_in(&set, b"xpmm", (0, 0), true, &[false, false, true]),
            Next::Match { start: 2, end: 4 }
        ));
    }

    #[test]
    fn a_needle_part_that_may_begin_inside_an_earlier_match_is_looked_for_there() {
        // `k` written as `zp` ends with `pa`'s first part: `zp` + `mm` written as `ay` makes `pa` in turn.
        let rules = || vec![lit("k", "zp"), lit("mm", "ay"), lit("pa", "1")];
        assert_eq!(sizes(rules()), [3]);
        let set = shared_set(rules());
        let next = |text: &[u8], last: bool| next_in(&set, text, (0, 0), last, &[false; 3]);
        assert!(matches!(next(b"xkmm", true), Next::InTurn(1)));
        assert!(matches!(next(b"xk mm", true), Next::Match { start: 1, end: 2 }));
        assert!(matches!(next(b"xkm", false), Next::Pending(1)));
        assert!(matches!(next(b"xkm", true), Next::Match { start: 1, end: 2 }));
    }

    #[test]
    fn a_removal_ends_its_group() {
        assert_eq!(sizes(vec![lit("u", "1"), lit("[tracking]", ""), lit("v", "2"), lit("w", "3")]), [2, 2]);
    }

    #[test]
    fn matches_are_leftmost_held_back_only_where_a_needle_may_start() {
        let set = LiteralSet::new(vec![lit("hello", "H"), lit("world", "W")]).unwrap();
        let mut abandoned = 0;
        let done = [false, false];
        assert!(matches!(
            set.next_match(hay(b"say world hello"), (0, 0), false, 100, &done, &mut abandoned),
            (Next::Match { start: 4, end: 9 }, 1)
        ));
        // Only a tail that starts a needle is held.
        assert!(matches!(
            set.next_match(hay(b"abcdefghijk wor"), (0, 0), false, 100, &done, &mut abandoned),
            (Next::Pending(12), _)
        ));
        assert!(matches!(
            set.next_match(hay(b"abcdefghijk"), (0, 0), false, 100, &done, &mut abandoned),
            (Next::Exhausted, _)
        ));
        assert!(matches!(
            set.next_match(hay(b"abcdefghijk wor"), (0, 0), true, 100, &done, &mut abandoned),
            (Next::Exhausted, _)
        ));
        // A member that is done is passed over.
        assert!(matches!(
            set.next_match(hay(b"world hello"), (0, 0), true, 100, &[false, true], &mut abandoned),
            (Next::Match { start: 6, end: 11 }, 0)
        ));
    }
}
