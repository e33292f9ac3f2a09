//! A recorded WebSocket's lines: each read of either side goes through that side's frame parser;
//! the messages it completes become `ws` lines (redacted and scanned as body pieces are), the
//! first close frame the exchange's end, and a message left between two fragments an `unfinished`
//! line.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use super::{redacted, Open};
use crate::cassette::format::{Data, Line, WsKind};
use crate::cassette::redact::Redaction;
use crate::cassette::ws_frames::{Event, Parser, MAX_MESSAGE};

/// A recorded WebSocket: one parser per side, and what its lines need.
pub(super) struct WsOpen {
    client: Parser,
    server: Parser,
    /// Messages so far from the server and from the client (naming one in a refusal).
    count: [u64; 2],
    /// The first close frame's time and code.
    close: Option<(f64, Option<u16>)>,
    events: Vec<Event>,
}

impl WsOpen {
    pub(super) fn new() -> Box<WsOpen> {
        let (client, server) = (Parser::new(MAX_MESSAGE), Parser::new(MAX_MESSAGE));
        Box::new(WsOpen { client, server, count: [0; 2], close: None, events: Vec::new() })
    }

    /// The first close frame's time and code.
    pub(super) fn close(&self) -> Option<(f64, Option<u16>)> {
        self.close
    }

    /// The frame parser of one side.
    fn parser(&mut self, from_client: bool) -> &mut Parser {
        if from_client {
            &mut self.client
        } else {
            &mut self.server
        }
    }
}

/// Parses one read of one side of a WebSocket and spools the messages it completes (redacted and
/// scanned as body pieces are); `Some(reason)` when its recording stops here (a message over
/// [`MAX_MESSAGE`], or bytes that are not frames).
pub(super) fn ws_lines(
    open: &mut Open,
    redact: &Redaction,
    id: u64,
    at: f64,
    from_client: bool,
    bytes: &[u8],
) -> std::io::Result<Option<String>> {
    let Open { ws: Some(ws), refused: None, .. } = open else { return Ok(None) };
    let mut events = std::mem::take(&mut ws.events);
    ws.parser(from_client).push(bytes, &mut events);
    for event in events.drain(..) {
        let stop = match event {
            Event::Close { code, .. } => {
                let Some(ws) = open.ws.as_mut() else { return Ok(None) };
                ws.close.get_or_insert((at, code));
                // Its sender sends no more data after its close (RFC 6455 5.5.1): a message it
                // left between two fragments stays unfinished.
                match ws.parser(from_client).unfinished() {
                    Some(message) => ws_event(open, redact, id, at, from_client, message, true)?,
                    None => None,
                }
            }
            event => ws_event(open, redact, id, at, from_client, event, false)?,
        };
        if stop.is_some() || open.refused.is_some() {
            return Ok(stop);
        }
    }
    if let Some(ws) = open.ws.as_mut() {
        ws.events = events;
    }
    Ok(None)
}

/// At the tunnel's end: the messages either side left between two fragments, as `unfinished`.
pub(super) fn ws_end(open: &mut Open, redact: &Redaction, id: u64, at: f64) -> std::io::Result<Option<String>> {
    for from_client in [false, true] {
        let Open { ws: Some(ws), refused: None, .. } = open else { return Ok(None) };
        let Some(message) = ws.parser(from_client).unfinished() else { continue };
        if let Some(stop) = ws_event(open, redact, id, at, from_client, message, true)? {
            return Ok(Some(stop));
        }
    }
    Ok(None)
}

/// One parsed event of one side (not a close) into the exchange's lines; `Some(reason)` when the
/// recording stops there. A message holding a key refuses the exchange (`open.refused`).
fn ws_event(
    open: &mut Open,
    redact: &Redaction,
    id: u64,
    at: f64,
    from_client: bool,
    event: Event,
    unfinished: bool,
) -> std::io::Result<Option<String>> {
    let Open { ws: Some(ws), refused: None, spool, .. } = open else { return Ok(None) };
    let side = if from_client { "client" } else { "server" };
    let count = &mut ws.count[usize::from(from_client)];
    match event {
        Event::Message { text, data } => {
            *count += 1;
            let what = format!("{side} message {count}");
            let piece = match redacted(&data, false, redact, &what) {
                Ok(piece) => piece,
                Err(reason) => {
                    open.refused = Some(reason);
                    spool.clear();
                    return Ok(None);
                }
            };
            // Binary as base64 even when it is UTF-8, and text that is not UTF-8 says it is text:
            // replay sends each with its opcode.
            let (kind, data) = if !text {
                (None, Data::Base64(STANDARD.encode(&piece)))
            } else {
                match Data::of(&piece) {
                    Data::Base64(b64) => (Some(WsKind::Text), Data::Base64(b64)),
                    utf8 => (None, utf8),
                }
            };
            spool.push(&Line::Ws { id, at, from: side.to_string(), kind, data, unfinished })?;
            Ok(None)
        }
        Event::TooLarge { len, .. } => Ok(Some(format!(
            "{side} message {} is {len} bytes, over the {} MiB a recording keeps: the rest of this WebSocket is not recorded",
            *count + 1,
            MAX_MESSAGE >> 20
        ))),
        Event::Invalid(reason) => {
            Ok(Some(format!("the {side} sent {reason}: the rest of this WebSocket is not recorded")))
        }
        Event::Ping(_) | Event::Pong(_) | Event::Close { .. } => Ok(None),
    }
}
