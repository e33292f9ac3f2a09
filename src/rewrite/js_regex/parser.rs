//! The translator's entry points and its recursive descent: the parser's cursor, alternatives, terms and
//! quantifiers. Groups, escapes and classes are parsed by the `impl Parser` blocks of their own files.

use super::class_sets::RepeatedAtom;
use super::classes::is_astral;
use super::groups::scan_groups;
use super::units::{translate_units, LowSet, LowView};
use crate::error::JsRegexError;

/// Longest accepted pattern source, in bytes.
const MAX_PATTERN_BYTES: usize = 65_536;
/// Deepest accepted group nesting; keeps the parser's recursion shallow (the engine's own, differently
/// counted limit is checked separately).
pub(super) const MAX_NESTING: usize = 128;

pub(super) const ENGINE_HINT: &str = " (a non-backtracking engine cannot run it)";
pub(super) const SURROGATE_HINT: &str = " (UTF-8 text cannot contain a lone surrogate)";

/// Flags of a JavaScript regular expression literal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct JsFlags {
    pub global: bool,
    pub ignore_case: bool,
    pub multiline: bool,
    pub dot_all: bool,
    pub unicode: bool,
    /// `y`: each match starts where the last one ended (see `rewrite::sticky`).
    pub sticky: bool,
    /// `v` (unicodeSets): `u`'s semantics, and classes with set operations and strings (see `class_sets`).
    pub unicode_sets: bool,
}

pub(crate) fn unsupported(feature: impl Into<String>, offset: usize, hint: &str) -> JsRegexError {
    JsRegexError::Unsupported { feature: feature.into(), offset, hint: hint.to_string() }
}

pub(super) fn syntax(message: impl Into<String>, offset: usize) -> JsRegexError {
    JsRegexError::Syntax { message: message.into(), offset }
}

/// Parses JavaScript flag letters. `d` (hasIndices) is accepted and ignored.
pub(crate) fn parse_flags(flags: &str) -> Result<JsFlags, JsRegexError> {
    // JavaScript rejects unknown and repeated letters before anything else, so check the whole string first.
    let mut seen = Vec::new();
    for c in flags.chars() {
        if !"dgimsuvy".contains(c) || seen.contains(&c) {
            return Err(JsRegexError::InvalidFlags(flags.to_string()));
        }
        seen.push(c);
    }
    // `u` and `v` together are a SyntaxError in JavaScript.
    if seen.contains(&'u') && seen.contains(&'v') {
        return Err(JsRegexError::InvalidFlags(flags.to_string()));
    }
    let mut out = JsFlags::default();
    for c in seen {
        match c {
            'g' => out.global = true,
            'i' => out.ignore_case = true,
            'm' => out.multiline = true,
            's' => out.dot_all = true,
            'u' => out.unicode = true,
            'y' => out.sticky = true,
            'v' => {
                out.unicode = true;
                out.unicode_sets = true;
            }
            'd' => {}
            _ => return Err(JsRegexError::UnsupportedFlag(c)),
        }
    }
    Ok(out)
}

/// Translates JS RegExp `source` (as `RegExp.prototype.source` gives it) with `flags` into a pattern for
/// regex-syntax / regex-automata with their default syntax configuration. Capture groups keep their number,
/// order and names.
#[cfg(test)]
pub(crate) fn translate(source: &str, flags: &JsFlags) -> Result<String, JsRegexError> {
    translate_with_view(source, flags).map(|(pattern, _)| pattern)
}

/// [`translate`], and the view of the text the pattern is written for when it names some lone low surrogates
/// (see [`units`](super::units)): the rule's automata must then read that view.
pub(crate) fn translate_with_view(source: &str, flags: &JsFlags) -> Result<(String, Option<LowView>), JsRegexError> {
    let (translated, view) = translate_parsed(source, flags, false)?;
    Ok((translated.out, view))
}

