//! Recording: the proxy tees each upstream exchange to a writer thread, which decodes the bodies,
//! redacts, scans for keys and appends the exchange's lines to the cassette.
//!
//! The request path only clones `Bytes` (reference counted) into a bounded channel; when it is full
//! the tee waits before reading the next upstream chunk (a slow disk slows the recording, never loses
//! a chunk) but never holds back a chunk already read: the client gets it at once. An exchange's lines
//! are kept (in memory up to [`SPOOL_MEMORY`], then in a spill file next to the cassette) until its end,
//! so that a refused exchange leaves nothing in the file; then they are appended whole.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::PollSender;

use super::format::{Line, VERSION};
use super::redact::Redaction;
use crate::body::{BodyError, UpstreamTee};
use crate::globs::UrlGlobs;
use crate::stats::Stats;
pub(crate) use writer::Learn;
use writer::{write_line, Writer};

mod body_line;
mod json_escape;
mod writer;

/// The writer's work on one body chunk, for `benches/record.rs` only (feature `bench-internals`,
/// which the crate's self dev-dependency turns on for benches and tests).
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench {
    /// Appends the `body` line of `bytes`, as the writer does.
    pub fn body_line(out: &mut Vec<u8>, id: u64, chunk: u64, at: f64, bytes: &[u8]) {
        super::body_line::push(out, id, chunk, at, bytes);
    }
}

/// Messages in flight between the proxy and the writer, each holding one chunk at most: what bounds
/// the memory a recording holds (a chunk of a fast download can be a few hundred KiB).
const CHANNEL: usize = 32;
/// Request body bytes kept in the cassette; a longer body is recorded as its length and CRC-32.
pub const REQUEST_BODY_LIMIT: usize = 1024 * 1024;
/// An exchange's lines kept in memory before they go to its spill file.
const SPOOL_MEMORY: usize = 1024 * 1024;
/// WebSocket bytes a tunnel may have handed over that the writer has not taken yet; past it the
/// rest of that WebSocket is not recorded (the tunnel never waits for the recording).
const WS_BACKLOG: usize = 32 * 1024 * 1024;

/// The `record` option, validated.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The cassette file.
    pub path: PathBuf,
    /// Only request paths matching these are recorded (`record.match`); `None`: all.
    pub matches: Option<UrlGlobs>,
    /// `record.redact`.
    pub redact: Redaction,
    /// Add to an existing cassette instead of starting a new one.
    pub append: bool,
}

/// What the writer says about the recording.
#[derive(Debug, Default)]
pub(crate) struct RecordStatus {
    /// Exchanges written.
    pub written: AtomicU64,
    /// Exchanges refused (a key-shaped string).
    pub refused: AtomicU64,
    /// Why the recording stopped, if a write failed.
    pub failed: Mutex<Option<String>>,
    /// Why the last refused exchange was refused.
    pub last_refusal: Mutex<Option<String>>,
}

/// Where a recording stands (`server.recording()`).
#[derive(Debug, Clone, Default)]
pub struct RecordingSnapshot {
    /// The cassette.
    pub path: String,
    /// Exchanges written.
    pub written: u64,
    /// Exchanges refused because a body held a key-shaped string.
    pub refused: u64,
    /// The last refusal's reason, naming the field.
    pub last_refusal: Option<String>,
    /// Set when a write failed: nothing more is recorded.
    pub error: Option<String>,
    /// The route prefix whose `record` this is; `None`: the server's.
    pub route: Option<String>,
}

/// A running recording: the writer thread and the way to it.
pub(crate) struct Recorder {
    tx: mpsc::Sender<Msg>,
    next_id: AtomicU64,
    matches: Option<UrlGlobs>,
    path: PathBuf,
    pub status: Arc<RecordStatus>,
}

enum Msg {
    Request {
        id: u64,
        method: String,
        url: String,
        headers: Vec<(String, String)>,
    },
    RequestBody {
        id: u64,
        bytes: Bytes,
    },
    Response {
        id: u64,
        at: f64,
        status: u16,
        headers: Vec<(String, String)>,
        encoding: String,
    },
    Body {
        id: u64,
        at: f64,
        bytes: Bytes,
    },
    /// Bytes of an upgraded exchange as one read of one side gave them (the writer parses frames).
    Ws {
        id: u64,
        at: f64,
        from_client: bool,
        bytes: Bytes,
    },
    End {
        id: u64,
        at: f64,
        error: Option<String>,
    },
}

impl Recorder {
    /// Opens (creates, or with `append` extends) the cassette and starts its writer thread. A
    /// symbolic link at `path` is refused, not followed: recording would truncate what it points to.
    pub(crate) fn start(options: RecordOptions, stats: Arc<Stats>) -> Result<Recorder, String> {
        Recorder::start_learning(options, stats, None)
    }

    /// As [`Recorder::start`]; `learn` is told of each exchange written, as its lines.
    pub(crate) fn start_learning(
        options: RecordOptions,
        stats: Arc<Stats>,
        learn: Option<Learn>,
    ) -> Result<Recorder, String> {
        let mut open = std::fs::OpenOptions::new();
        open.create(true).write(true).append(options.append).truncate(!options.append);
        let mut file = open_no_follow(&mut open, &options.path)
            .map_err(|e| format!("cannot open '{}' for writing: {e}", options.path.display()))?;
        let empty = file.metadata().map(|m| m.len() == 0).unwrap_or(true);
        if empty {
            let head = Line::Cassette { version: VERSION, created_at: now_rfc3339() };
            write_line(&mut file, &head).map_err(|e| format!("cannot write '{}': {e}", options.path.display()))?;
        }
        let (tx, rx) = mpsc::channel(CHANNEL);
        let status = Arc::new(RecordStatus::default());
        let writer = Writer {
            file,
            path: options.path.clone(),
            redact: options.redact,
            open: HashMap::new(),
            status: status.clone(),
            stats,
            learn,
            spare: Vec::new(),
        };
        std::thread::Builder::new()
            .name("devproxy-record".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| format!("cannot start the recording thread: {e}"))?;
        Ok(Recorder { tx, next_id: AtomicU64::new(1), matches: options.matches, path: options.path, status })
    }

    /// Numbers the next exchanges after `last`: appending to a cassette keeps its ids unique.
    pub(crate) fn ids_after(self, last: u64) -> Recorder {
        self.next_id.store(last + 1, Ordering::Relaxed);
        self
    }

