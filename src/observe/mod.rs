//! What the proxy did with each request, as one record: built while the request runs its phases,
//! finished when its body ends (or fails), then handed to every consumer at once: the request log,
//! `stats()`'s histograms and per-rule counters, `onRequest`, and the inspector's ring buffer.
//!
//! Owners: the record and its fan-out (this file, `body.rs`, `log.rs`, `latency.rs`), the inspector
//! (`inspector.rs`).
//!
//! Cost when nobody reads records (no request log, no sink): per request, one boxed body wrapper,
//! two clock reads per body chunk in the pipeline, one histogram lock when the body ends; no record
//! is built (its strings are made only for a consumer).

mod latency;
mod log;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use http::header::{self, HeaderValue};
use http::{Method, Request, Response, Uri};
use serde::Serialize;

pub(crate) mod inspector;
pub mod mask;

pub use latency::{LatencySnapshot, ObserveSnapshot, RuleCount};
pub use log::LogFormat;
pub use mask::{mask, mask_headers, mask_url};

use crate::body::{BodyReport, BodyWatcher, ObservedBody, ProxyBody};
pub use crate::body::{Preview, RuleMatches};
use crate::header_pairs::header_pairs;
use crate::stats::Stats;

/// One exchange as the proxy saw it. Serialized as is for `logFormat: 'json'`, `onRequest` and the
/// inspector, so field names are camelCase and stable.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExchangeRecord {
    /// Increasing per server, from 1.
    pub id: u64,
    /// When the request arrived, milliseconds since the Unix epoch.
    pub started_at: u64,
    /// Request method.
    pub method: String,
    /// Path and query as the client asked.
    pub url: String,
    /// Status sent to the client (0 if the exchange failed before its headers).
    pub status: u16,
    /// Who answered: `proxy`, `local` (serveStatic), `middleware`, `replay`, `error`.
    pub source: &'static str,
    /// Content-Encoding from the upstream and to the client (`identity` when none).
    pub coding_in: String,
    /// See `coding_in`.
    pub coding_out: String,
    /// Body bytes received from the upstream, as they came (compressed).
    pub bytes_in: u64,
    /// Body bytes sent to the client, as they went (compressed).
    pub bytes_out: u64,
    /// Milliseconds to the upstream's response headers (`None` without an upstream exchange).
    pub upstream_ms: Option<f64>,
    /// Milliseconds from arrival to the body's end.
    pub total_ms: f64,
    /// Milliseconds spent rewriting and encoding the body (`None` when passed through).
    pub rewrite_ms: Option<f64>,
    /// See `rewrite_ms`.
    pub encode_ms: Option<f64>,
    /// Whether the body went through the rewrite rules.
    pub rewritten: bool,
    /// Whether the exchange was recorded to a cassette.
    pub recorded: bool,
    /// Rules that matched, with how many times (rules that matched 0 times are left out).
    pub rules: Vec<RuleMatches>,
    /// Request headers as the client sent them, secrets masked.
    pub request_headers: Vec<(String, String)>,
    /// Response headers as they went to the client, secrets masked.
    pub response_headers: Vec<(String, String)>,
    /// Why the exchange failed, if it did.
    pub error: Option<String>,
    /// The first KiB of the decoded body before and after rewriting, for the inspector's diff view
    /// (filled only while the inspector is on; lossy UTF-8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
}

/// A consumer of finished records (the inspector's ring buffer, `onRequest`'s channel). `push` runs
/// on a tokio worker at the end of every response: it must not block (hand off, or drop and count).
pub trait RecordSink: Send + Sync {
    /// Takes one finished record.
    fn push(&self, record: Arc<ExchangeRecord>);

    /// Records this sink dropped because its consumer fell behind (`stats().droppedRecords`).
    fn dropped(&self) -> u64 {
        0
    }
}

/// What the options say about observing (`serverTiming`, `logRequests`, `logFormat`, `onRequest`).
#[derive(Clone)]
pub struct ObserveConfig {
    /// Send `Server-Timing` on answers (default true).
    pub server_timing: bool,
    /// One log line per request at `logLevel: 'info'` (always at `'debug'`).
    pub log_requests: bool,
    /// `logFormat`: text lines or JSON lines.
    pub log_format: LogFormat,
    /// Where finished records go besides the log and the stats (`onRequest`, the inspector).
    pub sinks: Vec<Arc<dyn RecordSink>>,
    /// Header names masked besides the policy's (`record.redact.headers`: one policy for the
    /// cassette and for what the proxy shows).
    pub secret_headers: Vec<String>,
}

impl Default for ObserveConfig {
    fn default() -> ObserveConfig {
        ObserveConfig {
            server_timing: true,
            log_requests: false,
            log_format: LogFormat::Text,
            sinks: Vec::new(),
            secret_headers: Vec::new(),
        }
    }
}

impl std::fmt::Debug for ObserveConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObserveConfig")
            .field("server_timing", &self.server_timing)
            .field("log_requests", &self.log_requests)
            .field("log_format", &self.log_format)
            .field("sinks", &self.sinks.len())
            .finish()
    }
}

