//! Translation of JavaScript `RegExp` patterns (ECMAScript 2024, with the
//! Annex B web-compatibility grammar when the `u` flag is absent) into patterns
//! for `regex-syntax` / `regex-automata`, which are non-backtracking.
//!
//! The translator is a small recursive-descent parser that emits the Rust
//! pattern as it goes. It never relies on the engine's own flags or class
//! syntax for meaning: every character matcher (literal, escape, class, `.`)
//! is turned into an explicit set of code points, with JavaScript's case
//! folding applied by us, so the engine's idea of `\s`, `\w` or `(?i)` never
//! leaks in. Capture groups are emitted one-for-one, so `$1` and `$<name>`
//! keep their meaning.
//!
//! What cannot be reproduced exactly (see also the comments at each place):
//! - multi-line `^`/`$` use the engine's CRLF-aware anchors: `\u2028` and
//!   `\u2029` do not end lines, and no anchor matches between `\r` and `\n`;
//! - without `u`, JavaScript works on UTF-16 code units: here `.`, `\S`,
//!   `[^…]` and friends consume a whole astral character instead of half of
//!   it, and patterns whose meaning depends on surrogate halves are rejected;
//! - with `iu`, JavaScript counts `ſ` (U+017F) and `K` (U+212A) as word
//!   characters for `\b`/`\B`; the engine's ASCII boundaries do not;
//! - a group whose `?` takes an empty iteration is unset in JavaScript but
//!   empty here (`$1` becomes the empty string either way); repetitions where
//!   the two engines' iteration rules give different results are rejected;
//! - with `u`, case folding and `\p{…}` follow the engine's Unicode tables,
//!   which may be older than the JavaScript engine's.
//!
//! Callers that loop over matches must step like JavaScript: resume at the
//! end of the previous match, and after an empty match one character later.
//! (The engine's own iterators also skip an empty match right after a
//! non-empty one, which JavaScript does not.)

use std::collections::HashMap;
use std::sync::OnceLock;

use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, HirKind};

/// Longest accepted pattern source, in bytes.
const MAX_PATTERN_BYTES: usize = 65_536;
/// Deepest accepted group nesting; keeps the parser's recursion shallow (the
/// engine's own, differently counted limit is checked separately).
const MAX_NESTING: usize = 128;

const ENGINE_HINT: &str = " (a non-backtracking engine cannot run it)";
const SURROGATE_HINT: &str = " (UTF-8 text cannot contain a lone surrogate)";
const UTF16_HINT: &str = " (without the `u` flag JavaScript treats it as two UTF-16 code units)";

/// A class the engine accepts that contains no character: matches nothing.
const NEVER: &str = r"[^\x{0}-\x{10FFFF}]";

/// Flags of a JavaScript regular expression literal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JsFlags {
    pub global: bool,
    pub ignore_case: bool,
    pub multiline: bool,
    pub dot_all: bool,
    pub unicode: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsRegexError {
    /// A feature a non-backtracking engine cannot run, or that we do not support.
    #[error("unsupported regex feature: {feature} at offset {offset}{hint}")]
    Unsupported { feature: String, offset: usize, hint: String },
    #[error("unsupported regex flag `{0}`")]
    UnsupportedFlag(char),
    /// Unknown or repeated flag letters.
    #[error("invalid regex flags `{0}`")]
    InvalidFlags(String),
    #[error("invalid regex: {message} at offset {offset}")]
    Syntax { message: String, offset: usize },
}

fn unsupported(feature: impl Into<String>, offset: usize, hint: &str) -> JsRegexError {
    JsRegexError::Unsupported { feature: feature.into(), offset, hint: hint.to_string() }
}

fn syntax(message: impl Into<String>, offset: usize) -> JsRegexError {
    JsRegexError::Syntax { message: message.into(), offset }
}

/// Parses JavaScript flag letters. `d` (hasIndices) is accepted and ignored.
pub fn parse_flags(flags: &str) -> Result<JsFlags, JsRegexError> {
    // JavaScript rejects unknown and repeated letters before anything else,
    // so check the whole string first.
    let mut seen = Vec::new();
    for c in flags.chars() {
        if !"dgimsuvy".contains(c) || seen.contains(&c) {
            return Err(JsRegexError::InvalidFlags(flags.to_string()));
        }
        seen.push(c);
    }
    let mut out = JsFlags::default();
    for c in seen {
        match c {
            'g' => out.global = true,
            'i' => out.ignore_case = true,
            'm' => out.multiline = true,
            's' => out.dot_all = true,
            'u' => out.unicode = true,
            'd' => {}
            _ => return Err(JsRegexError::UnsupportedFlag(c)),
        }
    }
    Ok(out)
}

/// Translates JS RegExp `source` (as `RegExp.prototype.source` gives it) with
/// `flags` into a pattern for regex-syntax / regex-automata with their default
/// syntax configuration. Capture groups keep their number, order and names.
pub fn translate(source: &str, flags: &JsFlags) -> Result<String, JsRegexError> {
    if source.len() > MAX_PATTERN_BYTES {
        return Err(unsupported(format!("pattern longer than {MAX_PATTERN_BYTES} bytes"), MAX_PATTERN_BYTES, ""));
    }
    let mut parser = Parser::new(source, *flags);
    parser.pattern()?;
    Ok(parser.out)
}

/// A literal string match (like `String.prototype.replace` with a string
/// pattern) as a pattern.
pub fn literal(text: &str) -> String {
    regex_syntax::escape(text)
}

/// What an escape sequence stands for.
enum Escape {
    /// One code point; may be a lone surrogate, which callers must reject.
    Char(u32),
    /// A set of characters (`\d`, `\p{L}`, …).
    Set(ClassUnicode),
    /// Annex B: `\c` not followed by a control letter is a literal `\`, and
    /// the `c` is parsed again as what follows.
    Backslash,
}

/// What the repetition checks need to know about a parsed piece.
///
/// JavaScript and the engine repeat differently: JS refuses an optional
/// iteration that matches empty (and backtracks into the other ways the body
/// could match), and clears the groups inside the body at every iteration;
/// the engine accepts one empty iteration and keeps group values from earlier
/// iterations. These fields say when that can change a result.
#[derive(Clone, Copy)]
struct Shape {
    /// Can match the empty string.
    nullable: bool,
    /// Can match a non-empty string.
    consumes: bool,
    /// No way of matching empty is preferred over a way of matching
    /// non-empty, so an empty match is only taken when nothing else fits.
    empty_last: bool,
    /// Contains an assertion (whose empty matches may or may not succeed).
    assertion: bool,
    /// Contains a capture group.
    captures: bool,
    /// Contains a capture group that a match of the piece can leave unset.
    skippable_captures: bool,
}

impl Shape {
    /// One character.
    const CHAR: Shape = Shape {
        nullable: false,
        consumes: true,
        empty_last: true,
        assertion: false,
        captures: false,
        skippable_captures: false,
    };
    /// Nothing.
    const EMPTY: Shape = Shape { nullable: true, consumes: false, ..Shape::CHAR };
    /// `^`, `$`, `\b`, `\B`.
    const ASSERTION: Shape = Shape { assertion: true, ..Shape::EMPTY };

    /// `self` followed by `next`.
    fn then(self, next: Shape) -> Shape {
        Shape {
            nullable: self.nullable && next.nullable,
            consumes: self.consumes || next.consumes,
            // Two empty ways through `self` that differ in an assertion could
            // put an empty match ahead of a longer one through `next`.
            empty_last: !(self.nullable && next.nullable)
                || (self.empty_last && next.empty_last && !(self.assertion && next.consumes)),
            assertion: self.assertion || next.assertion,
            captures: self.captures || next.captures,
            skippable_captures: self.skippable_captures || next.skippable_captures,
        }
    }

    /// `self` as the earlier alternative, `next` as the later one.
    fn or(self, next: Shape) -> Shape {
        Shape {
            nullable: self.nullable || next.nullable,
            consumes: self.consumes || next.consumes,
            empty_last: self.empty_last && next.empty_last && !(self.nullable && next.consumes),
            assertion: self.assertion || next.assertion,
            captures: self.captures || next.captures,
            // Taking one alternative skips the groups of the other.
            skippable_captures: self.captures || next.captures,
        }
    }

    /// `self` repeated `min..=max` times (`None`: unbounded).
    fn repeat(self, min: u64, max: Option<u64>, lazy: bool) -> Shape {
        let nullable = self.nullable || min == 0;
        let empty_last = if !nullable {
            true
        } else if lazy {
            // Lazy prefers fewer iterations: stopping early is preferred.
            !self.consumes || max == Some(0)
        } else {
            self.empty_last && !(self.nullable && self.assertion)
        };
        Shape {
            nullable,
            consumes: self.consumes && max != Some(0),
            empty_last,
            assertion: self.assertion,
            captures: self.captures,
            skippable_captures: self.skippable_captures || (min == 0 && self.captures),
        }
    }
}

enum ClassAtom {
    Char(char),
    Set(ClassUnicode),
}

struct Parser<'s> {
    src: &'s str,
    pos: usize,
    flags: JsFlags,
    out: String,
    /// Capture groups in the whole pattern: decides whether a non-`u` `\N` is
    /// a backreference or an Annex B octal escape.
    capture_count: usize,
    /// Names of all named groups; once there is one, `\k` must be a reference.
    group_names: Vec<String>,
    /// Names defined so far, to reject duplicates.
    defined_names: Vec<String>,
    depth: usize,
    /// Offset of the group opened at the greatest depth, and that depth.
    deepest: (usize, usize),
}

