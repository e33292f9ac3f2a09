//! Regex rules searched together: a run of consecutive regex rules is split, in order, into groups whose
//! members cannot interact, and each group is one stage with one multi-pattern DFA (see [`one_stage`]): one
//! pass over the body finds the leftmost match of any member, which that member replaces.
//!
//! That equals the rules applied one after another when, for every member `a` and every later member `b`:
//! - no `a` match and `b` match can overlap (then the leftmost match of the group is the leftmost of the
//!   one rule that matches there, and no rule's match hides another's);
//! - no `b` match can overlap what `a` writes (its replacement's text, and for `$n` any match of group
//!   `n`'s pattern, for `$&` any match), so `a`'s output neither makes nor breaks a `b` match;
//! - `a` never writes nothing (a removal joins its neighbours, which a later rule may then match: it ends
//!   its group, as in `literals`);
//! - where `b` looks at the byte before or after its match (`\b`, `\B`), `a`'s first bytes and last bytes,
//!   matched or written, are all word bytes or all not, so the look sees the same kind of byte either way.
//!
//! Each test is decided on the rules' automata (`overlap`), erring towards "may interact"; a rule that may
//! interact starts a new group. Rules that are not plain (a function, `paths`, multi-line anchors, lone
//! surrogates, a possibly empty match, and without `u` a match that may take a character past U+FFFF) keep
//! a stage of their own.

use std::sync::Arc;

use regex_automata::util::prefilter::Prefilter;
use regex_automata::{Anchored, MatchKind};
use regex_syntax::hir::{Hir, HirKind, Look, LookSet, Repetition};

use super::js_regex;
use super::overlap::{may_overlap, ByteSet, Language};
use super::replacement::{Part, Replacement, Template};
use super::rule::{build_dfas, build_prefix_reverse, Candidates, CompiledRule, Engine, RegexRule, Rule, StartStates};
use crate::error::RuleError;

/// Members of one group at most: the group's DFA is built from all their patterns at once.
const MAX_MEMBERS: usize = 64;
/// Pairs of automaton states the interaction tests of one run may visit; past it, rules stay alone.
const RUN_BUDGET: usize = 1 << 22;

/// A rule as a candidate member: its matches and what it writes, as languages.
struct Candidate {
    rule: Rule,
    units: bool,
    matches: Language,
    writes: Language,
    /// The rule looks at the bytes around its match (`\b`, `\B`).
    looks_around: bool,
}

impl Candidate {
    fn of(rule: &Rule) -> Option<Candidate> {
        let Engine::Regex(re) = &rule.inner.engine else { return None };
        let Replacement::Template(template) = &re.replacement else { return None };
        let looks = re.hir.properties().look_set();
        let around = LookSet::empty().insert(Look::WordAscii).insert(Look::WordAsciiNegate);
        let allowed = around.insert(Look::Start).insert(Look::End);
        if !may_join(rule) || !looks.subtract(allowed).is_empty() {
            return None;
        }
        let runs = js_regex::js_repetitions(&re.hir);
        let matches = Language::of(&runs)?;
        // Without `u`, a match may take half of a character past U+FFFF and leave the other half as a lone
        // surrogate, bytes the text never had, for the later rules to read.
        let astral = matches.bytes.iter().any(|b| (0xF0..=0xF4).contains(&b));
        if matches.can_be_empty() || (re.units && astral) {
            return None;
        }
        // What the rule writes: its text, and where it takes text from the match, a match of that group's
        // pattern as a regular language (JavaScript's repetition rules only choose among those) or nothing
        // (a group that did not take part, or a `$<name>` the pattern does not have), or the whole match for
        // `$&`.
        let taken =
            |sub: &Hir| Hir::repetition(Repetition { min: 0, max: Some(1), greedy: true, sub: Box::new(sub.clone()) });
        let pieces: Vec<Hir> = template
            .parts()
            .iter()
            .map(|part| match part {
                Part::Literal(bytes) => Hir::literal(bytes.clone()),
                Part::WholeMatch => runs.clone(),
                Part::Group(_) | Part::Named(_) => capture(&re.hir, part).map_or_else(Hir::empty, taken),
            })
            .collect();
        let writes = Language::of(&Hir::concat(pieces))?;
        Some(Candidate {
            rule: rule.clone(),
            units: re.units,
            matches,
            writes,
            looks_around: !looks.intersect(around).is_empty(),
        })
    }

