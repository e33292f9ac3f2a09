//! WebSocket replay: an upgrade that matches a recorded one (status 101) is answered by the proxy
//! itself, then the recorded messages are played: the server's at their offsets, the client's
//! waited for and compared in order (a client that is late moves what follows by as much; one that
//! sends something else gets a close frame 1008 saying what differed).
//!
//! The framing (RFC 6455, `ws_frames.rs`, shared with recording) is the little a server needs:
//! masked client frames in, fragmented messages joined, ping answered, close returned; unmasked
//! frames out.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{Lookup, OnMiss, Player, Recorded};
use crate::body::ProxyBody;
use crate::cassette::ws_frames::{self, Event, Parser, MAX_MESSAGE};

/// What replay does with an upgrade.
pub(crate) enum WsReplay {
    /// Answered from the cassette.
    Answer(Box<Response<ProxyBody>>),
    /// A miss with `onMiss: 'record'`: to the target, recorded by the player's recorder.
    Record,
    /// To the target (`onMiss: 'proxy'`, or a matching recording that is not a WebSocket).
    Forward,
}

/// Answers an upgrade from the cassette, or says it goes to the target.
pub(crate) fn answer(player: &Arc<Player>, req: &mut Request<Incoming>) -> WsReplay {
    let arrived = Instant::now();
    let path_and_query = req.uri().path_and_query().map_or("/", |p| p.as_str()).to_string();
    let recorded = match player.lookup("GET", &path_and_query, b"") {
        Lookup::Hit(recorded) if recorded.status == 101 => recorded,
        Lookup::Hit(_) => return WsReplay::Forward,
        Lookup::Miss(_) if player.options.on_miss == OnMiss::Record => return WsReplay::Record,
        Lookup::Miss(_) if player.options.on_miss != OnMiss::Error => return WsReplay::Forward,
        Lookup::Miss(why) => {
            let body = serde_json::json!({ "error": { "message": why, "type": "replay_miss", "code": "replay_miss" } });
            let mut response = Response::new(ProxyBody::full(body.to_string()));
            *response.status_mut() = StatusCode::NOT_FOUND;
            response
                .headers_mut()
                .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
            response.headers_mut().insert("x-devproxy-replay", http::HeaderValue::from_static("miss"));
            return WsReplay::Answer(Box::new(response));
        }
    };
    let Some(key) = req.headers().get("sec-websocket-key").map(|k| k.as_bytes().to_vec()) else {
        let mut response = Response::new(ProxyBody::full("replay: a WebSocket upgrade without Sec-WebSocket-Key"));
        *response.status_mut() = StatusCode::BAD_REQUEST;
        return WsReplay::Answer(Box::new(response));
    };
    let mut response = Response::new(ProxyBody::Full(None));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    for (name, value) in &recorded.headers {
        let skip = ["connection", "upgrade", "sec-websocket-accept", "sec-websocket-extensions"];
        if skip.iter().any(|s| name.eq_ignore_ascii_case(s)) {
            continue;
        }
        if let (Ok(name), Ok(value)) =
            (http::HeaderName::from_bytes(name.as_bytes()), http::HeaderValue::from_str(value))
        {
            response.headers_mut().append(name, value);
        }
    }
    let headers = response.headers_mut();
    headers.insert(http::header::CONNECTION, http::HeaderValue::from_static("Upgrade"));
    headers.insert(http::header::UPGRADE, http::HeaderValue::from_static("websocket"));
    if let Ok(accept) = http::HeaderValue::from_str(&accept_key(&key)) {
        headers.insert("sec-websocket-accept", accept);
    }
    let upgrade = hyper::upgrade::on(req);
    let speed = player.options.speed;
    tokio::spawn(async move {
        if let Ok(upgraded) = upgrade.await {
            play(TokioIo::new(upgraded), recorded, arrived, speed).await;
        }
    });
    WsReplay::Answer(Box::new(response))
}

