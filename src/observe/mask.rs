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
/// `x-api-key`, Azure's `api-key`, Google's, AWS's session token, GitLab's `private-token`). Any name
/// with a secret word in it counts too (see [`SECRET_NAME_WORDS`]): as mitmproxy's and vcrpy's users
/// list them by hand, the list cannot be complete.
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
    "x-csrftoken",
    "x-xsrf-token",
    "csrf-token",
    "private-token",
    "x-amz-security-token",
    "x-auth",
    "x-session-id",
];

/// Words that make a header, parameter, form field or JSON key name a secret's, as one of its words
/// (split at `-`, `_`, `.` and camelCase): `X-Vault-Token`, `client_secret`, `db_password`,
/// `X-Amz-Signature`, `X-CSRFToken`, `refreshToken`, `X-Auth`, `auth_code`; not `max_tokens`,
/// `author` or `tokenizer`. As mitmproxy's and vcrpy's users list names by hand, a list alone cannot be
/// complete.
pub const SECRET_NAME_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "signature",
    "session",
    "sessionid",
    "csrf",
    "xsrf",
    "csrftoken",
    "apikey",
    "credential",
    "credentials",
    "auth",
    "oauth",
    "authorization",
];

/// Query parameter and form field names whose values are always redacted (besides those with a word
/// of [`SECRET_NAME_WORDS`]): API keys, passwords, and signed URLs' signatures (Azure SAS `sig`).
pub const SECRET_PARAMS: &[&str] =
    &["key", "api_key", "apikey", "token", "access_token", "pwd", "sig", "csrfmiddlewaretoken"];

/// Parameters that are secrets only when the value looks like a credential (OAuth's `code`: a
/// language or country `code` is not one).
const CREDENTIAL_PARAMS: &[&str] = &["code"];

/// The words of a name: split at `-`, `_`, `.`, and where camelCase starts a word, lower-cased.
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if matches!(c, '-' | '_' | '.' | ' ') {
            words.push(std::mem::take(&mut word));
            continue;
        }
        // A capital starts a word, unless it goes on a run of capitals that no lower-case letter ends.
        let starts_word = c.is_ascii_uppercase()
            && i > 0
            && (!chars[i - 1].is_ascii_uppercase() || chars.get(i + 1).is_some_and(char::is_ascii_lowercase));
        if starts_word {
            words.push(std::mem::take(&mut word));
        }
        word.push(c.to_ascii_lowercase());
    }
    words.push(word);
    words.retain(|w| !w.is_empty());
    words
}

/// Two words that name a secret together (`X-Partner-Api-Key`, `access_key`, `privateKey`).
const SECRET_WORD_PAIRS: &[[&str; 2]] = &[["api", "key"], ["access", "key"], ["private", "key"], ["secret", "key"]];

/// Whether a name holds a secret word (see [`SECRET_NAME_WORDS`]) or pair of words.
pub fn secret_name(name: &str) -> bool {
    let words = words(name);
    words.iter().any(|word| SECRET_NAME_WORDS.contains(&word.as_str()))
        || words
            .windows(2)
            .any(|pair| SECRET_WORD_PAIRS.iter().any(|secret| pair[0] == secret[0] && pair[1] == secret[1]))
}

/// Whether a header's value is a secret (the name in any case).
pub fn is_secret(name: &str) -> bool {
    SECRET_HEADERS.iter().any(|secret| secret.eq_ignore_ascii_case(name)) || secret_name(name)
}

/// Whether a JSON key names a secret: a secret word in it, or an API or private key (a bare `key` is
/// too common a JSON key to count).
pub fn is_secret_field(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    secret_name(name) || ["api_key", "api-key", "apikey", "pwd", "access_key", "private_key"].contains(&lower.as_str())
}

/// Whether a query parameter's or form field's value is a secret (the name decoded, any case).
pub fn is_secret_param(name: &str, value: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_PARAMS.contains(&lower.as_str())
        || is_secret_field(name)
        || (CREDENTIAL_PARAMS.contains(&lower.as_str()) && looks_like_credential(value))
}

/// 16 characters or more, letters and digits: a generated code, not a word.
fn looks_like_credential(value: &str) -> bool {
    value.len() >= 16 && value.bytes().any(|b| b.is_ascii_digit()) && value.bytes().any(|b| b.is_ascii_alphabetic())
}

