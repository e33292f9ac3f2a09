//! The Node binding: JS values in, core types out, core errors turned into JS errors that name the
//! culprit. Nothing else lives here; the proxy itself is in the core modules.

// `#[napi]` registers exports only outside `cfg(test)`.
#![cfg_attr(test, allow(dead_code))]

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunction;
use napi::{check_status, sys, Env, JsValue, ValueType};
use napi_derive::napi;

use crate::config::{AllowedHosts, ProxyConfig, Target, UpstreamCompression};
use crate::error::{ConfigError, StartError};
use crate::rewrite::{self, ReplaceCall, ReplaceFn, Rule, RuleReplacement, DEFAULT_MAX_MATCH_BYTES};
use crate::server;

/// Where the proxy forwards to: a URL string, or an object with more settings.
// Declared for index.d.ts; parse_options reads options field by field to name the bad one.
#[allow(dead_code)]
#[napi(object)]
pub struct ProxyTargetOptions {
    /// The upstream site, e.g. `https://example.com`. Only scheme, host and port are used.
    pub target: String,
    /// Tunnel WebSocket upgrades (default true).
    pub ws: Option<bool>,
    /// Headers set on every upstream request.
    pub req_headers: Option<std::collections::HashMap<String, String>>,
    /// `{ stripDomain: true }` (default) removes `Domain=` from `Set-Cookie`.
    pub cookies: Option<CookieOptions>,
    /// Verify the upstream's TLS certificate (default true). `false` accepts self-signed ones.
    pub secure: Option<bool>,
}

// Declared for index.d.ts; parse_options reads options field by field to name the bad one.
#[allow(dead_code)]
#[napi(object)]
pub struct CookieOptions {
    pub strip_domain: Option<bool>,
}

/// A rewrite rule, as in Browsersync's `rewriteRules`.
// Declared for index.d.ts; parse_options reads options field by field to name the bad one.
#[allow(dead_code)]
#[napi(object)]
pub struct RewriteRule {
    /// A RegExp (JS syntax and flags; no lookaround, backreferences or `y`) or a literal string
    /// (replaces its first occurrence, like `String.prototype.replace`).
    #[napi(ts_type = "RegExp | string")]
    pub r#match: String,
    /// A replacement string (`$&`, `$1`..`$99`, `$<name>`, `$$`) or a function called for each match
    /// with JS's arguments `(match, p1, ..., pn, offset, string, groups)`: `offset` is the match's
    /// UTF-16 index in the rule's input; `string` is that input for `rewrite()` of a string and
    /// `undefined` on streamed bodies (the proxy, `rewrite()` of chunks), which are never held whole;
    /// `groups` (only when the pattern has named groups) maps each name to its text or `undefined`.
    /// Function rules run in JS and are slower.
    #[napi(ts_type = "string | ((match: string, ...args: any[]) => string)")]
    pub replace: String,
}

/// Options of `start()`; names follow Browsersync's.
// Declared for index.d.ts; parse_options reads options field by field to name the bad one.
#[allow(dead_code)]
#[napi(object)]
pub struct ProxyOptions {
    #[napi(ts_type = "string | ProxyTargetOptions")]
    pub proxy: String,
    /// Port to listen on (default 3000); 0 picks a free one.
    pub port: Option<u32>,
    /// Address to listen on (default `127.0.0.1`). `0.0.0.0` exposes the proxy, and through it the
    /// target, to the whole network.
    pub host: Option<String>,
    /// User rules, applied in order after the snippet and before the link rewrite.
    pub rewrite_rules: Option<Vec<RewriteRule>>,
    /// HTML placed right after the first `<body ...>` tag of rewritten pages.
    pub snippet: Option<String>,
    /// Also rewrite CSS, JS, JSON, SVG and XML responses (Browsersync only rewrites HTML).
    pub rewrite_text_types: Option<bool>,
    /// Longest text one pending match may hold back (default 65536).
    pub max_match_bytes: Option<u32>,
    /// Longest wait for upstream response headers, and between body chunks (default 30000).
    pub upstream_timeout_ms: Option<u32>,
    /// How long `stop()` lets in-flight responses finish (default 5000).
    pub grace_period_ms: Option<u32>,
    /// No log lines on stderr (default false).
    pub quiet: Option<bool>,
    /// Whether pages are fetched compressed from the target: `'auto'` (default) fetches them
    /// uncompressed from a loopback target and compressed from any other, `'always'`, `'never'`.
    /// The client gets a compressed page either way.
    #[napi(ts_type = "'auto' | 'always' | 'never'")]
    pub upstream_compression: Option<String>,
    /// Client connections served at once (default 1024); further ones wait until one closes.
    pub max_connections: Option<u32>,
    /// Host names the proxy answers to; any other `Host` gets 403 (DNS rebinding). `'auto'`
    /// (default): `localhost`, `*.localhost`, IP addresses, `host` and the machine's host name. An
    /// array adds names to these; `'.example.com'` allows example.com and its subdomains. `'all'`
    /// switches the check off: unsafe, any web page can then read the proxied site.
    #[napi(ts_type = "'auto' | 'all' | string[]")]
    pub allowed_hosts: Option<String>,
    /// Origins, besides the proxy's and the target's, whose pages may open WebSockets through the
    /// proxy, e.g. `['http://localhost:5173']`; others get 403 (cross-site WebSocket hijacking).
    pub allowed_origins: Option<Vec<String>>,
}

