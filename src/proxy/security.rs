//! Who may talk to the proxy: the `Host` check against DNS rebinding (`allowedHosts`) and the
//! `Origin` check of WebSocket upgrades against cross-site WebSocket hijacking (`allowedOrigins`).

use std::net::{IpAddr, SocketAddr};

use http::header::{self, HeaderValue};
use http::{Method, Request};

use crate::config::{normalize_origin, AllowedHosts, ProxyConfig, Target};
use crate::proxy::pages::ProxyError;

/// The host name of a `Host` value or request authority: lower-case, without port, IPv6 brackets
/// or final dot. `None` when it is not an authority (then it is refused).
pub(crate) fn host_name(authority: &str) -> Option<String> {
    if authority.contains('@') {
        return None;
    }
    let parsed: http::uri::Authority = authority.parse().ok()?;
    let host = parsed.host();
    // `http` takes `name:anything` as an authority; only a numeric port is one.
    if parsed.as_str().len() > host.len() && parsed.port_u16().is_none() {
        return None;
    }
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

/// The host the client asked for: `Host`, or HTTP/2's `:authority` (the URI's authority).
pub(crate) fn request_authority<B>(req: &Request<B>) -> Option<&str> {
    req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).or_else(|| req.uri().authority().map(|a| a.as_str()))
}

/// `allowedHosts`, with the names `'auto'` adds resolved once when the server starts.
#[derive(Debug)]
pub(crate) struct HostGuard {
    allowed: AllowedHosts,
    /// The listen `host` when it is a name, and the machine's host name.
    own_names: Vec<String>,
}

impl HostGuard {
    pub(crate) fn new(allowed: &AllowedHosts, listen_host: &str) -> HostGuard {
        let machine = hostname::get().ok().map(|name| name.to_string_lossy().into_owned());
        HostGuard::with_machine_name(allowed, listen_host, machine.as_deref())
    }

    fn with_machine_name(allowed: &AllowedHosts, listen_host: &str, machine: Option<&str>) -> HostGuard {
        let own_names = [Some(listen_host), machine]
            .into_iter()
            .flatten()
            .filter_map(|name| {
                let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
                (!name.is_empty() && name.parse::<IpAddr>().is_err()).then_some(name)
            })
            .collect();
        HostGuard { allowed: allowed.clone(), own_names }
    }

    /// Whether the proxy answers to this host name (as [`host_name`] returns it).
    pub(crate) fn allows_name(&self, name: &str) -> bool {
        let auto = || {
            name == "localhost"
                || name.ends_with(".localhost")
                || name.parse::<IpAddr>().is_ok()
                || self.own_names.iter().any(|own| own == name)
        };
        match &self.allowed {
            AllowedHosts::All => true,
            AllowedHosts::Auto => auto(),
            AllowedHosts::List(patterns) => auto() || patterns.iter().any(|p| p.matches(name)),
        }
    }

    /// Whether a `Host` value or request authority names a host the proxy answers to.
    pub(crate) fn allows_authority(&self, authority: &str) -> bool {
        matches!(self.allowed, AllowedHosts::All)
            || host_name(authority).is_some_and(|name| self.allows_name(name.as_str()))
    }
}

/// Whether a WebSocket upgrade with this `Origin` may go through: the page that opens it must be
/// the proxy's own (the origin the request's `Host` names, or the listen address), the target's,
/// or one listed in `allowedOrigins`. The proxy's own origin must also pass `allowedHosts`, since
/// after DNS rebinding an attacker's page is "same-origin" with its own name.
pub(crate) fn origin_allowed(
    origin: &str,
    request_host: Option<&str>,
    local_addr: SocketAddr,
    target: &Target,
    allowed_origins: &[String],
    guard: &HostGuard,
) -> bool {
    let Some(origin) = normalize_origin(origin) else { return false };
    if origin == target.origin() || allowed_origins.contains(&origin) {
        return true;
    }
    let Some((scheme, authority)) = origin.split_once("://") else { return false };
    if !guard.allows_authority(authority) {
        return false;
    }
    // The same scheme on the proxy's authority, serialised the same way.
    let own = |authority: &str| normalize_origin(&format!("{scheme}://{authority}")).is_some_and(|o| o == origin);
    request_host.is_some_and(own) || own(&local_addr.to_string())
}

