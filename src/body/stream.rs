//! The streaming bodies the proxy answers with: passthrough, a tee into the compressed-copy cache,
//! and the rewritten body whose pipeline steps run inline or on the blocking pool.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::pipeline::{Pipeline, PipelineError};
use super::plan::SkipMemo;
use super::{BodyError, BodyReport, UpstreamBody};
use crate::stats::Stats;

/// Output is handed to hyper once this much is ready, even if the upstream has more.
const OUTPUT_BATCH: usize = 64 * 1024;
/// Upstream chunks that arrive back to back are gathered up to this size before they go through the
/// rules: each push rescans what a pending match holds back (up to `maxMatchBytes`), so pushing
/// every 16 bytes of a page sent in tiny HTTP chunks made the cost quadratic (15 s of CPU for 1 MiB).
/// A pause of the upstream pushes what was gathered at once: streamed bytes are never held.
const GATHER: usize = 16 * 1024;

/// The body the proxy answers with.
pub(crate) enum ProxyBody {
    Full(Option<Bytes>),
    Passthrough {
        prefix: Option<Bytes>,
        upstream: UpstreamBody,
    },
    Rewrite(Box<RewriteState>),
    Tee(Box<Tee>),
    /// An endless stream of chunks: the inspector's Server-Sent Events.
    Events(EventStream),
    /// Any of the above, counted and timed for the exchange record (see `crate::observe`).
    Observed(Box<super::ObservedBody>),
}

/// The chunks of a [`ProxyBody::Events`].
pub(crate) type EventStream = Pin<Box<dyn futures_util::Stream<Item = Bytes> + Send>>;

/// A body whose bytes are also kept, up to a limit, and handed to `done` once it has ended whole
/// (a failed body, or one over the limit, hands nothing): how a compressed local file is cached.
pub(crate) struct Tee {
    inner: ProxyBody,
    kept: Option<Vec<u8>>,
    limit: usize,
    done: Option<Box<dyn FnOnce(Bytes) + Send>>,
}

impl Tee {
    pub(crate) fn new(inner: ProxyBody, limit: usize, done: Box<dyn FnOnce(Bytes) + Send>) -> Tee {
        Tee { inner, kept: Some(Vec::new()), limit, done: Some(done) }
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                let data = frame.data_ref().map_or(&[][..], |d| &d[..]);
                match &mut self.kept {
                    Some(kept) if kept.len() + data.len() <= self.limit => kept.extend_from_slice(data),
                    _ => self.kept = None,
                }
            }
            Poll::Ready(Some(Err(_))) => self.kept = None,
            Poll::Ready(None) => {
                if let (Some(kept), Some(done)) = (self.kept.take(), self.done.take()) {
                    done(kept.into());
                }
            }
            Poll::Pending => {}
        }
        polled
    }
}

pub(crate) struct RewriteState {
    upstream: UpstreamBody,
    work: Work,
    /// Some rule calls a JS function: steps run on tokio's blocking pool, so that a response waiting
    /// for Node's thread never holds a runtime worker that other requests need.
    offload: bool,
    /// Output not yet handed to hyper (it may start with what was rewritten before the headers).
    out: Vec<u8>,
    finished: bool,
    stats: Arc<Stats>,
    url: String,
    /// Test hook (`ProxyConfig::panic_probes`): panic on upstream data that arrives after output went out.
    #[cfg(feature = "test-hooks")]
    panic_probe: bool,
    frames_sent: u64,
    /// Told what the rules found once the whole body went through.
    skip_memo: Option<SkipMemo>,
    /// Upstream bytes read but not pushed yet (see [`GATHER`]).
    gathered: bytes::BytesMut,
    /// The upstream body has ended (what was gathered goes through first).
    upstream_ended: bool,
}

/// Where the pipeline is: here, or inside a step running on the blocking pool.
// `RewriteState` is boxed already; boxing the pipeline too would cost an allocation per response.
#[allow(clippy::large_enum_variant)]
enum Work {
    Ready(Pipeline),
    /// A step is running; `true` when it is the body's last (`finish`).
    Running(tokio::task::JoinHandle<StepOutcome>, bool),
    /// A step panicked: the pipeline is gone with it.
    Lost,
}