/// What the server has done so far.
#[napi(object)]
pub struct ProxyStats {
    pub requests: f64,
    pub rewritten: f64,
    pub passed_through: f64,
    pub upstream_errors: f64,
    /// Match candidates longer than `maxMatchBytes`, left unreplaced.
    pub abandoned_matches: f64,
    pub websockets: f64,
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(Status::InvalidArg, message.into())
}

fn config_error(e: ConfigError) -> Error {
    invalid(e.to_string())
}

/// Starts a proxy. Resolves to a running `ProxyServer`; rejects with an error naming the bad
/// option, rule or port.
/// Reading the options happens on the JS thread; compiling the rules (DFA construction, up to the
/// 16 MiB cap) on tokio's blocking pool, so a large rule never stalls Node's event loop.
#[napi(catch_unwind, ts_args_type = "options: ProxyOptions", ts_return_type = "Promise<ProxyServer>")]
pub fn start<'env>(env: &'env Env, options: Unknown) -> Result<PromiseRaw<'env, JsProxyServer>> {
    let parsed = parse_options(env, options);
    let keep_alive = parsed.as_ref().ok().map(|_| KeepAlive::new(env)).transpose()?;
    env.spawn_future(async move {
        let (mut config, specs) = parsed?;
        config.rules = compile_off_thread(specs).await?;
        let server = server::ProxyServer::start(config).await.map_err(|e| match e {
            StartError::Config(e) => config_error(e),
            other => Error::new(Status::GenericFailure, other.to_string()),
        })?;
        let url = server.url();
        let port = u32::from(server.local_addr().port());
        Ok(JsProxyServer { inner: Arc::new(server), url, port, keep_alive: Mutex::new(keep_alive) })
    })
}