/// What the phases learn that the record needs: gathered in the request's context
/// (`RequestCtx::record`) and attached to the answer once, in the response's extensions, where
/// [`Observer::respond`] takes them out before the response goes out. Answers made before a request
/// has a context (the inspector's, error pages) carry their own.
#[derive(Debug, Clone, Default)]
pub(crate) struct Facts {
    /// Who answered (`None`: the target, `proxy`).
    pub source: Option<&'static str>,
    /// Time from sending the upstream request to its response headers.
    pub upstream: Option<Duration>,
    /// The upstream's (or file's, or middleware's) `Content-Encoding`.
    pub coding_in: Option<HeaderValue>,
    /// The body went through the rewrite rules.
    pub rewritten: bool,
    /// A middleware's `next()` answer handed back as it came: its own hop was recorded already.
    pub passed_on: bool,
    /// The exchange went to a cassette (record/replay sets it).
    pub recorded: bool,
    /// Why the request failed (error answers).
    pub error: Option<String>,
}

impl Facts {
    /// `response`, carrying these facts to [`Observer::respond`].
    pub(crate) fn attach(self, mut response: Response<ProxyBody>) -> Response<ProxyBody> {
        response.extensions_mut().insert(self);
        response
    }
}

/// The [`Facts`] of a response head, added if it has none yet.
pub(crate) fn facts(extensions: &mut http::Extensions) -> &mut Facts {
    extensions.get_or_insert_default::<Facts>()
}

/// A request as it arrived, until its answer ends.
pub(crate) struct Begun {
    started: Instant,
    started_at: SystemTime,
    method: Method,
    uri: Uri,
    /// Only when some consumer reads records.
    request_headers: Option<Vec<(String, String)>>,
}

/// Everything known when the headers went out; the body adds the rest.
pub(crate) struct Trace {
    observer: Arc<Observer>,
    begun: Begun,
    facts: Facts,
    status: u16,
    coding_out: Option<HeaderValue>,
    /// Headers sent; only when some consumer reads records.
    response_headers: Option<Vec<(String, String)>>,
}

impl BodyWatcher for Trace {
    fn ended(self: Box<Self>, report: BodyReport, bytes_out: u64, error: Option<String>) {
        let observer = self.observer.clone();
        observer.end(*self, report, bytes_out, error);
    }
}

/// The fan-out of finished records, one per server (owned by `Shared`).
pub(crate) struct Observer {
    config: ObserveConfig,
    /// Request lines go to the log (`logRequests`, or `logLevel: 'debug'`).
    log_requests: bool,
    stats: Arc<Stats>,
    next_id: AtomicU64,
    latency: latency::Latency,
    /// Whether pipelines keep the preview (the inspector turns it on).
    preview: AtomicBool,
}

impl Observer {
    pub(crate) fn new(config: ObserveConfig, stats: Arc<Stats>) -> Observer {
        let log_requests = stats.logs() && (config.log_requests || stats.debug_enabled());
        Observer {
            config,
            log_requests,
            stats,
            next_id: AtomicU64::new(1),
            latency: latency::Latency::default(),
            preview: AtomicBool::new(false),
        }
    }

    /// Whether anyone reads whole records (else none is built).
    fn builds_records(&self) -> bool {
        self.log_requests || !self.config.sinks.is_empty()
    }

    /// Whether pipelines keep the first KiB before and after rewriting for the record.
    pub(crate) fn wants_preview(&self) -> bool {
        self.preview.load(Ordering::Relaxed)
    }

    /// Turns previews on or off for bodies that start from now on (the inspector's switch).
    pub(crate) fn set_preview(&self, on: bool) {
        self.preview.store(on, Ordering::Relaxed);
    }

    /// Notes a request as it arrives.
    pub(crate) fn begin<B>(&self, req: &Request<B>) -> Begun {
        Begun {
            started: Instant::now(),
            started_at: SystemTime::now(),
            method: req.method().clone(),
            uri: req.uri().clone(),
            request_headers: (!self.config.sinks.is_empty()).then(|| header_pairs(req.headers())),
        }
    }

    /// The answer as it goes out: `Server-Timing` added (with what is known now), its body wrapped so
    /// that the record is finished when it ends.
    pub(crate) fn respond(self: &Arc<Self>, begun: Begun, response: Response<ProxyBody>) -> Response<ProxyBody> {
        let (mut head, body) = response.into_parts();
        let facts = head.extensions.remove::<Facts>().unwrap_or_default();
        if facts.passed_on {
            // A middleware's `next()` answer was recorded, and timed, on its own hop.
            return Response::from_parts(head, body);
        }
        // A WebSocket's 101 is recorded (its tunnel is not), without a header a browser never reads.
        if self.config.server_timing && head.status != http::StatusCode::SWITCHING_PROTOCOLS {
            head.headers.append(header::HeaderName::from_static("server-timing"), server_timing(&begun, &facts));
        }
        let trace = Trace {
            observer: self.clone(),
            status: head.status.as_u16(),
            coding_out: head.headers.get(header::CONTENT_ENCODING).cloned(),
            response_headers: (!self.config.sinks.is_empty()).then(|| header_pairs(&head.headers)),
            begun,
            facts,
        };
        Response::from_parts(head, ProxyBody::Observed(Box::new(ObservedBody::new(body, Box::new(trace)))))
    }