    /// Whether the bytes around a later rule's match are of the same kind (word or not) whether this rule's
    /// match is there or what it writes.
    fn keeps_word_edges(&self) -> bool {
        let same_kind = |bytes: ByteSet| {
            let mut kinds = bytes.iter().map(|b| b.is_ascii_alphanumeric() || b == b'_');
            match kinds.next() {
                Some(first) => kinds.all(|k| k == first),
                None => true,
            }
        };
        same_kind(self.matches.first.union(self.writes.first)) && same_kind(self.matches.last.union(self.writes.last))
    }

    /// Whether `later` can join a group whose members include `self`, earlier in the rule order.
    fn leaves_alone(&self, later: &Candidate, budget: &mut usize) -> bool {
        !may_overlap(&self.matches, &later.matches, budget)
            && !may_overlap(&later.matches, &self.matches, budget)
            && !may_overlap(&self.writes, &later.matches, budget)
            && !may_overlap(&later.matches, &self.writes, budget)
            && (!later.looks_around || self.keeps_word_edges())
    }
}

/// The sub-pattern of the capture group a template part names.
fn capture<'h>(hir: &'h Hir, part: &Part) -> Option<&'h Hir> {
    match hir.kind() {
        HirKind::Capture(cap) => {
            let this = match part {
                Part::Group(index) => usize::try_from(cap.index).is_ok_and(|i| i == *index),
                Part::Named(name) => cap.name.as_deref().map(js_regex::js_name).is_some_and(|n| n == name.as_str()),
                Part::Literal(_) | Part::WholeMatch => false,
            };
            if this {
                Some(&cap.sub)
            } else {
                capture(&cap.sub, part)
            }
        }
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs.iter().find_map(|sub| capture(sub, part)),
        HirKind::Repetition(rep) => capture(&rep.sub, part),
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) | HirKind::Look(_) => None,
    }
}

/// Whether `rule` can be searched with others at all (the rest is decided against the other members).
pub(super) fn may_join(rule: &Rule) -> bool {
    let Engine::Regex(re) = &rule.inner.engine else { return false };
    rule.paths().is_none()
        && re.members.is_empty()
        && !re.sticky
        && re.looks.is_none()
        && !re.lines
        && re.low_view.is_none()
        && !re.low_half_starts
        && matches!(re.replacement, Replacement::Template(_))
}

/// A run of consecutive regex rules as stages, in order: members that cannot interact share one.
pub(super) fn group(rules: Vec<Rule>) -> Vec<Rule> {
    if rules.len() < 2 {
        return rules;
    }
    let mut out = Vec::new();
    let mut open: Vec<Candidate> = Vec::new();
    let mut budget = RUN_BUDGET;
    for rule in rules {
        let Some(candidate) = Candidate::of(&rule) else {
            out.extend(build(std::mem::take(&mut open)));
            out.push(rule);
            continue;
        };
        let joins = open.len() < MAX_MEMBERS
            && open.last().is_some_and(|last| !last.writes.can_be_empty())
            && open
                .iter()
                .all(|member| member.units == candidate.units && member.leaves_alone(&candidate, &mut budget));
        if !joins {
            out.extend(build(std::mem::take(&mut open)));
        }
        open.push(candidate);
    }
    out.extend(build(open));
    out
}

/// The stages of one group: one rule for all, or, if its automata would be too big, two halves.
fn build(members: Vec<Candidate>) -> Vec<Rule> {
    let rules: Vec<Rule> = members.into_iter().map(|m| m.rule).collect();
    build_rules(rules)
}

