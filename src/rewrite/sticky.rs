//! The `y` flag (sticky): a match must start where the last one ended (at the body's start for the
//! first), as `lastIndex` makes it in `String.prototype.replace`, and the first position without one
//! ends the rule for the rest of the body. With `g` that replaces the run of back-to-back matches at the
//! start of the body; without, the one match at its very start. `lastIndex` is read as 0, as for `g`:
//! a rule serves many bodies, and Browsersync's `replace` calls would carry it from one to the next.

use std::sync::Arc;

use super::hay::Next;
use super::rule::{Engine, Rule};
use super::search::{Attempt, RegexSearch, Run};

impl Rule {
    /// This regex rule, just built (so not shared yet), made sticky if `sticky`.
    pub(super) fn sticky_if(mut self, sticky: bool) -> Rule {
        if !sticky {
            return self;
        }
        let inner = Arc::get_mut(&mut self.inner);
        debug_assert!(inner.is_some(), "a rule is made sticky before it is shared");
        if let Some(Engine::Regex(re)) = inner.map(|inner| &mut inner.engine) {
            re.sticky = true;
        }
        self
    }

    /// Whether a search that finds nothing ends the rule for the rest of the body.
    pub(super) fn is_sticky(&self) -> bool {
        matches!(&self.inner.engine, Engine::Regex(re) if re.sticky)
    }
}

impl RegexSearch<'_> {
    /// The match that starts at `from`, the one place a sticky rule may match next.
    pub(super) fn sticky_match(&self, from: usize, abandoned: &mut u64, run: &mut Option<Run>) -> Next {
        if !self.hay.can_start(from, self.re.units) {
            return Next::Exhausted;
        }
        match self.attempt(from, &mut 0) {
            Attempt::Match(end) => Next::Match { start: from, end },
            Attempt::Alive(state) => {
                *run = Some(Run { start: from, state, read_to: self.hay.view.len() });
                Next::Pending(from)
            }
            Attempt::Abandoned => {
                *abandoned += 1;
                Next::Exhausted
            }
            Attempt::NoMatch => Next::Exhausted,
        }
    }
}
