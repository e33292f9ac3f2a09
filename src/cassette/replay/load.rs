//! Reading a cassette for replay: the file is read and checked by [`crate::cassette::read`] when
//! the cassette is loaded (at `start()` or `server.replay()`), so a corrupt, truncated or
//! hand-edited file is refused up front with the file and line named, never half-played. Here its
//! exchanges become what replay plays.

use std::io::{BufRead, BufReader};
use std::path::Path;

use bytes::Bytes;

use crate::cassette::format::WsKind;
use crate::cassette::read::{self, Exchange, ReadError};

pub use crate::error::CassetteError;

impl From<ReadError> for CassetteError {
    fn from(error: ReadError) -> Self {
        match error {
            ReadError::Io { path, reason } => CassetteError::Io { path, reason },
            ReadError::Line { path, line, reason } => CassetteError::Line { path, line, reason },
        }
    }
}

/// One recorded exchange, whole: the request to match and the response to play.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Line of its `request` in the cassette (named in miss explanations).
    pub line: usize,
    /// Its `id` in the cassette (0 for an answer made up by the proxy).
    pub id: u64,
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
    /// The WebSocket's recorded close code.
    pub close: Option<u16>,
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
    /// Its last fragment never came: played as one frame without FIN (a client's is not waited for).
    pub unfinished: bool,
}

/// One upstream chunk: the bytes of every `body` line with the same `chunk` index, joined.
#[derive(Debug, Clone)]
pub struct RecordedChunk {
    /// Offset from the request's arrival, ms.
    pub at: f64,
    /// The decoded bytes.
    pub bytes: Bytes,
}

/// Reads and checks the cassette at `path` (blocking: run it off the async workers).
pub fn read_file(path: &Path) -> Result<Vec<Recorded>, CassetteError> {
    let name = path.display().to_string();
    let file =
        std::fs::File::open(path).map_err(|e| CassetteError::Io { path: name.clone(), reason: e.to_string() })?;
    read(BufReader::new(file), &name)
}

/// Reads and checks a cassette; `name` is the file named in errors.
pub fn read(input: impl BufRead, name: &str) -> Result<Vec<Recorded>, CassetteError> {
    let cassette = read::read_from(input, name)?;
    cassette
        .exchanges
        .into_iter()
        // One that failed before its head (the target was down) has nothing to play: the same request
        // is a miss, and `onMiss` says what becomes of it.
        .filter(|exchange| exchange.response.is_some() || exchange.error.is_none())
        .map(|exchange| recorded(exchange, name))
        .collect()
}

/// One exchange as replay plays it.
fn recorded(mut exchange: Exchange, name: &str) -> Result<Recorded, CassetteError> {
    // One buffer per body, each chunk a slice of it: no allocation per chunk.
    let joined = exchange.joined_chunks();
    let whole = bytes::Bytes::from(std::mem::take(&mut exchange.response_body));
    let chunks = joined.into_iter().map(|(_, at, range)| RecordedChunk { at, bytes: whole.slice(range) }).collect();
    let Exchange { line, id, method, url, body, response, ws, end_at, error, close, .. } = exchange;
    // The reader lets an exchange that failed before its head end without one; replay needs it.
    let Some(head) = response else {
        return Err(CassetteError::Line {
            path: name.to_string(),
            line,
            reason: format!(
                "the exchange of this request ({method} {url}) has no `response` line: a truncated cassette?"
            ),
        });
    };
    let ws = ws
        .into_iter()
        .map(|m| RecordedMessage {
            at: m.at,
            from_client: m.from == "client",
            text: m.kind == WsKind::Text,
            data: m.data.to_bytes().into(),
            unfinished: m.unfinished,
        })
        .collect();
    Ok(Recorded {
        line,
        id,
        method,
        url,
        body: body.map(|data| data.to_bytes()).unwrap_or_default(),
        at: head.at,
        status: head.status,
        // Hand-edited files may keep them: the body is stored decoded, its length may change.
        headers: head
            .headers
            .into_iter()
            .filter(|(name, _)| {
                !name.eq_ignore_ascii_case("content-encoding") && !name.eq_ignore_ascii_case("content-length")
            })
            .collect(),
        encoding: head.encoding,
        chunks,
        end_at,
        error,
        ws,
        close,
    })
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
    fn an_exchange_that_failed_before_its_head_is_not_played() {
        let failed = concat!(
            r#"{"type":"request","id":1,"method":"GET","url":"/down","headers":[]}"#,
            "\n",
            r#"{"type":"end","id":1,"at":1,"error":"tcp connect error: Connection refused"}"#,
            "\n",
            r#"{"type":"request","id":2,"method":"GET","url":"/up","headers":[]}"#,
            "\n",
            r#"{"type":"response","id":2,"at":1,"status":200,"headers":[],"encoding":"identity"}"#,
            "\n",
            r#"{"type":"end","id":2,"at":2}"#,
            "\n"
        );
        let recorded = read_str(&format!("{HEAD}\n{failed}")).unwrap();
        assert_eq!(recorded.iter().map(|r| r.url.as_str()).collect::<Vec<_>>(), ["/up"]);
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
            (format!("{HEAD}\n{response}"), "line 2: response line for exchange 1, whose request line does not come"),
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
