//! The streaming rewrite engine: rules compiled once, applied to bodies that arrive in chunks with the
//! same result as `String.prototype.replace` applied rule after rule to the whole body.
//!
//! Each rule is a JS regex translated to `regex-syntax` and compiled into a dense DFA (linear time, no
//! backtracking). The streaming stage in `stage` drives the DFA's transition function by hand so that
//! it knows, at every chunk edge, which bytes can still belong to a match and must be held back.
//!
//! Files: `rule` compiles rules (with `js_regex` translating the patterns, `prefixes` building the automaton
//! of held-back data, `grouped`, `literals` (with `literal_interactions`, `literal_watch` for the pairs a shared search watches, and `plain_text` making literal rules of plain-text patterns, whole words and any case included) and `regex_groups` grouping rules that cannot interact, with
//! `fingerprint` and `needle_scan` finding a literal set's matches for one loop that replaces them, `in_turn`
//! the way out of a shared search where a body needs the rules one after another, `overlap`
//! telling whether two regular languages' matches can overlap, `row_search` one search shared by stages in a
//! row that cannot share a stage); `hay` holds what every search works on and
//! answers with; `search` is one regex search's candidates and anchored runs; `next_match` is a regex rule's
//! search for its next final match; `sweep` settles many pending starts in one pass; `stream` runs the rules'
//! stages over a body in chunks; `stage` is one rule's state between chunks (`view`: its automata's view of
//! the held bytes), with `replacement` and `links` writing what replaces a match; `origins` is the table of
//! an origin's written forms and the matcher that swaps origins in all of them (both ways: JSON answers
//! out, what the browser sends in); `sticky` is the `y` flag's search; `look_rule` a rule with look-arounds
//! (a Pike VM program, not a DFA, whose look-arounds ask the automata in `look_around`).

mod alternation;
mod fingerprint;
mod grouped;
mod hay;
mod in_turn;
mod js_regex;
mod lines;
mod links;
mod literal_interactions;
mod literal_run;
mod literal_search;
mod literal_watch;
mod literals;
mod look_around;
mod look_memo;
mod look_nested;
mod look_rule;
mod match_groups;
mod needle_scan;
mod next_match;
mod origins;
mod overlap;
mod plain_text;
mod prefixes;
mod regex_groups;
mod replacement;
mod row_search;
mod rule;
mod search;
mod stage;
mod sticky;
mod stream;
mod sweep;
mod view;
mod word_bounds;

pub use crate::error::{ReplaceError, RuleError};
pub use origins::{Forms, OriginSwap};
pub(crate) use replacement::percent_encode_origin;
pub use replacement::{Exchange, ReplaceCall, ReplaceFn, Utf16Counter};
pub use rule::{check_memory, Rule, RuleReplacement, RULES_MEMORY_BUDGET};
pub use stream::{rewrite_bytes, Rewriter, DEFAULT_MAX_MATCH_BYTES};

#[cfg(test)]
mod seeded;
#[cfg(test)]
mod tests;
