//! A cassette as HAR 1.2, for DevTools and the tools that read HAR: one entry per exchange, bodies
//! whole (text, or base64 when not UTF-8), `timings.wait` the time to the response head and
//! `timings.receive` from there to the end. Chunk offsets go in `_chunks` (HAR's custom-field
//! convention), WebSocket messages in Chrome's `_webSocketMessages`.

use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Value};

use super::format::{Data, WsKind};
use super::read::{read, Cassette, Exchange, ReadError};

/// Reads the cassette at `path` and returns its HAR as JSON text.
pub fn to_har_file(path: &Path) -> Result<String, ReadError> {
    let cassette = read(path)?;
    Ok(to_har(&cassette))
}

/// The HAR of a cassette, as JSON text. Written an entry at a time, with each entry's `_chunks` list
/// serialized straight from the cassette: besides the text and the cassette, memory holds one
/// entry's tree (a million-chunk cassette once peaked at 1.7 GiB here as one JSON tree).
pub fn to_har(cassette: &Cassette) -> String {
    let creator = json!({ "name": "devproxy-native", "version": env!("CARGO_PKG_VERSION") });
    let mut out = format!(r#"{{"log":{{"version":"1.2","creator":{creator},"pages":[],"entries":["#);
    for (i, ex) in cassette.exchanges.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let entry = serde_json::to_string(&entry(ex, &cassette.created_at)).unwrap_or_default();
        // The placeholder is the only `"_chunks":null`: any other such text would sit in a JSON
        // string, with its quotes escaped.
        let chunks = serde_json::to_string(&chunk_list(ex)).unwrap_or_else(|_| "[]".into());
        out.push_str(&entry.replacen(r#""_chunks":null"#, &format!(r#""_chunks":{chunks}"#), 1));
    }
    out.push_str("]}}");
    out
}

/// One `_chunks` item: the lines of one chunk index, summed.
#[derive(serde::Serialize)]
struct HarChunk {
    chunk: u64,
    at: f64,
    size: usize,
}

fn chunk_list(ex: &Exchange) -> Vec<HarChunk> {
    let mut chunks: Vec<HarChunk> = Vec::new();
    for (chunk, at, bytes) in ex.body_lines() {
        match chunks.last_mut() {
            Some(last) if last.chunk == chunk => last.size += bytes.len(),
            _ => chunks.push(HarChunk { chunk, at, size: bytes.len() }),
        }
    }
    chunks
}

fn pairs(headers: &[(String, String)]) -> Vec<Value> {
    headers.iter().map(|(name, value)| json!({ "name": name, "value": value })).collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

/// Bytes as HAR content: `text`, with `encoding: base64` when they are not UTF-8.
fn content(bytes: Vec<u8>, mime: &str) -> Value {
    match String::from_utf8(bytes) {
        Ok(text) => json!({ "size": text.len(), "mimeType": mime, "text": text }),
        Err(e) => {
            let bytes = e.into_bytes();
            let Data::Base64(b64) = Data::of(&bytes) else { unreachable!("not UTF-8") };
            json!({ "size": bytes.len(), "mimeType": mime, "text": b64, "encoding": "base64" })
        }
    }
}

fn entry(ex: &Exchange, started: &str) -> Value {
    let host = header(&ex.headers, "host").unwrap_or("localhost");
    let url = format!("http://{host}{}", ex.url);
    let query: Vec<Value> = url::Url::parse(&url)
        .map(|u| u.query_pairs().map(|(n, v)| json!({ "name": n, "value": v })).collect())
        .unwrap_or_default();
    let mut request = json!({
        "method": ex.method,
        "url": url,
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": pairs(&ex.headers),
        "queryString": query,
        "headersSize": -1,
        "bodySize": 0,
    });
    if let Some(body) = &ex.body {
        let bytes = body.to_bytes();
        request["bodySize"] = json!(bytes.len());
        let mime = header(&ex.headers, "content-type").unwrap_or("application/octet-stream");
        let mut post = content(bytes, mime);
        post.as_object_mut().map(|o| o.remove("size"));
        request["postData"] = post;
    }
    let (wait, status, headers, mime) = match &ex.response {
        Some(head) => (
            head.at,
            head.status,
            pairs(&head.headers),
            header(&head.headers, "content-type").unwrap_or("application/octet-stream").to_string(),
        ),
        None => (ex.end_at, 0, Vec::new(), String::new()),
    };
    let body = ex.response_body.clone();
    let size = body.len();
    let mut entry = json!({
        "startedDateTime": started,
        "time": ex.end_at,
        "request": request,
        "response": {
            "status": status,
            "statusText": http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or(""),
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": headers,
            "content": content(body, &mime),
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": size,
            // Filled in by `to_har` from the cassette, without a tree.
            "_chunks": null,
        },
        "cache": {},
        "timings": { "send": 0, "wait": wait, "receive": (ex.end_at - wait).max(0.0) },
    });
    if let Some(error) = &ex.error {
        entry["_error"] = json!(error);
    }
    if !ex.ws.is_empty() {
        let messages: Vec<Value> = ex
            .ws
            .iter()
            .map(|m| {
                let (opcode, text) = match (m.kind, &m.data) {
                    (WsKind::Text, Data::Text(t)) => (1, t.clone()),
                    // DevTools shows a text message's data as text: bytes that are not UTF-8, lossily.
                    (WsKind::Text, data) => (1, String::from_utf8_lossy(&data.to_bytes()).into_owned()),
                    (WsKind::Binary, data) => (2, base64::engine::general_purpose::STANDARD.encode(data.to_bytes())),
                };
                let kind = if m.from == "client" { "send" } else { "receive" };
                json!({ "type": kind, "time": m.at / 1000.0, "opcode": opcode, "data": text })
            })
            .collect();
        entry["_webSocketMessages"] = json!(messages);
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::read::read_from;

    #[test]
    fn an_exchange_becomes_an_entry_with_timings() {
        let text = [
            r#"{"type":"cassette","version":1,"createdAt":"2026-11-30T16:00:00Z"}"#,
            r#"{"type":"request","id":1,"method":"POST","url":"/v1/x?a=1","headers":[["host","127.0.0.1:9"],["content-type","application/json"]],"body":{"text":"{}"}}"#,
            r#"{"type":"response","id":1,"at":10,"status":200,"headers":[["content-type","text/event-stream"]],"encoding":"gzip"}"#,
            r#"{"type":"body","id":1,"chunk":0,"at":12,"text":"data: 1\n\n"}"#,
            r#"{"type":"body","id":1,"chunk":0,"at":12,"text":"data: 2\n\n"}"#,
            r#"{"type":"body","id":1,"chunk":1,"at":20,"base64":"/w=="}"#,
            r#"{"type":"end","id":1,"at":25}"#,
        ]
        .join("\n");
        let har: Value = serde_json::from_str(&to_har(&read_from(text.as_bytes(), "t").unwrap())).unwrap();
        let entry = &har["log"]["entries"][0];
        assert_eq!(entry["request"]["url"], "http://127.0.0.1:9/v1/x?a=1");
        assert_eq!(entry["request"]["queryString"][0]["name"], "a");
        assert_eq!(entry["request"]["postData"]["text"], "{}");
        assert_eq!(entry["timings"]["wait"], 10.0);
        assert_eq!(entry["timings"]["receive"], 15.0);
        assert_eq!(entry["response"]["content"]["encoding"], "base64");
        assert_eq!(entry["response"]["bodySize"], 19);
        assert_eq!(entry["response"]["_chunks"].as_array().unwrap().len(), 2);
        assert_eq!(entry["response"]["statusText"], "OK");
    }

    #[test]
    fn websocket_messages_keep_their_opcode() {
        let text = [
            r#"{"type":"cassette","version":1,"createdAt":"2026-11-30T16:00:00Z"}"#,
            r#"{"type":"request","id":1,"method":"GET","url":"/ws","headers":[["host","127.0.0.1:9"]]}"#,
            r#"{"type":"response","id":1,"at":1,"status":101,"headers":[],"encoding":"identity"}"#,
            r#"{"type":"ws","id":1,"at":2,"from":"server","text":"hi"}"#,
            r#"{"type":"ws","id":1,"at":3,"from":"client","base64":"AAE="}"#,
            r#"{"type":"ws","id":1,"at":4,"from":"server","kind":"text","base64":"//5h"}"#,
            r#"{"type":"end","id":1,"at":5,"close":1000}"#,
        ]
        .join("\n");
        let har: Value = serde_json::from_str(&to_har(&read_from(text.as_bytes(), "t").unwrap())).unwrap();
        let messages = &har["log"]["entries"][0]["_webSocketMessages"];
        let got: Vec<(&str, i64, &str)> = messages
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["type"].as_str().unwrap(), m["opcode"].as_i64().unwrap(), m["data"].as_str().unwrap()))
            .collect();
        // A text message that is not UTF-8 is text in DevTools too (its bad bytes replaced).
        assert_eq!(got, [("receive", 1, "hi"), ("send", 2, "AAE="), ("receive", 1, "\u{FFFD}\u{FFFD}a")]);
    }
}
