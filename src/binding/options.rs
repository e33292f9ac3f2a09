//! `start()`'s options (rules are in `rules.rs`): their declaration (the `#[napi(object)]` structs, which
//! give binding.d.ts its types and docs) and the parser that turns JS values into a `ProxyConfig` and
//! uncompiled `RuleSpec`s, with errors that name the bad option or rule.

use std::cell::Cell;
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use super::rules::{parse_rules, parse_snippet_options, CallMode, RewriteRule, RuleSpec, SnippetOptions};
use super::{config_error, get, invalid, type_name};
use crate::config::{
    AllowedHosts, Https, InspectorConfig, LogLevel, ProxyConfig, Target, UpstreamCompression, DEFAULT_INSPECTOR_PATH,
    DEFAULT_INSPECTOR_SIZE, MAX_CONNECTIONS_LIMIT, MAX_DURATION_MS, MAX_INSPECTOR_SIZE, MAX_MATCH_BYTES_LIMIT,
};
use crate::error::ConfigError;
use crate::observe::LogFormat;
use crate::warnings;

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
    /// `true`: verify the upstream's TLS certificate against the OS's trust store (where mkcert,
    /// Valet/Herd and Local install their CA) and the certificates of `NODE_EXTRA_CA_CERTS`; `false`:
    /// accept any certificate, as Browsersync always does. Unset: verified unless the target is on
    /// this machine (`localhost`, a loopback IP, a name resolving only to loopback addresses).
    pub secure: Option<bool>,
    /// Browsersync's http-proxy options: `xfwd`, `secure` and `changeOrigin` are honoured; any other
    /// key is ignored with a warning naming it.
    pub proxy_options: Option<HttpProxyOptions>,
}

/// The http-proxy options Browsersync passes through (`proxy.proxyOptions`) that mean something here.
// Declared for binding.d.ts; parse_options reads options field by field to name the bad one.
#[allow(dead_code)]
#[napi(object)]
pub struct HttpProxyOptions {
    /// Add `X-Forwarded-For`, `-Port`, `-Proto` (appended to the client's) and `-Host` (default false).
    pub xfwd: Option<bool>,
    /// Verify the upstream's TLS certificate; `proxy.secure` wins when both are given.
    pub secure: Option<bool>,
    /// Send the target's `Host` (default true); `false` sends the client's `Host`.
    pub change_origin: Option<bool>,
}

// Declared for binding.d.ts; parse_options reads options field by field to name the bad one.
#[allow(dead_code)]
#[napi(object)]
pub struct CookieOptions {
    pub strip_domain: Option<bool>,
}

