//! The live inspector: the last exchanges in a bounded ring buffer, a per-rule table, and the page
//! that shows them, served at the proxy's own origin under a reserved prefix (`/__devproxy/`).
//!
//! Pushing a record is a short lock and, only when a page is open, a broadcast send: the proxy
//! never waits for a viewer. A viewer that reads too slowly loses records (it is told how many)
//! rather than holding them up. Everything shown is rendered from the records with secret headers
//! masked ([`super::mask`]), and the page's assets are compiled in: no CDN, no network.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use serde_json::Value;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;

use super::mask::{is_secret, REDACTED};
use super::{ExchangeRecord, Observer, RecordSink};
use crate::body::ProxyBody;
use crate::error::ConfigError;
use crate::lifecycle::Phase;

/// Records a viewer may be behind before it loses the oldest (each is an `Arc`: the backlog costs
/// pointers, not copies).
const LIVE_BACKLOG: usize = 256;
/// A comment line this often keeps an idle event stream open through intermediaries.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// Rows of the per-rule table; rules past them (a long session of `addRule`) are summed in one row.
const MAX_RULE_ROWS: usize = 1000;
/// The row that sums the rules past [`MAX_RULE_ROWS`].
const OTHER_RULES: &str = "(other rules)";

const PAGE: &str = include_str!("inspector/index.html");
const SCRIPT: &str = include_str!("inspector/inspector.js");
const STYLE: &str = include_str!("inspector/inspector.css");
/// Only the page's own assets and API: no inline script, no other origin, no framing.
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                        img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One server's inspector.
pub(crate) struct Inspector {
    /// The reserved prefix, ending in `/`.
    prefix: String,
    /// Whether clients on other machines are answered (`inspector.remote`).
    remote: bool,
    capacity: usize,
    /// The last `capacity` records, oldest first.
    ring: Mutex<VecDeque<Arc<ExchangeRecord>>>,
    /// Per rule, since the server started (not only what the ring holds).
    rules: Mutex<HashMap<String, RuleTotals>>,
    /// New records and waits, to the open event streams.
    live: broadcast::Sender<LiveEvent>,
    /// Requests still waiting for the target's answer past [`crate::proxy::STILL_WAITING`], by key.
    waiting: Mutex<BTreeMap<u64, Value>>,
    /// The key of the next wait.
    next_wait: AtomicU64,
    /// Records pushed since the server started.
    total: AtomicU64,
    /// Records the event streams lost to slow viewers.
    dropped: AtomicU64,
    /// Open event streams. Records keep their before/after preview only while there is one: it
    /// costs a copy of each body's first KiB that nobody would look at otherwise.
    viewers: Mutex<usize>,
}

/// The `source` of the inspector's own answers, which it leaves out of its list.
pub(crate) const SOURCE: &str = "inspector";

/// A rule's row in the per-rule table.
#[derive(Debug, Default, Clone)]
struct RuleTotals {
    /// Bodies it matched in.
    exchanges: u64,
    /// Replacements it made.
    matches: u64,
    /// Rewrite time of the bodies it matched in (a body's time is not split between its rules).
    rewrite_ms: f64,
}

impl RecordSink for Inspector {
    fn push(&self, record: Arc<ExchangeRecord>) {
        if record.source == SOURCE {
            return;
        }
        self.total.fetch_add(1, Ordering::Relaxed);
        if !record.rules.is_empty() {
            self.tally(&record);
        }
        // Without a viewer there is no one to send to; `send` would only fail.
        if self.live.receiver_count() > 0 {
            let _ = self.live.send(LiveEvent::Record(record.clone()));
        }
        let evicted = {
            let mut ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
            let evicted = if ring.len() >= self.capacity { ring.pop_front() } else { None };
            ring.push_back(record);
            evicted
        };
        // The evicted record's memory is freed here, outside the lock.
        drop(evicted);
    }

    fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl Inspector {
    pub(crate) fn new(config: &InspectorConfig) -> Inspector {
        Inspector {
            prefix: config.path.clone(),
            remote: config.remote,
            capacity: config.size.max(1),
            ring: Mutex::new(VecDeque::with_capacity(config.size.max(1))),
            rules: Mutex::new(HashMap::new()),
            live: broadcast::channel(LIVE_BACKLOG).0,
            waiting: Mutex::new(BTreeMap::new()),
            next_wait: AtomicU64::new(1),
            total: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            viewers: Mutex::new(0),
        }
    }

    /// Whether a request path is the inspector's: under the prefix, or the prefix without its `/`.
    pub(crate) fn owns(&self, path: &str) -> bool {
        path.starts_with(&self.prefix) || path == &self.prefix[..self.prefix.len() - 1]
    }

    /// Whether a client at `ip` may see the inspector: loopback clients always, others only with
    /// `inspector.remote` (the page shows URLs, headers and body previews).
    pub(crate) fn answers(&self, ip: Option<std::net::IpAddr>) -> bool {
        self.remote || ip.is_some_and(|ip| ip.to_canonical().is_loopback())
    }

    /// The answer to a client the inspector does not serve.
    pub(crate) fn refuse_remote() -> Response<ProxyBody> {
        plain(
            StatusCode::FORBIDDEN,
            "the inspector answers clients on this machine only; inspector: { remote: true } serves it to others\n",
        )
    }

    fn tally(&self, record: &ExchangeRecord) {
        let mut rules = self.rules.lock().unwrap_or_else(PoisonError::into_inner);
        for rule in &record.rules {
            let row = match rules.get_mut(&rule.rule) {
                Some(row) => row,
                None => {
                    let name = if rules.len() < MAX_RULE_ROWS { rule.rule.as_str() } else { OTHER_RULES };
                    rules.entry(name.to_string()).or_default()
                }
            };
            row.exchanges += 1;
            row.matches += rule.matches;
            row.rewrite_ms += record.rewrite_ms.unwrap_or(0.0);
        }
    }

    /// Shows `method url` as waiting for the target's answer until the guard is dropped.
    pub(crate) fn waiting(self: &Arc<Self>, method: &str, url: &str) -> WaitingGuard {
        let key = self.next_wait.fetch_add(1, Ordering::Relaxed);
        let started_at =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let url = super::mask_url(url);
        let entry = serde_json::json!({ "key": key, "method": method, "url": url, "startedAt": started_at });
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner).insert(key, entry.clone());
        if self.live.receiver_count() > 0 {
            let _ = self.live.send(LiveEvent::Waiting(Arc::new(entry)));
        }
        WaitingGuard { inspector: self.clone(), key }
    }