/// `OPTIONS *` (the server's own options, RFC 9110 §9.3.7) is answered here: it names no resource to
/// forward.
pub(crate) fn asterisk_options<B>(req: &Request<B>) -> Option<http::Response<crate::body::ProxyBody>> {
    if req.method() != Method::OPTIONS || req.uri() != "*" {
        return None;
    }
    let mut response = http::Response::new(crate::body::ProxyBody::full(bytes::Bytes::new()));
    let headers = response.headers_mut();
    headers.insert(header::ALLOW, HeaderValue::from_static("GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
    Some(response)
}

/// Whether a browser says the request comes from another site's page: `Sec-Fetch-Site` is
/// `cross-site` or `same-site` (another port of `localhost` is the same site to a browser, not the
/// same origin), unless its `Origin` is allowed (see [`origin_allowed`]); or an `Origin` that is not
/// allowed. Such a request does not get `reqHeaders` credentials (headers.rs): a page elsewhere
/// must not be able to use the developer's token. No header at all: not a browser page (curl, a
/// server-side client), treated as the proxy's own.
pub(crate) fn from_another_site<B>(
    req: &Request<B>,
    local_addr: SocketAddr,
    config: &ProxyConfig,
    hosts: &HostGuard,
) -> bool {
    let request_host = request_authority(req);
    let allowed = |origin: &HeaderValue| {
        origin.to_str().is_ok_and(|origin| {
            origin_allowed(origin, request_host, local_addr, &config.target, &config.allowed_origins, hosts)
        })
    };
    let mut origins = req.headers().get_all(header::ORIGIN).iter().peekable();
    let has_origin = origins.peek().is_some();
    if origins.any(|origin| !allowed(origin)) {
        return true;
    }
    let fetch_site = req.headers().get("sec-fetch-site").map(HeaderValue::as_bytes);
    matches!(fetch_site, Some(b"cross-site" | b"same-site")) && !has_origin
}

/// The longest `Host` answered: a DNS name's 253 bytes and a port. Longer ones are no name a
/// browser sends, and every name costs work per request.
pub(crate) const MAX_HOST_LEN: usize = 260;

/// Phase "request filter": what the proxy refuses before anything is forwarded. Ambiguous framings
/// (request smuggling), `CONNECT`, absolute-form requests for other hosts (no open proxy), HTTP/1.1
/// without `Host`, a `Host` longer than [`MAX_HOST_LEN`], and one not in `allowedHosts` (DNS
/// rebinding).
pub(crate) fn request_filter<B>(req: &Request<B>, local_addr: SocketAddr, hosts: &HostGuard) -> Result<(), ProxyError> {
    if let Some(reason) = smuggling_risk(req.headers()) {
        return Err(ProxyError::AmbiguousFraming(reason));
    }
    if req.method() == Method::CONNECT {
        return Err(ProxyError::Connect);
    }
    // HTTP/2 names the host in `:authority`, which is the URI's authority: not absolute-form, and
    // checked against allowedHosts below like Host.
    if let Some(authority) = req.uri().authority().filter(|_| req.version() < http::Version::HTTP_2) {
        // Absolute-form is only accepted for the proxy itself: it is no forward proxy.
        let own = [local_addr.to_string(), format!("localhost:{}", local_addr.port())];
        if !own.iter().any(|name| authority.as_str().eq_ignore_ascii_case(name)) {
            return Err(ProxyError::ForeignAuthority);
        }
    }
    // DNS rebinding: a page whose name now resolves here sends its own name as Host. Browsers always
    // send Host, so a request without one cannot be such a page: HTTP/1.0 tools are let through,
    // HTTP/1.1 requires Host (RFC 9112 §3.2), which hyper does not enforce.
    if req.version() == http::Version::HTTP_11
        && req.uri().authority().is_none()
        && !req.headers().contains_key(header::HOST)
    {
        return Err(ProxyError::MissingHost);
    }
    let authority = req.uri().authority().map(|a| a.as_str().to_string());
    let longest =
        req.headers().get_all(header::HOST).iter().map(|h| h.len()).chain(authority.as_ref().map(String::len)).max();
    if let Some(length) = longest.filter(|&length| length > MAX_HOST_LEN) {
        return Err(ProxyError::HostTooLong(length));
    }
    let names = req.headers().get_all(header::HOST).iter().map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned());
    match authority.into_iter().chain(names).find(|h| !hosts.allows_authority(h)) {
        Some(host) => Err(ProxyError::HostNotAllowed { name: host_name(&host).unwrap_or_else(|| host.clone()), host }),
        None => Ok(()),
    }
}

/// Cross-site WebSocket hijacking: WebSockets are not bound by CORS, so an upgrade's `Origin` is
/// checked here (see [`origin_allowed`]). No `Origin`: not a browser page.
pub(crate) fn websocket_filter<B>(
    req: &Request<B>,
    local_addr: SocketAddr,
    config: &ProxyConfig,
    hosts: &HostGuard,
) -> Result<(), ProxyError> {
    let request_host = request_authority(req);
    let refused = req.headers().get_all(header::ORIGIN).iter().find(|origin| {
        !origin.to_str().is_ok_and(|origin| {
            origin_allowed(origin, request_host, local_addr, &config.target, &config.allowed_origins, hosts)
        })
    });
    match refused {
        Some(origin) => Err(ProxyError::OriginNotAllowed(String::from_utf8_lossy(origin.as_bytes()).into_owned())),
        None => Ok(()),
    }
}

/// Request framings that two HTTP parsers may read differently (request smuggling), refused rather
/// than forwarded. hyper has already refused a Transfer-Encoding that does not end in `chunked` and
/// differing Content-Lengths; it resolves Content-Length + Transfer-Encoding as RFC 9112 §6.3 says
/// (chunked wins, the length is dropped, the connection closes after the answer). What is left to
/// catch here is what it passes on as it came.
fn smuggling_risk(headers: &http::HeaderMap) -> Option<&'static str> {
    let codings = headers.get_all(header::TRANSFER_ENCODING).iter().count();
    if codings > 1 || headers.get(header::TRANSFER_ENCODING).is_some_and(|v| v.as_bytes() != b"chunked") {
        return Some("a Transfer-Encoding other than exactly one `chunked`\n");
    }
    let mut lengths = headers.get_all(header::CONTENT_LENGTH).iter();
    let digits_only = |v: &HeaderValue| !v.is_empty() && v.as_bytes().iter().all(u8::is_ascii_digit);
    match (lengths.next(), lengths.next()) {
        (Some(_), Some(_)) => Some("more than one Content-Length header\n"),
        (Some(length), None) if !digits_only(length) => Some("a Content-Length that is not a plain number\n"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HostPattern;

    #[test]
    fn host_names_lose_port_brackets_case_and_final_dot() {
        assert_eq!(host_name("LocalHost:3000").as_deref(), Some("localhost"));
        assert_eq!(host_name("[::1]:3000").as_deref(), Some("::1"));
        assert_eq!(host_name("example.com.").as_deref(), Some("example.com"));
        for bad in ["", "a b", "user@localhost", "localhost:port", "[::1"] {
            assert_eq!(host_name(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn auto_allows_local_names_ip_literals_and_own_names_only() {
        let guard = HostGuard::with_machine_name(&AllowedHosts::Auto, "127.0.0.1", Some("DevBox"));
        for ok in ["localhost:3000", "app.localhost", "127.0.0.1:3000", "[::1]:3000", "192.168.1.20", "devbox:3000"] {
            assert!(guard.allows_authority(ok), "{ok}");
        }
        for refused in ["evil.example:3000", "localhost.evil.example", "devbox.evil", "127.0.0.1.nip.io", "x@localhost"]
        {
            assert!(!guard.allows_authority(refused), "{refused}");
        }
        let guard = HostGuard::with_machine_name(&AllowedHosts::Auto, "my-laptop.lan", None);
        assert!(guard.allows_authority("my-laptop.lan:3000"));
    }

    #[test]
    fn lists_add_to_auto_and_all_allows_anything() {
        let list = AllowedHosts::List(vec![HostPattern::Exact("dev.test".into()), HostPattern::Domain("corp".into())]);
        let guard = HostGuard::with_machine_name(&list, "127.0.0.1", None);
        for ok in ["dev.test", "corp:8080", "a.b.corp", "localhost"] {
            assert!(guard.allows_authority(ok), "{ok}");
        }
        for refused in ["a.dev.test", "evilcorp", "corp.evil"] {
            assert!(!guard.allows_authority(refused), "{refused}");
        }
        let all = HostGuard::with_machine_name(&AllowedHosts::All, "127.0.0.1", None);
        assert!(all.allows_authority("evil.example:3000"));
    }

    #[test]
    fn websocket_origins() {
        let guard = HostGuard::with_machine_name(&AllowedHosts::Auto, "127.0.0.1", None);
        let target = Target::parse("https://example.com").unwrap();
        let local: SocketAddr = "127.0.0.1:3000".parse().unwrap();
        let listed = vec!["http://localhost:5173".to_string()];
        let check = |origin: &str, host: Option<&str>| origin_allowed(origin, host, local, &target, &listed, &guard);
        assert!(check("http://localhost:3000", Some("localhost:3000")), "the page the proxy served");
        assert!(check("http://LOCALHOST:3000", Some("localhost:3000")));
        assert!(check("http://127.0.0.1:3000", None), "the listen address");
        assert!(check("https://example.com", Some("localhost:3000")), "the target");
        assert!(check("http://localhost:5173", Some("localhost:3000")), "listed");
        assert!(!check("http://localhost:5174", Some("localhost:3000")), "another local dev server");
        assert!(!check("http://127.0.0.1:3001", Some("127.0.0.1:3000")), "another port");
        assert!(!check("http://evil.example:3000", Some("evil.example:3000")), "same-origin after rebinding");
        assert!(!check("null", Some("localhost:3000")));
        assert!(!check("http://example.com", Some("localhost:3000")), "the target's origin is https");
    }

    fn request(method: &str, uri: &str, version: http::Version, headers: &[(&str, &str)]) -> Request<()> {
        let mut builder = Request::builder().method(method).uri(uri).version(version);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(()).unwrap()
    }

    #[test]
    fn the_requested_host_is_host_or_the_http2_authority() {
        use http::Version;
        assert_eq!(
            request_authority(&request("GET", "/", Version::HTTP_11, &[("host", "a.test:1")])),
            Some("a.test:1")
        );
        assert_eq!(request_authority(&request("GET", "https://b.test/", Version::HTTP_2, &[])), Some("b.test"));
        assert_eq!(request_authority(&request("GET", "/", Version::HTTP_10, &[])), None);
    }

    #[test]
    fn request_filter_refuses_smuggling_connect_open_proxying_missing_host_and_rebinding() {
        use http::Version;
        let guard = HostGuard::with_machine_name(&AllowedHosts::Auto, "127.0.0.1", None);
        let local: SocketAddr = "127.0.0.1:3000".parse().unwrap();
        let filter = |method: &str, uri: &str, version: Version, headers: &[(&str, &str)]| {
            request_filter(&request(method, uri, version, headers), local, &guard)
        };
        let host = [("host", "localhost:3000")];
        assert!(filter("GET", "/", Version::HTTP_11, &host).is_ok());
        assert!(filter("GET", "/", Version::HTTP_10, &[]).is_ok(), "an HTTP/1.0 tool without Host");
        assert!(matches!(filter("GET", "/", Version::HTTP_11, &[]), Err(ProxyError::MissingHost)));
        let framing = [("host", "localhost:3000"), ("content-length", "1x")];
        assert!(matches!(filter("POST", "/", Version::HTTP_11, &framing), Err(ProxyError::AmbiguousFraming(_))));
        assert!(matches!(filter("CONNECT", "localhost:3000", Version::HTTP_11, &host), Err(ProxyError::Connect)));
        // Absolute-form: the proxy's own address only, not another (allowed) host.
        for own in ["http://127.0.0.1:3000/x", "http://localhost:3000/x", "http://LOCALHOST:3000/x"] {
            assert!(filter("GET", own, Version::HTTP_11, &host).is_ok(), "{own}");
        }
        let foreign = filter("GET", "http://localhost:5173/", Version::HTTP_11, &host);
        assert!(matches!(foreign, Err(ProxyError::ForeignAuthority)), "{foreign:?}");
        // HTTP/2's :authority is not absolute-form, but it is checked against allowedHosts.
        assert!(filter("GET", "https://localhost:5173/", Version::HTTP_2, &[]).is_ok());
        let rebound = filter("GET", "https://evil.example/", Version::HTTP_2, &[]);
        assert!(matches!(rebound, Err(ProxyError::HostNotAllowed { .. })), "{rebound:?}");
        match filter("GET", "/", Version::HTTP_11, &[("host", "Evil.Example:3000")]) {
            Err(ProxyError::HostNotAllowed { host, name }) => {
                assert_eq!((host.as_str(), name.as_str()), ("Evil.Example:3000", "evil.example"))
            }
            other => panic!("{other:?}"),
        }
        let second = filter("GET", "/", Version::HTTP_11, &[("host", "localhost:3000"), ("host", "evil.example")]);
        assert!(matches!(second, Err(ProxyError::HostNotAllowed { .. })), "every Host is checked: {second:?}");
    }

    #[test]
    fn framings_two_parsers_may_read_differently_are_refused() {
        let risk = |pairs: &[(&'static str, &'static str)]| {
            let mut headers = http::HeaderMap::new();
            for (name, value) in pairs {
                headers.append(*name, HeaderValue::from_static(value));
            }
            smuggling_risk(&headers)
        };
        let plain: [&[(&str, &str)]; 4] =
            [&[], &[("transfer-encoding", "chunked")], &[("content-length", "0")], &[("content-length", "12")]];
        for headers in plain {
            assert_eq!(risk(headers), None, "{headers:?}");
        }
        let coding = Some("a Transfer-Encoding other than exactly one `chunked`\n");
        assert_eq!(risk(&[("transfer-encoding", "gzip")]), coding);
        assert_eq!(risk(&[("transfer-encoding", "chunked"), ("transfer-encoding", "chunked")]), coding);
        let lengths = [("content-length", "5"), ("content-length", "5")];
        assert_eq!(risk(&lengths), Some("more than one Content-Length header\n"), "even equal ones");
        for length in ["", "12a", "+12", "-1", "0x10"] {
            let not_a_number = Some("a Content-Length that is not a plain number\n");
            assert_eq!(risk(&[("content-length", length)]), not_a_number, "{length:?}");
        }
    }

    #[test]
    fn options_asterisk_is_answered_by_the_proxy_and_nothing_else_is() {
        use http::Version;
        let response = asterisk_options(&request("OPTIONS", "*", Version::HTTP_11, &[])).expect("answered here");
        assert_eq!(response.status(), http::StatusCode::OK);
        assert_eq!(response.headers()[header::ALLOW], "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS");
        assert_eq!(response.headers()[header::CONTENT_LENGTH], "0");
        assert!(asterisk_options(&request("OPTIONS", "/", Version::HTTP_11, &[])).is_none(), "a resource's OPTIONS");
        assert!(asterisk_options(&request("GET", "*", Version::HTTP_11, &[])).is_none());
    }

    #[test]
    fn credentials_are_withheld_from_other_sites_pages_only() {
        use http::Version;
        let guard = HostGuard::with_machine_name(&AllowedHosts::Auto, "127.0.0.1", None);
        let mut config = ProxyConfig::new(Target::parse("https://example.com").unwrap());
        config.allowed_origins = vec!["http://localhost:5173".to_string()];
        let local: SocketAddr = "127.0.0.1:3000".parse().unwrap();
        let other_site = |headers: &[(&str, &str)]| {
            let mut all = vec![("host", "localhost:3000")];
            all.extend_from_slice(headers);
            from_another_site(&request("GET", "/", Version::HTTP_11, &all), local, &config, &guard)
        };
        assert!(!other_site(&[]), "no header: curl or a server-side client");
        assert!(!other_site(&[("sec-fetch-site", "same-origin")]));
        assert!(!other_site(&[("sec-fetch-site", "none")]), "typed in the address bar");
        assert!(other_site(&[("sec-fetch-site", "cross-site")]));
        assert!(other_site(&[("sec-fetch-site", "same-site")]), "another port of localhost");
        assert!(!other_site(&[("sec-fetch-site", "same-site"), ("origin", "http://localhost:5173")]), "allowedOrigins");
        let own = [("sec-fetch-site", "same-origin"), ("origin", "http://localhost:3000")];
        assert!(!other_site(&own), "the proxy's own page, by the Host it asked for");
        assert!(other_site(&[("origin", "http://evil.example")]), "an Origin not allowed, without Sec-Fetch-Site");
        assert!(other_site(&[("origin", "http://localhost:3000"), ("origin", "http://evil.example")]));
    }

    #[test]
    fn websocket_upgrades_from_other_origins_are_refused() {
        use http::Version;
        let guard = HostGuard::with_machine_name(&AllowedHosts::Auto, "127.0.0.1", None);
        let config = ProxyConfig::new(Target::parse("https://example.com").unwrap());
        let local: SocketAddr = "127.0.0.1:3000".parse().unwrap();
        let upgrade = |origins: &[&'static str]| {
            let mut headers = vec![("host", "localhost:3000")];
            headers.extend(origins.iter().map(|origin| ("origin", *origin)));
            websocket_filter(&request("GET", "/", Version::HTTP_11, &headers), local, &config, &guard)
        };
        assert!(upgrade(&[]).is_ok(), "no Origin: not a browser page");
        assert!(upgrade(&["http://localhost:3000"]).is_ok());
        match upgrade(&["http://localhost:3000", "http://evil.example"]) {
            Err(ProxyError::OriginNotAllowed(origin)) => assert_eq!(origin, "http://evil.example"),
            other => panic!("{other:?}"),
        }
    }
}
