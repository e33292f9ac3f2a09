//! The one redaction policy: secrets in headers, query strings and values, masked before anything
//! shows or stores them (the request log, `onRequest`, the inspector, and cassettes, which add the
//! user's `redact` options): credentials and session cookies must not end up on a page any proxied
//! script can read, nor in a file that gets committed.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex_automata::meta::Regex;

/// What a masked header value becomes.
pub const REDACTED: &str = "[redacted]";

/// Headers whose values are secrets: credentials, session cookies, CSRF and session tokens, and the
/// API keys and account ids of the common AI, cloud and forge APIs (OpenAI, Anthropic-style
/// `x-api-key`, Azure's `api-key`, Google's, AWS's session token, GitLab's `private-token`).
pub const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "openai-organization",
    "openai-project",
    "x-auth-token",
    "x-access-token",
    "x-refresh-token",
    "x-session-token",
    "x-csrf-token",
    "x-xsrf-token",
    "csrf-token",
    "private-token",
    "x-amz-security-token",
];

/// Query parameter names whose values are always redacted.
pub const SECRET_PARAMS: &[&str] = &["key", "api_key", "apikey", "token", "access_token"];

/// Whether a header's value is a secret (the name in any case).
pub fn is_secret(name: &str) -> bool {
    SECRET_HEADERS.iter().any(|secret| secret.eq_ignore_ascii_case(name))
}

/// Whether a header carries a secret: a secret name, or a key-shaped value.
pub fn is_secret_header(name: &str, value: &[u8]) -> bool {
    is_secret(name) || find_key(value).is_some()
}

/// The value as it may be shown: [`REDACTED`] for a secret header or a key-shaped value, else unchanged.
pub fn mask<'a>(name: &str, value: &'a str) -> Cow<'a, str> {
    if is_secret_header(name, value.as_bytes()) {
        Cow::Borrowed(REDACTED)
    } else {
        Cow::Borrowed(value)
    }
}

/// Masks the secret values of (name, value) pairs in place: secret names, key-shaped values.
pub fn mask_headers(headers: &mut [(String, String)]) {
    for (name, value) in headers.iter_mut() {
        if value != REDACTED && is_secret_header(name, value.as_bytes()) {
            *value = REDACTED.to_string();
        }
    }
}

/// Path and query with the values of secret parameters, and key-shaped ones unless `allowed(name,
/// value)`, replaced by [`REDACTED`] (names kept).
pub fn mask_url_with(url: &str, allowed: impl Fn(&str, &str) -> bool) -> Cow<'_, str> {
    let Some((path, query)) = url.split_once('?') else { return Cow::Borrowed(url) };
    let mut changed = false;
    let params: Vec<Cow<'_, str>> = query
        .split('&')
        .map(|pair| {
            let Some((name, value)) = pair.split_once('=') else { return Cow::Borrowed(pair) };
            let decoded = percent_encoding::percent_decode_str(name).decode_utf8_lossy().to_ascii_lowercase();
            let decoded_value = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
            let secret = SECRET_PARAMS.contains(&decoded.as_str())
                || (find_key(decoded_value.as_bytes()).is_some() && !allowed(&decoded, &decoded_value));
            if secret && value != REDACTED {
                changed = true;
                Cow::Owned(format!("{name}={REDACTED}"))
            } else {
                Cow::Borrowed(pair)
            }
        })
        .collect();
    if !changed {
        return Cow::Borrowed(url);
    }
    Cow::Owned(format!("{path}?{}", params.join("&")))
}

/// A line of text (a log line) with what [`mask_url`] masks in any URL it holds, and any key-shaped
/// string, replaced by [`REDACTED`]: error messages name URLs with their queries.
pub fn mask_text(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    // (start, end) of each value to replace, in order, not overlapping.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    while let Some(offset) = memchr::memchr2(b'?', b'&', &bytes[at..]) {
        let name_start = at + offset + 1;
        at = name_start;
        let Some(eq) = bytes[name_start..].iter().position(|&b| b == b'=' || b == b'&' || b.is_ascii_whitespace())
        else {
            break;
        };
        if bytes[name_start + eq] != b'=' {
            continue;
        }
        let name = &text[name_start..name_start + eq];
        let value_start = name_start + eq + 1;
        let value_len = bytes[value_start..]
            .iter()
            .position(|&b| matches!(b, b'&' | b'#' | b')' | b'"' | b'\'' | b'>' | b'<') || b.is_ascii_whitespace())
            .unwrap_or(bytes.len() - value_start);
        if SECRET_PARAMS.iter().any(|p| p.eq_ignore_ascii_case(name)) && value_len > 0 {
            spans.push((value_start, value_start + value_len));
        }
    }
    if find_key(bytes).is_some() {
        for m in scanner().find_iter(bytes) {
            if looks_random(m.pattern().as_usize(), &bytes[m.range()]) {
                spans.push((m.start(), m.end()));
            }
        }
        spans.sort_unstable();
    }
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (start, end) in spans {
        if start < copied {
            continue;
        }
        out.push_str(&text[copied..start]);
        out.push_str(REDACTED);
        copied = end;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// [`mask_url_with`] without exceptions: what the log, `onRequest` and the inspector show.
pub fn mask_url(url: &str) -> Cow<'_, str> {
    mask_url_with(url, |_, _| false)
}