    /// The records kept, oldest first.
    fn records(&self) -> Vec<Arc<ExchangeRecord>> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect()
    }

    /// What `api/exchanges` answers and an event stream starts with.
    fn snapshot_json(&self) -> Value {
        let records: Vec<Value> = self.records().iter().map(|r| record_json(r)).collect();
        serde_json::json!({
            "capacity": self.capacity,
            "total": self.total.load(Ordering::Relaxed),
            "dropped": self.dropped.load(Ordering::Relaxed),
            "records": records,
            "waiting": self.waiting.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect::<Vec<_>>(),
        })
    }

    /// The per-rule table, most matches first.
    fn rules_json(&self) -> Value {
        let mut rows: Vec<(String, RuleTotals)> = {
            let rules = self.rules.lock().unwrap_or_else(PoisonError::into_inner);
            rules.iter().map(|(rule, totals)| (rule.clone(), totals.clone())).collect()
        };
        rows.sort_by(|a, b| b.1.matches.cmp(&a.1.matches).then_with(|| a.0.cmp(&b.0)));
        let rows: Vec<Value> = rows
            .into_iter()
            .map(|(rule, t)| {
                serde_json::json!({ "rule": rule, "exchanges": t.exchanges, "matches": t.matches, "rewriteMs": t.rewrite_ms })
            })
            .collect();
        serde_json::json!({ "rules": rows })
    }

    /// Answers a request under the prefix (see [`Inspector::owns`]): the page, its assets, the
    /// snapshot, the event stream and the per-rule table. GET and HEAD only.
    /// `observer`: told to keep previews while an event stream is open.
    pub(crate) fn serve<B>(
        self: &Arc<Self>,
        req: &Request<B>,
        phase: watch::Receiver<Phase>,
        observer: Weak<Observer>,
    ) -> Response<ProxyBody> {
        let path = req.uri().path();
        let Some(rest) = path.strip_prefix(&self.prefix) else {
            // The prefix without its `/`: relative asset URLs need the `/`.
            let location = match req.uri().query() {
                Some(query) => format!("{}?{query}", self.prefix),
                None => self.prefix.clone(),
            };
            return answer(StatusCode::PERMANENT_REDIRECT, "text/plain; charset=utf-8")
                .header(header::LOCATION, location)
                .body(ProxyBody::full(Bytes::new()))
                .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR, "bad inspector path\n"));
        };
        if req.method() != Method::GET && req.method() != Method::HEAD {
            let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "the inspector answers GET and HEAD only\n");
            response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        let (content_type, body) = match rest {
            "" | "index.html" => {
                let mut response = asset("text/html; charset=utf-8", PAGE);
                let headers = response.headers_mut();
                headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PAGE_CSP));
                headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
                return response;
            }
            "inspector.js" => return asset("text/javascript; charset=utf-8", SCRIPT),
            "inspector.css" => return asset("text/css; charset=utf-8", STYLE),
            "api/exchanges" => ("application/json", self.snapshot_json().to_string()),
            "api/rules" => ("application/json", self.rules_json().to_string()),
            "api/events" => return self.events(phase, observer),
            _ => return plain(StatusCode::NOT_FOUND, "no such inspector page\n"),
        };
        full(answer(StatusCode::OK, content_type), body)
    }

    /// `api/events`: Server-Sent Events, a `snapshot` first, then a `record` per new exchange,
    /// `waiting`/`answered` when a request starts/stops waiting long for the target, `dropped` when
    /// this viewer fell behind; ends when the server stops.
    fn events(self: &Arc<Self>, phase: watch::Receiver<Phase>, observer: Weak<Observer>) -> Response<ProxyBody> {
        // Subscribed before the snapshot is taken: a record pushed in between is sent twice at
        // worst (the page keys records by id), never lost.
        let rx = self.live.subscribe();
        let first = format!("retry: 1000\nevent: snapshot\ndata: {}\n\n", self.snapshot_json());
        self.viewer(&observer, true);
        let live = Live { inspector: self.clone(), rx, phase, first: Some(Bytes::from(first)), observer };
        let stream = futures_util::stream::unfold(live, Live::next);
        answer(StatusCode::OK, "text/event-stream")
            .header("x-accel-buffering", "no")
            .body(ProxyBody::Events(Box::pin(stream)))
            .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR, "event stream failed\n"))
    }
}

impl Inspector {
    /// A viewer came or went: previews are kept while there is one (under the lock, so that a
    /// viewer leaving cannot switch them off after another one came).
    fn viewer(&self, observer: &Weak<Observer>, joined: bool) {
        let mut viewers = self.viewers.lock().unwrap_or_else(PoisonError::into_inner);
        *viewers = if joined { *viewers + 1 } else { viewers.saturating_sub(1) };
        if let Some(observer) = observer.upgrade() {
            observer.set_preview(*viewers > 0);
        }
    }
}

/// What an open event stream is told.
#[derive(Clone)]
enum LiveEvent {
    Record(Arc<ExchangeRecord>),
    /// A request waits long for the target: its `key`, method, URL and start.
    Waiting(Arc<Value>),
    /// The wait of this key is over (its record follows when its answer ends).
    Answered(u64),
}

/// A request shown as waiting for the target; dropping it ends the wait.
pub(crate) struct WaitingGuard {
    inspector: Arc<Inspector>,
    key: u64,
}

impl Drop for WaitingGuard {
    fn drop(&mut self) {
        self.inspector.waiting.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.key);
        if self.inspector.live.receiver_count() > 0 {
            let _ = self.inspector.live.send(LiveEvent::Answered(self.key));
        }
    }
}

/// One viewer's event stream.
struct Live {
    inspector: Arc<Inspector>,
    rx: broadcast::Receiver<LiveEvent>,
    phase: watch::Receiver<Phase>,
    first: Option<Bytes>,
    observer: Weak<Observer>,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.inspector.viewer(&self.observer, false);
    }
}

