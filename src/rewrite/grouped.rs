//! [`Rule::grouped`]: the rules as the engine runs them. Each run of consecutive literal rules and each run
//! of consecutive regex rules is split, in order, into groups whose members cannot interact (see `literals`
//! and `regex_groups`); a group is one stage, searched in one pass. Regex stages in a row then share one
//! search for where any of them may match, where they can (see `row_search`).

use std::sync::Arc;

use regex_syntax::hir::Hir;

use super::js_regex;
use super::literals::{self, Literal, LiteralSet};
use super::regex_groups;
use super::replacement::Replacement;
use super::row_search::RowCandidates;
use super::rule::{Candidates, CompiledRule, Engine, Rule};

impl Rule {
    /// `rules` with each run of consecutive literal rules (without `paths`) searched together where
    /// they cannot interact (see `literals`), and each run of regex rules likewise (see `regex_groups`):
    /// the same output, one pass for many rules.
    pub fn grouped(rules: &[Rule]) -> Vec<Rule> {
        let mut out = Vec::with_capacity(rules.len());
        let mut run: Vec<Literal> = Vec::new();
        let mut regexes: Vec<Rule> = Vec::new();
        let flush = |run: &mut Vec<Literal>, out: &mut Vec<Rule>| {
            for group in literals::group(std::mem::take(run)) {
                let members = group.members.clone();
                // Built from sets that built: a group fails only on memory, and then runs as it came.
                match LiteralSet::of_group(group) {
                    Ok(set) => out.push(Rule::of_literal_set(set)),
                    Err(_) => out.extend(
                        members.into_iter().filter_map(|m| LiteralSet::new(vec![m]).ok().map(Rule::of_literal_set)),
                    ),
                }
            }
        };
        for rule in rules {
            match &rule.inner.engine {
                Engine::Literals(set) if rule.paths.is_none() && !set.is_alternation() => {
                    out.extend(regex_groups::group(std::mem::take(&mut regexes)));
                    run.extend(set.members().iter().cloned());
                }
                Engine::Regex(_) if regex_groups::may_join(rule) => {
                    flush(&mut run, &mut out);
                    regexes.push(rule.clone());
                }
                _ => {
                    flush(&mut run, &mut out);
                    out.extend(regex_groups::group(std::mem::take(&mut regexes)));
                    out.push(rule.clone());
                }
            }
        }
        flush(&mut run, &mut out);
        out.extend(regex_groups::group(regexes));
        mark_rows(out)
    }

    /// The rule that runs `set`: a member's label alone, or the first one's and a count.
    pub(super) fn of_literal_set(set: LiteralSet) -> Rule {
        let members = set.members();
        let label = match members {
            [first, _, ..] => format!("{} and {} more literal rules", first.label, members.len() - 1),
            _ => members.first().map(|m| m.label.clone()).unwrap_or_default(),
        };
        let global = members.iter().any(|m| m.global);
        Rule {
            inner: Arc::new(CompiledRule { label, global, engine: Engine::Literals(Box::new(set)) }),
            paths: None,
            row: None,
            row_index: 0,
        }
    }
}

/// The pattern a stage's prefilter is made from, when the stage can share a row's search: a plain regex rule
/// with a prefix prefilter of its own, no look-arounds, no function, no line view or view of lone low
/// surrogates, not sticky, and matches that never start on a low half (skipping bytes then leaves nothing
/// of its state behind but the byte before).
fn row_pattern(rule: &Rule) -> Option<Hir> {
    let Engine::Regex(re) = &rule.inner.engine else { return None };
    let plain = matches!(re.candidates, Candidates::Prefix(_))
        && re.looks.is_none()
        && !re.lines
        && re.low_view.is_none()
        && !re.sticky
        && !re.low_half_starts
        && !matches!(re.replacement, Replacement::Function(_))
        && rule.look_behind_len() == 0;
    plain.then(|| js_regex::js_repetitions(&re.hir))
}

/// Stages in one row at most: a row's search is built again for each stage it grows by.
const MAX_ROW: usize = 64;

/// `rules` with each row of two or more stages that can share a search marked with the row's search (see
/// `row_search`). A row grows while one fast search still covers it.
fn mark_rows(mut rules: Vec<Rule>) -> Vec<Rule> {
    let patterns: Vec<Option<Hir>> = rules.iter().map(row_pattern).collect();
    let mut start = 0;
    while start < rules.len() {
        let (mut len, mut search) = (0, None);
        while len < MAX_ROW && patterns.get(start + len).is_some_and(Option::is_some) {
            let hirs: Vec<&Hir> = patterns[start..=start + len].iter().flatten().collect();
            let Some(wider) = RowCandidates::of(&hirs) else { break };
            (len, search) = (len + 1, Some(wider));
        }
        if let (Some(search), 2..) = (search, len) {
            let search = Arc::new(search);
            for (index, rule) in rules[start..start + len].iter_mut().enumerate() {
                (rule.row, rule.row_index) = (Some(search.clone()), index);
            }
        }
        start += len.max(1);
    }
    rules
}
