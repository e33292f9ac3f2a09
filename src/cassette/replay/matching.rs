//! Which recorded exchange answers a request: method, path, query (less the ignored parameters) and
//! body, a JSON body compared canonically (key order ignored, the ignored fields removed). A miss
//! is explained by the nearest recording and the fields it differs in.

use serde_json::Value;

/// `replay.match`: what a request's match leaves out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchOptions {
    /// Query parameters left out (`ignoreQuery`), by name.
    pub ignore_query: Vec<String>,
    /// JSON body fields left out (`ignoreFields`): `user`, or a nested path such as `metadata.trace_id`.
    pub ignore_fields: Vec<String>,
}

/// A request as matching sees it.
#[derive(Debug, Clone)]
pub(crate) struct RequestView {
    method: String,
    path: String,
    /// Sorted, ignored names removed.
    query: Vec<(String, String)>,
    body: CanonicalBody,
}

#[derive(Debug, Clone, PartialEq)]
enum CanonicalBody {
    Json(Value),
    Bytes(Vec<u8>),
}

impl RequestView {
    pub(crate) fn new(method: &str, path_and_query: &str, body: &[u8], options: &MatchOptions) -> RequestView {
        let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
        let mut query: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
            .filter(|(name, _)| !options.ignore_query.iter().any(|ignored| ignored == name))
            .map(|(name, value)| (name.into_owned(), value.into_owned()))
            .collect();
        query.sort();
        let body = match serde_json::from_slice::<Value>(body) {
            Ok(mut json) if !body.is_empty() => {
                for field in &options.ignore_fields {
                    remove_field(&mut json, field);
                }
                CanonicalBody::Json(json)
            }
            _ => CanonicalBody::Bytes(body.to_vec()),
        };
        RequestView { method: method.to_ascii_uppercase(), path: path.to_string(), query, body }
    }

    /// A string equal for two requests exactly when they match (JSON keys sorted).
    pub(crate) fn key(&self) -> String {
        let body = match &self.body {
            CanonicalBody::Json(json) => format!("json:{}", canonical(json)),
            CanonicalBody::Bytes(bytes) => format!("bytes:{}", String::from_utf8_lossy(bytes)),
        };
        let query: Vec<String> = self.query.iter().map(|(n, v)| format!("{n}={v}")).collect();
        format!("{} {}?{}\n{body}", self.method, self.path, query.join("&"))
    }

    /// `POST /v1/chat/completions`: what a miss names.
    pub(crate) fn label(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// Whether `other` is a candidate for the nearest recording (same method and path).
    pub(crate) fn same_resource(&self, other: &RequestView) -> bool {
        self.method == other.method && self.path == other.path
    }

    /// What differs between a recording (`self`) and a request, as short phrases, most telling first.
    pub(crate) fn differences(&self, got: &RequestView) -> Vec<String> {
        let mut out = Vec::new();
        let mut names: Vec<&String> = self.query.iter().chain(&got.query).map(|(n, _)| n).collect();
        names.sort();
        names.dedup();
        for name in names {
            let values = |q: &[(String, String)]| -> Vec<String> {
                q.iter().filter(|(n, _)| n == name).map(|(_, v)| v.clone()).collect()
            };
            let (recorded, now) = (values(&self.query), values(&got.query));
            if recorded != now {
                out.push(format!("query parameter `{name}` (recorded {}, got {})", shown(&recorded), shown(&now)));
            }
        }
        match (&self.body, &got.body) {
            (CanonicalBody::Json(recorded), CanonicalBody::Json(now)) => json_differences("", recorded, now, &mut out),
            (CanonicalBody::Bytes(recorded), CanonicalBody::Bytes(now)) if recorded == now => {}
            (recorded, now) => {
                out.push(format!("body (recorded {}, got {})", describe_body(recorded), describe_body(now)))
            }
        }
        out
    }
}

fn shown(values: &[String]) -> String {
    match values {
        [] => "none".into(),
        [one] => format!("'{one}'"),
        many => format!("{many:?}"),
    }
}

fn describe_body(body: &CanonicalBody) -> String {
    match body {
        CanonicalBody::Json(_) => "JSON".into(),
        CanonicalBody::Bytes(bytes) if bytes.is_empty() => "none".into(),
        CanonicalBody::Bytes(bytes) => format!("{} bytes", bytes.len()),
    }
}

/// Differences between two JSON values, as `body field `a.b[2]` (recorded x, got y)`; a few at most.
fn json_differences(path: &str, recorded: &Value, got: &Value, out: &mut Vec<String>) {
    const MOST: usize = 8;
    if out.len() >= MOST || recorded == got {
        return;
    }
    let join = |key: &str| if path.is_empty() { key.to_string() } else { format!("{path}.{key}") };
    match (recorded, got) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => json_differences(&join(key), x, y, out),
                    (x, y) => out.push(field(&join(key), x, y)),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for index in 0..a.len().max(b.len()) {
                let at = format!("{path}[{index}]");
                match (a.get(index), b.get(index)) {
                    (Some(x), Some(y)) => json_differences(&at, x, y, out),
                    (x, y) => out.push(field(&at, x, y)),
                }
            }
        }
        _ => out.push(field(path, Some(recorded), Some(got))),
    }
}

