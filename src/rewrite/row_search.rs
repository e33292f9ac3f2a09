//! Regex stages in a row that share one search for where any of them may start a match.
//!
//! Rules that cannot share a stage (a removal joins its neighbours, which a later rule may then match: see
//! `regex_groups`) still each scan the whole body for their own prefix. Where every match of every rule
//! in a row of stages starts with one of a few literals, one prefilter over all those literals finds
//! where any of them may match; bytes far enough before that are the same after each stage (see
//! [`RowCandidates::pass_end`]), so while no stage of the row holds bytes back, the whole row passes them
//! on at once (`stream::feed_row`), each stage only noting the byte it last saw (`Stage::pass_over`).
//! `Rule::grouped` marks the rows, of the stages that can take part (`grouped::row_pattern`).

use regex_automata::util::prefilter::Prefilter;
use regex_automata::{MatchKind, Span};
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};
use regex_syntax::hir::Hir;

/// One search for the literals every match of a row of stages starts with.
#[derive(Debug)]
pub(super) struct RowCandidates {
    prefilter: Prefilter,
    /// What the prefilter searches for (every match of the row starts with one of them).
    literals: Beginnings,
    /// For each stage of the row, the literals each of its matches starts with (`None`: no finite set):
    /// a piece that holds none of a stage's passes it unchanged (see [`RowCandidates::first_stage_in`]).
    stage_literals: Vec<Option<Vec<Vec<u8>>>>,
    /// All the stages' literals, to tell at once whether a piece may end inside one of them.
    stage_beginnings: Beginnings,
}

impl RowCandidates {
    /// The row's search, when the stages' patterns have few enough prefix literals for a fast one (the
    /// literals as regex-automata's own `Prefilter::from_hirs_prefix` picks them).
    pub(super) fn of(hirs: &[&Hir]) -> Option<RowCandidates> {
        let mut extractor = Extractor::new();
        extractor.kind(ExtractKind::Prefix);
        let mut prefixes = Seq::empty();
        let mut stage_literals = Vec::with_capacity(hirs.len());
        for hir in hirs {
            let mut own = extractor.extract(hir);
            stage_literals.push(own.literals().map(|l| l.iter().map(|l| l.as_bytes().to_vec()).collect()));
            prefixes.union(&mut own);
        }
        prefixes.optimize_for_prefix_by_preference();
        let literals: Vec<Vec<u8>> = prefixes.literals()?.iter().map(|l| l.as_bytes().to_vec()).collect();
        let prefilter = Prefilter::new(MatchKind::LeftmostFirst, &literals).filter(Prefilter::is_fast)?;
        let literals = Beginnings::of(literals);
        let stage_beginnings = Beginnings::of(stage_literals.iter().flatten().flatten().cloned().collect());
        (literals.longest > 0).then_some(RowCandidates { prefilter, literals, stage_literals, stage_beginnings })
    }

    /// Up to where `input` from `from` on passes all `row` stages unchanged.
    ///
    /// No stage can start a match whose literal lies in bytes that reached it unchanged and hold no
    /// candidate. Before the first candidate the first stage's input is the body; a match starting up to
    /// a literal's length before it may change what the second stage reads from there on, and so on: each
    /// stage of the row moves the point where the bytes may differ back by one literal's length (less its
    /// last byte). With no candidate, all of `input` passes unless its end may be a literal's beginning.
    pub(super) fn pass_end(&self, input: &[u8], from: usize, last: bool, row: usize) -> usize {
        let len = input.len();
        let hit = (from < len).then(|| self.prefilter.find(input, Span::from(from..len))).flatten();
        let reach = row.saturating_mul(self.literals.longest - 1);
        match hit {
            Some(span) => span.start.saturating_sub(reach),
            None if last || self.literals.cuts_at_end(&input[from..]).next().is_none() => len,
            None => len.saturating_sub(reach),
        }
        .max(from)
    }