/// RFC 6455's `Sec-WebSocket-Accept` for a client's key.
fn accept_key(key: &[u8]) -> String {
    let mut input = key.to_vec();
    input.extend_from_slice(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &input);
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// What the reader task hands over.
enum FromClient {
    Message {
        text: bool,
        data: Vec<u8>,
    },
    Ping(Vec<u8>),
    /// The client is done: a close frame (answered with a close echoing its code, RFC 6455 5.5.1), a
    /// message over the cap (1009) or broken framing (1002); `answer: None` when the stream just ended.
    Closed {
        answer: Option<u16>,
    },
}

/// Whether a close frame may carry `code` (1005, 1006 and 1015 are for reporting only).
fn sendable(code: &u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

fn scaled(speed: f64, at_ms: f64) -> Duration {
    if speed == 0.0 {
        Duration::ZERO
    } else {
        Duration::from_secs_f64(at_ms.max(0.0) / speed / 1000.0)
    }
}

async fn play<S: AsyncRead + AsyncWrite + Send + 'static>(
    io: S,
    recorded: Arc<Recorded>,
    arrived: Instant,
    speed: f64,
) {
    let (mut reader, mut writer) = tokio::io::split(io);
    let (tx, mut rx) = mpsc::channel(64);
    let reading = tokio::spawn(async move { read_messages(&mut reader, tx).await });
    let mut queued: VecDeque<(bool, Vec<u8>)> = VecDeque::new();
    // How much later than recorded the client's messages came: what follows them moves as much.
    let mut shift = Duration::ZERO;
    let mut client_count = 0;
    let result: Result<(), (u16, String)> = async {
        for message in &recorded.ws {
            let due = arrived + scaled(speed, message.at) + shift;
            // The client's reader never hands over a message without its last fragment.
            if message.from_client && message.unfinished {
                continue;
            }
            if message.from_client {
                client_count += 1;
                let (text, data) = match queued.pop_front() {
                    Some(next) => next,
                    None => loop {
                        match rx.recv().await {
                            Some(FromClient::Message { text, data }) => break (text, data),
                            Some(FromClient::Ping(payload)) => send(&mut writer, ws_frames::PONG, &payload).await.map_err(gone)?,
                            Some(FromClient::Closed { answer }) => return Err((answer.unwrap_or(0), String::new())),
                            None => return Err((0, String::new())),
                        }
                    },
                };
                if data != message.data[..] || text != message.text {
                    let show = |d: &[u8]| String::from_utf8_lossy(&d[..d.len().min(30)]).into_owned();
                    return Err((
                        1008,
                        format!(
                            "replay: client message {client_count} differs: recorded '{}', got '{}'",
                            show(&message.data),
                            show(&data)
                        ),
                    ));
                }
                shift += Instant::now().saturating_duration_since(due);
                continue;
            }
            loop {
                tokio::select! {
                    () = tokio::time::sleep_until(due) => break,
                    incoming = rx.recv() => match incoming {
                        Some(FromClient::Message { text, data }) => queued.push_back((text, data)),
                        Some(FromClient::Ping(payload)) => send(&mut writer, ws_frames::PONG, &payload).await.map_err(gone)?,
                        Some(FromClient::Closed { answer }) => return Err((answer.unwrap_or(0), String::new())),
                        None => return Err((0, String::new())),
                    },
                }
            }
            let opcode = if message.text { 0x1 } else { 0x2 };
            send_frame(&mut writer, !message.unfinished, opcode, &message.data).await.map_err(gone)?;
        }
        tokio::time::sleep_until(arrived + scaled(speed, recorded.end_at) + shift).await;
        Err((recorded.close.filter(sendable).unwrap_or(1000), String::new()))
    }
    .await;
    if let Err((code, reason)) = result {
        if code != 0 {
            let mut payload = code.to_be_bytes().to_vec();
            // A control frame's payload is at most 125 bytes.
            let mut reason = reason;
            while reason.len() > 123 {
                reason.pop();
            }
            payload.extend_from_slice(reason.as_bytes());
            let _ = send(&mut writer, ws_frames::CLOSE, &payload).await;
            // Wait a little for the client's close, then drop the connection.
            let _ = tokio::time::timeout(Duration::from_secs(2), async {
                while let Some(incoming) = rx.recv().await {
                    if matches!(incoming, FromClient::Closed { .. }) {
                        break;
                    }
                }
            })
            .await;
        }
    }
    let _ = writer.shutdown().await;
    reading.abort();
}

fn gone(_: std::io::Error) -> (u16, String) {
    (0, String::new())
}

async fn send<W: AsyncWrite + Unpin>(writer: &mut W, opcode: u8, payload: &[u8]) -> std::io::Result<()> {
    send_frame(writer, true, opcode, payload).await
}

async fn send_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    fin: bool,
    opcode: u8,
    payload: &[u8],
) -> std::io::Result<()> {
    writer.write_all(&ws_frames::encode(fin, opcode, None, payload)).await?;
    writer.flush().await
}

