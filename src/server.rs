//! The listening side: accepts connections, runs each request through the proxy phases (request
//! headers → upstream → response headers → body plan), and stops gracefully.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU32, Ordering};
// Lock poisoning policy: recover. Every lock here guards a value that is replaced whole (never left
// half-updated), so the value a panicking thread left behind is still a valid one.
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body::Body as _;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch, Semaphore};
use tokio::task::JoinHandle;

use crate::body::{self, Pipeline, Plan, ProxyBody, RequestFacts, RewriteState, UpstreamBody};
use crate::config::{ProxyConfig, PANIC_PROBE_PREFIX};
use crate::error::{RuleError, StartError};
use crate::forward::{self, UpstreamClient};
use crate::headers;
use crate::rewrite::{Rewriter, Rule, MAX_RULES};
use crate::security::{self, HostGuard};
use crate::stats::{Stats, StatsSnapshot};
use crate::websocket;

/// A client that sends its request headers slower than this is dropped (slowloris).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Request head size above which the client gets 431.
const MAX_HEADER_BYTES: usize = 64 * 1024;

/// The user rules of a running server; a request takes a snapshot when it starts.
#[derive(Default)]
pub struct RuleStore {
    rules: RwLock<Arc<Vec<(u32, Rule)>>>,
    next_id: AtomicU32,
}