impl<'s> Parser<'s> {
    fn new(src: &'s str, flags: JsFlags) -> Self {
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
        }
    }

    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(n)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
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

    /// The engine counts nesting its own way (groups, repetitions,
    /// alternations, concatenations, classes) and refuses more than 250
    /// levels. Each JS group adds at most four, so only deep patterns need
    /// the check.
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

    fn disjunction(&mut self) -> Result<Shape, JsRegexError> {
        let mut shape = self.alternative()?;
        while self.eat('|') {
            self.out.push('|');
            shape = shape.or(self.alternative()?);
        }
        Ok(shape)
    }

    fn alternative(&mut self) -> Result<Shape, JsRegexError> {
        let mut shape = Shape::EMPTY;
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            shape = shape.then(self.term()?);
        }
        Ok(shape)
    }

    fn term(&mut self) -> Result<Shape, JsRegexError> {
        let start = self.pos;
        let Some(c) = self.peek() else {
            return Ok(Shape::EMPTY);
        };
        let unicode = self.flags.unicode;
        // Assertions return early: a quantifier after one then fails as
        // "nothing to repeat", like JavaScript.
        let (shape, astral) = match c {
            '^' => {
                self.bump();
                // CRLF mode is the nearest the engine offers to JS line
                // terminators; it misses \u2028/\u2029 and never matches
                // between \r and \n (JavaScript does).
                self.out.push_str(if self.flags.multiline { "(?mR:^)" } else { r"\A" });
                return Ok(Shape::ASSERTION);
            }
            '$' => {
                self.bump();
                // Without `m`, JS `$` is only the very end (no final-newline
                // allowance), which is `\z`.
                self.out.push_str(if self.flags.multiline { "(?mR:$)" } else { r"\z" });
                return Ok(Shape::ASSERTION);
            }
            '\\' if matches!(self.peek_at(1), Some('b' | 'B')) => {
                let negated = self.peek_at(1) == Some('B');
                self.pos += 2;
                // JS word characters are ASCII only.
                self.out.push_str(if negated { r"(?-u:\B)" } else { r"(?-u:\b)" });
                return Ok(Shape::ASSERTION);
            }
            '\\' => (Shape::CHAR, self.atom_escape()?),
            '(' => (self.group()?, false),
            '.' => {
                self.bump();
                let set = self.dot_set();
                self.emit_set(&set);
                (Shape::CHAR, false)
            }
            '[' => {
                self.class()?;
                (Shape::CHAR, false)
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
                self.emit_char(c, start)?;
                (Shape::CHAR, false)
            }
            '}' | ']' if unicode => return Err(syntax("lone quantifier brackets", start)),
            _ => {
                self.bump();
                self.emit_char(c, start)?;
                (Shape::CHAR, !unicode && is_astral(c))
            }
        };
        self.quantifier(start, shape, astral)
    }

    /// Parses an optional quantifier after the atom at `atom_start`, which
    /// has `shape`. `astral` says the atom is an astral character in non-`u`
    /// mode, where JavaScript would repeat only its second UTF-16 code unit.
    fn quantifier(&mut self, atom_start: usize, shape: Shape, astral: bool) -> Result<Shape, JsRegexError> {
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
                None => return Ok(shape),
            },
            _ => return Ok(shape),
        };
        if astral {
            return Err(unsupported("quantifier on an astral character without the `u` flag", atom_start, UTF16_HINT));
        }
        let lazy = self.eat('?');
        self.check_repetition(atom_start, shape, min, max)?;
        self.out.push_str(&text);
        if lazy {
            self.out.push('?');
        }
        Ok(shape.repeat(min, max, lazy))
    }

    /// Rejects repetitions where JavaScript's iteration rules (see [`Shape`])
    /// would give a different match or different group values.
    fn check_repetition(
        &self,
        atom_start: usize,
        shape: Shape,
        min: u64,
        max: Option<u64>,
    ) -> Result<(), JsRegexError> {
        let optional_iterations = max.is_none_or(|max| max > min);
        if optional_iterations && shape.nullable && !shape.empty_last {
            return Err(unsupported(
                "repetition of something that prefers to match empty",
                atom_start,
                " (JavaScript skips empty iterations; the engine takes them)",
            ));
        }
        // An unbounded loop drops a repeated empty iteration like JS does, so
        // only bounded ones can overwrite a group with an empty match.
        let repeats = max.is_none_or(|max| max > 1);
        let bounded_empty = shape.nullable && max.is_some_and(|max| max > min);
        if shape.captures && repeats && (shape.skippable_captures || bounded_empty) {
            return Err(unsupported(
                "capture group in a repetition that can skip it or match empty",
                atom_start,
                " (JavaScript resets the group on every iteration; the engine keeps earlier values)",
            ));
        }
        Ok(())
    }

    /// Reads `{n}`, `{n,}` or `{n,m}` at the current position without
    /// consuming it: `(min, max, end)`, where `max` is `None` if unbounded.
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

    fn group(&mut self) -> Result<Shape, JsRegexError> {
        let start = self.pos;
        self.bump();
        if self.depth == MAX_NESTING {
            return Err(unsupported(format!("nesting deeper than {MAX_NESTING}"), start, ""));
        }
        let capturing = !self.src[self.pos..].starts_with("?:");
        if self.eat('?') {
            let lookaround = match (self.peek(), self.peek_at(1)) {
                (Some(':'), _) => {
                    self.bump();
                    self.out.push_str("(?:");
                    None
                }
                (Some('='), _) => Some("lookahead (?="),
                (Some('!'), _) => Some("negative lookahead (?!"),
                (Some('<'), Some('=')) => Some("lookbehind (?<="),
                (Some('<'), Some('!')) => Some("negative lookbehind (?<!"),
                (Some('<'), _) => {
                    self.bump();
                    self.named_group_open(start)?;
                    None
                }
                _ => return Err(self.bad_group(start)),
            };
            if let Some(feature) = lookaround {
                return Err(unsupported(feature, start, ENGINE_HINT));
            }
        } else {
            self.out.push('(');
        }
        self.depth += 1;
        if self.depth > self.deepest.1 {
            self.deepest = (start, self.depth);
        }
        let mut shape = self.disjunction()?;
        self.depth -= 1;
        if !self.eat(')') {
            return Err(syntax("unterminated group", start));
        }
        self.out.push(')');
        shape.captures |= capturing;
        Ok(shape)
    }

    fn named_group_open(&mut self, start: usize) -> Result<(), JsRegexError> {
        let (name, end) =
            parse_group_name(self.src, self.pos).ok_or_else(|| syntax("invalid capture group name", self.pos))?;
        if self.defined_names.contains(&name) {
            return Err(syntax("duplicate capture group name", start));
        }
        // The engine takes fewer names than JS (no `$`, no ZWJ/ZWNJ, no
        // marks); renaming would break `$<name>`, so refuse.
        let mut chars = name.chars();
        let engine_ok = chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
            && chars.all(|c| c == '_' || c.is_alphanumeric());
        if !engine_ok {
            return Err(unsupported(
                format!("capture group name <{name}>"),
                start,
                " (the engine only accepts letters, digits and `_` in names)",
            ));
        }
        self.pos = end;
        self.out.push_str("(?P<");
        self.out.push_str(&name);
        self.out.push('>');
        self.defined_names.push(name);
        Ok(())
    }

    /// `(?` followed by something that is not a JS group. ES2025 modifier
    /// groups such as `(?i:…)` get their own message.
    fn bad_group(&self, start: usize) -> JsRegexError {
        let rest = &self.src[self.pos..];
        let len = rest.find(|c: char| !matches!(c, 'i' | 'm' | 's' | '-')).unwrap_or(rest.len());
        let modifiers = &rest[..len];
        if !modifiers.is_empty() && modifiers.matches('-').count() <= 1 && rest[len..].starts_with(':') {
            return unsupported(
                format!("modifiers group (?{modifiers}:"),
                start,
                " (ES2025 modifiers are not supported)",
            );
        }
        syntax("invalid group", start)
    }

    fn class(&mut self) -> Result<(), JsRegexError> {
        let start = self.pos;
        self.bump();
        let negated = self.eat('^');
        let mut set = ClassUnicode::empty();
        loop {
            let atom_start = self.pos;
            match self.peek() {
                None => return Err(syntax("unterminated character class", start)),
                Some(']') => {
                    self.bump();
                    break;
                }
                Some(_) => {}
            }
            let first = self.class_atom()?;
            if self.peek() != Some('-') || matches!(self.peek_at(1), None | Some(']')) {
                add_atom(&mut set, first);
                continue;
            }
            let dash = self.pos;
            self.bump();
            match (first, self.class_atom()?) {
                (ClassAtom::Char(a), ClassAtom::Char(b)) => {
                    if a > b {
                        return Err(syntax("range out of order in character class", atom_start));
                    }
                    set.push(ClassUnicodeRange::new(a, b));
                }
                (first, second) => {
                    if self.flags.unicode {
                        return Err(syntax("invalid character class", dash));
                    }
                    // Annex B: a class escape cannot bound a range, so the
                    // `-` is a literal.
                    add_atom(&mut set, first);
                    add_atom(&mut set, ClassAtom::Char('-'));
                    add_atom(&mut set, second);
                }
            }
        }
        // JS folds the members, then inverts (the matcher negates the
        // case-insensitive membership test).
        self.apply_ignore_case(&mut set, start)?;
        if negated {
            set.negate();
        }
        self.emit_set(&set);
        Ok(())
    }

    fn class_atom(&mut self) -> Result<ClassAtom, JsRegexError> {
        let start = self.pos;
        let c = self.peek().expect("caller checked for end of pattern");
        if c == '\\' {
            return Ok(match self.escape(true)? {
                Escape::Char(cp) => ClassAtom::Char(scalar(cp, start)?),
                Escape::Set(set) => ClassAtom::Set(set),
                Escape::Backslash => ClassAtom::Char('\\'),
            });
        }
        self.bump();
        if !self.flags.unicode && is_astral(c) {
            // JS would put each UTF-16 half in the class on its own.
            return Err(unsupported("astral character in a character class without the `u` flag", start, UTF16_HINT));
        }
        Ok(ClassAtom::Char(c))
    }

    /// An escape outside a class (`\b`/`\B` are handled by the caller).
    /// Returns whether it produced an astral character in non-`u` mode.
    fn atom_escape(&mut self) -> Result<bool, JsRegexError> {
        let start = self.pos;
        match self.escape(false)? {
            Escape::Char(cp) => {
                let c = scalar(cp, start)?;
                self.emit_char(c, start)?;
                Ok(!self.flags.unicode && is_astral(c))
            }
            Escape::Set(mut set) => {
                self.apply_ignore_case(&mut set, start)?;
                self.emit_set(&set);
                Ok(false)
            }
            Escape::Backslash => {
                self.emit_char('\\', start)?;
                Ok(false)
            }
        }
    }

    /// Parses the escape at the current `\`.
    fn escape(&mut self, in_class: bool) -> Result<Escape, JsRegexError> {
        let start = self.pos;
        let unicode = self.flags.unicode;
        self.bump();
        let Some(c) = self.peek() else {
            return Err(syntax("`\\` at end of pattern", start));
        };
        let simple = |value: char| Ok(Escape::Char(value as u32));
        match c {
            'd' | 'D' | 's' | 'S' | 'w' | 'W' => {
                self.bump();
                Ok(Escape::Set(self.class_escape_set(c)))
            }
            'p' | 'P' if unicode => {
                self.bump();
                self.property_escape(start, c == 'P').map(Escape::Set)
            }
            'f' | 'n' | 'r' | 't' | 'v' => {
                self.bump();
                let value = match c {
                    'f' => 0x0C,
                    'n' => 0x0A,
                    'r' => 0x0D,
                    't' => 0x09,
                    _ => 0x0B,
                };
                Ok(Escape::Char(value))
            }
            // Inside a class `\b` is backspace.
            'b' if in_class => {
                self.bump();
                Ok(Escape::Char(0x08))
            }
            'c' => match self.peek_at(1) {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.pos += 2;
                    Ok(Escape::Char(l as u32 % 32))
                }
                // Annex B ClassControlLetter.
                Some(l) if in_class && !unicode && (l.is_ascii_digit() || l == '_') => {
                    self.pos += 2;
                    Ok(Escape::Char(l as u32 % 32))
                }
                _ if unicode => Err(syntax("invalid unicode escape", start)),
                _ => Ok(Escape::Backslash),
            },
            '0' if !self.peek_at(1).is_some_and(|d| d.is_ascii_digit()) => {
                self.bump();
                Ok(Escape::Char(0))
            }
            '0'..='9' => self.decimal_escape(start, in_class),
            'x' => {
                self.bump();
                match self.hex_digits(2) {
                    Some(value) => Ok(Escape::Char(value)),
                    None if unicode => Err(syntax("invalid escape", start)),
                    // Annex B identity escape.
                    None => simple('x'),
                }
            }
            'u' => {
                self.bump();
                match self.unicode_escape(in_class) {
                    Some(value) => Ok(Escape::Char(value)),
                    None if unicode => Err(syntax("invalid unicode escape", start)),
                    // Annex B: `\u` without four hex digits is `u`, so
                    // `/\u{2}/` is `uu`.
                    None => simple('u'),
                }
            }
            'k' if unicode || !self.group_names.is_empty() => {
                if in_class {
                    return Err(syntax("invalid escape", start));
                }
                self.bump();
                let name = self
                    .eat('<')
                    .then(|| parse_group_name(self.src, self.pos))
                    .flatten()
                    .ok_or_else(|| syntax("invalid named reference", start))?
                    .0;
                if !self.group_names.contains(&name) {
                    return Err(syntax("invalid named capture referenced", start));
                }
                Err(unsupported(format!("backreference \\k<{name}>"), start, ENGINE_HINT))
            }
            '-' if in_class && unicode => {
                self.bump();
                simple('-')
            }
            '^' | '$' | '\\' | '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '/' => {
                self.bump();
                simple(c)
            }
            _ if unicode => Err(syntax("invalid escape", start)),
            // Annex B identity escape: any other character stands for itself.
            _ => {
                self.bump();
                simple(c)
            }
        }
    }

    /// `\1`…`\9…` and `\0` followed by a digit.
    fn decimal_escape(&mut self, start: usize, in_class: bool) -> Result<Escape, JsRegexError> {
        let digits_len = self.src[self.pos..].find(|c: char| !c.is_ascii_digit()).unwrap_or(self.src.len() - self.pos);
        let digits = &self.src[self.pos..self.pos + digits_len];
        let first = digits.as_bytes()[0];
        if self.flags.unicode {
            if first == b'0' {
                return Err(syntax("invalid decimal escape", start));
            }
            if in_class {
                return Err(syntax("invalid class escape", start));
            }
        }
        if !in_class && first != b'0' {
            let number = digits.bytes().fold(0u64, |n, d| n.saturating_mul(10).saturating_add(u64::from(d - b'0')));
            if number <= self.capture_count as u64 {
                return Err(unsupported(format!("backreference \\{digits}"), start, ENGINE_HINT));
            }
            if self.flags.unicode {
                return Err(syntax("invalid escape", start));
            }
        }
        // Annex B: `\8` and `\9` are identity escapes, the rest legacy octal
        // (at most three digits, at most 0o377).
        self.bump();
        if first >= b'8' {
            return Ok(Escape::Char(u32::from(first)));
        }
        let mut value = u32::from(first - b'0');
        let max_digits = if first <= b'3' { 3 } else { 2 };
        for _ in 1..max_digits {
            match self.peek() {
                Some(d @ '0'..='7') => {
                    self.bump();
                    value = value * 8 + (d as u32 - '0' as u32);
                }
                _ => break,
            }
        }
        Ok(Escape::Char(value))
    }

    /// After `\u`: `\uHHHH` (joining a surrogate pair written as two escapes)
    /// or, in `u` mode, `\u{H…}`. `None` if no valid escape follows.
    fn unicode_escape(&mut self, in_class: bool) -> Option<u32> {
        if self.flags.unicode && self.peek() == Some('{') {
            let start = self.pos;
            self.bump();
            let len = self.src[self.pos..].find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(self.src.len() - self.pos);
            let value = u32::from_str_radix(&self.src[self.pos..self.pos + len], 16).ok().filter(|&v| v <= 0x10FFFF);
            self.pos += len;
            return match value {
                Some(value) if self.eat('}') => Some(value),
                _ => {
                    self.pos = start;
                    None
                }
            };
        }
        let high = self.hex_digits(4)?;
        // In a non-`u` class each escape is one UTF-16 code unit of its own.
        let pairs = self.flags.unicode || !in_class;
        if pairs && (0xD800..0xDC00).contains(&high) && self.src[self.pos..].starts_with("\\u") {
            let save = self.pos;
            self.pos += 2;
            match self.hex_digits(4) {
                Some(low) if (0xDC00..0xE000).contains(&low) => {
                    return Some(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00));
                }
                _ => self.pos = save,
            }
        }
        Some(high)
    }

    /// Exactly `n` hex digits, consumed only if all are there.
    fn hex_digits(&mut self, n: usize) -> Option<u32> {
        let text = self.src.get(self.pos..self.pos + n)?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.pos += n;
        u32::from_str_radix(text, 16).ok()
    }

    /// `\p{…}` / `\P{…}` in `u` mode, validated against the names JS accepts
    /// and resolved with the engine's Unicode tables.
    fn property_escape(&mut self, start: usize, negated: bool) -> Result<ClassUnicode, JsRegexError> {
        let invalid = || syntax("invalid property name", start);
        if !self.eat('{') {
            return Err(invalid());
        }
        let len = self.src[self.pos..].find('}').ok_or_else(invalid)?;
        let body = &self.src[self.pos..self.pos + len];
        self.pos += len + 1;
        let word = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        let valid = match body.split_once('=') {
            Some((name, value)) => match name {
                "General_Category" | "gc" => GENERAL_CATEGORIES.contains(&value),
                // Script names are left to the engine's (looser) lookup.
                "Script" | "sc" | "Script_Extensions" | "scx" => word(value),
                _ => false,
            },
            None => GENERAL_CATEGORIES.contains(&body) || BINARY_PROPERTIES.contains(&body),
        };
        if !valid {
            return Err(invalid());
        }
        let general_category = body.strip_prefix("gc=").or(body.strip_prefix("General_Category="));
        let surrogates = matches!(general_category.unwrap_or(body), "Cs" | "Surrogate");
        // UTF-8 text has no surrogates, and the engine has no name for them.
        let mut set = if surrogates { Some(ClassUnicode::empty()) } else { parse_class(&format!("\\p{{{body}}}")) }
            .ok_or_else(|| {
                unsupported(
                    format!("Unicode property \\p{{{body}}}"),
                    start,
                    " (the engine's Unicode tables do not have it)",
                )
            })?;
        if negated {
            set.negate();
        }
        Ok(set)
    }

    /// `\d \D \s \S \w \W` with JavaScript's (ASCII, explicit) meaning.
    fn class_escape_set(&self, c: char) -> ClassUnicode {
        let mut set = match c.to_ascii_lowercase() {
            'd' => ranges(&[('0', '9')]),
            's' => ranges(JS_WHITESPACE),
            _ => {
                let mut word = ranges(&[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')]);
                // With `iu`, JS adds the characters whose case folding is an
                // ASCII word character: ſ (U+017F) and K (U+212A).
                if self.flags.unicode && self.flags.ignore_case {
                    word.union(&ranges(&[('\u{17F}', '\u{17F}'), ('\u{212A}', '\u{212A}')]));
                }
                word
            }
        };
        if c.is_ascii_uppercase() {
            set.negate();
        }
        set
    }

    fn dot_set(&self) -> ClassUnicode {
        let mut set = ranges(JS_LINE_TERMINATORS);
        if self.flags.dot_all {
            set = ClassUnicode::empty();
        }
        set.negate();
        set
    }

    /// With the `i` flag, widens `set` to every character JS would consider
    /// equal to a member (JS Canonicalize; differs with and without `u`).
    fn apply_ignore_case(&self, set: &mut ClassUnicode, offset: usize) -> Result<(), JsRegexError> {
        if !self.flags.ignore_case {
            return Ok(());
        }
        if self.flags.unicode {
            // `u` mode canonicalizes with simple case folding, which is what
            // the engine's tables hold.
            set.try_case_fold_simple().map_err(|_| {
                unsupported(
                    "case-insensitive matching",
                    offset,
                    " (regex-syntax was built without Unicode case tables)",
                )
            })
        } else {
            legacy_case_closure(set);
            Ok(())
        }
    }

    fn emit_char(&mut self, c: char, offset: usize) -> Result<(), JsRegexError> {
        if self.flags.ignore_case {
            let mut set = ranges(&[(c, c)]);
            self.apply_ignore_case(&mut set, offset)?;
            self.emit_set(&set);
        } else {
            push_literal(&mut self.out, c);
        }
        Ok(())
    }

    /// Emits a set as a single engine atom, writing every class member as
    /// `\x{…}` so the engine's class syntax (`&&`, `--`, `~~`, `[`) never
    /// applies.
    fn emit_set(&mut self, set: &ClassUnicode) {
        let ranges = set.ranges();
        match ranges {
            [] => self.out.push_str(NEVER),
            [r] if r.start() == r.end() => push_literal(&mut self.out, r.start()),
            [r] if r.start() == '\0' && r.end() == char::MAX => self.out.push_str("(?s:.)"),
            _ => {
                let mut complement = set.clone();
                complement.negate();
                let (open, body) =
                    if complement.ranges().len() < ranges.len() { ("[^", complement.ranges()) } else { ("[", ranges) };
                self.out.push_str(open);
                for r in body {
                    push_hex(&mut self.out, r.start());
                    if r.end() as u32 > r.start() as u32 + 1 {
                        self.out.push('-');
                    }
                    if r.end() != r.start() {
                        push_hex(&mut self.out, r.end());
                    }
                }
                self.out.push(']');
            }
        }
    }
}

/// Counts capture groups and collects group names before parsing, since JS
/// lets `\2` and `\k<name>` refer forward.
fn scan_groups(src: &str) -> (usize, Vec<String>) {
    // Byte scanning is safe: every syntax character is ASCII, and UTF-8
    // continuation bytes never look like ASCII.
    let bytes = src.as_bytes();
    let (mut count, mut names, mut in_class) = (0, Vec::new(), false);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'[' => in_class = true,
            b']' => in_class = false,
            b'(' if !in_class => {
                if bytes.get(i + 1) != Some(&b'?') {
                    count += 1;
                } else if bytes.get(i + 2) == Some(&b'<') && !matches!(bytes.get(i + 3), Some(b'=' | b'!')) {
                    count += 1;
                    if let Some((name, _)) = parse_group_name(src, i + 3) {
                        names.push(name);
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    (count, names)
}

/// Parses a JS GroupName body starting at byte `pos` (just after `<`) up to
/// and including `>`: the decoded name and the position after `>`.
fn parse_group_name(src: &str, mut pos: usize) -> Option<(String, usize)> {
    let mut name = String::new();
    loop {
        let c = src[pos..].chars().next()?;
        pos += c.len_utf8();
        let c = match c {
            '>' => break,
            '\\' => {
                let (c, end) = name_escape(src, pos)?;
                pos = end;
                c
            }
            c => c,
        };
        let ok = if name.is_empty() {
            c == '$' || c == '_' || class_contains(id_start(), c)
        } else {
            matches!(c, '$' | '\u{200C}' | '\u{200D}') || class_contains(id_continue(), c)
        };
        if !ok {
            return None;
        }
        name.push(c);
    }
    (!name.is_empty()).then_some((name, pos))
}

/// `\uHHHH` (with surrogate pairs) or `\u{H…}` inside a group name; `pos` is
/// just after the backslash.
fn name_escape(src: &str, pos: usize) -> Option<(char, usize)> {
    let rest = src.get(pos..)?.strip_prefix('u')?;
    let pos = pos + 1;
    if let Some(braced) = rest.strip_prefix('{') {
        let end = braced.find('}')?;
        let value = u32::from_str_radix(&braced[..end], 16).ok()?;
        return Some((char::from_u32(value)?, pos + end + 2));
    }
    let hex4 = |s: &str| {
        s.get(..4).filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit())).and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    let high = hex4(rest)?;
    if (0xD800..0xDC00).contains(&high) {
        let low = rest.get(4..)?.strip_prefix("\\u").and_then(hex4)?;
        let c = char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low.checked_sub(0xDC00)?))?;
        return Some((c, pos + 10));
    }
    Some((char::from_u32(high)?, pos + 4))
}

fn add_atom(set: &mut ClassUnicode, atom: ClassAtom) {
    match atom {
        ClassAtom::Char(c) => set.push(ClassUnicodeRange::new(c, c)),
        ClassAtom::Set(other) => set.union(&other),
    }
}

/// A code point from an escape as a `char`; lone surrogates have no UTF-8 form.
fn scalar(cp: u32, offset: usize) -> Result<char, JsRegexError> {
    char::from_u32(cp).ok_or_else(|| unsupported(format!("lone surrogate \\u{cp:04X}"), offset, SURROGATE_HINT))
}

fn is_astral(c: char) -> bool {
    c as u32 > 0xFFFF
}

fn ranges(pairs: &[(char, char)]) -> ClassUnicode {
    ClassUnicode::new(pairs.iter().map(|&(a, b)| ClassUnicodeRange::new(a, b)))
}

fn class_contains(set: &ClassUnicode, c: char) -> bool {
    set.ranges()
        .binary_search_by(|r| {
            if r.end() < c {
                std::cmp::Ordering::Less
            } else if r.start() > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// The class the engine builds for `pattern` (a lone `\p{…}`), if any.
fn parse_class(pattern: &str) -> Option<ClassUnicode> {
    match regex_syntax::Parser::new().parse(pattern).ok()?.into_kind() {
        HirKind::Class(Class::Unicode(set)) => Some(set),
        // A one-character property such as `Zl` comes back as a literal.
        HirKind::Literal(lit) => {
            let mut chars = std::str::from_utf8(&lit.0).ok()?.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Some(ranges(&[(c, c)])),
                _ => None,
            }
        }
        _ => None,
    }
}

fn id_start() -> &'static ClassUnicode {
    static SET: OnceLock<ClassUnicode> = OnceLock::new();
    SET.get_or_init(|| parse_class(r"\p{ID_Start}").unwrap_or_else(ClassUnicode::empty))
}

fn id_continue() -> &'static ClassUnicode {
    static SET: OnceLock<ClassUnicode> = OnceLock::new();
    SET.get_or_init(|| parse_class(r"\p{ID_Continue}").unwrap_or_else(ClassUnicode::empty))
}

/// A literal outside a class: meta characters escaped, anything invisible or
/// unusual as `\x{…}` so the emitted pattern stays readable.
fn push_literal(out: &mut String, c: char) {
    if regex_syntax::is_meta_character(c) {
        out.push('\\');
        out.push(c);
    } else if c.is_ascii_graphic() || c == ' ' || (!c.is_ascii() && c.is_alphanumeric()) {
        out.push(c);
    } else {
        push_hex(out, c);
    }
}

fn push_hex(out: &mut String, c: char) {
    out.push_str(&format!("\\x{{{:X}}}", c as u32));
}

/// JS LineTerminator: what `.` (without `s`) does not match.
const JS_LINE_TERMINATORS: &[(char, char)] = &[('\n', '\n'), ('\r', '\r'), ('\u{2028}', '\u{2029}')];

/// JS WhiteSpace and LineTerminator, i.e. `\s`. Not the engine's `\s`, which
/// lacks U+FEFF and has U+0085.
const JS_WHITESPACE: &[(char, char)] = &[
    ('\t', '\r'),
    (' ', ' '),
    ('\u{A0}', '\u{A0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200A}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202F}', '\u{202F}'),
    ('\u{205F}', '\u{205F}'),
    ('\u{3000}', '\u{3000}'),
    ('\u{FEFF}', '\u{FEFF}'),
];

/// General_Category values and aliases JS accepts in `\p{…}`.
#[rustfmt::skip]
const GENERAL_CATEGORIES: &[&str] = &[
    "C", "Cased_Letter", "Cc", "Cf", "Close_Punctuation", "Cn", "Co", "Combining_Mark", "Connector_Punctuation",
    "Control", "Cs", "Currency_Symbol", "Dash_Punctuation", "Decimal_Number", "Enclosing_Mark", "Final_Punctuation",
    "Format", "Initial_Punctuation", "L", "LC", "Letter", "Letter_Number", "Line_Separator", "Ll", "Lm", "Lo",
    "Lowercase_Letter", "Lt", "Lu", "M", "Mark", "Math_Symbol", "Mc", "Me", "Mn", "Modifier_Letter",
    "Modifier_Symbol", "N", "Nd", "Nl", "No", "Nonspacing_Mark", "Number", "Open_Punctuation", "Other",
    "Other_Letter", "Other_Number", "Other_Punctuation", "Other_Symbol", "P", "Paragraph_Separator", "Pc", "Pd",
    "Pe", "Pf", "Pi", "Po", "Private_Use", "Ps", "Punctuation", "S", "Sc", "Separator", "Sk", "Sm", "So",
    "Space_Separator", "Spacing_Mark", "Surrogate", "Symbol", "Titlecase_Letter", "Unassigned",
    "Uppercase_Letter", "Z", "Zl", "Zp", "Zs", "cntrl", "digit", "punct",
];

/// Binary Unicode properties (and aliases) JS accepts in `\p{…}` without `v`.
#[rustfmt::skip]
const BINARY_PROPERTIES: &[&str] = &[
    "ASCII", "ASCII_Hex_Digit", "AHex", "Alphabetic", "Alpha", "Any", "Assigned", "Bidi_Control", "Bidi_C",
    "Bidi_Mirrored", "Bidi_M", "Case_Ignorable", "CI", "Cased", "Changes_When_Casefolded", "CWCF",
    "Changes_When_Casemapped", "CWCM", "Changes_When_Lowercased", "CWL", "Changes_When_NFKC_Casefolded", "CWKCF",
    "Changes_When_Titlecased", "CWT", "Changes_When_Uppercased", "CWU", "Dash", "Default_Ignorable_Code_Point",
    "DI", "Deprecated", "Dep", "Diacritic", "Dia", "Emoji", "Emoji_Component", "EComp", "Emoji_Modifier", "EMod",
    "Emoji_Modifier_Base", "EBase", "Emoji_Presentation", "EPres", "Extended_Pictographic", "ExtPict", "Extender",
    "Ext", "Grapheme_Base", "Gr_Base", "Grapheme_Extend", "Gr_Ext", "Hex_Digit", "Hex", "IDS_Binary_Operator",
    "IDSB", "IDS_Trinary_Operator", "IDST", "ID_Continue", "IDC", "ID_Start", "IDS", "Ideographic", "Ideo",
    "Join_Control", "Join_C", "Logical_Order_Exception", "LOE", "Lowercase", "Lower", "Math",
    "Noncharacter_Code_Point", "NChar", "Pattern_Syntax", "Pat_Syn", "Pattern_White_Space", "Pat_WS",
    "Quotation_Mark", "QMark", "Radical", "Regional_Indicator", "RI", "Sentence_Terminal", "STerm", "Soft_Dotted",
    "SD", "Terminal_Punctuation", "Term", "Unified_Ideograph", "UIdeo", "Uppercase", "Upper", "Variation_Selector",
    "VS", "White_Space", "space", "XID_Continue", "XIDC", "XID_Start", "XIDS",
];

/// JS Canonicalize without `u` (ES2024 22.2.2.7.3): the upper case if it is a
/// single UTF-16 code unit, except that nothing non-ASCII maps into ASCII
/// (so `ſ` and the Kelvin sign stay apart from `s` and `k`).
fn legacy_canonicalize(c: char) -> char {
    if is_astral(c) {
        // Seen as two surrogates, which have no case.
        return c;
    }
    let mut upper = c.to_uppercase();
    match (upper.next(), upper.next()) {
        (Some(u), None) if !is_astral(u) && (c.is_ascii() || !u.is_ascii()) => u,
        _ => c,
    }
}

/// Groups of BMP characters that share a non-`u` canonical form (only groups
/// of two or more), and each member's group.
struct LegacyCaseTable {
    groups: Vec<Vec<char>>,
    group_of: HashMap<char, usize>,
}

fn legacy_case_table() -> &'static LegacyCaseTable {
    static TABLE: OnceLock<LegacyCaseTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut by_canon: HashMap<char, Vec<char>> = HashMap::new();
        for c in (0..=0xFFFF).filter_map(char::from_u32) {
            by_canon.entry(legacy_canonicalize(c)).or_default().push(c);
        }
        let mut groups: Vec<Vec<char>> = by_canon.into_values().filter(|g| g.len() > 1).collect();
        groups.sort();
        let group_of = groups.iter().enumerate().flat_map(|(i, g)| g.iter().map(move |&c| (c, i))).collect();
        LegacyCaseTable { groups, group_of }
    })
}