/// Applies `rules` to a string with the engine the proxy runs on bodies, for trying rules. Equal to
/// `rules.reduce((s, r) => s.replace(r.match, r.replace), input)`. An array of chunks (strings,
/// Buffers or Uint8Arrays, cut anywhere, even inside a character) is streamed through the engine
/// chunk by chunk as a proxied body is, and gives the same result as their concatenation; function
/// rules then get `undefined` as `string`, as in the proxy. Bytes that are not UTF-8 come out as U+FFFD.
#[napi(catch_unwind, ts_args_type = "input: string | Array<string | Buffer | Uint8Array>, rules: RewriteRule[]")]
pub fn rewrite(env: Env, input: Unknown, rules: Unknown) -> Result<String> {
    // The functions of this call's rules, registered for the JS thread; freed however the call ends.
    let scope = DirectScope::open();
    let chunks = match input.get_type()? {
        ValueType::String => None,
        ValueType::Object if input.is_array()? => Some(read_chunks(input)?),
        _ => {
            return Err(invalid(format!(
                "input must be a string or an array of strings and Buffers, got {}",
                type_name(&input)
            )))
        }
    };
    let rules = parse_rules(&env, rules, "rules", CallMode::Direct)?
        .into_iter()
        .map(RuleSpec::compile)
        .collect::<Result<Vec<_>>>()?;
    let failed = |e: rewrite::ReplaceError| Error::new(Status::GenericFailure, e.to_string());
    // The whole string is in hand: no match is ever too long to wait for.
    let uncapped = usize::MAX / 4;
    let Some(chunks) = chunks else {
        let text = String::from_unknown(input)?;
        // A function rule gets its own input as `string`: the rules before it are applied first.
        // Runs of rules without functions go through the engine together.
        let mut bytes = text.into_bytes();
        let mut first = 0;
        for end in 1..=rules.len() {
            if end < rules.len() && !rules[end].calls_function() {
                continue;
            }
            let run = &rules[first..end];
            if run[0].calls_function() {
                // Rule 0 sees the caller's own string, lone surrogates and all.
                scope.set_string(if first == 0 {
                    input.raw()
                } else {
                    let text = std::str::from_utf8(&bytes).map_err(|e| invalid(e.to_string()))?;
                    env.create_string(text)?.raw()
                });
            }
            bytes = rewrite::rewrite_bytes(&bytes, run, "", uncapped).map_err(failed)?;
            first = end;
        }
        return String::from_utf8(bytes).map_err(|e| Error::new(Status::GenericFailure, e.to_string()));
    };
    let mut rewriter = rewrite::Rewriter::new(&rules, "", uncapped);
    let mut out = Vec::new();
    for chunk in &chunks {
        rewriter.push(chunk, &mut out).map_err(failed)?;
    }
    rewriter.finish(&mut out).map_err(failed)?;
    Ok(String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// The chunks of `rewrite([...])`, as bytes; an element of another type is named by its index.
fn read_chunks(input: Unknown) -> Result<Vec<Vec<u8>>> {
    let array = Object::from_unknown(input)?;
    let length = array.get_array_length()?;
    (0..length)
        .map(|i| {
            let chunk: Unknown = array.get_element(i)?;
            let wrong =
                |what: &str| invalid(format!("input[{i}] must be a string, a Buffer or a Uint8Array, got {what}"));
            match chunk.get_type()? {
                ValueType::String => Ok(String::from_unknown(chunk)?.into_bytes()),
                ValueType::Object if chunk.is_typedarray()? => match Uint8ArraySlice::from_unknown(chunk) {
                    Ok(bytes) => Ok(bytes.to_vec()),
                    Err(_) => Err(wrong("another typed array")),
                },
                _ => Err(wrong(type_name(&chunk))),
            }
        })
        .collect()
}

/// Test hook, not part of the API: panics on the JS thread (`'sync'`) or inside the returned
/// Promise's task (`'async'`), so tests can show that a panic becomes a JS error, never a crash.
#[napi(catch_unwind, js_name = "__panicProbe", ts_return_type = "Promise<void>")]
pub fn panic_probe<'env>(env: &'env Env, place: String) -> Result<PromiseRaw<'env, ()>> {
    if place == "sync" {
        panic!("panic probe: binding (sync)");
    }
    env.spawn_future(async move {
        if place == "async" {
            panic!("panic probe: binding (async)");
        }
        Ok(())
    })
}

/// A running proxy server. It keeps the Node process alive until `stop()` (or `unref()`).
#[napi(js_name = "ProxyServer")]
pub struct JsProxyServer {
    inner: Arc<server::ProxyServer>,
    url: String,
    port: u32,
    keep_alive: Mutex<Option<KeepAlive>>,
}

#[napi]
impl JsProxyServer {
    /// `http://host:port` of the proxy.
    #[napi(getter, catch_unwind)]
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The port the proxy listens on.
    #[napi(getter, catch_unwind)]
    pub fn port(&self) -> u32 {
        self.port
    }

    /// Adds a rule after the others, for requests that start from now on; returns its id.
    /// Throws on a bad rule, leaving the running rules as they were.
    /// Compiles on the JS thread: a large pattern blocks the event loop while its automaton is built
    /// (up to seconds near the 16 MiB cap); `addRuleAsync` does not.
    #[napi(catch_unwind, ts_args_type = "rule: RewriteRule")]
    pub fn add_rule(&self, env: Env, rule: Unknown) -> Result<u32> {
        let rule = parse_rule(&env, rule, "rule", CallMode::Threadsafe)?.compile()?;
        self.inner.add_rule(rule).map_err(|e| invalid(format!("rule: {e}")))
    }

    /// Like `addRule`, but the rule is compiled off the JS thread; resolves to its id, rejects on a
    /// bad rule (the running rules stay as they were).
    #[napi(catch_unwind, ts_args_type = "rule: RewriteRule", ts_return_type = "Promise<number>")]
    pub fn add_rule_async<'env>(&self, env: &'env Env, rule: Unknown) -> Result<PromiseRaw<'env, u32>> {
        let spec = parse_rule(env, rule, "rule", CallMode::Threadsafe);
        let inner = self.inner.clone();
        env.spawn_future(async move {
            let rule = compile_off_thread(vec![spec?]).await?.pop();
            let rule = rule.ok_or_else(|| Error::new(Status::GenericFailure, "rule: compilation gave no rule"))?;
            inner.add_rule(rule).map_err(|e| invalid(format!("rule: {e}")))
        })
    }

    /// Removes a rule by the id `addRule` returned (the rules of `rewriteRules` have ids 0, 1, 2...);
    /// false if there is no such rule.
    #[napi(catch_unwind)]
    pub fn remove_rule(&self, id: u32) -> bool {
        self.inner.remove_rule(id)
    }

    #[napi(catch_unwind)]
    pub fn stats(&self) -> ProxyStats {
        let s = self.inner.stats();
        ProxyStats {
            requests: s.requests as f64,
            rewritten: s.rewritten as f64,
            passed_through: s.passed_through as f64,
            upstream_errors: s.upstream_errors as f64,
            abandoned_matches: s.abandoned_matches as f64,
            websockets: s.websockets as f64,
        }
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
        self.unref();
        let inner = self.inner.clone();
        env.spawn_future(async move {
            inner.stop().await;
            Ok(())
        })
    }
}

