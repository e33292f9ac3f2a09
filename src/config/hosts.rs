//! Which `Host` names and page origins the proxy answers (`allowedHosts`, `allowedOrigins`).

use crate::error::ConfigError;

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
