//! The cassette format: JSON Lines, one line per event of an exchange, in the order they happened
//! (lines of concurrent exchanges interleave; `id` ties them together). Readable and diffable in a
//! code review; `toHar()` turns it into HAR 1.2.
//!
//! ```text
//! {"type":"cassette","version":1,"createdAt":"2026-11-30T16:00:00Z"}
//! {"type":"request","id":1,"method":"POST","url":"/v1/chat/completions","headers":[["authorization","[redacted]"]],"body":{"text":"{...}"}}
//! {"type":"response","id":1,"at":312.5,"status":200,"headers":[["content-type","text/event-stream"]],"encoding":"identity"}
//! {"type":"body","id":1,"chunk":0,"at":340.1,"text":"data: {\"choices\":[...]}\n\n"}
//! {"type":"body","id":1,"chunk":0,"at":340.1,"text":"data: {\"choices\":[...]}\n\n"}
//! {"type":"body","id":1,"chunk":1,"at":371.0,"text":"data: [DONE]\n\n"}
//! {"type":"end","id":1,"at":371.2}
//! ```
//!
//! - `at`: milliseconds from the request's arrival at the proxy (fractional).
//! - Bodies are stored decoded: `encoding` says what the upstream sent, and the stored response
//!   headers have no `content-encoding` / `content-length` (replay compresses for the client as a
//!   proxied response would be).
//! - A body chunk is the decoded bytes of one upstream chunk. An SSE body (`text/event-stream`)
//!   writes one line per event: a chunk holding three events is three `body` lines with the same
//!   `chunk` index and `at` (a piece of an event that a chunk cuts is a line of its own). Replay
//!   joins the lines of one `chunk` index into one chunk, so chunk boundaries are kept exactly.
//! - `text` when the bytes are UTF-8, else `base64`.
//! - `ws` lines hold WebSocket messages of an upgraded exchange (status 101), from the client or
//!   the server, in the order the proxy saw them: a text message as `text`, a binary one always as
//!   `base64` (so replay sends each with its opcode). A text message whose bytes are not UTF-8 is
//!   `base64` with `"kind":"text"` (replay sends it as a text frame, byte for byte); `kind` is
//!   written only then (without it, `text` is a text message and `base64` a binary one).
//!   Control frames (ping, pong) are not kept; the first close frame's code is the `end` line's
//!   `close`, and its time the `end`'s `at`.
//! - A message whose last fragment never came (its sender's close frame came between its fragments,
//!   RFC 6455 5.4, or the tunnel ended) is a `ws` line with `"unfinished":true`: the fragments'
//!   bytes so far, at the time of that close (or of the tunnel's end). Replay sends it as one frame
//!   without FIN; an unfinished client message is not waited for.
//!
//! ```text
//! {"type":"request","id":2,"method":"GET","url":"/socket","headers":[["upgrade","websocket"],...]}
//! {"type":"response","id":2,"at":3.1,"status":101,"headers":[["upgrade","websocket"],...],"encoding":"identity"}
//! {"type":"ws","id":2,"at":20.4,"from":"server","text":"hello"}
//! {"type":"ws","id":2,"at":41.0,"from":"client","base64":"AAEC"}
//! {"type":"ws","id":2,"at":60.3,"from":"server","kind":"text","base64":"//5h"}
//! {"type":"ws","id":2,"at":88.9,"from":"server","text":"half a mes","unfinished":true}
//! {"type":"end","id":2,"at":90.2,"close":1000}
//! ```

use serde::{Deserialize, Serialize};

/// The version this build writes and reads.
pub const VERSION: u32 = 1;

