//! What a proxy server is asked to do, validated: every field here is known to be usable.

use std::time::Duration;

use http::{HeaderName, HeaderValue};

use crate::error::ConfigError;
use crate::rewrite::{Rule, DEFAULT_MAX_MATCH_BYTES};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

/// The upstream site: only `scheme://host[:port]` of the URL counts, as in Browsersync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub scheme: Scheme,
    /// Host name or IP literal (IPv6 with brackets), lower-case.
    pub host: String,
    pub port: u16,
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
        bare == "localhost"
            || bare.ends_with(".localhost")
            || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
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
    pub target: Target,
    /// Address to listen on; loopback unless the user asks otherwise.
    pub host: String,
    /// 0 picks any free port.
    pub port: u16,
    /// Tunnel WebSocket upgrades.
    pub ws: bool,
    /// Headers set on every upstream request.
    pub req_headers: Vec<(HeaderName, HeaderValue)>,
    /// Remove `Domain=` from `Set-Cookie`.
    pub strip_cookie_domain: bool,
    /// Verify the upstream's TLS certificate.
    pub verify_tls: bool,
    /// User rules, applied after the snippet and before the link rewrite.
    pub rules: Vec<Rule>,
    pub snippet: Option<String>,
    /// Also rewrite CSS, JS, JSON, SVG and XML bodies, not only HTML.
    pub rewrite_text_types: bool,
    pub max_match_bytes: usize,
    /// Longest wait for the upstream's response headers, and between two body chunks.
    pub upstream_timeout: Duration,
    /// How long `stop()` lets in-flight responses finish.
    pub grace_period: Duration,
    /// No log lines on stderr.
    pub quiet: bool,
    pub upstream_compression: UpstreamCompression,
    /// Most client connections served at once; further ones wait in the listen backlog.
    pub max_connections: usize,
    /// Test hook: requests under [`PANIC_PROBE_PREFIX`] panic at the named place, so tests can show
    /// that a panic costs one response and never the process. Off unless a test turns it on.
    pub panic_probes: bool,
}

/// Path prefix of the panic probes (`/request`: while handling the request, `/body`: while
/// streaming a rewritten body).
pub const PANIC_PROBE_PREFIX: &str = "/__devproxy_panic_probe";

/// Default of [`ProxyConfig::max_connections`]; Node's own default is unlimited, webpack-dev-server's too,
/// but a proxy holds an upstream connection per client connection, so it needs a ceiling.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

impl ProxyConfig {
    pub fn new(target: Target) -> ProxyConfig {
        ProxyConfig {
            target,
            host: "127.0.0.1".into(),
            port: 3000,
            ws: true,
            req_headers: Vec::new(),
            strip_cookie_domain: true,
            verify_tls: true,
            rules: Vec::new(),
            snippet: None,
            rewrite_text_types: false,
            max_match_bytes: DEFAULT_MAX_MATCH_BYTES,
            upstream_timeout: Duration::from_secs(30),
            grace_period: Duration::from_secs(5),
            quiet: false,
            upstream_compression: UpstreamCompression::Auto,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            panic_probes: false,
        }
    }

    /// Whether a page is fetched uncompressed (and compressed here for the client).
    pub fn fetches_pages_uncompressed(&self) -> bool {
        match self.upstream_compression {
            UpstreamCompression::Auto => self.target.is_loopback(),
            UpstreamCompression::Always => false,
            UpstreamCompression::Never => true,
        }
    }

    /// Adds a header for every upstream request, checking name and value.
    pub fn add_req_header(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| ConfigError::InvalidOption {
            name: "proxy.reqHeaders",
            reason: format!("'{name}' is not a valid header name"),
        })?;
        let value = HeaderValue::from_str(value).map_err(|_| ConfigError::InvalidOption {
            name: "proxy.reqHeaders",
            reason: format!("the value of '{name}' is not a valid header value"),
        })?;
        self.req_headers.push((header, value));
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
    fn bad_targets_name_the_problem() {
        assert!(Target::parse("ftp://example.com").unwrap_err().to_string().contains("'ftp'"));
        assert!(matches!(Target::parse(""), Err(ConfigError::MissingTarget)));
        assert!(Target::parse("http://exa mple.com").unwrap_err().to_string().contains("not a valid URL"));
    }
}