    /// Of `stages` stages of the row from stage `offset` on, the first that may change `piece` (counted from
    /// `offset`), where the stages before it hold nothing back: one whose literal starts in it, or may start
    /// at its end (the rest to come), or whose literals are not known; `stages` where none. The stages
    /// before it pass the piece on unchanged (it reaches each of them unchanged, and none can match in it),
    /// so they need not search it: one search for all the row's literals instead of one per stage.
    pub(super) fn first_stage_in(&self, piece: &[u8], last: bool, offset: usize, stages: usize) -> usize {
        let stage_literals = &self.stage_literals[offset..offset + stages];
        let mut first = stage_literals.iter().position(Option::is_none).unwrap_or(stages);
        let starts_at = |at: usize, literals: &[Vec<u8>]| literals.iter().any(|l| piece[at..].starts_with(l));
        let mut from = 0;
        while first > 0 && from < piece.len() {
            let Some(span) = self.prefilter.find(piece, Span::from(from..piece.len())) else { break };
            let holds = |stage: &usize| stage_literals[*stage].as_deref().is_some_and(|own| starts_at(span.start, own));
            first = (0..first).find(holds).unwrap_or(first);
            from = span.start + 1;
        }
        if !last && first > 0 {
            // Where the piece may end inside some stage's literal, the first stage whose literal it may be.
            for cut in self.stage_beginnings.cuts_at_end(piece) {
                let end = &piece[piece.len() - cut..];
                let begins =
                    |own: &Vec<Vec<u8>>| own.iter().any(|literal| literal.len() > cut && literal.starts_with(end));
                first = (0..first).find(|&stage| stage_literals[stage].as_ref().is_some_and(begins)).unwrap_or(first);
            }
        }
        first
    }
}

/// Literals, to tell which ends of some bytes are a literal's first bytes (the rest may come with the next
/// chunk). Asked of every piece a row's stages take: most ends fail at their first byte, the rest in a
/// binary search, where comparing the end with each literal at each length made a row of 20 removals
/// spend ~3% of a page in `memcmp`.
#[derive(Debug)]
struct Beginnings {
    sorted: Vec<Vec<u8>>,
    first_bytes: [bool; 256],
    longest: usize,
}

impl Beginnings {
    fn of(mut literals: Vec<Vec<u8>>) -> Beginnings {
        literals.sort_unstable();
        literals.dedup();
        let mut first_bytes = [false; 256];
        literals.iter().filter_map(|l| l.first()).for_each(|&b| first_bytes[usize::from(b)] = true);
        let longest = literals.iter().map(Vec::len).max().unwrap_or(0);
        Beginnings { sorted: literals, first_bytes, longest }
    }

