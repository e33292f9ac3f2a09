//! Literal rules (a string `match`, or a regex that is a plain literal) matched together in one pass.
//!
//! A literal rule with a string replacement always writes the same bytes, so its stage needs no automaton
//! of its own: an Aho-Corasick search over its needle finds its matches. Consecutive literal rules that
//! cannot interact share one search (Prexy's "many rules in one pass"): applied one after another with
//! `String.prototype.replace`, two rules interact only if one's needle overlaps another's needle (the
//! earlier rule's replacement would break the later one's match, or decide which of two overlapping
//! matches wins), or a needle overlaps a replacement (the later rule would match text the earlier one
//! wrote), or a replacement is empty (its removal joins text on both sides into a new match). Where none of
//! that can happen, at any position at most one needle matches, and every match is the same in the
//! original text as in the text the earlier rules left: one leftmost search gives the same result as the
//! rules in turn. [`group`] decides it conservatively, over the whole run of literal rules; a rule that
//! may interact keeps a stage of its own, in its place.

use aho_corasick::{AhoCorasick, AhoCorasickKind, Input, MatchKind};

use super::hay::Next;

/// One literal rule: what it finds and what it writes.
#[derive(Debug, Clone)]
pub(super) struct Literal {
    pub(super) label: String,
    pub(super) needle: Vec<u8>,
    pub(super) output: Vec<u8>,
    /// Every occurrence (`g`), or the first only (a string `match`, a regex without `g`).
    pub(super) global: bool,
}

/// Literal rules searched together (one rule alone is a set of one).
#[derive(Debug)]
pub(super) struct LiteralSet {
    members: Vec<Literal>,
    searcher: Searcher,
    longest: usize,
    /// The needles in order, to tell whether the data's end may start one.
    sorted: Vec<Vec<u8>>,
}

/// One needle's search (a rule alone, most of them until grouped: no automaton to keep), or many's.
#[derive(Debug)]
enum Searcher {
    One(Box<memchr::memmem::Finder<'static>>),
    Many(AhoCorasick),
}

impl Searcher {
    /// The leftmost match in `hay[at..]`: its start, end and member.
    fn find(&self, hay: &[u8], at: usize) -> Option<(usize, usize, usize)> {
        match self {
            Searcher::One(finder) => finder.find(&hay[at..]).map(|i| (at + i, at + i + finder.needle().len(), 0)),
            Searcher::Many(ac) => {
                ac.find(Input::new(hay).range(at..)).map(|m| (m.start(), m.end(), m.pattern().as_usize()))
            }
        }
    }