/// A pattern translated with its look-arounds: each is an empty group named [`look_placeholder`] in the
/// pattern, and its body a pattern of its own (see `crate::rewrite::look_around`).
pub(crate) struct Translated {
    pub(crate) pattern: String,
    pub(crate) low_view: Option<LowView>,
    pub(crate) looks: Vec<LookSpec>,
}

/// One look-around of a pattern: `(?=…)`, `(?!…)`, `(?<=…)` or `(?<!…)`.
#[derive(Debug, Clone)]
pub(crate) struct LookSpec {
    pub(crate) ahead: bool,
    pub(crate) negative: bool,
    /// The body, translated as the pattern around it is.
    pub(crate) pattern: String,
    /// Where it opens in the JS source.
    pub(crate) offset: usize,
    /// The JavaScript numbers of the capture groups inside it.
    pub(crate) groups: std::ops::Range<u32>,
}

/// [`translate_with_view`] that takes look-arounds (see [`Translated`]).
pub(crate) fn translate_with_looks(source: &str, flags: &JsFlags) -> Result<Translated, JsRegexError> {
    let (parser, low_view) = translate_parsed(source, flags, true)?;
    Ok(Translated { pattern: parser.out, low_view, looks: parser.looks })
}

fn translate_parsed<'s>(
    source: &'s str,
    flags: &JsFlags,
    allow_looks: bool,
) -> Result<(Parser<'s>, Option<LowView>), JsRegexError> {
    check_length(source)?;
    translate_units(source, |src, view| {
        let mut parser = Parser::new(src, *flags, view);
        parser.allow_looks = allow_looks;
        parser.pattern()?;
        Ok(parser)
    })
}

/// The name of the empty group that stands for look-around `k` in a translated pattern. No JavaScript
/// name is written so (see `groups::engine_name`: after `_.` comes `[`).
pub(crate) fn look_placeholder(k: usize) -> String {
    format!("_..{k}")
}

/// `pattern` (translated) with its look-arounds' placeholders as empty groups: it matches wherever the
/// pattern would if they all held.
pub(crate) fn without_placeholders(pattern: &str) -> String {
    let placeholder = format!("(?P<{}", look_placeholder(0).trim_end_matches('0'));
    let mut relaxed = String::with_capacity(pattern.len());
    let mut rest = pattern;
    while let Some(at) = rest.find(&placeholder) {
        relaxed.push_str(&rest[..at]);
        let close = rest[at..].find(">)").map_or(rest.len(), |end| at + end + 2);
        relaxed.push_str("(?:)");
        rest = &rest[close..];
    }
    relaxed.push_str(rest);
    relaxed
}

/// The look-around a group name written by [`look_placeholder`] stands for.
pub(crate) fn look_index(name: &str) -> Option<usize> {
    name.strip_prefix("_..")?.parse().ok()
}

/// A literal string match (like `String.prototype.replace` with a string pattern) as a pattern.
/// Refuses a pattern (or a string `match`) longer than [`MAX_PATTERN_BYTES`].
pub(crate) fn check_length(source: &str) -> Result<(), JsRegexError> {
    if source.len() > MAX_PATTERN_BYTES {
        return Err(unsupported(format!("pattern longer than {MAX_PATTERN_BYTES} bytes"), MAX_PATTERN_BYTES, ""));
    }
    Ok(())
}

pub(crate) fn literal(text: &str) -> String {
    regex_syntax::escape(text)
}

