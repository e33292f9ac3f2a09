//! What one running server shares between its connections and requests: the validated config, the
//! upstream client, the rules, the counters and where the server is in its life.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
// Lock poisoning policy: recover. Every lock here guards a value that is replaced whole (never left
// half-updated), so the value a panicking thread left behind is still a valid one.
use std::sync::{Arc, PoisonError, RwLock};

use http::Request;
use tokio::sync::watch;

use crate::body::{self, PageMode, Pipeline, UserRules};
use crate::cassette::replay::Player;
use crate::codec::Encoding;
use crate::config::{ProxyConfig, StaticMount};
use crate::csp::PagePolicy;
use crate::error::RuleError;
use crate::lifecycle::Phase;
use crate::proxy::context::{request_path, RequestCtx};
use crate::proxy::forward::UpstreamClient;
use crate::proxy::local_files::CompressedFiles;
use crate::proxy::routes::{Routes, Upstream};
use crate::proxy::security::HostGuard;
use crate::rewrite::{check_memory, Rewriter, Rule};
use crate::skip::SkipTable;
use crate::stats::Stats;

/// The user rules of a running server; a request takes a snapshot when it starts.
#[derive(Default)]
pub(crate) struct RuleStore {
    /// The rules and their generation, which every `add` and `remove` moves on (the skip table's
    /// entries are valid for one generation only, see `crate::skip`).
    rules: RwLock<RuleSnapshot>,
    next_id: AtomicU32,
    /// The rules without `paths` of one generation, literal rules grouped (`Rule::grouped`): built once
    /// per generation, by the first request that needs them.
    grouped: std::sync::Mutex<Option<(u64, Arc<Vec<Rule>>)>>,
}

/// A rule set's generation and its rules with their ids.
pub(crate) type RuleSnapshot = (u64, Arc<Vec<(u32, Rule)>>);