/// Holds a strong threadsafe function, which is what keeps Node's event loop alive.
struct KeepAlive(#[allow(dead_code)] ThreadsafeFunction<(), (), (), Status, false, false, 0>);

impl KeepAlive {
    fn new(env: &Env) -> Result<KeepAlive> {
        let noop = env.create_function_from_closure::<(), (), _>("devproxyKeepAlive", |_| Ok(()))?;
        Ok(KeepAlive(noop.build_threadsafe_function::<()>().callee_handled::<false>().weak::<false>().build()?))
    }
}

fn get<'env>(object: &Object<'env>, name: &str) -> Result<Option<Unknown<'env>>> {
    let value: Unknown = object.get_named_property(name)?;
    Ok(match value.get_type()? {
        ValueType::Undefined | ValueType::Null => None,
        _ => Some(value),
    })
}

fn type_name(value: &Unknown) -> &'static str {
    match value.get_type() {
        Ok(ValueType::String) => "a string",
        Ok(ValueType::Number) => "a number",
        Ok(ValueType::Boolean) => "a boolean",
        Ok(ValueType::Object) => "an object",
        Ok(ValueType::Function) => "a function",
        _ => "another type",
    }
}

fn expect_string(value: Unknown, option: &str) -> Result<String> {
    match value.get_type()? {
        ValueType::String => String::from_unknown(value),
        _ => Err(invalid(format!("option `{option}` must be a string, got {}", type_name(&value)))),
    }
}

fn expect_bool(value: Unknown, option: &str) -> Result<bool> {
    match value.get_type()? {
        ValueType::Boolean => bool::from_unknown(value),
        _ => Err(invalid(format!("option `{option}` must be a boolean, got {}", type_name(&value)))),
    }
}

fn expect_u32(value: Unknown, option: &str, max: u32) -> Result<u32> {
    let number = match value.get_type()? {
        ValueType::Number => f64::from_unknown(value)?,
        _ => return Err(invalid(format!("option `{option}` must be a number, got {}", type_name(&value)))),
    };
    if number.fract() != 0.0 || !(0.0..=f64::from(max)).contains(&number) {
        return Err(invalid(format!("option `{option}` must be a whole number from 0 to {max}, got {number}")));
    }
    Ok(number as u32)
}

fn expect_object<'env>(value: Unknown<'env>, option: &str) -> Result<Object<'env>> {
    match value.get_type()? {
        ValueType::Object => Object::from_unknown(value),
        _ => Err(invalid(format!("option `{option}` must be an object, got {}", type_name(&value)))),
    }
}

