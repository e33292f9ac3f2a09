//! What a proxy server is asked to do, validated: every field here is known to be usable.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http::{HeaderName, HeaderValue};

use crate::error::ConfigError;
use crate::globs::UrlGlobs;
use crate::rewrite::{Rule, DEFAULT_MAX_MATCH_BYTES};

/// How the proxy talks to the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

/// The upstream site: only `scheme://host[:port]` of the URL counts, as in Browsersync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// Host name or IP literal (IPv6 with brackets), lower-case.
    pub host: String,
    /// The URL's port, or the scheme's default.
    pub port: u16,
}

/// `localhost` and `*.localhost` (RFC 6761: always this machine), in any case, a final dot allowed.
pub fn is_localhost_name(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    let suffix = ".localhost".len();
    host.eq_ignore_ascii_case("localhost")
        || host.len() > suffix && host.as_bytes()[host.len() - suffix..].eq_ignore_ascii_case(b".localhost")
}

impl Target {
    /// Parses a target like Browsersync does: a URL without scheme gets `http://`.
    pub fn parse(raw: &str) -> Result<Target, ConfigError> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(ConfigError::MissingTarget);
        }
        let with_scheme = if trimmed.contains("://") { trimmed.to_string() } else { format!("http://{trimmed}") };
        let url = url::Url::parse(&with_scheme)
            .map_err(|e| ConfigError::InvalidTarget { url: raw.to_string(), reason: e.to_string() })?;
        let scheme = match url.scheme() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => return Err(ConfigError::UnsupportedScheme { url: raw.to_string(), scheme: other.to_string() }),
        };
        let host = match url.host() {
            Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
            Some(host) => host.to_string(),
            None => return Err(ConfigError::InvalidTarget { url: raw.to_string(), reason: "it has no host".into() }),
        };
        let port = url.port_or_known_default().unwrap_or(80);
        Ok(Target { scheme, host, port })
    }

    fn default_port(&self) -> u16 {
        match self.scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    /// `host[:port]`, the port omitted when it is the scheme's default: the `Host` header to send.
    pub fn authority(&self) -> String {
        if self.port == self.default_port() {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// `scheme://authority`, the target's origin.
    pub fn origin(&self) -> String {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        format!("{scheme}://{}", self.authority())
    }

    /// Whether the target is this machine: `localhost` or a loopback address.
    pub fn is_loopback(&self) -> bool {
        let bare = self.host.trim_start_matches('[').trim_end_matches(']');
        is_localhost_name(bare) || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// The host as the link rewrite looks for it: Browsersync's `hostname[:port]`, port shown
    /// unless it is 80.
    pub fn link_host(&self) -> String {
        if self.port == 80 {
            self.host.clone()
        } else if self.scheme == Scheme::Https && self.port == 443 {
            // Browsersync parses the URL and sees no explicit port here.
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Whether the proxy itself serves HTTPS (`https` option), and with which certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Https {
    /// Option not given: HTTPS when the target is `https:`, as Browsersync does.
    Auto,
    /// Plain HTTP (`https: false`).
    Off,
    /// A self-signed certificate generated at start (`https: true`).
    SelfSigned,
    /// The user's PEM files (`https: { key, cert, ca }`).
    Files {
        /// The private key (PKCS#8, PKCS#1 or SEC1 PEM).
        key: std::path::PathBuf,
        /// The certificate chain, leaf first.
        cert: std::path::PathBuf,
        /// More certificates sent after the chain (Browsersync's `https.ca`: intermediates).
        ca: Vec<std::path::PathBuf>,
    },
}

/// Whether pages (responses the proxy may rewrite) are fetched compressed from the target.
/// Other responses always get the client's codings: their bytes pass through untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamCompression {
    /// Uncompressed from a loopback target, whose bandwidth is free while decompressing costs CPU on
    /// both sides; compressed from any other. The client gets a compressed page either way.
    Auto,
    /// Always offer the target the client's codings (decompress, rewrite, recompress).
    Always,
    /// Always ask for pages uncompressed, as Browsersync does.
    Never,
}

impl UpstreamCompression {
    /// The option's JS value (`"auto"`, `"always"`, `"never"`); `None` for anything else.
    pub fn parse(value: &str) -> Option<UpstreamCompression> {
        match value {
            "auto" => Some(UpstreamCompression::Auto),
            "always" => Some(UpstreamCompression::Always),
            "never" => Some(UpstreamCompression::Never),
            _ => None,
        }
    }
}

/// Which `Host` names the proxy answers to: the guard against DNS rebinding, where a page on
/// `evil.example` re-resolves its name to 127.0.0.1 and reads the proxy as same-origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedHosts {
    /// `localhost`, `*.localhost`, IP literals, the listen `host` and the machine's host name.
    Auto,
    /// No check at all: any page whose name resolves to this machine can read the proxy.
    All,
    /// The `Auto` names plus these (as in webpack-dev-server and Vite, a list adds to the defaults).
    List(Vec<HostPattern>),
}

/// One `allowedHosts` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// This name only (lower-case, IPv6 without brackets).
    Exact(String),
    /// `.example.com`: `example.com` and any name under it (webpack-dev-server's form).
    Domain(String),
}

impl HostPattern {
    /// Whether a host name (lower-case, no port, no brackets, no final dot) matches.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            HostPattern::Exact(exact) => name == exact,
            HostPattern::Domain(domain) => {
                name == domain || name.strip_suffix(domain.as_str()).is_some_and(|sub| sub.ends_with('.'))
            }
        }
    }
}

impl AllowedHosts {
    /// The array form: `'all'` anywhere switches the check off, `'auto'` is the default set (always
    /// included); other entries are host names, or `.domain` for a domain and its subdomains.
    pub fn from_entries(entries: &[String]) -> Result<AllowedHosts, ConfigError> {
        let mut patterns = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            let bad = |reason: String| ConfigError::InvalidEntry { option: "allowedHosts", index, reason };
            let entry = entry.trim().to_ascii_lowercase();
            match entry.as_str() {
                "all" => return Ok(AllowedHosts::All),
                "auto" => continue,
                _ => {}
            }
            if let Some(domain) = entry.strip_prefix('.') {
                check_host_name(domain).map_err(|reason| bad(format!("'.{domain}': {reason}")))?;
                patterns.push(HostPattern::Domain(domain.trim_end_matches('.').to_string()));
                continue;
            }
            let bare = entry.strip_prefix('[').and_then(|e| e.strip_suffix(']')).unwrap_or(&entry);
            if bare.parse::<std::net::IpAddr>().is_ok() {
                patterns.push(HostPattern::Exact(bare.to_string()));
                continue;
            }
            check_host_name(&entry).map_err(|reason| bad(format!("'{entry}': {reason}")))?;
            patterns.push(HostPattern::Exact(entry.trim_end_matches('.').to_string()));
        }
        Ok(AllowedHosts::List(patterns))
    }
}

