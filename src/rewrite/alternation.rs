//! A global regex rule whose pattern is plain texts in an alternation (`/\b(?:header|rewrite|rust)\b/g`, how a
//! word list is often written as one rule) runs as one literal set: a regex search started over at each of a
//! word list's thousands of matches cost ~15x the set's loop (benches/rules.rs `words-as/alternation`).
//!
//! One rule, not rules in turn: the set gets no watched pairs, so it is the plain leftmost-first search, which
//! is what JavaScript's alternation does (the leftmost position where an alternative matches, and there the
//! first alternative in order). No alternative may lie inside another: the set does not wait, where the data
//! ends, for a longer one that may yet win (nor, with `\b` around the group, try the next one where the first
//! fails the bound, as JavaScript does). `$&` and the
//! group (`$1`) are the matched text, which is the alternative's own text when case matters; with `i` they
//! would differ from match to match, and such a rule stays a regex rule.

use std::sync::Arc;

use super::js_regex::{self, JsFlags};
use super::literals::{Literal, LiteralSet};
use super::plain_text::literal_text;
use super::replacement::{Part, Template};
use super::rule::{CompiledRule, Engine, Rule};
use super::word_bounds::WordBounds;
use crate::error::RuleError;

/// The alternation's texts and what surrounds them.
pub(super) struct Alternatives {
    needles: Vec<Vec<u8>>,
    bounds: WordBounds,
    /// The texts are group 1 (`(a|b)`, not `(?:a|b)`).
    captured: bool,
    any_case: bool,
}

impl Rule {
    /// The texts of a global rule's alternation (`source` with `flags`), when it can run as one literal set.
    pub(super) fn alternatives(source: &str, flags: &JsFlags, replacement: &str) -> Option<Alternatives> {
        if !flags.global || flags.sticky || flags.ignore_case && (flags.unicode || flags.unicode_sets) {
            return None;
        }
        let (start, rest) = source.strip_prefix(r"\b").map_or((false, source), |rest| (true, rest));
        let (end, rest) = match rest.strip_suffix(r"\b") {
            Some(rest) if !ends_escaped(rest) => (true, rest),
            _ => (false, rest),
        };
        let (captured, inner) = match outer_group(rest) {
            Some(group) => group,
            // `\ba|b\b` bounds the first and the last alternative only.
            None if start || end => return None,
            None => (false, rest),
        };
        // Anything but escaped or plain characters between the bars: left to the regex engine.
        if inner.contains(['(', ')', '[', ']']) {
            return None;
        }
        let exact = JsFlags { ignore_case: false, ..*flags };
        let mut needles = Vec::new();
        for alternative in top_level_alternatives(inner) {
            let translated = js_regex::translate_with_looks(alternative, &exact).ok()?;
            if !translated.looks.is_empty() || translated.low_view.is_some() {
                return None;
            }
            let needle = literal_text(&translated.pattern)?;
            // Past U+FFFF a character is two UTF-16 units, which a regex without `u` may split.
            if !flags.unicode && needle.iter().any(|&b| b >= 0xF0) || flags.ignore_case && !needle.is_ascii() {
                return None;
            }
            needles.push(needle);
        }
        if needles.len() < 2 {
            return None;
        }
        // A later copy of an alternative never wins. One inside another: where the data ends inside the
        // longer, the shorter's match may yet lose to it, which the set does not wait for.
        let folded: Vec<Vec<u8>> = needles.iter().map(|n| n.to_ascii_lowercase()).collect();
        let mut kept: Vec<usize> = Vec::new();
        for (i, needle) in folded.iter().enumerate() {
            if !kept.iter().any(|&k| folded[k] == *needle) {
                kept.push(i);
            }
        }
        let inside = |a: &[u8], b: &[u8]| a.len() < b.len() && b.windows(a.len()).any(|w| w == a);
        if kept.iter().any(|&a| kept.iter().any(|&b| inside(&folded[a], &folded[b]))) {
            return None;
        }
        let needles: Vec<Vec<u8>> = kept.into_iter().map(|i| std::mem::take(&mut needles[i])).collect();
        let bounds = WordBounds { start, end };
        let template = Template::parse(replacement, usize::from(captured), false).ok()?;
        let varies = template.parts().iter().any(|p| matches!(p, Part::WholeMatch | Part::Group(_)));
        if flags.ignore_case && varies {
            return None;
        }
        Some(Alternatives { needles, bounds, captured, any_case: flags.ignore_case })
    }

    /// The rule of [`Rule::alternatives`]: one set of the alternatives, each replaced by the template expanded
    /// with its own text.
    pub(super) fn alternation_rule(
        label: String,
        Alternatives { needles, bounds, captured, any_case }: Alternatives,
        replacement: &str,
    ) -> Result<Rule, RuleError> {
        let template = Template::parse(replacement, usize::from(captured), false)?;
        let members = needles
            .into_iter()
            .map(|needle| {
                let mut output = Vec::new();
                let group = |index: usize| (captured && index == 1).then_some(&needle[..]);
                template.expand(&needle, group, |_| None, &mut output);
                Literal { label: label.clone(), needle, output, global: true, bounds, any_case }
            })
            .collect();
        let set = LiteralSet::alternation(members).map_err(RuleError::TooComplex)?;
        Ok(Rule {
            inner: Arc::new(CompiledRule { label, global: true, engine: Engine::Literals(Box::new(set)) }),
            paths: None,
            row: None,
            row_index: 0,
        })
    }
}

/// Whether `text` ends with an odd run of backslashes (so a `\b` after it was `\\` then `b`).
fn ends_escaped(text: &str) -> bool {
    text.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

/// `(a|b)` or `(?:a|b)` around the whole of `text`: whether it captures, and what is inside.
fn outer_group(text: &str) -> Option<(bool, &str)> {
    let inner = text.strip_prefix('(')?.strip_suffix(')')?;
    if ends_escaped(inner) {
        return None;
    }
    match inner.strip_prefix("?:") {
        Some(inner) => Some((false, inner)),
        None if inner.starts_with('?') => None,
        None => Some((true, inner)),
    }
}

/// `text` split at its bars that are not escaped (it holds no groups or classes).
fn top_level_alternatives(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut from, mut escaped) = (0, false);
    for (i, byte) in text.bytes().enumerate() {
        match byte {
            b'\\' if !escaped => escaped = true,
            b'|' if !escaped => {
                parts.push(&text[from..i]);
                from = i + 1;
            }
            _ => escaped = false,
        }
    }
    parts.push(&text[from..]);
    parts
}
