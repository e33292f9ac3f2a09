//! Classes with the `v` flag (ES2024 `unicodeSets`): nested classes, `&&` intersection, `--` difference and
//! `\q{…}` strings. A class is a set of characters plus a set of strings; it is written out as an
//! alternation, longest strings first (as JavaScript tries them), then the characters, then the empty
//! string. With `i`, every operand is closed under simple case folding before the set operations: that is
//! the spec's `MaybeSimpleCaseFolding` and `CharacterComplement` seen as sets of whole case classes.
//! Properties of strings (`\p{RGI_Emoji}`...) are refused: the engine has no emoji sequence tables.
//!
//! The source comes from a `RegExp` V8 built, so it is valid `v` syntax; what is not is refused as a
//! syntax error rather than read some other way.

use std::collections::BTreeSet;

use regex_syntax::hir::ClassUnicode;

use super::classes::{negate, simple_fold};
use super::escapes::Escape;
use super::parser::{syntax, unsupported, Parser, MAX_NESTING};
use super::units::push_scalar_range;
use crate::error::JsRegexError;

/// Properties of strings (ECMA-262 table "Binary Unicode properties of strings").
const STRING_PROPERTIES: &[&str] = &[
    "Basic_Emoji",
    "Emoji_Keycap_Sequence",
    "RGI_Emoji_Modifier_Sequence",
    "RGI_Emoji_Flag_Sequence",
    "RGI_Emoji_Tag_Sequence",
    "RGI_Emoji_ZWJ_Sequence",
    "RGI_Emoji",
];

/// Punctuators a `v` class may escape (`ClassSetReservedPunctuator`).
const RESERVED_PUNCTUATORS: &str = "&-!#%,:;<=>@`~";

/// What a `v` class matches: single characters, and strings of any other length.
struct ClassSet {
    chars: ClassUnicode,
    /// By case-folded key (equal to the string without `i`), each with a spelling to write out.
    strings: BTreeSet<Vec<char>>,
}

impl Default for ClassSet {
    fn default() -> ClassSet {
        ClassSet { chars: ClassUnicode::empty(), strings: BTreeSet::new() }
    }
}

/// What an operand was written as.
enum Operand {
    /// One character (a code point; a lone surrogate too, which can bound a range): a range may start or
    /// end with it.
    Char(u32),
    /// A nested class or a negated escape, case-folded already.
    Folded,
    Other,
}

enum Operator {
    Union,
    Intersection,
    Difference,
}

/// A repeated atom, as V8 (11.3, Node 20) compiles its repetition. V8 complements a `v` class negated as
/// a whole (`[^…]`) in place when it compiles the class, and does it again each time it compiles it: a
/// second compilation gives the class itself, a third the complement again. It compiles a repetition's
/// body more than once when it unrolls it, and what each copy then matches depends on the text (a text
/// of Latin-1 characters only sees the last state everywhere, another text each copy's own):
/// `/(?:[^<].){2}/v` does not match `abcd`, and `/(?:[^<]b){3}/v` matches `ababab` but not in `abababĀ`.
/// No streamed answer can follow that, so such a class is refused there. (Later V8s complement once.)
pub(super) struct RepeatedAtom {
    /// V8's minimum length of the atom is above 0 (a `v` class counts 0, an assertion 0, a character 1).
    pub(super) nonempty: bool,
    /// Where the first `v` class negated as a whole inside the atom starts.
    pub(super) negated_set: Option<usize>,
    /// The atom holds a capture group (V8 does not unroll its repetitions).
    pub(super) captures: bool,
}

impl RepeatedAtom {
    /// Refuses the atom repeated `{min,max}` (`max` `None`: unbounded) when V8 compiles it more than once
    /// and it holds a negated `v` class. V8 unrolls a repetition of a body that cannot match empty and
    /// holds no capture group when `min` is 1 to 3 (the forced matches, then the rest: `+`, `{2}`, `{1,3}`,
    /// `{2,}`, not `{1}`), or `min` is 0 and `max` 2 or 3 (`{0,2}`); `*`, `?` and `{4,}` it compiles once.
    /// An unrolled repetition nested in another is compiled more than once by the outer one already.
    pub(super) fn refuse_if_v8_unrolls(&self, min: u64, max: Option<u64>) -> Result<(), JsRegexError> {
        let Some(offset) = self.negated_set else { return Ok(()) };
        let unrolled = match min {
            0 => matches!(max, Some(2 | 3)),
            1 => max != Some(1),
            2 | 3 => true,
            _ => false,
        };
        if unrolled && self.nonempty && !self.captures {
            return Err(unsupported(
                "a negated `v` class in a repetition V8 unrolls",
                offset,
                " (Node 20's V8 complements it again in each copy: `/(?:[^<]b)+/v` does not match `ab`; \
                 `[^<]+`, `(?:[^<]b)*` and `([^<]b)+` are taken)",
            ));
        }
        Ok(())
    }
}