/// One line of a cassette.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Line {
    /// The first line.
    #[serde(rename_all = "camelCase")]
    Cassette {
        /// [`VERSION`] when written.
        version: u32,
        /// RFC 3339 time of recording.
        created_at: String,
    },
    /// A request as it went to the upstream (secrets redacted).
    Request {
        /// Ties the lines of one exchange together; unique in the cassette.
        id: u64,
        /// Method.
        method: String,
        /// Path and query (redacted query parameters keep their name).
        url: String,
        /// Headers in order, names lowercase.
        headers: Vec<(String, String)>,
        /// The request body, if it had one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<Data>,
    },
    /// The upstream's response head.
    Response {
        /// The exchange.
        id: u64,
        /// Milliseconds from the request's arrival.
        at: f64,
        /// Status code.
        status: u16,
        /// Headers in order, names lowercase, without content-encoding and content-length.
        headers: Vec<(String, String)>,
        /// The Content-Encoding the upstream sent (`identity` when none).
        encoding: String,
    },
    /// Decoded body bytes: one upstream chunk, or one SSE event of it.
    Body {
        /// The exchange.
        id: u64,
        /// Index of the upstream chunk these bytes came in, from 0.
        chunk: u64,
        /// Milliseconds from the request's arrival.
        at: f64,
        /// The bytes.
        #[serde(flatten)]
        data: Data,
    },
    /// A WebSocket message of an upgraded exchange.
    Ws {
        /// The exchange.
        id: u64,
        /// Milliseconds from the request's arrival.
        at: f64,
        /// `client` or `server`.
        from: String,
        /// The frame's kind, written when `data` does not say it: a text message that is not
        /// UTF-8 (`base64`). Absent: `text` is a text message, `base64` a binary one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<WsKind>,
        /// The message (text frames as `text`, binary as `base64`).
        #[serde(flatten)]
        data: Data,
        /// Its last fragment never came (a close frame between its fragments, or the tunnel's end).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        unfinished: bool,
    },
    /// The exchange's end.
    End {
        /// The exchange.
        id: u64,
        /// Milliseconds from the request's arrival.
        at: f64,
        /// Set when the upstream body failed (replay fails the body at the same point), or when
        /// a WebSocket's recording stopped early (a message over 16 MiB, broken framing).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// A WebSocket's close code (the first close frame's, from either side), when it had one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        close: Option<u16>,
    },
}

/// A WebSocket data frame's kind (its opcode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WsKind {
    /// Opcode 1.
    Text,
    /// Opcode 2.
    Binary,
}

impl WsKind {
    /// The kind a `ws` line's message has: its `kind`, else what its data says.
    pub fn of(kind: Option<WsKind>, data: &Data) -> WsKind {
        kind.unwrap_or(match data {
            Data::Text(_) => WsKind::Text,
            Data::Base64(_) => WsKind::Binary,
        })
    }
}

/// Bytes as UTF-8 text or base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Data {
    /// Valid UTF-8.
    Text(String),
    /// Anything else, standard base64.
    Base64(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_in_the_documented_shape() {
        let body = Line::Body { id: 1, chunk: 0, at: 340.5, data: Data::Text("data: {}\n\n".into()) };
        let json = serde_json::to_string(&body).unwrap();
        assert_eq!(json, r#"{"type":"body","id":1,"chunk":0,"at":340.5,"text":"data: {}\n\n"}"#);
        assert_eq!(serde_json::from_str::<Line>(&json).unwrap(), body);
        let head = Line::Cassette { version: VERSION, created_at: "2026-11-30T16:00:00Z".into() };
        let json = serde_json::to_string(&head).unwrap();
        assert_eq!(json, r#"{"type":"cassette","version":1,"createdAt":"2026-11-30T16:00:00Z"}"#);
        assert_eq!(serde_json::from_str::<Line>(&json).unwrap(), head);
    }

    #[test]
    fn ws_lines_say_their_kind_only_when_the_data_does_not_and_old_lines_still_load() {
        let ws = |kind, data, unfinished| Line::Ws { id: 2, at: 1.5, from: "server".into(), kind, data, unfinished };
        let text = ws(Some(WsKind::Text), Data::Base64("//5h".into()), false);
        let json = serde_json::to_string(&text).unwrap();
        assert_eq!(json, r#"{"type":"ws","id":2,"at":1.5,"from":"server","kind":"text","base64":"//5h"}"#);
        assert_eq!(serde_json::from_str::<Line>(&json).unwrap(), text);
        let unfinished = ws(None, Data::Text("hel".into()), true);
        let json = serde_json::to_string(&unfinished).unwrap();
        assert_eq!(json, r#"{"type":"ws","id":2,"at":1.5,"from":"server","text":"hel","unfinished":true}"#);
        assert_eq!(serde_json::from_str::<Line>(&json).unwrap(), unfinished);
        // Lines written before `kind` and `unfinished`: the data says the kind.
        let old = r#"{"type":"ws","id":2,"at":1.5,"from":"server","base64":"AAE="}"#;
        let Line::Ws { kind, data, unfinished, .. } = serde_json::from_str::<Line>(old).unwrap() else { panic!() };
        assert_eq!((WsKind::of(kind, &data), unfinished), (WsKind::Binary, false));
        assert_eq!(WsKind::of(None, &Data::Text("a".into())), WsKind::Text);
        let bad = r#"{"type":"ws","id":2,"at":1.5,"from":"server","kind":"txt","text":"a"}"#;
        assert!(serde_json::from_str::<Line>(bad).unwrap_err().to_string().contains("unknown variant `txt`"));
    }
}
