//! The answer's body, counted and timed: tells its watcher (the exchange record, `crate::observe`)
//! when it ends, fails, or is dropped (the client went away). Per chunk it only adds to a counter it
//! owns.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};

use super::{BodyError, BodyReport, ProxyBody};

/// Who is told how a body ended; the body module knows it only by this trait (the exchange record
/// lives above it).
pub(crate) trait BodyWatcher: Send {
    /// The body ended: whole (`error: None`), failed, or dropped before its end.
    fn ended(self: Box<Self>, report: BodyReport, bytes_out: u64, error: Option<String>);
}

pub(crate) struct ObservedBody {
    inner: ProxyBody,
    bytes_out: u64,
    /// Taken when the end is told: a body ends once.
    watcher: Option<Box<dyn BodyWatcher>>,
}

impl ObservedBody {
    pub(crate) fn new(inner: ProxyBody, watcher: Box<dyn BodyWatcher>) -> ObservedBody {
        ObservedBody { inner, bytes_out: 0, watcher: Some(watcher) }
    }

    pub(crate) fn inner(&self) -> &ProxyBody {
        &self.inner
    }

    pub(crate) fn inner_mut(&mut self) -> &mut ProxyBody {
        &mut self.inner
    }

    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                self.bytes_out += frame.data_ref().map_or(0, |data| data.len() as u64);
            }
            Poll::Ready(Some(Err(e))) => self.end(Some(e.to_string())),
            Poll::Ready(None) => self.end(None),
            Poll::Pending => {}
        }
        polled
    }

    fn end(&mut self, error: Option<String>) {
        if let Some(watcher) = self.watcher.take() {
            watcher.ended(self.inner.report(), self.bytes_out, error);
        }
    }
}

impl Drop for ObservedBody {
    /// hyper stops polling a body that says it has ended (a whole body in memory is one frame), and
    /// drops one whose client went away.
    fn drop(&mut self) {
        if self.watcher.is_some() {
            let error = (!self.inner.is_complete()).then(|| "the client went away before the body's end".to_string());
            self.end(error);
        }
    }
}
