//! `start()`'s options and rewrite rules: their declaration (the `#[napi(object)]` structs, which
//! give binding.d.ts its types and docs) and the parser that turns JS values into a `ProxyConfig` and
//! uncompiled `RuleSpec`s, with errors that name the bad option or rule.

use std::cell::Cell;
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use super::replace::{DirectReplace, ThreadsafeReplace};
use super::{config_error, get, invalid, type_name};
use crate::config::{
    AllowedHosts, ProxyConfig, Target, UpstreamCompression, MAX_CONNECTIONS_LIMIT, MAX_DURATION_MS,
    MAX_MATCH_BYTES_LIMIT,
};
use crate::error::ConfigError;
use crate::rewrite::{self, Rule, RuleReplacement};

/// Where the proxy forwards to: a URL string, or an object with more settings.
// Declared for binding.d.ts; parse_options reads options field by field to name the bad one.
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

// Declared for binding.d.ts; parse_options reads options field by field to name the bad one.
#[allow(dead_code)]
#[napi(object)]
pub struct CookieOptions {
    pub strip_domain: Option<bool>,
}

/// A rewrite rule, as in Browsersync's `rewriteRules`.
// Declared for binding.d.ts; parse_options reads options field by field to name the bad one.
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
// Declared for binding.d.ts; parse_options reads options field by field to name the bad one.
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
    /// Local directories whose files are answered before the proxy, as in Browsersync:
    /// `['public', { route: '/assets', dir: 'static' }]` (`route` and `dir` a string or an array;
    /// relative dirs from the working directory). GET and HEAD only; a path that names no file goes
    /// on to the target. Pages among the files get the snippet and rules like proxied ones.
    #[napi(ts_type = "Array<string | StaticDir>")]
    pub serve_static: Option<Vec<String>>,
    /// serve-static's options for the string entries of `serveStatic` (Browsersync's
    /// `serveStaticOptions`): `index` and `extensions`; any other key is refused unless it asks for
    /// what the proxy does anyway (`dotfiles: 'ignore'`, `etag`, `lastModified`, `acceptRanges`,
    /// `redirect`, `fallthrough`: `true`).
    pub serve_static_options: Option<StaticOptions>,
    /// Path prefixes sent to other targets, as Vite's `server.proxy`: `{ '/api': 'http://127.0.0.1:4000' }`.
    /// `/api` takes `/api` and `/api/...` (not `/apix`), HTTP and WebSocket, path unchanged; the
    /// longest prefix wins; everything else goes to `proxy`. Links to every target are rewritten.
    #[napi(ts_type = "Record<string, string | RouteOptions>")]
    pub routes: Option<std::collections::HashMap<String, String>>,
}

/// A `serveStatic` entry with a route: `{ route: '/assets', dir: 'static' }`.
// Declared for binding.d.ts; parse_options reads options field by field to name the bad one.
#[allow(dead_code)]
#[napi(object)]
pub struct StaticDir {
    /// URL path the directory answers under (default: every path); an array mounts it at each.
    #[napi(ts_type = "string | string[]")]
    pub route: Option<String>,
    /// The directory, or several (tried in order); relative to the working directory.
    #[napi(ts_type = "string | string[]")]
    pub dir: String,
    /// serve-static's options for this entry (Browsersync does not apply `serveStaticOptions` here).
    pub options: Option<StaticOptions>,
}

/// serve-static's options, those the proxy implements.
// Declared for binding.d.ts; parse_options reads options field by field to name the bad one.
#[allow(dead_code)]
#[napi(object)]
pub struct StaticOptions {
    /// File(s) served for a directory (default `'index.html'`); `false`: none.
    #[napi(ts_type = "string | string[] | false")]
    pub index: Option<String>,
    /// Extensions tried when a path names no file: `['html']` serves `about.html` for `/about`.
    #[napi(ts_type = "string[] | false")]
    pub extensions: Option<Vec<String>>,
}

/// A `routes` target with settings, like `proxy`'s object form.
// Declared for binding.d.ts; parse_options reads options field by field to name the bad one.
#[allow(dead_code)]
#[napi(object)]
pub struct RouteOptions {
    /// The target's URL; only scheme, host and port are used.
    pub target: String,
    /// Tunnel WebSocket upgrades under this prefix (default true).
    pub ws: Option<bool>,
    /// Headers set on every request to this target.
    pub req_headers: Option<std::collections::HashMap<String, String>>,
    /// Verify this target's TLS certificate (default true).
    pub secure: Option<bool>,
}

// The keys of each options object live in config.rs, where a napi-free test checks them against binding.d.ts.
use crate::config::option_names::{
    COOKIE as COOKIE_OPTION_NAMES, PROXY as PROXY_OPTION_NAMES, PROXY_TARGET as PROXY_TARGET_OPTION_NAMES,
    RULE as RULE_NAMES,
};

