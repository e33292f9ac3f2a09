//! The listening side: binds, accepts connections (at most `maxConnections` at once), hands each
//! request to the phases in [`crate::proxy`] behind a panic guard, and stops gracefully.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use futures_util::FutureExt;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch, Semaphore};
use tokio::task::JoinHandle;

use crate::body::ProxyBody;
use crate::config::ProxyConfig;
use crate::error::{panic_message, RuleError, StartError};
use crate::forward;
use crate::pages::ProxyError;
use crate::proxy;
use crate::rewrite::Rule;
use crate::routes::Routes;
use crate::security::HostGuard;
use crate::state::{Phase, RuleStore, Shared};
use crate::stats::{Stats, StatsSnapshot};

/// A client that sends its request headers slower than this is dropped (slowloris).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Request head size above which the client gets 431.
const MAX_HEADER_BYTES: usize = 64 * 1024;

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
            routes: Routes::new(&config),
            local_files: Arc::new(config.serve_static.clone()),
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

    /// The address actually bound (the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `http://host:port` of the proxy.
    pub fn url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    /// Adds a rule after the others, for requests that start from now on; returns the id that removes it.
    pub fn add_rule(&self, rule: Rule) -> Result<u32, RuleError> {
        self.shared.rules.add(rule)
    }

    /// Removes the rule with this id, for requests that start from now on; false if there was none.
    pub fn remove_rule(&self, id: u32) -> bool {
        self.shared.rules.remove(id)
    }

    /// The counters so far.
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
    let response = match AssertUnwindSafe(proxy::proxy(shared.clone(), req)).catch_unwind().await {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => proxy::fail(&shared, error),
        Err(panic) => {
            let reason = format!("internal error (panic): {}", panic_message(panic.as_ref()));
            proxy::fail(&shared, ProxyError::Internal { path, reason })
        }
    };
    Ok(response)
}
