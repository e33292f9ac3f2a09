//! Reading a cassette for replay: every line is checked when the cassette is loaded (at `start()`
//! or `server.replay()`), so a corrupt, truncated or hand-edited file is refused up front with the
//! file and line named, never half-played.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use base64::Engine as _;
use bytes::Bytes;

use crate::cassette::format::{Data, Line, VERSION};

/// Longest line read (a body chunk or event is one line): past it the file is refused, not read
/// into memory whole.
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// A cassette that cannot be replayed; the message names the file and, when it is one, the line.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    /// The file cannot be opened or read.
    #[error("cassette '{path}': {reason}")]
    Io {
        /// The path as given.
        path: String,
        /// The OS's reason.
        reason: String,
    },
    /// One line is wrong.
    #[error("cassette '{path}' line {line}: {reason}")]
    Line {
        /// The path as given.
        path: String,
        /// 1-based.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// One recorded exchange, whole: the request to match and the response to play.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Line of its `request` in the cassette (named in miss explanations).
    pub line: usize,
    /// Method.
    pub method: String,
    /// Path and query.
    pub url: String,
    /// The request body (empty when none).
    pub body: Vec<u8>,
    /// The response head's offset from the request's arrival, ms.
    pub at: f64,
    /// Status code.
    pub status: u16,
    /// Response headers, lowercase names, without content-encoding and content-length.
    pub headers: Vec<(String, String)>,
    /// What the upstream's Content-Encoding was (`identity` when none).
    pub encoding: String,
    /// The body in its recorded chunks.
    pub chunks: Vec<RecordedChunk>,
    /// When the body ended, ms.
    pub end_at: f64,
    /// Set when the upstream body failed: replay fails it at the same point.
    pub error: Option<String>,
    /// WebSocket messages of an upgraded exchange (status 101), in recorded order.
    pub ws: Vec<RecordedMessage>,
}

/// One WebSocket message.
#[derive(Debug, Clone)]
pub struct RecordedMessage {
    /// Offset from the request's arrival, ms.
    pub at: f64,
    /// Sent by the client (matched on replay), else by the server (played).
    pub from_client: bool,
    /// A text frame (`text`), else binary (`base64`).
    pub text: bool,
    /// The payload.
    pub data: Bytes,
}

/// One upstream chunk: the bytes of every `body` line with the same `chunk` index, joined.
#[derive(Debug, Clone)]
pub struct RecordedChunk {
    /// Offset from the request's arrival, ms.
    pub at: f64,
    /// The decoded bytes.
    pub bytes: Bytes,
}

/// An exchange while it is being read.
struct Partial {
    recorded: Recorded,
    /// The `chunk` index of the last chunk.
    last_chunk: Option<u64>,
    has_response: bool,
    ended: bool,
}

/// Reads and checks the cassette at `path` (blocking: run it off the async workers).
pub fn read_file(path: &Path) -> Result<Vec<Recorded>, CassetteError> {
    let name = path.display().to_string();
    let file =
        std::fs::File::open(path).map_err(|e| CassetteError::Io { path: name.clone(), reason: e.to_string() })?;
    read(BufReader::new(file), &name)
}