    /// Hands a finished exchange to the stats, the log and the sinks.
    fn end(&self, trace: Trace, report: BodyReport, bytes_out: u64, error: Option<String>) {
        let total = trace.begun.started.elapsed();
        let Trace { begun, facts, status, coding_out, response_headers, .. } = trace;
        self.latency.record(facts.upstream, total, &report.rules);
        if !self.builds_records() {
            return;
        }
        let coding = |value: Option<HeaderValue>| {
            value.map_or_else(|| "identity".to_string(), |v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        let rewritten = facts.rewritten && report.times.is_some();
        let record = ExchangeRecord {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            started_at: begun.started_at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64),
            method: begun.method.to_string(),
            // The query's secrets, and a key anywhere in the path (`/v1/keys/ghp_...`).
            url: mask::mask_text(&mask_url(
                &begun.uri.path_and_query().map_or_else(|| begun.uri.to_string(), |p| p.to_string()),
            ))
            .into_owned(),
            status,
            source: facts.source.unwrap_or("proxy"),
            coding_in: coding(facts.coding_in),
            coding_out: coding(coding_out),
            bytes_in: report.bytes_in.unwrap_or(0),
            bytes_out,
            upstream_ms: facts.upstream.map(ms),
            total_ms: ms(total),
            rewrite_ms: report.times.filter(|_| rewritten).map(|(rewrite, _)| ms(rewrite)),
            encode_ms: report.times.map(|(_, encode)| ms(encode)),
            rewritten,
            recorded: facts.recorded,
            rules: report.rules,
            // Masked here, so that no consumer (log line, `onRequest`, inspector) ever sees a secret.
            request_headers: masked(begun.request_headers.unwrap_or_default(), &self.config.secret_headers),
            response_headers: masked(response_headers.unwrap_or_default(), &self.config.secret_headers),
            error: facts.error.or(error).map(|e| mask::mask_text(&e).into_owned()),
            preview: report.preview.map(masked_preview),
        };
        self.finish(record);
    }

    /// Fans a finished record out to the request log and every sink.
    pub(crate) fn finish(&self, record: ExchangeRecord) {
        if self.log_requests {
            match self.config.log_format {
                LogFormat::Text => self.stats.log_error(&log::text_line(&record)),
                LogFormat::Json => self.stats.log_raw(&log::json_line(&record)),
            }
        }
        if self.config.sinks.is_empty() {
            return;
        }
        let record = Arc::new(record);
        for sink in &self.config.sinks {
            sink.push(record.clone());
        }
    }

    /// Latency percentiles and per-rule counters so far.
    pub(crate) fn snapshot(&self) -> ObserveSnapshot {
        let mut snapshot = self.latency.snapshot();
        snapshot.dropped_records = self.config.sinks.iter().map(|sink| sink.dropped()).sum();
        snapshot
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// `upstream;dur=<ms>` (time to the upstream's headers) and `proxy;dur=<ms>` (the rest of the time
/// before the headers went out: phases, hooks, sniffing and rewriting the start of the body).
fn server_timing(begun: &Begun, facts: &Facts) -> HeaderValue {
    let before_headers = begun.started.elapsed();
    let value = match facts.upstream {
        Some(upstream) => {
            format!("upstream;dur={:.1}, proxy;dur={:.1}", ms(upstream), ms(before_headers.saturating_sub(upstream)))
        }
        None => format!("proxy;dur={:.1}", ms(before_headers)),
    };
    // Digits, dots and names only: always a valid value; taken without a copy.
    HeaderValue::from_maybe_shared(bytes::Bytes::from(value)).unwrap_or(HeaderValue::from_static("proxy"))
}

/// A body preview as it may be shown: key-shaped strings masked, and where the preview was cut, its
/// last word dropped (the start of a key the cut left too short to look like one).
fn masked_preview(preview: crate::body::Preview) -> crate::body::Preview {
    let clean = |text: String| {
        let cut = text.len() + 4 >= crate::body::PREVIEW_BYTES;
        let kept =
            if cut { text.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || "_-".contains(c)) } else { &text };
        mask::mask_text(kept).into_owned()
    };
    crate::body::Preview { before: clean(preview.before), after: clean(preview.after) }
}

/// The policy's masking, plus the header names of the server's `record.redact.headers`.
fn masked(mut headers: Vec<(String, String)>, also: &[String]) -> Vec<(String, String)> {
    mask_headers(&mut headers);
    for (name, value) in &mut headers {
        if also.iter().any(|secret| secret.eq_ignore_ascii_case(name)) {
            *value = mask::REDACTED.to_string();
        }
    }
    headers
}
