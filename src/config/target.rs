//! The upstream site as the options name it: plain data, read by the body pipeline as well as the
//! request path.

use crate::error::ConfigError;

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