    /// Where the recording stands.
    pub(crate) fn snapshot(&self) -> RecordingSnapshot {
        let lock = |m: &Mutex<Option<String>>| m.lock().unwrap_or_else(PoisonError::into_inner).clone();
        RecordingSnapshot {
            path: self.path.display().to_string(),
            written: self.status.written.load(Ordering::Relaxed),
            refused: self.status.refused.load(Ordering::Relaxed),
            last_refusal: lock(&self.status.last_refusal),
            error: lock(&self.status.failed),
            route: None,
        }
    }

    /// Whether a request path is recorded.
    pub(crate) fn wants(&self, path: &str) -> bool {
        self.status.failed.lock().unwrap_or_else(PoisonError::into_inner).is_none()
            && self.matches.as_ref().is_none_or(|m| m.matches(path))
    }

    /// Starts recording one exchange: its request as it goes upstream. `started`: the request's arrival.
    pub(crate) async fn request(
        &self,
        started: Instant,
        method: &http::Method,
        uri: &http::Uri,
        headers: &http::HeaderMap,
    ) -> Exchange {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let msg = Msg::Request {
            id,
            method: method.to_string(),
            url: uri.path_and_query().map_or("/", |p| p.as_str()).to_string(),
            headers: crate::header_pairs::header_pairs(headers),
        };
        let _ = self.tx.send(msg).await;
        Exchange { id, started, tx: self.tx.clone(), done: false }
    }
}

/// One exchange being recorded, between its request and its response head.
pub(crate) struct Exchange {
    id: u64,
    started: Instant,
    tx: mpsc::Sender<Msg>,
    /// Its response head or failure was sent (else dropping it ends the exchange).
    done: bool,
}

impl Exchange {
    /// The request body, teed.
    pub(crate) fn request_body<B>(&self, body: B) -> RequestTee<B> {
        RequestTee { inner: body, out: Outbox::new(self.tx.clone()), id: self.id }
    }

    /// The request body, already read whole (replay read it for matching).
    pub(crate) async fn request_bytes(&self, bytes: Bytes) {
        if !bytes.is_empty() {
            let _ = self.tx.send(Msg::RequestBody { id: self.id, bytes }).await;
        }
    }

    /// The response head as the upstream sent it; returns the tee for its body.
    pub(crate) async fn response(mut self, head: &http::response::Parts) -> BodyTee {
        self.done = true;
        let at = ms_since(self.started);
        let encoding =
            head.headers.get(http::header::CONTENT_ENCODING).and_then(|v| v.to_str().ok()).unwrap_or("identity");
        let headers = crate::header_pairs::header_pairs(&head.headers)
            .into_iter()
            .filter(|(name, _)| name != "content-encoding" && name != "content-length")
            .collect();
        let msg =
            Msg::Response { id: self.id, at, status: head.status.as_u16(), headers, encoding: encoding.to_string() };
        let _ = self.tx.send(msg).await;
        BodyTee { id: self.id, started: self.started, out: Outbox::new(self.tx.clone()), ended: false }
    }

    /// A WebSocket's 101 response head as the upstream sent it; returns the tap for its frames.
    pub(crate) async fn upgraded(mut self, head: &http::response::Parts) -> WsTap {
        self.done = true;
        let headers = crate::header_pairs::header_pairs(&head.headers);
        let msg = Msg::Response {
            id: self.id,
            at: ms_since(self.started),
            status: 101,
            headers,
            encoding: "identity".into(),
        };
        let _ = self.tx.send(msg).await;
        // The tunnel's copies wait here, never in the tunnel, for room in the writer's channel.
        let (queue, mut rx) = mpsc::unbounded_channel::<Msg>();
        let backlog = Arc::new(AtomicUsize::new(0));
        let (tx, taken) = (self.tx.clone(), backlog.clone());
        tokio::spawn(async move {
            while let Some(msg) = rx.recv().await {
                let len = if let Msg::Ws { bytes, .. } = &msg { bytes.len() } else { 0 };
                let _ = tx.send(msg).await;
                taken.fetch_sub(len, Ordering::Relaxed);
            }
        });
        WsTap { id: self.id, started: self.started, queue, backlog, stopped: AtomicBool::new(false) }
    }

    /// The exchange failed before a response head.
    pub(crate) async fn failed(mut self, error: String) {
        self.done = true;
        let _ = self.tx.send(Msg::End { id: self.id, at: ms_since(self.started), error: Some(error) }).await;
    }
}

impl Drop for Exchange {
    /// The request was dropped while it waited for the upstream (the client went away).
    fn drop(&mut self) {
        if !self.done {
            let error = Some("the client went away before the response head".to_string());
            let end = Msg::End { id: self.id, at: ms_since(self.started), error };
            Outbox::new(self.tx.clone()).flush_detached(Some(end));
        }
    }
}

/// A recorded WebSocket's tap: the tunnel hands it a copy of each read, both ways, in the order
/// they happen; the writer parses the frames. Dropping it ends the exchange.
pub(crate) struct WsTap {
    id: u64,
    started: Instant,
    queue: mpsc::UnboundedSender<Msg>,
    /// Bytes handed over and not yet in the writer's channel (bounded by [`WS_BACKLOG`]).
    backlog: Arc<AtomicUsize>,
    stopped: AtomicBool,
}

impl WsTap {
    /// One read of the client's (`from_client`) or the upstream's bytes, before they are passed on.
    pub(crate) fn observe(&self, from_client: bool, bytes: &[u8]) {
        if self.stopped.load(Ordering::Relaxed) {
            return;
        }
        let at = ms_since(self.started);
        if self.backlog.fetch_add(bytes.len(), Ordering::Relaxed) + bytes.len() > WS_BACKLOG {
            self.stopped.store(true, Ordering::Relaxed);
            let error = format!(
                "the cassette's writer fell {} MiB behind this WebSocket: the rest of it is not recorded",
                WS_BACKLOG >> 20
            );
            let _ = self.queue.send(Msg::End { id: self.id, at, error: Some(error) });
            return;
        }
        let _ = self.queue.send(Msg::Ws { id: self.id, at, from_client, bytes: Bytes::copy_from_slice(bytes) });
    }
}

impl Drop for WsTap {
    /// The tunnel ended (either side closed, or the server stopped).
    fn drop(&mut self) {
        if !self.stopped.load(Ordering::Relaxed) {
            let _ = self.queue.send(Msg::End { id: self.id, at: ms_since(self.started), error: None });
        }
    }
}

fn ms_since(started: Instant) -> f64 {
    (started.elapsed().as_secs_f64() * 1e6).round() / 1e3
}

/// One message waiting for room in the channel.
struct Outbox {
    tx: PollSender<Msg>,
    pending: Option<Msg>,
}

