//! The `ProxyServer` class JS gets from `start()`: a running core server, its stats, and the
//! handle that keeps Node's event loop alive until `stop()` or `unref()`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunction;
use napi::Env;
use napi_derive::napi;

use super::invalid;
use super::record::parse_record;
use super::replay::parse_replay;
use super::rules::{compile_off_thread, parse_rule, parse_rules, CallMode};
use super::status::{ProxyStats, RecordingStatus};
use crate::server;

/// A running proxy server. It keeps the Node process alive until `stop()` (or `unref()`).
#[napi(js_name = "ProxyServer")]
pub struct JsProxyServer {
    inner: Arc<server::ProxyServer>,
    url: String,
    port: u32,
    keep_alive: Mutex<Option<KeepAlive>>,
    /// `stop()` was called: rule changes are refused.
    stopped: AtomicBool,
}

impl JsProxyServer {
    /// Wraps a started server; `keep_alive` (none if making it failed) holds the event loop.
    pub(super) fn new(server: server::ProxyServer, keep_alive: Option<KeepAlive>) -> JsProxyServer {
        let url = server.url();
        let port = u32::from(server.local_addr().port());
        JsProxyServer {
            inner: Arc::new(server),
            url,
            port,
            keep_alive: Mutex::new(keep_alive),
            stopped: AtomicBool::new(false),
        }
    }
}

#[napi]
impl JsProxyServer {
    /// `http://host:port` of the proxy (`https://` when it serves HTTPS).
    #[napi(getter, catch_unwind)]
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The port the proxy listens on.
    #[napi(getter, catch_unwind)]
    pub fn port(&self) -> u32 {
        self.port
    }

    /// The path to open first: `startPath`, or the path of the `proxy` URL; `null` when neither.
    #[napi(getter, catch_unwind)]
    pub fn start_path(&self) -> Option<String> {
        self.inner.start_path().map(str::to_string)
    }

    /// The certificate the proxy serves, as PEM, when it serves HTTPS (`null` over plain HTTP): give
    /// it to a client as its `ca` to trust the proxy.
    #[napi(getter, catch_unwind)]
    pub fn certificate(&self) -> Option<String> {
        self.inner.certificate().map(str::to_string)
    }

    /// Adds a rule after the others, for requests that start from now on; returns its id.
    /// Throws on a bad rule, leaving the running rules as they were, and after `stop()`.
    /// Compiles on the JS thread: a large pattern blocks the event loop while its automaton is built
    /// (up to seconds near the 16 MiB cap); `addRuleAsync` does not.
    #[napi(catch_unwind, ts_args_type = "rule: RewriteRule")]
    pub fn add_rule(&self, env: Env, rule: Unknown) -> Result<u32> {
        self.check_running("addRule")?;
        let rule = parse_rule(&env, rule, "rule", CallMode::Threadsafe)?.compile()?;
        self.inner.add_rule(rule).map_err(|e| invalid(format!("rule: {e}")))
    }