/// Reads `start()`'s options; the rules come back uncompiled (see `compile_off_thread`).
fn parse_options(env: &Env, options: Unknown) -> Result<(ProxyConfig, Vec<RuleSpec>)> {
    let options = expect_object(options, "options")?;
    let proxy = get(&options, "proxy")?.ok_or_else(|| config_error(ConfigError::MissingTarget))?;
    let mut config = match proxy.get_type()? {
        ValueType::String => ProxyConfig::new(Target::parse(&expect_string(proxy, "proxy")?).map_err(config_error)?),
        ValueType::Object => {
            let proxy = expect_object(proxy, "proxy")?;
            let target = get(&proxy, "target")?.ok_or_else(|| config_error(ConfigError::MissingTarget))?;
            let mut config =
                ProxyConfig::new(Target::parse(&expect_string(target, "proxy.target")?).map_err(config_error)?);
            if let Some(ws) = get(&proxy, "ws")? {
                config.ws = expect_bool(ws, "proxy.ws")?;
            }
            if let Some(secure) = get(&proxy, "secure")? {
                config.verify_tls = expect_bool(secure, "proxy.secure")?;
            }
            if let Some(cookies) = get(&proxy, "cookies")? {
                let cookies = expect_object(cookies, "proxy.cookies")?;
                if let Some(strip) = get(&cookies, "stripDomain")? {
                    config.strip_cookie_domain = expect_bool(strip, "proxy.cookies.stripDomain")?;
                }
            }
            if let Some(headers) = get(&proxy, "reqHeaders")? {
                let headers = expect_object(headers, "proxy.reqHeaders")?;
                for name in Object::keys(&headers)? {
                    let value =
                        get(&headers, &name)?.ok_or_else(|| invalid(format!("proxy.reqHeaders['{name}'] is empty")))?;
                    let value = expect_string(value, &format!("proxy.reqHeaders['{name}']"))?;
                    config.add_req_header(&name, &value).map_err(config_error)?;
                }
            }
            config
        }
        _ => {
            return Err(invalid(format!(
                "option `proxy` must be a URL string or {{ target }}, got {}",
                type_name(&proxy)
            )))
        }
    };
    if let Some(port) = get(&options, "port")? {
        config.port = expect_u32(port, "port", 65535)? as u16;
    }
    if let Some(host) = get(&options, "host")? {
        config.host = expect_string(host, "host")?;
    }
    if let Some(snippet) = get(&options, "snippet")? {
        config.snippet = Some(expect_string(snippet, "snippet")?);
    }
    if let Some(flag) = get(&options, "rewriteTextTypes")? {
        config.rewrite_text_types = expect_bool(flag, "rewriteTextTypes")?;
    }
    if let Some(quiet) = get(&options, "quiet")? {
        config.quiet = expect_bool(quiet, "quiet")?;
    }
    if let Some(value) = get(&options, "upstreamCompression")? {
        let value = expect_string(value, "upstreamCompression")?;
        config.upstream_compression = UpstreamCompression::parse(&value).ok_or_else(|| {
            invalid(format!("option `upstreamCompression` must be 'auto', 'always' or 'never', got '{value}'"))
        })?;
    }
    if let Some(max) = get(&options, "maxMatchBytes")? {
        config.max_match_bytes = expect_u32(max, "maxMatchBytes", 64 << 20)?.max(1) as usize;
    } else {
        config.max_match_bytes = DEFAULT_MAX_MATCH_BYTES;
    }
    if let Some(ms) = get(&options, "upstreamTimeoutMs")? {
        config.upstream_timeout =
            Duration::from_millis(u64::from(expect_u32(ms, "upstreamTimeoutMs", u32::MAX)?.max(1)));
    }
    if let Some(ms) = get(&options, "gracePeriodMs")? {
        config.grace_period = Duration::from_millis(u64::from(expect_u32(ms, "gracePeriodMs", u32::MAX)?));
    }
    if let Some(hosts) = get(&options, "allowedHosts")? {
        config.allowed_hosts = parse_allowed_hosts(hosts)?;
    }
    if let Some(origins) = get(&options, "allowedOrigins")? {
        for (index, origin) in
            string_array(origins, "allowedOrigins", "origins such as 'http://localhost:5173'")?.iter().enumerate()
        {
            config.add_allowed_origin(index, origin).map_err(config_error)?;
        }
    }
    if let Some(max) = get(&options, "maxConnections")? {
        config.max_connections = expect_u32(max, "maxConnections", 1 << 20)?.max(1) as usize;
    }
    // Undocumented test hook: requests under /__devproxy_panic_probe/ panic (see config.rs).
    if let Some(flag) = get(&options, "__panicProbes")? {
        config.panic_probes = expect_bool(flag, "__panicProbes")?;
    }
    let specs = match get(&options, "rewriteRules")? {
        Some(rules) => parse_rules(env, rules, "rewriteRules", CallMode::Threadsafe)?,
        None => Vec::new(),
    };
    Ok((config, specs))
}

/// Compiles rules on tokio's blocking pool (building their automata may take a while).
async fn compile_off_thread(specs: Vec<RuleSpec>) -> Result<Vec<Rule>> {
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    tokio::task::spawn_blocking(move || specs.into_iter().map(RuleSpec::compile).collect::<Result<Vec<_>>>())
        .await
        .map_err(|e| Error::new(Status::GenericFailure, format!("compiling rules failed: {e}")))?
}

/// A rule read from JS, not yet compiled.
struct RuleSpec {
    /// Where it came from, for errors: `rewriteRules[2]`, `rule`.
    name: String,
    pattern: Pattern,
    replacement: RuleReplacement,
}

enum Pattern {
    Literal(String),
    Regex { source: String, flags: String },
}

