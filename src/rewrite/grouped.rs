//! [`Rule::grouped`]: the rules as the engine runs them. Each run of consecutive literal rules and each run
//! of consecutive regex rules is split, in order, into groups whose members cannot interact (see `literals`
//! and `regex_groups`); a group is one stage, searched in one pass.

use std::sync::Arc;

use super::literals::{self, Literal, LiteralSet};
use super::rule::{CompiledRule, Engine, Rule};
use super::{regex_groups, row_search};

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
                Engine::Literals(set) if rule.paths.is_none() => {
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
        row_search::mark(out)
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
        }
    }
}