impl Outbox {
    fn new(tx: mpsc::Sender<Msg>) -> Outbox {
        Outbox { tx: PollSender::new(tx), pending: None }
    }

    /// Ready once the waiting message (if any) is in the channel.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(msg) = self.pending.take() else { return Poll::Ready(()) };
        match self.tx.poll_reserve(cx) {
            Poll::Ready(Ok(())) => {
                let _ = self.tx.send_item(msg);
                Poll::Ready(())
            }
            // The writer is gone (the server stopped): nothing more to record.
            Poll::Ready(Err(_)) => Poll::Ready(()),
            Poll::Pending => {
                self.pending = Some(msg);
                Poll::Pending
            }
        }
    }

    /// Queues a message and tries to send it (the caller's poll is woken when there is room).
    fn push(&mut self, msg: Msg, cx: &mut Context<'_>) {
        debug_assert!(self.pending.is_none());
        self.pending = Some(msg);
        let _ = self.poll_ready(cx);
    }

    /// Sends what is left, in order, without waiting: now if there is room, else from a task.
    fn flush_detached(&mut self, last: Option<Msg>) {
        let mut left: Vec<Msg> = self.pending.take().into_iter().chain(last).collect();
        let Some(tx) = self.tx.get_ref().cloned() else { return };
        while !left.is_empty() {
            match tx.try_send(left.remove(0)) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Closed(_)) => return,
                Err(mpsc::error::TrySendError::Full(msg)) => {
                    left.insert(0, msg);
                    if let Ok(handle) = tokio::runtime::Handle::try_current() {
                        handle.spawn(async move {
                            for msg in left {
                                let _ = tx.send(msg).await;
                            }
                        });
                    }
                    return;
                }
            }
        }
    }
}

/// The request body on its way upstream, with a copy of each chunk for the cassette.
pub(crate) struct RequestTee<B> {
    inner: B,
    out: Outbox,
    id: u64,
}

impl<B> http_body::Body for RequestTee<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        std::task::ready!(this.out.poll_ready(cx));
        let polled = std::pin::Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref().filter(|d| !d.is_empty()) {
                this.out.push(Msg::RequestBody { id: this.id, bytes: data.clone() }, cx);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl<B> Drop for RequestTee<B> {
    fn drop(&mut self) {
        self.out.flush_detached(None);
    }
}

/// How a recording ends when its client went away before the body's end and the rest of the upstream's
/// body could not be read on (see `crate::body::UpstreamBody`'s drop): the end the client caused, not
/// the upstream, which replay ends cleanly.
pub(crate) const CLIENT_LEFT: &str = "the client went away before the body's end";

/// The response body's tee: told of each chunk the proxy reads from the upstream, and of its end.
pub(crate) struct BodyTee {
    id: u64,
    started: Instant,
    out: Outbox,
    ended: bool,
}

impl UpstreamTee for BodyTee {
    /// Ready when the previous copy is in the channel: call before reading the next chunk.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.out.poll_ready(cx)
    }

    fn observe(&mut self, polled: &Poll<Option<Result<Bytes, BodyError>>>, cx: &mut Context<'_>) {
        if self.ended {
            return;
        }
        let at = ms_since(self.started);
        match polled {
            Poll::Ready(Some(Ok(bytes))) if !bytes.is_empty() => {
                self.out.push(Msg::Body { id: self.id, at, bytes: bytes.clone() }, cx)
            }
            Poll::Ready(Some(Err(e))) => {
                self.ended = true;
                self.out.flush_detached(Some(Msg::End { id: self.id, at, error: Some(e.to_string()) }));
            }
            Poll::Ready(None) => {
                self.ended = true;
                self.out.flush_detached(Some(Msg::End { id: self.id, at, error: None }));
            }
            _ => {}
        }
    }

    fn ended(&self) -> bool {
        self.ended
    }

    /// `complete` when the upstream had nothing more to send (a HEAD or 204 response nobody read),
    /// else the client went away before the end.
    fn dropped(&mut self, complete: bool) {
        if self.ended {
            return;
        }
        self.ended = true;
        let error = (!complete).then(|| CLIENT_LEFT.to_string());
        let end = Msg::End { id: self.id, at: ms_since(self.started), error };
        self.out.flush_detached(Some(end));
    }
}

impl Drop for BodyTee {
    /// Dropped before its body was made (a `proxyRes` hook failed): the exchange still ends.
    fn drop(&mut self) {
        self.dropped(false);
    }
}