fn field(path: &str, recorded: Option<&Value>, got: Option<&Value>) -> String {
    let show = |v: Option<&Value>| match v {
        None => "absent".to_string(),
        Some(v) => {
            let text = v.to_string();
            if text.chars().count() > 60 {
                format!("{}...", text.chars().take(57).collect::<String>())
            } else {
                text
            }
        }
    };
    let name = if path.is_empty() { "body".to_string() } else { format!("body field `{path}`") };
    format!("{name} (recorded {}, got {})", show(recorded), show(got))
}

/// JSON with object keys sorted, whatever order they came in.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> =
                entries.iter().map(|(k, v)| format!("{}:{}", Value::String((*k).clone()), canonical(v))).collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// Removes a dotted field path (`metadata.trace_id`); through arrays, from each element.
fn remove_field(value: &mut Value, path: &str) {
    let (head, rest) = match path.split_once('.') {
        Some((head, rest)) => (head, Some(rest)),
        None => (path, None),
    };
    match value {
        Value::Object(map) => match rest {
            None => {
                map.remove(head);
            }
            Some(rest) => {
                if let Some(inner) = map.get_mut(head) {
                    remove_field(inner, rest);
                }
            }
        },
        Value::Array(items) => items.iter_mut().for_each(|item| remove_field(item, path)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(url: &str, body: &str, options: &MatchOptions) -> RequestView {
        RequestView::new("POST", url, body.as_bytes(), options)
    }

    #[test]
    fn json_bodies_match_canonically_less_ignored_fields() {
        let options = MatchOptions {
            ignore_query: vec!["ts".into()],
            ignore_fields: vec!["user".into(), "metadata.trace_id".into()],
        };
        let a = view("/v1/x?b=2&a=1&ts=5", r#"{"model":"m","user":"u1","metadata":{"trace_id":"t1","k":1}}"#, &options);
        let b = view("/v1/x?a=1&b=2", r#"{"metadata":{"k":1,"trace_id":"t2"},"user":"u2","model":"m"}"#, &options);
        assert_eq!(a.key(), b.key());
        let c = view("/v1/x?a=1&b=2", r#"{"metadata":{"k":2},"model":"m"}"#, &options);
        assert_ne!(a.key(), c.key());
        assert_eq!(a.differences(&c), vec!["body field `metadata.k` (recorded 1, got 2)".to_string()]);
    }

    #[test]
    fn differences_name_the_field() {
        let none = MatchOptions::default();
        let recorded = view("/v1/c?x=1", r#"{"temperature":0.2,"messages":[{"content":"hi"}]}"#, &none);
        let got = view("/v1/c?x=2", r#"{"temperature":0.7,"messages":[{"content":"hi"},{"content":"more"}]}"#, &none);
        assert_eq!(
            recorded.differences(&got),
            vec![
                "query parameter `x` (recorded '1', got '2')".to_string(),
                "body field `messages[1]` (recorded absent, got {\"content\":\"more\"})".to_string(),
                "body field `temperature` (recorded 0.2, got 0.7)".to_string(),
            ]
        );
        assert_eq!(
            view("/", "abc", &none).differences(&view("/", "", &none)),
            vec!["body (recorded 3 bytes, got none)"]
        );
    }

    #[test]
    fn the_nearest_recording_is_the_same_method_and_path() {
        let none = MatchOptions::default();
        let recorded = RequestView::new("post", "/v1/c?x=1", b"{}", &none);
        assert_eq!(recorded.label(), "POST /v1/c");
        assert!(recorded.same_resource(&RequestView::new("POST", "/v1/c?x=2", b"[]", &none)));
        assert!(!recorded.same_resource(&RequestView::new("POST", "/v1/d?x=1", b"{}", &none)));
        assert!(!recorded.same_resource(&RequestView::new("GET", "/v1/c?x=1", b"{}", &none)));
    }

    #[test]
    fn equal_bodies_are_no_difference_and_long_values_are_cut() {
        let none = MatchOptions::default();
        assert_eq!(
            view("/?x=1", "same bytes", &none).differences(&view("/?x=2", "same bytes", &none)),
            vec!["query parameter `x` (recorded '1', got '2')"]
        );
        // A value's JSON text up to 60 characters is shown whole, a longer one cut to 57 and "...".
        let sixty = format!("\"{}\"", "a".repeat(58));
        let sixty_one = format!("\"{}\"", "b".repeat(59));
        let recorded = view("/", &format!(r#"{{"p":{sixty},"q":{sixty_one}}}"#), &none);
        let got = view("/", r#"{"p":1,"q":2}"#, &none);
        assert_eq!(
            recorded.differences(&got),
            vec![
                format!("body field `p` (recorded {sixty}, got 1)"),
                format!("body field `q` (recorded \"{}..., got 2)", "b".repeat(56)),
            ]
        );
    }

    #[test]
    fn ignored_fields_are_removed_from_each_element_of_an_array() {
        let options = MatchOptions { ignore_fields: vec!["messages.id".into()], ..MatchOptions::default() };
        let a = view("/", r#"{"messages":[{"id":1,"text":"hi"},{"id":2,"text":"yo"}]}"#, &options);
        let b = view("/", r#"{"messages":[{"id":7,"text":"hi"},{"id":8,"text":"yo"}]}"#, &options);
        assert_eq!(a.key(), b.key());
        let c = view("/", r#"{"messages":[{"id":1,"text":"hi"},{"id":2,"text":"no"}]}"#, &options);
        assert_ne!(a.key(), c.key());
    }
}
