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
use crate::cassette::replay::Player;
use crate::codec;
use crate::config::{ProxyConfig, StaticMount};
use crate::error::RuleError;
use crate::forward::UpstreamClient;
use crate::local_files::CompressedFiles;
use crate::rewrite::{check_memory, Exchange, Rule};
use crate::routes::{Routes, Upstream};
use crate::security::HostGuard;
use crate::skip::{SkipTable, SKIPPABLE_RULES};
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
}

/// Rules that write the proxy's origin as a request reached it, compiled once per `Host` (there are a
/// few: localhost, 127.0.0.1, a LAN address) and target.
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
    pub(crate) fn get(
        &self,
        local_host: &str,
        target: &str,
        build: impl FnOnce() -> Result<Vec<Rule>, RuleError>,
    ) -> Result<Arc<[Rule]>, RuleError> {
        let key = (local_host.to_string(), target.to_string());
        if let Some(rules) = self.0.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            return Ok(rules.clone());
        }
        let rules: Arc<[Rule]> = build()?.into();
        self.0.lock().unwrap_or_else(PoisonError::into_inner).put(key, rules.clone());
        Ok(rules)
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

    /// The rules for a JSON response to a request that reached the proxy at `local_host`: every
    /// target's origin becomes the proxy's (`rewriteJson`).
    pub(crate) fn json_rules(&self, local_host: &str) -> Result<Arc<[Rule]>, RuleError> {
        self.json_rules.get(local_host, "", || {
            let targets = std::iter::once(&self.config.target).chain(self.routes.targets());
            body::origin_rules(self.config.local_scheme(), local_host, targets)
        })
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

/// Where a request's user rules sit among its rules, and the rule set's generation: what the skip
/// table needs. `None` when a rule replaces through a function (then nothing is skipped: its
/// output may differ per request, and so may what the rules after it see).
#[derive(Debug, Clone, Copy)]
pub(crate) struct UserRules {
    pub first: usize,
    /// At most [`SKIPPABLE_RULES`]; rules past them always run.
    pub count: usize,
    pub generation: u64,
}

impl UserRules {
    fn of(rules: &[Rule], first: usize, count: usize, generation: u64) -> Option<UserRules> {
        if count == 0 || rules.iter().any(Rule::calls_function) {
            return None;
        }
        Some(UserRules { first, count: count.min(SKIPPABLE_RULES), generation })
    }
}

/// Which responses of a request are rewritten (resp-modifier's three ways).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageMode {
    /// Pages only: `Accept` mentions html, the URL is not an asset, the body starts like HTML (and,
    /// with `rewriteTextTypes`, text types).
    Pages,
    /// Any response (a rule's `paths`, `snippetOptions.whitelist`), whatever the `Accept` header,
    /// extension or body say.
    Forced,
    /// None (`snippetOptions.blacklist`, `ignorePaths`).
    Skipped,
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
    /// A browser says it comes from another site's page: no `reqHeaders` credentials.
    pub cross_site: bool,
    /// A page asked of a loopback target uncompressed, compressed here once after rewriting.
    pub upstream_identity: bool,
    /// Rules as they are when the request starts: `addRule` applies to later requests only.
    pub rules: Vec<Rule>,
    /// Which responses the rules run on.
    pub mode: PageMode,
    /// The user rules among `rules`, for the skip table (`None`: nothing may be skipped).
    pub user_rules: Option<UserRules>,
    /// What a replacement function is shown of the request (its `res` is filled in by the body
    /// phase); only when a rule calls a function.
    pub exchange: Option<Exchange>,
}

impl RequestCtx {
    /// `config`: the one of the request's target (see [`Shared::upstream_for`]).
    pub(crate) fn new<B>(shared: &Shared, config: &ProxyConfig, req: &Request<B>) -> RequestCtx {
        let headers = req.headers();
        let path_and_query = req.uri().path_and_query().map_or("/", |p| p.as_str()).to_string();
        let accept = header_string(headers, header::ACCEPT);
        let accept_encoding = header_string(headers, header::ACCEPT_ENCODING);
        let (rules, mode, user_rules) = shared.rules_for_request(&path_and_query);
        let page = match mode {
            PageMode::Pages => body::is_page_request(accept.as_deref(), &path_and_query),
            PageMode::Forced => true,
            PageMode::Skipped => false,
        };
        let upstream_identity =
            config.fetches_pages_uncompressed() && page && !codec::accepted(accept_encoding.as_deref()).is_empty();
        let exchange = rules.iter().any(Rule::calls_function).then(|| Exchange {
            method: req.method().to_string(),
            url: request_target(req),
            request_headers: header_pairs(headers),
            ..Exchange::default()
        });
        RequestCtx {
            method: req.method().clone(),
            local_host: crate::security::request_authority(req)
                .map_or_else(|| shared.local_addr.to_string(), str::to_string),
            url: format!("{}{}", config.target.origin(), path_and_query),
            cross_site: crate::security::from_another_site(req, shared.local_addr, config, &shared.hosts),
            path_and_query,
            accept,
            accept_encoding,
            upstream_identity,
            rules,
            mode,
            user_rules,
            exchange,
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
            mode: self.mode,
        }
    }
}

fn header_string(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// The request target as the client sent it: origin-form for HTTP/1 (`/path?query`, or the absolute
/// URL of an absolute-form request), path and query for HTTP/2, as Node's `req.url` has it.
fn request_target<B>(req: &Request<B>) -> String {
    match req.version() {
        http::Version::HTTP_2 | http::Version::HTTP_3 => req.uri().path_and_query().map_or("/", |p| p.as_str()).into(),
        _ => req.uri().to_string(),
    }
}

/// Headers as (lower-case name, value) pairs in order, values decoded lossily.
pub(crate) fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| (name.as_str().to_string(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
        .collect()
}
