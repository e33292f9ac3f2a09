//! The bytes a response starts from: the target's body, a local file or a recorded body, with the
//! target's idle timeout, and a copy of each chunk for a recording.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, SizeHint};
use tokio::time::Sleep;

use super::BodyError;
use crate::stats::Stats;

/// A copy of the upstream body taken as it is read: a recording (`crate::cassette::record::BodyTee`).
pub(crate) trait UpstreamTee: Send {
    /// Ready when the previous chunk's copy is taken: called before the next chunk is read, so a
    /// slow writer slows the read instead of losing a chunk.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()>;
    /// What one read of the upstream body gave.
    fn observe(&mut self, polled: &Poll<Option<Result<Bytes, BodyError>>>, cx: &mut Context<'_>);
    /// Whether the end was seen (until then the body must not say it has ended).
    fn ended(&self) -> bool;
    /// The body is dropped: `complete` when the upstream had nothing more to send.
    fn dropped(&mut self, complete: bool);
}

/// A recorded body played at its recorded times (`crate::cassette::replay::answer::ReplayStream`).
pub(crate) trait RecordedChunks: Send {
    /// The next chunk, when its time has come.
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, BodyError>>>;
}

/// An upstream body with an idle timeout: a stalled upstream becomes an error, not a hung client.
/// Its failure is logged once, with the URL, whatever the body goes through afterwards.
pub(crate) struct UpstreamBody {
    inner: Source,
    /// The target's longest pause between two chunks (`upstreamTimeoutMs`), and when it runs out;
    /// none: wait as long as the target takes.
    idle: Option<(Duration, Pin<Box<Sleep>>)>,
    stats: Arc<Stats>,
    url: String,
    /// `record`: each chunk read is also sent to the cassette's writer.
    tee: Option<Box<dyn UpstreamTee>>,
    /// Whether the recording reads on when the client leaves before the end (an error answer).
    read_on: bool,
    /// Bytes received so far, as they came (the exchange record's `bytesIn`).
    pub(super) bytes_in: u64,
    /// Bytes read but not used yet (see [`UpstreamBody::put_back`]): the next read gives them.
    unread: Bytes,
}

/// Where the bytes come from: the target's response, or a local file (`serveStatic`).
enum Source {
    Http(hyper::body::Incoming),
    /// `len` bytes from the file's position, in chunks of [`FILE_CHUNK`].
    /// Boxed: a file reader is large, and every proxied body would carry its size.
    File(Box<tokio_util::io::ReaderStream<tokio::io::Take<tokio::fs::File>>>),
    /// A recorded body played at its recorded times (cassette replay); no idle timeout: its pauses
    /// are the recording's.
    Replay(Box<dyn RecordedChunks>),
    /// Handed on to the recording's reader (see [`UpstreamBody::reading_on_for`]) as the body is dropped.
    Taken,
}

/// How much of a local file is read at once: one read per chunk, each a trip to the blocking pool.
const FILE_CHUNK: usize = 64 * 1024;

impl UpstreamBody {
    pub(crate) fn new(
        inner: hyper::body::Incoming,
        idle: Option<Duration>,
        stats: Arc<Stats>,
        url: String,
    ) -> UpstreamBody {
        let idle = idle.map(|idle| (idle, Box::pin(tokio::time::sleep(idle))));
        UpstreamBody {
            inner: Source::Http(inner),
            idle,
            stats,
            url,
            bytes_in: 0,
            tee: None,
            read_on: false,
            unread: Bytes::new(),
        }
    }

    /// A recorded body played back; `url` names it in errors.
    pub(crate) fn replay(stream: impl RecordedChunks + 'static, stats: Arc<Stats>, url: String) -> UpstreamBody {
        let inner = Source::Replay(Box::new(stream));
        UpstreamBody { inner, idle: None, stats, url, bytes_in: 0, tee: None, read_on: false, unread: Bytes::new() }
    }