impl RuleStore {
    fn snapshot(&self) -> Arc<Vec<(u32, Rule)>> {
        self.rules.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Adds a rule after the others; returns its id.
    pub fn add(&self, rule: Rule) -> Result<u32, RuleError> {
        let mut rules = self.rules.write().unwrap_or_else(PoisonError::into_inner);
        if rules.len() >= MAX_RULES {
            return Err(RuleError::TooMany(MAX_RULES));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut next = Vec::clone(&rules);
        next.push((id, rule));
        *rules = Arc::new(next);
        Ok(id)
    }

    /// Removes the rule with this id; false if there was none.
    pub fn remove(&self, id: u32) -> bool {
        let mut rules = self.rules.write().unwrap_or_else(PoisonError::into_inner);
        let next: Vec<(u32, Rule)> = rules.iter().filter(|(i, _)| *i != id).cloned().collect();
        let removed = next.len() != rules.len();
        *rules = Arc::new(next);
        removed
    }
}

/// State shared by every connection of one server.
pub(crate) struct Shared {
    pub config: ProxyConfig,
    pub client: UpstreamClient,
    pub websocket_tls: Arc<rustls::ClientConfig>,
    snippet: Option<Rule>,
    links: Rule,
    pub rules: RuleStore,
    pub stats: Arc<Stats>,
    pub phase: watch::Receiver<Phase>,
    hosts: HostGuard,
    /// Address shown in links when a request has no Host header.
    local_addr: SocketAddr,
}

impl Shared {
    /// Snippet, then user rules, then the link rewrite: Browsersync's order.
    fn rules_for_request(&self) -> Vec<Rule> {
        let user = self.rules.snapshot();
        let mut rules = Vec::with_capacity(user.len() + 2);
        rules.extend(self.snippet.iter().cloned());
        rules.extend(user.iter().map(|(_, rule)| rule.clone()));
        rules.push(self.links.clone());
        rules
    }
}

/// A running proxy.
pub struct ProxyServer {
    shared: Arc<Shared>,
    local_addr: SocketAddr,
    stop: std::sync::Mutex<Option<oneshot::Sender<()>>>,
    task: tokio::sync::Mutex<Option<JoinHandle<()>>>,
}

impl ProxyServer {
    /// Binds and starts serving on the current tokio runtime.
    pub async fn start(config: ProxyConfig) -> Result<ProxyServer, StartError> {
        let ip = resolve_listen_host(&config.host)?;
        let addr = SocketAddr::new(ip, config.port);
        let listener = TcpListener::bind(addr).await.map_err(|source| match source.kind() {
            std::io::ErrorKind::AddrInUse => StartError::PortInUse { host: config.host.clone(), port: config.port },
            _ => StartError::Bind { addr, source },
        })?;
        let local_addr = listener.local_addr().map_err(|source| StartError::Bind { addr, source })?;
        let (phase_tx, phase) = watch::channel(Phase::Serving);
        let rules = RuleStore::default();
        for (index, rule) in config.rules.iter().enumerate() {
            rules.add(rule.clone()).map_err(|source| crate::error::ConfigError::Rule {
                index,
                label: rule.label().to_string(),
                source,
            })?;
        }
        let shared = Arc::new(Shared {
            client: forward::client(config.verify_tls),
            websocket_tls: forward::tls_config(config.verify_tls, &[b"http/1.1"]),
            snippet: config.snippet.as_deref().map(Rule::snippet),
            links: Rule::links(&config.target.link_host()),
            rules,
            stats: Arc::new(Stats::new(config.quiet)),
            phase,
            hosts: HostGuard::new(&config.allowed_hosts, &config.host),
            local_addr,
            config,
        });
        let (stop_tx, stop_rx) = oneshot::channel();
        let task = tokio::spawn(serve(listener, shared.clone(), stop_rx, phase_tx));
        Ok(ProxyServer {
            shared,
            local_addr,
            stop: std::sync::Mutex::new(Some(stop_tx)),
            task: tokio::sync::Mutex::new(Some(task)),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `http://host:port` of the proxy.
    pub fn url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    pub fn add_rule(&self, rule: Rule) -> Result<u32, RuleError> {
        self.shared.rules.add(rule)
    }

    pub fn remove_rule(&self, id: u32) -> bool {
        self.shared.rules.remove(id)
    }

    pub fn stats(&self) -> StatsSnapshot {
        self.shared.stats.snapshot()
    }

    /// Stops accepting (the port is free when this returns), lets in-flight responses finish
    /// within the grace period, then cuts what remains.
    /// Calling it again waits for the first call's shutdown to finish.
    pub async fn stop(&self) {
        if let Some(stop) = self.stop.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = stop.send(());
        }
        let mut task = self.task.lock().await;
        if let Some(running) = task.take() {
            let _ = running.await;
        }
    }
}

fn resolve_listen_host(host: &str) -> Result<IpAddr, StartError> {
    if host.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    host.trim_start_matches('[').trim_end_matches(']').parse().map_err(|_| StartError::BadHost {
        host: host.to_string(),
        reason: "expected an IP address such as 127.0.0.1, ::1 or 0.0.0.0".into(),
    })
}

/// Where a server is in its life; connections and tunnels watch it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Serving,
    /// `stop()` called: finish in-flight responses, take no new requests.
    Draining,
    /// Grace period over: close everything.
    Cut,
}

async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: oneshot::Receiver<()>,
    phase: watch::Sender<Phase>,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(MAX_HEADER_BYTES)
        .max_header_size(MAX_HEADER_BYTES)
        .keep_alive(true);
    // Each connection task holds a sender; when all are gone, every connection has closed.
    let (alive, mut all_closed) = mpsc::channel::<()>(1);
    // A connection is accepted only when a slot is free; the rest wait in the kernel's listen backlog.
    let slots = Arc::new(Semaphore::new(shared.config.max_connections.max(1)));
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            _ = &mut stop => break,
        };
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // Out of file descriptors and the like: wait a moment rather than spin.
                        shared.stats.log_error(&format!("accept failed: {e}"));
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let conn_shared = shared.clone();
                let service = service_fn(move |req| handle(conn_shared.clone(), req));
                let conn = http.serve_connection(TokioIo::new(stream), service).with_upgrades();
                let mut phase = shared.phase.clone();
                let alive = alive.clone();
                tokio::spawn(async move {
                    let _alive = alive;
                    let _slot = slot;
                    let mut conn = std::pin::pin!(conn);
                    loop {
                        tokio::select! {
                            _ = conn.as_mut() => break,
                            changed = phase.changed() => {
                                let current = *phase.borrow_and_update();
                                match (changed, current) {
                                    (Ok(()), Phase::Draining) => conn.as_mut().graceful_shutdown(),
                                    (Ok(()), Phase::Serving) => {}
                                    _ => break,
                                }
                            }
                        }
                    }
                });
            }
            _ = &mut stop => break,
        }
    }
    drop(listener);
    drop(alive);
    let _ = phase.send(Phase::Draining);
    let _ = tokio::time::timeout(shared.config.grace_period, all_closed.recv()).await;
    let _ = phase.send(Phase::Cut);
}

