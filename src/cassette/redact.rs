//! What a cassette never holds: secret header values and query parameters (redacted, the name kept),
//! user-listed JSON fields (redacted), and key-shaped strings in bodies (the exchange is refused,
//! naming where the string was, unless the user allows it). The scan is one linear-time automaton.

use std::borrow::Cow;

use serde_json::Value;

// One policy for cassettes and for what the proxy shows (log, `onRequest`, inspector): secret header
// names, secret query parameters and key-shaped values (observe/mask.rs); `redact` adds to it.
pub use crate::observe::mask::{find_key, REDACTED, SECRET_HEADERS, SECRET_PARAMS};
use crate::observe::mask::{looks_random, scanner, KINDS};

/// The `redact` option: what to redact besides the defaults, and which flagged strings to allow.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Redaction {
    /// More header names (lower-case).
    pub headers: Vec<String>,
    /// JSON paths in bodies (`$.user`, `metadata.email`, `messages[*].content`).
    pub json: Vec<Vec<Segment>>,
    /// Fields (as a refusal names them, e.g. `messages[0].content`) or exact strings the key scan lets through.
    pub allow: Vec<String>,
}

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    /// An object key.
    Key(String),
    /// An array index.
    Index(usize),
    /// Any key or index (`*`).
    Any,
}

/// Parses `$.a.b[0].c` / `a.b[*]`; `None` when it is not such a path.
pub fn parse_json_path(path: &str) -> Option<Vec<Segment>> {
    let rest = path.trim();
    let rest = rest.strip_prefix('$').unwrap_or(rest);
    let rest = rest.strip_prefix('.').unwrap_or(rest);
    let mut segments = Vec::new();
    for part in rest.split('.') {
        let (name, mut tail) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        match name {
            "" if tail.is_empty() => return None,
            "" => {}
            "*" => segments.push(Segment::Any),
            _ => segments.push(Segment::Key(name.to_string())),
        }
        while let Some(inner) = tail.strip_prefix('[') {
            let close = inner.find(']')?;
            let index = &inner[..close];
            segments.push(if index == "*" { Segment::Any } else { Segment::Index(index.parse().ok()?) });
            tail = &inner[close + 1..];
        }
        if !tail.is_empty() {
            return None;
        }
    }
    (!segments.is_empty()).then_some(segments)
}

impl Redaction {
    /// Whether a header's value is redacted by its name.
    pub fn is_secret_header(&self, name: &str) -> bool {
        crate::observe::mask::is_secret(name) || self.headers.iter().any(|h| h.eq_ignore_ascii_case(name))
    }

    /// Headers with secret values (and values holding key-shaped strings, or a WebSocket subprotocol
    /// carrying a token) redacted, and the secret parameters of URLs in the others (`Location`,
    /// `Link`, `Referer`...).
    pub fn headers(&self, headers: &[(String, String)]) -> Vec<(String, String)> {
        headers
            .iter()
            .map(|(name, value)| {
                let by_name = self.is_secret_header(name);
                let by_value =
                    crate::observe::mask::is_secret_header(name, value.as_bytes()) && !self.allows(name, value);
                let value = if by_name || by_value { REDACTED.to_string() } else { self.url(value) };
                (name.clone(), value)
            })
            .collect()
    }

    /// Path and query with secret parameters' values (and key-shaped ones) redacted; also the URLs
    /// a header value holds (`Link: <...?sig=...>`).
    pub fn url(&self, url: &str) -> String {
        let masked = crate::observe::mask::mask_url_with(url, |name, value| self.allows(name, value));
        match crate::observe::mask::mask_params_in_text(&masked) {
            Cow::Owned(text) => text,
            Cow::Borrowed(_) => masked.into_owned(),
        }
    }

