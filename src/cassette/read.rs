//! Reading a cassette back: every line parsed and checked, lines grouped into exchanges. A corrupt,
//! truncated or hand-edited file gives a [`ReadError`] naming its line, never a panic or a hang.
//! Shared by replay and `toHar()`.

use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::path::Path;

use super::format::{Data, Line, WsKind, VERSION};

/// Why a cassette could not be read. Line numbers count from 1.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("cannot read cassette {path}: {reason}")]
    Io {
        /// The cassette's path.
        path: String,
        /// The OS's reason.
        reason: String,
    },
    /// A line is not a JSON cassette line (cut short, edited, or not JSON at all).
    #[error("cassette {path}, line {line}: {reason}")]
    Line {
        /// The cassette's path.
        path: String,
        /// The line's number, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// One exchange, its lines in the order they were written.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// The line of its `request`.
    pub line: usize,
    /// Its `id`.
    pub id: u64,
    /// Method.
    pub method: String,
    /// Path and query.
    pub url: String,
    /// Request headers.
    pub headers: Vec<(String, String)>,
    /// Request body.
    pub body: Option<Data>,
    /// The response head; `None` when the exchange ended with an error before it.
    pub response: Option<ResponseHead>,
    /// Body lines: (chunk index, `at`, where its bytes end in `response_body`), in order. Compact on
    /// purpose: a crafted cassette of a million one-byte lines costs 24 bytes a line, not an
    /// allocation each.
    pub chunks: Vec<(u64, f64, usize)>,
    /// The bytes of every body line, one after the other.
    pub response_body: Vec<u8>,
    /// WebSocket messages, in order.
    pub ws: Vec<WsMessage>,
    /// The `end` line's `at`.
    pub end_at: f64,
    /// The `end` line's error (the upstream body failed there).
    pub error: Option<String>,
    /// The `end` line's WebSocket close code.
    pub close: Option<u16>,
}

/// One `ws` line.
#[derive(Debug, Clone, PartialEq)]
pub struct WsMessage {
    /// Milliseconds from the request's arrival.
    pub at: f64,
    /// `client` or `server`.
    pub from: String,
    /// Its frames' kind (the line's `kind`, else what its data says).
    pub kind: WsKind,
    /// The bytes.
    pub data: Data,
    /// Its last fragment never came.
    pub unfinished: bool,
}

/// A recorded response head.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseHead {
    /// Milliseconds from the request's arrival.
    pub at: f64,
    /// Status.
    pub status: u16,
    /// Headers (no content-encoding / content-length).
    pub headers: Vec<(String, String)>,
    /// The coding the upstream sent.
    pub encoding: String,
}

/// A whole cassette.
#[derive(Debug, Clone, PartialEq)]
pub struct Cassette {
    /// When it was recorded (RFC 3339).
    pub created_at: String,
    /// Exchanges in the order their requests were written.
    pub exchanges: Vec<Exchange>,
}

/// Reads and checks the cassette at `path`.
pub fn read(path: &Path) -> Result<Cassette, ReadError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| ReadError::Io { path: name.clone(), reason: e.to_string() })?;
    read_from(std::io::BufReader::new(file), &name)
}