/// An options object read through its declared keys. Reading a key that is not in the list, or
/// parsing it whole without reading every key of the list, is a bug in this file: debug builds (the
/// ones the tests run) panic, which `catch_unwind` turns into a JS error. Keys outside the list are
/// ignored, not rejected: Browsersync configs carry options this proxy does not handle.
pub(super) struct Fields<'env> {
    pub(super) object: Object<'env>,
    names: &'static [&'static str],
    /// Bit `i`: `names[i]` was read.
    read: Cell<u64>,
}

impl<'env> Fields<'env> {
    pub(super) fn new(object: Object<'env>, names: &'static [&'static str]) -> Fields<'env> {
        debug_assert!(names.len() <= 64, "Fields tracks at most 64 keys");
        Fields { object, names, read: Cell::new(0) }
    }

    pub(super) fn get(&self, name: &str) -> Result<Option<Unknown<'env>>> {
        match self.names.iter().position(|n| *n == name) {
            Some(i) => self.read.set(self.read.get() | 1 << i),
            None => debug_assert!(false, "option key `{name}` is read but not declared in its name list"),
        }
        get(&self.object, name)
    }

    /// Checks that the parser read every declared key.
    pub(super) fn finish(&self) {
        let unread: Vec<_> =
            self.names.iter().enumerate().filter(|(i, _)| self.read.get() & 1 << i == 0).map(|(_, n)| *n).collect();
        debug_assert!(unread.is_empty(), "option keys {unread:?} are declared but never read");
    }
}

pub(super) fn expect_string(value: Unknown, option: &str) -> Result<String> {
    match value.get_type()? {
        ValueType::String => String::from_unknown(value),
        _ => Err(invalid(format!("option `{option}` must be a string, got {}", type_name(&value)))),
    }
}

pub(super) fn expect_bool(value: Unknown, option: &str) -> Result<bool> {
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

pub(super) fn expect_object<'env>(value: Unknown<'env>, option: &str) -> Result<Object<'env>> {
    match value.get_type()? {
        ValueType::Object => Object::from_unknown(value),
        _ => Err(invalid(format!("option `{option}` must be an object, got {}", type_name(&value)))),
    }
}

/// Reads `start()`'s options; the rules come back uncompiled (see `compile_off_thread`).
pub(super) fn parse_options(env: &Env, options: Unknown) -> Result<(ProxyConfig, Vec<RuleSpec>)> {
    let options = Fields::new(expect_object(options, "options")?, PROXY_OPTION_NAMES);
    let proxy = options.get("proxy")?.ok_or_else(|| config_error(ConfigError::MissingTarget))?;
    let mut config = match proxy.get_type()? {
        ValueType::String => ProxyConfig::new(Target::parse(&expect_string(proxy, "proxy")?).map_err(config_error)?),
        ValueType::Object => {
            let proxy = Fields::new(expect_object(proxy, "proxy")?, PROXY_TARGET_OPTION_NAMES);
            let target = proxy.get("target")?.ok_or_else(|| config_error(ConfigError::MissingTarget))?;
            let mut config =
                ProxyConfig::new(Target::parse(&expect_string(target, "proxy.target")?).map_err(config_error)?);
            if let Some(ws) = proxy.get("ws")? {
                config.ws = expect_bool(ws, "proxy.ws")?;
            }
            if let Some(secure) = proxy.get("secure")? {
                config.verify_tls = expect_bool(secure, "proxy.secure")?;
            }
            if let Some(cookies) = proxy.get("cookies")? {
                let cookies = Fields::new(expect_object(cookies, "proxy.cookies")?, COOKIE_OPTION_NAMES);
                if let Some(strip) = cookies.get("stripDomain")? {
                    config.strip_cookie_domain = expect_bool(strip, "proxy.cookies.stripDomain")?;
                }
                cookies.finish();
            }
            if let Some(headers) = proxy.get("reqHeaders")? {
                let headers = expect_object(headers, "proxy.reqHeaders")?;
                for name in Object::keys(&headers)? {
                    let value =
                        get(&headers, &name)?.ok_or_else(|| invalid(format!("proxy.reqHeaders['{name}'] is empty")))?;
                    let value = expect_string(value, &format!("proxy.reqHeaders['{name}']"))?;
                    config.add_req_header(&name, &value).map_err(config_error)?;
                }
            }
            proxy.finish();
            config
        }
        _ => {
            return Err(invalid(format!(
                "option `proxy` must be a URL string or {{ target }}, got {}",
                type_name(&proxy)
            )))
        }
    };
    if let Some(port) = options.get("port")? {
        config.port = expect_u32(port, "port", u32::from(u16::MAX))? as u16;
    }
    if let Some(host) = options.get("host")? {
        config.host = expect_string(host, "host")?;
    }
    if let Some(snippet) = options.get("snippet")? {
        config.snippet = Some(expect_string(snippet, "snippet")?);
    }
    if let Some(flag) = options.get("rewriteTextTypes")? {
        config.rewrite_text_types = expect_bool(flag, "rewriteTextTypes")?;
    }
    if let Some(quiet) = options.get("quiet")? {
        config.quiet = expect_bool(quiet, "quiet")?;
    }
    if let Some(value) = options.get("upstreamCompression")? {
        let value = expect_string(value, "upstreamCompression")?;
        config.upstream_compression = UpstreamCompression::parse(&value).ok_or_else(|| {
            invalid(format!("option `upstreamCompression` must be 'auto', 'always' or 'never', got '{value}'"))
        })?;
    }
    if let Some(max) = options.get("maxMatchBytes")? {
        config.max_match_bytes = expect_u32(max, "maxMatchBytes", MAX_MATCH_BYTES_LIMIT)?.max(1) as usize;
    }
    if let Some(ms) = options.get("upstreamTimeoutMs")? {
        config.upstream_timeout =
            Duration::from_millis(u64::from(expect_u32(ms, "upstreamTimeoutMs", MAX_DURATION_MS)?.max(1)));
    }
    if let Some(ms) = options.get("gracePeriodMs")? {
        config.grace_period = Duration::from_millis(u64::from(expect_u32(ms, "gracePeriodMs", MAX_DURATION_MS)?));
    }
    if let Some(hosts) = options.get("allowedHosts")? {
        config.allowed_hosts = parse_allowed_hosts(hosts)?;
    }
    if let Some(origins) = options.get("allowedOrigins")? {
        for (index, origin) in
            string_array(origins, "allowedOrigins", "origins such as 'http://localhost:5173'")?.iter().enumerate()
        {
            config.add_allowed_origin(index, origin).map_err(config_error)?;
        }
    }
    if let Some(max) = options.get("maxConnections")? {
        config.max_connections = expect_u32(max, "maxConnections", MAX_CONNECTIONS_LIMIT)?.max(1) as usize;
    }
    let static_options = match options.get("serveStaticOptions")? {
        Some(value) => Some(super::local::parse_static_options(value, "serveStaticOptions")?),
        None => None,
    };
    if let Some(dirs) = options.get("serveStatic")? {
        config.serve_static = super::local::parse_serve_static(dirs, static_options.as_ref())?;
    }
    if let Some(routes) = options.get("routes")? {
        config.routes = super::local::parse_routes(routes)?;
    }
    // Undocumented test hook: requests under /__devproxy_panic_probe/ panic (see config.rs).
    if let Some(flag) = get(&options.object, "__panicProbes")? {
        config.panic_probes = expect_bool(flag, "__panicProbes")?;
    }
    let specs = match options.get("rewriteRules")? {
        Some(rules) => parse_rules(env, rules, "rewriteRules", CallMode::Threadsafe)?,
        None => Vec::new(),
    };
    options.finish();
    Ok((config, specs))
}

