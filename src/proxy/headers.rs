//! Every header rewrite, in both directions: one place to look.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use std::net::IpAddr;

use http::StatusCode;

use crate::codec;
use crate::config::{ProxyConfig, Target};

/// Hop-by-hop headers (RFC 9110 §7.6.1): they describe one connection and are never forwarded.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
];

/// Removes hop-by-hop headers, including those the `Connection` header names. `Upgrade` goes too
/// unless the request is being tunnelled.
pub(crate) fn remove_hop_by_hop(headers: &mut HeaderMap, keep_upgrade: bool) {
    let listed: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .filter(|name| !(keep_upgrade && name == header::UPGRADE))
        .collect();
    for name in listed {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    if keep_upgrade {
        headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    } else {
        headers.remove(header::UPGRADE);
    }
}

/// The request as the upstream should see it: Host is the target's, Origin and Referer point at
/// the target instead of the proxy (Browsersync leaves them, breaking origin checks), only content
/// codings we can decode are offered, `reqHeaders` are set and, with `xfwd`, X-Forwarded-* added.
pub(crate) fn to_upstream(
    headers: &mut HeaderMap,
    config: &ProxyConfig,
    local_host: &str,
    websocket: bool,
    cross_site: bool,
    client_ip: Option<IpAddr>,
) {
    // `Trailer` names the fields a chunked body ends with, and hyper sends only those: a request body
    // that goes on as it came keeps its trailers (RFC 9110 does not make it hop-by-hop).
    let trailer: Vec<HeaderValue> = headers.get_all(header::TRAILER).iter().cloned().collect();
    remove_hop_by_hop(headers, websocket);
    for value in trailer {
        headers.append(header::TRAILER, value);
    }
    let target = &config.target;
    // `proxyOptions.changeOrigin: false` keeps the client's Host, as http-proxy does.
    if config.change_origin {
        if let Ok(host) = HeaderValue::from_str(&target.authority()) {
            headers.insert(header::HOST, host);
        }
    }
    for name in [header::ORIGIN, header::REFERER] {
        if let Some(value) = headers.get(&name).and_then(|v| v.to_str().ok()) {
            if let Some(rewritten) = local_url_to_target(value, local_host, target) {
                if let Ok(value) = HeaderValue::from_str(&rewritten) {
                    headers.insert(name, value);
                }
            }
        }
    }
    let accept = headers.get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok());
    // Built from our own coding tokens, so always a valid value; were it not, the upstream gets none.
    match codec::upstream_accept_encoding(accept).and_then(|value| HeaderValue::from_str(&value).ok()) {
        Some(value) => {
            headers.insert(header::ACCEPT_ENCODING, value);
        }
        None => {
            headers.remove(header::ACCEPT_ENCODING);
        }
    }
    // HTTP/2 clients may split Cookie into several fields; an HTTP/1.1 upstream expects one, joined
    // with "; " (RFC 9113 §8.2.3).
    if headers.get_all(header::COOKIE).iter().nth(1).is_some() {
        let joined: Vec<&[u8]> = headers.get_all(header::COOKIE).iter().map(HeaderValue::as_bytes).collect();
        if let Ok(value) = HeaderValue::from_bytes(&joined.join(&b"; "[..])) {
            headers.insert(header::COOKIE, value);
        }
    }
    add_req_headers(headers, config, cross_site);
    if config.xfwd {
        forwarded_headers(headers, client_ip, local_host);
    }
}

/// `X-Forwarded-For`, `-Port`, `-Proto` (appended to the client's) and `-Host` (kept if the client
/// sent one), as http-proxy's `xfwd` adds them.
fn forwarded_headers(headers: &mut HeaderMap, client_ip: Option<IpAddr>, local_host: &str) {
    let port = local_host
        .rsplit_once(':')
        .filter(|(host, _)| !host.is_empty() && (!host.contains(':') || host.ends_with(']')))
        .map_or("80", |(_, port)| port)
        .to_string();
    let values = [
        ("x-forwarded-for", client_ip.map(|ip| ip.to_string()).unwrap_or_default()),
        ("x-forwarded-port", port),
        ("x-forwarded-proto", "http".to_string()),
    ];
    for (name, value) in values {
        let joined = match headers.get(name).and_then(|v| v.to_str().ok()) {
            Some(existing) if !existing.is_empty() => format!("{existing},{value}"),
            _ => value,
        };
        if let Ok(value) = HeaderValue::from_str(&joined) {
            headers.insert(name, value);
        }
    }
    if !headers.contains_key("x-forwarded-host") {
        if let Ok(value) = HeaderValue::from_str(local_host) {
            headers.insert("x-forwarded-host", value);
        }
    }
}