    /// A request body as a cassette holds it: a form's (`application/x-www-form-urlencoded`) or a JSON
    /// body's secret fields redacted by the policy's names (`password=`, `"client_secret":`), then the
    /// JSON body's `redact.json` paths; with the JSON as parsed, when it is JSON. The recorder writes
    /// this, and replay matches a live request by it.
    pub fn request_body<'a>(&self, body: &'a [u8]) -> (Cow<'a, [u8]>, Option<Value>) {
        if let Ok(mut value) = serde_json::from_slice::<Value>(body) {
            let changed = redact_secret_keys(&mut value) | self.json(&mut value);
            let bytes = match changed.then(|| serde_json::to_vec(&value).ok()).flatten() {
                Some(bytes) => Cow::Owned(bytes),
                None => Cow::Borrowed(body),
            };
            return (bytes, Some(value));
        }
        let form = std::str::from_utf8(body)
            .ok()
            .filter(|text| !text.is_empty() && text.bytes().all(|b| b.is_ascii_graphic()) && text.contains('='));
        let Some(form) = form else { return (Cow::Borrowed(body), None) };
        let query = format!("?{form}");
        match crate::observe::mask::mask_url_with(&query, |name, value| self.allows(name, value)) {
            Cow::Owned(masked) => (Cow::Owned(masked.trim_start_matches('?').as_bytes().to_vec()), None),
            Cow::Borrowed(_) => (Cow::Borrowed(body), None),
        }
    }

    /// Redacts the `json` paths in `value`; true when something was redacted.
    pub fn json(&self, value: &mut Value) -> bool {
        let mut changed = false;
        for path in &self.json {
            changed |= redact_path(value, path);
        }
        changed
    }

    fn allows(&self, field: &str, found: &str) -> bool {
        self.allow.iter().any(|a| a == field || found.contains(a.as_str()) && a.len() >= 8)
    }

    /// Scans bytes for key-shaped strings: `Err(description)` naming where (`what` says which body
    /// and place, e.g. "request body"), unless allowed. A JSON body is walked, so the error names
    /// its field.
    pub fn scan(&self, bytes: &[u8], what: &str, json: Option<&Value>) -> Result<(), String> {
        let Some(kind) = find_key(bytes) else { return Ok(()) };
        if let Some(value) = json {
            let mut found = None;
            walk_strings(value, &mut String::new(), &mut |path, text| {
                if found.is_none() {
                    if let Some(kind) = find_key(text.as_bytes()) {
                        if !self.allows(path, text) {
                            found = Some(format!("{what} field `{path}` holds a string shaped like {kind}"));
                        }
                    }
                }
            });
            return found.map_or(Ok(()), Err);
        }
        let text = String::from_utf8_lossy(bytes);
        if self.allows(what, &text) {
            return Ok(());
        }
        Err(format!("{what} holds a string shaped like {kind}"))
    }
}

/// Redacts, in place, the string and number values of object keys the policy names as secret
/// (`password`, `client_secret`, `refresh_token`...); true when something was redacted.
fn redact_secret_keys(value: &mut Value) -> bool {
    match value {
        Value::Object(map) => {
            let mut changed = false;
            for (key, field) in map.iter_mut() {
                let secret_value = matches!(field, Value::String(_) | Value::Number(_));
                if secret_value && crate::observe::mask::is_secret_field(key) {
                    if *field != Value::String(REDACTED.into()) {
                        *field = Value::String(REDACTED.into());
                        changed = true;
                    }
                } else {
                    changed |= redact_secret_keys(field);
                }
            }
            changed
        }
        Value::Array(items) => items.iter_mut().fold(false, |changed, item| redact_secret_keys(item) | changed),
        _ => false,
    }
}

impl Redaction {
    /// Scans the seam between two pieces of a body for a key-shaped string that the seam cuts (each
    /// piece alone holds only part of it): `before` is the end of one piece, `after` the start of
    /// the next, each up to [`SEAM`] bytes.
    pub fn scan_seam(&self, before: &[u8], after: &[u8], what: &str) -> Result<(), String> {
        let Some(kind) = find_key_across(before, after) else { return Ok(()) };
        let window = String::from_utf8_lossy(&[before, after].concat()).into_owned();
        if self.allows(what, &window) {
            return Ok(());
        }
        Err(format!("{what} and the bytes before it hold a string shaped like {kind}, cut across the boundary"))
    }
}

/// How much of each side of a seam [`Redaction::scan_seam`] needs: more than the shortest match
/// of every key shape, so a key that starts further back was whole in the piece before.
pub const SEAM: usize = 128;

/// The kind of a key-shaped string that starts in `before` and ends in `after`, if any.
fn find_key_across(before: &[u8], after: &[u8]) -> Option<&'static str> {
    if before.is_empty() || after.is_empty() {
        return None;
    }
    let window = [before, after].concat();
    scanner()
        .find_iter(&window)
        .filter(|m| m.start() < before.len() && m.end() > before.len())
        .find(|m| looks_random(m.pattern().as_usize(), &window[m.range()]))
        .map(|m| KINDS[m.pattern().as_usize()].1)
}

