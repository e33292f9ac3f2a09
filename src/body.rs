//! The body pipeline: which responses are rewritten, and the streaming body that decodes, rewrites
//! and re-encodes them without ever holding a whole body.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap};
use http::{Method, StatusCode};
use http_body::{Body, Frame, SizeHint};
use tokio::time::Sleep;

use crate::codec::{self, CodecError, Decoder, Encoder, Encoding, DECODED_PIECE};
use crate::error::ReplaceError;
use crate::rewrite::{Rewriter, Rule};
use crate::skip::{SkipKey, SkipTable};
use crate::state::{PageMode, UserRules};
use crate::stats::Stats;

/// Errors that end a response body early; hyper then aborts the connection, so the client never
/// mistakes a cut body for a complete one.
pub(crate) type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// Extensions Browsersync never rewrites (resp-modifier's `defaultIgnoreTypes`), matched as
/// `\.ext(\?.*)?$` on the request URL.
const IGNORED_EXTENSIONS: &[&str] = &[
    "js", "json", "css", "png", "jpg", "jpeg", "gif", "ico", "tif", "tiff", "bmp", "webp", "psd", "svg", "woff", "ttf",
    "otf", "eot", "eps", "ps", "ai", "mp3", "wav", "aac", "m4a", "m3u", "mid", "wma", "mpg", "mpeg", "mp4", "m4v",
    "webm", "swf", "flv", "avi", "mov", "wmv", "pdf", "doc", "docx", "xls", "xlsx", "pps", "ppt", "pptx", "odt", "ods",
    "odp", "pages", "key", "rtf", "txt", "csv", "zip", "rar", "tar", "gz", "xml", "app", "exe", "jar", "dmg", "pkg",
    "iso",
];

fn ignored_url(path_and_query: &str) -> bool {
    // `\.ext(\?.*)?$`: the extension ends the path, or is followed by a query.
    let candidates = [path_and_query, path_and_query.split_once('?').map_or("", |(p, _)| p)];
    candidates
        .iter()
        .filter(|c| !c.is_empty())
        .any(|path| path.rsplit_once('.').is_some_and(|(_, ext)| IGNORED_EXTENSIONS.contains(&ext)))
}

/// Content types whose bodies carry links too (`rewriteTextTypes`).
fn is_text_type(content_type: &str) -> bool {
    let mime = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    mime == "text/css"
        || mime.contains("javascript")
        || mime.contains("ecmascript")
        || mime == "application/json"
        || mime.ends_with("+json")
        || mime == "image/svg+xml"
        || mime.ends_with("/xml")
        || mime.ends_with("+xml")
}

/// Whether a response is text that compresses well (what servers usually compress).
pub(crate) fn is_compressible(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|content_type| {
        content_type.trim_start().get(..5).is_some_and(|t| t.eq_ignore_ascii_case("text/"))
            || is_text_type(content_type)
    })
}

/// What to do with a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Bytes go through untouched, still compressed.
    Passthrough,
    /// Decode, rewrite, re-encode. With `sniff`, only if the decoded body starts like HTML.
    Rewrite { sniff: bool, decode: Encoding, encode: Encoding },
    /// An uncompressed body that is not rewritten, compressed in `encode` (a local text file).
    Compress { encode: Encoding },
}

/// The request facts the decision needs.
pub(crate) struct RequestFacts<'a> {
    pub method: &'a Method,
    pub path_and_query: &'a str,
    pub accept: Option<&'a str>,
    pub accept_encoding: Option<&'a str>,
    /// The proxy asked the upstream for an uncompressed body on the client's behalf.
    pub upstream_identity: bool,
    /// Pages only, any response, or none (a rule's `paths`, `snippetOptions`' lists).
    pub mode: PageMode,
}

/// Browsersync's request side of the choice: `Accept` mentions html and the URL is not an asset.
pub(crate) fn is_page_request(accept: Option<&str>, path_and_query: &str) -> bool {
    accept.is_some_and(|a| a.contains("html")) && !ignored_url(path_and_query)
}