/// Runs one request through the phases. A panic anywhere in them costs this request a 500 and a log
/// line; the connection, the server and the Node process carry on.
async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Response<ProxyBody>, Infallible> {
    let path = req.uri().path().to_string();
    match AssertUnwindSafe(handle_phases(shared.clone(), req)).catch_unwind().await {
        Ok(response) => Ok(response),
        Err(panic) => {
            let reason = panic_message(panic.as_ref());
            shared.stats.log_error(&format!("{path}: internal error (panic): {reason}"));
            Ok(internal_error(&path, &reason))
        }
    }
}

/// The text of a panic's payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

async fn handle_phases(shared: Arc<Shared>, req: Request<Incoming>) -> Response<ProxyBody> {
    shared.stats.add_request();
    if shared.config.panic_probes && req.uri().path() == format!("{PANIC_PROBE_PREFIX}/request") {
        panic!("panic probe: request phase");
    }
    if let Some(reason) = smuggling_risk(req.headers()) {
        let mut response = plain(StatusCode::BAD_REQUEST, reason);
        // The body's framing is in doubt: nothing more can be read from this connection safely.
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    let local_host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .unwrap_or_else(|| shared.local_addr.to_string());
    if req.method() == Method::CONNECT {
        return plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "devproxy-native is a reverse proxy for one site; CONNECT is refused\n",
        );
    }
    if let Some(authority) = req.uri().authority() {
        // Absolute-form is only accepted for the proxy itself: it is no forward proxy.
        let port = shared.local_addr.port();
        let own = [shared.local_addr.to_string(), format!("localhost:{port}")];
        if !own.iter().any(|name| authority.as_str().eq_ignore_ascii_case(name)) {
            return plain(
                StatusCode::BAD_REQUEST,
                "devproxy-native only serves its own target; requests for other hosts are refused\n",
            );
        }
    }
    // DNS rebinding: a page whose name now resolves here sends its own name as Host. Browsers always
    // send Host, so a request without one cannot be such a page: HTTP/1.0 tools are let through,
    // HTTP/1.1 requires Host (RFC 9112 §3.2), which hyper does not enforce.
    if req.version() == http::Version::HTTP_11
        && req.uri().authority().is_none()
        && !req.headers().contains_key(header::HOST)
    {
        return plain(StatusCode::BAD_REQUEST, "an HTTP/1.1 request needs a Host header\n");
    }
    let authority = req.uri().authority().map(|a| a.as_str().to_string());
    let hosts = req.headers().get_all(header::HOST).iter().map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned());
    if let Some(refused) = authority.into_iter().chain(hosts).find(|h| !shared.hosts.allows_authority(h)) {
        shared.stats.log_error(&format!("refused a request for Host '{refused}': not in allowedHosts"));
        return host_not_allowed(&refused);
    }
    if shared.config.ws && websocket::is_upgrade(&req) {
        // Cross-site WebSocket hijacking: WebSockets are not bound by CORS, so the Origin is checked
        // here. No Origin: not a browser page.
        let request_host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok());
        let refused = req.headers().get_all(header::ORIGIN).iter().find(|origin| {
            !origin.to_str().is_ok_and(|origin| {
                security::origin_allowed(
                    origin,
                    request_host,
                    shared.local_addr,
                    &shared.config.target,
                    &shared.config.allowed_origins,
                    &shared.hosts,
                )
            })
        });
        if let Some(origin) = refused {
            let origin = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            shared.stats.log_error(&format!("refused a WebSocket from Origin '{origin}': not in allowedOrigins"));
            return origin_not_allowed(&origin);
        }
        return websocket::tunnel(shared, req, &local_host).await;
    }
    forward_request(shared, req, local_host).await
}

