//! What a proxy server is asked to do, validated: every field here is known to be usable.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http::{HeaderName, HeaderValue};

use crate::error::ConfigError;
use crate::globs::UrlGlobs;
use crate::rewrite::{Rule, DEFAULT_MAX_MATCH_BYTES};

mod hosts;
pub(crate) mod target;

// Plain data kept with its owner, named here too: the options are read from one place.
pub use crate::observe::inspector::{
    InspectorConfig, DEFAULT_INSPECTOR_PATH, DEFAULT_INSPECTOR_SIZE, MAX_INSPECTOR_SIZE,
};
pub use crate::stats::LogLevel;
pub use hosts::{normalize_origin, AllowedHosts, HostPattern};
pub use target::{is_localhost_name, Scheme, Target};

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

/// Whether the proxy checks a target's certificate (`proxy.secure`, a route's `secure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyTls {
    /// `secure: true`.
    Always,
    /// `secure: false`.
    Never,
    /// Not set: checked, unless the target is on this machine. A certificate check guards against
    /// someone on the network between proxy and target; to a loopback address there is no such
    /// network, and a self-signed certificate is what local sites (Valet, Herd, Local, MAMP) serve.
    /// Browsersync never checks.
    UnlessLoopback,
}

impl VerifyTls {
    /// `secure: true|false` as a policy (unset, the policy stays `UnlessLoopback`).
    pub fn from_secure(secure: bool) -> VerifyTls {
        if secure {
            VerifyTls::Always
        } else {
            VerifyTls::Never
        }
    }

    /// Whether certificates may be checked (true until resolved for an unset policy: the safe side).
    pub fn is_on(self) -> bool {
        self != VerifyTls::Never
    }

    /// `Always` or `Never` for a target that is on this machine (`here`) or not.
    pub(crate) fn settle(self, here: bool) -> VerifyTls {
        match self {
            VerifyTls::UnlessLoopback if here => VerifyTls::Never,
            VerifyTls::UnlessLoopback => VerifyTls::Always,
            settled => settled,
        }
    }
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
    pub verify_tls: VerifyTls,
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
    /// that a panic costs one response and never the process. Off unless a test turns it on; only in
    /// builds with the `test-hooks` feature.
    #[cfg(feature = "test-hooks")]
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
    pub verify_tls: VerifyTls,
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
            verify_tls: VerifyTls::UnlessLoopback,
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

/// Default of [`ProxyConfig::log_prefix`].
pub const DEFAULT_LOG_PREFIX: &str = "devproxy";

/// Path prefix of the panic probes (`/request`: while handling the request, `/body`: while
/// streaming a rewritten body).
#[cfg(feature = "test-hooks")]
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
            verify_tls: VerifyTls::UnlessLoopback,
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
            #[cfg(feature = "test-hooks")]
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

    /// One line for each option that turns a protection off, said at every start whatever set it (a
    /// config file read without a flag cannot turn one off in silence).
    pub fn protections_off(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if matches!(self.allowed_hosts, AllowedHosts::All) {
            lines.push(
                "allowedHosts: 'all' answers any Host: a page of any site whose name resolves to this machine \
                 can read the proxied site (DNS rebinding)"
                    .to_string(),
            );
        }
        if let Some(inspector) = self.inspector.as_ref().filter(|inspector| inspector.remote) {
            lines.push(format!(
                "inspector.remote: the inspector at {} (URLs, headers, body previews) answers other machines too",
                inspector.path
            ));
        }
        let unchecked = std::iter::once((&self.target, self.verify_tls))
            .chain(self.routes.iter().map(|route| (&route.target, route.verify_tls)));
        for (target, verify) in unchecked {
            if verify == VerifyTls::Never && target.scheme == Scheme::Https && !target.is_loopback() {
                lines.push(format!(
                    "secure: false: the TLS certificate of {} is not checked; anyone on the way can read and \
                     change the traffic",
                    target.origin()
                ));
            }
        }
        lines
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

    /// Which responses besides pages the body plan rewrites (`rewriteTextTypes`, `rewriteJson`).
    pub(crate) fn beyond_pages(&self) -> crate::body::BeyondPages {
        crate::body::BeyondPages { text_types: self.rewrite_text_types, json_origins: self.rewrite_json }
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
