//! Replacement templates with JavaScript's `String.prototype.replace` substitution rules.

use std::sync::Arc;

use regex_syntax::hir::Hir;

use crate::error::RuleError;

/// One piece of a parsed replacement template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Part {
    Literal(Vec<u8>),
    WholeMatch,
    Group(usize),
    Named(String),
}

/// A replacement string parsed once, when the rule is created (ECMAScript `GetSubstitution`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// `group_count` excludes group 0; `has_named` says whether the regex has named groups
    /// (without them `$<` is literal, as in JS).
    pub(super) fn parse(text: &str, group_count: usize, has_named: bool) -> Result<Self, RuleError> {
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

    /// Whether expanding needs capture groups (not just the match span).
    pub(super) fn needs_groups(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Group(_) | Part::Named(_)))
    }

    /// What an expansion is made of, in order.
    pub(super) fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// Appends the expansion to `out`. `group` gives a capture group's bytes by index,
    /// `named` by name; a group that did not participate expands to nothing, as in JS.
    pub(super) fn expand<'h>(
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

/// The request and response a replacement function is shown: Browsersync's `req` and `res`. Header
/// names are lower-case, values as they are on the wire (lossy UTF-8), in order, duplicates kept.
#[derive(Debug, Clone, Default)]
pub struct Exchange {
    /// The request method.
    pub method: String,
    /// The request target as the client sent it (path and query).
    pub url: String,
    /// The request's headers, as the client sent them.
    pub request_headers: Vec<(String, String)>,
    /// The response's status code.
    pub status: u16,
    /// The response's headers, as they go to the client.
    pub response_headers: Vec<(String, String)>,
}

/// What a replacement function is called with: Browsersync's `(req, res)` when the caller has them,
/// then JS's `(match, p1, ..., pn, offset, string, groups)` without `string`, which only the caller can
/// know (a streamed body is never held whole).
#[derive(Debug, Clone, Copy)]
pub struct ReplaceCall<'a> {
    /// The request and response of the body being rewritten; `None` outside the proxy (`rewrite()`).
    pub exchange: Option<&'a std::sync::Arc<Exchange>>,
    /// The matched text.
    pub whole: &'a str,
    /// Each capture group, `None` when it did not participate.
    pub groups: &'a [Option<&'a str>],
    /// Each group's name (`names[i]` is the name of `groups[i]`); `None` when the pattern has no named
    /// group, where JS passes no `groups` object either.
    pub names: Option<&'a [Option<&'a str>]>,
    /// Where the match starts in the rule's input, in UTF-16 code units as JS counts string indexes.
    /// Bytes that are not UTF-8 count as the U+FFFD they decode to (see [`Utf16Counter`]).
    pub offset: usize,
}

/// A replacement computed by user code (a JS function in the Node binding).
pub trait ReplaceFn: Send + Sync {
    /// The text that replaces this match, or the error message to fail the body with.
    fn replace(&self, call: &ReplaceCall) -> Result<String, String>;
}

/// Counts the UTF-16 code units of a byte stream fed in arbitrary pieces, as if it were decoded
/// lossily: UTF-8 characters count 1 unit, or 2 from U+10000 on; every maximal invalid subpart counts
/// as the one U+FFFD it decodes to (the WHATWG decoder browsers use, and `String::from_utf8_lossy`).
/// So an offset is an index into the string a browser, or JS, would see.
#[derive(Debug, Default, Clone, Copy)]
pub struct Utf16Counter {
    units: usize,
    /// Continuation bytes the current character still needs (0: between characters).
    needed: u8,
    /// The range the next continuation byte must fall in (it excludes overlongs and surrogates).
    lower: u8,
    upper: u8,
    /// Units the current character counts once complete.
    pending: u8,
}