    /// Records what this body reads (see `crate::cassette::record`).
    pub(crate) fn with_tee<T: UpstreamTee + 'static>(mut self, tee: Option<T>) -> UpstreamBody {
        self.tee = tee.map(|tee| Box::new(tee) as Box<dyn UpstreamTee>);
        self
    }

    /// When the client leaves before the end of an error answer (`status` 400 or more: an SDK that
    /// will retry drops the body of a 429 or a 500), the recording reads on, up to [`READ_ON_BYTES`]
    /// and [`READ_ON_TIME`], so that the cassette holds what the upstream said and replays it whole.
    /// A success the client leaves (an aborted stream) ends there: reading on would keep the upstream
    /// working (generating tokens) for nobody.
    pub(crate) fn reading_on_for(mut self, status: http::StatusCode) -> UpstreamBody {
        self.read_on = self.tee.is_some() && (status.is_client_error() || status.is_server_error());
        self
    }

    /// `len` bytes of `file` from its current position, streamed; `path` names it in errors.
    pub(crate) fn file(file: std::fs::File, len: u64, stats: Arc<Stats>, path: String) -> UpstreamBody {
        use tokio::io::AsyncReadExt;
        let reader = tokio::fs::File::from_std(file).take(len);
        let inner = Source::File(Box::new(tokio_util::io::ReaderStream::with_capacity(reader, FILE_CHUNK)));
        UpstreamBody {
            inner,
            idle: None,
            stats,
            url: path,
            bytes_in: 0,
            tee: None,
            read_on: false,
            unread: Bytes::new(),
        }
    }

    /// Gives `rest`, the end of the last chunk read, back to be read first again: what a step left
    /// because its output reached its bound (a small compressed chunk may decode to a GiB). Counted and
    /// recorded once, when it was first read.
    pub(super) fn put_back(&mut self, rest: Bytes) {
        self.unread =
            if self.unread.is_empty() { rest } else { [rest, std::mem::take(&mut self.unread)].concat().into() };
    }

    /// Whether bytes put back wait to be read again.
    pub(super) fn has_unread(&self) -> bool {
        !self.unread.is_empty()
    }

