//! Which literal rules may interact when applied one after another (see `literals::group`, which splits a
//! run of literal rules into sets by these answers): a needle inside another or inside an earlier rule's
//! replacement, a replacement's end that starts a later needle or its start that ends one, and needles that
//! overlap at their ends. The last three meet only across a match's ends: they are watched, not kept apart.

use aho_corasick::{AhoCorasick, MatchKind};

use super::word_bounds::NeedleBounds;

/// At most this many interactions are kept; past it every rule keeps its own stage (a rule set built to
/// interact everywhere gains nothing from grouping).
const MAX_INTERACTIONS: usize = 1 << 20;

/// For each literal, the earlier ones it may interact with.
pub(super) struct Interactions {
    /// Their needles lie one inside the other, or the earlier one's replacement holds this one's needle, lies
    /// inside it or begins with its end (this rule would read what the earlier wrote): never in one set.
    pub(super) hard: Vec<Vec<u32>>,
    /// A pair that may meet only across a match's end: in one set, watched (each pair is listed under its
    /// later rule).
    pub(super) soft: Vec<Vec<Watched>>,
}

/// Two rules that give the same output in one search as in turn unless, at a match of rule `on`:
/// - [`Side::After`]: the match is followed by the rest of rule `other`'s needle, from byte `overlap` on (the
///   earlier rule's needle beginning inside the later one's match, or the earlier rule's replacement ending
///   with the start of the later one's needle);
/// - [`Side::Before`]: the match is preceded by the first `overlap` bytes of the later rule `other`'s needle,
///   whose rest begins `on`'s replacement (in turn the later rule finds its needle across the replacement's
///   start, in text the shared search has passed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Watched {
    pub(super) on: u32,
    pub(super) other: u32,
    pub(super) overlap: u32,
    pub(super) side: Side,
}

/// Which end of a match a [`Watched`] pair meets at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    After,
    Before,
}

impl Watched {
    /// The earlier of the two rules.
    pub(super) fn earlier(&self) -> u32 {
        self.on.min(self.other)
    }
}