/// Longest line read (a body chunk or event is one line): past it the file is refused, not read
/// into memory whole.
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Reads a cassette from any reader; `path` names it in errors.
pub fn read_from(mut reader: impl BufRead, path: &str) -> Result<Cassette, ReadError> {
    let at_line = |line: usize, reason: String| ReadError::Line { path: path.to_string(), line, reason };
    let mut created_at = None;
    let mut exchanges: Vec<Exchange> = Vec::new();
    // id -> index in `exchanges`, while the exchange is open (no `end` yet).
    let mut open: HashMap<u64, usize> = HashMap::new();
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let mut buffer = Vec::new();
    let mut number = 0;
    loop {
        buffer.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buffer)
            .map_err(|e| ReadError::Io { path: path.to_string(), reason: e.to_string() })?;
        if read == 0 {
            break;
        }
        number += 1;
        let line = number;
        let bad = |reason: String| at_line(line, reason);
        if buffer.len() > MAX_LINE_BYTES {
            return Err(bad(format!("longer than {MAX_LINE_BYTES} bytes")));
        }
        let text = buffer.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let parsed: Line = serde_json::from_slice(text).map_err(|e| {
            let hint = if e.is_eof() { " (the line is cut short: a truncated cassette?)" } else { "" };
            bad(format!("not a cassette line: {e}{hint}"))
        })?;
        let Some(_) = created_at else {
            let Line::Cassette { version, created_at: at } = parsed else {
                return Err(bad(format!(
                    "a cassette starts with a {{\"type\":\"cassette\",\"version\":{VERSION},...}} line (the cassette header): this file is not a cassette"
                )));
            };
            if version != VERSION {
                return Err(bad(format!("cassette version {version}; this build reads version {VERSION}")));
            }
            created_at = Some(at);
            continue;
        };
        let exchange = |id: u64, what: &str, exchanges: &mut Vec<Exchange>| -> Result<usize, ReadError> {
            match open.get(&id) {
                Some(&index) => Ok(index),
                None if seen.contains_key(&id) => Err(bad(format!(
                    "{what} line for exchange {id}, which already ended (line {})",
                    exchanges[seen[&id]].line
                ))),
                None => Err(bad(format!("{what} line for exchange {id}, whose request line does not come before it"))),
            }
        };
        let check_at = |at: f64| {
            if at.is_finite() && (0.0..=86_400_000.0).contains(&at) {
                Ok(at)
            } else {
                Err(bad(format!("`at` {at} is not a time in ms from 0 to a day")))
            }
        };
        match parsed {
            Line::Cassette { .. } => return Err(bad("a second cassette header".into())),
            Line::Request { id, method, url, headers, body } => {
                if let Some(&first) = seen.get(&id) {
                    let first = exchanges[first].line;
                    return Err(bad(format!("exchange {id} already has a request, on line {first}")));
                }
                if http::Method::from_bytes(method.as_bytes()).is_err() {
                    return Err(bad(format!("'{method}' is not an HTTP method")));
                }
                if !url.starts_with('/') {
                    return Err(bad(format!("url '{url}' must be a path (and query) starting with '/'")));
                }
                if let Some(data) = &body {
                    check_data(data).map_err(bad)?;
                }
                seen.insert(id, exchanges.len());
                open.insert(id, exchanges.len());
                exchanges.push(Exchange {
                    line,
                    id,
                    method,
                    url,
                    headers,
                    body,
                    response: None,
                    chunks: Vec::new(),
                    response_body: Vec::new(),
                    ws: Vec::new(),
                    end_at: 0.0,
                    error: None,
                    close: None,
                });
            }
            Line::Response { id, at, status, headers, encoding } => {
                let index = exchange(id, "response", &mut exchanges)?;
                if exchanges[index].response.is_some() {
                    return Err(bad(format!("exchange {id} already has a response")));
                }
                let at = check_at(at)?;
                if http::StatusCode::from_u16(status).is_err() || (status < 200 && status != 101) {
                    return Err(bad(format!("status {status} is not a final HTTP status (101, 200-999)")));
                }
                for (name, value) in &headers {
                    if http::HeaderName::from_bytes(name.as_bytes()).is_err()
                        || http::HeaderValue::from_str(value).is_err()
                    {
                        return Err(bad(format!("header '{name}' is not a valid header")));
                    }
                }
                exchanges[index].response = Some(ResponseHead { at, status, headers, encoding });
            }
            Line::Body { id, chunk, at, data } => {
                let index = exchange(id, "body", &mut exchanges)?;
                let at = check_at(at)?;
                let ex = &mut exchanges[index];
                if ex.response.is_none() {
                    return Err(bad(format!("body line for exchange {id} before its response line")));
                }
                // Only the chunk index must go forward: hand-written cassettes (replay's tests among
                // them) give offsets freely, and replay plays the chunks in order whatever their offsets.
                if let Some(&(last_chunk, _, _)) = ex.chunks.last() {
                    if chunk < last_chunk {
                        return Err(bad(format!(
                            "chunk {chunk} comes after chunk {last_chunk}: chunks must go forward"
                        )));
                    }
                }
                check_data(&data).map_err(bad)?;
                data.append_to(&mut ex.response_body);
                ex.chunks.push((chunk, at, ex.response_body.len()));
            }
            Line::Ws { id, at, from, kind, data, unfinished } => {
                let index = exchange(id, "ws", &mut exchanges)?;
                let at = check_at(at)?;
                if exchanges[index].response.as_ref().map(|head| head.status) != Some(101) {
                    return Err(bad(format!(
                        "a `ws` line of exchange {id}, which is not an open WebSocket (status 101, before its end)"
                    )));
                }
                if from != "client" && from != "server" {
                    return Err(bad(format!("`from` must be 'client' or 'server', got '{from}'")));
                }
                check_data(&data).map_err(bad)?;
                let kind = WsKind::of(kind, &data);
                exchanges[index].ws.push(WsMessage { at, from, kind, data, unfinished });
            }
            Line::End { id, at, error, close } => {
                let index = exchange(id, "end", &mut exchanges)?;
                let at = check_at(at)?;
                let ex = &mut exchanges[index];
                if ex.response.is_none() && error.is_none() {
                    return Err(bad(format!("exchange {id} ends without a response line")));
                }
                ex.end_at = at;
                ex.error = error;
                ex.close = close;
                open.remove(&id);
            }
        }
    }
    if created_at.is_none() {
        return Err(at_line(number.max(1), "the file is empty: not a cassette".into()));
    }
    if let Some(ex) = open.values().map(|&i| &exchanges[i]).min_by_key(|ex| ex.line) {
        let missing = if ex.response.is_none() { "response" } else { "end" };
        return Err(at_line(
            ex.line,
            format!(
                "the exchange of this request ({} {}) has no `{missing}` line: a truncated cassette?",
                ex.method, ex.url
            ),
        ));
    }
    Ok(Cassette { created_at: created_at.unwrap_or_default(), exchanges })
}