/// A host name as `allowedHosts` takes it: letters, digits, `-` and `_` in dot-separated labels.
fn check_host_name(name: &str) -> Result<(), String> {
    if name.contains(':') {
        return Err("give the host name without a port or scheme".into());
    }
    if name.starts_with("*.") || name.contains('*') {
        return Err(
            "wildcards are written with a leading dot: '.example.com' allows example.com and its subdomains".into()
        );
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let label_ok = |l: &str| {
        !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
        return Err("not a host name (letters, digits, '-' and '_' in dot-separated labels)".into());
    }
    Ok(())
}

/// `scheme://host[:port]` of an `allowedOrigins` entry or an `Origin` header, as browsers serialise it
/// (lower-case host, default port omitted); `None` unless it is an http(s) origin and nothing more.
pub fn normalize_origin(raw: &str) -> Option<String> {
    let url = url::Url::parse(raw.trim()).ok()?;
    let plain = matches!(url.scheme(), "http" | "https")
        && url.host().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none();
    plain.then(|| url.origin().ascii_serialization())
}

/// Everything a running proxy needs, validated.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// The site being proxied.
    pub target: Target,
    /// Address to listen on; loopback unless the user asks otherwise.
    pub host: String,
    /// 0 picks any free port.
    pub port: u16,
    /// Fail when `port` is taken, instead of moving to the next free one as Browsersync does.
    pub strict_port: bool,
    /// Whether the proxy serves HTTPS, and with which certificate.
    pub https: Https,
    /// Tunnel WebSocket upgrades.
    pub ws: bool,
    /// Headers set on every upstream request.
    pub req_headers: Vec<(HeaderName, HeaderValue)>,
    /// Remove `Domain=` from `Set-Cookie`.
    pub strip_cookie_domain: bool,
    /// Whether the upstream's TLS certificate is checked.
    pub verify_tls: crate::tls::VerifyTls,
    /// The target's name resolved to loopback addresses only at start (a hosts-file name such as
    /// `wp.test`): it is local wherever that matters, as a literal `localhost` or 127.0.0.1 is.
    pub target_resolves_here: bool,
    /// User rules, applied after the snippet and before the link rewrite.
    pub rules: Vec<Rule>,
    /// HTML inserted right after the first `<body ...>` tag of each page (Browsersync's snippet).
    pub snippet: Option<String>,
    /// Also rewrite CSS, JS, JSON, SVG and XML bodies, not only HTML.
    pub rewrite_text_types: bool,
    /// JSON responses get the targets' exact origins (plain, slash-escaped, percent-encoded) turned
    /// into the proxy's, nothing else (`rewriteJson`; `rewrite_text_types` runs every rule instead).
    pub rewrite_json: bool,
    /// The proxy's own origins in what the browser sends (query strings, form, JSON and text bodies)
    /// go back to the target's: what the link rewrite did, undone on the way in.
    pub rewrite_request_bodies: bool,
    /// Most bytes one pending match may hold back at a chunk edge; a longer candidate is left unreplaced.
    pub max_match_bytes: usize,
    /// Longest wait for the upstream's response headers, and between two body chunks; none (the
    /// default): as long as the target takes, like Browsersync (a page stopped at a debugger's
    /// breakpoint is still answered).
    pub upstream_timeout: Option<Duration>,
    /// How long `stop()` lets in-flight responses finish.
    pub grace_period: Duration,
    /// No log lines on stderr.
    pub quiet: bool,
    /// Whether pages are fetched compressed from the target.
    pub upstream_compression: UpstreamCompression,
    /// Most client connections served at once; further ones wait in the listen backlog.
    pub max_connections: usize,
    /// Test hook: requests under [`PANIC_PROBE_PREFIX`] panic at the named place, so tests can show
    /// that a panic costs one response and never the process. Off unless a test turns it on.
    pub panic_probes: bool,
    /// `Host` names answered; any other gets 403 (DNS rebinding).
    pub allowed_hosts: AllowedHosts,
    /// Origins, besides the proxy's own and the target's, whose pages may open WebSockets through
    /// the proxy; normalised by [`normalize_origin`].
    pub allowed_origins: Vec<String>,
    /// `snippetOptions.rule`: where and how the snippet goes, compiled with the snippet; `None`: after
    /// the first `<body ...>` tag.
    pub snippet_rule: Option<Rule>,
    /// `snippetOptions.whitelist`: URLs rewritten whatever the `Accept` header, extension or sniff say.
    pub rewrite_whitelist: Option<UrlGlobs>,
    /// `snippetOptions.blacklist` and `ignorePaths`: URLs never rewritten.
    pub rewrite_blacklist: Option<UrlGlobs>,
    /// The path Browsersync opens first (`startPath`, or the path of the `proxy` URL).
    pub start_path: Option<String>,
    /// Which log lines are written (`logLevel`; `quiet` is `Silent`).
    pub log_level: LogLevel,
    /// What each log line starts with (`logPrefix`).
    pub log_prefix: String,
    /// Warnings about the options (ignored or unknown ones), logged once when the server starts.
    pub warnings: Vec<String>,
    /// `proxy.proxyReq`, `proxy.proxyReqWs`, `proxy.proxyRes`: user hooks around the upstream exchange.
    pub hooks: crate::hooks::Hooks,
    /// Connect-style middleware run before the proxy, by a Node host on a loopback port.
    pub middleware: Option<crate::middleware::MiddlewareHost>,
    /// `proxy.proxyOptions.xfwd`: add `X-Forwarded-For`, `-Port`, `-Proto` and `-Host` upstream.
    pub xfwd: bool,
    /// `proxy.proxyOptions.changeOrigin` (default true): `Host` is the target's; false keeps the client's.
    pub change_origin: bool,
    /// Local directories answered before the proxy (`serveStatic`), in the order given.
    pub serve_static: Vec<StaticMount>,
    /// Path prefixes sent to other targets (`routes`).
    pub routes: Vec<Route>,
    /// `record`: upstream exchanges appended to a cassette.
    pub record: Option<crate::cassette::record::RecordOptions>,
    /// The live inspector page at the proxy's own origin (`inspector`); `None`: off, nothing reserved.
    pub inspector: Option<InspectorConfig>,
    /// `serverTiming`, `logRequests`, `logFormat`, `onRequest`: what is done with each exchange's record.
    pub observe: crate::observe::ObserveConfig,
    /// `replay`: answer requests from a cassette instead of the target (`None`: proxy them).
    pub replay: Option<crate::cassette::replay::ReplayOptions>,
}