impl RuleSpec {
    fn compile(self) -> Result<Rule> {
        let compiled = match &self.pattern {
            Pattern::Literal(text) => Rule::literal(text, self.replacement),
            Pattern::Regex { source, flags } => Rule::regex(source, flags, self.replacement),
        };
        compiled.map_err(|e| invalid(format!("{}: {e}", self.name)))
    }
}

fn parse_allowed_hosts(value: Unknown) -> Result<AllowedHosts> {
    if value.get_type()? == ValueType::String {
        return match expect_string(value, "allowedHosts")?.as_str() {
            "auto" => Ok(AllowedHosts::Auto),
            "all" => Ok(AllowedHosts::All),
            other => Err(invalid(format!(
                "option `allowedHosts` must be 'auto', 'all' or an array of host names, got '{other}' (write ['{other}'])"
            ))),
        };
    }
    let entries = string_array(value, "allowedHosts", "host names, or 'auto' or 'all'")?;
    AllowedHosts::from_entries(&entries).map_err(config_error)
}

/// An array of strings; the error names the option, or the element that is not a string.
fn string_array(value: Unknown, option: &str, what: &str) -> Result<Vec<String>> {
    if !value.is_array()? {
        return Err(invalid(format!("option `{option}` must be an array of {what}, got {}", type_name(&value))));
    }
    let array = Object::from_unknown(value)?;
    (0..array.get_array_length()?)
        .map(|i| expect_string(array.get_element::<Unknown>(i)?, &format!("{option}[{i}]")))
        .collect()
}

fn parse_rules(env: &Env, rules: Unknown, option: &str, mode: CallMode) -> Result<Vec<RuleSpec>> {
    if !rules.is_array()? {
        return Err(invalid(format!(
            "option `{option}` must be an array of {{ match, replace }}, got {}",
            type_name(&rules)
        )));
    }
    let array = Object::from_unknown(rules)?;
    let length = array.get_array_length()?;
    if length as usize > rewrite::MAX_RULES {
        return Err(invalid(format!(
            "option `{option}` has {length} rules; at most {} are allowed",
            rewrite::MAX_RULES
        )));
    }
    (0..length).map(|i| parse_rule(env, array.get_element::<Unknown>(i)?, &format!("{option}[{i}]"), mode)).collect()
}

#[derive(Clone, Copy)]
enum CallMode {
    /// Called from the proxy's threads, through a threadsafe function.
    Threadsafe,
    /// Called on the JS thread during `rewrite()`.
    Direct,
}

fn parse_rule(env: &Env, rule: Unknown, name: &str, mode: CallMode) -> Result<RuleSpec> {
    if rule.get_type()? != ValueType::Object {
        return Err(invalid(format!("{name} must be an object {{ match, replace }}, got {}", type_name(&rule))));
    }
    let rule = Object::from_unknown(rule)?;
    if get(&rule, "fn")?.is_some() && get(&rule, "replace")?.is_none() {
        return Err(invalid(format!(
            "{name}: Browsersync's `fn(req, res, match)` form is not supported; use `replace: (match, ...groups) => string`"
        )));
    }
    let matcher =
        get(&rule, "match")?.ok_or_else(|| invalid(format!("{name} has no `match` (a RegExp or a string)")))?;
    let replace =
        get(&rule, "replace")?.ok_or_else(|| invalid(format!("{name} has no `replace` (a string or a function)")))?;
    let replacement = match replace.get_type()? {
        ValueType::String => RuleReplacement::Text(String::from_unknown(replace)?),
        ValueType::Function => RuleReplacement::Function(match mode {
            CallMode::Threadsafe => ThreadsafeReplace::register(Function::from_unknown(replace)?)?,
            CallMode::Direct => DirectReplace::register(env, Function::from_unknown(replace)?)?,
        }),
        _ => {
            return Err(invalid(format!("{name}.replace must be a string or a function, got {}", type_name(&replace))))
        }
    };
    let pattern = match matcher.get_type()? {
        ValueType::String => Pattern::Literal(String::from_unknown(matcher)?),
        ValueType::Object if is_regexp(env, &matcher)? => {
            let regex = Object::from_unknown(matcher)?;
            Pattern::Regex { source: regex.get_named_property("source")?, flags: regex.get_named_property("flags")? }
        }
        _ => return Err(invalid(format!("{name}.match must be a RegExp or a string, got {}", type_name(&matcher)))),
    };
    Ok(RuleSpec { name: name.to_string(), pattern, replacement })
}

fn is_regexp(env: &Env, value: &Unknown) -> Result<bool> {
    let constructor: Function<Unknown, Unknown> = env.get_global()?.get_named_property("RegExp")?;
    value.instanceof(constructor)
}

