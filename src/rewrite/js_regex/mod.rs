//! Translation of JavaScript `RegExp` patterns (ECMAScript 2024, with the Annex B web-compatibility grammar
//! when the `u` flag is absent) into patterns for `regex-syntax` / `regex-automata`, which are
//! non-backtracking.
//!
//! The translator is a small recursive-descent parser that emits the Rust pattern as it goes. It never relies
//! on the engine's own flags or class syntax for meaning: every character matcher (literal, escape, class,
//! `.`) is turned into an explicit set of code points, with JavaScript's case folding applied by us, so the
//! engine's idea of `\s`, `\w` or `(?i)` never leaks in. Capture groups are emitted one-for-one, so `$1` and
//! `$<name>` keep their meaning.
//!
//! What cannot be reproduced exactly (see also the comments at each place):
//! - (no difference) multi-line `^`/`$` are written for the rule's line view, in which JavaScript's four line
//!   terminators are spelled so that the engine's one-byte look-around finds every line start and end
//!   (see `crate::rewrite::lines`);
//! - without `u`, JavaScript works on UTF-16 code units: [`units`] matches the halves of astral characters
//!   as pieces of their UTF-8 form; a pattern that names some lone low surrogates (`\uDE00`, `[😀]`) runs on
//!   a view of the text in which an astral character's last byte tells its low surrogate's set;
//! - with `iu`, JavaScript counts `ſ` (U+017F) and `K` (U+212A) as word characters for `\b`/`\B`; the
//!   engine's ASCII boundaries do not;
//! - (no difference) JavaScript's repetition rules, where they differ from the engine's, are applied to the
//!   parsed pattern by [`semantics`] for the spans and by [`captures`] for group values;
//! - with `u`, case folding and `\p{…}` follow the engine's Unicode tables, which may be older than the
//!   JavaScript engine's.
//!
//! Callers that loop over matches must step like JavaScript: resume at the end of the previous match, and
//! after an empty match one character later. (The engine's own iterators also skip an empty match right after
//! a non-empty one, which JavaScript does not.)
//!
//! The translator's files, by concern: [`parser`] holds the entry points and the recursive descent over terms
//! and quantifiers; [`semantics`] the repetition rules that JavaScript and the engine read differently, as a
//! rewrite of the parsed pattern; [`captures`] the matcher that gives groups JavaScript's values;
//! [`groups`] the groups and their names; [`escapes`] the `\` sequences; [`classes`] the character sets,
//! JavaScript's character tables and case folding, and how a set is written out; [`units`] the
//! UTF-16 halves of astral characters without `u`.

mod captures;
mod class_sets;
mod classes;
mod escapes;
mod groups;
mod parser;
mod semantics;
mod units;

pub(crate) use captures::{JsCaptures, Leftmost, LookSearch};
pub(crate) use groups::js_name;
#[cfg(test)]
pub(crate) use parser::translate;
pub(crate) use parser::{
    check_length, literal, look_placeholder, parse_flags, translate_with_looks, translate_with_view, JsFlags,
    Translated,
};
pub(crate) use semantics::{js_repetitions, needs_js_captures};
pub(crate) use units::LowView;

#[cfg(test)]
mod tests;