/// Reads the client's frames and hands over its messages, pings and close, until it closes.
async fn read_messages<R: AsyncRead + Unpin>(reader: &mut R, tx: mpsc::Sender<FromClient>) {
    let mut parser = Parser::new(MAX_MESSAGE);
    let mut buf = vec![0u8; 16 * 1024];
    let mut events = Vec::new();
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) | Err(_) => 0,
            Ok(n) => n,
        };
        if n == 0 {
            let _ = tx.send(FromClient::Closed { answer: None }).await;
            return;
        }
        parser.push(&buf[..n], &mut events);
        for event in events.drain(..) {
            let incoming = match event {
                Event::Message { text, data } => FromClient::Message { text, data },
                Event::Ping(payload) => FromClient::Ping(payload),
                Event::Pong(_) => continue,
                Event::Close { code, .. } => FromClient::Closed { answer: Some(code.filter(sendable).unwrap_or(1000)) },
                Event::TooLarge { .. } => FromClient::Closed { answer: Some(1009) },
                Event::Invalid(_) => FromClient::Closed { answer: Some(1002) },
            };
            let closed = matches!(incoming, FromClient::Closed { .. });
            if tx.send(incoming).await.is_err() || closed {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::time::{timeout, Instant};

    use crate::cassette::ws_frames::{encode, CLOSE};

    /// A WebSocket exchange (`lines` after its 101) replayed at speed 1 to a loopback client: the
    /// client's end, when the exchange arrived, and the replay.
    async fn replaying(lines: &[&str]) -> (TcpStream, Instant, tokio::task::JoinHandle<()>) {
        let head = [
            r#"{"type":"cassette","version":1,"createdAt":"2026-11-30T16:00:00Z"}"#,
            r#"{"type":"request","id":1,"method":"GET","url":"/ws","headers":[]}"#,
            r#"{"type":"response","id":1,"at":1,"status":101,"headers":[],"encoding":"identity"}"#,
        ];
        let text = head.iter().chain(lines).copied().collect::<Vec<_>>().join("\n");
        let recorded = super::super::load::read(text.as_bytes(), "c.jsonl").unwrap().remove(0);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (client, (server_end, _)) = tokio::try_join!(TcpStream::connect(addr), listener.accept()).unwrap();
        let arrived = Instant::now();
        (client, arrived, tokio::spawn(super::play(server_end, Arc::new(recorded), arrived, 1.0)))
    }

    /// A text message that is not UTF-8 goes as a text frame, an old line's base64 (no `kind`) as
    /// binary, a server message left unfinished by a close as one frame without FIN, then the
    /// close at its offset; the client's unfinished message is not waited for.
    #[tokio::test]
    async fn each_frame_with_its_recorded_opcode_an_unfinished_one_without_fin_then_the_close_at_its_offset() {
        let (mut client, arrived, playing) = replaying(&[
            r#"{"type":"ws","id":1,"at":2,"from":"server","base64":"AAE="}"#,
            r#"{"type":"ws","id":1,"at":2,"from":"server","kind":"text","base64":"//5h"}"#,
            r#"{"type":"ws","id":1,"at":3,"from":"server","text":"hel","unfinished":true}"#,
            r#"{"type":"ws","id":1,"at":3.5,"from":"client","base64":"AQI=","unfinished":true}"#,
            r#"{"type":"end","id":1,"at":60,"close":1001}"#,
        ])
        .await;
        let expected = [
            encode(true, 0x2, None, &[0, 1]),
            encode(true, 0x1, None, &[0xFF, 0xFE, b'a']),
            encode(false, 0x1, None, b"hel"),
            encode(true, CLOSE, None, &1001u16.to_be_bytes()),
        ]
        .concat();
        let mut got = vec![0; expected.len()];
        timeout(Duration::from_secs(10), client.read_exact(&mut got))
            .await
            .expect("every frame and the close (the client's unfinished message is not waited for)")
            .unwrap();
        let closed_at = arrived.elapsed();
        assert_eq!(got, expected);
        assert!(closed_at >= Duration::from_millis(60), "the close at its recorded offset, not before: {closed_at:?}");
        // The client answers the close: replay ends the connection, sending nothing more.
        client.write_all(&encode(true, CLOSE, Some([1, 2, 3, 4]), &1001u16.to_be_bytes())).await.unwrap();
        let mut rest = Vec::new();
        timeout(Duration::from_secs(10), client.read_to_end(&mut rest)).await.expect("the connection ends").unwrap();
        assert_eq!(rest, b"");
        playing.await.unwrap();
    }

    /// A client that closes while the replay still has messages to send gets a close echoing its
    /// code, and nothing after it.
    #[tokio::test]
    async fn a_client_that_closes_early_gets_its_close_echoed() {
        let (mut client, _, playing) = replaying(&[
            r#"{"type":"ws","id":1,"at":2,"from":"server","text":"first"}"#,
            r#"{"type":"ws","id":1,"at":60000,"from":"server","text":"a minute later"}"#,
            r#"{"type":"end","id":1,"at":60001,"close":1000}"#,
        ])
        .await;
        let first = encode(true, 0x1, None, b"first");
        let mut got = vec![0; first.len()];
        timeout(Duration::from_secs(10), client.read_exact(&mut got)).await.expect("the first message").unwrap();
        assert_eq!(got, first);
        client.write_all(&encode(true, CLOSE, Some([9, 8, 7, 6]), &4001u16.to_be_bytes())).await.unwrap();
        let mut rest = Vec::new();
        timeout(Duration::from_secs(10), client.read_to_end(&mut rest))
            .await
            .expect("the replay answers and ends the connection, not after a minute")
            .unwrap();
        assert_eq!(
            rest,
            encode(true, CLOSE, None, &4001u16.to_be_bytes()),
            "the client's close code echoed, nothing else"
        );
        playing.await.unwrap();
    }

    #[test]
    fn accept_key_is_rfc_6455s() {
        assert_eq!(super::accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }
}