/// Reads and checks a cassette; `name` is the file named in errors.
pub fn read(mut input: impl BufRead, name: &str) -> Result<Vec<Recorded>, CassetteError> {
    let at_line = |line: usize, reason: String| CassetteError::Line { path: name.to_string(), line, reason };
    let mut exchanges: Vec<Partial> = Vec::new();
    let mut by_id: HashMap<u64, usize> = HashMap::new();
    let mut buffer = Vec::new();
    let mut number = 0;
    let mut seen_header = false;
    loop {
        buffer.clear();
        let read = (&mut input)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buffer)
            .map_err(|e| CassetteError::Io { path: name.to_string(), reason: e.to_string() })?;
        if read == 0 {
            break;
        }
        number += 1;
        if buffer.len() > MAX_LINE_BYTES {
            return Err(at_line(number, format!("longer than {MAX_LINE_BYTES} bytes")));
        }
        let text = buffer.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let line: Line = serde_json::from_slice(text).map_err(|e| {
            let hint = if e.is_eof() { " (the line is cut short: a truncated cassette?)" } else { "" };
            at_line(number, format!("not a cassette line: {e}{hint}"))
        })?;
        if !seen_header {
            match &line {
                Line::Cassette { version, .. } if *version == VERSION => {
                    seen_header = true;
                    continue;
                }
                Line::Cassette { version, .. } => {
                    return Err(at_line(
                        number,
                        format!("cassette version {version}; this build reads version {VERSION}"),
                    ))
                }
                _ => {
                    return Err(at_line(
                        number,
                        format!("a cassette starts with a {{\"type\":\"cassette\",\"version\":{VERSION},...}} line"),
                    ))
                }
            }
        }
        match line {
            Line::Cassette { .. } => return Err(at_line(number, "a second `cassette` line".into())),
            Line::Request { id, method, url, headers: _, body } => {
                if let Some(first) = by_id.get(&id) {
                    let first = exchanges[*first].recorded.line;
                    return Err(at_line(number, format!("exchange {id} already has a request, on line {first}")));
                }
                if http::Method::from_bytes(method.as_bytes()).is_err() {
                    return Err(at_line(number, format!("'{method}' is not an HTTP method")));
                }
                if !url.starts_with('/') {
                    return Err(at_line(number, format!("url '{url}' must be a path (and query) starting with '/'")));
                }
                let body = match body {
                    Some(data) => decode(data).map_err(|reason| at_line(number, reason))?.to_vec(),
                    None => Vec::new(),
                };
                by_id.insert(id, exchanges.len());
                exchanges.push(Partial {
                    recorded: Recorded {
                        line: number,
                        method,
                        url,
                        body,
                        at: 0.0,
                        status: 0,
                        headers: Vec::new(),
                        encoding: String::new(),
                        chunks: Vec::new(),
                        end_at: 0.0,
                        error: None,
                        ws: Vec::new(),
                    },
                    last_chunk: None,
                    has_response: false,
                    ended: false,
                });
            }
            Line::Response { id, at, status, headers, encoding } => {
                let partial = find(&mut exchanges, &by_id, id).map_err(|reason| at_line(number, reason))?;
                if partial.has_response {
                    return Err(at_line(number, format!("exchange {id} already has a response")));
                }
                check_at(at).map_err(|reason| at_line(number, reason))?;
                if http::StatusCode::from_u16(status).is_err() || (status < 200 && status != 101) {
                    return Err(at_line(number, format!("status {status} is not a final HTTP status (101, 200-999)")));
                }
                for (name, value) in &headers {
                    if http::HeaderName::from_bytes(name.as_bytes()).is_err()
                        || http::HeaderValue::from_str(value).is_err()
                    {
                        return Err(at_line(number, format!("header '{name}' is not a valid header")));
                    }
                }
                let recorded = &mut partial.recorded;
                (recorded.at, recorded.status, recorded.encoding) = (at, status, encoding);
                // Hand-edited files may keep them: the body is stored decoded, its length may change.
                recorded.headers = headers
                    .into_iter()
                    .filter(|(name, _)| {
                        !name.eq_ignore_ascii_case("content-encoding") && !name.eq_ignore_ascii_case("content-length")
                    })
                    .collect();
                partial.has_response = true;
            }
            Line::Body { id, chunk, at, data } => {
                let partial = find(&mut exchanges, &by_id, id).map_err(|reason| at_line(number, reason))?;
                if !partial.has_response || partial.ended {
                    let when = if partial.ended { "after its end" } else { "before its response" };
                    return Err(at_line(number, format!("body of exchange {id} {when}")));
                }
                check_at(at).map_err(|reason| at_line(number, reason))?;
                let bytes = decode(data).map_err(|reason| at_line(number, reason))?;
                match partial.last_chunk {
                    Some(last) if chunk < last => {
                        return Err(at_line(number, format!("chunk {chunk} comes after chunk {last}")));
                    }
                    Some(last) if chunk == last => {
                        let previous = partial.recorded.chunks.last_mut().expect("a chunk was read");
                        let mut joined = Vec::with_capacity(previous.bytes.len() + bytes.len());
                        joined.extend_from_slice(&previous.bytes);
                        joined.extend_from_slice(&bytes);
                        previous.bytes = joined.into();
                    }
                    _ => partial.recorded.chunks.push(RecordedChunk { at, bytes }),
                }
                partial.last_chunk = Some(chunk);
            }
            Line::Ws { id, at, from, data } => {
                let partial = find(&mut exchanges, &by_id, id).map_err(|reason| at_line(number, reason))?;
                check_at(at).map_err(|reason| at_line(number, reason))?;
                if partial.recorded.status != 101 || partial.ended {
                    return Err(at_line(
                        number,
                        format!(
                            "a `ws` line of exchange {id}, which is not an open WebSocket (status 101, before its end)"
                        ),
                    ));
                }
                let from_client = match from.as_str() {
                    "client" => true,
                    "server" => false,
                    other => {
                        return Err(at_line(number, format!("`from` must be 'client' or 'server', got '{other}'")))
                    }
                };
                let text = matches!(data, Data::Text(_));
                let data = decode(data).map_err(|reason| at_line(number, reason))?;
                partial.recorded.ws.push(RecordedMessage { at, from_client, text, data });
            }
            Line::End { id, at, error } => {
                let partial = find(&mut exchanges, &by_id, id).map_err(|reason| at_line(number, reason))?;
                if partial.ended {
                    return Err(at_line(number, format!("exchange {id} already ended")));
                }
                check_at(at).map_err(|reason| at_line(number, reason))?;
                (partial.recorded.end_at, partial.recorded.error) = (at, error);
                partial.ended = true;
            }
        }
    }
    if !seen_header {
        return Err(at_line(number.max(1), "the file is empty: not a cassette".into()));
    }
    exchanges
        .into_iter()
        .map(|partial| {
            let missing = if !partial.has_response {
                "response"
            } else if !partial.ended {
                "end"
            } else {
                return Ok(partial.recorded);
            };
            Err(at_line(
                partial.recorded.line,
                format!(
                    "the exchange of this request ({} {}) has no `{missing}` line: a truncated cassette?",
                    partial.recorded.method, partial.recorded.url
                ),
            ))
        })
        .collect()
}

