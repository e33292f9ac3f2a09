//! Classes with the `v` flag (ES2024 `unicodeSets`): nested classes, `&&` intersection, `--` difference and
//! `\q{…}` strings. A class is a set of characters plus a set of strings; it is written out as an
//! alternation, its longer strings first (as JavaScript tries them, in a trie: see `Trie`), then the
//! characters, then the empty string. With `i`, every operand is closed under simple case folding before
//! the set operations: that is the spec's `MaybeSimpleCaseFolding` and `CharacterComplement` seen as sets
//! of whole case classes.
//! A property of strings (`\p{RGI_Emoji}`..., Unicode 17.0's lists in `unicode_tables`) is such a set too,
//! in a class or alone. What may contain strings cannot be negated (`[^\p{RGI_Emoji}]`, `\P{RGI_Emoji}`):
//! a syntax error, decided on the pattern as the spec's `MayContainStrings` does, not on the set it makes.
//!
//! The source comes from a `RegExp` V8 built, so it is valid `v` syntax; what is not is refused as a
//! syntax error rather than read some other way.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use regex_syntax::hir::ClassUnicode;

use super::classes::{negate, simple_fold};
use super::escapes::Escape;
use super::parser::{syntax, unsupported, Parser, MAX_NESTING};
use super::unicode_tables::string_property_names::STRING_PROPERTIES;
use super::units::push_scalar_range;
use crate::error::JsRegexError;

/// Punctuators a `v` class may escape (`ClassSetReservedPunctuator`).
const RESERVED_PUNCTUATORS: &str = "&-!#%,:;<=>@`~";

/// What a `v` class matches: single characters, and strings of any other length.
struct ClassSet {
    chars: ClassUnicode,
    /// By case-folded key (equal to the string without `i`), each with a spelling to write out.
    strings: BTreeSet<Vec<char>>,
    /// The spec's `MayContainStrings`: what the pattern says, whatever the set holds (`[\q{ab}--\q{ab}]`).
    may_contain_strings: bool,
}

impl Default for ClassSet {
    fn default() -> ClassSet {
        ClassSet { chars: ClassUnicode::empty(), strings: BTreeSet::new(), may_contain_strings: false }
    }
}

/// A class's strings by their characters (case-folded with `i`). JavaScript tries the strings longest
/// first; two strings that both match at a place are one the start of the other, so a trie that tries a
/// node's longer branches before the string ending there finds the same match, and its branches with the
/// same rest joined (`[©®]\x{FE0F}`) keep the automata small: `\p{RGI_Emoji}` holds 3953 strings.
#[derive(Default)]
struct Trie {
    /// A string ends here.
    end: bool,
    next: BTreeMap<char, Trie>,
}

impl Trie {
    fn insert(&mut self, string: &[char]) {
        let mut node = self;
        for &c in string {
            node = node.next.entry(c).or_default();
        }
        node.end = true;
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
        self.emit_class_set(&set);
        Ok(())
    }

    /// `\p{…}` of a property of strings outside a class, at its `\`; whether it has single code points (V8
    /// then counts it as unable to match empty, and `RepeatedAtom` must know: `/(?:[^<]\p{RGI_Emoji})+/v`
    /// is unrolled, `/(?:[^<]\p{RGI_Emoji_Flag_Sequence})+/v` is not).
    pub(super) fn string_property_atom(&mut self) -> bool {
        let mut set = self.string_property().unwrap_or_default();
        self.fold_case(&mut set);
        self.emit_class_set(&set);
        !set.chars.ranges().is_empty()
    }

    /// Writes out a set: an alternation of its strings, longest first, its characters before the strings of
    /// one character or none (the empty one), as JavaScript tries them; the strings as a trie (`Trie`).
    fn emit_class_set(&mut self, set: &ClassSet) {
        if set.strings.is_empty() {
            self.emit_set(&set.chars);
            return;
        }
        let mut trie = Trie::default();
        for string in &set.strings {
            trie.insert(string);
        }
        let mut alternatives = self.trie_branches(&trie);
        if !set.chars.ranges().is_empty() {
            alternatives.push(self.written(|p| p.emit_set(&set.chars)));
        }
        if trie.end {
            alternatives.push(String::new());
        }
        self.out.push_str("(?:");
        self.out.push_str(&alternatives.join("|"));
        self.out.push(')');
    }