/// Whether a header carries a secret: a secret name, a key-shaped value, or a WebSocket subprotocol
/// that carries a token (Kubernetes: `base64url.bearer.authorization.k8s.io.<token>`).
pub fn is_secret_header(name: &str, value: &[u8]) -> bool {
    is_secret(name)
        || find_key(value).is_some()
        || (name.eq_ignore_ascii_case("sec-websocket-protocol") && {
            let lower = value.to_ascii_lowercase();
            memchr::memmem::find(&lower, b"bearer").is_some() || memchr::memmem::find(&lower, b"token").is_some()
        })
}

/// The value as it may be shown: [`REDACTED`] for a secret header or a key-shaped value, else unchanged.
pub fn mask<'a>(name: &str, value: &'a str) -> Cow<'a, str> {
    if is_secret_header(name, value.as_bytes()) {
        Cow::Borrowed(REDACTED)
    } else {
        Cow::Borrowed(value)
    }
}

/// Masks the secret values of (name, value) pairs in place: secret names, key-shaped values, and
/// the secret parameters of URLs inside values (`Location`, `Refresh`, `Link`, `Content-Location`,
/// `Referer`).
pub fn mask_headers(headers: &mut [(String, String)]) {
    for (name, value) in headers.iter_mut() {
        if value != REDACTED && is_secret_header(name, value.as_bytes()) {
            *value = REDACTED.to_string();
        } else if let Cow::Owned(masked) = mask_params_in_text(value) {
            *value = masked;
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
            let secret = is_secret_param(&decoded, &decoded_value)
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
    mask_text_with(text, true)
}

/// [`mask_text`], the key-shape scan only when `keys`.
fn mask_text_with(text: &str, keys: bool) -> Cow<'_, str> {
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
        let value = &text[value_start..value_start + value_len];
        let decoded = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
        if value_len > 0 && value != REDACTED && is_secret_param(&decoded, value) {
            spans.push((value_start, value_start + value_len));
        }
    }
    if keys && find_key(bytes).is_some() {
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

/// The secret parameters of URLs inside a text (a header value such as `Link: <https://x/a?sig=...>`),
/// without the key-shape scan [`mask_text`] adds.
pub fn mask_params_in_text(text: &str) -> Cow<'_, str> {
    mask_text_with(text, false)
}

/// [`mask_url_with`] without exceptions: what the log, `onRequest` and the inspector show.
pub fn mask_url(url: &str) -> Cow<'_, str> {
    mask_url_with(url, |_, _| false)
}

