//! The replay phase: in place of the upstream exchange, the request is matched against the cassette
//! and answered with the recording's head at its offset and a body that yields the recorded chunks
//! at theirs ([`ReplayStream`]). A miss, and an error-status fault, are answered the same way, as
//! one-chunk recordings, so every answer goes through the rest of the proxy like an upstream's.

use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http_body_util::BodyExt;
use tokio::time::{Instant, Sleep};

use super::{error_body, FaultAction, Lookup, OnMiss, Player, Recorded, RecordedChunk};
use crate::body::{ArrivesDecoded, BodyError, RecordedChunks};
use crate::cassette::record::CLIENT_LEFT;
use crate::codec::Encoding;

/// The most request body read for matching; a larger one is a miss answered with 413.
const MAX_MATCHED_BODY: usize = 16 * 1024 * 1024;

/// What the cassette gives a request.
pub(crate) enum Replayed {
    /// The answer: a recording's head (at its offset already) and its body.
    Answer(http::response::Parts, ReplayStream),
    /// No recording, and `onMiss` sends it on: the request body as read for matching.
    Forward(Bytes),
}

/// Answers `parts` (the request as it would go upstream, after `proxyReq`) from the player.
/// The request body, read whole up to `limit` bytes (more is an error). Read frame by frame rather
/// than through `Limited`, whose error conversion on a boxed body makes the future not `Send`.
async fn read_at_most(mut body: crate::body::RequestBody, limit: usize) -> Result<Bytes, String> {
    let mut bytes = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| e.to_string())?;
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > limit {
                return Err(format!("longer than {limit} bytes"));
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(bytes.freeze())
}

/// `arrived`: when the request reached the proxy, what recorded offsets count from.
pub(crate) async fn exchange(
    player: &Arc<Player>,
    parts: &http::request::Parts,
    body: crate::body::RequestBody,
    arrived: Instant,
) -> Replayed {
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let options = &player.options;
    // An error-status fault answers whatever the cassette holds.
    if let Some(FaultAction::Status { status, body }) =
        player.faults_for(&path_and_query).find(|f| matches!(f, FaultAction::Status { .. }))
    {
        let text = body.clone().unwrap_or_else(|| error_body(*status, parts.uri.path()));
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        if *status == 429 {
            headers.push(("retry-after".into(), "20".into()));
        }
        return answer(synthetic(*status, headers, text), arrived, options.speed, Vec::new(), None);
    }
    let bytes = match read_at_most(body, MAX_MATCHED_BODY).await {
        Ok(bytes) => bytes,
        Err(e) => {
            let text = format!("replay: the request body could not be read for matching: {e}");
            return answer(synthetic(413, text_headers(), text), arrived, 0.0, Vec::new(), None);
        }
    };
    let recorded = match player.lookup(parts.method.as_str(), &path_and_query, &bytes) {
        Lookup::Hit(recorded) => recorded,
        // 'proxy' and 'record' forward it (proxy.rs records it with the player's recorder).
        Lookup::Miss(_) if options.on_miss != OnMiss::Error => return Replayed::Forward(bytes),
        Lookup::Miss(why) => {
            let body = serde_json::json!({ "error": { "message": why, "type": "replay_miss", "code": "replay_miss" } });
            let headers = vec![
                ("content-type".to_string(), "application/json".to_string()),
                ("x-devproxy-replay".to_string(), "miss".to_string()),
            ];
            return answer(synthetic(404, headers, body.to_string()), arrived, 0.0, Vec::new(), None);
        }
    };
    let mut stalls = Vec::new();
    let mut cut = None;
    for fault in player.faults_for(&path_and_query) {
        match fault {
            FaultAction::Stall { before_chunk, ms } => stalls.push((*before_chunk, Duration::from_millis(*ms))),
            FaultAction::Cut { after_chunk } => cut = Some(cut.map_or(*after_chunk, |c: usize| c.min(*after_chunk))),
            FaultAction::Status { .. } => {}
        }
    }
    answer(recorded, arrived, options.speed, stalls, cut)
}

fn text_headers() -> Vec<(String, String)> {
    vec![("content-type".to_string(), "text/plain; charset=utf-8".to_string())]
}

