//! Groups: parsing `(…)`, `(?:…)`, `(?<name>…)` and look-arounds (modifiers are refused), and the scan
//! before parsing that counts groups and collects names, since JavaScript lets `\2` and `\k<name>` refer
//! forward.

use std::sync::OnceLock;

use regex_syntax::hir::ClassUnicode;

use super::classes::{class_contains, NEVER};
use super::escapes::property_set;
use super::parser::{look_placeholder, syntax, unsupported, LookSpec, Parser, ENGINE_HINT, MAX_NESTING};
use crate::error::JsRegexError;

impl Parser<'_> {
    /// Parses a group: `None` when it was a look-around, else whether V8 counts its body as unable to match
    /// empty.
    pub(super) fn group(&mut self) -> Result<Option<bool>, JsRegexError> {
        let start = self.pos;
        self.bump();
        if self.depth == MAX_NESTING {
            return Err(unsupported(format!("nesting deeper than {MAX_NESTING}"), start, ""));
        }
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
                if !self.allow_looks {
                    return Err(unsupported(feature, start, ENGINE_HINT));
                }
                self.look_around(start)?;
                return Ok(None);
            }
        } else {
            self.groups_opened += 1;
            self.out.push('(');
        }
        self.depth += 1;
        if self.depth > self.deepest.1 {
            self.deepest = (start, self.depth);
        }
        let nonempty = self.disjunction()?;
        self.depth -= 1;
        if !self.eat(')') {
            return Err(syntax("unterminated group", start));
        }
        self.out.push(')');
        Ok(Some(nonempty))
    }

    /// A look-around at `start` (its `(?` read): its body is translated in place, then moved out into a
    /// [`LookSpec`] and replaced by an empty placeholder group. Look-arounds inside it come first in the list,
    /// their placeholders in its body.
    fn look_around(&mut self, start: usize) -> Result<(), JsRegexError> {
        let behind = self.eat('<');
        let negative = self.bump() == Some('!');
        let (mark, groups) = (self.out.len(), self.groups_opened);
        self.depth += 1;
        self.disjunction()?;
        self.depth -= 1;
        if !self.eat(')') {
            return Err(syntax("unterminated group", start));
        }
        let mut pattern = self.out.split_off(mark);
        if pattern.is_empty() {
            pattern.push_str("(?:)");
        }
        self.out.push_str(&format!("(?P<{}>)", look_placeholder(self.looks.len())));
        // Its groups keep their numbers and names in the pattern around it; their values come from the body's
        // own match (see `crate::rewrite::look_around`).
        let groups = (groups as u32 + 1)..(self.groups_opened as u32 + 1);
        if !groups.is_empty() {
            self.out.push_str(&groups_only(&pattern));
        }
        self.looks.push(LookSpec { ahead: !behind, negative, pattern, offset: start, groups });
        Ok(())
    }

    /// `\b` or `\B` at `start` (read). JavaScript's word characters are `[0-9A-Za-z_]`, and with `i` and `u`
    /// (or `v`) also ſ (U+017F) and K (U+212A), which fold to `s` and `k`. The engine's ASCII boundary cannot
    /// count those two, so there a boundary is written as look-arounds at either side:
    /// `\b` is `(?:(?<=w)(?!w)|(?<!w)(?=w))`, `\B` is `(?:(?<=w)(?=w)|(?<!w)(?!w))`. A side known to be a word
    /// character needs no look (`word_before`, or a literal one next that is not optional): `\bfoo\b` is
    /// `(?<!w)foo(?!w)`. (With `i` and `u`, an ASCII word character folds only to word characters.)
    pub(super) fn word_boundary(&mut self, start: usize, negated: bool, word_before: bool) -> Result<(), JsRegexError> {
        if !(self.flags.ignore_case && self.flags.unicode) {
            self.out.push_str(if negated { r"(?-u:\B)" } else { r"(?-u:\b)" });
            return Ok(());
        }
        let mut next = self.src[self.pos..].chars();
        let word_after = next.next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            && !matches!(next.next(), Some('?' | '*' | '{'));
        if word_before && word_after {
            self.out.push_str(if negated { "(?:)" } else { NEVER });
            return Ok(());
        }
        let what = format!("\\{} with the i and u flags", if negated { 'B' } else { 'b' });
        let hint = " (there ſ and K count as word characters, which takes look-arounds)";
        if !self.allow_looks {
            return Err(unsupported(what, start, hint));
        }
        const WORD: &str = r"[0-9A-Z_a-z\x{17F}\x{212A}]";
        let look = |parser: &mut Self, ahead: bool, negative: bool| {
            parser.out.push_str(&format!("(?P<{}>)", look_placeholder(parser.looks.len())));
            let pattern = WORD.to_string();
            parser.looks.push(LookSpec { ahead, negative, pattern, offset: start, groups: 0..0 });
        };
        match (word_before, word_after) {
            (true, _) => look(self, true, !negated),
            (_, true) => look(self, false, !negated),
            _ => {
                self.out.push_str("(?:");
                look(self, false, false);
                look(self, true, !negated);
                self.out.push('|');
                look(self, false, true);
                look(self, true, negated);
                self.out.push(')');
            }
        }
        Ok(())
    }

    fn named_group_open(&mut self, start: usize) -> Result<(), JsRegexError> {
        let (name, end) =
            parse_group_name(self.src, self.pos).ok_or_else(|| syntax("invalid capture group name", self.pos))?;
        if self.defined_names.contains(&name) {
            return Err(syntax("duplicate capture group name", start));
        }
        self.pos = end;
        self.groups_opened += 1;
        self.out.push_str("(?P<");
        self.out.push_str(&engine_name(&name));
        self.out.push('>');
        self.defined_names.push(name);
        Ok(())
    }

    /// `(?` followed by something that is not a JS group. ES2025 modifier groups such as `(?i:…)` get their
    /// own message.
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
}