impl Parser<'_> {
    /// A `[…]` class with the `v` flag, at its `[`.
    pub(super) fn class_set(&mut self) -> Result<(), JsRegexError> {
        let start = self.pos;
        if self.src[start..].starts_with("[^") {
            self.negated_sets.push(start);
        }
        let set = self.nested_class(start)?;
        let mut strings: Vec<&Vec<char>> = set.strings.iter().collect();
        if strings.is_empty() {
            self.emit_set(&set.chars);
            return Ok(());
        }
        // Longest first; the characters come between the longer strings and the empty one.
        strings.sort_by_key(|s| std::cmp::Reverse(s.len()));
        self.out.push_str("(?:");
        let mut first = true;
        let mut chars_written = set.chars.ranges().is_empty();
        for string in strings {
            if string.len() < 2 && !chars_written {
                self.alternative_separator(&mut first);
                self.emit_set(&set.chars);
                chars_written = true;
            }
            self.alternative_separator(&mut first);
            for &c in string {
                self.emit_char(c);
            }
        }
        if !chars_written {
            self.alternative_separator(&mut first);
            self.emit_set(&set.chars);
        }
        self.out.push(')');
        Ok(())
    }

    fn alternative_separator(&mut self, first: &mut bool) {
        if !std::mem::take(first) {
            self.out.push('|');
        }
    }

    /// `[…]` at its `[`: the operands joined by one kind of operator, then negated if it says `^`.
    fn nested_class(&mut self, start: usize) -> Result<ClassSet, JsRegexError> {
        self.bump();
        if self.depth == MAX_NESTING {
            return Err(unsupported(format!("nesting deeper than {MAX_NESTING}"), start, ""));
        }
        self.depth += 1;
        let negated = self.eat('^');
        let mut set = ClassSet::default();
        let mut operator = None;
        let mut operands = 0;
        loop {
            if self.eat(']') {
                break;
            }
            if self.peek().is_none() {
                return Err(syntax("unterminated character class", start));
            }
            let this = if self.src[self.pos..].starts_with("&&") {
                self.pos += 2;
                Some(Operator::Intersection)
            } else if self.src[self.pos..].starts_with("--") {
                self.pos += 2;
                Some(Operator::Difference)
            } else {
                None
            };
            let operand_at = self.pos;
            if matches!(this, Some(Operator::Difference)) && self.flags.ignore_case && !self.starts_a_class_operand() {
                // Node 20's V8 (11.3) leaves the set as it was: `/[[a-c]--a]/iv` still matches `a`.
                return Err(unsupported(
                    "a single character or \\q{…} subtracted with the `i` flag",
                    operand_at,
                    " (V8 ignores it there; a nested class, `--[a]`, subtracts as the spec says)",
                ));
            }
            let (mut operand, mut kind) = self.class_set_operand()?;
            // A range `a-b` (only in a union): single characters on both sides.
            if this.is_none() && self.peek() == Some('-') && !self.src[self.pos..].starts_with("--") {
                let Operand::Char(low) = kind else { return Err(syntax("invalid character class", operand_at)) };
                self.bump();
                let high_at = self.pos;
                let Operand::Char(high) = self.class_set_operand()?.1 else {
                    return Err(syntax("invalid character class", high_at));
                };
                if low > high {
                    return Err(syntax("range out of order in character class", operand_at));
                }
                operand = ClassSet::default();
                push_scalar_range(&mut operand.chars, low, high);
                kind = Operand::Other;
            }
            if !matches!(kind, Operand::Folded) {
                self.fold_case(&mut operand);
            }
            match (this, operands) {
                (None, 0) => set = operand,
                (None, _) if matches!(operator, None | Some(Operator::Union)) => {
                    operator = Some(Operator::Union);
                    set.chars.union(&operand.chars);
                    set.strings.extend(operand.strings);
                }
                (Some(op @ Operator::Intersection), n)
                    if n > 0 && !matches!(operator, Some(Operator::Union | Operator::Difference)) =>
                {
                    operator = Some(op);
                    set.chars.intersect(&operand.chars);
                    set.strings.retain(|s| operand.strings.contains(s));
                }
                (Some(op @ Operator::Difference), n)
                    if n > 0 && !matches!(operator, Some(Operator::Union | Operator::Intersection)) =>
                {
                    operator = Some(op);
                    set.chars.difference(&operand.chars);
                    set.strings.retain(|s| !operand.strings.contains(s));
                }
                _ => return Err(syntax("invalid set operation in character class", operand_at)),
            }
            operands += 1;
        }
        self.depth -= 1;
        if negated {
            if !set.strings.is_empty() {
                return Err(syntax("negated character class may contain strings", start));
            }
            // Case classes stay whole: the complement of closed sets is closed.
            negate(&mut set.chars);
        }
        Ok(set)
    }

    /// One operand: a nested class, `\q{…}`, an escape or a character, and what kind it is: a nested
    /// class and a negated escape are case-folded already; the others are folded by the caller, after
    /// ranges.
    fn class_set_operand(&mut self) -> Result<(ClassSet, Operand), JsRegexError> {
        let start = self.pos;
        let mut operand = ClassSet::default();
        let mut kind = Operand::Other;
        match self.peek() {
            Some('[') => return Ok((self.nested_class(start)?, Operand::Folded)),
            Some('\\') if self.peek_at(1) == Some('q') && self.peek_at(2) == Some('{') => {
                self.pos += 3;
                operand = self.string_disjunction(start)?;
            }
            Some('\\') if self.peek_at(1).is_some_and(|c| RESERVED_PUNCTUATORS.contains(c)) => {
                self.bump();
                let c = self.bump().unwrap_or('\\') as u32;
                push_scalar_range(&mut operand.chars, c, c);
                kind = Operand::Char(c);
            }
            Some('\\') => {
                self.refuse_string_property()?;
                let negated = self.complement_folded_first();
                match self.escape(true)? {
                    Escape::Char(cp) => {
                        push_scalar_range(&mut operand.chars, cp, cp);
                        kind = Operand::Char(cp);
                    }
                    Escape::Backslash => {
                        push_scalar_range(&mut operand.chars, '\\' as u32, '\\' as u32);
                        kind = Operand::Char('\\' as u32);
                    }
                    Escape::Set(set) => {
                        operand.chars = set;
                        if negated {
                            self.fold_complement(&mut operand.chars);
                            return Ok((operand, Operand::Folded));
                        }
                    }
                }
            }
            Some(c) => {
                self.bump();
                push_scalar_range(&mut operand.chars, c as u32, c as u32);
                kind = Operand::Char(c as u32);
            }
            None => return Err(syntax("unterminated character class", start)),
        }
        Ok((operand, kind))
    }

    /// `\q{…}` after its `{`: alternatives of characters, each one a string (one character: a character).
    fn string_disjunction(&mut self, start: usize) -> Result<ClassSet, JsRegexError> {
        let mut set = ClassSet::default();
        let mut string = Vec::new();
        loop {
            let c = match self.peek() {
                None => return Err(syntax("unterminated class string disjunction", start)),
                Some('}') | Some('|') => {
                    let end = self.bump() == Some('}');
                    match std::mem::take(&mut string)[..] {
                        [c] => push_scalar_range(&mut set.chars, c as u32, c as u32),
                        ref other => {
                            set.strings.insert(other.to_vec());
                        }
                    }
                    if end {
                        return Ok(set);
                    }
                    continue;
                }
                Some('\\') if self.peek_at(1).is_some_and(|c| RESERVED_PUNCTUATORS.contains(c)) => {
                    self.bump();
                    self.bump().unwrap_or('\\')
                }
                Some('\\') => match self.escape(true)? {
                    Escape::Char(cp) => char::from_u32(cp).ok_or_else(|| {
                        unsupported(format!("lone surrogate \\u{cp:04X}"), start, super::parser::SURROGATE_HINT)
                    })?,
                    Escape::Backslash => '\\',
                    Escape::Set(_) => return Err(syntax("invalid escape in class string disjunction", start)),
                },
                Some(c) => {
                    self.bump();
                    c
                }
            };
            string.push(c);
        }
    }

    /// Whether the next operand is a nested class or a class escape (`\d`, `\p{…}`...).
    fn starts_a_class_operand(&self) -> bool {
        match (self.peek(), self.peek_at(1)) {
            (Some('['), _) => true,
            (Some('\\'), Some(c)) => "dDsSwWpP".contains(c),
            _ => false,
        }
    }

    /// `\p{…}` naming a property of strings, refused by name.
    pub(super) fn refuse_string_property(&self) -> Result<(), JsRegexError> {
        let rest = &self.src[self.pos..];
        let Some(name) = rest.strip_prefix("\\p{").and_then(|r| r.split('}').next()) else { return Ok(()) };
        if STRING_PROPERTIES.contains(&name) {
            return Err(unsupported(
                format!("property of strings \\p{{{name}}}"),
                self.pos,
                " (the engine has no emoji sequence tables)",
            ));
        }
        Ok(())
    }

    /// With `i`, the operand's characters closed under simple case folding, and its strings keyed by
    /// their case-folded spelling (strings keep the spelling met first: `emit_char` folds them anyway).
    fn fold_case(&self, operand: &mut ClassSet) {
        self.apply_ignore_case(&mut operand.chars);
        if self.flags.ignore_case {
            operand.strings = std::mem::take(&mut operand.strings)
                .into_iter()
                .map(|s| s.into_iter().map(simple_fold).collect())
                .collect();
        }
    }

    /// `set` is the complement of a property or class escape (`\P{…}`, `\W`...): with `i` and `v`, the
    /// complement of the closed positive set, not the closure of the complement.
    pub(super) fn fold_complement(&self, set: &mut ClassUnicode) {
        negate(set);
        self.apply_ignore_case(set);
        negate(set);
    }
}