/// Request framings that two HTTP parsers may read differently (request smuggling), refused rather
/// than forwarded. hyper has already refused a Transfer-Encoding that does not end in `chunked` and
/// differing Content-Lengths; it resolves Content-Length + Transfer-Encoding as RFC 9112 §6.3 says
/// (chunked wins, the length is dropped, the connection closes after the answer). What is left to
/// catch here is what it passes on as it came.
fn smuggling_risk(headers: &http::HeaderMap) -> Option<&'static str> {
    let codings = headers.get_all(header::TRANSFER_ENCODING).iter().count();
    if codings > 1 || headers.get(header::TRANSFER_ENCODING).is_some_and(|v| v.as_bytes() != b"chunked") {
        return Some("a Transfer-Encoding other than exactly one `chunked`\n");
    }
    let mut lengths = headers.get_all(header::CONTENT_LENGTH).iter();
    let digits_only = |v: &HeaderValue| !v.is_empty() && v.as_bytes().iter().all(u8::is_ascii_digit);
    match (lengths.next(), lengths.next()) {
        (Some(_), Some(_)) => Some("more than one Content-Length header\n"),
        (Some(length), None) if !digits_only(length) => Some("a Content-Length that is not a plain number\n"),
        _ => None,
    }
}

async fn forward_request(shared: Arc<Shared>, req: Request<Incoming>, local_host: String) -> Response<ProxyBody> {
    let config = &shared.config;
    // Rules as they are when the request starts: `addRule` applies to later requests only.
    let rules = shared.rules_for_request();
    let (mut parts, body) = req.into_parts();
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let accept = header_string(&parts.headers, header::ACCEPT);
    let accept_encoding = header_string(&parts.headers, header::ACCEPT_ENCODING);
    let url = format!("{}{}", config.target.origin(), path_and_query);
    parts.uri = match Uri::try_from(url.as_str()) {
        Ok(uri) => uri,
        Err(e) => return bad_gateway(&shared, &url, &format!("invalid upstream URL: {e}")),
    };
    parts.version = http::Version::HTTP_11;
    headers::to_upstream(&mut parts.headers, config, &local_host, false);
    // A page from a loopback target comes uncompressed; it is compressed here, once, after rewriting.
    let upstream_identity = config.fetches_pages_uncompressed()
        && body::is_page_request(accept.as_deref(), &path_and_query)
        && !crate::codec::accepted(accept_encoding.as_deref()).is_empty();
    if upstream_identity {
        parts.headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("identity"));
    }
    let retryable = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS) && body.is_end_stream();
    let request = Request::from_parts(parts.clone(), body.boxed());
    let exchange = async {
        match shared.client.request(request).await {
            // Typically a pooled connection the upstream closed just as we reused it: like nginx,
            // try a request without a body once more, on a fresh connection.
            Err(e) if retryable && !e.is_connect() => {
                let empty = Empty::<Bytes>::new().map_err(|never| match never {}).boxed();
                shared.client.request(Request::from_parts(parts.clone(), empty)).await
            }
            other => other,
        }
    };
    let response = match tokio::time::timeout(config.upstream_timeout, exchange).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => return bad_gateway(&shared, &url, &forward::describe(&e)),
        Err(_) => {
            let reason = format!("no response within {} ms (upstreamTimeoutMs)", config.upstream_timeout.as_millis());
            return bad_gateway(&shared, &url, &reason);
        }
    };
    let (mut head, body) = response.into_parts();
    headers::to_client(&mut head.headers, head.status, config, &local_host);
    let facts = RequestFacts {
        method: &parts.method,
        path_and_query: &path_and_query,
        accept: accept.as_deref(),
        accept_encoding: accept_encoding.as_deref(),
        upstream_identity,
    };
    let mut upstream = UpstreamBody::new(body, config.upstream_timeout, shared.stats.clone(), url.clone());
    let (sniff, decode, encode) = match body::plan(&facts, head.status, &head.headers, config.rewrite_text_types) {
        Plan::Passthrough => {
            shared.stats.add_passed_through();
            return Response::from_parts(head, ProxyBody::Passthrough { prefix: None, upstream });
        }
        Plan::Rewrite { sniff, decode, encode } => (sniff, decode, encode),
    };
    let rewriter = Rewriter::new(&rules, &local_host, config.max_match_bytes);
    let mut pipeline = Pipeline::new(decode, encode, rewriter);
    let mut decoded_prefix = None;
    let mut rewritten = true;
    if sniff {
        match sniff_html(&mut upstream, &mut pipeline, config.max_match_bytes).await {
            Ok(Sniffed::Html(decoded)) => decoded_prefix = Some(decoded),
            // Asked for uncompressed on the client's behalf: text still goes out compressed, unchanged.
            Ok(Sniffed::NotHtml(raw))
                if upstream_identity
                    && decode == crate::codec::Encoding::Identity
                    && body::is_compressible(&head.headers) =>
            {
                shared.stats.add_passed_through();
                rewritten = false;
                pipeline = Pipeline::new(decode, encode, Rewriter::new(&[], &local_host, config.max_match_bytes));
                decoded_prefix = Some(raw);
            }
            Ok(Sniffed::NotHtml(raw)) => {
                shared.stats.add_passed_through();
                return Response::from_parts(head, ProxyBody::Passthrough { prefix: Some(raw.into()), upstream });
            }
            // The upstream body's own failure is logged where it happens.
            Err(SniffError::Upstream(e)) => return gateway_error_page(&shared, &url, &format!("{e}")),
            Err(SniffError::Decode(e)) => return bad_gateway(&shared, &url, &format!("{e}")),
        }
    }
    // Rewrite what was read before the headers go out, so that a failing rule (a `replace` function
    // that throws) on the start of the page still becomes a 500 rather than an aborted response.
    let mut out = Vec::new();
    if let Some(prefix) = decoded_prefix.take() {
        let step = match body::rewrite_prefix(pipeline, prefix).await {
            Ok(step) => step,
            Err(reason) => {
                shared.stats.log_error(&format!("{url}: {reason}"));
                return server_error(&url, &reason);
            }
        };
        pipeline = step.pipeline;
        out = step.out;
        if let Err(e) = step.result {
            return match e {
                body::PipelineError::Replace(e) => {
                    shared.stats.log_error(&format!("{url}: {e}"));
                    server_error(&url, &e.to_string())
                }
                body::PipelineError::Codec(e) => bad_gateway(&shared, &url, &e.to_string()),
            };
        }
    }
    let headers = &mut head.headers;
    headers.remove(header::CONTENT_LENGTH);
    headers.remove(header::ACCEPT_RANGES);
    headers.remove("content-md5");
    if encode == crate::codec::Encoding::Identity {
        headers.remove(header::CONTENT_ENCODING);
    } else {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(encode.token()));
        let varies = headers
            .get_all(header::VARY)
            .iter()
            .any(|v| v.to_str().is_ok_and(|v| v.to_ascii_lowercase().contains("accept-encoding") || v.contains('*')));
        if !varies {
            headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
        }
    }
    if rewritten {
        shared.stats.add_rewritten();
    }
    let panic_probe = config.panic_probes && path_and_query.starts_with(&format!("{PANIC_PROBE_PREFIX}/body"));
    let state = RewriteState::new(upstream, pipeline, out, shared.stats.clone(), url, panic_probe);
    Response::from_parts(head, ProxyBody::Rewrite(Box::new(state)))
}

