//! The listening side: binds, accepts connections (at most `maxConnections` at once), hands each
//! request to the phases in [`crate::proxy`] behind a panic guard, and stops gracefully.

pub(crate) mod tls;

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use futures_util::FutureExt;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch, Semaphore};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::body::ProxyBody;
use crate::cassette::replay::{CassetteError, Player, ReplayOptions};
use crate::config::{LogLevel, ProxyConfig};
use crate::error::{panic_message, RuleError, StartError};
use crate::lifecycle::Phase;
use crate::observe::inspector::Inspector;
use crate::observe::{ObserveSnapshot, Observer, RecordSink};
use crate::proxy;
use crate::proxy::context::ClientAddr;
use crate::proxy::forward;
use crate::proxy::hooks::Hooks;
use crate::proxy::local_files::CompressedFiles;
use crate::proxy::middleware::MiddlewareHost;
use crate::proxy::pages::ProxyError;
use crate::proxy::routes::Routes;
use crate::proxy::security::HostGuard;
use crate::proxy::state::{RuleStore, Shared};
use crate::rewrite::Rule;
use crate::skip::SkipTable;
use crate::stats::{Stats, StatsSnapshot};

/// A client that sends its request headers slower than this is dropped (slowloris).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// When every connection slot is taken, connections at least this old that have not sent a whole
/// request head yet are closed to make room (see [`Silent`]): 2,000 idle connections would otherwise
/// keep everyone else waiting for the head timeout.
const SILENT_AFTER: Duration = Duration::from_millis(500);
/// How often the accept loop, out of slots, asks silent connections to make room again.
const PRESSURE_EVERY: Duration = Duration::from_millis(250);
/// Request head size above which the client gets 431.
const MAX_HEADER_BYTES: usize = 64 * 1024;

/// What the user's code brings to a server, handed over beside its configuration (code the proxy
/// calls into, not options): hooks around the upstream exchange and the Node middleware host.
#[derive(Default)]
pub struct UserCode {
    /// `proxy.proxyReq`, `proxy.proxyReqWs`, `proxy.proxyRes`.
    pub hooks: Hooks,
    /// Connect-style middleware run before the proxy, by a Node host on a loopback port.
    pub middleware: Option<MiddlewareHost>,
}

/// A running proxy.
pub struct ProxyServer {
    shared: Arc<Shared>,
    local_addr: SocketAddr,
    /// The served certificate as PEM, when serving HTTPS.
    certificate: Option<String>,
    stop: std::sync::Mutex<Option<oneshot::Sender<()>>>,
    task: tokio::sync::Mutex<Option<JoinHandle<()>>>,
}

impl ProxyServer {
    /// Binds and starts serving on the current tokio runtime.
    pub async fn start(config: ProxyConfig) -> Result<ProxyServer, StartError> {
        ProxyServer::start_with(config, UserCode::default()).await
    }