/// One `serveStatic` directory: its files answer GET and HEAD requests under `route`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticMount {
    /// `""` (every path) or `/assets` (that path and what is under it), as Browsersync mounts it.
    pub route: String,
    /// The directory, absolute: a relative one is resolved against the working directory at start,
    /// as serve-static's `resolve(root)` does.
    pub dir: PathBuf,
    /// serve-static's `index`: the files tried for a directory (`index.html`; empty: none).
    pub index: Vec<String>,
    /// serve-static's `extensions`: tried in order when the path names no file (`html`: `/about`
    /// serves `about.html`).
    pub extensions: Vec<String>,
}

impl StaticMount {
    /// `dir` under `route`, with serve-static's defaults; the route gets Browsersync's leading `/`
    /// and loses a trailing one.
    pub fn new(route: &str, dir: &str) -> Result<StaticMount, String> {
        if dir.trim().is_empty() {
            return Err("the directory is empty".into());
        }
        let route = route.trim_end_matches('/');
        let route = if route.is_empty() || route.starts_with('/') { route.to_string() } else { format!("/{route}") };
        if route.contains(['?', '#']) {
            return Err(format!("route '{route}' must be a path, without '?' or '#'"));
        }
        let dir = Path::new(dir);
        let dir = if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?.join(dir)
        };
        Ok(StaticMount { route, dir, index: vec!["index.html".into()], extensions: Vec::new() })
    }
}

