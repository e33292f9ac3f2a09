//! The Node binding: JS values in, core types out, core errors turned into JS errors that name the
//! culprit. Nothing else lives here; the proxy itself is in the core modules.

// `#[napi]` registers exports only outside `cfg(test)`.
#![cfg_attr(test, allow(dead_code))]

use std::cell::Cell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunction;
use napi::{check_status, sys, Env, JsValue, ValueType};
use napi_derive::napi;

use crate::config::{ProxyConfig, Target, UpstreamCompression};
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
#[napi(ts_args_type = "options: ProxyOptions", ts_return_type = "Promise<ProxyServer>")]
pub fn start<'env>(env: &'env Env, options: Unknown) -> Result<PromiseRaw<'env, JsProxyServer>> {
    let parsed = parse_options(env, options);
    let keep_alive = parsed.as_ref().ok().map(|_| KeepAlive::new(env)).transpose()?;
    env.spawn_future(async move {
        let config = parsed?;
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
#[napi(ts_args_type = "input: string | Array<string | Buffer | Uint8Array>, rules: RewriteRule[]")]
pub fn rewrite(env: Env, input: Unknown, rules: Unknown) -> Result<String> {
    // The input of the function rule being applied, given to it as `string` (null: none).
    let current: RuleInput = Rc::new(Cell::new(std::ptr::null_mut()));
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
    let rules = parse_rules(&env, rules, "rules", CallMode::Direct(&current))?;
    let failed = |e: rewrite::ReplaceError| Error::new(Status::GenericFailure, e.to_string());
    // The whole string is in hand: no match is ever too long to wait for.
    let uncapped = usize::MAX / 4;
    let Some(chunks) = chunks else {
        let text = unsafe { input.cast::<String>()? };
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
                current.set(if first == 0 {
                    input.raw()
                } else {
                    let text = std::str::from_utf8(&bytes).map_err(|e| invalid(e.to_string()))?;
                    unsafe { <&str as ToNapiValue>::to_napi_value(env.raw(), text)? }
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
    let array = unsafe { input.cast::<Object>()? };
    let length = array.get_array_length()?;
    (0..length)
        .map(|i| {
            let chunk: Unknown = array.get_element(i)?;
            let wrong =
                |what: &str| invalid(format!("input[{i}] must be a string, a Buffer or a Uint8Array, got {what}"));
            match chunk.get_type()? {
                ValueType::String => Ok(unsafe { chunk.cast::<String>()? }.into_bytes()),
                ValueType::Object if chunk.is_typedarray()? => match unsafe { chunk.cast::<Uint8ArraySlice>() } {
                    Ok(bytes) => Ok(bytes.to_vec()),
                    Err(_) => Err(wrong("another typed array")),
                },
                _ => Err(wrong(type_name(&chunk))),
            }
        })
        .collect()
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
    #[napi(getter)]
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The port the proxy listens on.
    #[napi(getter)]
    pub fn port(&self) -> u32 {
        self.port
    }

    /// Adds a rule after the others, for requests that start from now on; returns its id.
    /// Throws on a bad rule, leaving the running rules as they were.
    #[napi(ts_args_type = "rule: RewriteRule")]
    pub fn add_rule(&self, env: Env, rule: Unknown) -> Result<u32> {
        let rule = parse_rule(&env, rule, "rule", CallMode::Threadsafe)?;
        self.inner.add_rule(rule).map_err(|e| invalid(format!("rule: {e}")))
    }

    /// Removes a rule by the id `addRule` returned (the rules of `rewriteRules` have ids 0, 1, 2...);
    /// false if there is no such rule.
    #[napi]
    pub fn remove_rule(&self, id: u32) -> bool {
        self.inner.remove_rule(id)
    }

    #[napi]
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
    #[napi]
    pub fn unref(&self) {
        self.keep_alive.lock().expect("keep-alive lock poisoned").take();
    }

    /// Stops accepting connections (the port is free when the Promise resolves), lets in-flight
    /// responses finish within the grace period, then closes the rest.
    #[napi(ts_return_type = "Promise<void>")]
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
        ValueType::String => unsafe { value.cast::<String>() },
        _ => Err(invalid(format!("option `{option}` must be a string, got {}", type_name(&value)))),
    }
}

fn expect_bool(value: Unknown, option: &str) -> Result<bool> {
    match value.get_type()? {
        ValueType::Boolean => unsafe { value.cast::<bool>() },
        _ => Err(invalid(format!("option `{option}` must be a boolean, got {}", type_name(&value)))),
    }
}

fn expect_u32(value: Unknown, option: &str, max: u32) -> Result<u32> {
    let number = match value.get_type()? {
        ValueType::Number => unsafe { value.cast::<f64>()? },
        _ => return Err(invalid(format!("option `{option}` must be a number, got {}", type_name(&value)))),
    };
    if number.fract() != 0.0 || !(0.0..=f64::from(max)).contains(&number) {
        return Err(invalid(format!("option `{option}` must be a whole number from 0 to {max}, got {number}")));
    }
    Ok(number as u32)
}

fn expect_object<'env>(value: Unknown<'env>, option: &str) -> Result<Object<'env>> {
    match value.get_type()? {
        ValueType::Object => unsafe { value.cast::<Object>() },
        _ => Err(invalid(format!("option `{option}` must be an object, got {}", type_name(&value)))),
    }
}

fn parse_options(env: &Env, options: Unknown) -> Result<ProxyConfig> {
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
    if let Some(rules) = get(&options, "rewriteRules")? {
        config.rules = parse_rules(env, rules, "rewriteRules", CallMode::Threadsafe)?;
    }
    Ok(config)
}

fn parse_rules(env: &Env, rules: Unknown, option: &str, mode: CallMode) -> Result<Vec<Rule>> {
    if !rules.is_array()? {
        return Err(invalid(format!(
            "option `{option}` must be an array of {{ match, replace }}, got {}",
            type_name(&rules)
        )));
    }
    let array = unsafe { rules.cast::<Object>()? };
    let length = array.get_array_length()?;
    if length as usize > rewrite::MAX_RULES {
        return Err(invalid(format!(
            "option `{option}` has {length} rules; at most {} are allowed",
            rewrite::MAX_RULES
        )));
    }
    (0..length).map(|i| parse_rule(env, array.get_element::<Unknown>(i)?, &format!("{option}[{i}]"), mode)).collect()
}

/// The `string` argument of the function rule `rewrite()` is applying: that rule's input as a JS
/// string, or null while streaming. Only touched on the JS thread, within one `rewrite()` call.
type RuleInput = Rc<Cell<sys::napi_value>>;

#[derive(Clone, Copy)]
enum CallMode<'a> {
    /// Called from the proxy's threads, through a threadsafe function.
    Threadsafe,
    /// Called on the JS thread during `rewrite()`.
    Direct(&'a RuleInput),
}

fn parse_rule(env: &Env, rule: Unknown, name: &str, mode: CallMode) -> Result<Rule> {
    if rule.get_type()? != ValueType::Object {
        return Err(invalid(format!("{name} must be an object {{ match, replace }}, got {}", type_name(&rule))));
    }
    let rule = unsafe { rule.cast::<Object>()? };
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
        ValueType::String => RuleReplacement::Text(unsafe { replace.cast::<String>()? }),
        ValueType::Function => {
            let function = unsafe { replace.cast::<Function<SpreadArgs, Coerced>>()? };
            RuleReplacement::Function(JsReplace::replace_fn(env, &function, mode)?)
        }
        _ => {
            return Err(invalid(format!("{name}.replace must be a string or a function, got {}", type_name(&replace))))
        }
    };
    let compiled = match matcher.get_type()? {
        ValueType::String => Rule::literal(&unsafe { matcher.cast::<String>()? }, replacement),
        ValueType::Object if is_regexp(env, &matcher)? => {
            let regex = unsafe { matcher.cast::<Object>()? };
            let source: String = regex.get_named_property("source")?;
            let flags: String = regex.get_named_property("flags")?;
            Rule::regex(&source, &flags, replacement)
        }
        _ => return Err(invalid(format!("{name}.match must be a RegExp or a string, got {}", type_name(&matcher)))),
    };
    compiled.map_err(|e| invalid(format!("{name}: {e}")))
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
    /// The rule's input as a JS string (`rewrite()` of a string only); null: `undefined`.
    input: RawValue,
}

/// A JS value handed from the JS thread to the same thread's call; never set for threadsafe calls.
struct RawValue(sys::napi_value);

// SAFETY: non-null only in `CallMode::Direct`, whose calls run synchronously on the JS thread.
unsafe impl Send for RawValue {}

/// A group that did not participate is `undefined`, as in JS.
unsafe fn group_value(env: sys::napi_env, group: Option<String>) -> Result<sys::napi_value> {
    match group {
        Some(text) => String::to_napi_value(env, text),
        None => Undefined::to_napi_value(env, ()),
    }
}

/// JS's `groups` argument: an object without prototype, one property per named group, in order.
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

impl napi::bindgen_prelude::JsValuesTupleIntoVec for SpreadArgs {
    fn into_vec(self, env: sys::napi_env) -> Result<Vec<sys::napi_value>> {
        let mut args = Vec::with_capacity(self.groups.len() + 4);
        args.push(unsafe { String::to_napi_value(env, self.whole)? });
        let groups_object = match self.names {
            Some(names) => Some(unsafe { groups_object(env, names, &self.groups)? }),
            None => None,
        };
        for group in self.groups {
            args.push(unsafe { group_value(env, group)? });
        }
        args.push(unsafe { f64::to_napi_value(env, self.offset)? });
        args.push(match self.input.0 {
            input if input.is_null() => unsafe { Undefined::to_napi_value(env, ())? },
            input => input,
        });
        args.extend(groups_object);
        Ok(args)
    }
}

type ReplaceTsfn = ThreadsafeFunction<SpreadArgs, Coerced, SpreadArgs, Status, false, true, 0>;

/// A JS replacement function as the engine sees it.
enum JsReplace {
    Threadsafe(ReplaceTsfn),
    /// Only used synchronously on the JS thread, inside `rewrite()`.
    Direct {
        env: Env,
        function: FunctionRef<SpreadArgs, Coerced>,
        input: RuleInput,
    },
}

// SAFETY: the `Direct` variant never leaves the JS thread: it is created and dropped inside one
// synchronous `rewrite()` call. The threadsafe variant is Send + Sync by construction.
unsafe impl Send for JsReplace {}
unsafe impl Sync for JsReplace {}

impl JsReplace {
    fn replace_fn(env: &Env, function: &Function<SpreadArgs, Coerced>, mode: CallMode) -> Result<Arc<dyn ReplaceFn>> {
        let replace = match mode {
            CallMode::Threadsafe => JsReplace::Threadsafe(
                function
                    .build_threadsafe_function::<SpreadArgs>()
                    .callee_handled::<false>()
                    .weak::<true>()
                    .build_callback(|ctx| Ok(ctx.value))?,
            ),
            CallMode::Direct(input) => {
                JsReplace::Direct { env: *env, function: function.create_ref()?, input: input.clone() }
            }
        };
        Ok(Arc::new(replace))
    }
}

/// A replacement function's result, converted to a string as `String.prototype.replace` does.
pub struct Coerced(String);

impl FromNapiValue for Coerced {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        let mut string = std::ptr::null_mut();
        let status = sys::napi_coerce_to_string(env, value, &mut string);
        if status != sys::Status::napi_ok {
            return Err(Error::new(Status::StringExpected, "the replacement function's result cannot become a string"));
        }
        Ok(Coerced(String::from_napi_value(env, string)?))
    }
}

impl ReplaceFn for JsReplace {
    fn replace(&self, call: &ReplaceCall) -> std::result::Result<String, String> {
        let owned = |texts: &[Option<&str>]| texts.iter().map(|t| t.map(str::to_string)).collect();
        let mut args = SpreadArgs {
            whole: call.whole.to_string(),
            groups: owned(call.groups),
            names: call.names.map(owned),
            offset: call.offset as f64,
            input: RawValue(std::ptr::null_mut()),
        };
        match self {
            JsReplace::Direct { env, function, input } => {
                args.input = RawValue(input.get());
                let function = function.borrow_back(env).map_err(|e| e.reason.clone())?;
                function.call(args).map(|c| c.0).map_err(|e| e.reason.clone())
            }
            JsReplace::Threadsafe(tsfn) => {
                let call = async { tsfn.call_async_catch(args).await };
                let result = tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(call));
                result.map(|c| c.0).map_err(|e| e.reason.clone())
            }
        }
    }
}