impl RuleStore {
    pub(crate) fn snapshot(&self) -> RuleSnapshot {
        self.rules.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Adds a rule after the others; returns its id.
    pub(crate) fn add(&self, rule: Rule) -> Result<u32, RuleError> {
        let mut rules = self.rules.write().unwrap_or_else(PoisonError::into_inner);
        check_memory(rules.1.iter().map(|(_, r)| r).chain([&rule]))?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut next = Vec::clone(&rules.1);
        next.push((id, rule));
        *rules = (rules.0 + 1, Arc::new(next));
        Ok(id)
    }

    /// Replaces every rule at once (a request sees the old set or the new one, never a mix); returns
    /// the new rules' ids in order.
    pub(crate) fn replace(&self, new_rules: Vec<Rule>) -> Result<Vec<u32>, RuleError> {
        check_memory(&new_rules)?;
        let mut rules = self.rules.write().unwrap_or_else(PoisonError::into_inner);
        let numbered: Vec<(u32, Rule)> =
            new_rules.into_iter().map(|rule| (self.next_id.fetch_add(1, Ordering::Relaxed), rule)).collect();
        let ids = numbered.iter().map(|(id, _)| *id).collect();
        *rules = (rules.0 + 1, Arc::new(numbered));
        Ok(ids)
    }

    /// The rules of `snapshot` that run on every URL (no `paths`), literal ones searched together.
    pub(crate) fn grouped(&self, (generation, rules): &RuleSnapshot) -> Arc<Vec<Rule>> {
        let mut cache = self.grouped.lock().unwrap_or_else(PoisonError::into_inner);
        match &*cache {
            Some((built, grouped)) if built == generation => grouped.clone(),
            _ => {
                let plain: Vec<Rule> =
                    rules.iter().filter(|(_, r)| r.paths().is_none()).map(|(_, r)| r.clone()).collect();
                let grouped = Arc::new(Rule::grouped(&plain));
                *cache = Some((*generation, grouped.clone()));
                grouped
            }
        }
    }

    /// Removes the rule with this id; false if there was none.
    pub(crate) fn remove(&self, id: u32) -> bool {
        let mut rules = self.rules.write().unwrap_or_else(PoisonError::into_inner);
        let next: Vec<(u32, Rule)> = rules.1.iter().filter(|(i, _)| *i != id).cloned().collect();
        let removed = next.len() != rules.1.len();
        *rules = (rules.0 + 1, Arc::new(next));
        removed
    }
}

/// State shared by every connection of one server.
pub(crate) struct Shared {
    pub config: ProxyConfig,
    pub client: UpstreamClient,
    pub websocket_tls: Arc<rustls::ClientConfig>,
    pub snippet: Option<Rule>,
    /// Amends `<meta>` Content-Security-Policy tags for the snippet; runs wherever the snippet does.
    pub csp_meta: Rule,
    /// The main target's link rules: Browsersync's, then the percent-encoded origin's.
    pub links: [Rule; 2],
    pub rules: RuleStore,
    /// User rules that never matched a URL's body, by URL and validator.
    pub skips: Arc<SkipTable>,
    pub stats: Arc<Stats>,
    pub phase: watch::Receiver<Phase>,
    pub hosts: HostGuard,
    /// Address shown in links when a request has no Host header.
    pub local_addr: SocketAddr,
    /// `routes`: path prefixes served by other targets.
    pub routes: Routes,
    /// `serveStatic`: directories answered before any target (shared with the blocking lookups).
    pub local_files: Arc<Vec<StaticMount>>,
    /// Compressed copies of local text files.
    pub compressed_files: Arc<CompressedFiles>,
    /// `record` (or `server.record()`): the running recording, if any; `replay()` and `passthrough()`
    /// end it. Requests in flight keep the one they started with.
    pub recorder: RwLock<Option<Arc<crate::cassette::record::Recorder>>>,
    /// The live inspector (`inspector`); `None` when it is off.
    pub inspector: Option<Arc<crate::observe::inspector::Inspector>>,
    /// Where each exchange's record goes when its answer ends (log, stats, `onRequest`, inspector).
    pub observer: Arc<crate::observe::Observer>,
    /// The server's mode: a cassette requests are answered from (`replay`, `server.replay()`), or
    /// `None` to proxy them (`server.passthrough()`). A route with its own `replay` keeps it.
    pub replay: RwLock<Option<Arc<Player>>>,
    /// `rewriteRequestBodies`'s rules, by the request's `Host` and the target's origin.
    pub reverse_rules: RulesByHost,
    /// `rewriteJson`'s rules, by the request's `Host` (every target's origin in each).
    pub json_rules: RulesByHost,
    /// `proxy.proxyReq`, `proxy.proxyReqWs`, `proxy.proxyRes`: user hooks around the upstream exchange.
    pub hooks: crate::proxy::hooks::Hooks,
    /// Connect-style middleware run before the proxy, by a Node host on a loopback port.
    pub middleware: Option<crate::proxy::middleware::MiddlewareHost>,
}

/// Rules that write the proxy's origin as a request reached it, built once per `Host` (there are a
/// few: localhost, 127.0.0.1, a LAN address) and target. Building one is cheap (a literal matcher,
/// `crate::rewrite::OriginSwap`): the cache only spares the allocations.
pub(crate) struct RulesByHost(std::sync::Mutex<lru::LruCache<HostAndTarget, Arc<[Rule]>>>);

/// A request's `Host` and its target's origin.
type HostAndTarget = (String, String);

impl Default for RulesByHost {
    fn default() -> Self {
        RulesByHost(std::sync::Mutex::new(lru::LruCache::new(std::num::NonZeroUsize::new(32).expect("not zero"))))
    }
}

impl RulesByHost {
    /// The rules for requests that reached the proxy at `local_host` going to `target`, built by
    /// `build` the first time.
    pub(crate) fn get(&self, local_host: &str, target: &str, build: impl FnOnce() -> Vec<Rule>) -> Arc<[Rule]> {
        let key = (local_host.to_string(), target.to_string());
        if let Some(rules) = self.0.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            return rules.clone();
        }
        let rules: Arc<[Rule]> = build().into();
        self.0.lock().unwrap_or_else(PoisonError::into_inner).put(key, rules.clone());
        rules
    }
}

impl Shared {
    /// The rules for a request URL (path and query) and how its response is chosen for them,
    /// resp-modifier's way: rules whose `paths` match the URL, alone and forced; otherwise the snippet,
    /// the rules without `paths` and the link rewrite (Browsersync's order), forced on a whitelisted
    /// URL, never run on a blacklisted one, else for pages.
    pub(crate) fn rules_for_request(&self, url: &str) -> (Vec<Rule>, PageMode, Option<UserRules>) {
        let snapshot = self.rules.snapshot();
        let (generation, user) = (snapshot.0, &snapshot.1);
        let limited: Vec<Rule> =
            user.iter().filter(|(_, r)| r.paths().is_some_and(|p| p.matches(url))).map(|(_, r)| r.clone()).collect();
        if !limited.is_empty() {
            let user_rules = UserRules::of(&limited, 0, limited.len(), generation);
            return (limited, PageMode::Forced, user_rules);
        }
        let config = &self.config;
        let mode = if config.rewrite_whitelist.as_ref().is_some_and(|w| w.matches(url)) {
            PageMode::Forced
        } else if config.rewrite_blacklist.as_ref().is_some_and(|b| b.blacklists(url)) {
            return (Vec::new(), PageMode::Skipped, None);
        } else {
            PageMode::Pages
        };
        let mut rules = Vec::with_capacity(user.len() + 4);
        if let Some(snippet) = &self.snippet {
            rules.extend([self.csp_meta.clone(), snippet.clone()]);
        }
        let first = rules.len();
        rules.extend(self.rules.grouped(&snapshot).iter().cloned());
        let user_rules = UserRules::of(&rules, first, rules.len() - first, generation);
        rules.extend(self.links.iter().cloned());
        rules.extend(self.routes.links().iter().cloned());
        (rules, mode, user_rules)
    }