/// Browsersync's choice (Accept mentions html, URL not an asset, body looks like HTML), plus the
/// text types when `rewrite_text_types` is on.
pub(crate) fn plan(req: &RequestFacts, status: StatusCode, headers: &HeaderMap, rewrite_text_types: bool) -> Plan {
    // No body, or a byte range of one: rewriting a range would corrupt the whole.
    let untouchable = req.method == Method::HEAD
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::PARTIAL_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    if untouchable || req.mode == PageMode::Skipped {
        return Plan::Passthrough;
    }
    let encoding = headers.get(header::CONTENT_ENCODING).map(|v| v.to_str().unwrap_or("?"));
    let Some(decode) = Encoding::from_content_encoding(encoding) else { return Plan::Passthrough };
    let encode = codec::choose_output(decode, &codec::accepted(req.accept_encoding), req.upstream_identity);
    let html_request = is_page_request(req.accept, req.path_and_query);
    let text_type =
        rewrite_text_types && headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(is_text_type);
    if text_type || req.mode == PageMode::Forced {
        Plan::Rewrite { sniff: false, decode, encode }
    } else if html_request {
        Plan::Rewrite { sniff: true, decode, encode }
    } else {
        Plan::Passthrough
    }
}

/// The skip decision, in one place: which of the request's rules run on this response. User rules
/// that the skip table knows found nothing in this URL's body under this validator and rule set are
/// left out; without a validator (`key` is `None`), or with a rule that calls a function (`user` is
/// `None`), every rule runs. The memo tells the body's end what to remember.
pub(crate) fn rules_to_run(
    rules: &[Rule],
    user: Option<UserRules>,
    key: Option<SkipKey>,
    table: &Arc<SkipTable>,
) -> (Vec<Rule>, Option<SkipMemo>) {
    let (Some(user), Some(key)) = (user, key) else { return (rules.to_vec(), None) };
    let never = table.never_matched(&key, user.generation);
    let mut run = Vec::with_capacity(rules.len());
    let mut bits = Vec::with_capacity(rules.len());
    for (i, rule) in rules.iter().enumerate() {
        let bit = i.checked_sub(user.first).filter(|&b| b < user.count);
        if bit.is_some_and(|b| never & 1 << b != 0) {
            continue;
        }
        run.push(rule.clone());
        bits.push(bit);
    }
    (run, Some(SkipMemo { key, generation: user.generation, skipped: never, bits, table: table.clone() }))
}

/// What a body that went through whole tells the skip table.
pub(crate) struct SkipMemo {
    key: SkipKey,
    generation: u64,
    /// The user rules skipped on this response: they still find nothing.
    skipped: u64,
    /// For each rule that ran, in order: its user-rule bit, if it has one.
    bits: Vec<Option<usize>>,
    table: Arc<SkipTable>,
}

impl SkipMemo {
    /// Remembers the user rules that replaced nothing in the whole body (`matched`: per rule run).
    pub(crate) fn remember(self, matched: &[bool]) {
        let never = self
            .bits
            .iter()
            .zip(matched)
            .filter_map(|(bit, &matched)| bit.filter(|_| !matched))
            .fold(self.skipped, |never, bit| never | 1 << bit);
        self.table.remember(self.key, self.generation, never);
    }
}

/// Whether decoded bytes start like HTML: `/^(\uFEFF|\uFFFE)?\s*<[^>]+>/i`. `None`: need more bytes.
/// Only the leading characters are decoded; the tag's end is found with `memchr`.
pub(crate) fn looks_like_html(prefix: &[u8]) -> Option<bool> {
    const MARKS: [&[u8]; 2] = ["\u{FEFF}".as_bytes(), "\u{FFFE}".as_bytes()];
    let mut at = 0;
    for mark in MARKS {
        if prefix.starts_with(mark) {
            at = mark.len();
        } else if mark.starts_with(prefix) {
            return None;
        }
    }
    loop {
        let &byte = prefix.get(at)?;
        let width = match byte {
            0x00..=0x7F => 1,
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return Some(false),
        };
        let bytes = prefix.get(at..at + width)?;
        let Some(c) = std::str::from_utf8(bytes).ok().and_then(|s| s.chars().next()) else { return Some(false) };
        if !is_js_whitespace(c) {
            break;
        }
        at += width;
    }
    if prefix[at] != b'<' {
        return Some(false);
    }
    match prefix.get(at + 1) {
        None => None,
        Some(b'>') => Some(false),
        Some(_) => memchr::memchr(b'>', &prefix[at + 2..]).map(|_| true),
    }
}

fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

/// Why a body could not go through the pipeline.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// Decoding the upstream's body, or encoding ours, failed.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// A replacement function threw.
    #[error(transparent)]
    Replace(#[from] ReplaceError),
}

/// A decoder that neither consumes nor produces would loop forever: treat it as a corrupt body.
fn stalled_decoder() -> PipelineError {
    PipelineError::Codec(CodecError::Corrupt("compressed", "decoder made no progress".into()))
}