/// What each pattern of [`scanner`] is, as an error names it.
/// Each starts at a word boundary (`task-...` is no `sk-` key). Keys and tokens are random: those
/// whose shape is only a prefix and a length must also hold a digit ([`looks_random`]), so that
/// CSS classes such as `sk-folding-cube-animation-delay` are not taken for keys.
pub(crate) const KINDS: &[(&str, &str)] = &[
    (r"\bsk-ant-[A-Za-z0-9_\-]{16,}", "an Anthropic key (sk-ant-...)"),
    (r"\bsk-[A-Za-z0-9_\-]{20,}", "an OpenAI key (sk-...)"),
    (r"\bAKIA[0-9A-Z]{16}\b", "an AWS access key id (AKIA...)"),
    (r"\b(?i:bearer) [A-Za-z0-9._~+/\-]{16,}=*", "a bearer token (Bearer ...)"),
    (r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", "a JWT (eyJ...)"),
];

/// Whether a match of pattern `kind` is random enough to be a key.
pub(crate) fn looks_random(kind: usize, text: &[u8]) -> bool {
    match kind {
        0..=1 | 3 => text.iter().skip(7).any(u8::is_ascii_digit),
        _ => true,
    }
}

pub(crate) fn scanner() -> &'static Regex {
    static SCANNER: OnceLock<Regex> = OnceLock::new();
    SCANNER.get_or_init(|| {
        let patterns: Vec<&str> = KINDS.iter().map(|(p, _)| *p).collect();
        Regex::builder()
            .syntax(regex_automata::util::syntax::Config::new().unicode(false).utf8(false))
            .build_many(&patterns)
            .expect("the key patterns compile")
    })
}

/// The kind of the first key-shaped string in `bytes`, if any.
pub fn find_key(bytes: &[u8]) -> Option<&'static str> {
    // Every pattern starts with one of these bytes: most text is skipped by memchr.
    if memchr::memchr3(b's', b'A', b'e', bytes).is_none() && memchr::memchr2(b'B', b'b', bytes).is_none() {
        return None;
    }
    scanner()
        .find_iter(bytes)
        .find(|m| looks_random(m.pattern().as_usize(), &bytes[m.range()]))
        .map(|m| KINDS[m.pattern().as_usize()].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_whatever_the_case() {
        let mut headers: Vec<(String, String)> = [
            ("Authorization", "Bearer sk-1"),
            ("cookie", "sid=2"),
            ("Set-Cookie", "sid=3; Path=/"),
            ("X-API-Key", "k4"),
            ("api-key", "k5"),
            ("x-goog-api-key", "k6"),
            ("OpenAI-Organization", "org-7"),
            ("openai-project", "proj-8"),
            ("proxy-authorization", "Basic 9"),
            ("accept", "text/html"),
            ("x-api-keys", "not a secret name"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        mask_headers(&mut headers);
        let values: Vec<&str> = headers.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(&values[..9], &[REDACTED; 9]);
        assert_eq!(&values[9..], &["text/html", "not a secret name"]);
        for name in ["X-Auth-Token", "x-csrf-token", "Private-Token", "x-amz-security-token"] {
            assert!(is_secret(name), "{name}");
        }
        assert_eq!(mask("COOKIE", "a=b"), REDACTED);
        assert_eq!(mask("x-custom", "Bearer abcdefghij0123456789"), REDACTED, "a key-shaped value");
        assert_eq!(mask("etag", "\"x\""), "\"x\"");
    }

    #[test]
    fn urls_and_log_lines_lose_secret_parameters_and_keys() {
        assert_eq!(mask_url("/a?x=1&API_KEY=s3&token=t&y=2"), "/a?x=1&API_KEY=[redacted]&token=[redacted]&y=2");
        assert_eq!(mask_url("/a?q=sk-abcdefghij0123456789xyz"), "/a?q=[redacted]");
        assert!(matches!(mask_url("/a?x=1"), Cow::Borrowed(_)));
        let line = "upstream body of http://127.0.0.1:9/a?access_token=abc&ok=1 failed (sk-abcdefghij0123456789xyz)";
        assert_eq!(
            mask_text(line),
            "upstream body of http://127.0.0.1:9/a?access_token=[redacted]&ok=1 failed ([redacted])"
        );
        assert!(matches!(mask_text("GET /a?x=1 -> 200"), Cow::Borrowed(_)));
        // A value that runs to the end of the line (a mutant that let it run past the end was missed).
        assert_eq!(mask_text("proxying /v1/models?api_key=s3cr3t"), "proxying /v1/models?api_key=[redacted]");
        assert_eq!(mask_text("GET /a?x=1&token="), "GET /a?x=1&token=", "an empty value stays empty");
        // A key inside a secret parameter's value, or starting with it: redacted once.
        assert_eq!(mask_text("GET /a?token=x-sk-abcdefghij0123456789xyz ok"), "GET /a?token=[redacted] ok");
        assert_eq!(mask_text("GET /a?api_key=sk-abcdefghij0123456789xyz"), "GET /a?api_key=[redacted]");
        // The memchr pre-check lets text through when any start byte is there: a key with no `b`/`B`.
        assert_eq!(find_key(b"x sk-CDEFGHIJKLMNOPQRSTU0123 y"), Some("an OpenAI key (sk-...)"));
        assert_eq!(find_key(b"nothing to see"), None);
    }
}
