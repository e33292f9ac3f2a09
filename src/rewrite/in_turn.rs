//! The way out of a shared search: literal rules that share one search (see `literals::group`) give the
//! same output as the rules in turn until a body holds a pair of needles where a later rule's match would
//! begin before, and overlap, an earlier rule's. From the first such pair on, the rules run one after
//! another, in sets whose members cannot interact at all; what came before it is already right, and no
//! match of any rule in turn crosses that byte, so the two outputs join there exactly.

use super::rule::{Engine, Rule};
use super::stage::Stage;
use crate::error::ReplaceError;

impl Stage {
    /// Whether this stage must give way to its rules in turn (a watched pair was found).
    pub(super) fn wants_in_turn(&self) -> bool {
        self.in_turn
    }

    /// The stages of the rules in turn that take this one's place: each member's counts and state carried
    /// over, the bytes held from the pair on handed to the first of them.
    pub(super) fn into_in_turn(self) -> Result<Vec<Stage>, ReplaceError> {
        let Engine::Literals(set) = &self.rule.inner.engine else {
            return Err(self.internal_error("only literal rules that share a search run in turn"));
        };
        let sets = set.in_turn_sets().map_err(|message| self.internal_error(&message))?;
        let mut stages = Vec::with_capacity(sets.len());
        for (range, set) in sets {
            let mut stage = Stage::new(Rule::of_literal_set(set), &self.local_host, self.max_match);
            stage.members.done = self.members.done[range.clone()].to_vec();
            stage.members.matches = self.members.matches[range.clone()].to_vec();
            stage.exchange = self.exchange.clone();
            stage.pass_on_unchanged = true;
            // Each reads on from the same place; the byte before it, as `\b` sees it, is the set's input byte
            // there (an earlier member writes word characters where its needle had them, or its match cannot
            // touch a bounded later one's there: see `WordBounds::see_alike`).
            stage.before = self.before;
            stages.push(stage);
        }
        if let Some(end) = stages.last_mut() {
            end.pass_on_unchanged = self.pass_on_unchanged;
        }
        let Some(first) = stages.first_mut() else {
            return Err(self.internal_error("a shared search with no rules"));
        };
        first.held = self.held;
        first.abandoned = self.abandoned;
        Ok(stages)
    }

    fn internal_error(&self, message: &str) -> ReplaceError {
        ReplaceError { rule: self.rule.label().to_string(), message: format!("internal error: {message}") }
    }
}
