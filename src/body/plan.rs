//! Which responses are rewritten (Browsersync's choice), which rules run on them (the skip table's
//! decision), and HTML sniffing.

use std::sync::Arc;

use http::header::{self, HeaderMap};
use http::{Method, StatusCode};

use crate::codec::{self, Encoding};
use crate::rewrite::Rule;
use crate::skip::{SkipKey, SkipTable, SKIPPABLE_RULES};

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

/// JSON (`application/json`, `+json`): the types whose origins `rewriteJson` rewrites.
fn is_json(content_type: &str) -> bool {
    let mime = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

/// What is rewritten besides pages: text types with every rule (`rewriteTextTypes`), JSON's origins
/// (`rewriteJson`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BeyondPages {
    pub text_types: bool,
    pub json_origins: bool,
}

/// Which rules a rewritten body goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RuleSet {
    /// The request's: snippet, user rules, link rewrites.
    Page,
    /// Only the targets' exact origins, to the proxy's (`rewriteJson`, body/json.rs).
    JsonOrigins,
}

/// What to do with a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Bytes go through untouched, still compressed.
    Passthrough,
    /// Decode, rewrite, re-encode. With `sniff`, only if the decoded body starts like HTML.
    Rewrite { sniff: bool, decode: Encoding, encode: Encoding, rules: RuleSet },
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

/// Whether a URL is a `.well-known` document, wherever it lives: an OpenID issuer's discovery document
/// sits under the issuer's path (`/realms/demo/.well-known/openid-configuration` on Keycloak,
/// `/oauth2/default/.well-known/...` on Okta), and its `issuer` must stay the issuer. The path is read
/// as a server decodes it (`/%2Ewell-known/`, any case).
fn names_an_identity(path_and_query: &str) -> bool {
    let path = path_and_query.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_encoding::percent_decode_str(path).decode_utf8_lossy();
    decoded.split('/').any(|segment| segment.eq_ignore_ascii_case(".well-known"))
}

/// Browsersync's choice (Accept mentions html, URL not an asset, body looks like HTML), plus the
/// text types with `rewriteTextTypes`, and JSON's origins with `rewriteJson` (but for `.well-known`
/// documents, whose URLs name an identity: see [`names_an_identity`]).
pub(crate) fn plan(req: &RequestFacts, status: StatusCode, headers: &HeaderMap, beyond: BeyondPages) -> Plan {
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
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let text_type = beyond.text_types && content_type.is_some_and(is_text_type);
    let json = beyond.json_origins && content_type.is_some_and(is_json) && !names_an_identity(req.path_and_query);
    let rules = RuleSet::Page;
    if text_type || req.mode == PageMode::Forced {
        Plan::Rewrite { sniff: false, decode, encode, rules }
    } else if json {
        Plan::Rewrite { sniff: false, decode, encode, rules: RuleSet::JsonOrigins }
    } else if html_request {
        Plan::Rewrite { sniff: true, decode, encode, rules }
    } else {
        Plan::Passthrough
    }
}

/// Marks a response head whose body arrives decoded though its origin sent it encoded with this
/// coding (a replayed recording: cassettes hold bodies decoded).
#[derive(Debug, Clone)]
pub(crate) struct ArrivesDecoded(pub Option<Encoding>);

/// The plan of a response: [`plan`]; a body that arrives decoded ([`ArrivesDecoded`]) is compressed
/// again for what the client accepts, as its origin had sent it.
pub(crate) fn plan_response(req: &RequestFacts, head: &http::response::Parts, beyond: BeyondPages) -> Plan {
    let plan = plan(req, head.status, &head.headers, beyond);
    let Some(ArrivesDecoded(Some(sent))) = head.extensions.get::<ArrivesDecoded>() else { return plan };
    let bodiless = *req.method == Method::HEAD || matches!(head.status.as_u16(), 204 | 206 | 304);
    let encode = codec::choose_output(*sent, &codec::accepted(req.accept_encoding), true);
    match plan {
        Plan::Passthrough if !bodiless && encode != Encoding::Identity => Plan::Compress { encode },
        Plan::Rewrite { sniff, decode, encode: Encoding::Identity, rules } => {
            Plan::Rewrite { sniff, decode, encode, rules }
        }
        plan => plan,
    }
}