/// A replacement function's arguments, spread as JS spreads them:
/// `(match, p1, ..., pn, offset, string)`, then `groups` when the pattern has named groups.
pub struct SpreadArgs {
    whole: String,
    groups: Vec<Option<String>>,
    /// Each group's name, when any group has one.
    names: Option<Vec<Option<String>>>,
    /// UTF-16 index of the match in the rule's input.
    offset: f64,
}

impl SpreadArgs {
    fn new(call: &ReplaceCall) -> SpreadArgs {
        let owned = |texts: &[Option<&str>]| texts.iter().map(|t| t.map(str::to_string)).collect();
        SpreadArgs {
            whole: call.whole.to_string(),
            groups: owned(call.groups),
            names: call.names.map(owned),
            offset: call.offset as f64,
        }
    }

    /// The JS values, with `string` (null: `undefined`).
    ///
    /// # Safety
    /// `env` is the live env of the JS thread this runs on, and `string` null or a value of it.
    unsafe fn values(self, env: sys::napi_env, string: sys::napi_value) -> Result<Vec<sys::napi_value>> {
        let mut args = Vec::with_capacity(self.groups.len() + 4);
        args.push(String::to_napi_value(env, self.whole)?);
        let groups_object = match self.names {
            Some(names) => Some(groups_object(env, names, &self.groups)?),
            None => None,
        };
        for group in self.groups {
            args.push(group_value(env, group)?);
        }
        args.push(f64::to_napi_value(env, self.offset)?);
        args.push(if string.is_null() { Undefined::to_napi_value(env, ())? } else { string });
        args.extend(groups_object);
        Ok(args)
    }
}

impl napi::bindgen_prelude::JsValuesTupleIntoVec for SpreadArgs {
    fn into_vec(self, env: sys::napi_env) -> Result<Vec<sys::napi_value>> {
        // SAFETY: napi calls `into_vec` on the JS thread with that thread's live `env`; no `string`.
        unsafe { self.values(env, std::ptr::null_mut()) }
    }
}

/// `rewrite()`'s arguments: the spread ones and the rule's input as `string`. Holds a JS value, so it
/// is not `Send`: it is built and used on the JS thread only.
pub struct DirectArgs {
    spread: SpreadArgs,
    string: sys::napi_value,
}

impl napi::bindgen_prelude::JsValuesTupleIntoVec for DirectArgs {
    fn into_vec(self, env: sys::napi_env) -> Result<Vec<sys::napi_value>> {
        // SAFETY: as for `SpreadArgs`; `string` was made on this thread in the same `rewrite()` call.
        unsafe { self.spread.values(env, self.string) }
    }
}

/// A group that did not participate is `undefined`, as in JS.
///
/// # Safety
/// `env` is the live env of the JS thread this runs on.
unsafe fn group_value(env: sys::napi_env, group: Option<String>) -> Result<sys::napi_value> {
    match group {
        Some(text) => String::to_napi_value(env, text),
        None => Undefined::to_napi_value(env, ()),
    }
}

/// JS's `groups` argument: an object without prototype, one property per named group, in order.
///
/// # Safety
/// `env` is the live env of the JS thread this runs on. Each napi call's status is checked before
/// the value it wrote is used.
unsafe fn groups_object(
    env: sys::napi_env,
    names: Vec<Option<String>>,
    groups: &[Option<String>],
) -> Result<sys::napi_value> {
    let mut global = std::ptr::null_mut();
    check_status!(sys::napi_get_global(env, &mut global))?;
    let mut object = std::ptr::null_mut();
    check_status!(sys::napi_get_named_property(env, global, c"Object".as_ptr(), &mut object))?;
    let mut create = std::ptr::null_mut();
    check_status!(sys::napi_get_named_property(env, object, c"create".as_ptr(), &mut create))?;
    let mut null = std::ptr::null_mut();
    check_status!(sys::napi_get_null(env, &mut null))?;
    let mut result = std::ptr::null_mut();
    check_status!(sys::napi_call_function(env, object, create, 1, &null, &mut result))?;
    for (name, group) in names.into_iter().zip(groups) {
        if let Some(name) = name {
            let key = String::to_napi_value(env, name)?;
            let value = group_value(env, group.clone())?;
            check_status!(sys::napi_set_property(env, result, key, value))?;
        }
    }
    Ok(result)
}

type ReplaceTsfn = ThreadsafeFunction<SpreadArgs, Coerced, SpreadArgs, Status, false, true, 0>;

/// A JS replacement function the proxy calls from its threads. Send + Sync by napi's types.
struct ThreadsafeReplace(ReplaceTsfn);

