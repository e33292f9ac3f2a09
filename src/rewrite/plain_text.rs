//! Rules whose pattern is plain text run as literal rules (`literals`: one loop replaces a set's matches):
//! also with `\b` at either end (`/\bheader\b/g`, how whole words are written), and with `i` but not `u`
//! (`/header/gi`) when the text is ASCII.
//!
//! Word bounds: see `word_bounds`. Any case: without `u`, `i` compares characters upper-cased, and a character
//! past ASCII never upper-cases to an ASCII one, so an ASCII needle matches its own letters in either ASCII case
//! and nothing else. Its `$&` would differ from match to match: such a rule stays a regex rule.

use std::sync::Arc;

use super::js_regex::{self, JsFlags};
use super::literals::{Literal, LiteralSet};
use super::replacement::{Part, Template};
use super::rule::{parse, CompiledRule, Engine, Rule};
use super::word_bounds::WordBounds;
use crate::error::RuleError;

/// A literal rule's needle and how it matches.
pub(super) struct PlainText {
    needle: Vec<u8>,
    bounds: WordBounds,
    any_case: bool,
}

impl Rule {
    /// The literal rule of a string `match`: `text` as it is, its first occurrence replaced.
    pub(super) fn exact_text(label: String, text: &str, replacement: &str) -> Result<Rule, RuleError> {
        let plain = PlainText { needle: text.as_bytes().to_vec(), bounds: WordBounds::default(), any_case: false };
        Rule::literal_rule(label, plain, replacement, false)
    }

    /// The plain text a regex rule (`source` with `flags`, `pattern` its translation) replaces with
    /// `replacement`, when it can run as a literal rule.
    pub(super) fn plain_text(
        source: &str,
        flags: &JsFlags,
        pattern: &str,
        replacement: &str,
    ) -> Result<Option<PlainText>, RuleError> {
        let any_case = flags.ignore_case;
        if flags.sticky || any_case && (flags.unicode || flags.unicode_sets) {
            return Ok(None);
        }
        let without_case = match any_case {
            true => Some(js_regex::translate_with_looks(source, &JsFlags { ignore_case: false, ..*flags })?),
            false => None,
        };
        let pattern = match &without_case {
            Some(exact) if exact.looks.is_empty() && exact.low_view.is_none() => &exact.pattern,
            Some(_) => return Ok(None),
            None => pattern,
        };
        let (bounds, text) = WordBounds::split(pattern).unwrap_or((WordBounds::default(), pattern));
        let Some(needle) = literal_text(text) else { return Ok(None) };
        // Past U+FFFF a character is two UTF-16 units, which a regex without `u` may split.
        let cut = !flags.unicode && needle.iter().any(|&b| b >= 0xF0);
        let whole_match = Template::parse(replacement, 0, false)
            .map_or(true, |t| t.parts().iter().any(|p| matches!(p, Part::WholeMatch)));
        if cut || any_case && (!needle.is_ascii() || whole_match) {
            return Ok(None);
        }
        Ok(Some(PlainText { needle, bounds, any_case }))
    }

    /// A literal rule: its replacement, a template without groups, is the same bytes at every match.
    pub(super) fn literal_rule(
        label: String,
        PlainText { needle, bounds, any_case }: PlainText,
        replacement: &str,
        global: bool,
    ) -> Result<Rule, RuleError> {
        let mut output = Vec::new();
        Template::parse(replacement, 0, false)?.expand(&needle, |_| None, |_| None, &mut output);
        let literal = Literal { label: label.clone(), needle, output, global, bounds, any_case };
        let set = LiteralSet::new(vec![literal]).map_err(RuleError::TooComplex)?;
        Ok(Rule {
            inner: Arc::new(CompiledRule { label, global, engine: Engine::Literals(Box::new(set)) }),
            paths: None,
            row: None,
            row_index: 0,
        })
    }
}

/// The bytes a translated pattern matches when it is plain text, and nothing else.
pub(super) fn literal_text(pattern: &str) -> Option<Vec<u8>> {
    let hir = parse(pattern).ok()?;
    match hir.kind() {
        regex_syntax::hir::HirKind::Literal(literal) if std::str::from_utf8(&literal.0).is_ok() => {
            Some(literal.0.to_vec())
        }
        _ => None,
    }
}