/// Compiles rules on tokio's blocking pool (building their automata may take a while).
pub(super) async fn compile_off_thread(specs: Vec<RuleSpec>) -> Result<Vec<Rule>> {
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    tokio::task::spawn_blocking(move || specs.into_iter().map(RuleSpec::compile).collect::<Result<Vec<_>>>())
        .await
        .map_err(|e| Error::new(Status::GenericFailure, format!("compiling rules failed: {e}")))?
}

/// A rule read from JS, not yet compiled.
pub(super) struct RuleSpec {
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
    pub(super) fn compile(self) -> Result<Rule> {
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
pub(super) fn string_array(value: Unknown, option: &str, what: &str) -> Result<Vec<String>> {
    if !value.is_array()? {
        return Err(invalid(format!("option `{option}` must be an array of {what}, got {}", type_name(&value))));
    }
    let array = Object::from_unknown(value)?;
    (0..array.get_array_length()?)
        .map(|i| expect_string(array.get_element::<Unknown>(i)?, &format!("{option}[{i}]")))
        .collect()
}

pub(super) fn parse_rules(env: &Env, rules: Unknown, option: &str, mode: CallMode) -> Result<Vec<RuleSpec>> {
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
pub(super) enum CallMode {
    /// Called from the proxy's threads, through a threadsafe function.
    Threadsafe,
    /// Called on the JS thread during `rewrite()`.
    Direct,
}

pub(super) fn parse_rule(env: &Env, rule: Unknown, name: &str, mode: CallMode) -> Result<RuleSpec> {
    if rule.get_type()? != ValueType::Object {
        return Err(invalid(format!("{name} must be an object {{ match, replace }}, got {}", type_name(&rule))));
    }
    let rule = Fields::new(Object::from_unknown(rule)?, RULE_NAMES);
    if get(&rule.object, "fn")?.is_some() && rule.get("replace")?.is_none() {
        return Err(invalid(format!(
            "{name}: Browsersync's `fn(req, res, match)` form is not supported; use `replace: (match, ...groups) => string`"
        )));
    }
    let matcher = rule.get("match")?.ok_or_else(|| invalid(format!("{name} has no `match` (a RegExp or a string)")))?;
    let replace =
        rule.get("replace")?.ok_or_else(|| invalid(format!("{name} has no `replace` (a string or a function)")))?;
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
    rule.finish();
    Ok(RuleSpec { name: name.to_string(), pattern, replacement })
}

fn is_regexp(env: &Env, value: &Unknown) -> Result<bool> {
    let constructor: Function<Unknown, Unknown> = env.get_global()?.get_named_property("RegExp")?;
    value.instanceof(constructor)
}