enum Sniffed {
    /// Decoded bytes read so far, to be rewritten first.
    Html(Vec<u8>),
    /// Raw bytes read so far, to be sent first, untouched.
    NotHtml(Vec<u8>),
}

enum SniffError {
    Upstream(body::BodyError),
    Decode(body::PipelineError),
}

/// Reads just enough of the body to tell whether it starts like HTML.
async fn sniff_html(upstream: &mut UpstreamBody, pipeline: &mut Pipeline, limit: usize) -> Result<Sniffed, SniffError> {
    let mut raw = Vec::new();
    let mut decoded = Vec::new();
    loop {
        let Some(data) = upstream.next_data().await.transpose().map_err(SniffError::Upstream)? else {
            let html = body::looks_like_html(&decoded) == Some(true);
            return Ok(if html { Sniffed::Html(decoded) } else { Sniffed::NotHtml(raw) });
        };
        raw.extend_from_slice(&data);
        // Nothing has been sent yet, so a body we cannot decode becomes a 502 that says why.
        pipeline.decode(&data, &mut decoded).map_err(SniffError::Decode)?;
        match body::looks_like_html(&decoded) {
            Some(true) => return Ok(Sniffed::Html(decoded)),
            Some(false) => return Ok(Sniffed::NotHtml(raw)),
            None if decoded.len() > limit => return Ok(Sniffed::NotHtml(raw)),
            None => {}
        }
    }
}

