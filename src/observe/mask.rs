//! Secrets in headers, masked before anything shows or stores them (the inspector, and cassettes):
//! credentials and session cookies must not end up on a page any proxied script can read, nor in
//! a file that gets committed.

use std::borrow::Cow;

/// What a masked header value becomes.
pub const REDACTED: &str = "[redacted]";

/// Headers whose values are secrets: credentials, session cookies, and the API keys and account ids
/// of the common AI and cloud APIs (OpenAI, Anthropic-style `x-api-key`, Azure's `api-key`, Google's).
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
];

/// Whether a header's value is a secret (the name in any case).
pub fn is_secret(name: &str) -> bool {
    SECRET_HEADERS.iter().any(|secret| secret.eq_ignore_ascii_case(name))
}

/// The value as it may be shown: [`REDACTED`] for a secret header, else unchanged.
pub fn mask<'a>(name: &str, value: &'a str) -> Cow<'a, str> {
    if is_secret(name) {
        Cow::Borrowed(REDACTED)
    } else {
        Cow::Borrowed(value)
    }
}

/// Masks the secret values of (name, value) pairs in place.
pub fn mask_headers(headers: &mut [(String, String)]) {
    for (name, value) in headers.iter_mut() {
        if is_secret(name) && value != REDACTED {
            *value = REDACTED.to_string();
        }
    }
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
        assert_eq!(mask("COOKIE", "a=b"), REDACTED);
        assert_eq!(mask("etag", "\"x\""), "\"x\"");
    }
}