/// One `routes` entry: requests whose path is `prefix` or under it go to this target instead of
/// `proxy`'s, path unchanged.
#[derive(Debug, Clone)]
pub struct Route {
    /// `/api`: matches `/api`, `/api/x` and `/api?q`, not `/apix`.
    pub prefix: String,
    /// Where those requests go.
    pub target: Target,
    /// Tunnel WebSocket upgrades.
    pub ws: bool,
    /// Headers set on every request to this target.
    pub req_headers: Vec<(HeaderName, HeaderValue)>,
    /// Whether this target's TLS certificate is checked.
    pub verify_tls: crate::tls::VerifyTls,
    /// As [`ProxyConfig::target_resolves_here`], for this route's target.
    pub target_resolves_here: bool,
    /// `replay`: this route's requests answered from a cassette (`None`: the server's mode).
    pub replay: Option<crate::cassette::replay::ReplayOptions>,
    /// `record`: this route's exchanges recorded to its own cassette (`None`: the server's recording).
    pub record: Option<crate::cassette::record::RecordOptions>,
}

impl Route {
    /// A route with `proxy`'s defaults; `prefix` must be a path other than `/` (a trailing `/` is dropped).
    pub fn new(prefix: &str, target: Target) -> Result<Route, ConfigError> {
        let bad = |reason: &str| ConfigError::Route { prefix: prefix.to_string(), reason: reason.to_string() };
        let trimmed = prefix.trim_end_matches('/');
        if !prefix.starts_with('/') || prefix.contains(['?', '#']) {
            return Err(bad("the key must be a path prefix such as '/api'"));
        }
        if trimmed.is_empty() {
            return Err(bad("'/' would take every request: give that target as `proxy`"));
        }
        Ok(Route {
            prefix: trimmed.to_string(),
            target,
            ws: true,
            req_headers: Vec::new(),
            verify_tls: crate::tls::VerifyTls::UnlessLoopback,
            target_resolves_here: false,
            replay: None,
            record: None,
        })
    }

    /// Adds a header for every request to this target, checking name and value.
    pub fn add_req_header(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        let pair = header_pair(name, value).map_err(|reason| ConfigError::Route {
            prefix: self.prefix.clone(),
            reason: format!("reqHeaders: {reason}"),
        })?;
        self.req_headers.push(pair);
        Ok(())
    }