impl Live {
    async fn next(mut self) -> Option<(Bytes, Live)> {
        if let Some(first) = self.first.take() {
            return Some((first, self));
        }
        let stopping = async {
            let _ = self.phase.wait_for(|phase| *phase != Phase::Serving).await;
        };
        let chunk = tokio::select! {
            got = self.rx.recv() => match got {
                Ok(LiveEvent::Record(record)) => event("record", &record_json(&record)),
                Ok(LiveEvent::Waiting(entry)) => event("waiting", &entry),
                Ok(LiveEvent::Answered(key)) => event("answered", &serde_json::json!({ "key": key })),
                Err(RecvError::Lagged(lost)) => {
                    self.inspector.dropped.fetch_add(lost, Ordering::Relaxed);
                    event("dropped", &serde_json::json!({ "dropped": lost }))
                }
                Err(RecvError::Closed) => return None,
            },
            () = stopping => return None,
            () = tokio::time::sleep(KEEPALIVE) => Bytes::from_static(b": keep-alive\n\n"),
        };
        Some((chunk, self))
    }
}

/// One Server-Sent Event (compact JSON has no line breaks to split).
fn event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// A record as the inspector shows it: serialized as is, secret header values masked.
fn record_json(record: &ExchangeRecord) -> Value {
    let mut value = serde_json::to_value(record).unwrap_or(Value::Null);
    for key in ["requestHeaders", "responseHeaders"] {
        let Some(Value::Array(pairs)) = value.get_mut(key) else { continue };
        for pair in pairs {
            if let Some([Value::String(name), value]) = pair.as_array_mut().map(Vec::as_mut_slice) {
                if is_secret(name) {
                    *value = Value::String(REDACTED.into());
                }
            }
        }
    }
    value
}

/// A response builder with the headers every inspector answer carries: never cached, never sniffed,
/// never read by another origin.
fn answer(status: StatusCode, content_type: &'static str) -> http::response::Builder {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-store")
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(header::REFERRER_POLICY, "no-referrer")
        .header("cross-origin-resource-policy", "same-origin")
}

fn full(builder: http::response::Builder, body: String) -> Response<ProxyBody> {
    builder
        .body(ProxyBody::full(body))
        .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR, "inspector response failed\n"))
}

fn asset(content_type: &'static str, text: &'static str) -> Response<ProxyBody> {
    let mut response = Response::new(ProxyBody::full(Bytes::from_static(text.as_bytes())));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
    response
}

fn plain(status: StatusCode, text: &'static str) -> Response<ProxyBody> {
    let mut response = asset("text/plain; charset=utf-8", text);
    *response.status_mut() = status;
    response
}

/// Where the inspector is served unless `inspector.path` says otherwise.
pub const DEFAULT_INSPECTOR_PATH: &str = "/__devproxy/";
/// Exchanges the inspector keeps unless `inspector.size` says otherwise.
pub const DEFAULT_INSPECTOR_SIZE: usize = 500;
/// Most exchanges the inspector may keep: each holds its headers (and a 2 KiB preview) in memory.
pub const MAX_INSPECTOR_SIZE: u32 = 10_000;

/// `inspector`: the page at the proxy's own origin that shows the last exchanges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectorConfig {
    /// The reserved prefix, `/__devproxy/`: starts and ends with `/`. Requests under it (and the
    /// prefix without its final `/`) are the inspector's and never reach a target.
    pub path: String,
    /// How many exchanges are kept, the oldest dropped first.
    pub size: usize,
    /// Served to clients on other machines too (`inspector: { remote: true }`); by default only
    /// loopback clients get it, whatever address the proxy listens on.
    pub remote: bool,
}

impl Default for InspectorConfig {
    fn default() -> InspectorConfig {
        InspectorConfig { path: DEFAULT_INSPECTOR_PATH.into(), size: DEFAULT_INSPECTOR_SIZE, remote: false }
    }
}