    /// The lengths `cut` for which the last `cut` bytes of `bytes` begin some literal longer than them.
    fn cuts_at_end<'a>(&'a self, bytes: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
        (1..self.longest.min(bytes.len() + 1)).filter(move |&cut| {
            let end = &bytes[bytes.len() - cut..];
            // The first literal after `end` in order begins with it if any longer literal does.
            self.first_bytes[usize::from(end[0])] && {
                let after = self.sorted.partition_point(|literal| literal.as_slice() <= end);
                self.sorted.get(after).is_some_and(|literal| literal.starts_with(end))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::{rewrite_bytes, Rewriter, Rule, RuleReplacement, DEFAULT_MAX_MATCH_BYTES};

    fn rule(source: &str, flags: &str, with: &str) -> Rule {
        Rule::regex(source, flags, RuleReplacement::Text(with.into())).unwrap()
    }

    /// The rules one after another, each over the whole body on its own: no row, no shared search.
    fn in_turn(input: &[u8], rules: &[Rule]) -> Vec<u8> {
        rules.iter().fold(input.to_vec(), |body, rule| {
            rewrite_bytes(&body, std::slice::from_ref(rule), "l", DEFAULT_MAX_MATCH_BYTES).unwrap()
        })
    }

    fn chunked(input: &[u8], rules: &[Rule], cuts: &[usize]) -> Vec<u8> {
        let mut rewriter = Rewriter::new(rules, "l", DEFAULT_MAX_MATCH_BYTES);
        let (mut out, mut at) = (Vec::new(), 0);
        for &cut in cuts {
            let cut = cut.clamp(at, input.len());
            rewriter.push(&input[at..cut], &mut out).unwrap();
            at = cut;
        }
        rewriter.push(&input[at..], &mut out).unwrap();
        rewriter.finish(&mut out).unwrap();
        out
    }

    #[test]
    fn removals_in_a_row_share_one_search_and_remove_what_each_would() {
        let rules: Vec<Rule> = (1..=20).map(|i| rule(&format!(" data-tracking-{i}=\"[^\"]*\""), "g", "")).collect();
        let grouped = Rule::grouped(&rules);
        assert_eq!(grouped.len(), 20, "a removal keeps a stage of its own");
        let row = grouped[0].row.clone().expect("the removals make a row");
        assert!(grouped.iter().all(|r| r.row.as_ref().is_some_and(|other| std::sync::Arc::ptr_eq(other, &row))));
        let filler = "<p class=x data-tracking-21=\"no\">text</p>\n".repeat(150);
        let input =
            format!("{filler}<a data-tracking-3=\"a\" data-tracking-20=\"b\">{filler}<b data-tracking-7=\"\">{filler}");
        let expected = in_turn(input.as_bytes(), &rules);
        assert_eq!(expected.len(), input.len() - 60, "three attributes removed");
        assert_eq!(rewrite_bytes(input.as_bytes(), &grouped, "l", DEFAULT_MAX_MATCH_BYTES).unwrap(), expected);
        for piece in [1, 7, 100, 4096, 32 * 1024] {
            let cuts: Vec<usize> = (piece..input.len()).step_by(piece).collect();
            assert_eq!(chunked(input.as_bytes(), &grouped, &cuts), expected, "pieces of {piece}");
        }
    }

    #[test]
    fn a_piece_skips_the_stages_whose_literals_it_does_not_hold() {
        let rules: Vec<Rule> = (1..=20).map(|i| rule(&format!(" data-tracking-{i}=\"[^\"]*\""), "g", "")).collect();
        let grouped = Rule::grouped(&rules);
        let row = grouped[0].row.clone().expect("the removals make a row");
        let piece = b"<p data-tracking-21=\"x\" data-tracking-7=\"a\" data-tracking-12=\"b\">text</p>";
        // Stage 7 (index 6) is the first whose literal the piece holds; fewer quiet stages cap it.
        assert_eq!(row.first_stage_in(piece, true, 0, 20), 6);
        assert_eq!(row.first_stage_in(piece, true, 0, 4), 4);
        // From stage 5 on (index 4), stage 7 is the third.
        assert_eq!(row.first_stage_in(piece, true, 4, 16), 2);
        assert_eq!(row.first_stage_in(b"<p data-tracking-21=\"x\">", true, 0, 20), 20, "21 is no stage's");
        // A piece that may end inside stage 2's literal stops there, unless the body ends with it.
        let cut = b"<p data-tracking-12=\"b\"> data-tracking-2";
        assert_eq!(row.first_stage_in(cut, false, 0, 20), 1);
        assert_eq!(row.first_stage_in(cut, true, 0, 20), 11);
    }

    #[test]
    fn matches_later_stages_make_back_across_a_removal_are_found() {
        // `-X-` goes; `<ab` then meets across where it was, and `z[Y` one byte further back (regexes: plain
        // literals would run as literal rules).
        let rules = [rule("-X-+", "g", ""), rule("<ab+", "g", "[Y]"), rule("z\\[Y+", "g", "!")];
        let grouped = Rule::grouped(&rules);
        assert!(grouped.iter().all(|r| r.row.is_some()), "one row");
        let pad = ".".repeat(3000);
        let (input, expected) = (format!("{pad}z<a-X-b{pad}"), format!("{pad}!]{pad}").into_bytes());
        assert_eq!(in_turn(input.as_bytes(), &rules), expected);
        assert_eq!(rewrite_bytes(input.as_bytes(), &grouped, "l", DEFAULT_MAX_MATCH_BYTES).unwrap(), expected);
        for cut in 2990..3010 {
            assert_eq!(chunked(input.as_bytes(), &grouped, &[cut]), expected, "cut at {cut}");
        }
    }

    const PATTERNS: &[(&str, &str)] = &[
        (" data-t=\"[^\"]*\"", "g"),
        ("-X-+", "g"),
        ("<ab+", "g"),
        ("z\\[Y+", "g"),
        ("<a[^a]{0,3}b", "g"),
        ("\\bfoo\\w*", "g"),
        ("dat", "gi"),
        ("x(?:ab|cd)", "g"),
        ("éé+", "gu"),
        ("😀", "g"),
        ("foo.", ""),
        ("[a-c]+", "g"),
        ("(?<=a)b", "g"),
    ];
    const REPLACEMENTS: &[&str] = &["", "[Y", "-X-", "<a", "$&$&", "[$&]", "z", "DAT"];
    const TOKENS: &[&str] = &[
        "........",
        " data-t=\"",
        "\"",
        "-X-",
        "<a",
        "b",
        "z",
        "[Y",
        "foo",
        "da",
        "t",
        "T",
        "x",
        "cd",
        "é",
        "😀",
        "\n",
    ];

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256),
            ..ProptestConfig::default()
        })]

        /// Rows (and the rules between them that break them) give what the rules one after another give,
        /// whole and cut anywhere, on bodies where long quiet stretches and dense candidates alternate.
        #[test]
        fn rows_give_what_the_rules_in_turn_give(
            picks in prop::collection::vec((0..PATTERNS.len(), 0..REPLACEMENTS.len()), 2..8),
            tokens in prop::collection::vec((0..TOKENS.len(), 0..4usize), 0..400),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let rules: Vec<Rule> = picks.iter().map(|&(p, r)| rule(PATTERNS[p].0, PATTERNS[p].1, REPLACEMENTS[r])).collect();
            // A token now and then stands for a long quiet stretch, so that rows get bytes to pass.
            let input: String =
                tokens.iter().map(|&(t, long)| if long == 0 && t == 0 { ".".repeat(1500) } else { TOKENS[t].to_string() }).collect();
            let grouped = Rule::grouped(&rules);
            let expected = in_turn(input.as_bytes(), &rules);
            prop_assert_eq!(&rewrite_bytes(input.as_bytes(), &grouped, "l", DEFAULT_MAX_MATCH_BYTES).unwrap(), &expected);
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
            cuts.sort_unstable();
            prop_assert_eq!(&chunked(input.as_bytes(), &grouped, &cuts), &expected);
        }

        /// The ends a binary search finds are those that begin some literal longer than them.
        #[test]
        fn cuts_at_end_are_the_ends_that_begin_a_literal(
            literals in prop::collection::vec("[ab ]{1,6}", 1..8),
            bytes in "[ab x]{0,12}",
        ) {
            let literals: Vec<Vec<u8>> = literals.into_iter().map(String::into_bytes).collect();
            let bytes = bytes.as_bytes();
            let beginnings = super::Beginnings::of(literals.clone());
            let found: Vec<usize> = beginnings.cuts_at_end(bytes).collect();
            let expected: Vec<usize> = (1..=bytes.len())
                .filter(|&cut| literals.iter().any(|l| l.len() > cut && l.starts_with(&bytes[bytes.len() - cut..])))
                .collect();
            prop_assert_eq!(found, expected);
        }
    }
}
