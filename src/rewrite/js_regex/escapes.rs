//! Escape sequences (`\n`, `\x41`, `\u{…}`, `\d`, `\p{…}`, octal and identity escapes), with the Annex B
//! readings JavaScript gives them without the `u` flag, and `\p{…}` with the names and Unicode 17.0 tables of
//! `unicode_tables`.

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};

use super::classes::{is_astral, negate, NEVER};
use super::groups::parse_group_name;
use super::parser::{syntax, unsupported, Parser, ENGINE_HINT, SURROGATE_HINT};
use super::unicode_tables::names::{BINARY, GENERAL_CATEGORY, SCRIPT, SCRIPT_EXTENSIONS};
use crate::error::JsRegexError;

/// What an escape sequence stands for.
pub(super) enum Escape {
    /// One code point; may be a lone surrogate (a unit without `u`, see `units`; with `u` it matches nothing).
    Char(u32),
    /// A set of characters (`\d`, `\p{L}`, …).
    Set(ClassUnicode),
    /// Annex B: `\c` not followed by a control letter is a literal `\`, and the `c` is parsed again as what
    /// follows.
    Backslash,
}

impl Parser<'_> {
    /// An escape outside a class (`\b`/`\B` are handled by the caller). Returns the character when it is an
    /// astral one in non-`u` mode (a quantifier then repeats its low half only).
    pub(super) fn atom_escape(&mut self) -> Result<Option<char>, JsRegexError> {
        let start = self.pos;
        let complement = self.complement_folded_first();
        match self.escape(false)? {
            // Without `u` a lone high surrogate is one unit: the high half of an astral character.
            Escape::Char(cp) if (0xD800..0xE000).contains(&cp) => {
                if self.flags.unicode {
                    // With `u` it matches only a lone surrogate of the text, and UTF-8 text has none.
                    self.out.push_str(NEVER);
                } else {
                    self.emit_lone_surrogate(cp);
                }
                Ok(None)
            }
            Escape::Char(cp) => {
                let c = scalar(cp, start)?;
                self.emit_char(c);
                Ok((!self.flags.unicode && is_astral(c)).then_some(c))
            }
            // With `v`, a complement is taken after case folding (see `class_sets`).
            Escape::Set(mut set) if complement && self.flags.unicode_sets => {
                self.fold_complement(&mut set);
                self.emit_set(&set);
                Ok(None)
            }
            Escape::Set(mut set) => {
                self.apply_ignore_case(&mut set);
                self.emit_set(&set);
                Ok(None)
            }
            Escape::Backslash => {
                self.emit_char('\\');
                Ok(None)
            }
        }
    }

    /// Whether the escape at the current `\` is a complement that, with `i` and `v`, V8 takes of the
    /// case-folded set (`fold_complement`): `\D`, `\S`, `\W`, and `\P{…}` of a General_Category, Script or
    /// Script_Extensions value. `\P{…}` of a binary property (`\P{Lowercase}`, `\P{ASCII}`...) V8 (Node
    /// 20) complements first and folds after, as without `v`: `/\P{Lowercase}/iv` matches `a`.
    pub(super) fn complement_folded_first(&self) -> bool {
        match self.peek_at(1) {
            Some('D' | 'S' | 'W') => true,
            Some('P') => {
                let body = self.src[self.pos..].strip_prefix("\\P{").and_then(|r| r.split('}').next());
                !body.is_some_and(|b| !b.contains('=') && lookup(GENERAL_CATEGORY, b).is_none())
            }
            _ => false,
        }
    }

    /// Parses the escape at the current `\`.
    pub(super) fn escape(&mut self, in_class: bool) -> Result<Escape, JsRegexError> {
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
                    // Annex B: `\u` without four hex digits is `u`, so `/\u{2}/` is `uu`.
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
        // Annex B: `\8` and `\9` are identity escapes, the rest legacy octal (at most three digits, at most
        // 0o377).
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

    /// After `\u`: `\uHHHH` (joining a surrogate pair written as two escapes) or, in `u` mode, `\u{H…}`.
    /// `None` if no valid escape follows.
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

    /// `\p{…}` / `\P{…}` in `u` mode, with the names JS accepts, from the generated Unicode tables (see
    /// `unicode_tables`), not the engine's.
    fn property_escape(&mut self, start: usize, negated: bool) -> Result<ClassUnicode, JsRegexError> {
        let invalid = || syntax("invalid property name", start);
        if !self.eat('{') {
            return Err(invalid());
        }
        let len = self.src[self.pos..].find('}').ok_or_else(invalid)?;
        let body = &self.src[self.pos..self.pos + len];
        self.pos += len + 1;
        let mut set = property_set(body).ok_or_else(invalid)?;
        if negated {
            negate(&mut set);
        }
        Ok(set)
    }
}

/// The characters of `\p{body}` (a lone name or `name=value`), or `None` where JavaScript refuses the name.
/// Surrogates (`Cs`) are left out: UTF-8 text has none.
pub(super) fn property_set(body: &str) -> Option<ClassUnicode> {
    let parts: &[&[(u32, u32)]] = match body.split_once('=') {
        Some(("General_Category" | "gc", value)) => lookup(GENERAL_CATEGORY, value)?,
        Some(("Script" | "sc", value)) => std::slice::from_ref(lookup(SCRIPT, value)?),
        Some(("Script_Extensions" | "scx", value)) => std::slice::from_ref(lookup(SCRIPT_EXTENSIONS, value)?),
        Some(_) => return None,
        None => match lookup(GENERAL_CATEGORY, body) {
            Some(parts) => parts,
            None => std::slice::from_ref(lookup(BINARY, body)?),
        },
    };
    let mut ranges = Vec::new();
    for &(first, last) in parts.iter().copied().flatten() {
        let first = if (0xD800..0xE000).contains(&first) { 0xE000 } else { first };
        let last = if (0xD800..0xE000).contains(&last) { 0xD7FF } else { last };
        if let (Some(a), Some(b)) = (char::from_u32(first), char::from_u32(last)) {
            if a <= b {
                ranges.push(ClassUnicodeRange::new(a, b));
            }
        }
    }
    Some(ClassUnicode::new(ranges))
}

/// A name's entry in a generated table (sorted by name).
fn lookup<T>(table: &'static [(&str, T)], name: &str) -> Option<&'static T> {
    table.binary_search_by(|&(n, _)| n.cmp(name)).ok().map(|i| &table[i].1)
}

/// A code point from an escape as a `char`; lone surrogates have no UTF-8 form.
pub(super) fn scalar(cp: u32, offset: usize) -> Result<char, JsRegexError> {
    char::from_u32(cp).ok_or_else(|| unsupported(format!("lone surrogate \\u{cp:04X}"), offset, SURROGATE_HINT))
}