/// A one-chunk recording, answered at once.
fn synthetic(status: u16, headers: Vec<(String, String)>, body: String) -> Arc<Recorded> {
    Arc::new(Recorded {
        line: 0,
        id: 0,
        method: String::new(),
        url: String::new(),
        body: Vec::new(),
        at: 0.0,
        status,
        headers,
        encoding: "identity".into(),
        chunks: vec![RecordedChunk { at: 0.0, bytes: body.into() }],
        end_at: 0.0,
        error: None,
        ws: Vec::new(),
        close: None,
    })
}

fn answer(
    recorded: Arc<Recorded>,
    arrived: Instant,
    speed: f64,
    stalls: Vec<(usize, Duration)>,
    cut: Option<usize>,
) -> Replayed {
    let mut builder = http::Response::builder().status(recorded.status);
    // A body whose client left before its end was recorded in part: its length is not what the
    // head says, so it goes chunked.
    let part = recorded.error.as_deref() == Some(CLIENT_LEFT);
    for (name, value) in
        recorded.headers.iter().filter(|(name, _)| !(part && name.eq_ignore_ascii_case("content-length")))
    {
        // Checked when the cassette was read.
        if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
            builder = builder.header(name, value);
        }
    }
    let encoding = Encoding::from_content_encoding(Some(&recorded.encoding)).filter(|e| *e != Encoding::Identity);
    builder = builder.extension(ArrivesDecoded(encoding));
    let (parts, ()) = builder.body(()).unwrap_or_default().into_parts();
    Replayed::Answer(parts, ReplayStream::new(recorded, arrived, speed, stalls, cut))
}

/// Waits for the recorded head's offset.
pub(crate) async fn head_time(stream: &ReplayStream) {
    tokio::time::sleep_until(stream.arrived + stream.scaled(stream.recorded.at)).await;
}

/// A recorded body played back: each chunk at `arrived + at / speed` (plus any stall before it),
/// each its own frame, then the recorded end or error; a cut fault fails it after its chunk.
pub(crate) struct ReplayStream {
    recorded: Arc<Recorded>,
    arrived: Instant,
    speed: f64,
    stalls: Vec<(usize, Duration)>,
    cut: Option<usize>,
    next: usize,
    timer: Option<Pin<Box<Sleep>>>,
    /// Pending was returned once since the last chunk: at speed 0 the chunks are all due, and a
    /// rewritten body hands out its output only when its source pauses, so the stream pauses
    /// between chunks to keep their boundaries.
    paused: bool,
    done: bool,
}

impl ReplayStream {
    fn new(
        recorded: Arc<Recorded>,
        arrived: Instant,
        speed: f64,
        stalls: Vec<(usize, Duration)>,
        cut: Option<usize>,
    ) -> ReplayStream {
        ReplayStream { recorded, arrived, speed, stalls, cut, next: 0, timer: None, paused: false, done: false }
    }

    /// When an offset is due, counting the stalls before chunk `index`.
    fn due(&self, at_ms: f64, index: usize) -> Instant {
        let stalled: Duration = self.stalls.iter().filter(|(before, _)| *before <= index).map(|(_, d)| *d).sum();
        self.arrived + self.scaled(at_ms) + stalled
    }

    /// A recorded offset at this speed (0: none).
    fn scaled(&self, at_ms: f64) -> Duration {
        if self.speed == 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(at_ms.max(0.0) / self.speed / 1000.0)
        }
    }
}