/// decode → rewrite → encode, one chunk at a time.
pub struct Pipeline {
    /// An uncompressed body skips the decoder: its chunks are rewritten where they lie.
    identity: bool,
    decoder: Decoder,
    rewriter: Rewriter,
    encoder: Encoder,
    decoded: Vec<u8>,
    rewritten: Vec<u8>,
}

impl Pipeline {
    /// Decodes from `decode`, rewrites with `rewriter`, encodes to `encode`.
    pub fn new(decode: Encoding, encode: Encoding, rewriter: Rewriter) -> Pipeline {
        Pipeline {
            identity: decode == Encoding::Identity,
            decoder: Decoder::new(decode),
            rewriter,
            encoder: Encoder::for_upstream(encode, decode),
            decoded: Vec::with_capacity(DECODED_PIECE),
            rewritten: Vec::new(),
        }
    }

    /// Decodes `raw` into `decoded` (sniffing uses this before deciding to rewrite).
    pub fn decode(&mut self, mut raw: &[u8], decoded: &mut Vec<u8>) -> Result<(), PipelineError> {
        loop {
            let before = decoded.len();
            let consumed = self.decoder.decode(raw, decoded)?;
            raw = &raw[consumed..];
            let produced = decoded.len() - before;
            if consumed == 0 && produced == 0 && !raw.is_empty() {
                return Err(stalled_decoder());
            }
            if raw.is_empty() && produced < DECODED_PIECE {
                return Ok(());
            }
        }
    }

    /// Rewrites and encodes already-decoded bytes.
    pub fn push_decoded(&mut self, decoded: &[u8], out: &mut Vec<u8>) -> Result<(), PipelineError> {
        self.rewritten.clear();
        self.rewriter.push(decoded, &mut self.rewritten)?;
        self.encoder.encode(&self.rewritten, out)?;
        Ok(())
    }

    /// Runs compressed bytes through the whole pipeline, in bounded pieces.
    pub fn push(&mut self, mut raw: &[u8], out: &mut Vec<u8>) -> Result<(), PipelineError> {
        if self.identity {
            return self.push_decoded(raw, out);
        }
        let mut decoded = std::mem::take(&mut self.decoded);
        let result = loop {
            decoded.clear();
            let consumed = match self.decoder.decode(raw, &mut decoded) {
                Ok(n) => n,
                Err(e) => break Err(e.into()),
            };
            raw = &raw[consumed..];
            if consumed == 0 && decoded.is_empty() && !raw.is_empty() {
                break Err(stalled_decoder());
            }
            if let Err(e) = self.push_decoded(&decoded, out) {
                break Err(e);
            }
            if raw.is_empty() && decoded.len() < DECODED_PIECE {
                break Ok(());
            }
        };
        self.decoded = decoded;
        result
    }

    /// Sends what the encoder holds, for a stream that pauses.
    pub fn flush(&mut self, out: &mut Vec<u8>) -> Result<(), PipelineError> {
        Ok(self.encoder.flush(out)?)
    }

    /// Ends the body: checks the compressed stream was complete, releases what the rewriter held back and
    /// closes the encoding.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), PipelineError> {
        self.push(&[], out)?;
        self.decoder.finish()?;
        self.rewritten.clear();
        self.rewriter.finish(&mut self.rewritten)?;
        self.encoder.encode(&self.rewritten, out)?;
        self.encoder.finish(out)?;
        Ok(())
    }

    /// Match candidates left unreplaced because they grew past `max_match_bytes` (counted in the stats).
    pub fn abandoned_matches(&self) -> u64 {
        self.rewriter.abandoned_matches()
    }

    /// Whether a step may call a JS function (and so wait on Node's thread).
    pub fn calls_functions(&self) -> bool {
        self.rewriter.calls_functions()
    }

    /// For each rule, in order: whether it replaced something so far.
    pub fn matched_rules(&self) -> Vec<bool> {
        self.rewriter.matched_rules()
    }
}

pub(crate) enum Sniffed {
    /// Decoded bytes read so far, to be rewritten first.
    Html(Vec<u8>),
    /// Raw bytes read so far, to be sent first, untouched.
    NotHtml(Vec<u8>),
}

pub(crate) enum SniffError {
    Upstream(BodyError),
    Decode(PipelineError),
}