/// `reqHeaders`, set on every upstream request; a request from another site's page
/// (`security::from_another_site`) does not get those that carry credentials.
pub(crate) fn add_req_headers(headers: &mut HeaderMap, config: &ProxyConfig, cross_site: bool) {
    for (name, value) in &config.req_headers {
        // Credentials by the redaction policy: a secret name (`Authorization`, `Cookie`...) or a
        // key-shaped value.
        if cross_site && crate::observe::mask::is_secret_header(name.as_str(), value.as_bytes()) {
            continue;
        }
        headers.insert(name.clone(), value.clone());
    }
}

/// `http(s)://LOCAL_HOST/rest` becomes `TARGET_ORIGIN/rest`; anything else is left alone.
fn local_url_to_target(value: &str, local_host: &str, target: &Target) -> Option<String> {
    let rest = value.strip_prefix("http://").or_else(|| value.strip_prefix("https://"))?;
    let after = rest.strip_prefix(local_host)?;
    (after.is_empty() || after.starts_with(['/', '?', '#'])).then(|| format!("{}{after}", target.origin()))
}

/// The response as the client should see it: redirects to the target come back to the proxy and
/// cookies lose their `Domain` (keeping every other attribute, unlike Browsersync).
pub(crate) fn to_client(headers: &mut HeaderMap, status: StatusCode, config: &ProxyConfig, local_host: &str) {
    remove_hop_by_hop(headers, status == StatusCode::SWITCHING_PROTOCOLS);
    if matches!(status.as_u16(), 201 | 301 | 302 | 303 | 307 | 308) {
        if let Some(location) = headers.get(header::LOCATION).and_then(|v| v.to_str().ok()) {
            let rewritten = target_url_to_local(location, config, local_host);
            let location = rewritten.as_deref().unwrap_or(location);
            // `…/wp-login.php?redirect_to=http%3A%2F%2Fwp.test%2F`: the query's origin too.
            let encoded = encoded_target_to_local(location, config, local_host);
            if let Some(value) = encoded.or(rewritten).and_then(|v| HeaderValue::from_str(&v).ok()) {
                headers.insert(header::LOCATION, value);
            }
        }
    }
    // `Refresh: 0; url=http://wp.test/next`: a redirect too, in the browser's hands.
    if let Some(refresh) = headers.get("refresh").and_then(|v| v.to_str().ok()) {
        if let Some(value) = refresh_to_local(refresh, config, local_host).and_then(|v| HeaderValue::from_str(&v).ok())
        {
            headers.insert("refresh", value);
        }
    }
    // CORS: the proxy never answers for the target with an `Access-Control-Allow-Origin` of its own.
    // The upstream's, when it names the target's origin (the rewritten Origin echoed back), names
    // the proxy's instead, like `Location`; `*`, `null` and other origins pass as they are.
    let allow_origin: Vec<HeaderValue> = headers
        .get_all(header::ACCESS_CONTROL_ALLOW_ORIGIN)
        .iter()
        .map(|v| match v.to_str().ok().and_then(crate::config::normalize_origin) {
            Some(origin) if origin == config.target.origin() => {
                HeaderValue::from_str(&format!("{}://{local_host}", config.local_scheme()))
                    .unwrap_or_else(|_| v.clone())
            }
            _ => v.clone(),
        })
        .collect();
    if !allow_origin.is_empty() {
        headers.remove(header::ACCESS_CONTROL_ALLOW_ORIGIN);
        for value in allow_origin {
            headers.append(header::ACCESS_CONTROL_ALLOW_ORIGIN, value);
        }
    }
    if config.strip_cookie_domain {
        let cookies: Vec<HeaderValue> = headers
            .get_all(header::SET_COOKIE)
            .iter()
            .map(|v| match v.to_str() {
                Ok(text) => HeaderValue::from_str(&strip_cookie_domain(text)).unwrap_or_else(|_| v.clone()),
                Err(_) => v.clone(),
            })
            .collect();
        if !cookies.is_empty() {
            headers.remove(header::SET_COOKIE);
            for cookie in cookies {
                headers.append(header::SET_COOKIE, cookie);
            }
        }
    }
}