fn header_string(headers: &http::HeaderMap, name: header::HeaderName) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

fn plain(status: StatusCode, text: &'static str) -> Response<ProxyBody> {
    let mut response = Response::new(ProxyBody::full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

/// The 403 for a `Host` that is not in `allowedHosts`: names it and the option to set.
fn host_not_allowed(host: &str) -> Response<ProxyBody> {
    let name = security::host_name(host).unwrap_or_else(|| host.to_string());
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>403 Host not allowed</title>\n\
         <h1>403 Host not allowed</h1>\n<p>devproxy-native does not answer to the host <code>{}</code>.</p>\n\
         <p>This protects the proxied site against DNS rebinding: another site's page whose name now points at \
         this machine must not read it. If you reach the proxy by this name, add it to the <code>allowedHosts</code> \
         option: <code>allowedHosts: ['{}']</code> (a leading dot, <code>'.example.com'</code>, allows a domain \
         and its subdomains).</p>\n",
        escape_html(host),
        escape_html(&name)
    );
    forbidden(html)
}

/// The 403 for a WebSocket upgrade from a page of another origin.
fn origin_not_allowed(origin: &str) -> Response<ProxyBody> {
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>403 Origin not allowed</title>\n\
         <h1>403 Origin not allowed</h1>\n<p>devproxy-native refused a WebSocket from a page of <code>{}</code>: \
         only pages of the proxy itself and of the target may open one (cross-site WebSocket hijacking). \
         To allow this origin, add it to the <code>allowedOrigins</code> option: \
         <code>allowedOrigins: ['{}']</code>.</p>\n",
        escape_html(origin),
        escape_html(origin)
    );
    forbidden(html)
}

fn forbidden(html: String) -> Response<ProxyBody> {
    let mut response = Response::new(ProxyBody::full(html));
    *response.status_mut() = StatusCode::FORBIDDEN;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A rewrite rule failed before anything was sent: a 500 that names the rule.
fn server_error(url: &str, reason: &str) -> Response<ProxyBody> {
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>500 Rewrite failed</title>\n\
         <h1>500 Rewrite failed</h1>\n<p>devproxy-native could not rewrite <code>{}</code>.</p>\n<pre>{}</pre>\n",
        escape_html(url),
        escape_html(reason)
    );
    let mut response = Response::new(ProxyBody::full(html));
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    response
}

/// A bug in the proxy (a panic) cost this request: a 500 that says so.
fn internal_error(path: &str, reason: &str) -> Response<ProxyBody> {
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>500 Internal proxy error</title>\n\
         <h1>500 Internal proxy error</h1>\n<p>devproxy-native failed while handling <code>{}</code>; \
         other requests are not affected. Please report this with the log line.</p>\n<pre>{}</pre>\n",
        escape_html(path),
        escape_html(reason)
    );
    let mut response = Response::new(ProxyBody::full(html));
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    response
}

/// The 502 page: names the target and what went wrong.
pub(crate) fn bad_gateway(shared: &Shared, url: &str, reason: &str) -> Response<ProxyBody> {
    shared.stats.add_upstream_error();
    shared.stats.log_error(&format!("{url}: {reason}"));
    gateway_error_page(shared, url, reason)
}

/// The 502 page alone, for a failure that was already counted and logged.
fn gateway_error_page(shared: &Shared, url: &str, reason: &str) -> Response<ProxyBody> {
    let target = shared.config.target.origin();
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>502 Bad Gateway</title>\n\
         <h1>502 Bad Gateway</h1>\n<p>devproxy-native could not get <code>{}</code> from the target <b>{}</b>.</p>\n<pre>{}</pre>\n",
        escape_html(url),
        escape_html(&target),
        escape_html(reason)
    );
    let mut response = Response::new(ProxyBody::full(html));
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