pub(super) struct Parser<'s> {
    pub(super) src: &'s str,
    pub(super) pos: usize,
    pub(super) flags: JsFlags,
    pub(super) out: String,
    /// Capture groups in the whole pattern: decides whether a non-`u` `\N` is a backreference or an Annex B
    /// octal escape.
    pub(super) capture_count: usize,
    /// Names of all named groups; once there is one, `\k` must be a reference.
    pub(super) group_names: Vec<String>,
    /// Names defined so far, to reject duplicates.
    pub(super) defined_names: Vec<String>,
    pub(super) depth: usize,
    /// Offset of the group opened at the greatest depth, and that depth.
    pub(super) deepest: (usize, usize),
    /// Sets of lone low surrogates that are neither all nor none, met on a first pass (see `units`).
    pub(super) low_sets: Vec<LowSet>,
    /// The low surrogates of whole astral characters met on a first pass: each needs a class of its own.
    pub(super) astral_lows: Vec<LowSet>,
    /// The text's view the pattern is written for, on the second pass.
    pub(super) low_view: Option<LowView>,
    /// Look-arounds are taken (else refused by name).
    pub(super) allow_looks: bool,
    /// The look-arounds met so far, each after those inside it.
    pub(super) looks: Vec<LookSpec>,
    /// Capture groups opened so far.
    pub(super) groups_opened: usize,
    /// Where each `v` class negated as a whole (`[^…]`) starts, in the order met (see
    /// `class_sets::RepeatedAtom`).
    pub(super) negated_sets: Vec<usize>,
    /// The term just parsed always ends with an ASCII word character (a literal one repeated at least once):
    /// what a `\b` right after it sees before it (see `word_boundary`). Cleared where a term may follow
    /// something else: at `|`, inside a group, after one.
    pub(super) word_before: bool,
}

impl<'s> Parser<'s> {
    fn new(src: &'s str, flags: JsFlags, low_view: Option<LowView>) -> Self {
        let (capture_count, group_names) = scan_groups(src);
        Parser {
            src,
            pos: 0,
            flags,
            out: String::with_capacity(src.len() * 2),
            capture_count,
            group_names,
            defined_names: Vec::new(),
            depth: 0,
            deepest: (0, 0),
            low_sets: Vec::new(),
            astral_lows: Vec::new(),
            low_view,
            allow_looks: false,
            looks: Vec::new(),
            groups_opened: 0,
            negated_sets: Vec::new(),
            word_before: false,
        }
    }

    pub(super) fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    pub(super) fn peek_at(&self, n: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(n)
    }

    pub(super) fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    pub(super) fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn pattern(&mut self) -> Result<(), JsRegexError> {
        self.disjunction()?;
        if self.pos < self.src.len() {
            // disjunction only stops early at a `)`
            return Err(syntax("unmatched `)`", self.pos));
        }
        if self.out.is_empty() {
            self.out.push_str("(?:)");
        }
        self.check_engine_nesting()
    }

    /// The engine counts nesting its own way (groups, repetitions, alternations, concatenations, classes) and
    /// refuses more than 250 levels. Each JS group adds at most four, so only deep patterns need the check.
    fn check_engine_nesting(&self) -> Result<(), JsRegexError> {
        if self.deepest.1 <= 40 {
            return Ok(());
        }
        match regex_syntax::ast::parse::Parser::new().parse(&self.out) {
            Err(e) if matches!(e.kind(), regex_syntax::ast::ErrorKind::NestLimitExceeded(_)) => Err(unsupported(
                "nesting deeper than the engine allows",
                self.deepest.0,
                " (each group, repetition and alternative counts)",
            )),
            _ => Ok(()),
        }
    }

    /// Parses alternatives; `true` when V8 counts every one as unable to match empty (see `RepeatedAtom`).
    pub(super) fn disjunction(&mut self) -> Result<bool, JsRegexError> {
        let mut nonempty = self.alternative()?;
        while self.eat('|') {
            self.out.push('|');
            self.word_before = false;
            nonempty &= self.alternative()?;
        }
        Ok(nonempty)
    }