    pub(super) fn poll_data(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, BodyError>>> {
        if !self.unread.is_empty() {
            return Poll::Ready(Some(Ok(std::mem::take(&mut self.unread))));
        }
        // The previous chunk's copy must be in the recording's channel before the next is read.
        if let Some(tee) = &mut self.tee {
            std::task::ready!(tee.poll_ready(cx));
        }
        let polled = self.poll_upstream(cx);
        if let Some(tee) = &mut self.tee {
            tee.observe(&polled, cx);
        }
        match &polled {
            Poll::Ready(Some(Ok(data))) => self.bytes_in += data.len() as u64,
            Poll::Ready(Some(Err(e))) => {
                self.stats.add_upstream_error();
                self.stats.log_error(&format!("upstream body of {} failed: {e}", self.url));
            }
            _ => {}
        }
        polled
    }

    fn poll_upstream(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, BodyError>>> {
        let inner = match &mut self.inner {
            Source::Http(inner) => inner,
            Source::File(reader) => {
                return match futures_util::Stream::poll_next(Pin::new(&mut **reader), cx) {
                    Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Box::new(e)))),
                    other => other.map(|chunk| chunk.map(|c| c.map_err(|e| Box::new(e) as BodyError))),
                };
            }
            Source::Replay(stream) => return stream.poll_chunk(cx),
            Source::Taken => return Poll::Ready(None),
        };
        loop {
            match Pin::new(&mut *inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Some((idle, deadline)) = &mut self.idle {
                        deadline.as_mut().reset(tokio::time::Instant::now() + *idle);
                    }
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                    // Trailers are dropped: the body may have changed under them.
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(Box::new(e)))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => {
                    if let Some((idle, deadline)) = &mut self.idle {
                        if deadline.as_mut().poll(cx).is_ready() {
                            let msg = format!("upstream sent nothing for {} ms (upstreamTimeoutMs)", idle.as_millis());
                            return Poll::Ready(Some(Err(msg.into())));
                        }
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    pub(crate) async fn next_data(&mut self) -> Option<Result<Bytes, BodyError>> {
        std::future::poll_fn(|cx| self.poll_data(cx)).await
    }

    pub(super) fn size_hint(&self) -> SizeHint {
        let source = match &self.inner {
            Source::Http(inner) => inner.size_hint(),
            Source::File(_) | Source::Replay(_) | Source::Taken => SizeHint::default(),
        };
        // Bytes put back come first.
        let unread = self.unread.len() as u64;
        let mut hint = SizeHint::new();
        hint.set_lower(source.lower() + unread);
        if let Some(upper) = source.upper() {
            hint.set_upper(upper + unread);
        }
        hint
    }

    /// Whether the source has nothing more to give, whether or not a recording has seen its end yet
    /// (hyper stops polling a body once its `Content-Length` is written).
    pub(super) fn is_complete(&self) -> bool {
        if !self.unread.is_empty() {
            return false;
        }
        match &self.inner {
            Source::Http(inner) => inner.is_end_stream(),
            Source::Taken => true,
            Source::File(_) | Source::Replay(_) => false,
        }
    }

    pub(super) fn is_end_stream(&self) -> bool {
        if !self.unread.is_empty() {
            return false;
        }
        if self.tee.as_ref().is_some_and(|tee| !tee.ended()) {
            return false; // polled once more, so that the recording sees the end
        }
        match &self.inner {
            Source::Http(inner) => inner.is_end_stream(),
            Source::File(_) | Source::Replay(_) => false,
            Source::Taken => true,
        }
    }
}

/// How much more of an error answer a recording reads once its client has left.
pub(crate) const READ_ON_BYTES: u64 = 1 << 20;
/// For how long.
pub(crate) const READ_ON_TIME: Duration = Duration::from_secs(10);

impl Drop for UpstreamBody {
    fn drop(&mut self) {
        let Some(mut tee) = self.tee.take() else { return };
        let complete = matches!(&self.inner, Source::Http(inner) if inner.is_end_stream());
        if self.read_on && !complete && !tee.ended() && matches!(self.inner, Source::Http(_)) {
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                let inner = std::mem::replace(&mut self.inner, Source::Taken);
                let rest = UpstreamBody {
                    inner,
                    idle: None,
                    stats: self.stats.clone(),
                    url: self.url.clone(),
                    tee: Some(tee),
                    read_on: false,
                    bytes_in: 0,
                    unread: Bytes::new(),
                };
                handle.spawn(read_on(rest));
                return;
            }
        }
        tee.dropped(complete);
    }
}

/// Reads the rest of an error answer for its recording, within the bounds; dropping `rest` then
/// ends the recording (as the client leaving would have, if the bounds ran out first).
async fn read_on(mut rest: UpstreamBody) {
    let read = async {
        while let Some(Ok(_)) = rest.next_data().await {
            if rest.bytes_in > READ_ON_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(READ_ON_TIME, read).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bytes_put_back_are_read_first_and_counted_once() {
        let path = std::env::temp_dir().join(format!("devproxy-put-back-{}", std::process::id()));
        std::fs::write(&path, b"abcdef").unwrap();
        let stats = Arc::new(Stats::new(crate::config::LogLevel::Silent, "test"));
        let file = std::fs::File::open(&path).unwrap();
        let mut body = UpstreamBody::file(file, 6, stats, "/file".into());
        let first = body.next_data().await.unwrap().unwrap();
        assert_eq!(&first[..], b"abcdef");
        body.put_back(first.slice(3..));
        assert!(!body.is_complete() && !body.is_end_stream(), "bytes wait: the body is not over");
        assert!(body.size_hint().lower() >= 3, "the hint counts what was put back");
        assert_eq!(&body.next_data().await.unwrap().unwrap()[..], b"def");
        assert!(body.next_data().await.is_none());
        assert_eq!(body.bytes_in, 6, "counted as it came, once");
        std::fs::remove_file(&path).unwrap();
    }
}