fn check_data(data: &Data) -> Result<(), String> {
    if let Data::Base64(b64) = data {
        decode_base64(b64).map_err(|e| format!("`base64` is not valid base64: {e}"))?;
    }
    Ok(())
}

/// Standard base64 with padding, as cassettes store non-UTF-8 bytes.
pub fn decode_base64(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text)
}

impl Exchange {
    /// The body lines: (chunk index, `at`, bytes), in order.
    pub fn body_lines(&self) -> impl Iterator<Item = (u64, f64, &[u8])> + '_ {
        let starts = std::iter::once(0).chain(self.chunks.iter().map(|&(_, _, end)| end));
        self.chunks.iter().zip(starts).map(|(&(chunk, at, end), start)| (chunk, at, &self.response_body[start..end]))
    }

    /// The body as the upstream sent it: the lines of one `chunk` index joined into one chunk, with
    /// that chunk's `at`, as ranges of `response_body`.
    pub fn joined_chunks(&self) -> Vec<(u64, f64, std::ops::Range<usize>)> {
        let mut joined: Vec<(u64, f64, std::ops::Range<usize>)> = Vec::new();
        let mut start = 0;
        for &(chunk, at, end) in &self.chunks {
            match joined.last_mut() {
                Some((last, _, range)) if *last == chunk => range.end = end,
                _ => joined.push((chunk, at, start..end)),
            }
            start = end;
        }
        joined
    }
}

impl Data {
    /// Appends the bytes to `out` (base64 checked when read).
    pub fn append_to(&self, out: &mut Vec<u8>) {
        use base64::Engine;
        match self {
            Data::Text(text) => out.extend_from_slice(text.as_bytes()),
            Data::Base64(b64) => {
                let _ = base64::engine::general_purpose::STANDARD.decode_vec(b64, out);
            }
        }
    }