    fn alternative(&mut self) -> Result<bool, JsRegexError> {
        let mut nonempty = false;
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            nonempty |= self.term()?;
        }
        Ok(nonempty)
    }

    /// Parses a term; `true` when V8 counts it as unable to match empty.
    fn term(&mut self) -> Result<bool, JsRegexError> {
        let start = self.pos;
        let word_before = std::mem::take(&mut self.word_before);
        let Some(c) = self.peek() else {
            return Ok(false);
        };
        let (sets_before, groups_before) = (self.negated_sets.len(), self.groups_opened);
        let mut nonempty = true;
        let unicode = self.flags.unicode;
        // Assertions return early: a quantifier after one then fails as "nothing to repeat", like JavaScript.
        let out_start = self.out.len();
        let mut word_char = false;
        let astral = match c {
            '^' => {
                self.bump();
                // JS line terminators, as the rule's line view spells them (see `crate::rewrite::lines`).
                self.out.push_str(if self.flags.multiline { crate::rewrite::lines::LINE_START } else { r"\A" });
                return Ok(false);
            }
            '$' => {
                self.bump();
                // Without `m`, JS `$` is only the very end (no final-newline allowance), which is `\z`.
                self.out.push_str(if self.flags.multiline { crate::rewrite::lines::LINE_END } else { r"\z" });
                return Ok(false);
            }
            '\\' if matches!(self.peek_at(1), Some('b' | 'B')) => {
                let negated = self.peek_at(1) == Some('B');
                self.pos += 2;
                self.word_boundary(start, negated, word_before)?;
                return Ok(false);
            }
            '\\' if self.flags.unicode_sets && self.string_property_name().is_some() => {
                nonempty = self.string_property_atom();
                None
            }
            '\\' => self.atom_escape()?,
            '(' => {
                let Some(body_nonempty) = self.group()? else {
                    self.look_around_quantifier(out_start)?;
                    self.word_before = false;
                    return Ok(false);
                };
                nonempty = body_nonempty;
                None
            }
            '.' => {
                self.bump();
                let set = self.dot_set();
                self.emit_set(&set);
                None
            }
            '[' if self.flags.unicode_sets => {
                self.class_set()?;
                // V8 gives a `v` class no minimum length (it may hold the empty string).
                nonempty = false;
                None
            }
            '[' => {
                self.class()?;
                None
            }
            '*' | '+' | '?' => return Err(syntax("nothing to repeat", start)),
            '{' => {
                if self.braced_quantifier().is_some() {
                    return Err(syntax("nothing to repeat", start));
                }
                if unicode {
                    return Err(syntax("lone quantifier brackets", start));
                }
                // Annex B: a `{` that starts no quantifier is a literal.
                self.bump();
                self.emit_char(c);
                None
            }
            '}' | ']' if unicode => return Err(syntax("lone quantifier brackets", start)),
            _ => {
                self.bump();
                self.emit_char(c);
                word_char = c.is_ascii_alphanumeric() || c == '_';
                (!unicode && is_astral(c)).then_some(c)
            }
        };
        let atom = RepeatedAtom {
            nonempty,
            negated_set: self.negated_sets.get(sets_before).copied(),
            captures: self.groups_opened > groups_before,
        };
        let nonempty = self.quantifier(out_start, astral, &atom)?;
        self.word_before = word_char && nonempty;
        Ok(nonempty)
    }

    /// Parses an optional quantifier after the atom written from `out_start` on. `astral` is the atom when it
    /// is an astral character in non-`u` mode, where JavaScript repeats only its second UTF-16 code unit.
    /// Returns whether V8 counts the term as unable to match empty.
    fn quantifier(
        &mut self,
        out_start: usize,
        astral: Option<char>,
        atom: &RepeatedAtom,
    ) -> Result<bool, JsRegexError> {
        let start = self.pos;
        let (text, min, max) = match self.peek() {
            Some(c @ ('*' | '+' | '?')) => {
                self.bump();
                let (min, max) = match c {
                    '*' => (0, None),
                    '+' => (1, None),
                    _ => (0, Some(1)),
                };
                (c.to_string(), min, max)
            }
            Some('{') => match self.braced_quantifier() {
                Some((min, max, end)) => {
                    if max.is_some_and(|max| max < min) {
                        return Err(syntax("numbers out of order in {} quantifier", start));
                    }
                    self.pos = end;
                    let limit = u64::from(u32::MAX);
                    if min > limit {
                        return Err(unsupported(
                            format!("repetition count {min} (the engine's limit is {limit})"),
                            start,
                            "",
                        ));
                    }
                    // An upper bound beyond any haystack length is no bound.
                    let max = max.filter(|&max| max <= limit);
                    let text = match max {
                        Some(max) if max == min => format!("{{{min}}}"),
                        Some(max) => format!("{{{min},{max}}}"),
                        None => format!("{{{min},}}"),
                    };
                    (text, min, max)
                }
                None if self.flags.unicode => return Err(syntax("incomplete quantifier", start)),
                // Annex B: not a quantifier; the `{` is the next literal.
                None => return Ok(atom.nonempty),
            },
            _ => return Ok(atom.nonempty),
        };
        atom.refuse_if_v8_unrolls(min, max)?;
        let nonempty = atom.nonempty && min > 0;
        let lazy = self.eat('?');
        if let Some(c) = astral {
            self.out.truncate(out_start);
            self.emit_quantified_astral(c, min, max, lazy);
            return Ok(nonempty);
        }
        self.out.push_str(&text);
        if lazy {
            self.out.push('?');
        }
        Ok(nonempty)
    }

    /// Annex B lets a lookahead be repeated (`(?=a)*`, `(?!a){2}`) without `u` or `v`. A look-around holds or
    /// not at one position however often it is asked, and an optional iteration that matches empty fails (the
    /// repetition then stops), so a minimum of 0 is no look-around at all and any other is the look-around
    /// once. `out_start` is where the look-around's placeholder begins.
    fn look_around_quantifier(&mut self, out_start: usize) -> Result<(), JsRegexError> {
        let start = self.pos;
        // The minimum, and where the quantifier ends.
        let (min, end) = match self.peek() {
            Some('*' | '?') => (0, start + 1),
            Some('+') => (1, start + 1),
            Some('{') => match self.braced_quantifier() {
                Some((min, max, _)) if max.is_some_and(|max| max < min) => {
                    return Err(syntax("numbers out of order in {} quantifier", start))
                }
                Some((min, _, end)) => (min, end),
                // Annex B: not a quantifier (with `u`, the next term says why not).
                None => return Ok(()),
            },
            _ => return Ok(()),
        };
        let lookahead = self.looks.last().is_some_and(|look| look.ahead);
        if !lookahead || self.flags.unicode {
            return Err(syntax("invalid quantifier", start));
        }
        self.pos = end;
        self.eat('?');
        if let Some(look) = self.looks.pop_if(|_| min == 0) {
            // Its groups keep their numbers (and stay undefined).
            self.out.truncate(out_start);
            if !look.groups.is_empty() {
                self.out.push_str(&super::groups::groups_only(&look.pattern));
            }
        }
        Ok(())
    }

    /// Reads `{n}`, `{n,}` or `{n,m}` at the current position without consuming it: `(min, max, end)`, where
    /// `max` is `None` if unbounded.
    fn braced_quantifier(&self) -> Option<(u64, Option<u64>, usize)> {
        let bytes = self.src.as_bytes();
        let mut i = self.pos + 1;
        let digits = |i: &mut usize| {
            let begin = *i;
            let mut value: u64 = 0;
            while let Some(d) = bytes.get(*i).filter(|b| b.is_ascii_digit()) {
                value = value.saturating_mul(10).saturating_add(u64::from(d - b'0'));
                *i += 1;
            }
            (*i > begin).then_some(value)
        };
        let min = digits(&mut i)?;
        let max = if bytes.get(i) == Some(&b',') {
            i += 1;
            digits(&mut i)
        } else {
            Some(min)
        };
        (bytes.get(i) == Some(&b'}')).then_some((min, max, i + 1))
    }
}