    /// A node's branches written out, those whose rests are written alike joined: `[©®]\x{FE0F}`.
    fn trie_branches(&mut self, node: &Trie) -> Vec<String> {
        let mut branches: Vec<(String, ClassUnicode, char)> = Vec::new();
        let mut by_rest: HashMap<String, usize> = HashMap::new();
        for (&c, child) in &node.next {
            let rest = self.trie_rest(child);
            match by_rest.get(&rest) {
                Some(&i) => push_scalar_range(&mut branches[i].1, c as u32, c as u32),
                None => {
                    by_rest.insert(rest.clone(), branches.len());
                    let mut first = ClassUnicode::empty();
                    push_scalar_range(&mut first, c as u32, c as u32);
                    branches.push((rest, first, c));
                }
            }
        }
        branches
            .into_iter()
            .map(|(rest, mut chars, c)| {
                let mut head = self.written(|p| {
                    if chars.ranges().len() == 1 && chars.ranges()[0].start() == chars.ranges()[0].end() {
                        p.emit_char(c);
                    } else {
                        p.apply_ignore_case(&mut chars);
                        p.emit_set(&chars);
                    }
                });
                head.push_str(&rest);
                head
            })
            .collect()
    }

    /// What follows a node's character: nothing, its one branch, or its branches then the empty string
    /// when a string ends there (the longer ones first).
    fn trie_rest(&mut self, node: &Trie) -> String {
        let mut branches = self.trie_branches(node);
        if node.end && !branches.is_empty() {
            branches.push(String::new());
        }
        match branches.len() {
            0 => String::new(),
            1 => branches.swap_remove(0),
            _ => format!("(?:{})", branches.join("|")),
        }
    }

    /// What `write` writes, taken out of the pattern.
    fn written(&mut self, write: impl FnOnce(&mut Self)) -> String {
        let before = std::mem::take(&mut self.out);
        write(self);
        std::mem::replace(&mut self.out, before)
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
                    set.may_contain_strings |= operand.may_contain_strings;
                }
                (Some(op @ Operator::Intersection), n)
                    if n > 0 && !matches!(operator, Some(Operator::Union | Operator::Difference)) =>
                {
                    operator = Some(op);
                    set.chars.intersect(&operand.chars);
                    set.strings.retain(|s| operand.strings.contains(s));
                    set.may_contain_strings &= operand.may_contain_strings;
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
            if set.may_contain_strings {
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
            Some('\\') if self.string_property_name().is_some() => {
                operand = self.string_property().unwrap_or_default();
            }
            Some('\\') => {
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
                            set.may_contain_strings = true;
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

    /// The property of strings the `\p{…}` at the current `\` names (`v` only, no aliases), if any.
    pub(super) fn string_property_name(&self) -> Option<&'static str> {
        let name = self.src[self.pos..].strip_prefix("\\p{")?.split('}').next()?;
        STRING_PROPERTIES.iter().find(|(n, _)| *n == name).map(|(n, _)| *n)
    }

    /// The property of strings at the current `\p{…}`, which it passes: its code points and its strings
    /// (Unicode 17.0's lists: Node 20's V8, ICU 78, has the same).
    fn string_property(&mut self) -> Option<ClassSet> {
        let name = self.string_property_name()?;
        self.pos += name.len() + "\\p{}".len();
        let (_, parts) = STRING_PROPERTIES.iter().find(|(n, _)| *n == name)?;
        let mut set = ClassSet { may_contain_strings: true, ..ClassSet::default() };
        for (ranges, strings) in parts.iter() {
            for &(first, last) in ranges.iter() {
                push_scalar_range(&mut set.chars, first, last);
            }
            set.strings.extend(strings.iter().map(|s| s.chars().collect::<Vec<char>>()));
        }
        Some(set)
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