/// One rule that searches for the matches of `members` (regex rules that cannot interact) in one pass: one forward DFA for all their patterns, each match replaced by its own
/// rule.
fn one_stage(members: &[Rule]) -> Result<Rule, RuleError> {
    let regexes: Vec<&RegexRule> = members
        .iter()
        .map(|m| match &m.inner.engine {
            Engine::Regex(re) if re.members.is_empty() => Ok(&**re),
            _ => Err(RuleError::TooComplex(format!("{} is not a regex rule of its own", m.label()))),
        })
        .collect::<Result<_, _>>()?;
    let (Some(first), Some(units)) = (members.first(), regexes.first().map(|re| re.units)) else {
        return Err(RuleError::TooComplex("an empty group".into()));
    };
    let runs: Vec<Hir> = regexes.iter().map(|re| js_regex::js_repetitions(&re.hir)).collect();
    let hirs: Vec<&Hir> = runs.iter().collect();
    let candidates = match Prefilter::from_hirs_prefix(MatchKind::LeftmostFirst, &hirs) {
        Some(pre) if pre.is_fast() => Candidates::Prefix(pre),
        _ => Candidates::Every,
    };
    let (dfa, reverse) = build_dfas(&hirs, !matches!(candidates, Candidates::Every))?;
    let hir = Hir::alternation(regexes.iter().map(|re| re.hir.clone()).collect());
    let prefix_reverse = build_prefix_reverse(&Hir::alternation(runs.clone()));
    let label = format!("{} and {} more regex rules", first.label(), members.len() - 1);
    let global = members.iter().any(|m| m.inner.global);
    Ok(Rule {
        inner: Arc::new(CompiledRule {
            label,
            global,
            engine: Engine::Regex(Box::new(RegexRule {
                sticky: false,
                units,
                lines: false,
                low_view: None,
                low_half_starts: false,
                anchored_starts: StartStates::new(&dfa, Anchored::Yes),
                unanchored_starts: StartStates::new(&dfa, Anchored::No),
                dfa,
                reverse,
                captures: None,
                looks: None,
                candidates,
                replacement: Replacement::Template(Template::parse("", 0, false)?),
                prefix_reverse,
                hir,
                members: members.to_vec(),
            })),
        }),
        paths: None,
        row: None,
        row_index: 0,
    })
}