/// Now as RFC 3339 (UTC, seconds).
fn now_rfc3339() -> String {
    rfc3339(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

/// `secs` after 1970 as RFC 3339 (UTC).
fn rfc3339(secs: u64) -> String {
    let (days, rest) = ((secs / 86400) as i64, secs % 86400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

/// Whether a path may hold a cassette: its directory exists.
pub fn check_path(path: &Path) -> Result<(), String> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => Err(format!("the directory '{}' does not exist", dir.display())),
        _ => Ok(()),
    }
}

/// Opens `path` with `options`, refusing a symbolic link in its last component (O_NOFOLLOW where
/// the OS has it; a check of the link itself elsewhere).
pub(crate) fn open_no_follow(
    options: &mut std::fs::OpenOptions,
    path: &std::path::Path,
) -> std::io::Result<std::fs::File> {
    let refused =
        || std::io::Error::other("it is a symbolic link; give the file's own path (the link is not followed)");
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
        options.open(path).map_err(|e| if e.raw_os_error() == Some(libc::ELOOP) { refused() } else { e })
    }
    #[cfg(not(unix))]
    {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(refused());
        }
        options.open(path)
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use super::writer::{sse_json, sse_pieces};
    use super::*;
    use crate::codec::Encoding;

    #[test]
    fn sse_bodies_split_after_each_event() {
        let pieces = sse_pieces(b"data: 1\n\ndata: 2\r\n\r\ndata: 3");
        assert_eq!(pieces, vec![&b"data: 1\n\n"[..], &b"data: 2\r\n\r\n"[..], &b"data: 3"[..]]);
        assert_eq!(sse_pieces(b"\n\n"), vec![&b"\n\n"[..]]);
        assert_eq!(sse_json(b"event: x\ndata: {\"a\":1}\n\n"), Some(serde_json::json!({"a":1})));
    }

    pub(super) fn writer(path: &Path, redact: Redaction) -> Writer {
        let mut file = File::create(path).unwrap();
        write_line(&mut file, &Line::Cassette { version: VERSION, created_at: now_rfc3339() }).unwrap();
        Writer {
            file,
            path: path.to_path_buf(),
            redact,
            open: HashMap::new(),
            status: Arc::new(RecordStatus::default()),
            stats: Arc::new(Stats::new(crate::config::LogLevel::Silent, "test")),
            learn: None,
            spare: Vec::new(),
        }
    }

    /// A fresh directory for a test's cassette, and the cassette's path in it.
    pub(super) fn scratch(name: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("devproxy-record-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.jsonl");
        (dir, path)
    }

    fn request(id: u64, body: &[u8]) -> Vec<Msg> {
        let headers = vec![("authorization".into(), "Bearer sk-secretsecretsecretsecret".into())];
        vec![
            Msg::Request { id, method: "POST".into(), url: "/v1/x?token=abc".into(), headers },
            Msg::RequestBody { id, bytes: Bytes::copy_from_slice(body) },
        ]
    }

    #[test]
    fn the_writer_decodes_splits_redacts_and_refuses() {
        let (dir, path) = scratch("unit");
        let mut w = writer(&path, Redaction::default());
        // Exchange 1: a gzip SSE stream in two chunks, the first holding two events.
        let sse = b"data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: [DONE]\n\n";
        let gz = crate::codec::encode_all(Encoding::Gzip, sse);
        let cut = gz.len() / 2;
        let head = vec![("content-type".to_string(), "text/event-stream".to_string())];
        let mut msgs = request(1, b"{\"stream\":true}");
        msgs.push(Msg::Response { id: 1, at: 1.0, status: 200, headers: head, encoding: "gzip".into() });
        msgs.push(Msg::Body { id: 1, at: 2.0, bytes: Bytes::copy_from_slice(&gz[..cut]) });
        msgs.push(Msg::Body { id: 1, at: 3.0, bytes: Bytes::copy_from_slice(&gz[cut..]) });
        msgs.push(Msg::End { id: 1, at: 4.0, error: None });
        // Exchange 2: refused for the key in its request body; its lines never reach the file.
        msgs.extend(request(2, b"{\"messages\":[{\"content\":\"sk-abc123defghijklmnopqrstuvwx\"}]}"));
        msgs.push(Msg::Response { id: 2, at: 1.0, status: 200, headers: vec![], encoding: "identity".into() });
        msgs.push(Msg::Body { id: 2, at: 2.0, bytes: Bytes::from_static(b"ok") });
        msgs.push(Msg::End { id: 2, at: 3.0, error: None });
        for msg in msgs {
            w.handle(msg).unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("secret") && !text.contains("abc123def"), "{text}");
        let cassette = super::super::read::read(&path).unwrap();
        assert_eq!(cassette.exchanges.len(), 1);
        let ex = &cassette.exchanges[0];
        assert_eq!(ex.url, "/v1/x?token=[redacted]");
        assert_eq!(ex.headers[0].1, "[redacted]");
        let joined: Vec<u8> = ex.response_body.clone();
        assert_eq!(joined, sse.to_vec(), "decoded, whole");
        assert!(ex.chunks.iter().all(|(c, _, _)| *c <= 1));
        assert!(ex.chunks.len() >= 3, "one line per event at least");
        assert_eq!(w.status.refused.load(Ordering::Relaxed), 1);
        let refusal = w.status.last_refusal.lock().unwrap().clone().unwrap();
        assert!(refusal.contains("`messages[0].content`") && refusal.contains("OpenAI key"), "{refusal}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_key_cut_across_two_chunks_refuses_the_exchange() {
        let (dir, path) = scratch("seam");
        let mut w = writer(&path, Redaction::default());
        let body = b"{\"note\":\"the key is sk-abc123defghijklmnopqrstuvwx, keep it\"}";
        let cut = body.iter().position(|&b| b == b'-').unwrap() + 6;
        w.handle(Msg::Request { id: 1, method: "GET".into(), url: "/k".into(), headers: vec![] }).unwrap();
        w.handle(Msg::Response { id: 1, at: 1.0, status: 200, headers: vec![], encoding: "identity".into() }).unwrap();
        w.handle(Msg::Body { id: 1, at: 2.0, bytes: Bytes::copy_from_slice(&body[..cut]) }).unwrap();
        w.handle(Msg::Body { id: 1, at: 3.0, bytes: Bytes::copy_from_slice(&body[cut..]) }).unwrap();
        w.handle(Msg::End { id: 1, at: 4.0, error: None }).unwrap();
        assert_eq!(w.status.refused.load(Ordering::Relaxed), 1);
        let refusal = w.status.last_refusal.lock().unwrap().clone().unwrap();
        assert!(refusal.contains("response body chunk 1") && refusal.contains("OpenAI key"), "{refusal}");
        assert!(!std::fs::read_to_string(&path).unwrap().contains("abc123"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_long_exchange_spills_and_is_written_whole() {
        let (dir, path) = scratch("spill");
        let mut w = writer(&path, Redaction::default());
        let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
        w.handle(Msg::Request { id: 1, method: "GET".into(), url: "/big".into(), headers: vec![] }).unwrap();
        w.handle(Msg::Response { id: 1, at: 1.0, status: 200, headers: vec![], encoding: "identity".into() }).unwrap();
        for i in 0..64 {
            w.handle(Msg::Body { id: 1, at: 2.0 + f64::from(i), bytes: chunk.clone() }).unwrap();
        }
        assert!(dir.join("c.1.part").exists(), "over 1 MiB, the lines went to the spill file");
        w.handle(Msg::End { id: 1, at: 99.0, error: None }).unwrap();
        assert!(!dir.join("c.1.part").exists());
        let ex = &super::super::read::read(&path).unwrap().exchanges[0];
        assert_eq!(ex.chunks.len(), 64);
        assert_eq!(ex.response_body.len(), 4 * 1024 * 1024);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_write_error_stops_the_recording_with_a_clear_error() {
        let file = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let status = Arc::new(RecordStatus::default());
        let w = Writer {
            file,
            path: PathBuf::from("/dev/full"),
            redact: Redaction::default(),
            open: HashMap::new(),
            status: status.clone(),
            stats: Arc::new(Stats::new(crate::config::LogLevel::Silent, "test")),
            learn: None,
            spare: Vec::new(),
        };
        let (tx, rx) = mpsc::channel(CHANNEL);
        let thread = std::thread::spawn(move || w.run(rx));
        for id in 1..=2 {
            let msgs = [
                Msg::Request { id, method: "GET".into(), url: "/".into(), headers: vec![] },
                Msg::Response { id, at: 1.0, status: 200, headers: vec![], encoding: "identity".into() },
                Msg::Body { id, at: 2.0, bytes: Bytes::from_static(b"hello") },
                Msg::End { id, at: 3.0, error: None },
            ];
            for msg in msgs {
                tx.blocking_send(msg).unwrap();
            }
        }
        drop(tx);
        thread.join().unwrap();
        let error = status.failed.lock().unwrap().clone().unwrap();
        assert!(
            error.contains("recording to /dev/full failed") && error.contains("nothing more is recorded"),
            "{error}"
        );
        assert_eq!(status.written.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn websocket_reads_become_one_line_per_message_and_an_end_with_the_close_code() {
        use crate::cassette::ws_frames::{encode, CLOSE, PING};
        let (dir, path) = scratch("ws");
        let mut w = writer(&path, Redaction::default());
        let mask = Some([1, 2, 3, 4]);
        let mut server = encode(false, 0x1, None, b"hel");
        server.extend(encode(true, PING, None, b"p"));
        server.extend(encode(true, 0x0, None, b"lo"));
        server.extend(encode(true, 0x2, None, b"utf8 but binary"));
        let mut client = encode(true, 0x1, mask, b"one");
        client.extend(encode(true, CLOSE, mask, &4001u16.to_be_bytes()));
        let ws = |at: f64, from_client: bool, bytes: &[u8]| Msg::Ws {
            id: 1,
            at,
            from_client,
            bytes: Bytes::copy_from_slice(bytes),
        };
        let head = vec![("upgrade".to_string(), "websocket".to_string())];
        w.handle(Msg::Request { id: 1, method: "GET".into(), url: "/ws".into(), headers: vec![] }).unwrap();
        w.handle(Msg::Response { id: 1, at: 1.0, status: 101, headers: head, encoding: "identity".into() }).unwrap();
        // Reads cut frames anywhere: a message's `at` is that of the read that completed it.
        w.handle(ws(2.0, false, &server[..4])).unwrap();
        w.handle(ws(3.0, true, &client[..5])).unwrap();
        w.handle(ws(4.0, false, &server[4..])).unwrap();
        w.handle(ws(5.0, true, &client[5..])).unwrap();
        w.handle(Msg::End { id: 1, at: 9.0, error: None }).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().skip(2).collect();
        assert_eq!(
            lines,
            [
                r#"{"type":"response","id":1,"at":1.0,"status":101,"headers":[["upgrade","websocket"]],"encoding":"identity"}"#,
                r#"{"type":"ws","id":1,"at":4.0,"from":"server","text":"hello"}"#,
                r#"{"type":"ws","id":1,"at":4.0,"from":"server","base64":"dXRmOCBidXQgYmluYXJ5"}"#,
                r#"{"type":"ws","id":1,"at":5.0,"from":"client","text":"one"}"#,
                r#"{"type":"end","id":1,"at":5.0,"close":4001}"#,
            ]
        );
        assert_eq!(super::super::read::read(&path).unwrap().exchanges[0].close, Some(4001));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_websocket_message_over_the_cap_ends_its_recording_with_the_reason() {
        let (dir, path) = scratch("ws-cap");
        let mut w = writer(&path, Redaction::default());
        w.handle(Msg::Request { id: 1, method: "GET".into(), url: "/ws".into(), headers: vec![] }).unwrap();
        w.handle(Msg::Response { id: 1, at: 1.0, status: 101, headers: vec![], encoding: "identity".into() }).unwrap();
        let small = crate::cassette::ws_frames::encode(true, 0x1, None, b"kept");
        w.handle(Msg::Ws { id: 1, at: 2.0, from_client: false, bytes: Bytes::from(small) }).unwrap();
        // Only the head of a 17 MiB frame: its length is enough to know.
        let mut head = vec![0x82, 127];
        head.extend_from_slice(&(17u64 << 20).to_be_bytes());
        w.handle(Msg::Ws { id: 1, at: 3.0, from_client: false, bytes: Bytes::from(head) }).unwrap();
        w.handle(Msg::Ws { id: 1, at: 4.0, from_client: false, bytes: Bytes::from(vec![0; 17 << 20]) }).unwrap();
        w.handle(Msg::End { id: 1, at: 9.0, error: None }).unwrap();
        let ex = &super::super::read::read(&path).unwrap().exchanges[0];
        assert_eq!(ex.ws.len(), 1);
        assert_eq!(ex.end_at, 4.0);
        let error = ex.error.clone().unwrap();
        assert!(error.contains("server message 2 is 17825792 bytes, over the 16 MiB"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn websocket_text_that_is_not_utf8_keeps_its_kind_and_a_close_between_fragments_leaves_the_message_unfinished() {
        use crate::cassette::ws_frames::{encode, CLOSE};
        let (dir, path) = scratch("ws-gaps");
        let mut w = writer(&path, Redaction::default());
        let ws =
            |at: f64, from_client: bool, bytes: Vec<u8>| Msg::Ws { id: 1, at, from_client, bytes: Bytes::from(bytes) };
        w.handle(Msg::Request { id: 1, method: "GET".into(), url: "/ws".into(), headers: vec![] }).unwrap();
        w.handle(Msg::Response { id: 1, at: 1.0, status: 101, headers: vec![], encoding: "identity".into() }).unwrap();
        // A text frame whose bytes are not UTF-8.
        w.handle(ws(2.0, false, encode(true, 0x1, None, &[0xFF, 0xFE, b'a']))).unwrap();
        // The server's first fragment, the client's first fragment, then the server's close.
        w.handle(ws(3.0, false, encode(false, 0x1, None, b"hel"))).unwrap();
        w.handle(ws(3.5, true, encode(false, 0x2, Some([1, 2, 3, 4]), &[1, 2]))).unwrap();
        w.handle(ws(4.0, false, encode(true, CLOSE, None, &1001u16.to_be_bytes()))).unwrap();
        // The tunnel ends with the client's message still unfinished.
        w.handle(Msg::End { id: 1, at: 9.0, error: None }).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().skip(3).collect();
        assert_eq!(
            lines,
            [
                r#"{"type":"ws","id":1,"at":2.0,"from":"server","kind":"text","base64":"//5h"}"#,
                r#"{"type":"ws","id":1,"at":4.0,"from":"server","text":"hel","unfinished":true}"#,
                r#"{"type":"ws","id":1,"at":9.0,"from":"client","base64":"AQI=","unfinished":true}"#,
                r#"{"type":"end","id":1,"at":4.0,"close":1001}"#,
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A tunnel whose recording's writer takes nothing: past [`WS_BACKLOG`] bytes the tap ends the
    /// exchange with the reason and ignores the rest; every byte still goes through the tunnel.
    #[tokio::test]
    async fn a_websocket_the_writer_falls_32_mib_behind_stops_being_recorded_and_the_tunnel_goes_on() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        use tokio::net::{TcpListener, TcpStream};
        // The writer's channel, never read while the tunnel runs.
        let (tx, mut rx) = mpsc::channel(CHANNEL);
        let exchange = Exchange { id: 7, started: Instant::now(), tx, done: false };
        let (head, ()) = http::Response::builder().status(101).body(()).unwrap().into_parts();
        let tap = exchange.upgraded(&head).await;
        // Two loopback connections: the proxy's ends of the client's and the upstream's.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (mut client, (mut client_end, _)) = tokio::try_join!(TcpStream::connect(addr), listener.accept()).unwrap();
        let (mut upstream, (mut upstream_end, _)) =
            tokio::try_join!(TcpStream::connect(addr), listener.accept()).unwrap();
        // 40 MiB of server frames (64 KiB binary messages), then the upstream closes.
        let frame = crate::cassette::ws_frames::encode(true, 0x2, None, &[7; 64 * 1024]);
        let count = 40 * 1024 * 1024 / (64 * 1024);
        let sending = async move {
            for _ in 0..count {
                upstream.write_all(&frame).await.unwrap();
            }
            upstream.shutdown().await.unwrap();
            // Keep it open until the client's side ends the relay.
            let mut rest = Vec::new();
            upstream.read_to_end(&mut rest).await.unwrap();
        };
        let receiving = async move {
            let mut got = Vec::new();
            client.read_to_end(&mut got).await.unwrap();
            got
        };
        // The relay ends when both sides have: the client's ends once it has read everything.
        let relaying = crate::proxy::websocket::relay(&mut client_end, &mut upstream_end, Some(&tap));
        let ((), got, relayed) = tokio::time::timeout(std::time::Duration::from_secs(60), async {
            tokio::join!(sending, receiving, relaying)
        })
        .await
        .expect("the tunnel went on");
        relayed.unwrap();
        let expected = crate::cassette::ws_frames::encode(true, 0x2, None, &[7; 64 * 1024]).repeat(count);
        assert!(got == expected, "every byte through the tunnel ({} of {})", got.len(), expected.len());
        // Later reads are ignored, and dropping the tap sends no second end.
        tap.observe(false, b"after");
        drop(tap);
        let mut msgs = Vec::new();
        while let Some(msg) = rx.recv().await {
            msgs.push(msg);
        }
        let Some(Msg::End { id: 7, error: Some(error), .. }) = msgs.pop() else { panic!("the last message is an end") };
        assert_eq!(error, "the cassette's writer fell 32 MiB behind this WebSocket: the rest of it is not recorded");
        assert!(matches!(msgs.first(), Some(Msg::Response { status: 101, .. })));
        let ws: Vec<usize> = msgs[1..]
            .iter()
            .map(|m| if let Msg::Ws { bytes, .. } = m { bytes.len() } else { panic!("only reads") })
            .collect();
        let recorded: usize = ws.iter().sum();
        // Stopped at the limit: what the writer's channel holds (the 101 and up to 15 reads of at
        // most 16 KiB) plus at most 32 MiB waiting.
        let read = 16 * 1024;
        assert!(
            recorded > WS_BACKLOG - read && recorded <= WS_BACKLOG + CHANNEL * read,
            "{recorded} bytes handed over"
        );
        // The writer makes it the end line, with no close code.
        let (dir, path) = scratch("ws-backlog");
        let mut w = writer(&path, Redaction::default());
        w.handle(Msg::Request { id: 7, method: "GET".into(), url: "/ws".into(), headers: vec![] }).unwrap();
        w.handle(Msg::Response { id: 7, at: 1.0, status: 101, headers: vec![], encoding: "identity".into() }).unwrap();
        w.handle(Msg::End { id: 7, at: 5.0, error: Some(error.clone()) }).unwrap();
        let ex = &super::super::read::read(&path).unwrap().exchanges[0];
        assert_eq!((ex.error.as_deref(), ex.close), (Some(error.as_str()), None));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dates_are_rfc3339() {
        let now = now_rfc3339();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.starts_with("20") && now.ends_with('Z'), "{now}");
    }

    #[test]
    fn dates_are_rfc3339_in_utc() {
        let day = 86_400;
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(day - 1), "1970-01-01T23:59:59Z");
        assert_eq!(rfc3339(59 * day), "1970-03-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(951_868_800), "2000-03-01T00:00:00Z");
        assert_eq!(rfc3339(978_307_199), "2000-12-31T23:59:59Z");
        assert_eq!(rfc3339(1_000_000_000), "2001-09-09T01:46:40Z");
        assert_eq!(rfc3339(1_706_745_600), "2024-02-01T00:00:00Z");
        assert_eq!(rfc3339(1_709_164_800), "2024-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_735_689_599), "2024-12-31T23:59:59Z");
        assert_eq!(rfc3339(1_736_899_445), "2025-01-15T00:04:05Z");
        assert_eq!(rfc3339(4_107_542_400), "2100-03-01T00:00:00Z");
        assert_eq!(rfc3339(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(rfc3339(13_574_563_200), "2400-02-29T00:00:00Z");
    }

    #[cfg(feature = "bench-internals")]
    #[test]
    fn the_benchmarks_body_line_is_the_writers() {
        let (mut ours, mut bench) = (Vec::new(), Vec::new());
        body_line::push(&mut ours, 3, 1, 2.5, b"hi");
        bench::body_line(&mut bench, 3, 1, 2.5, b"hi");
        assert_eq!(bench, ours);
    }

    #[test]
    fn a_cassette_is_started_afresh_or_appended_to_without_a_second_head() {
        let (dir, path) = scratch("start");
        let options =
            |append| RecordOptions { path: path.clone(), matches: None, redact: Redaction::default(), append };
        let stats = || Arc::new(Stats::new(crate::config::LogLevel::Silent, "test"));
        std::fs::write(&path, "old\n").unwrap();
        drop(Recorder::start(options(false), stats()).unwrap());
        let fresh = std::fs::read_to_string(&path).unwrap();
        assert!(fresh.starts_with("{\"type\":\"cassette\"") && fresh.lines().count() == 1, "{fresh}");
        drop(Recorder::start(options(true), stats()).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), fresh, "appended to: no second head");
        std::fs::remove_file(&path).unwrap();
        drop(Recorder::start(options(true), stats()).unwrap());
        assert!(
            std::fs::read_to_string(&path).unwrap().starts_with("{\"type\":\"cassette\""),
            "a new file gets its head"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_cassette_is_refused_with_the_reason() {
        let (dir, path) = scratch("symlink");
        let target = dir.join("elsewhere.jsonl");
        std::fs::write(&target, "keep me\n").unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let options = RecordOptions { path: path.clone(), matches: None, redact: Redaction::default(), append: false };
        let stats = Arc::new(Stats::new(crate::config::LogLevel::Silent, "test"));
        let Err(error) = Recorder::start(options, stats) else { panic!("a symlink was followed") };
        assert!(error.contains("is a symbolic link"), "{error}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me\n");
        // Other errors keep their own reason.
        let missing = dir.join("no-such-dir").join("c.jsonl");
        let options = RecordOptions { path: missing, matches: None, redact: Redaction::default(), append: false };
        let Err(error) = Recorder::start(options, Arc::new(Stats::new(crate::config::LogLevel::Silent, "test"))) else {
            panic!("opened in a missing directory")
        };
        assert!(!error.contains("symbolic link"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_cassettes_directory_must_exist() {
        let (dir, _) = scratch("check-path");
        assert_eq!(check_path(Path::new("c.jsonl")), Ok(()));
        assert_eq!(check_path(&dir.join("c.jsonl")), Ok(()));
        let missing = dir.join("missing");
        assert_eq!(
            check_path(&missing.join("c.jsonl")),
            Err(format!("the directory '{}' does not exist", missing.display()))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A recorder on a fresh cassette, and the directory to remove.
    fn recorder(name: &str, matches: Option<&str>) -> (PathBuf, Recorder) {
        let (dir, path) = scratch(name);
        let matches = matches.map(|glob| UrlGlobs::new(&[glob.to_string()], "record.match").unwrap());
        let options = RecordOptions { path, matches, redact: Redaction::default(), append: false };
        (dir, Recorder::start(options, Arc::new(Stats::new(crate::config::LogLevel::Silent, "test"))).unwrap())
    }

    #[tokio::test]
    async fn exchanges_are_numbered_after_the_last_and_the_snapshot_tells_where_the_recording_stands() {
        let (dir, recorder) = recorder("ids", Some("/api/**"));
        assert!(recorder.wants("/api/x") && !recorder.wants("/other"));
        let recorder = recorder.ids_after(5);
        let (method, uri) = (http::Method::GET, http::Uri::from_static("/api/x?q=1"));
        let exchange = recorder.request(Instant::now(), &method, &uri, &http::HeaderMap::new()).await;
        assert_eq!(exchange.id, 6);
        exchange.failed("refused".into()).await;
        *recorder.status.last_refusal.lock().unwrap() = Some("why".into());
        recorder.status.refused.store(2, Ordering::Relaxed);
        let snapshot = recorder.snapshot();
        assert_eq!(snapshot.path, dir.join("c.jsonl").display().to_string());
        assert_eq!((snapshot.refused, snapshot.last_refusal.as_deref(), snapshot.error), (2, Some("why"), None));
        *recorder.status.failed.lock().unwrap() = Some("disk full".into());
        assert_eq!(recorder.snapshot().error.as_deref(), Some("disk full"));
        assert!(!recorder.wants("/api/x"), "a failed recording wants nothing");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An exchange whose messages go to a channel the test reads.
    fn channel_exchange(capacity: usize) -> (Exchange, mpsc::Receiver<Msg>) {
        let (tx, rx) = mpsc::channel(capacity);
        (Exchange { id: 1, started: Instant::now(), tx, done: false }, rx)
    }

    fn drain(rx: &mut mpsc::Receiver<Msg>) -> Vec<Msg> {
        std::iter::from_fn(|| rx.try_recv().ok()).collect()
    }

    /// A message in a word: `body hi`, `end`, `end: why`, ...
    fn word(msg: &Msg) -> String {
        match msg {
            Msg::Request { method, url, .. } => format!("request {method} {url}"),
            Msg::RequestBody { bytes, .. } => format!("request body {}", String::from_utf8_lossy(bytes)),
            Msg::Response { status, encoding, .. } => format!("response {status} {encoding}"),
            Msg::Body { bytes, .. } => format!("body {}", String::from_utf8_lossy(bytes)),
            Msg::Ws { bytes, .. } => format!("ws {}", bytes.len()),
            Msg::End { error: None, .. } => "end".into(),
            Msg::End { error: Some(error), .. } => format!("end: {error}"),
        }
    }

    fn words(rx: &mut mpsc::Receiver<Msg>) -> Vec<String> {
        drain(rx).iter().map(word).collect()
    }

    #[test]
    fn ms_since_is_milliseconds_to_the_microsecond() {
        let ms = ms_since(Instant::now() - std::time::Duration::from_millis(1500));
        assert!((1500.0..1600.0).contains(&ms), "{ms}");
        assert_eq!(ms, (ms * 1000.0).round() / 1000.0, "{ms}: whole microseconds");
    }

    #[tokio::test]
    async fn an_exchange_ends_once_whether_it_failed_or_was_dropped() {
        let (exchange, mut rx) = channel_exchange(8);
        exchange.request_bytes(Bytes::new()).await;
        exchange.request_bytes(Bytes::from_static(b"q")).await;
        exchange.failed("no upstream".into()).await;
        assert_eq!(words(&mut rx), ["request body q", "end: no upstream"]);
        let (exchange, mut rx) = channel_exchange(8);
        drop(exchange);
        assert_eq!(words(&mut rx), ["end: the client went away before the response head"]);
    }

    #[tokio::test]
    async fn a_response_head_is_recorded_without_its_coding_and_length_headers() {
        let (exchange, mut rx) = channel_exchange(8);
        let (head, ()) = http::Response::builder()
            .status(203)
            .header("content-encoding", "br")
            .header("content-length", "10")
            .header("content-type", "text/plain")
            .body(())
            .unwrap()
            .into_parts();
        let tee = exchange.response(&head).await;
        let msgs = drain(&mut rx);
        let [Msg::Response { status: 203, headers, encoding, .. }] = &msgs[..] else { panic!("one response") };
        assert_eq!((headers.clone(), encoding.as_str()), (vec![("content-type".into(), "text/plain".into())], "br"));
        drop(tee);
        assert_eq!(words(&mut rx), ["end: the client went away before the body's end"]);
        let (exchange, mut rx) = channel_exchange(8);
        let (head, ()) = http::Response::builder().body(()).unwrap().into_parts();
        drop(exchange.response(&head).await);
        assert_eq!(words(&mut rx)[0], "response 200 identity");
    }

    fn poll<T>(f: impl FnOnce(&mut Context<'_>) -> T) -> T {
        f(&mut Context::from_waker(std::task::Waker::noop()))
    }

    #[tokio::test]
    async fn the_body_tee_copies_each_chunk_and_one_end() {
        let (exchange, mut rx) = channel_exchange(8);
        let (head, ()) = http::Response::builder().body(()).unwrap().into_parts();
        let mut tee = exchange.response(&head).await;
        drain(&mut rx);
        let chunk = |bytes: &'static [u8]| Poll::Ready(Some(Ok(Bytes::from_static(bytes))));
        poll(|cx| {
            assert!(tee.poll_ready(cx).is_ready());
            tee.observe(&chunk(b"a"), cx);
            tee.observe(&chunk(b""), cx);
            tee.observe(&Poll::Pending, cx);
            tee.observe(&chunk(b"b"), cx);
            assert!(!tee.ended());
            tee.observe(&Poll::Ready(None), cx);
            assert!(tee.ended());
            tee.observe(&chunk(b"after"), cx);
        });
        tee.dropped(false);
        drop(tee);
        assert_eq!(words(&mut rx), ["body a", "body b", "end"]);
        // A failed body ends with its error; a body nobody read to its end but complete, without one.
        for (how, expected) in [(0, "end: reset"), (1, "end"), (2, "end: the client went away before the body's end")] {
            let (exchange, mut rx) = channel_exchange(8);
            let mut tee = exchange.response(&head).await;
            drain(&mut rx);
            match how {
                0 => poll(|cx| tee.observe(&Poll::Ready(Some(Err("reset".into()))), cx)),
                1 => tee.dropped(true),
                _ => tee.dropped(false),
            }
            assert!(tee.ended());
            drop(tee);
            assert_eq!(words(&mut rx), [expected]);
        }
    }

    /// The next message, failing the test (rather than hanging it) when none comes within 5 s.
    async fn next(rx: &mut mpsc::Receiver<Msg>) -> Option<Msg> {
        tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
            .await
            .expect("a message or the end within 5 s")
    }

    #[tokio::test]
    async fn a_full_channel_holds_the_next_chunk_back_and_nothing_is_lost() {
        let (exchange, mut rx) = channel_exchange(1);
        let (head, ()) = http::Response::builder().body(()).unwrap().into_parts();
        let mut tee = exchange.response(&head).await;
        poll(|cx| {
            // The channel holds the response head: `a` waits in the tee.
            tee.observe(&Poll::Ready(Some(Ok(Bytes::from_static(b"a")))), cx);
            assert!(tee.poll_ready(cx).is_pending());
        });
        assert_eq!(words(&mut rx), ["response 200 identity"]);
        poll(|cx| {
            assert!(tee.poll_ready(cx).is_ready());
            tee.observe(&Poll::Ready(Some(Ok(Bytes::from_static(b"b")))), cx);
        });
        assert_eq!(words(&mut rx), ["body a"]);
        // Dropped with `b` waiting: it and the end still go, from a task.
        drop(tee);
        let mut rest = Vec::new();
        while let Some(msg) = next(&mut rx).await {
            rest.push(word(&msg));
        }
        assert_eq!(rest, ["body b", "end: the client went away before the body's end"]);
    }

    #[tokio::test]
    async fn the_request_tee_passes_the_body_on_and_copies_its_chunks() {
        use http_body::Body as _;
        use http_body_util::BodyExt;
        let (exchange, mut rx) = channel_exchange(8);
        let inner = http_body_util::Full::new(Bytes::from_static(b"hello"));
        let tee = exchange.request_body(inner);
        assert_eq!(tee.size_hint().exact(), Some(5));
        assert!(!tee.is_end_stream());
        let mut tee = tee;
        let frame = tee.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), "hello");
        assert!(tee.is_end_stream());
        assert!(tee.frame().await.is_none());
        drop(tee);
        exchange.failed("done".into()).await;
        assert_eq!(words(&mut rx), ["request body hello", "end: done"]);
        // Empty chunks are not copied; a chunk waiting for room is sent when the tee is dropped.
        let (exchange, mut rx) = channel_exchange(1);
        let chunks: Vec<Result<http_body::Frame<Bytes>, std::convert::Infallible>> =
            vec![Ok(http_body::Frame::data(Bytes::new())), Ok(http_body::Frame::data(Bytes::from_static(b"x")))];
        let mut tee = exchange.request_body(http_body_util::StreamBody::new(futures_util::stream::iter(chunks)));
        exchange.request_bytes(Bytes::from_static(b"fills")).await;
        assert_eq!(tee.frame().await.unwrap().unwrap().into_data().unwrap(), "");
        assert_eq!(tee.frame().await.unwrap().unwrap().into_data().unwrap(), "x");
        drop(tee);
        let mut got = vec![word(&next(&mut rx).await.unwrap()), word(&next(&mut rx).await.unwrap())];
        drop(exchange);
        while let Some(msg) = next(&mut rx).await {
            got.push(word(&msg));
        }
        assert_eq!(got, ["request body fills", "request body x", "end: the client went away before the response head"]);
    }

    /// A tap of exchange 1 with nothing behind yet, queueing into `queue`.
    fn fresh_tap(queue: mpsc::UnboundedSender<Msg>) -> WsTap {
        WsTap {
            id: 1,
            started: Instant::now(),
            queue,
            backlog: Arc::new(AtomicUsize::new(0)),
            stopped: AtomicBool::new(false),
        }
    }

    #[tokio::test]
    async fn a_websocket_tap_stops_past_32_mib_behind_and_its_drop_ends_the_exchange() {
        let (queue, mut rx) = mpsc::unbounded_channel();
        let tap = fresh_tap(queue);
        tap.observe(true, &vec![0; (32 << 20) - 1]);
        tap.observe(false, b"x");
        assert!(!tap.stopped.load(Ordering::Relaxed), "exactly 32 MiB behind: recorded");
        tap.observe(false, b"y");
        drop(tap);
        let got: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok()).map(|m| word(&m)).collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[2].starts_with("end: the cassette's writer fell 32 MiB behind"), "{got:?}");
        let (queue, mut rx) = mpsc::unbounded_channel();
        let tap = fresh_tap(queue);
        tap.observe(true, b"hi");
        drop(tap);
        let got: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok()).map(|m| word(&m)).collect();
        assert_eq!(got, ["ws 2", "end"]);
    }
}