    /// A request's context, read once when it arrives; `config`: its target's (see
    /// [`Shared::upstream_for`]).
    pub(crate) fn request_ctx<B>(&self, config: &ProxyConfig, req: &Request<B>) -> RequestCtx {
        let rules = self.rules_for_request(request_path(req));
        let local_host =
            crate::proxy::security::request_authority(req).map_or_else(|| self.local_addr.to_string(), str::to_string);
        let cross_site = crate::proxy::security::from_another_site(req, self.local_addr, config, &self.hosts);
        RequestCtx::new(req, config, rules, local_host, cross_site)
    }

    /// The rules for a JSON response to a request that reached the proxy at `local_host`: every
    /// target's origin becomes the proxy's (`rewriteJson`).
    pub(crate) fn json_rules(&self, local_host: &str) -> Arc<[Rule]> {
        self.json_rules.get(local_host, "", || {
            let targets = std::iter::once(&self.config.target).chain(self.routes.targets());
            body::origin_rules(self.config.local_scheme(), local_host, targets)
        })
    }

    /// Builds what the first request would otherwise build, at start and off the workers: the literal
    /// rules grouped (a quarter second for 10,000), and the per-`Host` rules for the names a browser most
    /// likely gives this proxy (`localhost:port`, the bound address).
    pub(crate) fn prepare_first_request(&self) {
        self.rules.grouped(&self.rules.snapshot());
        let port = self.local_addr.port();
        let bound = (!self.local_addr.ip().is_unspecified()).then(|| self.local_addr.to_string());
        let config = &self.config;
        for host in std::iter::once(format!("localhost:{port}")).chain(bound) {
            if config.rewrite_request_bodies {
                let build = || body::reverse_rules(&host, &config.target);
                self.reverse_rules.get(&host, &config.target.origin(), build);
            }
            if config.rewrite_json {
                self.json_rules(&host);
            }
        }
        self.warm_page_code(&format!("localhost:{port}"));
    }

    /// Runs a sample page through a page's rules and the gzip encoder once, so that the first request finds
    /// that code in memory rather than faulting it in (most of what it cost more than the second once its
    /// buffers were made at start, benches/RESULTS.md). Not where a rule calls a JS function: it would see a
    /// page that no browser asked for.
    fn warm_page_code(&self, local_host: &str) {
        let (rules, _, _) = self.rules_for_request("/");
        if rules.iter().any(Rule::calls_function) {
            return;
        }
        let rewriter = || {
            let rewriter = Rewriter::new(&rules, local_host, self.config.max_match_bytes);
            match rules.iter().any(Rule::injects_snippet) {
                true => rewriter.with_page_policy(Arc::new(PagePolicy::new(self.config.local_scheme(), local_host))),
                false => rewriter,
            }
        };
        let origin = self.config.target.origin();
        let links: String =
            (0..40).map(|i| format!("<p><a href=\"{origin}/page/{i}\">page {i}</a> and some text</p>\n")).collect();
        let page = format!("<!doctype html><html><head><title>sample</title></head><body>\n{links}</body></html>\n");
        // Sent plain (a loopback target, asked for it so) and gzipped (any other): the second run decodes the
        // first one's output. What they write is not wanted, nor an error they might meet: a real page meets
        // its own.
        let mut gzipped = Vec::new();
        let mut plain = Pipeline::new(Encoding::Identity, Encoding::Gzip, rewriter());
        let _ = plain.push(page.as_bytes(), &mut gzipped).and_then(|()| plain.finish(&mut gzipped));
        let mut decoded = Pipeline::new(Encoding::Gzip, Encoding::Gzip, rewriter());
        let mut out = Vec::new();
        let _ = decoded.push(&gzipped, &mut out).and_then(|()| decoded.finish(&mut out));
    }

    /// The target a request path goes to: its route's, else `proxy`'s.
    pub(crate) fn upstream_for(&self, path: &str) -> Upstream<'_> {
        self.routes.resolve(path).unwrap_or(Upstream {
            config: &self.config,
            client: &self.client,
            websocket_tls: &self.websocket_tls,
            replay: None,
            recorder: None,
        })
    }

    /// The cassette a request to `target` is answered from, if any: its route's, else the server's.
    pub(crate) fn player_for(&self, target: &Upstream) -> Option<Arc<Player>> {
        target.replay.cloned().or_else(|| self.replay.read().unwrap_or_else(PoisonError::into_inner).clone())
    }

    /// The recording a request to `target` goes to, if any: its route's own, else the server's.
    /// (Not while a cassette answers it; whether its path is recorded is the recorder's to say.)
    pub(crate) fn recorder_for(&self, target: &Upstream) -> Option<Arc<crate::cassette::record::Recorder>> {
        target.recorder.cloned().or_else(|| self.recorder.read().unwrap_or_else(PoisonError::into_inner).clone())
    }
}