fn redact_path(value: &mut Value, path: &[Segment]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        if value.as_str() == Some(REDACTED) {
            return false;
        }
        *value = Value::String(REDACTED.into());
        return true;
    };
    match (first, value) {
        (Segment::Key(key), Value::Object(map)) => map.get_mut(key).is_some_and(|v| redact_path(v, rest)),
        (Segment::Index(i), Value::Array(items)) => items.get_mut(*i).is_some_and(|v| redact_path(v, rest)),
        (Segment::Any, Value::Object(map)) => map.values_mut().fold(false, |c, v| redact_path(v, rest) | c),
        (Segment::Any, Value::Array(items)) => items.iter_mut().fold(false, |c, v| redact_path(v, rest) | c),
        _ => false,
    }
}

/// Calls `f(path, string)` for every string value, paths written as `a.b[0].c`.
fn walk_strings(value: &Value, path: &mut String, f: &mut dyn FnMut(&str, &str)) {
    match value {
        Value::String(text) => f(if path.is_empty() { "$" } else { path }, text),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk_strings(item, path, f);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                walk_strings(item, path, f);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_shapes_are_found_and_named() {
        assert_eq!(find_key(b"x sk-abc123defghijklmnopqrstuvwx y"), Some("an OpenAI key (sk-...)"));
        assert_eq!(find_key(b"sk-ant-api03-abcdefghijklmnop"), Some("an Anthropic key (sk-ant-...)"));
        assert_eq!(find_key(b"AKIAABCDEFGHIJKLMNOP"), Some("an AWS access key id (AKIA...)"));
        assert_eq!(find_key(b"Authorization: Bearer abcdefghijk1mnopqrstu"), Some("a bearer token (Bearer ...)"));
        assert_eq!(find_key(b"eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeKKF2QT4f"), Some("a JWT (eyJ...)"));
        assert_eq!(find_key(b"ask-me anything; sk-short; the risk-averse"), None);
        // Words and CSS classes of the same shape are not keys.
        assert_eq!(find_key(b"<div class=\"task-management-dashboard-widget\">"), None);
        assert_eq!(find_key(b"<i class=\"sk-folding-cube-animation-delay\">"), None);
        assert_eq!(find_key(b"see Bearer authentication_is_required here"), None);
        assert_eq!(find_key(b"xAKIAABCDEFGHIJKLMNOP"), None);
    }

    #[test]
    fn a_key_cut_by_a_seam_is_found_and_whole_ones_are_left_to_scan() {
        let key = b"sk-abc123defghijklmnopqrstuvwx";
        let redaction = Redaction::default();
        for cut in 1..key.len() {
            let before = [&b"data: "[..], &key[..cut]].concat();
            let after = [&key[cut..], &b" end"[..]].concat();
            let err = redaction.scan_seam(&before, &after, "response body chunk 1").unwrap_err();
            assert!(err.contains("OpenAI key") && err.contains("cut across the boundary"), "{err}");
        }
        // Whole on either side: each piece's own scan finds it, not the seam's.
        assert!(redaction.scan_seam(key, b" tail", "x").is_ok());
        assert!(redaction.scan_seam(b"head ", key, "x").is_ok());
        let allowed = Redaction { allow: vec!["sk-abc123defghij".into()], ..Redaction::default() };
        assert!(allowed.scan_seam(&key[..9], &key[9..], "x").is_ok());
    }

    #[test]
    fn a_json_body_names_the_field_and_allow_lets_it_through() {
        let body = br#"{"messages":[{"role":"user","content":"my key is sk-abc123defghijklmnopqrstuvwx"}]}"#;
        let value: Value = serde_json::from_slice(body).unwrap();
        let err = Redaction::default().scan(body, "request body", Some(&value)).unwrap_err();
        assert_eq!(err, "request body field `messages[0].content` holds a string shaped like an OpenAI key (sk-...)");
        let allowed = Redaction { allow: vec!["messages[0].content".into()], ..Redaction::default() };
        assert!(allowed.scan(body, "request body", Some(&value)).is_ok());
    }

    #[test]
    fn headers_params_and_json_paths_are_redacted() {
        let r = Redaction {
            headers: vec!["x-custom".into()],
            json: vec![parse_json_path("$.user").unwrap(), parse_json_path("metadata.email").unwrap()],
            ..Redaction::default()
        };
        let headers = vec![
            ("authorization".to_string(), "Bearer abc".to_string()),
            ("X-Custom".to_string(), "v".to_string()),
            ("accept".to_string(), "*/*".to_string()),
        ];
        let out = r.headers(&headers);
        assert_eq!(out[0].1, REDACTED);
        assert_eq!(out[1].1, REDACTED);
        assert_eq!(out[2].1, "*/*");
        assert_eq!(r.url("/a?key=1&q=x&access_token=z"), "/a?key=[redacted]&q=x&access_token=[redacted]");
        let mut v: Value = serde_json::json!({"user":"bob","metadata":{"email":"a@b","n":1},"x":[1]});
        assert!(r.json(&mut v));
        assert_eq!(v, serde_json::json!({"user":"[redacted]","metadata":{"email":"[redacted]","n":1},"x":[1]}));
        assert_eq!(
            parse_json_path("a[*].b"),
            Some(vec![Segment::Key("a".into()), Segment::Any, Segment::Key("b".into())])
        );
        assert_eq!(parse_json_path("a[x]"), None);
    }

    #[test]
    fn json_paths_parse_keys_indexes_and_wildcards_or_nothing() {
        let key = |name: &str| Segment::Key(name.into());
        assert_eq!(parse_json_path("$[0].a"), Some(vec![Segment::Index(0), key("a")]));
        assert_eq!(parse_json_path("messages.*.content"), Some(vec![key("messages"), Segment::Any, key("content")]));
        assert_eq!(parse_json_path("a[1][*]"), Some(vec![key("a"), Segment::Index(1), Segment::Any]));
        for bad in ["", "$", "a..b", "a.", "a[0", "a[0]b", "a[-1]"] {
            assert_eq!(parse_json_path(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn json_paths_redact_through_indexes_and_wildcards_and_say_whether_anything_changed() {
        let redact = |path: &str, value: &mut Value| {
            Redaction { json: vec![parse_json_path(path).unwrap()], ..Redaction::default() }.json(value)
        };
        let mut v = serde_json::json!({
            "messages": [{"role": "user", "content": "a"}, {"content": "b"}],
            "users": {"x": {"token": "t1"}, "y": {"token": "t2", "name": "y"}},
            "list": [0, 1, 2]
        });
        assert!(redact("messages[*].content", &mut v));
        assert!(redact("users.*.token", &mut v));
        assert!(redact("$.list[1]", &mut v));
        let redacted = serde_json::json!({
            "messages": [{"role": "user", "content": REDACTED}, {"content": REDACTED}],
            "users": {"x": {"token": REDACTED}, "y": {"token": REDACTED, "name": "y"}},
            "list": [0, REDACTED, 2]
        });
        assert_eq!(v, redacted);
        assert!(!redact("messages[*].content", &mut v), "already redacted: nothing changed");
        assert!(!redact("list[7]", &mut v));
        assert!(!redact("messages.content", &mut v), "a key of an array: not there");
        assert_eq!(v, redacted);
    }

    #[test]
    fn a_header_holding_a_key_is_redacted_unless_allowed() {
        let headers = vec![("x-debug".to_string(), "token sk-abc123defghijklmnopqrstuvwx".to_string())];
        assert_eq!(Redaction::default().headers(&headers)[0].1, REDACTED);
        let allowed = Redaction { allow: vec!["x-debug".into()], ..Redaction::default() };
        assert_eq!(allowed.headers(&headers), headers);
    }

    #[test]
    fn allowing_a_field_or_a_string_lets_only_that_through() {
        let body = br#"{"first_key":"sk-abc123defghijklmnopqrstuvwx","second_key":"sk-xyz789defghijklmnopqrstuvwx"}"#;
        let value: Value = serde_json::from_slice(body).unwrap();
        let scan = |allow: &[&str]| {
            let redaction = Redaction { allow: allow.iter().map(|a| a.to_string()).collect(), ..Redaction::default() };
            redaction.scan(body, "request body", Some(&value))
        };
        let err = scan(&["first_key"]).unwrap_err();
        assert!(err.contains("`second_key`"), "{err}");
        let err = scan(&["sk-xyz789defghijkl"]).unwrap_err();
        assert!(err.contains("`first_key`"), "{err}");
        assert!(scan(&["sk-"]).is_err(), "a string shorter than 8 bytes allows nothing");
        assert!(scan(&["first_key", "sk-xyz789defghijkl"]).is_ok());
    }
}