    /// Starts a server that calls into the user's code: hooks around the upstream exchange and a
    /// middleware host.
    pub async fn start_with(mut config: ProxyConfig, code: UserCode) -> Result<ProxyServer, StartError> {
        let ip = resolve_listen_host(&config.host)?;
        let level = if config.quiet { LogLevel::Silent } else { config.log_level };
        let stats = Arc::new(Stats::new(level, &config.log_prefix));
        settle_local_targets(&mut config, &stats).await;
        // Certificates: files, key generation and the OS trust store are read off the async workers.
        let verify = config.verify_tls.is_on() || config.routes.iter().any(|route| route.verify_tls.is_on());
        let (https, host) = (config.serves_https().then(|| config.https.clone()), config.host.clone());
        // What the first request of a process would otherwise set up (so it is no dearer than the next),
        // alongside the trust store.
        let prepared = tokio::task::spawn_blocking(|| {
            crate::codec::Encoder::prepare_process();
            crate::codec::Decoder::prepare_process();
            crate::observe::mask::scanner();
            crate::buffers::prepare();
        });
        let (served, verifier) = tokio::task::spawn_blocking(move || {
            let served = https.map(|https| tls::served(&https, &host)).transpose()?;
            let verifier = verify.then(tls::upstream_verifier).transpose()?;
            Ok::<_, StartError>((served, verifier))
        })
        .await
        .map_err(|e| StartError::Https(format!("setting up TLS failed: {e}")))??;
        let _ = prepared.await;
        let verifier = verifier.map(|(verifier, warning)| {
            if let Some(warning) = warning {
                stats.log_error(&warning);
            }
            verifier
        });
        // Cassettes are read and checked before the port is taken: a bad one fails the start.
        let (replay, route_players) = load_players(&config, &stats).await?;
        let listener = bind(ip, &config, &stats).await?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| StartError::Bind { addr: SocketAddr::new(ip, config.port), source })?;
        let (phase_tx, phase) = watch::channel(Phase::Serving);
        let rules = RuleStore::default();
        rules.replace(config.rules.clone()).map_err(crate::error::ConfigError::Rules)?;
        let recorder = match config.record.clone() {
            Some(options) => Some(
                crate::cassette::record::Recorder::start(options, stats.clone())
                    .map_err(|reason| crate::error::ConfigError::InvalidOption { name: "record.path", reason })?,
            ),
            None => None,
        };
        // Routes with their own `record` (each its own cassette).
        let mut route_recorders = Vec::new();
        for route in &config.routes {
            if let Some(options) = route.record.clone() {
                let recorder = crate::cassette::record::Recorder::start(options, stats.clone()).map_err(|reason| {
                    crate::error::ConfigError::InvalidOption { name: "routes[].record.path", reason }
                })?;
                route_recorders.push((route.prefix.clone(), Arc::new(recorder)));
            }
        }
        // The inspector is one more sink of the records (it turns previews on while it has viewers).
        let inspector = config.inspector.as_ref().map(|inspector| Arc::new(Inspector::new(inspector)));
        let mut observe = config.observe.clone();
        observe.sinks.extend(inspector.iter().map(|inspector| inspector.clone() as Arc<dyn RecordSink>));
        let observer = Arc::new(Observer::new(observe, stats.clone()));
        let shared = Arc::new(Shared {
            client: forward::client(verifier.clone().filter(|_| config.verify_tls.is_on())),
            websocket_tls: forward::tls_config(verifier.clone().filter(|_| config.verify_tls.is_on()), &[b"http/1.1"]),
            snippet: config.snippet.as_deref().map(|s| config.snippet_rule.clone().unwrap_or_else(|| Rule::snippet(s))),
            csp_meta: Rule::csp_meta(),
            links: [
                Rule::links(&config.target.link_host(), config.local_scheme()),
                Rule::encoded_origin(&config.target.link_host(), config.local_scheme()),
            ],
            rules,
            skips: Arc::new(SkipTable::default()),
            stats: stats.clone(),
            phase,
            hosts: HostGuard::new(&config.allowed_hosts, &config.host),
            local_addr,
            routes: Routes::new(&config, verifier, &route_players, &route_recorders),
            local_files: Arc::new(config.serve_static.clone()),
            compressed_files: Arc::new(CompressedFiles::new()),
            recorder: std::sync::RwLock::new(recorder.map(Arc::new)),
            observer,
            inspector,
            replay: std::sync::RwLock::new(replay),
            reverse_rules: Default::default(),
            json_rules: Default::default(),
            hooks: code.hooks,
            middleware: code.middleware,
            config,
        });
        for warning in &shared.config.warnings {
            shared.stats.log_config(warning);
        }
        let (acceptor, certificate) = match served {
            Some(served) => (Some(served.acceptor), Some(served.certificate_pem)),
            None => (None, None),
        };
        let (stop_tx, stop_rx) = oneshot::channel();
        let warm = shared.clone();
        let _ = tokio::task::spawn_blocking(move || warm.prepare_first_request()).await;
        let task = tokio::spawn(serve(listener, acceptor, shared.clone(), stop_rx, phase_tx));
        Ok(ProxyServer {
            shared,
            local_addr,
            certificate,
            stop: std::sync::Mutex::new(Some(stop_tx)),
            task: tokio::sync::Mutex::new(Some(task)),
        })
    }

    /// Switches to replay (`server.replay()`): requests from now on are answered from the cassette,
    /// read and checked first (a bad one leaves the mode as it was). Routes with their own keep theirs.
    pub async fn replay(&self, options: ReplayOptions) -> Result<(), CassetteError> {
        let player = load_player(options, &self.shared.stats).await?;
        *self.shared.replay.write().unwrap_or_else(PoisonError::into_inner) = Some(player);
        *self.shared.recorder.write().unwrap_or_else(PoisonError::into_inner) = None;
        Ok(())
    }

    /// Records exchanges to a new cassette from now on, proxying (`server.record()`): ends replay
    /// and any earlier recording (whose exchanges in flight still finish in their cassette).
    pub fn record(&self, options: crate::cassette::record::RecordOptions) -> Result<(), String> {
        let recorder = crate::cassette::record::Recorder::start(options, self.shared.stats.clone())?;
        *self.shared.replay.write().unwrap_or_else(PoisonError::into_inner) = None;
        *self.shared.recorder.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(recorder));
        Ok(())
    }

    /// Switches back to proxying (`server.passthrough()`).
    pub fn passthrough(&self) {
        *self.shared.replay.write().unwrap_or_else(PoisonError::into_inner) = None;
        *self.shared.recorder.write().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The address actually bound (the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `http://host:port` of the proxy, `https://` when it serves HTTPS.
    pub fn url(&self) -> String {
        format!("{}://{}", self.shared.config.local_scheme(), self.local_addr)
    }

    /// The certificate the proxy serves, as PEM (`None` over plain HTTP): what a client trusts.
    pub fn certificate(&self) -> Option<&str> {
        self.certificate.as_deref()
    }

    /// The path to open first: `startPath`, or the path of the `proxy` URL (Browsersync's reading).
    pub fn start_path(&self) -> Option<&str> {
        self.shared.config.start_path.as_deref()
    }

    /// Adds a rule after the others, for requests that start from now on; returns the id that removes it.
    pub fn add_rule(&self, rule: Rule) -> Result<u32, RuleError> {
        self.shared.rules.add(rule)
    }

    /// Replaces every user rule, for requests that start from now on; returns the new rules' ids.
    pub fn set_rules(&self, rules: Vec<Rule>) -> Result<Vec<u32>, RuleError> {
        let ids = self.shared.rules.replace(rules)?;
        // Grouped in the background (the first request would otherwise wait for it).
        let warm = self.shared.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn_blocking(move || warm.rules.grouped(&warm.rules.snapshot()));
        }
        Ok(ids)
    }

    /// The middleware's routes for requests that start from now on; false when the server was
    /// started without a middleware host.
    pub fn set_middleware_routes(&self, routes: Vec<String>) -> bool {
        match self.shared.middleware.as_ref() {
            Some(host) => {
                host.routes.replace(routes);
                true
            }
            None => false,
        }
    }

    /// Removes the rule with this id, for requests that start from now on; false if there was none.
    pub fn remove_rule(&self, id: u32) -> bool {
        self.shared.rules.remove(id)
    }

    /// The counters so far.
    pub fn stats(&self) -> StatsSnapshot {
        self.shared.stats.snapshot()
    }

    /// Where the `record` option's recording stands; `None` when not recording.
    pub fn recording(&self) -> Option<crate::cassette::record::RecordingSnapshot> {
        self.shared.recorder.read().unwrap_or_else(PoisonError::into_inner).as_ref().map(|r| r.snapshot())
    }

    /// Every recording running: the server's (if any), then each route's (`route` set), longest prefix first.
    pub fn recordings(&self) -> Vec<crate::cassette::record::RecordingSnapshot> {
        let routes = self.shared.routes.recorders().map(|(prefix, recorder)| {
            let mut snapshot = recorder.snapshot();
            snapshot.route = Some(prefix.to_string());
            snapshot
        });
        self.recording().into_iter().chain(routes).collect()
    }

    /// Latency percentiles and per-rule match counts so far.
    pub fn observations(&self) -> ObserveSnapshot {
        self.shared.observer.snapshot()
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

/// Where each target is, decided once at start: on this machine or not (a name that resolves to
/// loopback addresses only counts as here). It settles an unset `secure` (see
/// [`crate::config::VerifyTls`]) and `upstreamCompression: 'auto'`.
async fn settle_local_targets(config: &mut ProxyConfig, stats: &Stats) {
    async fn settle(
        policy: &mut crate::config::VerifyTls,
        here: &mut bool,
        target: &crate::config::Target,
        compression_auto: bool,
        stats: &Stats,
    ) {
        let https = target.scheme == crate::config::Scheme::Https;
        let check_unset = *policy == crate::config::VerifyTls::UnlessLoopback;
        let matters = compression_auto || (https && check_unset);
        if !matters {
            return;
        }
        *here = crate::server::tls::is_on_this_machine(target).await;
        if https {
            *policy = policy.settle(*here);
            if check_unset && !policy.is_on() {
                stats.log_debug(|| {
                    let origin = target.origin();
                    format!("{origin} is on this machine: its certificate is not checked (`secure: true` checks it)")
                });
            }
        }
    }
    let auto = config.upstream_compression == crate::config::UpstreamCompression::Auto;
    settle(&mut config.verify_tls, &mut config.target_resolves_here, &config.target, auto, stats).await;
    for route in &mut config.routes {
        settle(&mut route.verify_tls, &mut route.target_resolves_here, &route.target, auto, stats).await;
    }
}

/// Binds `port`, or (Browsersync's way, unless `strictPort`) the next free port after it, saying so.
async fn bind(ip: IpAddr, config: &ProxyConfig, stats: &Stats) -> Result<TcpListener, StartError> {
    let mut port = config.port;
    loop {
        let addr = SocketAddr::new(ip, port);
        match TcpListener::bind(addr).await {
            Ok(listener) => {
                if port != config.port {
                    stats.log_error(&format!(
                        "port {} is in use on {}; listening on port {port} instead (strictPort: true forbids this)",
                        config.port, config.host
                    ));
                }
                return Ok(listener);
            }
            Err(source) if source.kind() == std::io::ErrorKind::AddrInUse => {
                if config.strict_port || config.port == 0 {
                    return Err(StartError::PortInUse { host: config.host.clone(), port: config.port });
                }
                port = port
                    .checked_add(1)
                    .ok_or_else(|| StartError::NoFreePort { host: config.host.clone(), port: config.port })?;
            }
            Err(source) => return Err(StartError::Bind { addr, source }),
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

async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
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
    // HTTP/2, for TLS connections whose client chose it by ALPN. The connection is picked by ALPN
    // rather than by hyper-util's auto builder, which sniffs the first bytes and whose HTTP/1 side
    // lacks `max_header_size`: HTTP/1.1 over TLS is served exactly as plain HTTP/1.1 is.
    let mut h2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    h2.timer(TokioTimer::new()).max_header_list_size(MAX_HEADER_BYTES as u32);
    // Each connection task holds a sender; when all are gone, every connection has closed.
    let (alive, mut all_closed) = mpsc::channel::<()>(1);
    // A connection is accepted only when a slot is free; the rest wait in the kernel's listen backlog.
    let slots = Arc::new(Semaphore::new(shared.config.max_connections.max(1)));
    // Bumped while no slot is free: silent connections close (see [`Silent`]).
    let (pressure, pressure_rx) = watch::channel(0u64);
    loop {
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => Some(slot),
            Err(tokio::sync::TryAcquireError::Closed) => None,
            // Out of slots: silent connections make room, asked again until one is free.
            Err(tokio::sync::TryAcquireError::NoPermits) => loop {
                pressure.send_modify(|generation| *generation += 1);
                tokio::select! {
                    slot = slots.clone().acquire_owned() => break slot.ok(),
                    () = tokio::time::sleep(PRESSURE_EVERY) => continue,
                    _ = &mut stop => break None,
                }
            },
        };
        let Some(slot) = slot else { break };
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: wait a moment rather than spin.
                        shared.stats.log_error(&format!("accept failed: {e}"));
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let conn_shared = shared.clone();
                let silent = Silent::new(pressure_rx.clone());
                let spoke = silent.spoke.clone();
                let service = service_fn(move |req| {
                    spoke.store(true, std::sync::atomic::Ordering::Relaxed);
                    handle(conn_shared.clone(), peer, req)
                });
                let mut phase = shared.phase.clone();
                let alive = alive.clone();
                let (http, h2, tls) = (http.clone(), h2.clone(), tls.clone());
                tokio::spawn(async move {
                    let _alive = alive;
                    let _slot = slot;
                    let mut silent = silent;
                    let Some(acceptor) = tls else {
                        let conn = http.serve_connection(TokioIo::new(stream), service).with_upgrades();
                        return drive(conn, |c| c.graceful_shutdown(), phase, silent).await;
                    };
                    // A handshake is bounded like a request head (slowloris), given up on at stop(),
                    // and under pressure like a connection that has not spoken.
                    let handshake = tokio::time::timeout(HEADER_READ_TIMEOUT, acceptor.accept(stream));
                    let stream = tokio::select! {
                        done = handshake => match done {
                            Ok(Ok(stream)) => stream,
                            _ => return,
                        },
                        _ = phase.wait_for(|&p| p != Phase::Serving) => return,
                        () = silent.evicted() => return,
                    };
                    if stream.get_ref().1.alpn_protocol() == Some(tls::ALPN_H2) {
                        let conn = h2.serve_connection(TokioIo::new(stream), service);
                        drive(conn, |c| c.graceful_shutdown(), phase, silent).await
                    } else {
                        let conn = http.serve_connection(TokioIo::new(stream), service).with_upgrades();
                        drive(conn, |c| c.graceful_shutdown(), phase, silent).await
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

/// Whether a connection has sent a whole request head yet, and the accept loop's signal that slots
/// ran out: then a connection older than [`SILENT_AFTER`] that has not spoken gives its slot up.
/// Connections that have sent a request (keep-alive ones between requests included) are never cut.
struct Silent {
    spoke: Arc<std::sync::atomic::AtomicBool>,
    since: tokio::time::Instant,
    pressure: watch::Receiver<u64>,
}

impl Silent {
    fn new(mut pressure: watch::Receiver<u64>) -> Silent {
        pressure.mark_unchanged();
        Silent { spoke: Arc::default(), since: tokio::time::Instant::now(), pressure }
    }

    /// Resolves when this connection should close to make room; never once it has spoken.
    async fn evicted(&mut self) {
        loop {
            if self.pressure.changed().await.is_err() {
                return std::future::pending().await;
            }
            let spoke = self.spoke.load(std::sync::atomic::Ordering::Relaxed);
            if spoke {
                return std::future::pending().await;
            }
            if self.since.elapsed() >= SILENT_AFTER {
                return;
            }
        }
    }
}

/// Serves one connection until it ends: at `stop()` it finishes in-flight requests and takes no
/// more (`shutdown`), and at the end of the grace period it is dropped.
async fn drive<C: Future>(conn: C, shutdown: fn(Pin<&mut C>), mut phase: watch::Receiver<Phase>, mut silent: Silent) {
    let mut conn = std::pin::pin!(conn);
    loop {
        tokio::select! {
            _ = conn.as_mut() => break,
            () = silent.evicted() => break,
            changed = phase.changed() => {
                let current = *phase.borrow_and_update();
                match (changed, current) {
                    (Ok(()), Phase::Draining) => shutdown(conn.as_mut()),
                    (Ok(()), Phase::Serving) => {}
                    _ => break,
                }
            }
        }
    }
}

/// Runs one request through the phases. A panic anywhere in them costs this request a 500 and a log
/// line; the connection, the server and the Node process carry on.
async fn handle(
    shared: Arc<Shared>,
    peer: SocketAddr,
    mut req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    req.extensions_mut().insert(ClientAddr(peer));
    // Before anything records the request: the way back from the middleware host (its ticket) is
    // never observable.
    if shared.middleware.as_ref().is_some_and(|host| host.take_returned(req.headers_mut(), peer)) {
        req.extensions_mut().insert(crate::proxy::middleware::Returned);
    }
    let path = req.uri().path().to_string();
    let begun = shared.observer.begin(&req);
    let response = match AssertUnwindSafe(proxy::proxy(shared.clone(), req)).catch_unwind().await {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => proxy::fail(&shared, error),
        Err(panic) => {
            let reason = format!("internal error (panic): {}", panic_message(panic.as_ref()));
            proxy::fail(&shared, ProxyError::Internal { path, reason })
        }
    };
    Ok(shared.observer.respond(begun, response))
}

/// The cassettes of `replay` and of the routes' `replay`, read off the async workers.
async fn load_players(
    config: &ProxyConfig,
    stats: &Arc<Stats>,
) -> Result<(Option<Arc<Player>>, Vec<(String, Arc<Player>)>), CassetteError> {
    let main = match &config.replay {
        Some(options) => Some(load_player(options.clone(), stats).await?),
        None => None,
    };
    let mut routes = Vec::new();
    for route in &config.routes {
        if let Some(options) = &route.replay {
            routes.push((route.prefix.clone(), load_player(options.clone(), stats).await?));
        }
    }
    Ok((main, routes))
}

/// Reads a cassette; with `onMiss: 'record'`, opens it for appending too, its new exchanges
/// numbered after the highest id it holds.
async fn load_player(options: ReplayOptions, stats: &Arc<Stats>) -> Result<Arc<Player>, CassetteError> {
    let path = options.path.display().to_string();
    let stats = stats.clone();
    tokio::task::spawn_blocking(move || {
        let player = Player::load(options)?;
        if player.options.on_miss != crate::cassette::replay::OnMiss::Record {
            return Ok(Arc::new(player));
        }
        let record = crate::cassette::record::RecordOptions {
            path: player.options.path.clone(),
            matches: None,
            redact: player.options.redact.clone(),
            append: true,
        };
        let recorder = crate::cassette::record::Recorder::start_learning(record, stats, Some(player.learner()))
            .map_err(|reason| CassetteError::Io { path: player.options.path.display().to_string(), reason })?;
        let last = player.last_id();
        Ok(Arc::new(player.with_recorder(recorder.ids_after(last))))
    })
    .await
    .map_err(|e| CassetteError::Io { path, reason: format!("reading failed: {e}") })?
}