/// What runs on one response: the rules, and within a group of rules searched together the members left
/// out (by the rule's index in `rules`), which start as done.
pub(crate) struct RulesToRun {
    pub rules: Vec<Rule>,
    pub members_skipped: Vec<(usize, Vec<bool>)>,
    pub memo: Option<SkipMemo>,
}

/// The skip decision, in one place: which of the request's rules run on this response. User rules
/// that the skip table knows found nothing in this URL's body under this validator and rule set are
/// left out, each on its own (a member of a group is left out of its group's search; a group whose
/// members all are, whole); without a validator (`key` is `None`), or with a rule that calls a function
/// (`user` is `None`), every rule runs. The memo tells the body's end what to remember.
pub(crate) fn rules_to_run(
    rules: &[Rule],
    user: Option<UserRules>,
    key: Option<SkipKey>,
    table: &Arc<SkipTable>,
) -> RulesToRun {
    let (Some(user), Some(key)) = (user, key) else {
        return RulesToRun { rules: rules.to_vec(), members_skipped: Vec::new(), memo: None };
    };
    let never = table.never_matched(&key, user.generation);
    let mut run = Vec::with_capacity(rules.len());
    let mut members_skipped = Vec::new();
    let mut bits = Vec::with_capacity(rules.len());
    let mut next_bit = 0;
    for (i, rule) in rules.iter().enumerate() {
        if !(user.first..user.first + user.stages).contains(&i) {
            run.push(rule.clone());
            bits.push(None);
            continue;
        }
        // One bit per user rule, grouped or not, for the first SKIPPABLE_RULES of them.
        let count = rule.member_count();
        let member_bits: Vec<Option<usize>> =
            (next_bit..next_bit + count).map(|b| (b < SKIPPABLE_RULES).then_some(b)).collect();
        next_bit += count;
        let skipped: Vec<bool> = member_bits.iter().map(|b| b.is_some_and(|b| never & 1 << b != 0)).collect();
        if skipped.iter().all(|&s| s) {
            continue;
        }
        if skipped.contains(&true) {
            members_skipped.push((run.len(), skipped));
        }
        run.push(rule.clone());
        bits.extend(member_bits);
    }
    let memo = SkipMemo { key, generation: user.generation, skipped: never, bits, table: table.clone() };
    RulesToRun { rules: run, members_skipped, memo: Some(memo) }
}

/// What a body that went through whole tells the skip table.
pub(crate) struct SkipMemo {
    key: SkipKey,
    generation: u64,
    /// The user rules skipped on this response: they still find nothing.
    skipped: u64,
    /// For each rule that ran, in order, each member of a group on its own: its user-rule bit, if it has
    /// one.
    bits: Vec<Option<usize>>,
    table: Arc<SkipTable>,
}

