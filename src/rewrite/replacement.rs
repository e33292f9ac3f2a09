//! Replacement templates with JavaScript's `String.prototype.replace` substitution rules.

use std::sync::Arc;

use crate::error::RuleError;

/// One piece of a parsed replacement template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(Vec<u8>),
    WholeMatch,
    Group(usize),
    Named(String),
}

/// A replacement string parsed once, when the rule is created (ECMAScript `GetSubstitution`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// `group_count` excludes group 0; `has_named` says whether the regex has named groups
    /// (without them `$<` is literal, as in JS).
    pub fn parse(text: &str, group_count: usize, has_named: bool) -> Result<Self, RuleError> {
        let bytes = text.as_bytes();
        let mut parts = Vec::new();
        let mut literal = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] != b'$' || i + 1 == bytes.len() {
                literal.push(bytes[i]);
                i += 1;
                continue;
            }
            let next = bytes[i + 1];
            let (part, consumed) = match next {
                b'$' => (Some(Part::Literal(vec![b'$'])), 2),
                b'&' => (Some(Part::WholeMatch), 2),
                b'`' | b'\'' => {
                    return Err(RuleError::Replacement(format!(
                        "`${}` needs the text around the match, which a streaming engine does not hold; use a capture group instead",
                        next as char
                    )))
                }
                b'0'..=b'9' => {
                    let two = bytes.get(i + 2).filter(|b| b.is_ascii_digit());
                    let mut digits = 1;
                    let mut index = (next - b'0') as usize;
                    if let Some(&d) = two {
                        let two_index = index * 10 + (d - b'0') as usize;
                        // JS reinterprets `$nn` past the group count as `$n` followed by a digit.
                        if two_index <= group_count {
                            digits = 2;
                            index = two_index;
                        }
                    }
                    if (1..=group_count).contains(&index) {
                        (Some(Part::Group(index)), 1 + digits)
                    } else {
                        (None, 1 + digits)
                    }
                }
                b'<' if has_named => match text[i + 2..].find('>') {
                    Some(end) => (Some(Part::Named(text[i + 2..i + 2 + end].to_string())), end + 3),
                    None => (None, 2),
                },
                _ => (None, 1),
            };
            match part {
                Some(Part::Literal(bytes)) => literal.extend_from_slice(&bytes),
                Some(part) => {
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(part);
                }
                None => literal.extend_from_slice(&bytes[i..i + consumed]),
            }
            i += consumed;
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(Template { parts })
    }

    /// A template that inserts `text` verbatim.
    pub fn literal(text: &str) -> Self {
        Template { parts: vec![Part::Literal(text.as_bytes().to_vec())] }
    }

    /// `$&` followed by `text` verbatim: the snippet rule's replacement.
    pub fn match_then(text: &str) -> Self {
        Template { parts: vec![Part::WholeMatch, Part::Literal(text.as_bytes().to_vec())] }
    }

    /// Whether expanding needs capture groups (not just the match span).
    pub fn needs_groups(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Group(_) | Part::Named(_)))
    }

    /// Appends the expansion to `out`. `group` gives a capture group's bytes by index,
    /// `named` by name; a group that did not participate expands to nothing, as in JS.
    pub fn expand<'h>(
        &self,
        whole: &[u8],
        group: impl Fn(usize) -> Option<&'h [u8]>,
        named: impl Fn(&str) -> Option<&'h [u8]>,
        out: &mut Vec<u8>,
    ) {
        for part in &self.parts {
            match part {
                Part::Literal(bytes) => out.extend_from_slice(bytes),
                Part::WholeMatch => out.extend_from_slice(whole),
                Part::Group(i) => out.extend_from_slice(group(*i).unwrap_or_default()),
                Part::Named(name) => out.extend_from_slice(named(name).unwrap_or_default()),
            }
        }
    }
}

/// A replacement computed by user code (a JS function in the Node binding).
/// Arguments mirror JS: the match, then each group (`None` when it did not participate),
/// then the match's byte offset in the body.
pub trait ReplaceFn: Send + Sync {
    fn replace(&self, whole: &str, groups: &[Option<&str>], offset: usize) -> Result<String, String>;
}

/// What a rule puts in place of a match.
#[derive(Clone)]
pub enum Replacement {
    Template(Template),
    Function(Arc<dyn ReplaceFn>),
}

impl std::fmt::Debug for Replacement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Replacement::Template(t) => f.debug_tuple("Template").field(t).finish(),
            Replacement::Function(_) => f.write_str("Function"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(template: &str, groups: &[Option<&str>], named: &[(&str, &str)]) -> String {
        let t = Template::parse(template, groups.len(), !named.is_empty()).unwrap();
        let mut out = Vec::new();
        t.expand(
            b"M",
            |i| groups.get(i - 1).copied().flatten().map(str::as_bytes),
            |n| named.iter().find(|(k, _)| *k == n).map(|(_, v)| v.as_bytes()),
            &mut out,
        );
        String::from_utf8(out).unwrap()
    }

    // Expected values computed with Node 20: "M".replace(/(M)/, template) and friends.
    #[test]
    fn follows_js_substitution_rules() {
        assert_eq!(expand("[$&]", &[], &[]), "[M]");
        assert_eq!(expand("$$", &[], &[]), "$");
        assert_eq!(expand("$", &[], &[]), "$");
        assert_eq!(expand("a$", &[], &[]), "a$");
        assert_eq!(expand("$0", &[Some("g")], &[]), "$0");
        assert_eq!(expand("$1", &[Some("g")], &[]), "g");
        assert_eq!(expand("$01", &[Some("g")], &[]), "g");
        assert_eq!(expand("$10", &[Some("g")], &[]), "g0");
        assert_eq!(expand("$2", &[Some("g")], &[]), "$2");
        assert_eq!(expand("$1", &[None], &[]), "");
        assert_eq!(expand("$<n>", &[Some("g")], &[("n", "g")]), "g");
        assert_eq!(expand("$<n>", &[Some("g")], &[]), "$<n>");
        assert_eq!(expand("$<x>", &[Some("g")], &[("n", "g")]), "");
        assert_eq!(expand("$<n", &[Some("g")], &[("n", "g")]), "$<n");
        assert_eq!(expand("$x", &[], &[]), "$x");
        let eleven: Vec<Option<&str>> = (0..11).map(|_| Some("k")).collect();
        assert_eq!(expand("$11", &eleven, &[]), "k");
        assert_eq!(expand("$é", &[], &[]), "$é");
    }

    #[test]
    fn rejects_text_around_the_match() {
        assert!(Template::parse("$`", 0, false).is_err());
        assert!(Template::parse("$'", 0, false).is_err());
    }
}