/// A pattern that matches empty and holds the groups of `pattern`, which it never sets (a copy after
/// something that never matches, made optional: regex-syntax drops what is repeated no times, groups too).
/// The placeholders of look-arounds inside are left out of the copy: each names its look-around once.
pub(super) fn groups_only(pattern: &str) -> String {
    format!("(?:{NEVER}(?:{}))?", super::parser::without_placeholders(pattern))
}

/// Counts capture groups and collects group names before parsing, since JS lets `\2` and `\k<name>` refer
/// forward.
pub(super) fn scan_groups(src: &str) -> (usize, Vec<String>) {
    // Byte scanning is safe: every syntax character is ASCII, and UTF-8 continuation bytes never look like
    // ASCII.
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

/// Parses a JS GroupName body starting at byte `pos` (just after `<`) up to and including `>`: the decoded
/// name and the position after `>`.
pub(super) fn parse_group_name(src: &str, mut pos: usize) -> Option<(String, usize)> {
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

/// `name` as the engine takes it. The engine's names are fewer than JavaScript's (no `$`, no ZWJ/ZWNJ, no
/// marks, no astral ID characters), but take `.`, `[` and `]`, which no JavaScript name holds: a character
/// the engine refuses is written `[hex]`, and a name whose first character it refuses starts with `_.`.
/// Names the engine takes as they are stay as they are. [`js_name`] reads them back.
pub(crate) fn engine_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, c) in name.chars().enumerate() {
        let first = i == 0;
        let ok = c == '_' || if first { c.is_alphabetic() } else { c.is_alphanumeric() };
        if first && !ok {
            out.push_str("_.");
        }
        if ok {
            out.push(c);
        } else {
            out.push_str(&format!("[{:x}]", u32::from(c)));
        }
    }
    out
}

/// The JavaScript name of a group the engine names `name` (see [`engine_name`]).
pub(crate) fn js_name(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.contains('[') {
        return name.into();
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name.strip_prefix("_.").unwrap_or(name);
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let close = open + rest[open..].find(']').unwrap_or(rest.len() - open);
        let decoded =
            rest.get(open + 1..close).and_then(|hex| u32::from_str_radix(hex, 16).ok()).and_then(char::from_u32);
        out.push(decoded.unwrap_or(char::REPLACEMENT_CHARACTER));
        rest = rest.get(close + 1..).unwrap_or("");
    }
    out.push_str(rest);
    out.into()
}

/// `\uHHHH` (with surrogate pairs) or `\u{H…}` inside a group name; `pos` is just after the backslash.
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

fn id_start() -> &'static ClassUnicode {
    static SET: OnceLock<ClassUnicode> = OnceLock::new();
    SET.get_or_init(|| property_set("ID_Start").unwrap_or_else(ClassUnicode::empty))
}

fn id_continue() -> &'static ClassUnicode {
    static SET: OnceLock<ClassUnicode> = OnceLock::new();
    SET.get_or_init(|| property_set("ID_Continue").unwrap_or_else(ClassUnicode::empty))
}
