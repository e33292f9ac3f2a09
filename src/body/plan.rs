//! Which responses are rewritten (Browsersync's choice), which rules run on them (the skip table's
//! decision), and HTML sniffing.

use std::sync::Arc;

use http::header::{self, HeaderMap};
use http::{Method, StatusCode};

use crate::codec::{self, Encoding};
use crate::rewrite::Rule;
use crate::skip::{SkipKey, SkipTable};
use crate::state::{PageMode, UserRules};

/// Extensions Browsersync never rewrites (resp-modifier's `defaultIgnoreTypes`), matched as
/// `\.ext(\?.*)?$` on the request URL.
const IGNORED_EXTENSIONS: &[&str] = &[
    "js", "json", "css", "png", "jpg", "jpeg", "gif", "ico", "tif", "tiff", "bmp", "webp", "psd", "svg", "woff", "ttf",
    "otf", "eot", "eps", "ps", "ai", "mp3", "wav", "aac", "m4a", "m3u", "mid", "wma", "mpg", "mpeg", "mp4", "m4v",
    "webm", "swf", "flv", "avi", "mov", "wmv", "pdf", "doc", "docx", "xls", "xlsx", "pps", "ppt", "pptx", "odt", "ods",
    "odp", "pages", "key", "rtf", "txt", "csv", "zip", "rar", "tar", "gz", "xml", "app", "exe", "jar", "dmg", "pkg",
    "iso",
];

fn ignored_url(path_and_query: &str) -> bool {
    // `\.ext(\?.*)?$`: the extension ends the path, or is followed by a query.
    let candidates = [path_and_query, path_and_query.split_once('?').map_or("", |(p, _)| p)];
    candidates
        .iter()
        .filter(|c| !c.is_empty())
        .any(|path| path.rsplit_once('.').is_some_and(|(_, ext)| IGNORED_EXTENSIONS.contains(&ext)))
}

/// Content types whose bodies carry links too (`rewriteTextTypes`).
fn is_text_type(content_type: &str) -> bool {
    let mime = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    mime == "text/css"
        || mime.contains("javascript")
        || mime.contains("ecmascript")
        || mime == "application/json"
        || mime.ends_with("+json")
        || mime == "image/svg+xml"
        || mime.ends_with("/xml")
        || mime.ends_with("+xml")
}

/// Whether a response is text that compresses well (what servers usually compress).
pub(crate) fn is_compressible(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|content_type| {
        content_type.trim_start().get(..5).is_some_and(|t| t.eq_ignore_ascii_case("text/"))
            || is_text_type(content_type)
    })
}

/// What to do with a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Bytes go through untouched, still compressed.
    Passthrough,
    /// Decode, rewrite, re-encode. With `sniff`, only if the decoded body starts like HTML.
    Rewrite { sniff: bool, decode: Encoding, encode: Encoding },
    /// An uncompressed body that is not rewritten, compressed in `encode` (a local text file).
    Compress { encode: Encoding },
}

/// The request facts the decision needs.
pub(crate) struct RequestFacts<'a> {
    pub method: &'a Method,
    pub path_and_query: &'a str,
    pub accept: Option<&'a str>,
    pub accept_encoding: Option<&'a str>,
    /// The proxy asked the upstream for an uncompressed body on the client's behalf.
    pub upstream_identity: bool,
    /// Pages only, any response, or none (a rule's `paths`, `snippetOptions`' lists).
    pub mode: PageMode,
}

/// Browsersync's request side of the choice: `Accept` mentions html and the URL is not an asset.
pub(crate) fn is_page_request(accept: Option<&str>, path_and_query: &str) -> bool {
    accept.is_some_and(|a| a.contains("html")) && !ignored_url(path_and_query)
}

/// Browsersync's choice (Accept mentions html, URL not an asset, body looks like HTML), plus the
/// text types when `rewrite_text_types` is on.
pub(crate) fn plan(req: &RequestFacts, status: StatusCode, headers: &HeaderMap, rewrite_text_types: bool) -> Plan {
    // No body, or a byte range of one: rewriting a range would corrupt the whole. An empty body (a
    // redirect's `Content-Length: 0`) goes out as it is, with its length, so a client that follows the
    // redirect without reading on is not seen as one that went away mid-body.
    let empty = headers.get(header::CONTENT_LENGTH).is_some_and(|length| length.as_bytes() == b"0");
    let untouchable = req.method == Method::HEAD
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::PARTIAL_CONTENT
        || status == StatusCode::NOT_MODIFIED
        || empty;
    if untouchable || req.mode == PageMode::Skipped {
        return Plan::Passthrough;
    }
    let encoding = headers.get(header::CONTENT_ENCODING).map(|v| v.to_str().unwrap_or("?"));
    let Some(decode) = Encoding::from_content_encoding(encoding) else { return Plan::Passthrough };
    let encode = codec::choose_output(decode, &codec::accepted(req.accept_encoding), req.upstream_identity);
    let html_request = is_page_request(req.accept, req.path_and_query);
    let text_type =
        rewrite_text_types && headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(is_text_type);
    if text_type || req.mode == PageMode::Forced {
        Plan::Rewrite { sniff: false, decode, encode }
    } else if html_request {
        Plan::Rewrite { sniff: true, decode, encode }
    } else {
        Plan::Passthrough
    }
}