/// The headers of a response whose body is rewritten here: its length, ranges and digest no longer
/// hold, and it goes out in `encoding` (varying with `Accept-Encoding` when compressed).
pub(crate) fn for_rewritten_body(headers: &mut HeaderMap, encoding: codec::Encoding) {
    headers.remove(header::CONTENT_LENGTH);
    headers.remove(header::ACCEPT_RANGES);
    headers.remove("content-md5");
    if encoding == codec::Encoding::Identity {
        headers.remove(header::CONTENT_ENCODING);
        return;
    }
    headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(encoding.token()));
    let varies = headers
        .get_all(header::VARY)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.to_ascii_lowercase().contains("accept-encoding") || v.contains('*')));
    if !varies {
        headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
}

/// A page that gets the snippet: its `Content-Security-Policy` (and `-Report-Only`, so that no false
/// report is sent) amended so that the snippet runs and connects back (`crate::csp`).
pub(crate) fn amend_csp(headers: &mut HeaderMap, page: &crate::csp::PagePolicy) {
    for name in [header::CONTENT_SECURITY_POLICY, header::CONTENT_SECURITY_POLICY_REPORT_ONLY] {
        if !headers.contains_key(&name) {
            continue;
        }
        // Each field is its own policy (or several): amended one by one, order kept.
        let fields: Vec<HeaderValue> = headers
            .get_all(&name)
            .iter()
            .map(|value| match value.to_str().ok().and_then(|policies| page.amend(policies)) {
                Some(amended) => HeaderValue::from_str(&amended).unwrap_or_else(|_| value.clone()),
                None => value.clone(),
            })
            .collect();
        headers.remove(&name);
        for value in fields {
            headers.append(&name, value);
        }
    }
}

/// A URL on the target (absolute or protocol-relative) moved to the proxy's origin.
fn target_url_to_local(url: &str, config: &ProxyConfig, local_host: &str) -> Option<String> {
    let target = &config.target;
    let rest =
        url.strip_prefix("http://").or_else(|| url.strip_prefix("https://")).or_else(|| url.strip_prefix("//"))?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let authority = authority.to_ascii_lowercase();
    let same_host = authority == target.authority() || authority == format!("{}:{}", target.host, target.port);
    same_host.then(|| format!("{}://{local_host}{path}", config.local_scheme()))
}

/// The target's origin percent-encoded anywhere in `value` (any case) as the proxy's; `None` when
/// there is none. The same forms as the pages' encoded link rule (`Rule::encoded_origin`).
fn encoded_target_to_local(value: &str, config: &ProxyConfig, local_host: &str) -> Option<String> {
    let to = format!("{}://{local_host}", config.local_scheme());
    let swap =
        crate::rewrite::OriginSwap::new([config.target.link_host().as_str()], &to, crate::rewrite::Forms::ENCODED);
    // ASCII written over ASCII: still the valid text it was.
    String::from_utf8(swap.swap_all(value.as_bytes())?).ok()
}

/// A `Refresh` header's `url=` naming the target (plainly or percent-encoded in its query), as the proxy's.
fn refresh_to_local(value: &str, config: &ProxyConfig, local_host: &str) -> Option<String> {
    let lower = value.to_ascii_lowercase();
    let at = lower.find("url=")? + "url=".len();
    let (head, url) = value.split_at(at);
    let quote = url.chars().next().filter(|c| *c == '\'' || *c == '"');
    let bare = quote.map_or(url, |q| url[1..].trim_end_matches(q));
    let plain = target_url_to_local(bare, config, local_host);
    let url2 = plain.as_deref().unwrap_or(bare);
    let rewritten = encoded_target_to_local(url2, config, local_host).or(plain)?;
    Some(match quote {
        Some(q) => format!("{head}{q}{rewritten}{q}"),
        None => format!("{head}{rewritten}"),
    })
}

