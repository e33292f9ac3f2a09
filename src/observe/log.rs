//! The request log's two forms: a short text line (`logFormat: 'text'`) and the record as one JSON
//! line (`logFormat: 'json'`).

use std::fmt::Write;

use super::ExchangeRecord;

/// `logFormat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// `GET /page -> 200 gzip->br 5120->1200 B 12.3 ms (upstream 10.1 ms) rewritten [snippet x1]`.
    Text,
    /// The exchange record, one JSON object per line, without the prefix.
    Json,
}

impl LogFormat {
    /// The option's JS value.
    pub fn parse(value: &str) -> Option<LogFormat> {
        match value {
            "text" => Some(LogFormat::Text),
            "json" => Some(LogFormat::Json),
            _ => None,
        }
    }
}

/// The text form; starts `METHOD URL -> STATUS` as the old debug line did.
pub(super) fn text_line(r: &ExchangeRecord) -> String {
    let mut line = format!("{} {} -> {}", r.method, r.url, r.status);
    let _ = write!(line, " {}", r.coding_in);
    if r.coding_out != r.coding_in {
        let _ = write!(line, "->{}", r.coding_out);
    }
    let _ = write!(line, " {}->{} B {:.1} ms", r.bytes_in, r.bytes_out, r.total_ms);
    if let Some(upstream) = r.upstream_ms {
        let _ = write!(line, " (upstream {upstream:.1} ms)");
    }
    let done = if r.rewritten { "rewritten" } else { "passed" };
    let _ = write!(line, " {done}");
    if let Some(rewrite) = r.rewrite_ms {
        let _ = write!(line, " (rewrite {rewrite:.1} ms");
        if let Some(encode) = r.encode_ms {
            let _ = write!(line, ", encode {encode:.1} ms");
        }
        line.push(')');
    }
    if r.source != "proxy" {
        let _ = write!(line, " from {}", r.source);
    }
    if r.recorded {
        line.push_str(" recorded");
    }
    if !r.rules.is_empty() {
        let rules: Vec<String> = r.rules.iter().map(|m| format!("{} x{}", m.rule, m.matches)).collect();
        let _ = write!(line, " [{}]", rules.join(", "));
    }
    if let Some(error) = &r.error {
        let _ = write!(line, " failed: {error}");
    }
    line
}

/// The JSON form (serde_json cannot fail on this record: string keys, finite numbers).
pub(super) fn json_line(r: &ExchangeRecord) -> String {
    serde_json::to_string(r).unwrap_or_else(|e| format!("{{\"error\":\"record not serialisable: {e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::RuleMatches;

    fn record() -> ExchangeRecord {
        ExchangeRecord {
            id: 7,
            method: "GET".into(),
            url: "/page?x=1".into(),
            status: 200,
            source: "proxy",
            coding_in: "gzip".into(),
            coding_out: "br".into(),
            bytes_in: 5120,
            bytes_out: 1200,
            upstream_ms: Some(10.14),
            total_ms: 12.26,
            rewrite_ms: Some(0.5),
            encode_ms: Some(0.7),
            rewritten: true,
            rules: vec![RuleMatches { rule: "snippet".into(), matches: 1 }],
            ..ExchangeRecord::default()
        }
    }

    #[test]
    fn text_line_says_what_was_done() {
        assert_eq!(
            text_line(&record()),
            "GET /page?x=1 -> 200 gzip->br 5120->1200 B 12.3 ms (upstream 10.1 ms) rewritten \
             (rewrite 0.5 ms, encode 0.7 ms) [snippet x1]"
        );
        let passed = ExchangeRecord {
            coding_out: "gzip".into(),
            rewritten: false,
            rewrite_ms: None,
            encode_ms: None,
            rules: Vec::new(),
            source: "local",
            upstream_ms: None,
            ..record()
        };
        assert_eq!(text_line(&passed), "GET /page?x=1 -> 200 gzip 5120->1200 B 12.3 ms passed from local");
    }

    #[test]
    fn json_line_is_the_camel_case_record() {
        let value: serde_json::Value = serde_json::from_str(&json_line(&record())).unwrap();
        assert_eq!(value["codingIn"], "gzip");
        assert_eq!(value["bytesOut"], 1200);
        assert_eq!(value["upstreamMs"], 10.14);
        assert_eq!(value["rules"][0]["rule"], "snippet");
        assert!(value.get("preview").is_none(), "no preview unless kept");
    }
}