/// The skip decision, in one place: which of the request's rules run on this response. User rules
/// that the skip table knows found nothing in this URL's body under this validator and rule set are
/// left out; without a validator (`key` is `None`), or with a rule that calls a function (`user` is
/// `None`), every rule runs. The memo tells the body's end what to remember.
pub(crate) fn rules_to_run(
    rules: &[Rule],
    user: Option<UserRules>,
    key: Option<SkipKey>,
    table: &Arc<SkipTable>,
) -> (Vec<Rule>, Option<SkipMemo>) {
    let (Some(user), Some(key)) = (user, key) else { return (rules.to_vec(), None) };
    let never = table.never_matched(&key, user.generation);
    let mut run = Vec::with_capacity(rules.len());
    let mut bits = Vec::with_capacity(rules.len());
    for (i, rule) in rules.iter().enumerate() {
        let bit = i.checked_sub(user.first).filter(|&b| b < user.count);
        if bit.is_some_and(|b| never & 1 << b != 0) {
            continue;
        }
        run.push(rule.clone());
        bits.push(bit);
    }
    (run, Some(SkipMemo { key, generation: user.generation, skipped: never, bits, table: table.clone() }))
}

/// What a body that went through whole tells the skip table.
pub(crate) struct SkipMemo {
    key: SkipKey,
    generation: u64,
    /// The user rules skipped on this response: they still find nothing.
    skipped: u64,
    /// For each rule that ran, in order: its user-rule bit, if it has one.
    bits: Vec<Option<usize>>,
    table: Arc<SkipTable>,
}

impl SkipMemo {
    /// Remembers the user rules that replaced nothing in the whole body (`matched`: per rule run).
    pub(crate) fn remember(self, matched: &[bool]) {
        let never = self
            .bits
            .iter()
            .zip(matched)
            .filter_map(|(bit, &matched)| bit.filter(|_| !matched))
            .fold(self.skipped, |never, bit| never | 1 << bit);
        self.table.remember(self.key, self.generation, never);
    }
}

/// Whether decoded bytes start like HTML: `/^(\uFEFF|\uFFFE)?\s*<[^>]+>/i`. `None`: need more bytes.
/// Only the leading characters are decoded; the tag's end is found with `memchr`.
pub(crate) fn looks_like_html(prefix: &[u8]) -> Option<bool> {
    const MARKS: [&[u8]; 2] = ["\u{FEFF}".as_bytes(), "\u{FFFE}".as_bytes()];
    let mut at = 0;
    for mark in MARKS {
        if prefix.starts_with(mark) {
            at = mark.len();
        } else if mark.starts_with(prefix) {
            return None;
        }
    }
    loop {
        let &byte = prefix.get(at)?;
        let width = match byte {
            0x00..=0x7F => 1,
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return Some(false),
        };
        let bytes = prefix.get(at..at + width)?;
        let Some(c) = std::str::from_utf8(bytes).ok().and_then(|s| s.chars().next()) else { return Some(false) };
        if !is_js_whitespace(c) {
            break;
        }
        at += width;
    }
    if prefix[at] != b'<' {
        return Some(false);
    }
    match prefix.get(at + 1) {
        None => None,
        Some(b'>') => Some(false),
        Some(_) => memchr::memchr(b'>', &prefix[at + 2..]).map(|_| true),
    }
}

fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_html_like_resp_modifier() {
        assert_eq!(looks_like_html(b"<!doctype html><p>"), Some(true));
        assert_eq!(looks_like_html("\u{FEFF}  \n<html>".as_bytes()), Some(true));
        assert_eq!(looks_like_html(b"  <htm"), None);
        assert_eq!(looks_like_html(b"   "), None);
        assert_eq!(looks_like_html(b"{\"a\": 1}"), Some(false));
        assert_eq!(looks_like_html(b"<>"), Some(false));
    }

    #[test]
    fn browsersync_ignores_assets_by_extension() {
        assert!(ignored_url("/app.js"));
        assert!(ignored_url("/app.css?v=1"));
        assert!(ignored_url("/a.iso"));
        assert!(!ignored_url("/"));
        assert!(!ignored_url("/page.html"));
        assert!(!ignored_url("/js/page"));
    }

    #[test]
    fn plans_like_browsersync() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_ENCODING, "gzip".parse().unwrap());
        let req = |accept| RequestFacts {
            method: &Method::GET,
            path_and_query: "/",
            accept: Some(accept),
            accept_encoding: Some("br, gzip"),
            upstream_identity: false,
            mode: PageMode::Pages,
        };
        assert_eq!(
            plan(&req("text/html"), StatusCode::OK, &headers, false),
            Plan::Rewrite { sniff: true, decode: Encoding::Gzip, encode: Encoding::Gzip }
        );
        assert_eq!(plan(&req("*/*"), StatusCode::OK, &headers, false), Plan::Passthrough);
        headers.insert(header::CONTENT_TYPE, "text/css".parse().unwrap());
        assert!(matches!(plan(&req("*/*"), StatusCode::OK, &headers, true), Plan::Rewrite { sniff: false, .. }));
        assert_eq!(plan(&req("text/html"), StatusCode::NOT_MODIFIED, &headers, false), Plan::Passthrough);
        // A redirect's empty body goes out as it came, with its length.
        let mut redirect = HeaderMap::new();
        redirect.insert(header::CONTENT_LENGTH, "0".parse().unwrap());
        redirect.insert(header::CONTENT_TYPE, "text/html".parse().unwrap());
        assert_eq!(plan(&req("text/html"), StatusCode::FOUND, &redirect, false), Plan::Passthrough);
        redirect.insert(header::CONTENT_LENGTH, "10".parse().unwrap());
        assert!(matches!(plan(&req("text/html"), StatusCode::FOUND, &redirect, false), Plan::Rewrite { .. }));
    }
}