    /// Like `addRule`, but the rule is compiled off the JS thread; resolves to its id, rejects on a
    /// bad rule (the running rules stay as they were) and after `stop()`.
    #[napi(catch_unwind, ts_args_type = "rule: RewriteRule", ts_return_type = "Promise<number>")]
    pub fn add_rule_async<'env>(&self, env: &'env Env, rule: Unknown) -> Result<PromiseRaw<'env, u32>> {
        let spec =
            self.check_running("addRuleAsync").and_then(|()| parse_rule(env, rule, "rule", CallMode::Threadsafe));
        let inner = self.inner.clone();
        env.spawn_future(async move {
            let rule = compile_off_thread(vec![spec?]).await?.pop();
            let rule = rule.ok_or_else(|| Error::new(Status::GenericFailure, "rule: compilation gave no rule"))?;
            inner.add_rule(rule).map_err(|e| invalid(format!("rule: {e}")))
        })
    }

    /// Replaces every rule (`rewriteRules` and those added since) at once, for requests that start
    /// from now on: a request sees the old rules or the new ones, never a mix. Returns the new rules'
    /// ids, in order. Throws naming the bad rule (`rules[2]: ...`), leaving the running rules as they
    /// were, and after `stop()`. Compiles on the JS thread, as `addRule`.
    #[napi(catch_unwind, ts_args_type = "rules: ReadonlyArray<RewriteRule>")]
    pub fn set_rules(&self, env: Env, rules: Unknown) -> Result<Vec<u32>> {
        self.check_running("setRules")?;
        let specs = parse_rules(&env, rules, "rules", CallMode::Threadsafe)?;
        let rules = specs.into_iter().map(|spec| spec.compile()).collect::<Result<Vec<_>>>()?;
        self.inner.set_rules(rules).map_err(|e| invalid(format!("rules: {e}")))
    }

    /// Removes a rule by the id `addRule` returned (the rules of `rewriteRules` have ids 0, 1, 2...);
    /// false if there is no such rule. Throws after `stop()`.
    #[napi(catch_unwind)]
    pub fn remove_rule(&self, id: u32) -> Result<bool> {
        self.check_running("removeRule")?;
        Ok(self.inner.remove_rule(id))
    }

    /// For lib/server.js's `setMiddleware()`: the routes the middleware host now serves.
    #[napi(catch_unwind)]
    pub fn set_middleware_routes(&self, routes: Vec<String>) -> Result<()> {
        self.check_running("setMiddleware")?;
        if self.inner.set_middleware_routes(routes) {
            Ok(())
        } else {
            Err(Error::new(Status::GenericFailure, "this server was started without a middleware host"))
        }
    }

    /// Where the `record` option's recording stands (`null` when not recording): exchanges written
    /// and refused, the last refusal's reason (naming the field), and the write error that stopped it.
    /// Only the server's own `record` (or `server.record()`); `recordings()` adds the routes'.
    #[napi(catch_unwind)]
    pub fn recording(&self) -> Option<RecordingStatus> {
        self.inner.recording().map(RecordingStatus::from)
    }

    /// Every recording running: the server's own (as `recording()`), then each route's `record`
    /// with its `route` prefix; `[]` when nothing is recorded.
    #[napi(catch_unwind)]
    pub fn recordings(&self) -> Vec<RecordingStatus> {
        self.inner.recordings().into_iter().map(RecordingStatus::from).collect()
    }

    /// The counters so far: requests, rewritten and passed-through bodies, upstream errors, matches
    /// per rule, latencies (see `ProxyStats`). Cheap: read from atomics, no lock on the request path.
    #[napi(catch_unwind)]
    pub fn stats(&self) -> ProxyStats {
        ProxyStats::from((self.inner.stats(), self.inner.observations()))
    }

    /// Answers requests from a cassette from now on (routes with their own `replay` keep theirs);
    /// resolves once the cassette is read, rejects naming the file and line of a bad one (the mode
    /// stays as it was). Each call starts the cassette over (identical requests from the first).
    #[napi(catch_unwind, ts_args_type = "options: ReplayOptions", ts_return_type = "Promise<void>")]
    pub fn replay<'env>(&self, env: &'env Env, options: Unknown) -> Result<PromiseRaw<'env, ()>> {
        let options = self.check_running("replay").and_then(|()| parse_replay(env, options, "replay"));
        let inner = self.inner.clone();
        env.spawn_future(async move {
            inner.replay(options?).await.map_err(|e| Error::new(Status::GenericFailure, format!("replay: {e}")))
        })
    }

    /// Proxies requests to the target again (after `replay()`).
    #[napi(catch_unwind)]
    pub fn passthrough(&self) -> Result<()> {
        self.check_running("passthrough")?;
        self.inner.passthrough();
        Ok(())
    }

    /// Records exchanges to a new cassette (created, or emptied) from now on, proxying them: ends
    /// replay and any earlier recording. Rejects naming `record.path` when the file cannot be written.
    #[napi(catch_unwind, ts_args_type = "options: RecordOptions", ts_return_type = "Promise<void>")]
    pub fn record<'env>(&self, env: &'env Env, options: Unknown) -> Result<PromiseRaw<'env, ()>> {
        let options = self.check_running("record").and_then(|()| parse_record(options));
        let inner = self.inner.clone();
        env.spawn_future(async move {
            inner.record(options?).map_err(|e| Error::new(Status::GenericFailure, format!("record.path: {e}")))
        })
    }

    /// Lets the Node process exit while the server still runs (like `net.Server#unref`).
    #[napi(catch_unwind)]
    pub fn unref(&self) {
        // Poisoning policy: recover; the Option is replaced whole, never left half-updated.
        self.keep_alive.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    }

    /// Stops accepting connections (the port is free when the Promise resolves), lets in-flight
    /// responses finish within the grace period, then closes the rest.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn stop<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        self.stopped.store(true, Ordering::SeqCst);
        self.unref();
        let inner = self.inner.clone();
        env.spawn_future(async move {
            inner.stop().await;
            Ok(())
        })
    }
}

impl JsProxyServer {
    /// An error naming `method` once `stop()` has been called: a stopped server's rules serve nothing.
    fn check_running(&self, method: &str) -> Result<()> {
        if self.stopped.load(Ordering::SeqCst) {
            return Err(Error::new(
                Status::GenericFailure,
                format!("{method}: the server is stopped (stop() was called); start a new one"),
            ));
        }
        Ok(())
    }
}

/// Holds a strong threadsafe function, which is what keeps Node's event loop alive.
pub(super) struct KeepAlive {
    /// Never called: holding it is the point, and dropping it lets the event loop go.
    _strong: ThreadsafeFunction<(), (), (), Status, false, false, 0>,
}

impl KeepAlive {
    pub(super) fn new(env: &Env) -> Result<KeepAlive> {
        let noop = env.create_function_from_closure::<(), (), _>("devproxyKeepAlive", |_| Ok(()))?;
        let strong = noop.build_threadsafe_function::<()>().callee_handled::<false>().weak::<false>().build()?;
        Ok(KeepAlive { _strong: strong })
    }
}
