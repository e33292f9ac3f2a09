//! What JS reads back from a running server: `stats()` and `recording()`/`recordings()`, each built
//! from the core's snapshot by a `From` impl.

use napi_derive::napi;

use crate::cassette::record::RecordingSnapshot;
use crate::observe::{LatencySnapshot, ObserveSnapshot, RuleCount};
use crate::StatsSnapshot;

/// What the server has done so far (`server.stats()`); counts since start.
#[napi(object)]
pub struct ProxyStats {
    /// Requests answered (proxied, local files, middleware, replayed, error pages).
    pub requests: f64,
    /// Bodies that went through the rules (pages, and text types with `rewriteTextTypes`).
    pub rewritten: f64,
    /// Bodies passed through untouched (images, scripts, anything the rules do not apply to).
    pub passed_through: f64,
    /// Requests the target could not answer (refused, timed out, TLS refused): each a 502 page.
    pub upstream_errors: f64,
    /// Match candidates longer than `maxMatchBytes`, left unreplaced.
    pub abandoned_matches: f64,
    /// WebSocket connections tunnelled.
    pub websockets: f64,
    /// Milliseconds to the target's response headers (answers with an upstream exchange only).
    pub upstream_latency: LatencyStats,
    /// Milliseconds from a request's arrival to the end of its answer's body.
    pub total_latency: LatencyStats,
    /// Matches per rule over all requests, most first; rules that never matched are left out.
    pub rules: Vec<RuleStats>,
    /// Exchange records `onRequest` fell too far behind to take, dropped.
    pub dropped_records: f64,
}

/// Percentiles of one kind of time (HDR histogram, 1% precision); 0 before the first sample.
#[napi(object)]
pub struct LatencyStats {
    pub count: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// How often one rule matched.
#[napi(object)]
pub struct RuleStats {
    /// The rule's label: its pattern (`/x/g`, `"text"`), `snippet` or `link rewrite`.
    pub rule: String,
    pub matches: f64,
}

impl From<(StatsSnapshot, ObserveSnapshot)> for ProxyStats {
    /// The server's counters and what its observers add to them.
    fn from((counts, observed): (StatsSnapshot, ObserveSnapshot)) -> ProxyStats {
        ProxyStats {
            requests: counts.requests as f64,
            rewritten: counts.rewritten as f64,
            passed_through: counts.passed_through as f64,
            upstream_errors: counts.upstream_errors as f64,
            abandoned_matches: counts.abandoned_matches as f64,
            websockets: counts.websockets as f64,
            upstream_latency: observed.upstream.into(),
            total_latency: observed.total.into(),
            rules: observed.rules.into_iter().map(RuleStats::from).collect(),
            dropped_records: observed.dropped_records as f64,
        }
    }
}

impl From<LatencySnapshot> for LatencyStats {
    fn from(l: LatencySnapshot) -> LatencyStats {
        LatencyStats { count: l.count as f64, p50_ms: l.p50_ms, p99_ms: l.p99_ms }
    }
}

impl From<RuleCount> for RuleStats {
    fn from(r: RuleCount) -> RuleStats {
        RuleStats { rule: r.rule, matches: r.matches as f64 }
    }
}

/// `server.recording()`.
#[napi(object)]
pub struct RecordingStatus {
    /// The cassette.
    pub path: String,
    /// Exchanges written.
    pub written: f64,
    /// Exchanges refused because a body held a key-shaped string.
    pub refused: f64,
    /// The last refusal's reason, naming the field.
    pub last_refusal: Option<String>,
    /// Set when a write failed: nothing more is recorded.
    pub error: Option<String>,
    /// In `server.recordings()`: the route prefix whose `record` this is (absent for the server's own).
    pub route: Option<String>,
}

impl From<RecordingSnapshot> for RecordingStatus {
    fn from(r: RecordingSnapshot) -> RecordingStatus {
        RecordingStatus {
            path: r.path,
            written: r.written as f64,
            refused: r.refused as f64,
            last_refusal: r.last_refusal,
            error: r.error,
            route: r.route,
        }
    }
}