/// `rules` as one stage, or halves of them where a group's automata would pass their size cap.
fn build_rules(rules: Vec<Rule>) -> Vec<Rule> {
    if rules.len() < 2 {
        return rules;
    }
    match one_stage(&rules) {
        Ok(group) => vec![group],
        Err(_) => {
            let mut rules = rules;
            let second = rules.split_off(rules.len() / 2);
            let mut out = build_rules(rules);
            out.extend(build_rules(second));
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::seeded::seeded;
    use crate::rewrite::Rewriter;
    use crate::rewrite::{rewrite_bytes, RuleReplacement, DEFAULT_MAX_MATCH_BYTES};

    fn rule(source: &str, replace: &str) -> Rule {
        Rule::regex(source, "g", RuleReplacement::Text(replace.into())).unwrap()
    }

    /// The rules one after another, each on the whole text by itself (successive `replace` calls).
    fn in_turn(input: &str, rules: &[Rule]) -> Vec<u8> {
        rules.iter().fold(input.as_bytes().to_vec(), |text, rule| {
            rewrite_bytes(&text, std::slice::from_ref(rule), "local:3000", DEFAULT_MAX_MATCH_BYTES).unwrap()
        })
    }

    fn chunked(input: &[u8], rules: &[Rule], cuts: &[usize]) -> Vec<u8> {
        let mut rewriter = Rewriter::new(rules, "local:3000", DEFAULT_MAX_MATCH_BYTES);
        let (mut out, mut at) = (Vec::new(), 0);
        for &cut in cuts {
            rewriter.push(&input[at..cut], &mut out).unwrap();
            at = cut;
        }
        rewriter.push(&input[at..], &mut out).unwrap();
        rewriter.finish(&mut out).unwrap();
        out
    }

    #[test]
    fn independent_regex_rules_run_as_one_stage_and_count_per_rule() {
        let rules = [
            // Not `.net`: its `t` could start `ticket` as far as the test can tell (it takes `\b` as always true).
            rule(r"https?:\/\/old-cdn\.example\.com", "https://cdn.example.org"),
            rule(r"\b(sku|ticket)-(\d{3,})\b", "$1#$2"),
            rule(r"legacy-(\d+)\.example\.org", "new-$1.example.net"),
            rule(r#"data-track="[a-z]+""#, "data-t"),
        ];
        let grouped = Rule::grouped(&rules);
        assert_eq!(grouped.len(), 1, "{:?}", grouped.iter().map(Rule::label).collect::<Vec<_>>());
        assert_eq!(grouped[0].member_labels(), rules.iter().map(Rule::label).collect::<Vec<_>>());
        let input = "<a href=\"http://old-cdn.example.com/x\" data-track=\"nav\">sku-1234</a> legacy-7.example.org \
                     ticket-12 xsku-999 https://old-cdn.example.com";
        let expected = in_turn(input, &rules);
        assert_eq!(
            String::from_utf8(expected.clone()).unwrap(),
            "<a href=\"https://cdn.example.org/x\" data-t>sku#1234</a> new-7.example.net ticket-12 xsku-999 \
             https://cdn.example.org"
        );
        let mut rewriter = Rewriter::new(&grouped, "local:3000", DEFAULT_MAX_MATCH_BYTES);
        let mut out = Vec::new();
        for piece in input.as_bytes().chunks(5) {
            rewriter.push(piece, &mut out).unwrap();
        }
        rewriter.finish(&mut out).unwrap();
        assert_eq!(out, expected);
        let counts: Vec<(String, u64)> = rewriter.match_counts().map(|(label, n)| (label.to_string(), n)).collect();
        let labels: Vec<String> = rules.iter().map(|r| r.label().to_string()).collect();
        assert_eq!(
            counts,
            [(labels[0].clone(), 2), (labels[1].clone(), 1), (labels[2].clone(), 1), (labels[3].clone(), 1)]
        );
        // `$1` writes digits only (the group's own pattern), so no replacement holds another rule's match
        // (`.example` would: its `le` may start `legacy-`): 200 such rules are four stages of at most 64.
        let many: Vec<Rule> =
            (0..200).map(|i| rule(&format!(r"legacy-(\d+)\.cdn-{i}\.org"), &format!("new-$1.cdn-{i}.io"))).collect();
        let stages: Vec<usize> = Rule::grouped(&many).iter().map(|r| r.member_labels().len()).collect();
        assert_eq!(stages, [64, 64, 64, 8]);
    }

    #[test]
    fn rules_that_may_interact_keep_their_order_in_separate_stages() {
        // (Every pattern a regex: plain text would be a literal rule, grouped apart.) A chain (the first
        // writes what the second matches), an overlap, a removal, a `\b` next to a
        // replacement that changes the kind of byte, a `$<name>` the pattern lacks (it writes nothing, so the
        // replacement's two halves meet).
        let cases: [(&[(&str, &str)], &str); 5] = [
            (&[("ab+", "cd"), ("dc+", "X")], "abbc abdc"),
            (&[("(?<a>k)[0-9]", "<$<nope>>"), ("<[>x]", "Y")], "k1 k2"),
            (&[("ab+", "Q"), ("b+c", "R")], "abbc bc ab"),
            (&[("x[0-9]", ""), ("a+b", "Z"), ("y{2}", "W")], "ax1b yy ab"),
            (&[("-[0-9]+", "z"), (r"\bq", "Y")], "a-12q -3 q"),
        ];
        for (specs, input) in cases {
            let rules: Vec<Rule> = specs.iter().map(|(s, r)| rule(s, r)).collect();
            let grouped = Rule::grouped(&rules);
            let expected = in_turn(input, &rules);
            assert_eq!(
                rewrite_bytes(input.as_bytes(), &grouped, "local:3000", DEFAULT_MAX_MATCH_BYTES).unwrap(),
                expected
            );
            match specs.len() {
                3 => assert_eq!(grouped.len(), 2, "the removal ends its group: {specs:?}"),
                _ => assert_eq!(grouped.len(), 2, "{specs:?} may interact"),
            }
        }
    }

    #[test]
    fn a_first_match_only_member_replaces_its_first_match_and_leaves_the_rest() {
        let first_only =
            |source: &str, replace: &str| Rule::regex(source, "", RuleReplacement::Text(replace.into())).unwrap();
        // (`$&` with `i`: a plain-text pattern without them is a literal rule, grouped with the literal rules.)
        let head = Rule::regex("<\\/head>", "i", RuleReplacement::Text("<x>$&".into())).unwrap();
        let rules = [first_only("k[0-9]", "K"), rule("m[0-9]", "M"), head];
        let grouped = Rule::grouped(&rules);
        assert_eq!(grouped.len(), 1);
        let input = "k1 m2 k3 </head> m4 </head>";
        assert_eq!(in_turn(input, &rules), b"K M k3 <x></head> M </head>");
        for cuts in [vec![], vec![1, 2, 3], vec![10, 11, 12, 20]] {
            assert_eq!(chunked(input.as_bytes(), &grouped, &cuts), in_turn(input, &rules), "cut at {cuts:?}");
        }
    }

    /// Seeded rule sets over small alphabets, so that rules often chain, overlap and meet at word edges,
    /// and often do not: every case equals the rules in turn, whole and in random chunks, and a good share
    /// of the cases run grouped (so the comparison is not only of rules left alone).
    #[test]
    fn seeded_regex_rule_sets_group_and_equal_the_rules_in_turn() {
        let mut next = seeded(0x9e37_79b9_7f4a_7c15_u64);
        const POOLS: [&str; 4] = ["ab", "cd", "ef", "a-"];
        let rounds = std::env::var("REGEX_GROUP_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(300);
        let (mut cases, mut merged) = (0, 0);
        for _ in 0..rounds {
            let count = 2 + next(7);
            let mut rules = Vec::new();
            for _ in 0..count {
                let pool: Vec<char> = POOLS[next(POOLS.len())].chars().collect();
                let mut source = String::new();
                let mut groups = 0;
                if next(4) == 0 {
                    source.push_str(r"\b");
                }
                for _ in 0..1 + next(3) {
                    let atom = match next(7) {
                        0..=2 => regex_syntax::escape(&pool[next(pool.len())].to_string()),
                        3..=4 => format!("[{}]", regex_syntax::escape(&pool.iter().collect::<String>())),
                        5 => "[0-9]".to_string(),
                        _ => ".".to_string(),
                    };
                    let quantified = format!("{atom}{}", ["", "", "+", "?", "{1,2}"][next(5)]);
                    if next(4) == 0 {
                        groups += 1;
                        source.push_str(&format!("({quantified})"));
                    } else {
                        source.push_str(&quantified);
                    }
                }
                let letters: Vec<char> = if next(3) == 0 { pool.clone() } else { "XYZ".chars().collect() };
                let mut replace: String = (0..next(4)).map(|_| letters[next(letters.len())]).collect();
                match next(4) {
                    0 => replace.push_str("$&"),
                    1 if groups > 0 => replace.push_str("$1"),
                    _ => {}
                }
                let flags = if next(5) == 0 { "" } else { "g" };
                rules.push(Rule::regex(&source, flags, RuleReplacement::Text(replace)).unwrap());
            }
            let alphabet: Vec<char> = "abcdef-0129 XYé😀".chars().collect();
            let input: String = (0..next(160)).map(|_| alphabet[next(alphabet.len())]).collect();
            let grouped = Rule::grouped(&rules);
            cases += 1;
            merged += usize::from(grouped.len() < rules.len());
            let expected = in_turn(&input, &rules);
            let labels: Vec<&str> = rules.iter().map(Rule::label).collect();
            let whole = rewrite_bytes(input.as_bytes(), &grouped, "local:3000", DEFAULT_MAX_MATCH_BYTES).unwrap();
            assert_eq!(String::from_utf8_lossy(&whole), String::from_utf8_lossy(&expected), "{labels:?} on {input:?}");
            let mut cuts: Vec<usize> = (0..4).map(|_| next(input.len() + 1)).collect();
            cuts.sort_unstable();
            let pieces = chunked(input.as_bytes(), &grouped, &cuts);
            assert_eq!(
                String::from_utf8_lossy(&pieces),
                String::from_utf8_lossy(&expected),
                "{labels:?} on {input:?} cut at {cuts:?}"
            );
        }
        assert!(merged * 4 >= cases, "only {merged} of {cases} rule sets shared a search");
    }
}