impl SkipMemo {
    /// Remembers the user rules that replaced nothing in the whole body (`matched`: per rule run, each
    /// member of a group on its own, as [`crate::rewrite::Rewriter::matched_rules`] gives them).
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

/// Where a request's user rules sit among its rules, and the rule set's generation: what the skip
/// table needs. `None` when a rule replaces through a function (then nothing is skipped: its
/// output may differ per request, and so may what the rules after it see).
#[derive(Debug, Clone, Copy)]
pub(crate) struct UserRules {
    pub first: usize,
    /// The user rules as they run, a group of rules searched together as one; only the first
    /// [`SKIPPABLE_RULES`] user rules (members counted one by one) can be skipped.
    pub stages: usize,
    pub generation: u64,
}

impl UserRules {
    pub(crate) fn of(rules: &[Rule], first: usize, stages: usize, generation: u64) -> Option<UserRules> {
        if stages == 0 || rules.iter().any(Rule::calls_function) {
            return None;
        }
        Some(UserRules { first, stages, generation })
    }
}

/// Which responses of a request are rewritten (resp-modifier's three ways).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageMode {
    /// Pages only: `Accept` mentions html, the URL is not an asset, the body starts like HTML (and,
    /// with `rewriteTextTypes`, text types).
    Pages,
    /// Any response (a rule's `paths`, `snippetOptions.whitelist`), whatever the `Accept` header,
    /// extension or body say.
    Forced,
    /// None (`snippetOptions.blacklist`, `ignorePaths`).
    Skipped,
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
        let pages = BeyondPages { text_types: false, json_origins: false };
        let text = BeyondPages { text_types: true, json_origins: false };
        assert_eq!(
            plan(&req("text/html"), StatusCode::OK, &headers, pages),
            Plan::Rewrite { sniff: true, decode: Encoding::Gzip, encode: Encoding::Gzip, rules: RuleSet::Page }
        );
        assert_eq!(plan(&req("*/*"), StatusCode::OK, &headers, pages), Plan::Passthrough);
        headers.insert(header::CONTENT_TYPE, "text/css".parse().unwrap());
        assert!(matches!(plan(&req("*/*"), StatusCode::OK, &headers, text), Plan::Rewrite { sniff: false, .. }));
        assert_eq!(plan(&req("text/html"), StatusCode::NOT_MODIFIED, &headers, pages), Plan::Passthrough);
        // A redirect's empty body goes out as it came, with its length.
        let mut redirect = HeaderMap::new();
        redirect.insert(header::CONTENT_LENGTH, "0".parse().unwrap());
        redirect.insert(header::CONTENT_TYPE, "text/html".parse().unwrap());
        assert_eq!(plan(&req("text/html"), StatusCode::FOUND, &redirect, pages), Plan::Passthrough);
        redirect.insert(header::CONTENT_LENGTH, "10".parse().unwrap());
        assert!(matches!(plan(&req("text/html"), StatusCode::FOUND, &redirect, pages), Plan::Rewrite { .. }));
    }

    #[test]
    fn json_gets_its_origins_rewritten_but_identity_documents() {
        let json = |content_type: &str, path: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, content_type.parse().unwrap());
            let req = RequestFacts {
                method: &Method::GET,
                path_and_query: path,
                accept: Some("text/html"),
                accept_encoding: None,
                upstream_identity: false,
                mode: PageMode::Pages,
            };
            plan(&req, StatusCode::OK, &headers, BeyondPages { text_types: false, json_origins: true })
        };
        let origins = Plan::Rewrite {
            sniff: false,
            decode: Encoding::Identity,
            encode: Encoding::Identity,
            rules: RuleSet::JsonOrigins,
        };
        assert_eq!(json("application/json; charset=UTF-8", "/wp-json/wp/v2/posts"), origins);
        assert_eq!(json("application/ld+json", "/x"), origins);
        // Left to Browsersync's choice: a page request, sniffed (JSON does not look like HTML).
        assert!(matches!(
            json("application/json", "/.well-known/openid-configuration"),
            Plan::Rewrite { sniff: true, rules: RuleSet::Page, .. }
        ));
        for issuer in [
            "/realms/demo/.well-known/openid-configuration",
            "/oauth2/default/.well-known/oauth-authorization-server?x=1",
            "/%2Ewell-known/openid-configuration",
            "/a/%2ewell-KNOWN/jwks.json",
        ] {
            assert!(
                !matches!(json("application/json", issuer), Plan::Rewrite { rules: RuleSet::JsonOrigins, .. }),
                "{issuer}"
            );
        }
        assert_eq!(json("application/json", "/api/well-known/x"), origins, "only a whole `.well-known` segment");
        assert!(matches!(json("text/html", "/"), Plan::Rewrite { sniff: true, rules: RuleSet::Page, .. }));
        assert_eq!(json("text/json-ish", "/a.json"), Plan::Passthrough);
    }
}
