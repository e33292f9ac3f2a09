//! How a literal set finds its needles (see `literals`): one needle by `memmem`, up to a hundred by their
//! fingerprints (`fingerprint`, `needle_scan`) or Teddy, more by an Aho-Corasick automaton whose candidates
//! come from their first bytes. Needles that match any case: up to a hundred by the fingerprints with both
//! cases of each letter, more by a case-insensitive automaton whose candidates are their first bytes in both
//! cases.

use aho_corasick::{AhoCorasick, AhoCorasickKind, Input, MatchKind};

use super::fingerprint::Fingerprints;
use super::needle_scan::NeedleScan;

/// One needle's search (a rule alone, most of them until grouped: no automaton to keep), or many's.
#[derive(Debug, Clone)]
pub(super) enum Searcher {
    One(Box<memchr::memmem::Finder<'static>>),
    /// Up to [`PACKED_LIMIT`] needles where the machine has the vector instructions: found a block of
    /// positions at a time, and replaced in one loop (see `LiteralSet::replace_run`).
    Scan(Box<NeedleScan>),
    /// Up to [`PACKED_LIMIT`] needles: Teddy finds and confirms them in one search, with no automaton.
    Packed(Box<aho_corasick::packed::Searcher>),
    Many {
        automaton: AhoCorasick,
        /// Where a match may start: the needles' distinct first bytes (up to four) found with Teddy, far
        /// faster than the automaton over every byte; `None` when there are too many of them.
        starts: Option<aho_corasick::packed::Searcher>,
        /// Where Teddy is missing (WebAssembly), the same idea on wasm SIMD (see [`Fingerprints`]).
        fingerprints: Option<Box<Fingerprints>>,
    },
}

/// Bytes of each needle's start that the candidates' search looks for.
const START_BYTES: usize = 4;
/// For needles that match any case: fewer bytes, each in both cases, and at most this many variants.
const ANY_CASE_START_BYTES: usize = 3;
const ANY_CASE_STARTS: usize = 64;

/// Sets of fewer needles are searched by Teddy whole (its own limit is 128). Where matches are dense (a
/// word list over text), finding a candidate by its start and confirming it with the automaton cost twice
/// as much per match (benches/rules.rs `rules/words`).
const PACKED_LIMIT: usize = 100;

impl Searcher {
    pub(super) fn many(needles: &[&[u8]]) -> Result<Searcher, String> {
        if needles.len() <= PACKED_LIMIT {
            if let Some(scan) = NeedleScan::new(needles) {
                return Ok(Searcher::Scan(Box::new(scan)));
            }
            let packed = aho_corasick::packed::Config::new()
                .match_kind(aho_corasick::packed::MatchKind::LeftmostFirst)
                .builder()
                .extend(needles)
                .build()
                .filter(|searcher| searcher.minimum_len() <= 64 << 10);
            if let Some(packed) = packed {
                return Ok(Searcher::Packed(Box::new(packed)));
            }
        }
        let builder = || {
            let mut builder = AhoCorasick::builder();
            builder.match_kind(MatchKind::LeftmostFirst).start_kind(aho_corasick::StartKind::Both);
            builder
        };
        let automaton = builder()
            .kind(Some(AhoCorasickKind::DFA))
            .build(needles)
            // A DFA over its size budget: the NFA finds the same matches.
            .or_else(|_| builder().build(needles))
            .map_err(|e| e.to_string())?;
        let mut starts: Vec<&[u8]> = needles.iter().map(|n| &n[..n.len().min(START_BYTES)]).collect();
        starts.sort_unstable();
        starts.dedup();
        let starts = aho_corasick::packed::Config::new()
            .match_kind(aho_corasick::packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(starts)
            .build()
            .filter(|searcher| searcher.minimum_len() <= 64 << 10);
        // Natively Teddy is there (`starts`), whose search is faster than these candidates'.
        let fingerprints = if cfg!(target_arch = "wasm32") && starts.is_none() {
            Fingerprints::new(needles).map(Box::new)
        } else {
            None
        };
        Ok(Searcher::Many { automaton, starts, fingerprints })
    }

    /// The search of needles that match any case: up to [`PACKED_LIMIT`] by their fingerprints with both cases
    /// of each letter, more (or without vector instructions) by a case-insensitive automaton whose candidates
    /// Teddy finds.
    pub(super) fn any_case(needles: &[&[u8]]) -> Result<Searcher, String> {
        if needles.len() <= PACKED_LIMIT {
            if let Some(scan) = NeedleScan::any_case(needles) {
                return Ok(Searcher::Scan(Box::new(scan)));
            }
        }
        let builder = || {
            let mut builder = AhoCorasick::builder();
            builder
                .match_kind(MatchKind::LeftmostFirst)
                .ascii_case_insensitive(true)
                .start_kind(aho_corasick::StartKind::Both);
            builder
        };
        let automaton = builder()
            .kind(Some(AhoCorasickKind::DFA))
            .build(needles)
            .or_else(|_| builder().build(needles))
            .map_err(|e| e.to_string())?;
        // Candidates: each needle's first bytes in every case, found by Teddy (while they are few).
        let mut starts: Vec<Vec<u8>> = Vec::new();
        for needle in needles {
            let mut variants = vec![Vec::new()];
            for &byte in &needle[..needle.len().min(ANY_CASE_START_BYTES)] {
                let cases = [byte.to_ascii_lowercase(), byte.to_ascii_uppercase()];
                let cases = if cases[0] == cases[1] { &cases[..1] } else { &cases[..] };
                variants = variants.iter().flat_map(|v| cases.iter().map(move |&c| [&v[..], &[c]].concat())).collect();
            }
            starts.extend(variants);
        }
        starts.sort_unstable();
        starts.dedup();
        let starts = (starts.len() <= ANY_CASE_STARTS)
            .then(|| {
                aho_corasick::packed::Config::new()
                    .match_kind(aho_corasick::packed::MatchKind::LeftmostFirst)
                    .builder()
                    .extend(&starts)
                    .build()
            })
            .flatten();
        Ok(Searcher::Many { automaton, starts, fingerprints: None })
    }

    /// The leftmost match in `hay[at..]`: its start, end and member.
    pub(super) fn find(&self, hay: &[u8], at: usize) -> Option<(usize, usize, usize)> {
        let found = |m: aho_corasick::Match| (m.start(), m.end(), m.pattern().as_usize());
        match self {
            Searcher::One(finder) => finder.find(&hay[at..]).map(|i| (at + i, at + i + finder.needle().len(), 0)),
            Searcher::Scan(scan) => {
                scan.starts(hay, at, hay.len()).next().map(|(start, member)| (start, start + scan.len(member), member))
            }
            Searcher::Packed(searcher) => searcher
                .find_in(hay, aho_corasick::Span { start: at, end: hay.len() })
                .map(|m| (m.start(), m.end(), m.pattern().as_usize())),
            Searcher::Many { automaton, starts: None, fingerprints: None } => {
                automaton.find(Input::new(hay).range(at..)).map(found)
            }
            Searcher::Many { automaton, starts: None, fingerprints: Some(fingerprints) } => {
                // As with `starts` below: the first candidate with an anchored match has the leftmost.
                let mut from = at;
                while let Some(candidate) = fingerprints.find(hay, from) {
                    let input = Input::new(hay).range(candidate..).anchored(aho_corasick::Anchored::Yes);
                    if let Some(m) = automaton.find(input) {
                        return Some(found(m));
                    }
                    from = candidate + 1;
                }
                None
            }
            Searcher::Many { automaton, starts: Some(starts), .. } => {
                // Every match starts with a needle's start: the first candidate with a match has the leftmost.
                let mut from = at;
                while let Some(candidate) = starts.find_in(hay, aho_corasick::Span { start: from, end: hay.len() }) {
                    let input = Input::new(hay).range(candidate.start()..).anchored(aho_corasick::Anchored::Yes);
                    if let Some(m) = automaton.find(input) {
                        return Some(found(m));
                    }
                    from = candidate.start() + 1;
                }
                None
            }
        }
    }

    pub(super) fn memory_usage(&self) -> usize {
        match self {
            Searcher::One(finder) => finder.needle().len(),
            Searcher::Scan(scan) => scan.memory_usage(),
            Searcher::Packed(searcher) => searcher.memory_usage(),
            Searcher::Many { automaton, starts, fingerprints } => {
                automaton.memory_usage()
                    + starts.as_ref().map_or(0, aho_corasick::packed::Searcher::memory_usage)
                    + fingerprints.as_ref().map_or(0, |_| std::mem::size_of::<Fingerprints>())
            }
        }
    }
}
