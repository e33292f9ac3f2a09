//! The answer's body, counted and timed: finishes its exchange record when it ends, fails, or is
//! dropped (the client went away). Per chunk it only adds to a counter it owns.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};

use super::Trace;
use crate::body::{BodyError, ProxyBody};

pub(crate) struct ObservedBody {
    inner: ProxyBody,
    bytes_out: u64,
    /// Taken when the record is finished: a body is recorded once.
    trace: Option<Trace>,
}

impl ObservedBody {
    pub(super) fn new(inner: ProxyBody, trace: Trace) -> ObservedBody {
        ObservedBody { inner, bytes_out: 0, trace: Some(trace) }
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
        if let Some(trace) = self.trace.take() {
            let report = self.inner.report();
            let observer = trace.observer.clone();
            observer.end(trace, report, self.bytes_out, error);
        }
    }
}

impl Drop for ObservedBody {
    /// hyper stops polling a body that says it has ended (a whole body in memory is one frame), and
    /// drops one whose client went away.
    fn drop(&mut self) {
        if self.trace.is_some() {
            let error = (!self.inner.is_end_stream()).then(|| "the client went away before the body's end".to_string());
            self.end(error);
        }
    }
}