impl Utf16Counter {
    /// Counts `bytes`, the continuation of everything fed before.
    pub fn feed(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() {
            let byte = bytes[i];
            if self.needed == 0 {
                // ASCII runs: the common case, one unit per byte.
                let run = bytes[i..].iter().take_while(|b| b.is_ascii()).count();
                self.units += run;
                i += run;
                let Some(&lead) = bytes.get(i) else { break };
                let (needed, lower, upper, units) = match lead {
                    0xC2..=0xDF => (1, 0x80, 0xBF, 1),
                    0xE0 => (2, 0xA0, 0xBF, 1),
                    0xED => (2, 0x80, 0x9F, 1),
                    0xE1..=0xEF => (2, 0x80, 0xBF, 1),
                    0xF0 => (3, 0x90, 0xBF, 2),
                    0xF4 => (3, 0x80, 0x8F, 2),
                    0xF1..=0xF3 => (3, 0x80, 0xBF, 2),
                    // A byte that starts no character: one U+FFFD.
                    _ => {
                        self.units += 1;
                        i += 1;
                        continue;
                    }
                };
                (self.needed, self.lower, self.upper, self.pending) = (needed, lower, upper, units);
                i += 1;
                continue;
            }
            if !(self.lower..=self.upper).contains(&byte) {
                // The character is cut short: one U+FFFD, then this byte starts afresh.
                self.units += 1;
                self.needed = 0;
                continue;
            }
            (self.lower, self.upper) = (0x80, 0xBF);
            self.needed -= 1;
            if self.needed == 0 {
                self.units += usize::from(self.pending);
            }
            i += 1;
        }
    }

    /// Units before the next character: an unfinished one counts as the U+FFFD it becomes when the
    /// next byte does not continue it (a match never starts with a continuation byte).
    pub fn units(&self) -> usize {
        self.units + usize::from(self.needed > 0)
    }
}

/// What a rule puts in place of a match.
#[derive(Clone)]
pub(super) enum Replacement {
    Template(Template),
    Function(Arc<dyn ReplaceFn>),
    /// The proxy's own origin as the request reached it (its `Host`), percent-encoded:
    /// `http%3A%2F%2Flocalhost%3A3000` for `scheme` `http`.
    EncodedLocalOrigin {
        scheme: &'static str,
    },
    /// `$&` followed by the snippet, its `<script>`s given the page's nonce when its policy asks
    /// (see `crate::csp`).
    Snippet(String),
    /// A `<meta http-equiv="Content-Security-Policy">` tag, amended for the snippet.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    MetaPolicy,
}

impl Replacement {
    /// Writes the [`Replacement::EncodedLocalOrigin`] for a request whose `Host` is `local_host`.
    pub(super) fn write_encoded_origin(scheme: &str, local_host: &str, out: &mut Vec<u8>) {
        write_encoded_origin(scheme, local_host, out);
    }
}

/// `scheme://local_host` percent-encoded: the proxy's origin where a page or a `Location` carries the
/// target's encoded.
fn write_encoded_origin(scheme: &str, local_host: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(percent_encode_origin(&format!("{scheme}://{local_host}")).as_bytes());
}

/// An origin or host percent-encoded as `encodeURIComponent` writes its `:`, `/`, `[` and `]`
/// (`http%3A%2F%2Flocalhost%3A3000`): the form in which origins travel inside query strings. The one
/// encoder of the page rule, the `Location`/`Refresh` rewrite and the request side's reverse rules.
pub(crate) fn percent_encode_origin(text: &str) -> String {
    use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
    const ORIGIN: &AsciiSet = &CONTROLS.add(b':').add(b'/').add(b'[').add(b']');
    utf8_percent_encode(text, ORIGIN).to_string()
}

impl std::fmt::Debug for Replacement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Replacement::Template(t) => f.debug_tuple("Template").field(t).finish(),
            Replacement::Function(_) => f.write_str("Function"),
            Replacement::EncodedLocalOrigin { scheme } => write!(f, "EncodedLocalOrigin({scheme})"),
            Replacement::Snippet(snippet) => f.debug_tuple("Snippet").field(snippet).finish(),
            Replacement::MetaPolicy => f.write_str("MetaPolicy"),
        }
    }
}

/// The number of capture groups (without group 0) and whether any has a name.
pub(super) fn group_info(hir: &Hir) -> (usize, bool) {
    fn named(hir: &Hir) -> bool {
        use regex_syntax::hir::HirKind;
        match hir.kind() {
            HirKind::Capture(c) => c.name.is_some() || named(&c.sub),
            HirKind::Concat(hs) | HirKind::Alternation(hs) => hs.iter().any(named),
            HirKind::Repetition(r) => named(&r.sub),
            _ => false,
        }
    }
    (hir.properties().explicit_captures_len(), named(hir))
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