/// What a step on the blocking pool gives back.
pub(crate) struct StepOutcome {
    pub pipeline: Pipeline,
    pub out: Vec<u8>,
    pub result: Result<(), PipelineError>,
    /// Raw bytes the step left for the next, its output being full (see [`Pipeline::push_some`]).
    rest: Bytes,
}

/// One pipeline step: the decoded start of a page, raw upstream bytes, or the body's end.
enum Step {
    Decoded(Vec<u8>),
    Raw(Bytes),
    Finish,
}

impl Step {
    fn run(self, mut pipeline: Pipeline, mut out: Vec<u8>) -> StepOutcome {
        let mut rest = Bytes::new();
        let result = match &self {
            Step::Decoded(decoded) => pipeline.push_decoded(decoded, &mut out),
            Step::Raw(raw) => pipeline.push_some(raw, &mut out, OUTPUT_BATCH).map(|taken| rest = raw.slice(taken..)),
            Step::Finish => pipeline.finish(&mut out),
        };
        StepOutcome { pipeline, out, result, rest }
    }
}

/// Rewrites the decoded start of a page before the headers go out; on the blocking pool when a rule
/// calls JS (see [`RewriteState`]).
pub(crate) async fn rewrite_prefix(pipeline: Pipeline, prefix: Vec<u8>) -> Result<StepOutcome, String> {
    let step = Step::Decoded(prefix);
    if !pipeline.calls_functions() {
        return Ok(step.run(pipeline, Vec::new()));
    }
    tokio::task::spawn_blocking(move || step.run(pipeline, Vec::new())).await.map_err(join_failure)
}

/// Why a blocking step did not come back (a panic in it, a bug).
fn join_failure(error: tokio::task::JoinError) -> String {
    match error.try_into_panic() {
        Ok(panic) => format!("internal error (panic): {}", crate::error::panic_message(panic.as_ref())),
        Err(error) => format!("internal error: {error}"),
    }
}

impl ProxyBody {
    /// Whether nothing more is to come from the source: a passthrough body's end whether or not its
    /// recording has seen it yet (what a body dropped by hyper after its `Content-Length` tells).
    pub(crate) fn is_complete(&self) -> bool {
        match self {
            ProxyBody::Full(bytes) => bytes.is_none(),
            ProxyBody::Passthrough { prefix, upstream } => prefix.is_none() && upstream.is_complete(),
            ProxyBody::Rewrite(_) | ProxyBody::Events(_) => false,
            ProxyBody::Tee(tee) => tee.inner.is_end_stream(),
            ProxyBody::Observed(observed) => observed.inner().is_complete(),
        }
    }

    pub(crate) fn full(bytes: impl Into<Bytes>) -> ProxyBody {
        ProxyBody::Full(Some(bytes.into()))
    }

    /// What this body did, for its exchange record (called once, when it has ended or failed).
    pub(crate) fn report(&mut self) -> BodyReport {
        match self {
            ProxyBody::Full(_) | ProxyBody::Events(_) => BodyReport::default(),
            ProxyBody::Passthrough { upstream, .. } => {
                BodyReport { bytes_in: Some(upstream.bytes_in), ..BodyReport::default() }
            }
            ProxyBody::Rewrite(state) => state.report(),
            ProxyBody::Tee(tee) => tee.inner.report(),
            ProxyBody::Observed(observed) => observed.inner_mut().report(),
        }
    }
}

impl RewriteState {
    pub(crate) fn new(
        upstream: UpstreamBody,
        pipeline: Pipeline,
        out: Vec<u8>,
        stats: Arc<Stats>,
        url: String,
    ) -> RewriteState {
        RewriteState {
            upstream,
            offload: pipeline.calls_functions(),
            work: Work::Ready(pipeline),
            out,
            finished: false,
            stats,
            url,
            #[cfg(feature = "test-hooks")]
            panic_probe: false,
            frames_sent: 0,
            skip_memo: None,
            gathered: bytes::BytesMut::new(),
            upstream_ended: false,
        }
    }