/// Adds to `set` every character with the same non-`u` canonical form as a
/// member.
fn legacy_case_closure(set: &mut ClassUnicode) {
    let table = legacy_case_table();
    let size: u64 = set.ranges().iter().map(|r| u64::from(r.end() as u32 - r.start() as u32) + 1).sum();
    let mut hits = Vec::new();
    if size <= table.groups.len() as u64 {
        for r in set.ranges() {
            for c in (r.start() as u32..=r.end() as u32).filter_map(char::from_u32) {
                hits.extend(table.group_of.get(&c).copied());
            }
        }
    } else {
        hits.extend((0..table.groups.len()).filter(|&i| table.groups[i].iter().any(|&c| class_contains(set, c))));
    }
    let extra: Vec<ClassUnicodeRange> = hits
        .into_iter()
        .flat_map(|i| &table.groups[i])
        .filter(|&&c| !class_contains(set, c))
        .map(|&c| ClassUnicodeRange::new(c, c))
        .collect();
    if !extra.is_empty() {
        set.union(&ClassUnicode::new(extra));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_automata::meta::Regex;
    use regex_automata::util::primitives::PatternID;
    use regex_automata::Input;

    type Groups<'a> = &'a [Option<&'a str>];

    /// (source, flags, haystack, number of capture groups, every match JS's
    /// `matchAll` yields: the whole match, then each group).
    /// Expectations came from Node 20:
    /// `[...hay.matchAll(new RegExp(src, flags + "g"))]`.
    #[rustfmt::skip]
    const MATCH_CASES: &[(&str, &str, &str, usize, &[Groups])] = &[
    (r"\n\r\t\v\f", "", "x\u{a}\u{d}\u{9}\u{b}\u{c}y", 0, &[&[Some("\u{a}\u{d}\u{9}\u{b}\u{c}")]]),
    (r"a\0b", "", "a\u{0}b a0b", 0, &[&[Some("a\u{0}b")]]),
    (r"\0", "u", "\u{0}", 0, &[&[Some("\u{0}")]]),
    (r"\cA\cz\cJ", "", "\u{1}\u{1a}\u{a}", 0, &[&[Some("\u{1}\u{1a}\u{a}")]]),
    (r"\x41\x7e\xe9", "", r"A~é", 0, &[&[Some(r"A~é")]]),
    (r"\u00e9\u0041", "", r"caféA", 0, &[&[Some(r"éA")]]),
    (r"\uD83D\uDE00", "", r"x😀y", 0, &[&[Some(r"😀")]]),
    (r"\uD83D\uDE00", "u", r"x😀y", 0, &[&[Some(r"😀")]]),
    (r"\u{1F600}+", "u", r"😀😀!", 0, &[&[Some(r"😀😀")]]),
    (r"\u{41}", "u", r"A", 0, &[&[Some(r"A")]]),
    (r"\u{2}", "", r"uuu u", 0, &[&[Some(r"uu")]]),
    (r"\x4", "", r"x4", 0, &[&[Some(r"x4")]]),
    (r"\u12", "", r"u12", 0, &[&[Some(r"u12")]]),
    (r"a\/b", "", r"a/b", 0, &[&[Some(r"a/b")]]),
    (r"\^\$\.\*\+\?\(\)\[\]\{\}\|\\", "", r"x^$.*+?()[]{}|\y", 0, &[&[Some(r"^$.*+?()[]{}|\")]]),
    (r"\^\$\.\*\+\?\(\)\[\]\{\}\|\/", "u", r"^$.*+?()[]{}|/", 0, &[&[Some(r"^$.*+?()[]{}|/")]]),
    (r"\a\e\q\-\_", "", r"aeq-_", 0, &[&[Some(r"aeq-_")]]),
    (r"\101\12\0101", "", "A\u{a}\u{8}1", 0, &[&[Some("A\u{a}\u{8}1")]]),
    (r"\400", "", r" 0", 0, &[&[Some(r" 0")]]),
    (r"\08", "", "\u{0}8", 0, &[&[Some("\u{0}8")]]),
    (r"\8\9", "", r"89", 0, &[&[Some(r"89")]]),
    (r"(a)\2", "", "a\u{2}", 1, &[&[Some("a\u{2}"), Some(r"a")]]),
    (r"(a)\10", "", "a\u{8}", 1, &[&[Some("a\u{8}"), Some(r"a")]]),
    (r"\c1", "", r"\c1", 0, &[&[Some(r"\c1")]]),
    (r"\c", "", r"\c", 0, &[&[Some(r"\c")]]),
    (r"\k", "", r"k", 0, &[&[Some(r"k")]]),
    (r"\k<x>", "", r"k<x>", 0, &[&[Some(r"k<x>")]]),
    (r"\p{L}", "", r"p{L}", 0, &[&[Some(r"p{L}")]]),
    (r"\d+", "", r"a123٣b", 0, &[&[Some(r"123")]]),
    (r"\D+", "", r"12ab٣3", 0, &[&[Some(r"ab٣")]]),
    (r"\w+", "", r"ab_9 é", 0, &[&[Some(r"ab_9")]]),
    (r"\W+", "", r"ab é!c", 0, &[&[Some(r" é!")]]),
    (r"\s+", "", "a \u{9}\u{a}\u{b}\u{c}\u{d}\u{a0}\u{1680}\u{2000}\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}\u{feff}b\u{85}c\u{200b}d", 0, &[&[Some(" \u{9}\u{a}\u{b}\u{c}\u{d}\u{a0}\u{1680}\u{2000}\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}\u{feff}")]]),
    (r"\S+", "", "ab\u{feff}c\u{85}d", 0, &[&[Some(r"ab")], &[Some("c\u{85}d")]]),
    (r"[abc]+", "", r"xabcay", 0, &[&[Some(r"abca")]]),
    (r"[^abc]+", "", r"abxyzc", 0, &[&[Some(r"xyz")]]),
    (r"[a-c0-2]+", "", r"zab12d", 0, &[&[Some(r"ab12")]]),
    (r"[\d_]+", "", r"x1_2y", 0, &[&[Some(r"1_2")]]),
    (r"[\w-]+", "", r"a-b c", 0, &[&[Some(r"a-b")], &[Some(r"c")]]),
    (r"[\s]", "", "a\u{feff}b", 0, &[&[Some("\u{feff}")]]),
    (r"[\D]", "", r"1a", 0, &[&[Some(r"a")]]),
    (r"[\W\d]+", "", r"ab 1!c", 0, &[&[Some(r" 1!")]]),
    (r"[\b]", "", "a\u{8}b", 0, &[&[Some("\u{8}")]]),
    (r"[\-a]+", "", r"x-a-", 0, &[&[Some(r"-a-")]]),
    (r"[-a]+", "", r"x-a-", 0, &[&[Some(r"-a-")]]),
    (r"[a-]+", "", r"x-a-", 0, &[&[Some(r"-a-")]]),
    (r"[a-c-e]+", "", r"xb-ed", 0, &[&[Some(r"b-e")]]),
    (r"[^]", "", "a\u{a}b", 0, &[&[Some(r"a")], &[Some("\u{a}")], &[Some(r"b")]]),
    (r"[^]+", "s", "a\u{a}\u{2028}b", 0, &[&[Some("a\u{a}\u{2028}b")]]),
    (r"[]", "", r"abc", 0, &[]),
    (r"a[]", "", r"a", 0, &[]),
    (r"[^]*", "", r"", 0, &[&[Some(r"")]]),
    (r"[]]", "", r"]", 0, &[]),
    (r"[\]]", "", r"]", 0, &[&[Some(r"]")]]),
    (r"[[a]+", "", r"[a]", 0, &[&[Some(r"[a")]]),
    (r"[&&~~-]+", "", r"a&&~~--b", 0, &[&[Some(r"&&~~--")]]),
    (r"[a&&b]+", "", r"ab&", 0, &[&[Some(r"ab&")]]),
    (r"[\d-a]+", "", r"5-a", 0, &[&[Some(r"5-a")]]),
    (r"[a-\d]+", "", r"a-5b", 0, &[&[Some(r"a-5")]]),
    (r"[\B\8]+", "", r"B8", 0, &[&[Some(r"B8")]]),
    (r"[\1\12]+", "", "\u{1}\u{a}", 0, &[&[Some("\u{1}\u{a}")]]),
    (r"[\c1\c_]+", "", "\u{11}\u{1f}", 0, &[&[Some("\u{11}\u{1f}")]]),
    (r"[\c*]+", "", r"\c*", 0, &[&[Some(r"\c*")]]),
    (r"[\x41-\x43]+", "", r"ABCD", 0, &[&[Some(r"ABC")]]),
    (r"[\u00e0-\u00ff]+", "", r"aéÿ", 0, &[&[Some(r"éÿ")]]),
    (r"[\u{1F600}-\u{1F64F}]+", "u", r"a😀😃b", 0, &[&[Some(r"😀😃")]]),
    (r"[😀a]", "u", r"😀a", 0, &[&[Some(r"😀")], &[Some(r"a")]]),
    (r"[\/]", "", r"/", 0, &[&[Some(r"/")]]),
    (r".", "", "a\u{d}b\u{a}c\u{2028}d\u{2029}e\u{85}", 0, &[&[Some(r"a")], &[Some(r"b")], &[Some(r"c")], &[Some(r"d")], &[Some(r"e")], &[Some("\u{85}")]]),
    (r".", "s", "a\u{d}\u{a}\u{2028}", 0, &[&[Some(r"a")], &[Some("\u{d}")], &[Some("\u{a}")], &[Some("\u{2028}")]]),
    (r"a.c", "", "abc a\u{a}c a\u{d}c", 0, &[&[Some(r"abc")]]),
    (r".+", "u", r"😀x", 0, &[&[Some(r"😀x")]]),
    (r"\b\w+\b", "", r"café au lait", 0, &[&[Some(r"caf")], &[Some(r"au")], &[Some(r"lait")]]),
    (r"\bé", "", r"é xé", 0, &[&[Some(r"é")]]),
    (r"\B", "", r"ab cd é", 0, &[&[Some(r"")], &[Some(r"")], &[Some(r"")], &[Some(r"")]]),
    (r"a\B", "", r"ab a aé", 0, &[&[Some(r"a")]]),
    (r"^a", "", "a\u{a}a", 0, &[&[Some(r"a")]]),
    (r"^a", "m", "a\u{a}a", 0, &[&[Some(r"a")], &[Some(r"a")]]),
    (r"a$", "", "a\u{a}a", 0, &[&[Some(r"a")]]),
    (r"a$", "m", "a\u{a}a", 0, &[&[Some(r"a")], &[Some(r"a")]]),
    (r"a$", "", "a\u{a}", 0, &[]),
    (r"a$", "m", "a\u{a}", 0, &[&[Some(r"a")]]),
    (r"^\w$", "m", "a\u{a}b\u{a}", 0, &[&[Some(r"a")], &[Some(r"b")]]),
    (r"^$", "", r"", 0, &[&[Some(r"")]]),
    (r"^b", "m", "a\u{d}b", 0, &[&[Some(r"b")]]),
    (r"a$", "m", "a\u{d}\u{a}b", 0, &[&[Some(r"a")]]),
    (r"^b", "m", "a\u{d}\u{a}b", 0, &[&[Some(r"b")]]),
    (r"abc", "i", r"ABC aBc abd", 0, &[&[Some(r"ABC")], &[Some(r"aBc")]]),
    (r"é", "i", r"É é e", 0, &[&[Some(r"É")], &[Some(r"é")]]),
    (r"É", "i", r"é", 0, &[&[Some(r"é")]]),
    (r"s", "i", "sS\u{17f}", 0, &[&[Some(r"s")], &[Some(r"S")]]),
    ("\u{17f}", "i", "sS\u{17f}", 0, &[&[Some("\u{17f}")]]),
    ("\u{17f}", "iu", "sS\u{17f}", 0, &[&[Some(r"s")], &[Some(r"S")], &[Some("\u{17f}")]]),
    (r"k", "i", "kK\u{212a}", 0, &[&[Some(r"k")], &[Some(r"K")]]),
    (r"k", "iu", "kK\u{212a}", 0, &[&[Some(r"k")], &[Some(r"K")], &[Some("\u{212a}")]]),
    ("\u{212a}", "i", "kK\u{212a}", 0, &[&[Some("\u{212a}")]]),
    (r"ß", "i", "ß\u{1e9e}", 0, &[&[Some(r"ß")]]),
    (r"ß", "iu", "ß\u{1e9e}", 0, &[&[Some(r"ß")], &[Some("\u{1e9e}")]]),
    (r"σ", "i", r"σΣς", 0, &[&[Some(r"σ")], &[Some(r"Σ")], &[Some(r"ς")]]),
    (r"ω", "i", "ωΩ\u{2126}", 0, &[&[Some(r"ω")], &[Some(r"Ω")]]),
    (r"ω", "iu", "ωΩ\u{2126}", 0, &[&[Some(r"ω")], &[Some(r"Ω")], &[Some("\u{2126}")]]),
    (r"𐐀", "i", r"𐐨𐐀", 0, &[&[Some(r"𐐀")]]),
    (r"𐐀", "iu", r"𐐨𐐀", 0, &[&[Some(r"𐐨")], &[Some(r"𐐀")]]),
    (r"[a-z]+", "i", r"1aBc2", 0, &[&[Some(r"aBc")]]),
    (r"[^a-z]+", "i", r"aB1!c", 0, &[&[Some(r"1!")]]),
    (r"[^a]", "i", r"aAb", 0, &[&[Some(r"b")]]),
    (r"\w+", "i", "s\u{17f}K\u{212a}K_", 0, &[&[Some(r"s")], &[Some(r"K")], &[Some(r"K_")]]),
    (r"\w+", "iu", "s\u{17f}K\u{212a}K_ é", 0, &[&[Some("s\u{17f}K\u{212a}K_")]]),
    (r"\W", "iu", "s\u{17f}K\u{212a}K ", 0, &[&[Some(r" ")]]),
    (r"[^\W]+", "iu", "s\u{17f}K\u{212a}K ", 0, &[&[Some("s\u{17f}K\u{212a}K")]]),
    (r"\W", "i", "s\u{17f}K\u{212a}K ", 0, &[&[Some("\u{17f}")], &[Some("\u{212a}")], &[Some(r" ")]]),
    (r"[\u00c0-\u00c5]+", "i", r"àÁâx", 0, &[&[Some(r"àÁâ")]]),
    (r"\x41", "i", r"aA", 0, &[&[Some(r"a")], &[Some(r"A")]]),
    (r"(?<year>\d{4})-(?<month>\d\d)", "", r"on 2024-05 and 1999-12", 2, &[&[Some(r"2024-05"), Some(r"2024"), Some(r"05")], &[Some(r"1999-12"), Some(r"1999"), Some(r"12")]]),
    (r"(a)(?:b)(?<c>c)?(d)", "", r"abd abcd", 3, &[&[Some(r"abd"), Some(r"a"), None, Some(r"d")], &[Some(r"abcd"), Some(r"a"), Some(r"c"), Some(r"d")]]),
    (r"(?<\u0061b>x)", "", r"x", 1, &[&[Some(r"x"), Some(r"x")]]),
    (r"(?<é>x)", "", r"x", 1, &[&[Some(r"x"), Some(r"x")]]),
    (r"(a)|b", "", r"b a", 1, &[&[Some(r"b"), None], &[Some(r"a"), Some(r"a")]]),
    (r"a+?", "", r"aaa", 0, &[&[Some(r"a")], &[Some(r"a")], &[Some(r"a")]]),
    (r"a+", "", r"aaa", 0, &[&[Some(r"aaa")]]),
    (r"a*?b", "", r"aab", 0, &[&[Some(r"aab")]]),
    (r"a{2,}?", "", r"aaaaa", 0, &[&[Some(r"aa")], &[Some(r"aa")]]),
    (r"a{2,3}", "", r"aaaaaaa", 0, &[&[Some(r"aaa")], &[Some(r"aaa")]]),
    (r"a{2}", "", r"aaaaa", 0, &[&[Some(r"aa")], &[Some(r"aa")]]),
    (r"a{0}b", "", r"ab", 0, &[&[Some(r"b")]]),
    (r"<.*>", "", r"<a><b>", 0, &[&[Some(r"<a><b>")]]),
    (r"<.*?>", "", r"<a><b>", 0, &[&[Some(r"<a>")], &[Some(r"<b>")]]),
    (r"a??b", "", r"ab b", 0, &[&[Some(r"ab")], &[Some(r"b")]]),
    (r"(?:ab)+", "", r"ababx", 0, &[&[Some(r"abab")]]),
    (r"a{1,99999999999999}", "", r"aaa", 0, &[&[Some(r"aaa")]]),
    (r"a{", "", r"a{", 0, &[&[Some(r"a{")]]),
    (r"{", "", r"x{y", 0, &[&[Some(r"{")]]),
    (r"a{,2}", "", r"a{,2}", 0, &[&[Some(r"a{,2}")]]),
    (r"x{1,2", "", r"x{1,2", 0, &[&[Some(r"x{1,2")]]),
    (r"}", "", r"}", 0, &[&[Some(r"}")]]),
    (r"]", "", r"]", 0, &[&[Some(r"]")]]),
    (r"a{b}", "", r"a{b}", 0, &[&[Some(r"a{b}")]]),
    (r"{1", "", r"{1", 0, &[&[Some(r"{1")]]),
    (r"a|", "", r"ba", 0, &[&[Some(r"")], &[Some(r"a")], &[Some(r"")]]),
    (r"|b", "", r"ab", 0, &[&[Some(r"")], &[Some(r"")], &[Some(r"")]]),
    (r"(?:)", "", r"ab", 0, &[&[Some(r"")], &[Some(r"")], &[Some(r"")]]),
    (r"", "", r"ab", 0, &[&[Some(r"")], &[Some(r"")], &[Some(r"")]]),
    (r"a||b", "", r"ab", 0, &[&[Some(r"a")], &[Some(r"")], &[Some(r"")]]),
    (r"(|a)", "", r"a", 1, &[&[Some(r""), Some(r"")], &[Some(r""), Some(r"")]]),
    (r"\p{L}+", "u", r"héllo 123 мир", 0, &[&[Some(r"héllo")], &[Some(r"мир")]]),
    (r"\P{L}+", "u", r"ab12 c", 0, &[&[Some(r"12 ")]]),
    (r"[\p{Nd}x]+", "u", r"a1٣x", 0, &[&[Some(r"1٣x")]]),
    (r"\p{Script=Greek}+", "u", r"abc αβγ", 0, &[&[Some(r"αβγ")]]),
    (r"\p{sc=Cyrillic}", "u", r"aж", 0, &[&[Some(r"ж")]]),
    (r"\p{Lu}", "iu", r"aB", 0, &[&[Some(r"a")], &[Some(r"B")]]),
    (r"\p{gc=Lu}", "u", r"aB", 0, &[&[Some(r"B")]]),
    (r"\p{ASCII_Hex_Digit}+", "u", r"xbeefz", 0, &[&[Some(r"beef")]]),
    (r"\p{Any}", "u", r"😀", 0, &[&[Some(r"😀")]]),
    (r"\p{Zl}", "u", "a\u{2028}", 0, &[&[Some("\u{2028}")]]),
    (r"[\p{Cs}a]", "u", r"ab", 0, &[&[Some(r"a")]]),
    (r"\P{Cs}", "u", r"a", 0, &[&[Some(r"a")]]),
    (r"(?:a|)*b", "", r"aab b", 0, &[&[Some(r"aab")], &[Some(r"b")]]),
    (r"(a*)+", "", r"aa b", 1, &[&[Some(r"aa"), Some(r"aa")], &[Some(r""), Some(r"")], &[Some(r""), Some(r"")], &[Some(r""), Some(r"")]]),
    (r"(\w+\s?)*", "", r"ab cd", 1, &[&[Some(r"ab cd"), Some(r"cd")], &[Some(r""), None]]),
    (r"(?:(a)b)+", "", r"abab", 1, &[&[Some(r"abab"), Some(r"a")]]),
    (r"a*", "", r"baaa", 0, &[&[Some(r"")], &[Some(r"aaa")], &[Some(r"")]]),
    (r"(?:a*)*?b", "", r"aab", 0, &[&[Some(r"aab")]]),
    (r"(b?){2}", "", r"b", 1, &[&[Some(r"b"), Some(r"")], &[Some(r""), Some(r"")]]),
    (r"a", "dg", r"aa", 0, &[&[Some(r"a")], &[Some(r"a")]]),
    ];

    fn compile(src: &str, flags: &str) -> Regex {
        let flags = parse_flags(flags).unwrap();
        let pattern = translate(src, &flags).unwrap_or_else(|e| panic!("/{src}/: {e}"));
        Regex::new(&pattern).unwrap_or_else(|e| panic!("/{src}/ as {pattern:?}: {e}"))
    }

    /// Every match, iterated like JS `matchAll`: after an empty match the
    /// search resumes one character later.
    fn match_all(re: &Regex, hay: &str) -> Vec<Vec<Option<String>>> {
        let mut caps = re.create_captures();
        let mut out = Vec::new();
        let mut at = 0;
        while at <= hay.len() {
            re.search_captures(&Input::new(hay).range(at..), &mut caps);
            let Some(m) = caps.get_match() else { break };
            out.push((0..caps.group_len()).map(|i| caps.get_group(i).map(|s| hay[s.range()].to_string())).collect());
            at = m.end();
            if m.is_empty() {
                at += hay[at..].chars().next().map_or(1, char::len_utf8);
            }
        }
        out
    }

    #[test]
    fn matches_agree_with_node() {
        let mut failures = Vec::new();
        for &(src, flags, hay, groups, want) in MATCH_CASES {
            let re = compile(src, flags);
            let got = match_all(&re, hay);
            let want: Vec<Vec<Option<String>>> =
                want.iter().map(|m| m.iter().map(|g| g.map(str::to_string)).collect()).collect();
            let got_groups = re.group_info().group_len(PatternID::ZERO) - 1;
            if got != want || got_groups != groups {
                failures.push(format!(
                    "/{src}/{flags} on {hay:?}: got {got:?} ({got_groups} groups), want {want:?} ({groups} groups)"
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn emitted_patterns() {
        let plain = JsFlags::default();
        let m = JsFlags { multiline: true, ..plain };
        let cases = [
            ("^a$", plain, r"\Aa\z"),
            ("^a$", m, "(?mR:^)a(?mR:$)"),
            (r"\b\B", plain, r"(?-u:\b)(?-u:\B)"),
            (".", plain, r"[^\x{A}\x{D}\x{2028}\x{2029}]"),
            ("[]", plain, NEVER),
            ("[^]", plain, "(?s:.)"),
            ("(?:)", plain, "(?:)"),
            ("", plain, "(?:)"),
            ("(?<n>a)(b)", plain, "(?P<n>a)(b)"),
            ("[&&]", plain, r"\&"),
            ("[a-c&]", plain, r"[\x{26}\x{61}-\x{63}]"),
            (r"a{2,}?b*", plain, "a{2,}?b*"),
        ];
        for (src, flags, want) in cases {
            assert_eq!(translate(src, &flags).unwrap(), want, "/{src}/");
        }
        assert_eq!(literal("a.b(c)*"), r"a\.b\(c\)\*");
    }

    #[test]
    fn named_groups_keep_names_and_numbers() {
        let re = compile(r"(?<year>\d{4})-(?<month>\d\d)(x)?(?<\u0064ay>\d\d)", "");
        let names: Vec<_> = re.group_info().pattern_names(PatternID::ZERO).collect();
        assert_eq!(names, [None, Some("year"), Some("month"), None, Some("day")]);
        let mut caps = re.create_captures();
        re.captures("2024-0531", &mut caps);
        assert_eq!(caps.get_group_by_name("day").map(|s| s.range()), Some(7..9));
    }

    #[test]
    fn literal_matches_text() {
        let re = Regex::new(&literal("1+1=[2]")).unwrap();
        assert_eq!(re.find("x 1+1=[2]").map(|m| m.range()), Some(2..9));
    }

    fn err(src: &str, flags: &str) -> JsRegexError {
        match translate(src, &parse_flags(flags).unwrap()) {
            Ok(pattern) => panic!("/{src}/{flags} translated to {pattern:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn syntax_errors() {
        // All of these throw a SyntaxError in Node 20 too.
        let cases = [
            ("(?i)a", "", "invalid group", 0),
            ("(?P<a>x)", "", "invalid group", 0),
            ("(?", "", "invalid group", 0),
            ("a**", "", "nothing to repeat", 2),
            ("*a", "", "nothing to repeat", 0),
            ("a|?", "", "nothing to repeat", 2),
            ("a*??", "", "nothing to repeat", 3),
            ("x{1}{2}", "", "nothing to repeat", 4),
            ("{1}", "", "nothing to repeat", 0),
            ("^*", "", "nothing to repeat", 1),
            ("$+", "", "nothing to repeat", 1),
            (r"\b+", "", "nothing to repeat", 2),
            (r"\B{2}", "", "nothing to repeat", 2),
            ("x{2,1}", "", "numbers out of order in {} quantifier", 1),
            ("a{2,1}?", "", "numbers out of order in {} quantifier", 1),
            ("[b-a]", "", "range out of order in character class", 1),
            ("(a", "", "unterminated group", 0),
            ("a)", "", "unmatched `)`", 1),
            ("[a", "", "unterminated character class", 0),
            ("a\\", "", "`\\` at end of pattern", 1),
            ("(?<a>x)(?<a>y)", "", "duplicate capture group name", 7),
            ("(?<1a>x)", "", "invalid capture group name", 3),
            ("(?<>x)", "", "invalid capture group name", 3),
            (r"(?<a>x)\k", "", "invalid named reference", 7),
            (r"(?<a>x)\k<b>", "", "invalid named capture referenced", 7),
            (r"(?<a>x)[\k]", "", "invalid escape", 8),
            (r"\a", "u", "invalid escape", 0),
            (r"a\-", "u", "invalid escape", 1),
            (r"\_", "u", "invalid escape", 0),
            (r"[\B]", "u", "invalid escape", 1),
            ("{", "u", "lone quantifier brackets", 0),
            ("}", "u", "lone quantifier brackets", 0),
            ("]", "u", "lone quantifier brackets", 0),
            ("a{2", "u", "incomplete quantifier", 1),
            ("a{,2}", "u", "incomplete quantifier", 1),
            (r"[\d-a]", "u", "invalid character class", 3),
            (r"[a-\d]", "u", "invalid character class", 2),
            (r"\1", "u", "invalid escape", 0),
            (r"\00", "u", "invalid decimal escape", 0),
            (r"[\1]", "u", "invalid class escape", 1),
            (r"\c1", "u", "invalid unicode escape", 0),
            (r"[\c1]", "u", "invalid unicode escape", 1),
            (r"\u{110000}", "u", "invalid unicode escape", 0),
            (r"\u12", "u", "invalid unicode escape", 0),
            (r"\x4", "u", "invalid escape", 0),
            (r"\p{Greek}", "u", "invalid property name", 0),
            (r"\p{letter}", "u", "invalid property name", 0),
            (r"\p{Foo=Bar}", "u", "invalid property name", 0),
            (r"\p{L", "u", "invalid property name", 0),
            (r"\pL", "u", "invalid property name", 0),
            (r"\k", "u", "invalid named reference", 0),
            (r"\k<a>", "u", "invalid named capture referenced", 0),
        ];
        for (src, flags, message, offset) in cases {
            let want = JsRegexError::Syntax { message: message.into(), offset };
            assert_eq!(err(src, flags), want, "/{src}/{flags}");
        }
    }

    #[test]
    fn unsupported_features() {
        const EMPTY_FIRST: &str = "repetition of something that prefers to match empty";
        const EMPTY_FIRST_HINT: &str = " (JavaScript skips empty iterations; the engine takes them)";
        const STALE: &str = "capture group in a repetition that can skip it or match empty";
        const STALE_HINT: &str = " (JavaScript resets the group on every iteration; the engine keeps earlier values)";
        let long = "a".repeat(70 * 1024);
        let deep = format!("{}a{}", "(".repeat(129), ")".repeat(129));
        let engine_deep = format!("{}a{}", "(?:b|".repeat(100), ")+".repeat(100));
        // Node 20 accepts all of these except the modifier groups (ES2025)
        // and the unknown script.
        let cases = [
            ("(?=a)", "", "lookahead (?=", 0, ENGINE_HINT),
            ("(?=a)*", "", "lookahead (?=", 0, ENGINE_HINT),
            ("a(?!b)", "", "negative lookahead (?!", 1, ENGINE_HINT),
            ("(?<=a)b", "", "lookbehind (?<=", 0, ENGINE_HINT),
            ("x(?<!a)b", "", "negative lookbehind (?<!", 1, ENGINE_HINT),
            (r"(a)\1", "", r"backreference \1", 3, ENGINE_HINT),
            (r"(a)\1", "u", r"backreference \1", 3, ENGINE_HINT),
            (r"(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\10", "", r"backreference \10", 30, ENGINE_HINT),
            (r"\2(a)(b)", "", r"backreference \2", 0, ENGINE_HINT),
            (r"(?<n>a)\k<n>", "", r"backreference \k<n>", 7, ENGINE_HINT),
            (r"(?<n>a)\k<n>", "u", r"backreference \k<n>", 7, ENGINE_HINT),
            (r"\k<n>(?<n>a)", "", r"backreference \k<n>", 0, ENGINE_HINT),
            (r"\uD800", "", r"lone surrogate \uD800", 0, SURROGATE_HINT),
            (r"a\uDE00", "u", r"lone surrogate \uDE00", 1, SURROGATE_HINT),
            (r"\u{D800}", "u", r"lone surrogate \uD800", 0, SURROGATE_HINT),
            (r"[\uD83D\uDE00]", "", r"lone surrogate \uD83D", 1, SURROGATE_HINT),
            (r"[a-\uD800]", "u", r"lone surrogate \uD800", 3, SURROGATE_HINT),
            ("\u{1F600}+", "", "quantifier on an astral character without the `u` flag", 0, UTF16_HINT),
            ("\u{1F600}{2}", "", "quantifier on an astral character without the `u` flag", 0, UTF16_HINT),
            (r"x\uD83D\uDE00*", "", "quantifier on an astral character without the `u` flag", 1, UTF16_HINT),
            ("[\u{1F600}]", "", "astral character in a character class without the `u` flag", 1, UTF16_HINT),
            ("(?i:a)", "", "modifiers group (?i:", 0, " (ES2025 modifiers are not supported)"),
            ("(?-i:a)", "", "modifiers group (?-i:", 0, " (ES2025 modifiers are not supported)"),
            ("(?i-s:a)", "", "modifiers group (?i-s:", 0, " (ES2025 modifiers are not supported)"),
            (
                "(?<a$>x)",
                "",
                "capture group name <a$>",
                0,
                " (the engine only accepts letters, digits and `_` in names)",
            ),
            ("(?:|a)*", "", EMPTY_FIRST, 0, EMPTY_FIRST_HINT),
            ("x(?:a??)+", "", EMPTY_FIRST, 1, EMPTY_FIRST_HINT),
            ("(?:a?|b){2,3}", "", EMPTY_FIRST, 0, EMPTY_FIRST_HINT),
            ("((a)|(b))+", "", STALE, 0, STALE_HINT),
            ("x(?:a(b)?)*", "", STALE, 1, STALE_HINT),
            ("(a?){1,3}", "", STALE, 0, STALE_HINT),
            ("(?:(a)|b){2}", "", STALE, 0, STALE_HINT),
            ("a{4294967296}", "", "repetition count 4294967296 (the engine's limit is 4294967295)", 1, ""),
            (
                r"\p{Script=Foo}",
                "u",
                r"Unicode property \p{Script=Foo}",
                0,
                " (the engine's Unicode tables do not have it)",
            ),
            (&long, "", "pattern longer than 65536 bytes", 65536, ""),
            (
                &engine_deep,
                "",
                "nesting deeper than the engine allows",
                495,
                " (each group, repetition and alternative counts)",
            ),
            (&deep, "", "nesting deeper than 128", 128, ""),
        ];
        for (src, flags, feature, offset, hint) in cases {
            let want = JsRegexError::Unsupported { feature: feature.into(), offset, hint: hint.into() };
            assert_eq!(err(src, flags), want, "/{}/{flags}", &src[..src.len().min(40)]);
        }
    }

    #[test]
    fn limits_that_pass() {
        let deep = format!("{}a{}", "(".repeat(128), ")".repeat(128));
        let re = compile(&deep, "");
        assert_eq!(re.group_info().group_len(PatternID::ZERO), 129);
        assert!(re.is_match("a"));
        // The longest pattern translates; compiling it is the engine's
        // business (and slow in debug builds), so compile a shorter one.
        let long = "ab".repeat(32 * 1024);
        assert!(translate(&long, &parse_flags("i").unwrap()).is_ok());
        let short = &long[..4096];
        assert!(compile(short, "i").is_match(&short.to_uppercase()));
    }

    #[test]
    fn error_messages_name_feature_and_offset() {
        assert_eq!(
            err("a(?=b)", "").to_string(),
            "unsupported regex feature: lookahead (?= at offset 1 (a non-backtracking engine cannot run it)"
        );
        assert_eq!(err("a)", "").to_string(), "invalid regex: unmatched `)` at offset 1");
        assert_eq!(parse_flags("y").unwrap_err().to_string(), "unsupported regex flag `y`");
        assert_eq!(parse_flags("gg").unwrap_err().to_string(), "invalid regex flags `gg`");
    }

    #[test]
    fn flags() {
        let all = JsFlags { global: true, ignore_case: true, multiline: true, dot_all: true, unicode: true };
        assert_eq!(parse_flags("dgimsu"), Ok(all));
        assert_eq!(parse_flags(""), Ok(JsFlags::default()));
        assert_eq!(parse_flags("y"), Err(JsRegexError::UnsupportedFlag('y')));
        assert_eq!(parse_flags("gv"), Err(JsRegexError::UnsupportedFlag('v')));
        for bad in ["gg", "x", "yy", "gy x", "G"] {
            assert_eq!(parse_flags(bad), Err(JsRegexError::InvalidFlags(bad.into())), "{bad:?}");
        }
    }

    /// Where the engine cannot follow JS, pin down what we do instead.
    #[test]
    fn documented_differences() {
        let starts = |src: &str, flags: &str, hay: &str| -> Vec<usize> {
            compile(src, flags).find_iter(hay).map(|m| m.start()).collect()
        };
        // JS /^/gm also matches between \r and \n (index 2) and after \u2028.
        assert_eq!(starts("^", "m", "a\r\nb\rc\u{2028}d"), [0, 3, 5]);
        // JS /\bſ/iu matches after a space, since ſ is a word character there.
        assert_eq!(starts("\\b\u{17F}", "iu", " \u{17F} a\u{17F}"), [5]);
        // JS leaves a group unset (undefined) when the only iteration of its
        // `?` would be empty; the engine reports an empty match. Both replace
        // `$1` with nothing.
        let re = compile("(a?)?b", "");
        let mut caps = re.create_captures();
        re.captures("b", &mut caps);
        assert_eq!(caps.get_group(1).map(|s| s.range()), Some(0..0));
        // Without `u`, JS `.` matches half of an astral character.
        assert_eq!(starts("^.$", "", "\u{1F600}"), [0]);
    }
}