/// Reads just enough of the body to tell whether it starts like HTML.
pub(crate) async fn sniff_html(
    upstream: &mut UpstreamBody,
    pipeline: &mut Pipeline,
    limit: usize,
) -> Result<Sniffed, SniffError> {
    let mut raw = Vec::new();
    let mut decoded = Vec::new();
    loop {
        let Some(data) = upstream.next_data().await.transpose().map_err(SniffError::Upstream)? else {
            let html = looks_like_html(&decoded) == Some(true);
            return Ok(if html { Sniffed::Html(decoded) } else { Sniffed::NotHtml(raw) });
        };
        raw.extend_from_slice(&data);
        // Nothing has been sent yet, so a body we cannot decode becomes a 502 that says why.
        pipeline.decode(&data, &mut decoded).map_err(SniffError::Decode)?;
        match looks_like_html(&decoded) {
            Some(true) => return Ok(Sniffed::Html(decoded)),
            Some(false) => return Ok(Sniffed::NotHtml(raw)),
            None if decoded.len() > limit => return Ok(Sniffed::NotHtml(raw)),
            None => {}
        }
    }
}

/// Output is handed to hyper once this much is ready, even if the upstream has more.
const OUTPUT_BATCH: usize = 64 * 1024;

/// An upstream body with an idle timeout: a stalled upstream becomes an error, not a hung client.
/// Its failure is logged once, with the URL, whatever the body goes through afterwards.
pub(crate) struct UpstreamBody {
    inner: Source,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
    stats: Arc<Stats>,
    url: String,
}

/// Where the bytes come from: the target's response, or a local file (`serveStatic`).
enum Source {
    Http(hyper::body::Incoming),
    /// `len` bytes from the file's position, in chunks of [`FILE_CHUNK`].
    /// Boxed: a file reader is large, and every proxied body would carry its size.
    File(Box<tokio_util::io::ReaderStream<tokio::io::Take<tokio::fs::File>>>),
}

/// How much of a local file is read at once: one read per chunk, each a trip to the blocking pool.
const FILE_CHUNK: usize = 64 * 1024;

impl UpstreamBody {
    pub(crate) fn new(inner: hyper::body::Incoming, idle: Duration, stats: Arc<Stats>, url: String) -> UpstreamBody {
        UpstreamBody { inner: Source::Http(inner), idle, deadline: Box::pin(tokio::time::sleep(idle)), stats, url }
    }

    /// `len` bytes of `file` from its current position, streamed; `path` names it in errors.
    pub(crate) fn file(file: std::fs::File, len: u64, idle: Duration, stats: Arc<Stats>, path: String) -> UpstreamBody {
        use tokio::io::AsyncReadExt;
        let reader = tokio::fs::File::from_std(file).take(len);
        let inner = Source::File(Box::new(tokio_util::io::ReaderStream::with_capacity(reader, FILE_CHUNK)));
        UpstreamBody { inner, idle, deadline: Box::pin(tokio::time::sleep(idle)), stats, url: path }
    }