impl ThreadsafeReplace {
    fn register(function: Function<SpreadArgs, Coerced>) -> Result<Arc<dyn ReplaceFn>> {
        let tsfn = function
            .build_threadsafe_function::<SpreadArgs>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(|ctx| Ok(ctx.value))?;
        Ok(Arc::new(ThreadsafeReplace(tsfn)))
    }
}

impl ReplaceFn for ThreadsafeReplace {
    fn replace(&self, call: &ReplaceCall) -> std::result::Result<String, String> {
        // Called on tokio's blocking pool (the body offloads every step of a rule set that calls JS),
        // so this wait holds no runtime worker; the runtime handle is in context there.
        let runtime = tokio::runtime::Handle::try_current().map_err(|e| e.to_string())?;
        runtime.block_on(self.0.call_async_catch(SpreadArgs::new(call))).map(|c| c.0).map_err(|e| e.reason.clone())
    }
}

/// A JS function registered by a running `rewrite()` call, with the `string` argument of the rule
/// being applied (null: `undefined`).
struct DirectFunction {
    env: Env,
    function: FunctionRef<DirectArgs, Coerced>,
    string: Cell<sys::napi_value>,
}

thread_local! {
    /// The functions of the `rewrite()` calls running on this thread (the JS thread), by slot. What
    /// cannot leave the JS thread (an `Env`, a function reference) lives here, not in the rules, which
    /// the engine needs `Send + Sync`.
    static DIRECT_FUNCTIONS: RefCell<Vec<Rc<DirectFunction>>> = const { RefCell::new(Vec::new()) };
}

/// A JS function that `rewrite()` calls on the JS thread: only its slot in `DIRECT_FUNCTIONS`, so the
/// rule is `Send + Sync` without any claim that the function is. On another thread the slot is
/// empty and the call is an error, never a touch of JS.
struct DirectReplace {
    slot: usize,
}

impl DirectReplace {
    fn register(env: &Env, function: Function<DirectArgs, Coerced>) -> Result<Arc<dyn ReplaceFn>> {
        let entry =
            DirectFunction { env: *env, function: function.create_ref()?, string: Cell::new(std::ptr::null_mut()) };
        let slot = DIRECT_FUNCTIONS.with(|slots| {
            let mut slots = slots.borrow_mut();
            slots.push(Rc::new(entry));
            slots.len() - 1
        });
        Ok(Arc::new(DirectReplace { slot }))
    }
}

impl ReplaceFn for DirectReplace {
    fn replace(&self, call: &ReplaceCall) -> std::result::Result<String, String> {
        // The borrow ends before JS runs: a replace function may itself call `rewrite()`.
        let entry = DIRECT_FUNCTIONS
            .with(|slots| slots.borrow().get(self.slot).cloned())
            .ok_or("a rewrite() replace function was called outside its rewrite() call")?;
        let function = entry.function.borrow_back(&entry.env).map_err(|e| e.reason.clone())?;
        let args = DirectArgs { spread: SpreadArgs::new(call), string: entry.string.get() };
        function.call(args).map(|c| c.0).map_err(|e| e.reason.clone())
    }
}

/// The slots one `rewrite()` call registers; freed when it ends, however it ends.
struct DirectScope {
    base: usize,
}

impl DirectScope {
    fn open() -> DirectScope {
        DirectScope { base: DIRECT_FUNCTIONS.with(|slots| slots.borrow().len()) }
    }

    /// Sets the `string` argument of this call's functions (only the rule being applied runs).
    fn set_string(&self, string: sys::napi_value) {
        DIRECT_FUNCTIONS.with(|slots| slots.borrow()[self.base..].iter().for_each(|f| f.string.set(string)));
    }
}

impl Drop for DirectScope {
    fn drop(&mut self) {
        DIRECT_FUNCTIONS.with(|slots| slots.borrow_mut().truncate(self.base));
    }
}

/// A replacement function's result, converted to a string as `String.prototype.replace` does.
pub struct Coerced(String);

impl FromNapiValue for Coerced {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        let mut string = std::ptr::null_mut();
        // SAFETY: napi hands us a live `env` and `value` (this trait's contract); `napi_coerce_to_string`
        // accepts any value and writes a string handle to `string` when it returns napi_ok, which is
        // checked before `string` is read.
        let status = sys::napi_coerce_to_string(env, value, &mut string);
        if status != sys::Status::napi_ok {
            return Err(Error::new(Status::StringExpected, "the replacement function's result cannot become a string"));
        }
        Ok(Coerced(String::from_napi_value(env, string)?))
    }
}
