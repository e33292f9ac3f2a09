//! What one running server shares between its connections and requests: the validated config, the
//! upstream client, the rules, the counters and where the server is in its life.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
// Lock poisoning policy: recover. Every lock here guards a value that is replaced whole (never left
// half-updated), so the value a panicking thread left behind is still a valid one.
use std::sync::{Arc, PoisonError, RwLock};

use http::header::{self, HeaderMap};
use http::{Method, Request};
use tokio::sync::watch;

use crate::body::{self, RequestFacts};
use crate::codec;
use crate::config::{ProxyConfig, StaticMount};
use crate::error::RuleError;
use crate::forward::UpstreamClient;
use crate::rewrite::{Rule, MAX_RULES};
use crate::routes::{Routes, Upstream};
use crate::security::HostGuard;
use crate::stats::Stats;

/// The user rules of a running server; a request takes a snapshot when it starts.
#[derive(Default)]
pub(crate) struct RuleStore {
    rules: RwLock<Arc<Vec<(u32, Rule)>>>,
    next_id: AtomicU32,
}

impl RuleStore {
    pub(crate) fn snapshot(&self) -> Arc<Vec<(u32, Rule)>> {
        self.rules.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Adds a rule after the others; returns its id.
    pub(crate) fn add(&self, rule: Rule) -> Result<u32, RuleError> {
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
    pub(crate) fn remove(&self, id: u32) -> bool {
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
    pub snippet: Option<Rule>,
    pub links: Rule,
    pub rules: RuleStore,
    pub stats: Arc<Stats>,
    pub phase: watch::Receiver<Phase>,
    pub hosts: HostGuard,
    /// Address shown in links when a request has no Host header.
    pub local_addr: SocketAddr,
    /// `routes`: path prefixes served by other targets.
    pub routes: Routes,
    /// `serveStatic`: directories answered before any target (shared with the blocking lookups).
    pub local_files: Arc<Vec<StaticMount>>,
}

impl Shared {
    /// Snippet, then user rules, then the link rewrite: Browsersync's order.
    pub(crate) fn rules_for_request(&self) -> Vec<Rule> {
        let user = self.rules.snapshot();
        let mut rules = Vec::with_capacity(user.len() + 2);
        rules.extend(self.snippet.iter().cloned());
        rules.extend(user.iter().map(|(_, rule)| rule.clone()));
        rules.push(self.links.clone());
        rules.extend(self.routes.links().iter().cloned());
        rules
    }

    /// The target a request path goes to: its route's, else `proxy`'s.
    pub(crate) fn upstream_for(&self, path: &str) -> Upstream<'_> {
        self.routes.resolve(path).unwrap_or(Upstream {
            config: &self.config,
            client: &self.client,
            websocket_tls: &self.websocket_tls,
        })
    }
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

/// What the phases need to know about one request, read once when it arrives.
pub(crate) struct RequestCtx {
    pub method: Method,
    /// The request's `Host` (or the listen address): where links and redirects point.
    pub local_host: String,
    pub path_and_query: String,
    pub accept: Option<String>,
    pub accept_encoding: Option<String>,
    /// The target's URL for this request, named in errors and logs.
    pub url: String,
    /// A page asked of a loopback target uncompressed, compressed here once after rewriting.
    pub upstream_identity: bool,
    /// Rules as they are when the request starts: `addRule` applies to later requests only.
    pub rules: Vec<Rule>,
}

impl RequestCtx {
    /// `config`: the one of the request's target (see [`Shared::upstream_for`]).
    pub(crate) fn new<B>(shared: &Shared, config: &ProxyConfig, req: &Request<B>) -> RequestCtx {
        let headers = req.headers();
        let path_and_query = req.uri().path_and_query().map_or("/", |p| p.as_str()).to_string();
        let accept = header_string(headers, header::ACCEPT);
        let accept_encoding = header_string(headers, header::ACCEPT_ENCODING);
        let upstream_identity = config.fetches_pages_uncompressed()
            && body::is_page_request(accept.as_deref(), &path_and_query)
            && !codec::accepted(accept_encoding.as_deref()).is_empty();
        RequestCtx {
            method: req.method().clone(),
            local_host: header_string(headers, header::HOST).unwrap_or_else(|| shared.local_addr.to_string()),
            url: format!("{}{}", config.target.origin(), path_and_query),
            path_and_query,
            accept,
            accept_encoding,
            upstream_identity,
            rules: shared.rules_for_request(),
        }
    }

    /// What the body plan looks at.
    pub(crate) fn facts(&self) -> RequestFacts<'_> {
        RequestFacts {
            method: &self.method,
            path_and_query: &self.path_and_query,
            accept: self.accept.as_deref(),
            accept_encoding: self.accept_encoding.as_deref(),
            upstream_identity: self.upstream_identity,
        }
    }
}

fn header_string(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}