    /// Whether a request path is this route's: the prefix, then the end or a `/`.
    pub fn matches(&self, path: &str) -> bool {
        path.strip_prefix(self.prefix.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }
}

/// A header name and value, checked; the error says which is wrong.
fn header_pair(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), String> {
    let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| format!("'{name}' is not a valid header name"))?;
    let value =
        HeaderValue::from_str(value).map_err(|_| format!("the value of '{name}' is not a valid header value"))?;
    Ok((header, value))
}

/// Which log lines the proxy writes on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// None.
    Silent,
    /// Warnings about the options and failures (the default).
    Info,
    /// Also one line per request: method, URL, status and what was done with the body.
    Debug,
}

impl LogLevel {
    /// The option's JS value (`'silent'`, `'info'`, `'debug'`; Browsersync's `'warn'` is `Info`).
    pub fn parse(value: &str) -> Option<LogLevel> {
        match value {
            "silent" => Some(LogLevel::Silent),
            "info" | "warn" => Some(LogLevel::Info),
            "debug" => Some(LogLevel::Debug),
            _ => None,
        }
    }
}

/// Default of [`ProxyConfig::log_prefix`].
pub const DEFAULT_LOG_PREFIX: &str = "devproxy";

/// Path prefix of the panic probes (`/request`: while handling the request, `/body`: while
/// streaming a rewritten body).
pub const PANIC_PROBE_PREFIX: &str = "/__devproxy_panic_probe";

/// Default of [`ProxyConfig::max_connections`]; Node's own default is unlimited, webpack-dev-server's too,
/// but a proxy holds an upstream connection per client connection, so it needs a ceiling.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// Largest `maxMatchBytes` accepted: each response being rewritten may hold this much back.
pub const MAX_MATCH_BYTES_LIMIT: u32 = 64 << 20;

/// Largest `maxConnections` accepted.
pub const MAX_CONNECTIONS_LIMIT: u32 = 1 << 20;

/// Largest `upstreamTimeoutMs` and `gracePeriodMs` accepted (about 49 days: the options are u32).
pub const MAX_DURATION_MS: u32 = u32::MAX;

/// Where the inspector is served unless `inspector.path` says otherwise.
pub const DEFAULT_INSPECTOR_PATH: &str = "/__devproxy/";
/// Exchanges the inspector keeps unless `inspector.size` says otherwise.
pub const DEFAULT_INSPECTOR_SIZE: usize = 500;
/// Most exchanges the inspector may keep: each holds its headers (and a 2 KiB preview) in memory.
pub const MAX_INSPECTOR_SIZE: u32 = 10_000;

/// `inspector`: the page at the proxy's own origin that shows the last exchanges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectorConfig {
    /// The reserved prefix, `/__devproxy/`: starts and ends with `/`. Requests under it (and the
    /// prefix without its final `/`) are the inspector's and never reach a target.
    pub path: String,
    /// How many exchanges are kept, the oldest dropped first.
    pub size: usize,
    /// Served to clients on other machines too (`inspector: { remote: true }`); by default only
    /// loopback clients get it, whatever address the proxy listens on.
    pub remote: bool,
}

impl Default for InspectorConfig {
    fn default() -> InspectorConfig {
        InspectorConfig { path: DEFAULT_INSPECTOR_PATH.into(), size: DEFAULT_INSPECTOR_SIZE, remote: false }
    }
}

impl InspectorConfig {
    /// Checks `path` (a final `/` is added) and `size` (1 to [`MAX_INSPECTOR_SIZE`]).
    pub fn new(path: &str, size: u32) -> Result<InspectorConfig, ConfigError> {
        let bad = |name, reason: &str| ConfigError::InvalidOption { name, reason: reason.to_string() };
        if !path.starts_with('/') || path.contains(['?', '#', ' ']) || path.contains("//") {
            return Err(bad("inspector.path", "it must be a path such as '/__devproxy/'"));
        }
        let path = if path.ends_with('/') { path.to_string() } else { format!("{path}/") };
        if path == "/" {
            return Err(bad("inspector.path", "'/' would take every request: use a prefix such as '/__devproxy/'"));
        }
        if !(1..=MAX_INSPECTOR_SIZE).contains(&size) {
            let reason =
                format!("it must be from 1 to {MAX_INSPECTOR_SIZE} (inspector: false turns the inspector off)");
            return Err(bad("inspector.size", &reason));
        }
        Ok(InspectorConfig { path, size: size as usize, remote: false })
    }
}