/// Options of `start()`; names follow Browsersync's.
// Declared for binding.d.ts; parse_options reads options field by field to name the bad one.
#[allow(dead_code)]
#[napi(object)]
pub struct ProxyOptions {
    /// The site to proxy: its URL (`http`/`https`; no scheme means `http://`; only scheme, host and
    /// port are used, a path is the start path), or `{ target, ... }` with the target's settings.
    #[napi(ts_type = "string | ProxyTargetOptions")]
    pub proxy: String,
    /// Port to listen on (default 3000). When it is in use, the next free port is taken and logged,
    /// as Browsersync does (see `strictPort`); 0 picks any free port.
    pub port: Option<u32>,
    /// Address to listen on (default `127.0.0.1`). `0.0.0.0` exposes the proxy, and through it the
    /// target, to the whole network.
    pub host: Option<String>,
    /// User rules, applied in order after the snippet and before the link rewrite.
    pub rewrite_rules: Option<Vec<RewriteRule>>,
    /// HTML placed right after the first `<body ...>` tag of rewritten pages (see `snippetOptions`).
    /// `false`: no snippet; `true` (Browsersync's default): nothing to inject.
    #[napi(ts_type = "string | boolean")]
    pub snippet: Option<String>,
    /// Also rewrite CSS, JS, JSON, SVG and XML responses (Browsersync only rewrites HTML).
    pub rewrite_text_types: Option<bool>,
    /// JSON responses (`application/json`, `+json`) get the target's exact origin, written plainly
    /// (`http://wp.test`), slash-escaped (`http:\/\/wp.test`) or percent-encoded, turned into the
    /// proxy's, and nothing else (default true; Browsersync leaves JSON alone). `/.well-known/`
    /// documents are left as they are.
    pub rewrite_json: Option<bool>,
    /// The proxy's own origins (every form the link rewrite writes: `http://localhost:3000`,
    /// `//localhost:3000`, `http:\/\/localhost:3000`, `http%3A%2F%2Flocalhost%3A3000`) go back to the
    /// target's in query strings and in form, JSON, text and multipart text bodies the browser sends
    /// (default true), so that saving a page does not write the proxy's URLs into the site.
    pub rewrite_request_bodies: Option<bool>,
    /// Longest text one pending match may hold back (default 65536).
    pub max_match_bytes: Option<u32>,
    /// Longest wait for upstream response headers, and between body chunks, in ms; 0 (the default):
    /// no limit, as Browsersync.
    pub upstream_timeout_ms: Option<u32>,
    /// How long `stop()` lets in-flight responses finish (default 5000).
    pub grace_period_ms: Option<u32>,
    /// No log lines on stderr (default false); the same as `logLevel: 'silent'`.
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
    /// Where the snippet goes and which URLs are rewritten (Browsersync's `snippetOptions`).
    pub snippet_options: Option<SnippetOptions>,
    /// `'info'` (default: warnings and failures), `'debug'` (also a line per request) or `'silent'`.
    #[napi(ts_type = "'silent' | 'info' | 'debug' | 'warn'")]
    pub log_level: Option<String>,
    /// What log lines start with, in brackets (default `devproxy`).
    pub log_prefix: Option<String>,
    /// The path to open first, exposed as `server.startPath` (default: the `proxy` URL's path).
    pub start_path: Option<String>,
    /// Browsersync's top-level form of `proxy.ws`.
    pub ws: Option<bool>,
    /// Serve HTTPS (HTTP/2 and HTTP/1.1 by ALPN). `true`: a self-signed certificate for localhost,
    /// 127.0.0.1, ::1 and `host`, generated at start (`server.certificate` gives its PEM);
    /// `{ key, cert }`: PEM files. Default: HTTPS when the target is `https:` (as Browsersync);
    /// `false` keeps plain HTTP.
    #[napi(ts_type = "boolean | HttpsOptions")]
    pub https: Option<bool>,
    /// Fail with `EADDRINUSE` when `port` is taken, instead of taking the next free port
    /// (Browsersync's behaviour, the default).
    pub strict_port: Option<bool>,
    /// Browsersync's name for the listen address; overrides `host`.
    pub listen: Option<String>,
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
    /// A `Server-Timing` header on every answer (default true): `upstream;dur=` (ms to the target's
    /// response headers) and `proxy;dur=` (the proxy's own time before the headers). DevTools shows it
    /// in the Timing tab. Times known only at the body's end go to the request log and `onRequest`.
    pub server_timing: Option<bool>,
    /// One log line per request at `logLevel: 'info'` (default false; `'debug'` always logs them):
    /// method, path, status, coding in->out, bytes in->out, total and upstream time, rewritten or passed.
    pub log_requests: Option<bool>,
    /// Form of the request lines: `'text'` (default) or `'json'` (the exchange record, one JSON object
    /// per line, without the prefix).
    #[napi(ts_type = "'text' | 'json'")]
    pub log_format: Option<String>,
    /// The live inspector, a page at the proxy's own origin under `/__devproxy/` that shows the last
    /// exchanges (headers with secrets masked, timings, rules matched) as they happen. Default on;
    /// `false` turns it off (nothing is kept, and `/__devproxy/` goes to the target like any path);
    /// `{ path: '/__x/', size: 500 }` moves it or keeps another number of exchanges.
    #[napi(ts_type = "boolean | InspectorOptions")]
    pub inspector: Option<bool>,
    /// Answer requests from a cassette instead of the target (see `ReplayOptions`); switch at run
    /// time with `server.replay()` / `server.passthrough()`.
    #[napi(ts_type = "ReplayOptions")]
    pub replay: Option<std::collections::HashMap<String, String>>,
    /// Record upstream exchanges (streams with their timing) to a cassette: `{ path, match?, redact? }`.
    /// Secret headers and query parameters are redacted; an exchange whose body holds a key-shaped
    /// string is not written (the log names where), unless `redact.allow` lists it.
    pub record: Option<super::record::RecordOptions>,
}