/// `Set-Cookie` without its `Domain` attribute; every other attribute stays as it was.
pub(crate) fn strip_cookie_domain(cookie: &str) -> String {
    cookie
        .split(';')
        .enumerate()
        .filter(|(i, attr)| *i == 0 || !attr.split('=').next().unwrap_or("").trim().eq_ignore_ascii_case("domain"))
        .map(|(_, attr)| attr)
        .collect::<Vec<_>>()
        .join(";")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_headers_append_like_http_proxy() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", HeaderValue::from_static("10.0.0.1"));
        forwarded_headers(&mut h, Some("127.0.0.1".parse().unwrap()), "localhost:3000");
        assert_eq!(h["x-forwarded-for"], "10.0.0.1,127.0.0.1");
        assert_eq!(h["x-forwarded-port"], "3000");
        assert_eq!(h["x-forwarded-proto"], "http");
        assert_eq!(h["x-forwarded-host"], "localhost:3000");
        let mut h = HeaderMap::new();
        forwarded_headers(&mut h, None, "[::1]");
        assert_eq!(h["x-forwarded-port"], "80");
    }

    #[test]
    fn encoded_and_refresh_urls_naming_the_target_come_back_to_the_proxy() {
        let config = ProxyConfig::new(Target::parse("http://wp.test:8088").unwrap());
        let local = "localhost:3102";
        let location = "http://localhost:3102/wp-login.php?redirect_to=http%3A%2F%2Fwp.test%3A8088%2Fwp-admin%2F&x=HTTPS%3a%2f%2fWP.TEST%3a8088";
        assert_eq!(
            encoded_target_to_local(location, &config, local).as_deref(),
            Some("http://localhost:3102/wp-login.php?redirect_to=http%3A%2F%2Flocalhost%3A3102%2Fwp-admin%2F&x=http%3A%2F%2Flocalhost%3A3102")
        );
        assert_eq!(encoded_target_to_local("/?r=http%3A%2F%2Fother.test%3A8088", &config, local), None);
        assert_eq!(encoded_target_to_local("/?r=ftp%3A%2F%2Fwp.test%3A8088", &config, local), None);
        assert_eq!(
            refresh_to_local("0; url=http://wp.test:8088/next?r=http%3A%2F%2Fwp.test%3A8088", &config, local)
                .as_deref(),
            Some("0; url=http://localhost:3102/next?r=http%3A%2F%2Flocalhost%3A3102")
        );
        assert_eq!(
            refresh_to_local("5;URL='http://wp.test:8088/x'", &config, local).as_deref(),
            Some("5;URL='http://localhost:3102/x'")
        );
        assert_eq!(refresh_to_local("0; url=https://elsewhere.test/", &config, local), None);
        let mut headers = HeaderMap::new();
        headers.insert(
            header::LOCATION,
            HeaderValue::from_static("http://wp.test:8088/a?b=http%3A%2F%2Fwp.test%3A8088%2F"),
        );
        headers.insert("refresh", HeaderValue::from_static("0; url=http://wp.test:8088/c"));
        to_client(&mut headers, StatusCode::FOUND, &config, local);
        assert_eq!(headers[header::LOCATION], "http://localhost:3102/a?b=http%3A%2F%2Flocalhost%3A3102%2F");
        assert_eq!(headers["refresh"], "0; url=http://localhost:3102/c");
    }

    fn config() -> ProxyConfig {
        ProxyConfig::new(Target::parse("https://example.com").unwrap())
    }

    #[test]
    fn request_headers_point_at_the_target() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("localhost:3000"));
        h.insert(header::ORIGIN, HeaderValue::from_static("http://localhost:3000"));
        h.insert(header::REFERER, HeaderValue::from_static("http://localhost:3000/a?b"));
        h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive, x-secret"));
        h.insert("x-secret", HeaderValue::from_static("1"));
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip, sdch, br"));
        to_upstream(&mut h, &config(), "localhost:3000", false, false, None);
        assert_eq!(h[header::HOST], "example.com");
        assert_eq!(h[header::ORIGIN], "https://example.com");
        assert_eq!(h[header::REFERER], "https://example.com/a?b");
        assert_eq!(h[header::ACCEPT_ENCODING], "gzip, br");
        assert!(h.get("x-secret").is_none() && h.get(header::CONNECTION).is_none());
    }

    #[test]
    fn cookies_split_by_http2_are_joined_for_the_upstream() {
        let mut h = HeaderMap::new();
        h.append(header::COOKIE, HeaderValue::from_static("a=1"));
        h.append(header::COOKIE, HeaderValue::from_static("b=2"));
        to_upstream(&mut h, &config(), "localhost:3000", false, false, None);
        let cookies: Vec<_> = h.get_all(header::COOKIE).iter().collect();
        assert_eq!(cookies, ["a=1; b=2"]);
    }

    #[test]
    fn foreign_origins_are_left_alone() {
        let mut h = HeaderMap::new();
        h.insert(header::ORIGIN, HeaderValue::from_static("http://localhost:30001"));
        to_upstream(&mut h, &config(), "localhost:3000", false, false, None);
        assert_eq!(h[header::ORIGIN], "http://localhost:30001");
    }

    #[test]
    fn redirects_and_cookies_come_back_to_the_proxy() {
        let mut h = HeaderMap::new();
        h.insert(header::LOCATION, HeaderValue::from_static("https://example.com/login?next=/"));
        h.append(
            header::SET_COOKIE,
            HeaderValue::from_static("sid=1; Domain=.example.com; Path=/; Secure; HttpOnly; SameSite=Lax"),
        );
        h.append(header::SET_COOKIE, HeaderValue::from_static("b=2; domain=example.com"));
        to_client(&mut h, StatusCode::FOUND, &config(), "localhost:3000");
        // An https target: the proxy serves https too (Browsersync's way), so its own URLs are https.
        assert_eq!(h[header::LOCATION], "https://localhost:3000/login?next=/");
        let cookies: Vec<_> = h.get_all(header::SET_COOKIE).iter().map(|v| v.to_str().unwrap()).collect();
        assert_eq!(cookies, ["sid=1; Path=/; Secure; HttpOnly; SameSite=Lax", "b=2"]);
        let mut h = HeaderMap::new();
        h.insert(header::LOCATION, HeaderValue::from_static("https://other.com/x"));
        to_client(&mut h, StatusCode::FOUND, &config(), "localhost:3000");
        assert_eq!(h[header::LOCATION], "https://other.com/x");
        let mut plain = config();
        plain.https = crate::config::Https::Off;
        let mut h = HeaderMap::new();
        h.insert(header::LOCATION, HeaderValue::from_static("https://example.com/a"));
        to_client(&mut h, StatusCode::FOUND, &plain, "localhost:3000");
        assert_eq!(h[header::LOCATION], "http://localhost:3000/a", "https: false");
    }

    #[test]
    fn allow_origin_naming_the_target_names_the_proxy_and_others_pass() {
        for (upstream, client) in [
            ("https://example.com", "https://localhost:3000"),
            ("https://Example.com:443", "https://localhost:3000"),
            ("*", "*"),
            ("null", "null"),
            ("http://example.com", "http://example.com"),
            ("http://localhost:5173", "http://localhost:5173"),
        ] {
            let mut h = HeaderMap::new();
            h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static(upstream));
            to_client(&mut h, StatusCode::OK, &config(), "localhost:3000");
            assert_eq!(h[header::ACCESS_CONTROL_ALLOW_ORIGIN], client, "{upstream}");
        }
        let mut h = HeaderMap::new();
        to_client(&mut h, StatusCode::OK, &config(), "localhost:3000");
        assert!(h.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none(), "none added");
    }

    #[test]
    fn another_sites_request_gets_no_credential_req_headers() {
        let mut config = config();
        config.req_headers = vec![
            (HeaderName::from_static("authorization"), HeaderValue::from_static("Bearer t")),
            (HeaderName::from_static("x-token-ish"), HeaderValue::from_static("sk-abcdefghij0123456789xyz")),
            (HeaderName::from_static("x-note"), HeaderValue::from_static("kept")),
        ];
        let mut own = HeaderMap::new();
        add_req_headers(&mut own, &config, false);
        assert_eq!(own.len(), 3);
        let mut other = HeaderMap::new();
        add_req_headers(&mut other, &config, true);
        assert_eq!(other.len(), 1);
        assert_eq!(other.get("x-note").unwrap(), "kept");
    }

    #[test]
    fn hop_by_hop_headers_go_and_upgrade_stays_only_for_a_tunnel() {
        let head = || {
            let mut h = HeaderMap::new();
            h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade, x-hop"));
            h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
            h.insert("x-hop", HeaderValue::from_static("1"));
            h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
            h.insert(header::TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
            h.insert("x-end-to-end", HeaderValue::from_static("kept"));
            h
        };
        let mut tunnel = head();
        to_client(&mut tunnel, StatusCode::SWITCHING_PROTOCOLS, &config(), "localhost:3000");
        assert_eq!(tunnel[header::CONNECTION], "upgrade");
        assert_eq!(tunnel[header::UPGRADE], "websocket");
        for name in ["x-hop", "keep-alive", "transfer-encoding"] {
            assert!(tunnel.get(name).is_none(), "{name}");
        }
        assert_eq!(tunnel["x-end-to-end"], "kept");
        let mut answer = head();
        to_client(&mut answer, StatusCode::OK, &config(), "localhost:3000");
        for name in ["connection", "upgrade", "x-hop", "keep-alive", "transfer-encoding"] {
            assert!(answer.get(name).is_none(), "{name}");
        }
        assert_eq!(answer["x-end-to-end"], "kept");
    }

    #[test]
    fn forwarded_headers_keep_the_clients_host_and_start_an_empty_list() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", HeaderValue::from_static(""));
        h.insert("x-forwarded-host", HeaderValue::from_static("app.test"));
        forwarded_headers(&mut h, Some("::1".parse().unwrap()), "[::1]:3000");
        assert_eq!(h["x-forwarded-for"], "::1");
        assert_eq!(h["x-forwarded-port"], "3000");
        assert_eq!(h["x-forwarded-host"], "app.test");
    }

    #[test]
    fn a_rewritten_body_loses_length_ranges_and_digest_and_varies_by_accept_encoding_once() {
        let head = |vary: Option<&'static str>| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("10"));
            h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            h.insert("content-md5", HeaderValue::from_static("Q2hlY2sgSW50ZWdyaXR5IQ=="));
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            if let Some(vary) = vary {
                h.insert(header::VARY, HeaderValue::from_static(vary));
            }
            h
        };
        let mut identity = head(None);
        for_rewritten_body(&mut identity, codec::Encoding::Identity);
        assert!(identity.is_empty(), "{identity:?}");
        let mut br = head(Some("Origin"));
        for_rewritten_body(&mut br, codec::Encoding::Brotli);
        assert_eq!(br[header::CONTENT_ENCODING], "br");
        assert!(br.get(header::CONTENT_LENGTH).is_none() && br.get(header::ACCEPT_RANGES).is_none());
        assert_eq!(br.get_all(header::VARY).iter().collect::<Vec<_>>(), ["Origin", "Accept-Encoding"]);
        for vary in ["origin, accept-encoding", "*"] {
            let mut gzip = head(Some(vary));
            for_rewritten_body(&mut gzip, codec::Encoding::Gzip);
            assert_eq!(gzip.get_all(header::VARY).iter().collect::<Vec<_>>(), [vary], "already varies");
        }
    }

    #[test]
    fn each_csp_field_is_amended_in_place_and_none_is_added() {
        let page = crate::csp::PagePolicy::new("http", "localhost:3000");
        let mut h = HeaderMap::new();
        h.append(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("script-src 'self'"));
        h.append(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("img-src *"));
        amend_csp(&mut h, &page);
        let fields: Vec<_> = h.get_all(header::CONTENT_SECURITY_POLICY).iter().map(|v| v.to_str().unwrap()).collect();
        assert_eq!(fields.len(), 2);
        assert!(fields[0].starts_with("script-src 'self' 'nonce-"), "{fields:?}");
        assert_eq!(fields[1], "img-src *");
        assert!(h.get(header::CONTENT_SECURITY_POLICY_REPORT_ONLY).is_none());
    }
}