impl ProxyConfig {
    /// The defaults for `target`: `127.0.0.1:3000`, Browsersync's behaviour, nothing rewritten but links.
    pub fn new(target: Target) -> ProxyConfig {
        ProxyConfig {
            target,
            host: "127.0.0.1".into(),
            port: 3000,
            strict_port: false,
            https: Https::Auto,
            ws: true,
            req_headers: Vec::new(),
            strip_cookie_domain: true,
            verify_tls: crate::tls::VerifyTls::UnlessLoopback,
            target_resolves_here: false,
            rules: Vec::new(),
            snippet: None,
            rewrite_text_types: false,
            rewrite_json: true,
            rewrite_request_bodies: true,
            max_match_bytes: DEFAULT_MAX_MATCH_BYTES,
            upstream_timeout: None,
            grace_period: Duration::from_secs(5),
            quiet: false,
            upstream_compression: UpstreamCompression::Auto,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            panic_probes: false,
            allowed_hosts: AllowedHosts::Auto,
            allowed_origins: Vec::new(),
            snippet_rule: None,
            rewrite_whitelist: None,
            rewrite_blacklist: None,
            start_path: None,
            log_level: LogLevel::Info,
            log_prefix: DEFAULT_LOG_PREFIX.into(),
            warnings: Vec::new(),
            hooks: crate::hooks::Hooks::default(),
            middleware: None,
            xfwd: false,
            change_origin: true,
            serve_static: Vec::new(),
            routes: Vec::new(),
            record: None,
            inspector: Some(InspectorConfig::default()),
            observe: crate::observe::ObserveConfig::default(),
            replay: None,
        }
    }

    /// The configuration a route's requests see: this one, with the route's target, `ws`,
    /// `reqHeaders` and `secure` (so header rewrites and errors name the route's target).
    pub fn for_route(&self, route: &Route) -> ProxyConfig {
        ProxyConfig {
            target: route.target.clone(),
            ws: route.ws,
            req_headers: route.req_headers.clone(),
            verify_tls: route.verify_tls,
            target_resolves_here: route.target_resolves_here,
            routes: Vec::new(),
            replay: None,
            // `Auto` follows the target's scheme: pin it to what the proxy serves, so that a route's
            // target cannot change the scheme of the proxy's own URLs.
            https: match (&self.https, self.serves_https()) {
                (Https::Auto, true) => Https::SelfSigned,
                (Https::Auto, false) => Https::Off,
                (given, _) => given.clone(),
            },
            ..self.clone()
        }
    }

    /// Whether the proxy serves HTTPS: `https` as given, else whether the target is `https:`.
    pub fn serves_https(&self) -> bool {
        match self.https {
            Https::Auto => self.target.scheme == Scheme::Https,
            Https::Off => false,
            Https::SelfSigned | Https::Files { .. } => true,
        }
    }