impl RecordedChunks for ReplayStream {
    /// The next chunk at its time.
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, BodyError>>> {
        if self.done {
            return Poll::Ready(None);
        }
        if let Some(after) = self.cut.filter(|after| self.next > *after) {
            // Pause once first, so that hyper writes out the chunks before the cut (on an error it
            // drops the connection with what it still buffers).
            if !self.paused {
                self.paused = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            self.done = true;
            return Poll::Ready(Some(Err(format!("replay fault: the body is cut after chunk {after}").into())));
        }
        let (at, index) = match self.recorded.chunks.get(self.next) {
            Some(chunk) => (chunk.at, self.next),
            None => (self.recorded.end_at, self.next),
        };
        let due = self.due(at, index);
        if due > Instant::now() {
            let timer = self.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
            timer.as_mut().reset(due);
            if timer.as_mut().poll(cx).is_pending() {
                self.paused = true;
                return Poll::Pending;
            }
        } else if self.next > 0 && !self.paused {
            self.paused = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let Some(chunk) = self.recorded.chunks.get(self.next) else {
            // The end as recorded. Where the client had left, that is all that is known: the body
            // ends there, cleanly (the upstream did not fail). A recorded failure fails the body,
            // after one pause, so that hyper writes out the head and the chunks first (on an error
            // it drops the connection with what it still buffers).
            let failure = self.recorded.error.as_deref().filter(|e| *e != CLIENT_LEFT);
            if failure.is_some() && !self.paused {
                self.paused = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            self.done = true;
            return Poll::Ready(failure.map(|e| Err(format!("replayed upstream body failed: {e}").into())));
        };
        self.paused = false;
        self.next += 1;
        Poll::Ready(Some(Ok(chunk.bytes.clone())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(error: Option<&str>) -> Arc<Recorded> {
        let chunk = |at: f64, text: &'static str| RecordedChunk { at, bytes: Bytes::from_static(text.as_bytes()) };
        Arc::new(Recorded {
            chunks: vec![chunk(0.0, "a"), chunk(10.0, "b"), chunk(20.0, "c")],
            end_at: 21.0,
            error: error.map(str::to_string),
            ..(*synthetic(200, Vec::new(), String::new())).clone()
        })
    }

    /// The chunks, and the error that ended the stream if one did.
    async fn drain(mut stream: ReplayStream) -> (Vec<Bytes>, Option<String>) {
        let mut chunks = Vec::new();
        loop {
            match std::future::poll_fn(|cx| stream.poll_chunk(cx)).await {
                Some(Ok(chunk)) => chunks.push(chunk),
                Some(Err(e)) => return (chunks, Some(e.to_string())),
                None => return (chunks, None),
            }
        }
    }

    #[tokio::test]
    async fn chunks_one_by_one_then_the_end_the_error_or_the_cut() {
        let (chunks, error) = drain(ReplayStream::new(recorded(None), Instant::now(), 0.0, Vec::new(), None)).await;
        assert_eq!((chunks, error), (vec![Bytes::from("a"), Bytes::from("b"), Bytes::from("c")], None));
        let (chunks, error) =
            drain(ReplayStream::new(recorded(Some("reset")), Instant::now(), 0.0, Vec::new(), None)).await;
        assert_eq!(chunks.len(), 3);
        assert_eq!(error.as_deref(), Some("replayed upstream body failed: reset"));
        let (chunks, error) = drain(ReplayStream::new(recorded(None), Instant::now(), 0.0, Vec::new(), Some(1))).await;
        assert_eq!(chunks, vec![Bytes::from("a"), Bytes::from("b")]);
        assert_eq!(error.as_deref(), Some("replay fault: the body is cut after chunk 1"));
        let (chunks, error) =
            drain(ReplayStream::new(recorded(Some(CLIENT_LEFT)), Instant::now(), 0.0, Vec::new(), None)).await;
        assert_eq!((chunks.len(), error), (3, None), "a client that left ended nothing the upstream sent: a clean end");
    }

    #[test]
    fn a_body_recorded_in_part_loses_its_length() {
        let mut part = (*recorded(Some(CLIENT_LEFT))).clone();
        part.headers = vec![("content-length".into(), "99".into()), ("retry-after-ms".into(), "10".into())];
        let Replayed::Answer(head, _) = answer(Arc::new(part), Instant::now(), 0.0, Vec::new(), None) else { panic!() };
        assert_eq!(head.headers.get("content-length"), None);
        assert_eq!(head.headers["retry-after-ms"], "10");
    }

    #[tokio::test]
    async fn nothing_comes_before_its_time_and_a_stall_moves_what_follows() {
        let start = Instant::now();
        let stalls = vec![(1, Duration::from_millis(30))];
        let mut stream = ReplayStream::new(recorded(None), start, 1.0, stalls, None);
        let mut times = Vec::new();
        while let Some(Ok(_)) = std::future::poll_fn(|cx| stream.poll_chunk(cx)).await {
            times.push(start.elapsed());
        }
        let ms = |n| Duration::from_millis(n);
        assert!(times[1] >= ms(40) && times[2] >= ms(50), "{times:?}");
    }
}