/// The exchange a line belongs to.
fn find<'a>(exchanges: &'a mut [Partial], by_id: &HashMap<u64, usize>, id: u64) -> Result<&'a mut Partial, String> {
    let index = by_id.get(&id).ok_or_else(|| format!("exchange {id} has no request line before it"))?;
    Ok(&mut exchanges[*index])
}

fn check_at(at: f64) -> Result<(), String> {
    if at.is_finite() && (0.0..=86_400_000.0).contains(&at) {
        Ok(())
    } else {
        Err(format!("`at` {at} is not a time in ms from 0 to a day"))
    }
}

fn decode(data: Data) -> Result<Bytes, String> {
    match data {
        Data::Text(text) => Ok(Bytes::from(text)),
        Data::Base64(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64.as_bytes())
            .map(Bytes::from)
            .map_err(|e| format!("`base64` is not valid base64: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"{"type":"cassette","version":1,"createdAt":"2026-11-30T16:00:00Z"}"#;

    fn read_str(text: &str) -> Result<Vec<Recorded>, CassetteError> {
        read(text.as_bytes(), "c.jsonl")
    }

    #[test]
    fn events_of_one_chunk_are_joined() {
        let text = [
            HEAD,
            r#"{"type":"request","id":1,"method":"POST","url":"/v1/x","headers":[],"body":{"text":"{}"}}"#,
            r#"{"type":"response","id":1,"at":10,"status":200,"headers":[["content-type","text/event-stream"],["content-length","9"]],"encoding":"gzip"}"#,
            r#"{"type":"body","id":1,"chunk":0,"at":20,"text":"data: a\n\n"}"#,
            r#"{"type":"body","id":1,"chunk":0,"at":20,"text":"data: b\n\n"}"#,
            r#"{"type":"body","id":1,"chunk":1,"at":30.5,"base64":"ZGF0YTogYwoK"}"#,
            r#"{"type":"end","id":1,"at":31}"#,
            "",
        ]
        .join("\n");
        let recorded = read_str(&text).unwrap();
        assert_eq!(recorded.len(), 1);
        let r = &recorded[0];
        assert_eq!((r.line, r.status, r.body.as_slice()), (2, 200, &b"{}"[..]));
        assert_eq!(r.headers, vec![("content-type".to_string(), "text/event-stream".to_string())]);
        let chunks: Vec<(f64, &[u8])> = r.chunks.iter().map(|c| (c.at, &c.bytes[..])).collect();
        assert_eq!(chunks, vec![(20.0, &b"data: a\n\ndata: b\n\n"[..]), (30.5, &b"data: c\n\n"[..])]);
    }

    #[test]
    fn bad_cassettes_name_the_line() {
        let request = r#"{"type":"request","id":1,"method":"GET","url":"/","headers":[]}"#;
        let response = r#"{"type":"response","id":1,"at":1,"status":200,"headers":[],"encoding":"identity"}"#;
        let cases: Vec<(String, &str)> = vec![
            (String::new(), "line 1: the file is empty"),
            (request.to_string(), "line 1: a cassette starts with"),
            (format!("{HEAD}\n{request}\n{{\"type\":\"response\",\"id\":1,\"at\":1,\"sta"), "line 3: not a cassette line"),
            (format!("{HEAD}\n{request}\n{response}\n"), "line 2: the exchange of this request (GET /) has no `end`"),
            (format!("{HEAD}\n{request}\n"), "has no `response` line"),
            (format!("{HEAD}\n{request}\n{request}"), "line 3: exchange 1 already has a request, on line 2"),
            (format!("{HEAD}\n{response}"), "line 2: exchange 1 has no request line"),
            (format!("{HEAD}\n{{\"type\":\"tape\"}}"), "line 2: not a cassette line: unknown variant `tape`"),
            (
                format!("{HEAD}\n{request}\n{response}\n{{\"type\":\"body\",\"id\":1,\"chunk\":0,\"at\":2,\"base64\":\"!!\"}}"),
                "line 4: `base64` is not valid base64",
            ),
            (r#"{"type":"cassette","version":9,"createdAt":""}"#.to_string(), "line 1: cassette version 9"),
        ];
        for (text, says) in cases {
            let err = read_str(&text).unwrap_err().to_string();
            assert!(err.starts_with("cassette 'c.jsonl'") && err.contains(says), "{says}: {err}");
        }
    }
}