    /// `http` or `https`: the scheme of the proxy's own URLs (redirects, CORS origins).
    pub fn local_scheme(&self) -> &'static str {
        if self.serves_https() {
            "https"
        } else {
            "http"
        }
    }

    /// Whether a page is fetched uncompressed (and compressed here for the client).
    pub fn fetches_pages_uncompressed(&self) -> bool {
        match self.upstream_compression {
            UpstreamCompression::Auto => self.target.is_loopback() || self.target_resolves_here,
            UpstreamCompression::Always => false,
            UpstreamCompression::Never => true,
        }
    }

    /// Adds an `allowedOrigins` entry, checking that it is an origin (`http://localhost:5173`).
    pub fn add_allowed_origin(&mut self, index: usize, raw: &str) -> Result<(), ConfigError> {
        let origin = normalize_origin(raw).ok_or_else(|| ConfigError::InvalidEntry {
            option: "allowedOrigins",
            index,
            reason: format!("'{raw}' is not an origin such as 'http://localhost:5173' (scheme, host and port only)"),
        })?;
        self.allowed_origins.push(origin);
        Ok(())
    }

    /// Adds a header for every upstream request, checking name and value.
    pub fn add_req_header(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        let pair = header_pair(name, value)
            .map_err(|reason| ConfigError::InvalidOption { name: "proxy.reqHeaders", reason })?;
        self.req_headers.push(pair);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_targets_like_browsersync() {
        let t = Target::parse("example.com").unwrap();
        assert_eq!((t.scheme, t.host.as_str(), t.port), (Scheme::Http, "example.com", 80));
        assert_eq!(t.authority(), "example.com");
        let t = Target::parse("https://Example.com:8443/some/path").unwrap();
        assert_eq!(t.origin(), "https://example.com:8443");
        assert_eq!(t.link_host(), "example.com:8443");
        assert_eq!(Target::parse("https://example.com").unwrap().link_host(), "example.com");
        assert_eq!(Target::parse("http://[::1]:8080").unwrap().authority(), "[::1]:8080");
    }

    #[test]
    fn loopback_targets_are_recognised() {
        for url in ["http://127.0.0.1:8080", "localhost:3000", "http://[::1]:80", "http://127.1.2.3", "app.localhost"] {
            assert!(Target::parse(url).unwrap().is_loopback(), "{url}");
        }
        for url in ["http://10.0.0.1", "example.com", "http://[::2]", "localhost.example.com"] {
            assert!(!Target::parse(url).unwrap().is_loopback(), "{url}");
        }
    }

    #[test]
    fn allowed_hosts_entries() {
        let list =
            AllowedHosts::from_entries(&["auto".into(), "Dev.Example.com".into(), ".test".into(), "[::2]".into()])
                .unwrap();
        let AllowedHosts::List(patterns) = list else { panic!("a list: {list:?}") };
        assert_eq!(
            patterns,
            [
                HostPattern::Exact("dev.example.com".into()),
                HostPattern::Domain("test".into()),
                HostPattern::Exact("::2".into())
            ]
        );
        assert!(patterns[1].matches("test") && patterns[1].matches("a.b.test"));
        assert!(!patterns[1].matches("atest") && !patterns[1].matches("test.evil"));
        assert!(!patterns[0].matches("x.dev.example.com"));
        assert_eq!(AllowedHosts::from_entries(&["x".into(), "all".into()]).unwrap(), AllowedHosts::All);
        for (bad, says) in
            [("a.com:3000", "without a port"), ("*.a.com", "leading dot"), ("", "not a host"), ("a b", "not a host")]
        {
            let err = AllowedHosts::from_entries(&["ok.com".into(), bad.into()]).unwrap_err().to_string();
            assert!(err.contains("allowedHosts[1]") && err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn origins_are_normalised_and_checked() {
        assert_eq!(normalize_origin("http://LocalHost:5173").as_deref(), Some("http://localhost:5173"));
        assert_eq!(normalize_origin("https://a.test:443/").as_deref(), Some("https://a.test"));
        assert_eq!(normalize_origin("http://[::1]:80").as_deref(), Some("http://[::1]"));
        for bad in
            ["null", "localhost:5173", "http://a.test/path", "ftp://a.test", "http://u@a.test", "http://a.test/?q"]
        {
            assert_eq!(normalize_origin(bad), None, "{bad}");
        }
        let mut config = ProxyConfig::new(Target::parse("http://127.0.0.1:8080").unwrap());
        let err = config.add_allowed_origin(3, "localhost:5173").unwrap_err().to_string();
        assert!(err.contains("allowedOrigins[3]") && err.contains("localhost:5173"), "{err}");
    }

    #[test]
    fn inspector_paths_and_sizes_are_checked() {
        assert_eq!(
            InspectorConfig::new("/__x", 2).unwrap(),
            InspectorConfig { path: "/__x/".into(), size: 2, remote: false }
        );
        assert_eq!(InspectorConfig::new("/a/b/", 500).unwrap().path, "/a/b/");
        for (path, size, says) in [
            ("__x/", 5, "inspector.path"),
            ("/", 5, "every request"),
            ("/x?y", 5, "inspector.path"),
            ("/x", 0, "inspector.size"),
            ("/x", MAX_INSPECTOR_SIZE + 1, "inspector.size"),
        ] {
            let err = InspectorConfig::new(path, size).unwrap_err().to_string();
            assert!(err.contains(says), "{path} {size}: {err}");
        }
    }

    #[test]
    fn bad_targets_name_the_problem() {
        assert!(Target::parse("ftp://example.com").unwrap_err().to_string().contains("'ftp'"));
        assert!(matches!(Target::parse(""), Err(ConfigError::MissingTarget)));
        assert!(Target::parse("http://exa mple.com").unwrap_err().to_string().contains("not a valid URL"));
    }
}