impl InspectorConfig {
    /// Checks `path` (a final `/` is added) and `size` (1 to [`MAX_INSPECTOR_SIZE`]).
    pub fn new(path: &str, size: u32) -> Result<InspectorConfig, ConfigError> {
        let bad = |name, reason: &str| ConfigError::InvalidOption { name, reason: reason.to_string() };
        if !path.starts_with('/') || path.contains(['?', '#', ' ']) || path.contains("//") {
            return Err(bad("inspector.path", "it must be a path such as '/__devproxy/'"));
        }
        let path = if path.ends_with('/') { path.to_string() } else { format!("{path}/") };
        if path == "/" {
            return Err(bad("inspector.path", "'/' would take every request: use a prefix such as '/__devproxy/'"));
        }
        if !(1..=MAX_INSPECTOR_SIZE).contains(&size) {
            let reason =
                format!("it must be from 1 to {MAX_INSPECTOR_SIZE} (inspector: false turns the inspector off)");
            return Err(bad("inspector.size", &reason));
        }
        Ok(InspectorConfig { path, size: size as usize, remote: false })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::RuleMatches;
    use futures_util::StreamExt;
    use http_body_util::BodyExt;

    fn inspector(size: usize) -> Arc<Inspector> {
        Arc::new(Inspector::new(&InspectorConfig { path: "/__devproxy/".into(), size, remote: false }))
    }

    fn record(id: u64, url: &str) -> Arc<ExchangeRecord> {
        Arc::new(ExchangeRecord { id, url: url.into(), method: "GET".into(), status: 200, ..Default::default() })
    }

    fn get(path: &str) -> Request<()> {
        Request::get(path).body(()).unwrap()
    }

    async fn body_text(response: Response<ProxyBody>) -> String {
        String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
    }

    fn serving() -> (watch::Sender<Phase>, watch::Receiver<Phase>) {
        watch::channel(Phase::Serving)
    }

    #[test]
    fn the_ring_keeps_the_last_records_only() {
        let inspector = inspector(3);
        let allocated = inspector.ring.lock().unwrap().capacity();
        for id in 1..=5 {
            inspector.push(record(id, &format!("/{id}")));
        }
        let ids: Vec<u64> = inspector.records().iter().map(|r| r.id).collect();
        assert_eq!(ids, [3, 4, 5]);
        assert_eq!(inspector.snapshot_json()["total"], 5);
        assert_eq!(inspector.ring.lock().unwrap().capacity(), allocated, "a full ring never grows");
    }

    #[test]
    fn only_loopback_clients_are_answered_unless_remote() {
        let local = inspector(4);
        for ip in ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"] {
            assert!(local.answers(Some(ip.parse().unwrap())), "{ip}");
        }
        for ip in ["192.168.1.20", "10.0.0.2", "fe80::1", "::ffff:192.168.1.20"] {
            assert!(!local.answers(Some(ip.parse().unwrap())), "{ip}");
        }
        assert!(!local.answers(None));
        let config = InspectorConfig { path: "/__devproxy/".into(), size: 4, remote: true };
        assert!(Inspector::new(&config).answers(Some("192.168.1.20".parse().unwrap())));
        assert_eq!(Inspector::refuse_remote().status(), StatusCode::FORBIDDEN);
    }

    #[test]
    fn the_prefix_and_its_bare_form_are_owned() {
        let inspector = inspector(1);
        for path in ["/__devproxy/", "/__devproxy", "/__devproxy/api/events"] {
            assert!(inspector.owns(path), "{path}");
        }
        for path in ["/", "/__devproxyx", "/__devproxy_panic_probe/request", "/a/__devproxy/"] {
            assert!(!inspector.owns(path), "{path}");
        }
    }

    #[test]
    fn rules_are_summed_across_records() {
        let inspector = inspector(1);
        let with_rules = |rules: &[(&str, u64)], ms: f64| {
            Arc::new(ExchangeRecord {
                rules: rules
                    .iter()
                    .map(|(rule, matches)| RuleMatches { rule: rule.to_string(), matches: *matches })
                    .collect(),
                rewrite_ms: Some(ms),
                ..Default::default()
            })
        };
        inspector.push(with_rules(&[("snippet", 1), ("links", 3)], 2.0));
        inspector.push(with_rules(&[("links", 4)], 1.5));
        let table = inspector.rules_json();
        let rows = table["rules"].as_array().unwrap();
        assert_eq!(rows[0]["rule"], "links");
        assert_eq!((rows[0]["exchanges"].as_u64(), rows[0]["matches"].as_u64()), (Some(2), Some(7)));
        assert_eq!(rows[0]["rewriteMs"].as_f64(), Some(3.5));
        assert_eq!(rows[1]["rule"], "snippet");
        assert_eq!(rows.len(), 2);
    }

