//! Character sets: `[…]` classes, `.`, `\d \s \w`, JavaScript's case folding with and without `u`, and how a
//! set is written out. Every character matcher becomes an explicit set of code points here, so the engine's
//! own idea of `\s`, `\w` or `(?i)` never leaks in.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};

use super::escapes::Escape;
use super::parser::{syntax, Parser};
use super::unicode_tables::case_folding::SIMPLE_CASE_FOLDING;
use super::units::{push_scalar_range, push_unit_range};
use crate::error::JsRegexError;

/// A class the engine accepts that contains no character: matches nothing.
pub(super) const NEVER: &str = r"[^\x{0}-\x{10FFFF}]";

enum ClassAtom {
    /// A code point, or without `u` a UTF-16 unit (which may be a lone surrogate).
    Char(u32),
    Set(ClassUnicode),
}

impl Parser<'_> {
    pub(super) fn class(&mut self) -> Result<(), JsRegexError> {
        let start = self.pos;
        self.bump();
        let negated = self.eat('^');
        let mut set = ClassUnicode::empty();
        // Without `u` an astral character is two atoms: its high unit, then this, its low unit.
        let mut low = None;
        loop {
            let mut atom_start = self.pos;
            let first = match low.take() {
                Some((unit, at)) => {
                    atom_start = at;
                    ClassAtom::Char(unit)
                }
                None => {
                    match self.peek() {
                        None => return Err(syntax("unterminated character class", start)),
                        Some(']') => {
                            self.bump();
                            break;
                        }
                        Some(_) => {}
                    }
                    self.class_atom(&mut low)?
                }
            };
            if low.is_some() || self.peek() != Some('-') || matches!(self.peek_at(1), None | Some(']')) {
                self.add_atom(&mut set, first);
                continue;
            }
            let dash = self.pos;
            self.bump();
            match (first, self.class_atom(&mut low)?) {
                (ClassAtom::Char(a), ClassAtom::Char(b)) => {
                    if a > b {
                        return Err(syntax("range out of order in character class", atom_start));
                    }
                    self.add_range(&mut set, a, b);
                }
                (first, second) => {
                    if self.flags.unicode {
                        return Err(syntax("invalid character class", dash));
                    }
                    // Annex B: a class escape cannot bound a range, so the `-` is a literal.
                    self.add_atom(&mut set, first);
                    self.add_atom(&mut set, ClassAtom::Char('-' as u32));
                    self.add_atom(&mut set, second);
                }
            }
        }
        // JS folds the members, then inverts (the matcher negates the case-insensitive membership test).
        self.apply_ignore_case(&mut set);
        if negated {
            negate(&mut set);
        }
        self.emit_set(&set);
        Ok(())
    }

    /// The next class atom. Without `u`, an astral character gives its high unit, and its low unit (with the
    /// character's offset) in `low`.
    fn class_atom(&mut self, low: &mut Option<(u32, usize)>) -> Result<ClassAtom, JsRegexError> {
        let start = self.pos;
        let c = self.peek().expect("caller checked for end of pattern");
        if c == '\\' {
            return Ok(match self.escape(true)? {
                // Without `u` a lone surrogate is a unit of its own (see `units`); with `u` it matches nothing.
                Escape::Char(cp) => ClassAtom::Char(cp),
                Escape::Set(set) => ClassAtom::Set(set),
                Escape::Backslash => ClassAtom::Char('\\' as u32),
            });
        }
        self.bump();
        if !self.flags.unicode && is_astral(c) {
            // JS puts each UTF-16 half in the class on its own.
            let units = c.encode_utf16(&mut [0; 2]).iter().map(|&u| u32::from(u)).collect::<Vec<_>>();
            *low = Some((units[1], start));
            return Ok(ClassAtom::Char(units[0]));
        }
        Ok(ClassAtom::Char(c as u32))
    }

    fn add_atom(&self, set: &mut ClassUnicode, atom: ClassAtom) {
        match atom {
            ClassAtom::Char(c) => self.add_range(set, c, c),
            ClassAtom::Set(other) => set.union(&other),
        }
    }

    /// Adds the code points (with `u`; lone surrogates match nothing in UTF-8 text) or UTF-16 units
    /// `first..=last`.
    fn add_range(&self, set: &mut ClassUnicode, first: u32, last: u32) {
        if self.flags.unicode {
            push_scalar_range(set, first, last);
        } else {
            push_unit_range(set, first, last);
        }
    }

    /// `\d \D \s \S \w \W` with JavaScript's (ASCII, explicit) meaning.
    pub(super) fn class_escape_set(&self, c: char) -> ClassUnicode {
        let mut set = match c.to_ascii_lowercase() {
            'd' => ranges(&[('0', '9')]),
            's' => ranges(JS_WHITESPACE),
            _ => {
                let mut word = ranges(&[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')]);
                // With `iu`, JS adds the characters whose case folding is an ASCII word character: ſ (U+017F)
                // and K (U+212A).
                if self.flags.unicode && self.flags.ignore_case {
                    word.union(&ranges(&[('\u{17F}', '\u{17F}'), ('\u{212A}', '\u{212A}')]));
                }
                word
            }
        };
        if c.is_ascii_uppercase() {
            negate(&mut set);
        }
        set
    }

    pub(super) fn dot_set(&self) -> ClassUnicode {
        let mut set = ranges(JS_LINE_TERMINATORS);
        if self.flags.dot_all {
            set = ClassUnicode::empty();
        }
        negate(&mut set);
        set
    }

    /// With the `i` flag, widens `set` to every character JS would consider equal to a member (JS
    /// Canonicalize; differs with and without `u`).
    pub(super) fn apply_ignore_case(&self, set: &mut ClassUnicode) {
        if !self.flags.ignore_case {
            return;
        }
        // `u` mode canonicalizes with simple case folding (Unicode 17.0, `unicode_tables`), the other with
        // `legacy_canonicalize`.
        case_closure(set, if self.flags.unicode { simple_case_table() } else { legacy_case_table() });
    }

    pub(super) fn emit_char(&mut self, c: char) {
        // Without `u` an astral character is a pair of units with no case: its four bytes.
        if self.flags.ignore_case && (self.flags.unicode || !is_astral(c)) {
            let mut set = ranges(&[(c, c)]);
            self.apply_ignore_case(&mut set);
            self.emit_set(&set);
        } else if is_astral(c) && !self.flags.unicode {
            self.emit_astral(c);
        } else {
            push_literal(&mut self.out, c);
        }
    }

    /// Emits a set of characters (with `u`) or of UTF-16 units (without, see `units`) as one engine atom.
    pub(super) fn emit_set(&mut self, set: &ClassUnicode) {
        if self.flags.unicode {
            self.emit_code_points(set);
        } else {
            self.emit_unit_set(set);
        }
    }

    /// Emits a set of code points as a single engine atom, writing every class member as `\x{…}` so the
    /// engine's class syntax (`&&`, `--`, `~~`, `[`) never applies.
    pub(super) fn emit_code_points(&mut self, set: &ClassUnicode) {
        let mut set = set.clone();
        join_across_surrogates(&mut set);
        let ranges = set.ranges();
        match ranges {
            [] => self.out.push_str(NEVER),
            [r] if r.start() == r.end() => push_literal(&mut self.out, r.start()),
            [r] if r.start() == '\0' && r.end() == char::MAX => self.out.push_str("(?s:.)"),
            _ => {
                let mut complement = set.clone();
                negate(&mut complement);
                join_across_surrogates(&mut complement);
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

/// `set.negate()`, after `join_across_surrogates`.
pub(super) fn negate(set: &mut ClassUnicode) {
    join_across_surrogates(set);
    set.negate();
}

/// Joins a range that ends at U+D7FF to one that starts at U+E000. regex-syntax keeps them apart (it
/// merges ranges by number, and the surrogates lie between), then negates the gap between them into the
/// range U+D7FF-U+E000: `[^\u{D7FF}\u{E000}]` matched both, and so did the engine's own `[^…]` of such a
/// class.
fn join_across_surrogates(set: &mut ClassUnicode) {
    let ranges = set.ranges();
    if let Some(i) = ranges.windows(2).position(|w| w[0].end() == '\u{D7FF}' && w[1].start() == '\u{E000}') {
        let mut joined = ranges.to_vec();
        joined[i] = ClassUnicodeRange::new(joined[i].start(), joined[i + 1].end());
        joined.remove(i + 1);
        *set = ClassUnicode::new(joined);
    }
}

pub(super) fn is_astral(c: char) -> bool {
    c as u32 > 0xFFFF
}

fn ranges(pairs: &[(char, char)]) -> ClassUnicode {
    ClassUnicode::new(pairs.iter().map(|&(a, b)| ClassUnicodeRange::new(a, b)))
}

pub(super) fn class_contains(set: &ClassUnicode, c: char) -> bool {
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

/// A literal outside a class: meta characters escaped, anything invisible or unusual as `\x{…}` so the
/// emitted pattern stays readable.
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

/// JS WhiteSpace and LineTerminator, i.e. `\s`. Not the engine's `\s`, which lacks U+FEFF and has U+0085.
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

/// JS Canonicalize without `u` (ES2024 22.2.2.7.3): the upper case if it is a single UTF-16 code unit, except
/// that nothing non-ASCII maps into ASCII (so `ſ` and the Kelvin sign stay apart from `s` and `k`).
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

/// Groups of characters that share a canonical form (only groups of two or more), and each member's group.
struct CaseTable {
    groups: Vec<Vec<char>>,
    group_of: HashMap<char, usize>,
}

impl CaseTable {
    fn new(pairs: impl Iterator<Item = (char, char)>) -> CaseTable {
        let mut by_canon: HashMap<char, Vec<char>> = HashMap::new();
        for (c, canon) in pairs {
            by_canon.entry(canon).or_default().push(c);
        }
        let mut groups: Vec<Vec<char>> = by_canon.into_values().filter(|g| g.len() > 1).collect();
        groups.sort();
        let group_of = groups.iter().enumerate().flat_map(|(i, g)| g.iter().map(move |&c| (c, i))).collect();
        CaseTable { groups, group_of }
    }
}

/// Without `u`: BMP characters by `legacy_canonicalize`.
fn legacy_case_table() -> &'static CaseTable {
    static TABLE: OnceLock<CaseTable> = OnceLock::new();
    TABLE.get_or_init(|| CaseTable::new((0..=0xFFFF).filter_map(char::from_u32).map(|c| (c, legacy_canonicalize(c)))))
}

/// With `u` or `v`: characters by their simple case folding (Unicode 17.0, not regex-syntax's tables).
fn simple_case_table() -> &'static CaseTable {
    static TABLE: OnceLock<CaseTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let folded = SIMPLE_CASE_FOLDING.iter().filter_map(|&(c, f)| Some((char::from_u32(c)?, char::from_u32(f)?)));
        // A folding is its own canonical form (it has no entry of its own).
        CaseTable::new(folded.flat_map(|(c, f)| [(c, f), (f, f)]).collect::<HashSet<_>>().into_iter())
    })
}

/// `c`'s simple case folding (Unicode 17.0): equal for characters equal under `iu` / `iv`.
pub(super) fn simple_fold(c: char) -> char {
    SIMPLE_CASE_FOLDING
        .binary_search_by_key(&(c as u32), |&(from, _)| from)
        .ok()
        .and_then(|i| char::from_u32(SIMPLE_CASE_FOLDING[i].1))
        .unwrap_or(c)
}

/// Adds to `set` every character with the same canonical form in `table` as a member.
fn case_closure(set: &mut ClassUnicode, table: &CaseTable) {
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