/// The interactions of literal rules, by their needles, outputs and word bounds in rule order (see
/// [`Interactions`]); `None`: too many to keep. Texts come folded where any rule matches any case (more
/// interactions, never fewer); `as_compared` are the needles as each rule compares them (folded for a rule
/// that matches any case only), for the one test that finds an interaction absent.
pub(super) fn interactions(
    needles: &[&[u8]],
    outputs: &[&[u8]],
    bounds: &[NeedleBounds],
    as_compared: &[&[u8]],
) -> Option<Interactions> {
    let n = needles.len();
    let mut earlier: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut soft: Vec<Vec<Watched>> = vec![Vec::new(); n];
    if n < 2 {
        return Some(Interactions { hard: earlier, soft });
    }
    let by_needle = Sorted::new(needles);
    let mut kept = 0;
    for (i, soft) in soft.iter_mut().enumerate() {
        for (offset, j) in by_needle.starting_with_a_suffix_of(needles[i]) {
            if j < i {
                kept += 1;
                let overlap = (needles[i].len() - offset) as u32;
                soft.push(Watched { on: i as u32, other: j as u32, overlap, side: Side::After });
            }
        }
    }
    // A replacement's end that starts a later needle: the later rule would find its needle across the
    // replacement's end and the text after it.
    for (i, output) in outputs.iter().enumerate() {
        for (offset, j) in by_needle.starting_with_a_suffix_of(output) {
            if j > i {
                kept += 1;
                let overlap = (output.len() - offset) as u32;
                soft[j].push(Watched { on: i as u32, other: j as u32, overlap, side: Side::After });
            }
        }
    }
    if kept > MAX_INTERACTIONS {
        return None;
    }
    // Needles overlap whatever their order; a replacement matters only to the rules after it.
    let mut note = |a: usize, b: usize, symmetric: bool| -> bool {
        let (first, second) = (a.min(b), a.max(b));
        if a == b || (!symmetric && a > b) {
            return true;
        }
        kept += 1;
        earlier[second].push(first as u32);
        kept <= MAX_INTERACTIONS
    };
    let needle_search = overlapping_search(needles).ok()?;
    // A needle inside another needle, and a needle inside a replacement.
    for (i, needle) in needles.iter().enumerate() {
        for found in needle_search.find_overlapping_iter(*needle) {
            if !note(i, found.pattern().as_usize(), true) {
                return None;
            }
        }
    }
    for (i, output) in outputs.iter().enumerate() {
        for found in needle_search.find_overlapping_iter(*output) {
            // Where the replacement's own bytes beside it fail the needle's word bounds, it is no match.
            let bounded = bounds[found.pattern().as_usize()];
            let (before, after) = (output[..found.start()].last(), output.get(found.end()));
            if before.is_some_and(|&byte| bounded.fails_before(byte)) || after.is_some_and(|&b| bounded.fails_after(b))
            {
                continue;
            }
            if !note(i, found.pattern().as_usize(), false) {
                return None;
            }
        }
    }
    // A replacement inside a needle.
    let written: Vec<(usize, &[u8])> = outputs.iter().copied().enumerate().filter(|(_, o)| !o.is_empty()).collect();
    let output_search = overlapping_search(&written.iter().map(|(_, o)| *o).collect::<Vec<_>>()).ok()?;
    for (j, needle) in needles.iter().enumerate() {
        for found in output_search.find_overlapping_iter(*needle) {
            if !note(written[found.pattern().as_usize()].0, j, false) {
                return None;
            }
        }
    }
    // A needle's end that is a replacement's start: the later rule's match would begin before the
    // replacement, in text the search has passed. Watched from the replacement's side: at the earlier rule's
    // match, whether the needle's first part stands before it (see `literal_watch`).
    // Not where the replacement's byte after that end fails a `\b` there (`\bdomain\b` and `new-...`), nor
    // where the earlier rule's own needle also begins with that end (an any-case word replaced by its
    // capitals) and its byte after it passes the `\b` too: the later rule's needle then stands in the text
    // as well, overlapping the earlier one's, and that pair of needles is watched (above) whichever comes
    // first.
    let by_output = Sorted::new(outputs);
    for (i, needle) in needles.iter().enumerate() {
        for (k, j) in by_output.starting_with_a_suffix_of(needle) {
            let end = &needle[k..];
            let written_after = outputs[j][end.len()];
            if j >= i || bounds[i].fails_after(written_after) {
                continue;
            }
            // As the rules compare: `A ` does not stand in for the end of a case-sensitive `éa`.
            let (earlier, end) = (as_compared[j], &as_compared[i][k..]);
            if earlier.len() > end.len() && earlier.starts_with(end) && !bounds[i].fails_after(earlier[end.len()]) {
                continue;
            }
            kept += 1;
            soft[i].push(Watched { on: j as u32, other: i as u32, overlap: k as u32, side: Side::Before });
        }
    }
    if kept > MAX_INTERACTIONS {
        return None;
    }
    Some(Interactions { hard: earlier, soft })
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

    /// The texts that start with a proper, non-empty suffix of `text` and are longer than it (a text equal
    /// to the suffix lies inside `text`: found by the overlapping search), as (where the suffix starts,
    /// index).
    fn starting_with_a_suffix_of(&self, text: &[u8]) -> Vec<(usize, usize)> {
        let mut found = Vec::new();
        for k in 1..text.len() {
            let suffix = &text[k..];
            let first = self.texts.partition_point(|(t, _)| *t < suffix);
            found.extend(
                self.texts[first..]
                    .iter()
                    .take_while(|(t, _)| t.starts_with(suffix))
                    .filter(|(t, _)| t.len() > suffix.len())
                    .map(|(_, i)| (k, *i)),
            );
        }
        found
    }
}