    #[test]
    fn rendered_records_mask_secrets() {
        let record = ExchangeRecord {
            request_headers: vec![("authorization".into(), "Bearer sk-live".into()), ("accept".into(), "*/*".into())],
            response_headers: vec![("set-cookie".into(), "sid=abc".into())],
            ..Default::default()
        };
        let json = record_json(&record).to_string();
        assert!(!json.contains("sk-live") && !json.contains("sid=abc"), "{json}");
        assert!(json.contains(r#"["authorization","[redacted]"]"#) && json.contains(r#"["accept","*/*"]"#), "{json}");
    }

    #[tokio::test]
    async fn routes_answer_with_the_page_assets_and_json() {
        let inspector = inspector(10);
        inspector.push(record(7, "/seven"));
        let (_tx, phase) = serving();
        let page = inspector.serve(&get("/__devproxy/"), phase.clone(), Weak::new());
        assert_eq!(page.status(), 200);
        assert!(page.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().contains("script-src 'self'"));
        assert!(body_text(page).await.contains("inspector.js"));
        let snapshot = inspector.serve(&get("/__devproxy/api/exchanges"), phase.clone(), Weak::new());
        assert_eq!(snapshot.headers()[header::CACHE_CONTROL], "no-store");
        let snapshot: Value = serde_json::from_str(&body_text(snapshot).await).unwrap();
        assert_eq!(snapshot["records"][0]["url"], "/seven");
        let bare = inspector.serve(&get("/__devproxy?x=1"), phase.clone(), Weak::new());
        assert_eq!(bare.status(), StatusCode::PERMANENT_REDIRECT);
        assert_eq!(bare.headers()[header::LOCATION], "/__devproxy/?x=1");
        assert_eq!(inspector.serve(&get("/__devproxy/nope"), phase.clone(), Weak::new()).status(), 404);
        let post = Request::post("/__devproxy/api/exchanges").body(()).unwrap();
        assert_eq!(inspector.serve(&post, phase, Weak::new()).status(), 405);
    }

    /// A viewer that does not read loses records beyond the backlog, is told how many, and the
    /// pushes never waited for it.
    #[tokio::test]
    async fn a_slow_viewer_loses_records_with_a_count() {
        let inspector = inspector(10);
        let (_tx, phase) = serving();
        let mut stream = inspector.serve(&get("/__devproxy/api/events"), phase, Weak::new()).into_body();
        let first = stream.frame().await.unwrap().unwrap().into_data().unwrap();
        assert!(String::from_utf8_lossy(&first).contains("event: snapshot"));
        let pushed = LIVE_BACKLOG as u64 + 10;
        for id in 1..=pushed {
            inspector.push(record(id, "/x"));
        }
        let next = stream.frame().await.unwrap().unwrap().into_data().unwrap();
        let text = String::from_utf8_lossy(&next).into_owned();
        assert!(text.starts_with("event: dropped\ndata: {\"dropped\":10}"), "{text}");
        assert_eq!(inspector.dropped.load(Ordering::Relaxed), 10);
        let next = stream.frame().await.unwrap().unwrap().into_data().unwrap();
        assert!(String::from_utf8_lossy(&next).contains("\"id\":11"), "the oldest still held comes next");
    }

    #[tokio::test]
    async fn event_streams_end_when_the_server_stops() {
        let inspector = inspector(10);
        let (tx, phase) = serving();
        let ProxyBody::Events(mut stream) =
            inspector.serve(&get("/__devproxy/api/events"), phase, Weak::new()).into_body()
        else {
            panic!("an event stream")
        };
        assert!(stream.next().await.is_some());
        inspector.push(record(1, "/live"));
        let live = stream.next().await.unwrap();
        assert!(String::from_utf8_lossy(&live).contains("\"url\":\"/live\""));
        tx.send(Phase::Draining).unwrap();
        assert!(stream.next().await.is_none());
        assert_eq!(inspector.live.receiver_count(), 0, "the viewer's receiver is gone with its stream");
        assert_eq!(*inspector.viewers.lock().unwrap(), 0, "and it is no longer counted");
    }
}