/// What each pattern of [`scanner`] is, as an error names it.
/// Each starts at a word boundary (`task-...` is no `sk-` key). Keys and tokens are random: those
/// whose shape is only a prefix and a length must also hold a digit ([`looks_random`]), so that
/// CSS classes such as `sk-folding-cube-animation-delay` are not taken for keys.
/// After GitHub's secret scanning patterns for the providers' fixed prefixes (GitHub, Google, Slack,
/// Stripe, GitLab, npm).
pub(crate) const KINDS: &[(&str, &str)] = &[
    (r"\bsk-ant-[A-Za-z0-9_\-]{16,}", "an Anthropic key (sk-ant-...)"),
    (r"\bsk-[A-Za-z0-9_\-]{20,}", "an OpenAI key (sk-...)"),
    (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "an AWS access key id (AKIA...)"),
    (r"\b(?i:bearer) [A-Za-z0-9._~+/\-]{16,}=*", "a bearer token (Bearer ...)"),
    (r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", "a JWT (eyJ...)"),
    (r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{22,}", "a GitHub token (ghp_...)"),
    (r"\bAIza[0-9A-Za-z_\-]{35}", "a Google API key (AIza...)"),
    (r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", "a Slack token (xox...)"),
    (r"\b(?:sk|rk)_live_[A-Za-z0-9]{16,}", "a Stripe live key (sk_live_...)"),
    (r"\bglpat-[A-Za-z0-9_\-]{20,}", "a GitLab token (glpat-...)"),
    (r"\bnpm_[A-Za-z0-9]{36}\b", "an npm token (npm_...)"),
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
    if memchr::memchr3(b's', b'A', b'e', bytes).is_none()
        && memchr::memchr3(b'B', b'b', b'g', bytes).is_none()
        && memchr::memchr3(b'x', b'r', b'n', bytes).is_none()
    {
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
    fn names_are_secret_by_their_words_values_by_their_shapes() {
        for name in
            ["X-CSRFToken", "X-Auth", "X-Session-Id", "X-Vault-Token", "x-client-secret", "refreshToken", "db_password"]
        {
            assert!(is_secret(name), "{name}");
        }
        for name in ["x-authority", "author", "x-max-tokens", "tokenizer", "accept", "x-request-id", "x-api-keys"] {
            assert!(!is_secret(name), "{name}");
        }
        for (param, value) in [
            ("code", "4/0AbCdEf1234567890xyz"),
            ("password", "a"),
            ("client_secret", "b"),
            ("refresh_token", "c"),
            ("sig", "d"),
            ("X-Amz-Signature", "e"),
            ("X-Amz-Credential", "f"),
            ("csrfmiddlewaretoken", "g"),
        ] {
            assert!(is_secret_param(param, value), "{param}");
        }
        for (param, value) in [("code", "en"), ("max_tokens", "100"), ("q", "token"), ("key_words", "x")] {
            assert!(!is_secret_param(param, value), "{param}");
        }
        assert!(is_secret_field("clientSecret") && is_secret_field("api_key") && !is_secret_field("key"));
        let k8s = b"base64url.bearer.authorization.k8s.io.ZXlKaGJHY2lPaUpTVXpJMU5pSjkx, base64.binary.k8s.io";
        assert!(is_secret_header("Sec-WebSocket-Protocol", k8s));
        assert!(!is_secret_header("Sec-WebSocket-Protocol", b"graphql-ws"));
        for key in [
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
            "xoxb-123456789012-abcdefABCDEF",
            "sk_live_0123456789abcdefABCD",
            "glpat-0123456789abcdefABCD",
            "npm_0123456789abcdefghijABCDEFGHIJ012345",
            "ASIA0123456789ABCDEF",
        ] {
            assert!(find_key(format!("x {key} y").as_bytes()).is_some(), "{key}");
        }
        let mut headers = vec![
            ("Location".to_string(), "https://t/cb?token=abc&access_token=def&state=ok".to_string()),
            ("Link".to_string(), "<https://cdn/a.js?sig=xyz&v=2>; rel=preload".to_string()),
        ];
        mask_headers(&mut headers);
        assert_eq!(headers[0].1, "https://t/cb?token=[redacted]&access_token=[redacted]&state=ok");
        assert_eq!(headers[1].1, "<https://cdn/a.js?sig=[redacted]&v=2>; rel=preload");
    }

    #[test]
    fn camel_case_and_capital_runs_split_into_words() {
        // A capital run before a capitalized word ends there; a lower-case letter before a capital ends a word.
        for secret in ["XSessionID", "privateKEY", "X-APIKey", "myAccessKey", "x2Token"] {
            assert!(is_secret(secret), "{secret}");
        }
        // Words, not substrings: `partner key` and `keyring` are no pair.
        for plain in ["x-partner-key", "x-keyring", "apiVersion", "X-Request-ID"] {
            assert!(!is_secret(plain), "{plain}");
        }
        assert!(!is_secret_param("code", "ab12"), "a short code is no credential");
        assert!(!is_secret_param("code", "abcdefghijklmnopq"), "letters only: a word");
        assert!(!is_secret_param("code", "12345678901234567"), "digits only: a number");
    }

    #[test]
    fn urls_in_text_lose_their_secret_parameters_but_keys_are_left_to_the_caller() {
        let text = "<https://cdn.test/a.js?sig=abc123&v=2>; rel=preload, sk-abcdefghij0123456789xyz";
        assert_eq!(
            mask_params_in_text(text),
            "<https://cdn.test/a.js?sig=[redacted]&v=2>; rel=preload, sk-abcdefghij0123456789xyz"
        );
        assert!(matches!(mask_params_in_text("no query here"), Cow::Borrowed(_)));
        // Keys starting with each byte the pre-check looks for.
        for key in
            ["xoxp-1234567890-123456789012", "rk_live_0123456789ABCDEFGH", "npm_0123456789012345678901234567890123ZZ"]
        {
            assert!(find_key(key.as_bytes()).is_some(), "{key}");
        }
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