    /// The bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Data::Text(text) => text.as_bytes().to_vec(),
            // Checked when read.
            Data::Base64(b64) => decode_base64(b64).unwrap_or_default(),
        }
    }

    /// `text` when `bytes` are UTF-8, else `base64`.
    pub fn of(bytes: &[u8]) -> Data {
        use base64::Engine;
        match std::str::from_utf8(bytes) {
            Ok(text) => Data::Text(text.to_string()),
            Err(_) => Data::Base64(base64::engine::general_purpose::STANDARD.encode(bytes)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"{"type":"cassette","version":1,"createdAt":"2026-11-30T16:00:00Z"}"#;

    fn read_str(text: &str) -> Result<Cassette, ReadError> {
        read_from(text.as_bytes(), "t.jsonl")
    }

    #[test]
    fn a_whole_exchange_is_grouped() {
        let text = format!(
            "{HEAD}\n{}\n{}\n{}\n{}\n{}\n",
            r#"{"type":"request","id":1,"method":"POST","url":"/v1","headers":[["a","b"]],"body":{"text":"{}"}}"#,
            r#"{"type":"response","id":1,"at":3.5,"status":200,"headers":[],"encoding":"gzip"}"#,
            r#"{"type":"body","id":1,"chunk":0,"at":4,"text":"data: 1\n\n"}"#,
            r#"{"type":"body","id":1,"chunk":1,"at":9,"base64":"/w=="}"#,
            r#"{"type":"end","id":1,"at":9.5}"#,
        );
        let cassette = read_str(&text).unwrap();
        assert_eq!(cassette.exchanges.len(), 1);
        let ex = &cassette.exchanges[0];
        assert_eq!((ex.line, ex.method.as_str(), ex.end_at), (2, "POST", 9.5));
        assert_eq!(ex.response.as_ref().unwrap().encoding, "gzip");
        assert_eq!(ex.chunks.len(), 2);
        assert_eq!(ex.body_lines().nth(1).unwrap().2, &[0xff][..]);
    }

    #[test]
    fn broken_files_name_the_line() {
        let req = r#"{"type":"request","id":1,"method":"GET","url":"/","headers":[]}"#;
        let res = r#"{"type":"response","id":1,"at":1,"status":200,"headers":[],"encoding":"identity"}"#;
        let cases = [
            (String::new(), 1, "empty"),
            ("not json\n".to_string(), 1, "not a cassette line"),
            (format!("{req}\n"), 1, "cassette header"),
            (format!("{HEAD}\n{req}\n{res}\n{{\"type\":\"body\",\"id\":1,\"chu"), 4, "not a cassette line"),
            (format!("{HEAD}\n{req}\n{res}\n"), 2, "(GET /) has no `end` line: a truncated cassette?"),
            (format!("{HEAD}\n{req}\n"), 2, "(GET /) has no `response` line"),
            (format!("{HEAD}\n{{\"type\":\"tape\"}}\n"), 2, "not a cassette line: unknown variant `tape`"),
            (format!("{HEAD}\n{res}\n"), 2, "request line does not come before"),
            (format!("{HEAD}\n{req}\n{req}\n"), 3, "exchange 1 already has a request, on line 2"),
            (format!("{HEAD}\n{}\n", req.replace("GET", "G T")), 2, "'G T' is not an HTTP method"),
            (format!("{HEAD}\n{}\n", req.replace("\"/\"", "\"x\"")), 2, "url 'x' must be a path"),
            (format!("{HEAD}\n{req}\n{}\n", res.replace("200", "150")), 3, "status 150 is not a final HTTP status"),
            (format!("{HEAD}\n{req}\n{}\n", res.replace("[]", "[[\"a b\",\"c\"]]")), 3, "header 'a b' is not a valid"),
            (
                format!("{HEAD}\n{req}\n{res}\n{}\n", r#"{"type":"ws","id":1,"at":2,"from":"client","text":"x"}"#),
                4,
                "not an open WebSocket",
            ),
            (
                format!(
                    "{HEAD}\n{req}\n{}\n{}\n",
                    res.replace("200", "101"),
                    r#"{"type":"ws","id":1,"at":2,"from":"proxy","text":"x"}"#
                ),
                4,
                "`from` must be 'client' or 'server', got 'proxy'",
            ),
            (
                format!("{HEAD}\n{req}\n{}\n", r#"{"type":"body","id":1,"chunk":0,"at":1,"text":"x"}"#),
                3,
                "before its response",
            ),
            (
                format!("{HEAD}\n{req}\n{res}\n{}\n", r#"{"type":"body","id":1,"chunk":0,"at":-1,"text":"x"}"#),
                4,
                "`at` -1 is not a time in ms from 0 to a day",
            ),
            (
                format!("{HEAD}\n{req}\n{res}\n{}\n", r#"{"type":"body","id":1,"chunk":0,"at":2,"base64":"!!"}"#),
                4,
                "base64",
            ),
            (HEAD.replace("\"version\":1", "\"version\":9"), 1, "version 9"),
            (
                format!(
                    "{HEAD}\n{req}\n{res}\n{}\n{}\n",
                    r#"{"type":"end","id":1,"at":2}"#, r#"{"type":"end","id":1,"at":3}"#
                ),
                5,
                "already ended",
            ),
        ];
        for (text, line, says) in cases {
            let err = read_str(&text).unwrap_err().to_string();
            assert!(err.contains(&format!("line {line}:")) && err.contains(says), "{text:?} -> {err}");
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        for seed in 0u32..300 {
            let mut bytes = format!("{HEAD}\n").into_bytes();
            let mut x = seed.wrapping_mul(2654435761);
            for _ in 0..(seed % 200) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let alphabet = b"{}[]\":,\n typeidbodyat0123456789";
                bytes.push(alphabet[x as usize % alphabet.len()]);
            }
            let _ = read_from(&bytes[..], "fuzz");
        }
    }
}
