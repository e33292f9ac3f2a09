//! WebSocket replay: an upgrade that matches a recorded one (status 101) is answered by the proxy
//! itself, then the recorded messages are played: the server's at their offsets, the client's
//! waited for and compared in order (a client that is late moves what follows by as much; one that
//! sends something else gets a close frame 1008 saying what differed).
//!
//! The framing (RFC 6455) is the little a server needs: masked client frames in, fragmented messages
//! joined, ping answered, close returned; unmasked frames out.

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

/// Largest client message read.
const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// Answers an upgrade from the cassette; `None` when it is to go to the target (`onMiss: 'proxy'`
/// or `'record'`, whose recorder does not record WebSocket messages yet; or a matching recording
/// that is not a WebSocket).
pub(crate) fn answer(player: &Arc<Player>, req: &mut Request<Incoming>) -> Option<Response<ProxyBody>> {
    let arrived = Instant::now();
    let path_and_query = req.uri().path_and_query().map_or("/", |p| p.as_str()).to_string();
    let recorded = match player.lookup("GET", &path_and_query, b"") {
        Lookup::Hit(recorded) if recorded.status == 101 => recorded,
        Lookup::Hit(_) => return None,
        Lookup::Miss(_) if player.options.on_miss != OnMiss::Error => return None,
        Lookup::Miss(why) => {
            let body = serde_json::json!({ "error": { "message": why, "type": "replay_miss", "code": "replay_miss" } });
            let mut response = Response::new(ProxyBody::full(body.to_string()));
            *response.status_mut() = StatusCode::NOT_FOUND;
            response
                .headers_mut()
                .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
            response.headers_mut().insert("x-devproxy-replay", http::HeaderValue::from_static("miss"));
            return Some(response);
        }
    };
    let Some(key) = req.headers().get("sec-websocket-key").map(|k| k.as_bytes().to_vec()) else {
        let mut response = Response::new(ProxyBody::full("replay: a WebSocket upgrade without Sec-WebSocket-Key"));
        *response.status_mut() = StatusCode::BAD_REQUEST;
        return Some(response);
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
    Some(response)
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
    /// A close frame, the end of the stream, or a broken frame.
    Closed,
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
    let reading = tokio::spawn(async move {
        loop {
            let incoming = read_message(&mut reader).await;
            let closed = matches!(incoming, FromClient::Closed);
            if tx.send(incoming).await.is_err() || closed {
                return;
            }
        }
    });
    let mut queued: VecDeque<(bool, Vec<u8>)> = VecDeque::new();
    // How much later than recorded the client's messages came: what follows them moves as much.
    let mut shift = Duration::ZERO;
    let mut client_count = 0;
    let result: Result<(), (u16, String)> = async {
        for message in &recorded.ws {
            let due = arrived + scaled(speed, message.at) + shift;
            if message.from_client {
                client_count += 1;
                let (text, data) = match queued.pop_front() {
                    Some(next) => next,
                    None => loop {
                        match rx.recv().await {
                            Some(FromClient::Message { text, data }) => break (text, data),
                            Some(FromClient::Ping(payload)) => send(&mut writer, 0xA, &payload).await.map_err(gone)?,
                            Some(FromClient::Closed) | None => return Err((0, String::new())),
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
                        Some(FromClient::Ping(payload)) => send(&mut writer, 0xA, &payload).await.map_err(gone)?,
                        Some(FromClient::Closed) | None => return Err((0, String::new())),
                    },
                }
            }
            send(&mut writer, if message.text { 0x1 } else { 0x2 }, &message.data).await.map_err(gone)?;
        }
        tokio::time::sleep_until(arrived + scaled(speed, recorded.end_at) + shift).await;
        Err((1000, String::new()))
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
            let _ = send(&mut writer, 0x8, &payload).await;
            // Wait a little for the client's close, then drop the connection.
            let _ = tokio::time::timeout(Duration::from_secs(2), async {
                while let Some(incoming) = rx.recv().await {
                    if matches!(incoming, FromClient::Closed) {
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
    let mut frame = Vec::with_capacity(payload.len() + 10);
    frame.push(0x80 | opcode);
    match payload.len() {
        len if len < 126 => frame.push(len as u8),
        len if len <= 0xFFFF => {
            frame.push(126);
            frame.extend_from_slice(&(len as u16).to_be_bytes());
        }
        len => {
            frame.push(127);
            frame.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(payload);
    writer.write_all(&frame).await?;
    writer.flush().await
}

/// The next message (fragments joined), ping or close from the client.
async fn read_message<R: AsyncRead + Unpin>(reader: &mut R) -> FromClient {
    let mut message: Option<(bool, Vec<u8>)> = None;
    loop {
        let Ok((fin, opcode, payload)) = read_frame(reader).await else { return FromClient::Closed };
        match opcode {
            0x8 => return FromClient::Closed,
            0x9 => return FromClient::Ping(payload),
            0xA => continue,
            0x1 | 0x2 => message = Some((opcode == 0x1, payload)),
            0x0 => match &mut message {
                Some((_, data)) if data.len() + payload.len() <= MAX_MESSAGE => data.extend_from_slice(&payload),
                _ => return FromClient::Closed,
            },
            _ => return FromClient::Closed,
        }
        if fin {
            if let Some((text, data)) = message.take() {
                return FromClient::Message { text, data };
            }
        }
    }
}

async fn read_frame<R: AsyncRead + Unpin>(reader: &mut R) -> std::io::Result<(bool, u8, Vec<u8>)> {
    let mut head = [0u8; 2];
    reader.read_exact(&mut head).await?;
    let (fin, opcode, masked) = (head[0] & 0x80 != 0, head[0] & 0x0F, head[1] & 0x80 != 0);
    let len = match head[1] & 0x7F {
        126 => u64::from(reader.read_u16().await?),
        127 => reader.read_u64().await?,
        len => u64::from(len),
    };
    if len > MAX_MESSAGE as u64 {
        return Err(std::io::Error::other("message too large"));
    }
    let mut mask = [0u8; 4];
    if masked {
        reader.read_exact(&mut mask).await?;
    }
    let mut payload = vec![0u8; len as usize];
    reader.read_exact(&mut payload).await?;
    if masked {
        payload.iter_mut().enumerate().for_each(|(i, b)| *b ^= mask[i % 4]);
    }
    Ok((fin, opcode, payload))
}

#[cfg(test)]
mod tests {
    #[test]
    fn accept_key_is_rfc_6455s() {
        assert_eq!(super::accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }
}