    fn memory_usage(&self) -> usize {
        match self {
            Searcher::One(finder) => finder.needle().len(),
            Searcher::Many(ac) => ac.memory_usage(),
        }
    }
}

impl LiteralSet {
    /// `members` must not interact (see [`group`]) and have non-empty needles.
    pub(super) fn new(members: Vec<Literal>) -> Result<LiteralSet, String> {
        if let [one] = &members[..] {
            let finder = memchr::memmem::Finder::new(&one.needle).into_owned();
            let (longest, sorted) = (one.needle.len(), vec![one.needle.clone()]);
            return Ok(LiteralSet { members, searcher: Searcher::One(Box::new(finder)), longest, sorted });
        }
        let searcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .kind(Some(if members.len() > 64 { AhoCorasickKind::DFA } else { AhoCorasickKind::NoncontiguousNFA }))
            .build(members.iter().map(|m| &m.needle))
            .or_else(|_| {
                // A DFA too big for its budget: the NFA finds the same matches.
                AhoCorasick::builder().match_kind(MatchKind::LeftmostFirst).build(members.iter().map(|m| &m.needle))
            })
            .map(Searcher::Many)
            .map_err(|e| e.to_string())?;
        let longest = members.iter().map(|m| m.needle.len()).max().unwrap_or(1);
        let mut sorted: Vec<Vec<u8>> = members.iter().map(|m| m.needle.clone()).collect();
        sorted.sort_unstable();
        Ok(LiteralSet { members, searcher, longest, sorted })
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
    /// needle less one byte (or than `max_match`).
    pub(super) fn next_match(
        &self,
        hay: &[u8],
        from: usize,
        last: bool,
        max_match: usize,
        done: &[bool],
        abandoned: &mut u64,
    ) -> (Next, usize) {
        let len = hay.len();
        let mut at = from;
        while at < len {
            let Some((start, end, member)) = self.searcher.find(hay, at) else { break };
            if done[member] || end - start > max_match {
                // Longer than one match may hold back: left as it is, as the regex stages do.
                *abandoned += u64::from(!done[member]);
                at = end;
                continue;
            }
            return (Next::Match { start, end }, member);
        }
        if last {
            return (Next::Exhausted, 0);
        }
        let reach = self.longest.min(max_match.saturating_add(1));
        let window = len.saturating_sub(reach - 1).max(at);
        match (window..len).find(|&k| self.starts_a_needle(&hay[k..])) {
            Some(k) => (Next::Pending(k), 0),
            None => (Next::Exhausted, 0),
        }
    }

    /// Whether `tail` is the start of some needle (shorter than it).
    fn starts_a_needle(&self, tail: &[u8]) -> bool {
        let first = self.sorted.partition_point(|needle| needle.as_slice() < tail);
        self.sorted.get(first).is_some_and(|needle| needle.starts_with(tail) && needle.len() > tail.len())
    }
}

/// A run of consecutive literal rules split into as few sets as the interactions allow (see the module's
/// doc), the order kept.
pub(super) fn group(literals: Vec<Literal>) -> Vec<Vec<Literal>> {
    let conflicted = interacting(&literals);
    let mut groups: Vec<Vec<Literal>> = Vec::new();
    let mut open = false;
    for (literal, conflicted) in literals.into_iter().zip(conflicted) {
        let ends_group = literal.output.is_empty();
        if conflicted {
            groups.push(vec![literal]);
            open = false;
            continue;
        }
        match groups.last_mut() {
            Some(group) if open => group.push(literal),
            _ => groups.push(vec![literal]),
        }
        // A removal joins the text around it: no later rule may share its search.
        open = !ends_group;
    }
    groups
}

/// For each literal: whether it may interact with another of the run (either way round: conservative).
fn interacting(literals: &[Literal]) -> Vec<bool> {
    let n = literals.len();
    let mut conflicted = vec![false; n];
    if n < 2 {
        return conflicted;
    }
    let needles: Vec<&[u8]> = literals.iter().map(|l| &l.needle[..]).collect();
    let outputs: Vec<&[u8]> = literals.iter().map(|l| &l.output[..]).collect();
    let mut mark = |i: usize, j: usize| {
        conflicted[i] = true;
        conflicted[j] = true;
    };
    // A needle inside another needle, or inside a replacement; a replacement inside a needle.
    if let Ok(needle_search) = overlapping_search(&needles) {
        for (i, needle) in needles.iter().enumerate() {
            for found in needle_search.find_overlapping_iter(*needle) {
                let j = found.pattern().as_usize();
                if j != i {
                    mark(i, j);
                }
            }
        }
        // (A rule never reads its own replacement: `j == i` is no interaction.)
        for (i, output) in outputs.iter().enumerate() {
            for found in needle_search.find_overlapping_iter(*output) {
                let j = found.pattern().as_usize();
                if j != i {
                    mark(i, j);
                }
            }
        }
    } else {
        return vec![true; n];
    }
    let nonempty_outputs: Vec<(usize, &[u8])> =
        outputs.iter().copied().enumerate().filter(|(_, o)| !o.is_empty()).collect();
    if let Ok(output_search) = overlapping_search(&nonempty_outputs.iter().map(|(_, o)| *o).collect::<Vec<_>>()) {
        for (j, needle) in needles.iter().enumerate() {
            for found in output_search.find_overlapping_iter(*needle) {
                let i = nonempty_outputs[found.pattern().as_usize()].0;
                if i != j {
                    mark(i, j);
                }
            }
        }
    } else {
        return vec![true; n];
    }
    // A text's end that is another's start: needle-needle, replacement-needle, needle-replacement.
    let by_needle = Sorted::new(&needles);
    let by_output = Sorted::new(&outputs);
    for i in 0..n {
        for j in by_needle.starting_with_a_suffix_of(needles[i]) {
            if j != i {
                mark(i, j);
            }
        }
        for j in by_needle.starting_with_a_suffix_of(outputs[i]) {
            if j != i {
                mark(i, j);
            }
        }
        for j in by_output.starting_with_a_suffix_of(needles[i]) {
            if j != i {
                mark(i, j);
            }
        }
    }
    conflicted
}

fn overlapping_search(patterns: &[&[u8]]) -> Result<AhoCorasick, aho_corasick::BuildError> {
    AhoCorasick::builder().match_kind(MatchKind::Standard).build(patterns)
}

/// Texts sorted, to find those that start with a given text by binary search.
struct Sorted<'a> {
    texts: Vec<(&'a [u8], usize)>,
}

impl<'a> Sorted<'a> {
    fn new(texts: &[&'a [u8]]) -> Sorted<'a> {
        let mut texts: Vec<(&[u8], usize)> = texts.iter().copied().enumerate().map(|(i, t)| (t, i)).collect();
        texts.sort_unstable();
        Sorted { texts }
    }

    /// The indexes of the texts that start with a proper, non-empty suffix of `text` and are longer than it
    /// (a text equal to the suffix lies inside `text`: found by the overlapping search).
    fn starting_with_a_suffix_of(&self, text: &[u8]) -> Vec<usize> {
        let mut found = Vec::new();
        for k in 1..text.len() {
            let suffix = &text[k..];
            let first = self.texts.partition_point(|(t, _)| *t < suffix);
            found.extend(
                self.texts[first..]
                    .iter()
                    .take_while(|(t, _)| t.starts_with(suffix))
                    .filter(|(t, _)| t.len() > suffix.len())
                    .map(|(_, i)| *i),
            );
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(needle: &str, output: &str) -> Literal {
        Literal { label: needle.into(), needle: needle.into(), output: output.into(), global: true }
    }

    fn sizes(literals: Vec<Literal>) -> Vec<usize> {
        group(literals).iter().map(Vec::len).collect()
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
        assert_eq!(sizes(vec![lit("old", "mid"), lit("mid", "new"), lit("q", "r")]), [1, 1, 1]);
        // A needle inside another; a suffix of one that starts another.
        assert_eq!(sizes(vec![lit("cat", "1"), lit("concat", "2"), lit("zz", "3")]), [1, 1, 1]);
        assert_eq!(sizes(vec![lit("abc", "1"), lit("cde", "2"), lit("q", "3")]), [1, 1, 1]);
        // A replacement whose end starts a needle (text written + text after = a match).
        assert_eq!(sizes(vec![lit("k", "xa"), lit("ab", "2"), lit("q", "3")]), [1, 1, 1]);
        // A needle whose end starts a replacement.
        assert_eq!(sizes(vec![lit("pa", "1"), lit("m", "ay"), lit("q", "3")]), [1, 1, 1]);
        // Unrelated rules around a conflicted pair still group, on each side of it.
        assert_eq!(
            sizes(vec![lit("u", "v"), lit("w", "v"), lit("abc", "1"), lit("bcd", "2"), lit("e", "f"), lit("g", "h")]),
            [2, 1, 1, 2]
        );
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
            set.next_match(b"say world hello", 0, false, 100, &done, &mut abandoned),
            (Next::Match { start: 4, end: 9 }, 1)
        ));
        // Only a tail that starts a needle is held.
        assert!(matches!(
            set.next_match(b"abcdefghijk wor", 0, false, 100, &done, &mut abandoned),
            (Next::Pending(12), _)
        ));
        assert!(matches!(set.next_match(b"abcdefghijk", 0, false, 100, &done, &mut abandoned), (Next::Exhausted, _)));
        assert!(matches!(
            set.next_match(b"abcdefghijk wor", 0, true, 100, &done, &mut abandoned),
            (Next::Exhausted, _)
        ));
        // A member that is done is passed over.
        assert!(matches!(
            set.next_match(b"world hello", 0, true, 100, &[false, true], &mut abandoned),
            (Next::Match { start: 6, end: 11 }, 0)
        ));
    }
}