    fn poll_data(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, BodyError>>> {
        let polled = self.poll_upstream(cx);
        if let Poll::Ready(Some(Err(e))) = &polled {
            self.stats.add_upstream_error();
            self.stats.log_error(&format!("upstream body of {} failed: {e}", self.url));
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
        };
        loop {
            match Pin::new(&mut *inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    self.deadline.as_mut().reset(tokio::time::Instant::now() + self.idle);
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                    // Trailers are dropped: the body may have changed under them.
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(Box::new(e)))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => {
                    if self.deadline.as_mut().poll(cx).is_ready() {
                        let msg = format!("upstream sent nothing for {} ms", self.idle.as_millis());
                        return Poll::Ready(Some(Err(msg.into())));
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    pub(crate) async fn next_data(&mut self) -> Option<Result<Bytes, BodyError>> {
        std::future::poll_fn(|cx| self.poll_data(cx)).await
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Source::Http(inner) => inner.size_hint(),
            Source::File(_) => SizeHint::default(),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Source::Http(inner) => inner.is_end_stream(),
            Source::File(_) => false,
        }
    }
}

use std::future::Future;

/// The body the proxy answers with.
pub(crate) enum ProxyBody {
    Full(Option<Bytes>),
    Passthrough { prefix: Option<Bytes>, upstream: UpstreamBody },
    Rewrite(Box<RewriteState>),
    Tee(Box<Tee>),
}

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
    panic_probe: bool,
    frames_sent: u64,
    /// Told what the rules found once the whole body went through.
    skip_memo: Option<SkipMemo>,
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
}

/// One pipeline step: the decoded start of a page, raw upstream bytes, or the body's end.
enum Step {
    Decoded(Vec<u8>),
    Raw(Bytes),
    Finish,
}

impl Step {
    fn run(self, mut pipeline: Pipeline, mut out: Vec<u8>) -> StepOutcome {
        let result = match &self {
            Step::Decoded(decoded) => pipeline.push_decoded(decoded, &mut out),
            Step::Raw(raw) => pipeline.push(raw, &mut out),
            Step::Finish => pipeline.finish(&mut out),
        };
        StepOutcome { pipeline, out, result }
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
    pub(crate) fn full(bytes: impl Into<Bytes>) -> ProxyBody {
        ProxyBody::Full(Some(bytes.into()))
    }
}

impl RewriteState {
    pub(crate) fn new(
        upstream: UpstreamBody,
        pipeline: Pipeline,
        out: Vec<u8>,
        stats: Arc<Stats>,
        url: String,
        panic_probe: bool,
    ) -> RewriteState {
        RewriteState {
            upstream,
            offload: pipeline.calls_functions(),
            work: Work::Ready(pipeline),
            out,
            finished: false,
            stats,
            url,
            panic_probe,
            frames_sent: 0,
            skip_memo: None,
        }
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
            let data = match self.upstream.poll_data(cx) {
                Poll::Ready(Some(Ok(_))) if self.panic_probe && self.frames_sent > 0 => {
                    panic!("panic probe: body phase")
                }
                Poll::Ready(Some(Ok(data))) => Some(data),
                Poll::Ready(Some(Err(e))) => {
                    self.finished = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => None,
                Poll::Pending => {
                    // The encoder alone runs here: no rule, so no JS, is involved in a flush.
                    if let Err(e) = pipeline.flush(&mut self.out) {
                        return self.fail(e);
                    }
                    return if self.out.is_empty() { Poll::Pending } else { self.take_output() };
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
                    if let Err(e) = pipeline.push(&data, &mut self.out) {
                        return self.fail(e);
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
            ProxyBody::Full(bytes) => bytes.is_none(),
            ProxyBody::Passthrough { prefix, upstream } => prefix.is_none() && upstream.is_end_stream(),
            ProxyBody::Rewrite(_) => false,
            ProxyBody::Tee(tee) => tee.inner.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ProxyBody::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            ProxyBody::Passthrough { prefix: None, upstream } => upstream.size_hint(),
            ProxyBody::Tee(tee) => tee.inner.size_hint(),
            _ => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_html_like_resp_modifier() {
        assert_eq!(looks_like_html(b"<!doctype html><p>"), Some(true));
        assert_eq!(looks_like_html("\u{FEFF}  \n<html>".as_bytes()), Some(true));
        assert_eq!(looks_like_html(b"  <htm"), None);
        assert_eq!(looks_like_html(b"   "), None);
        assert_eq!(looks_like_html(b"{\"a\": 1}"), Some(false));
        assert_eq!(looks_like_html(b"<>"), Some(false));
    }

    #[test]
    fn browsersync_ignores_assets_by_extension() {
        assert!(ignored_url("/app.js"));
        assert!(ignored_url("/app.css?v=1"));
        assert!(ignored_url("/a.iso"));
        assert!(!ignored_url("/"));
        assert!(!ignored_url("/page.html"));
        assert!(!ignored_url("/js/page"));
    }

    #[test]
    fn plans_like_browsersync() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_ENCODING, "gzip".parse().unwrap());
        let req = |accept| RequestFacts {
            method: &Method::GET,
            path_and_query: "/",
            accept: Some(accept),
            accept_encoding: Some("br, gzip"),
            upstream_identity: false,
            mode: PageMode::Pages,
        };
        assert_eq!(
            plan(&req("text/html"), StatusCode::OK, &headers, false),
            Plan::Rewrite { sniff: true, decode: Encoding::Gzip, encode: Encoding::Gzip }
        );
        assert_eq!(plan(&req("*/*"), StatusCode::OK, &headers, false), Plan::Passthrough);
        headers.insert(header::CONTENT_TYPE, "text/css".parse().unwrap());
        assert!(matches!(plan(&req("*/*"), StatusCode::OK, &headers, true), Plan::Rewrite { sniff: false, .. }));
        assert_eq!(plan(&req("text/html"), StatusCode::NOT_MODIFIED, &headers, false), Plan::Passthrough);
    }
}