/// `inspector: { path, size }`.
// Declared for binding.d.ts; parse_options reads options field by field to name the bad one.
#[allow(dead_code)]
#[napi(object)]
pub struct InspectorOptions {
    /// The reserved path prefix it is served under (default `'/__devproxy/'`; a final `/` is added).
    pub path: Option<String>,
    /// How many exchanges it keeps, the oldest dropped first (default 500, at most 10000).
    pub size: Option<u32>,
    /// Also answer clients on other machines (default false: loopback clients only, even with
    /// `host: '0.0.0.0'`). It shows URLs, masked headers and the first KiB of bodies to anyone who
    /// can reach the port.
    pub remote: Option<bool>,
}

/// `https: { key, cert }`: the certificate the proxy serves, as PEM files.
// Declared for binding.d.ts; parse_options reads options field by field to name the bad one.
#[allow(dead_code)]
#[napi(object)]
pub struct HttpsOptions {
    /// Path of the private key (PEM: PKCS#8, PKCS#1 or SEC1; not encrypted).
    pub key: String,
    /// Path of the certificate (PEM), leaf first, intermediates after it.
    pub cert: String,
    /// More certificates (paths) sent after `cert`: intermediates.
    #[napi(ts_type = "string | string[]")]
    pub ca: Option<Vec<String>>,
    /// Not supported (PKCS#12): rejected with the `openssl` commands that convert it to `key`/`cert`.
    pub pfx: Option<String>,
    /// Not supported (encrypted keys): rejected with the `openssl` command that decrypts the key.
    pub passphrase: Option<String>,
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
    /// Verify this target's TLS certificate (unset: verified unless the target is on this machine).
    pub secure: Option<bool>,
    /// Answer this prefix's requests from a cassette (see `ReplayOptions`) while the rest is proxied.
    #[napi(ts_type = "ReplayOptions")]
    pub replay: Option<std::collections::HashMap<String, String>>,
    /// Record this prefix's exchanges to a cassette of their own (see `RecordOptions`).
    pub record: Option<super::record::RecordOptions>,
}

// The keys of each options object; tests/option_names.rs checks them against binding.d.ts.
use super::option_names::{
    COOKIE as COOKIE_OPTION_NAMES, HTTPS as HTTPS_OPTION_NAMES, INSPECTOR as INSPECTOR_OPTION_NAMES,
    PROXY as PROXY_OPTION_NAMES, PROXY_OPTIONS as HTTP_PROXY_OPTION_NAMES, PROXY_TARGET as PROXY_TARGET_OPTION_NAMES,
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
    expect_u32_from(value, option, 0, max)
}