    fn report(&mut self) -> BodyReport {
        let mut report = BodyReport { bytes_in: Some(self.upstream.bytes_in), ..BodyReport::default() };
        if let Work::Ready(pipeline) = &mut self.work {
            report.times = Some(pipeline.times());
            report.rules = pipeline
                .match_counts()
                .filter(|(_, matches)| *matches > 0)
                .map(|(rule, matches)| super::RuleMatches { rule: rule.to_string(), matches })
                .collect();
            report.preview = pipeline.take_preview();
        }
        report
    }

    /// Test hook: panic on upstream data that arrives after output went out.
    #[cfg(feature = "test-hooks")]
    pub(crate) fn with_panic_probe(mut self, on: bool) -> RewriteState {
        self.panic_probe = on;
        self
    }

    /// Remembers, once the whole body went through, which rules found nothing in it.
    pub(crate) fn with_skip_memo(mut self, memo: Option<SkipMemo>) -> RewriteState {
        self.skip_memo = memo;
        self
    }

    fn fail(&mut self, error: PipelineError) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        self.finished = true;
        self.stats.log_error(&format!("rewriting {} failed: {error}", self.url));
        Poll::Ready(Some(Err(Box::new(error))))
    }

    /// Ends the body with an error that is not the pipeline's own (a panic): logged, then aborted.
    fn abort(&mut self, reason: String) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        self.finished = true;
        self.out.clear();
        self.stats.log_error(&format!("rewriting {} failed: {reason}", self.url));
        Poll::Ready(Some(Err(reason.into())))
    }

    fn take_output(&mut self) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        self.frames_sent += 1;
        let bytes = Bytes::from(std::mem::take(&mut self.out));
        Poll::Ready(Some(Ok(Frame::data(bytes))))
    }

    /// The pipeline has finished: count what it abandoned, hand out the rest.
    fn end(&mut self) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        self.finished = true;
        let abandoned = match &self.work {
            Work::Ready(pipeline) => {
                let abandoned = pipeline.abandoned_matches();
                // An abandoned candidate (past `maxMatchBytes`) may depend on how the body was cut:
                // such a body teaches the table nothing.
                if let Some(memo) = self.skip_memo.take().filter(|_| abandoned == 0) {
                    memo.remember(&pipeline.matched_rules());
                }
                abandoned
            }
            _ => 0,
        };
        if abandoned > 0 {
            self.stats.add_abandoned(abandoned);
            self.stats.log_error(&format!(
                "{}: {abandoned} match candidate(s) longer than maxMatchBytes were left unreplaced",
                self.url
            ));
        }
        if self.out.is_empty() {
            Poll::Ready(None)
        } else {
            self.take_output()
        }
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        if self.finished {
            return if self.out.is_empty() { Poll::Ready(None) } else { self.take_output() };
        }
        // Drain what the upstream has ready; hand out a batch when it is big or the upstream pauses.
        loop {
            let pipeline = match &mut self.work {
                Work::Ready(pipeline) => pipeline,
                Work::Running(step, last) => {
                    let last = *last;
                    let outcome = match Pin::new(step).poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Ok(outcome)) => outcome,
                        Poll::Ready(Err(e)) => {
                            self.work = Work::Lost;
                            return self.abort(join_failure(e));
                        }
                    };
                    self.work = Work::Ready(outcome.pipeline);
                    self.out = outcome.out;
                    self.upstream.put_back(outcome.rest);
                    if let Err(e) = outcome.result {
                        return self.fail(e);
                    }
                    if last {
                        return self.end();
                    }
                    if self.out.len() >= OUTPUT_BATCH {
                        return self.take_output();
                    }
                    continue;
                }
                Work::Lost => return self.abort("internal error: the rewrite pipeline was lost".into()),
            };
            // What the decoder still holds of bytes it took goes out before more is read.
            let data = if pipeline.output_pending() && self.gathered.is_empty() {
                Some(Bytes::new())
            } else {
                let ended = self.upstream_ended && !self.upstream.has_unread();
                let polled = if ended { Poll::Ready(None) } else { self.upstream.poll_data(cx) };
                match polled {
                    #[cfg(feature = "test-hooks")]
                    Poll::Ready(Some(Ok(_))) if self.panic_probe && self.frames_sent > 0 => {
                        panic!("panic probe: body phase")
                    }
                    Poll::Ready(Some(Ok(data))) if self.gathered.len() + data.len() < GATHER => {
                        self.gathered.extend_from_slice(&data);
                        continue;
                    }
                    Poll::Ready(Some(Ok(data))) if self.gathered.is_empty() => Some(data),
                    Poll::Ready(Some(Ok(data))) => {
                        self.gathered.extend_from_slice(&data);
                        Some(self.gathered.split().freeze())
                    }
                    Poll::Ready(Some(Err(e))) => {
                        self.finished = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                    Poll::Ready(None) if !self.gathered.is_empty() => {
                        self.upstream_ended = true;
                        Some(self.gathered.split().freeze())
                    }
                    Poll::Ready(None) => None,
                    // A pause: what was gathered goes through now.
                    Poll::Pending if !self.gathered.is_empty() => Some(self.gathered.split().freeze()),
                    Poll::Pending => {
                        // The encoder alone runs here: no rule, so no JS, is involved in a flush.
                        if let Err(e) = pipeline.flush(&mut self.out) {
                            return self.fail(e);
                        }
                        return if self.out.is_empty() { Poll::Pending } else { self.take_output() };
                    }
                }
            };
            if self.offload {
                let Work::Ready(pipeline) = std::mem::replace(&mut self.work, Work::Lost) else { continue };
                let step = data.map_or(Step::Finish, Step::Raw);
                let last = matches!(step, Step::Finish);
                let out = std::mem::take(&mut self.out);
                self.work = Work::Running(tokio::task::spawn_blocking(move || step.run(pipeline, out)), last);
                continue;
            }
            match data {
                Some(data) => {
                    match pipeline.push_some(&data, &mut self.out, OUTPUT_BATCH) {
                        Ok(taken) => self.upstream.put_back(data.slice(taken..)),
                        Err(e) => return self.fail(e),
                    }
                    if self.out.len() >= OUTPUT_BATCH {
                        return self.take_output();
                    }
                }
                None => {
                    if let Err(e) = pipeline.finish(&mut self.out) {
                        return self.fail(e);
                    }
                    return self.end();
                }
            }
        }
    }
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.get_mut() {
            ProxyBody::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            ProxyBody::Passthrough { prefix, upstream } => {
                if let Some(prefix) = prefix.take() {
                    return Poll::Ready(Some(Ok(Frame::data(prefix))));
                }
                upstream.poll_data(cx).map(|d| d.map(|r| r.map(Frame::data)))
            }
            // A panic while rewriting (a bug) ends this body as an error, which aborts this response
            // only; it must not unwind through hyper's connection task or further.
            ProxyBody::Tee(tee) => tee.poll(cx),
            ProxyBody::Events(stream) => {
                futures_util::Stream::poll_next(stream.as_mut(), cx).map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
            }
            ProxyBody::Observed(observed) => observed.poll(cx),
            ProxyBody::Rewrite(state) => {
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| state.poll(cx))) {
                    Ok(poll) => poll,
                    Err(panic) => {
                        state.work = Work::Lost;
                        state.abort(format!("internal error (panic): {}", crate::error::panic_message(panic.as_ref())))
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            // Not before the recording has seen the end: polled once more for it.
            ProxyBody::Passthrough { prefix, upstream } => prefix.is_none() && upstream.is_end_stream(),
            ProxyBody::Observed(observed) => observed.inner().is_end_stream(),
            other => other.is_complete(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ProxyBody::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            ProxyBody::Passthrough { prefix: None, upstream } => upstream.size_hint(),
            ProxyBody::Tee(tee) => tee.inner.size_hint(),
            ProxyBody::Observed(observed) => observed.inner().size_hint(),
            _ => SizeHint::default(),
        }
    }
}