/// A whole number from `min` to `max`; the message names both bounds, as the option's docs do.
fn expect_u32_from(value: Unknown, option: &str, min: u32, max: u32) -> Result<u32> {
    let number = match value.get_type()? {
        ValueType::Number => f64::from_unknown(value)?,
        _ => return Err(invalid(format!("option `{option}` must be a number, got {}", type_name(&value)))),
    };
    if number.fract() != 0.0 || !(f64::from(min)..=f64::from(max)).contains(&number) {
        return Err(invalid(format!("option `{option}` must be a whole number from {min} to {max}, got {number}")));
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
    let mut warnings = Vec::new();
    let mut config = match proxy.get_type()? {
        ValueType::String => {
            let raw = expect_string(proxy, "proxy")?;
            let mut config = ProxyConfig::new(Target::parse(&raw).map_err(config_error)?);
            config.start_path = target_path(&raw);
            config
        }
        ValueType::Object => {
            let proxy = Fields::new(expect_object(proxy, "proxy")?, PROXY_TARGET_OPTION_NAMES);
            warnings.extend(warnings::for_keys(
                "proxy",
                &Object::keys(&proxy.object)?,
                PROXY_TARGET_OPTION_NAMES,
                warnings::PROXY_HANDLED_ELSEWHERE,
                &[],
                warnings::PROXY_UNSUPPORTED,
            ));
            let target = proxy.get("target")?.ok_or_else(|| config_error(ConfigError::MissingTarget))?;
            let raw = expect_string(target, "proxy.target")?;
            let mut config = ProxyConfig::new(Target::parse(&raw).map_err(config_error)?);
            config.start_path = target_path(&raw);
            if let Some(ws) = proxy.get("ws")? {
                config.ws = expect_bool(ws, "proxy.ws")?;
            }
            if let Some(options) = proxy.get("proxyOptions")? {
                let options = Fields::new(expect_object(options, "proxy.proxyOptions")?, HTTP_PROXY_OPTION_NAMES);
                if let Some(xfwd) = options.get("xfwd")? {
                    config.xfwd = expect_bool(xfwd, "proxy.proxyOptions.xfwd")?;
                }
                if let Some(secure) = options.get("secure")? {
                    config.verify_tls = verify_tls(expect_bool(secure, "proxy.proxyOptions.secure")?);
                }
                if let Some(change) = options.get("changeOrigin")? {
                    config.change_origin = expect_bool(change, "proxy.proxyOptions.changeOrigin")?;
                }
                options.finish();
            }
            if let Some(secure) = proxy.get("secure")? {
                config.verify_tls = verify_tls(expect_bool(secure, "proxy.secure")?);
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
    // Browsersync's `listen` overrides `host`.
    if let Some(listen) = options.get("listen")? {
        config.host = expect_string(listen, "listen")?;
    }
    if let Some(strict) = options.get("strictPort")? {
        config.strict_port = expect_bool(strict, "strictPort")?;
    }
    if let Some(https) = options.get("https")? {
        config.https = parse_https(https)?;
    }
    if let Some(snippet) = options.get("snippet")? {
        // Browsersync's `true`/`false` says whether to inject; there is nothing to inject without a string.
        config.snippet = match snippet.get_type()? {
            ValueType::Boolean => None,
            _ => Some(expect_string(snippet, "snippet (a string of HTML, or a boolean)")?),
        };
    }
    if let Some(snippet_options) = options.get("snippetOptions")? {
        parse_snippet_options(snippet_options, &mut config)?;
    }
    if let Some(ws) = options.get("ws")? {
        config.ws = expect_bool(ws, "ws")?;
    }
    if let Some(level) = options.get("logLevel")? {
        let level = expect_string(level, "logLevel")?;
        config.log_level = LogLevel::parse(&level).ok_or_else(|| {
            invalid(format!("option `logLevel` must be 'silent', 'warn', 'info' or 'debug', got '{level}'"))
        })?;
    }
    if let Some(prefix) = options.get("logPrefix")? {
        config.log_prefix = expect_string(prefix, "logPrefix")?;
    }
    if let Some(flag) = options.get("serverTiming")? {
        config.observe.server_timing = expect_bool(flag, "serverTiming")?;
    }
    if let Some(flag) = options.get("logRequests")? {
        config.observe.log_requests = expect_bool(flag, "logRequests")?;
    }
    if let Some(format) = options.get("logFormat")? {
        let format = expect_string(format, "logFormat")?;
        config.observe.log_format = LogFormat::parse(&format)
            .ok_or_else(|| invalid(format!("option `logFormat` must be 'text' or 'json', got '{format}'")))?;
    }
    if let Some(path) = options.get("startPath")? {
        config.start_path = Some(expect_string(path, "startPath")?);
    }
    if let Some(flag) = options.get("rewriteTextTypes")? {
        config.rewrite_text_types = expect_bool(flag, "rewriteTextTypes")?;
    }
    if let Some(flag) = options.get("rewriteJson")? {
        config.rewrite_json = expect_bool(flag, "rewriteJson")?;
    }
    if let Some(flag) = options.get("rewriteRequestBodies")? {
        config.rewrite_request_bodies = expect_bool(flag, "rewriteRequestBodies")?;
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
        let ms = expect_u32(ms, "upstreamTimeoutMs", MAX_DURATION_MS)?;
        config.upstream_timeout = (ms > 0).then(|| Duration::from_millis(u64::from(ms)));
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
        config.routes = super::local::parse_routes(env, routes)?;
    }
    if let Some(replay) = options.get("replay")? {
        config.replay = Some(super::replay::parse_replay(env, replay, "replay")?);
    }
    if let Some(record) = options.get("record")? {
        let record = super::record::parse_record(record)?;
        config.observe.secret_headers.extend(record.redact.headers.iter().cloned());
        config.record = Some(record);
    }
    if let Some(inspector) = options.get("inspector")? {
        config.inspector = parse_inspector(inspector, &mut warnings)?;
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
    // Top-level keys first, then the nested objects' (the proxy's, then snippetOptions').
    let mut all = warnings::for_keys(
        "",
        &Object::keys(&options.object)?,
        PROXY_OPTION_NAMES,
        warnings::HANDLED_ELSEWHERE,
        warnings::BROWSERSYNC_OTHER,
        &[],
    );
    all.extend(warnings);
    all.append(&mut config.warnings);
    config.warnings = all;
    Ok((config, specs))
}

/// Browsersync's reading of a path in the `proxy` URL: it becomes `startPath` (`None` for `/`).
fn target_path(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let with_scheme = if raw.contains("://") { raw.to_string() } else { format!("http://{raw}") };
    let url = url::Url::parse(&with_scheme).ok()?;
    let path = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_string(),
    };
    (path != "/").then_some(path)
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

/// `inspector`: a boolean, or `{ path, size, remote }` (unknown keys are warned about, like the proxy's).
fn parse_inspector(value: Unknown, out: &mut Vec<String>) -> Result<Option<InspectorConfig>> {
    if value.get_type()? == ValueType::Boolean {
        return Ok(expect_bool(value, "inspector")?.then(InspectorConfig::default));
    }
    let fields = Fields::new(expect_object(value, "inspector")?, INSPECTOR_OPTION_NAMES);
    out.extend(warnings::for_keys("inspector", &Object::keys(&fields.object)?, INSPECTOR_OPTION_NAMES, &[], &[], &[]));
    let path = match fields.get("path")? {
        Some(path) => expect_string(path, "inspector.path")?,
        None => DEFAULT_INSPECTOR_PATH.to_string(),
    };
    let size = match fields.get("size")? {
        Some(size) => expect_u32_from(size, "inspector.size", 1, MAX_INSPECTOR_SIZE)?,
        None => DEFAULT_INSPECTOR_SIZE as u32,
    };
    let remote = match fields.get("remote")? {
        Some(remote) => expect_bool(remote, "inspector.remote")?,
        None => false,
    };
    fields.finish();
    let config = InspectorConfig::new(&path, size).map_err(config_error)?;
    Ok(Some(InspectorConfig { remote, ..config }))
}

/// `https`: a boolean, or `{ key, cert, ca }` paths. Browsersync's `pfx` and `passphrase` are refused
/// with the command that makes PEM files of them, rather than ignored.
fn parse_https(value: Unknown) -> Result<Https> {
    if value.get_type()? == ValueType::Boolean {
        return Ok(if expect_bool(value, "https")? { Https::SelfSigned } else { Https::Off });
    }
    let fields = Fields::new(expect_object(value, "https")?, HTTPS_OPTION_NAMES);
    if let Some(pfx) = fields.get("pfx")? {
        let path = expect_string(pfx, "https.pfx")?;
        return Err(invalid(format!(
            "option `https.pfx` ('{path}') is not supported: convert the PKCS#12 file to PEM with \
             `openssl pkcs12 -in '{path}' -nocerts -nodes -out key.pem` and \
             `openssl pkcs12 -in '{path}' -clcerts -nokeys -out cert.pem`, then pass \
             `https: {{ key: 'key.pem', cert: 'cert.pem' }}`"
        )));
    }
    if let Some(passphrase) = fields.get("passphrase")? {
        if !expect_string(passphrase, "https.passphrase")?.is_empty() {
            return Err(invalid(
                "option `https.passphrase` is not supported (encrypted keys): decrypt the key with \
                 `openssl pkey -in key.pem -out key-decrypted.pem` and pass that file as `https.key`",
            ));
        }
    }
    let path = |name: &'static str| -> Result<std::path::PathBuf> {
        let value = fields
            .get(name)?
            .ok_or_else(|| invalid(format!("option `https.{name}` is required: the path of a PEM file")))?;
        Ok(expect_string(value, &format!("https.{name}"))?.into())
    };
    let (key, cert) = (path("key")?, path("cert")?);
    let ca = match fields.get("ca")? {
        None => Vec::new(),
        Some(ca) if ca.get_type()? == ValueType::String => vec![expect_string(ca, "https.ca")?.into()],
        Some(ca) => string_array(ca, "https.ca", "paths")?.into_iter().map(Into::into).collect(),
    };
    fields.finish();
    Ok(Https::Files { key, cert, ca })
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

/// `secure: true|false` as the core's policy (unset stays `UnlessLoopback`).
pub(super) fn verify_tls(secure: bool) -> crate::tls::VerifyTls {
    if secure {
        crate::tls::VerifyTls::Always
    } else {
        crate::tls::VerifyTls::Never
    }
}
