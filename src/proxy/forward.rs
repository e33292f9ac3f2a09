//! The upstream side: the request as the target gets it, sent on a pooled HTTP/1.1 and HTTP/2 client
//! (h2 when the upstream offers it via ALPN) with its timeout and one retry, TLS through rustls, the
//! raw connection a WebSocket tunnel dials, and upstream failures described for the 502 page.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, Uri};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

use crate::config::{ProxyConfig, Scheme, Target};
use crate::proxy::context::RequestCtx;
use crate::proxy::headers;
use crate::proxy::pages::ProxyError;

pub(crate) use crate::body::RequestBody;

pub(crate) type UpstreamClient = Client<HttpsConnector<HttpConnector<LocalhostResolver>>, RequestBody>;

/// The TLS settings for upstream connections: certificates checked by `verifier` (the OS's trust
/// plus NODE_EXTRA_CA_CERTS, see [`crate::server::tls::upstream_verifier`]), or not at all when it is `None`
/// (`proxy.secure: false`: self-signed dev certificates).
pub(crate) fn tls_config(verifier: Option<Arc<dyn ServerCertVerifier>>, alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .dangerous();
    let verifier = verifier.unwrap_or_else(|| Arc::new(AcceptAnyCertificate(provider)));
    let mut config = builder.with_custom_certificate_verifier(verifier).with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

pub(crate) fn client(verifier: Option<Arc<dyn ServerCertVerifier>>) -> UpstreamClient {
    let mut http = HttpConnector::new_with_resolver(LocalhostResolver::default());
    http.enforce_http(false);
    http.set_nodelay(true);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(Arc::unwrap_or_clone(tls_config(verifier, &[])))
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(std::time::Duration::from_secs(30))
        .pool_max_idle_per_host(256)
        .build(https)
}

/// Phase "upstream request": the client's request as the target gets it at the request's URL (URI,
/// version, headers; a page asked for uncompressed when the context says so).
/// `reverse`: `rewriteRequestBodies`' rules, when it is on.
pub(crate) fn upstream_request(
    mut parts: http::request::Parts,
    ctx: &RequestCtx,
    config: &ProxyConfig,
    reverse: Option<&[crate::rewrite::Rule]>,
) -> Result<http::request::Parts, ProxyError> {
    let (url, local_host) = (ctx.url.as_str(), ctx.local_host.as_str());
    // `rewriteRequestBodies`: the proxy's own origin in the query (a `redirect_to` the link rewrite
    // pointed at the proxy) goes back to the target's, as in bodies.
    let swapped = match (url.split_once('?'), reverse) {
        (Some((head, query)), Some(rules)) => {
            crate::body::reverse_query(query, rules).map(|query| format!("{head}?{query}"))
        }
        _ => None,
    };
    let url = swapped.as_deref().unwrap_or(url);
    parts.uri = Uri::try_from(url)
        .map_err(|e| ProxyError::Upstream { url: url.to_string(), reason: format!("invalid upstream URL: {e}") })?;
    parts.version = http::Version::HTTP_11;
    headers::to_upstream(&mut parts.headers, config, local_host, false, ctx.cross_site, ctx.client_ip);
    if ctx.upstream_identity {
        parts.headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("identity"));
    }
    Ok(parts)
}

/// The upstream request of a WebSocket upgrade: as [`upstream_request`]'s, with its upgrade headers
/// kept, and the origin-form URI the handshake is written with.
pub(crate) fn upgrade_request(
    mut parts: http::request::Parts,
    ctx: &RequestCtx,
    config: &ProxyConfig,
) -> Result<http::request::Parts, ProxyError> {
    headers::to_upstream(&mut parts.headers, config, &ctx.local_host, true, ctx.cross_site, ctx.client_ip);
    let mut origin_form = http::uri::Parts::default();
    origin_form.path_and_query =
        Some(parts.uri.path_and_query().cloned().unwrap_or_else(|| http::uri::PathAndQuery::from_static("/")));
    parts.uri = Uri::from_parts(origin_form)
        .map_err(|e| ProxyError::Upstream { url: ctx.url.clone(), reason: format!("invalid upstream URL: {e}") })?;
    Ok(parts)
}

/// Phase "send": the request to the target, waiting at most `timeout` (none: as long as it takes) for
/// its answer's headers. A body-less GET/HEAD/OPTIONS that fails before any answer is tried once
/// more, on a fresh connection.
pub(crate) async fn send(
    client: &UpstreamClient,
    parts: http::request::Parts,
    body: RequestBody,
    timeout: Option<Duration>,
) -> Result<Response<Incoming>, String> {
    let empty = http_body::Body::is_end_stream(&body);
    send_body(client, parts, body, empty, timeout).await
}

/// [`send`] with a body already read (replay's `onMiss: 'proxy'` read it to match it).
pub(crate) async fn send_buffered(
    client: &UpstreamClient,
    parts: http::request::Parts,
    body: Bytes,
    timeout: Option<Duration>,
) -> Result<Response<Incoming>, String> {
    let empty = body.is_empty();
    let body = http_body_util::Full::new(body).map_err(|never| match never {}).boxed();
    send_body(client, parts, body, empty, timeout).await
}

async fn send_body(
    client: &UpstreamClient,
    parts: http::request::Parts,
    body: RequestBody,
    empty: bool,
    timeout: Option<Duration>,
) -> Result<Response<Incoming>, String> {
    let retryable = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS) && empty;
    let request = Request::from_parts(parts.clone(), body);
    let exchange = async {
        match client.request(request).await {
            // Typically a pooled connection the upstream closed just as we reused it: like nginx,
            // try a request without a body once more, on a fresh connection.
            Err(e) if retryable && !e.is_connect() => {
                let empty = Empty::<Bytes>::new().map_err(|never| match never {}).boxed();
                client.request(Request::from_parts(parts, empty)).await
            }
            other => other,
        }
    };
    let Some(timeout) = timeout else { return exchange.await.map_err(|e| describe(&e)) };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(e)) => Err(describe(&e)),
        Err(_) => Err(format!("no response within {} ms (upstreamTimeoutMs)", timeout.as_millis())),
    }
}

/// A byte stream to the target, plain or TLS.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// A connection of its own to the target, for a WebSocket tunnel (never pooled).
pub(crate) async fn dial(target: &Target, tls: &Arc<ClientConfig>) -> Result<Box<dyn Stream>, String> {
    let host = target.host.trim_start_matches('[').trim_end_matches(']');
    let connected = match localhost_addresses(host, target.port) {
        Some(addresses) => TcpStream::connect(&addresses[..]).await,
        None => TcpStream::connect((host, target.port)).await,
    };
    let tcp = connected.map_err(|e| format!("connect failed: {e}"))?;
    let _ = tcp.set_nodelay(true);
    if target.scheme == Scheme::Http {
        return Ok(Box::new(tcp));
    }
    let name =
        rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| format!("invalid TLS name: {e}"))?;
    let tls = tokio_rustls::TlsConnector::from(tls.clone())
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake failed: {}", describe(&e)))?;
    Ok(Box::new(tls))
}

/// Why the upstream could not be reached, with the underlying causes (refused, DNS, certificate...).
pub(crate) fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

/// `secure: false`: any certificate is accepted, but handshake signatures are still checked.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
            .or_else(|_| verify_with_key_of(cert, message, dss, algorithms))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms).or_else(|error| {
            // TLS 1.3 has no PKCS#1 v1.5 or SHA-1 signatures.
            use SignatureScheme as S;
            let legacy = [
                S::RSA_PKCS1_SHA1,
                S::RSA_PKCS1_SHA256,
                S::RSA_PKCS1_SHA384,
                S::RSA_PKCS1_SHA512,
                S::ECDSA_SHA1_Legacy,
            ];
            if legacy.contains(&dss.scheme) {
                return Err(error);
            }
            verify_with_key_of(cert, message, dss, algorithms)
        })
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The handshake signature checked against the certificate's key as x509-parser reads it, for the
/// certificates webpki refuses to read: X.509 v1, which `openssl x509 -req` makes without an
/// extensions file (Browsersync's own test certificate is one). Only reached with `secure: false` or
/// a target on this machine, where the certificate itself is not checked anyway.
fn verify_with_key_of(
    cert: &CertificateDer<'_>,
    message: &[u8],
    dss: &DigitallySignedStruct,
    algorithms: &rustls::crypto::WebPkiSupportedAlgorithms,
) -> Result<HandshakeSignatureValid, rustls::Error> {
    use rustls::CertificateError;
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
    let key = parsed.public_key().subject_public_key.data.as_ref();
    let candidates = algorithms.mapping.iter().find(|(scheme, _)| *scheme == dss.scheme).map_or(&[][..], |(_, a)| a);
    if candidates.iter().any(|algorithm| algorithm.verify_signature(key, message, dss.signature()).is_ok()) {
        Ok(HandshakeSignatureValid::assertion())
    } else {
        Err(rustls::Error::InvalidCertificate(CertificateError::BadSignature))
    }
}

/// `localhost` and `*.localhost` are this machine's loopback addresses (RFC 6761), both of them,
/// whatever the hosts file lists: dev servers listen on 127.0.0.1 or on ::1 (Node 17 and later
/// resolve `localhost` to ::1 first), and a target named `localhost` must reach either. A refused
/// connection to the first is followed at once by the second.
fn localhost_addresses(host: &str, port: u16) -> Option<[SocketAddr; 2]> {
    crate::config::is_localhost_name(host)
        .then(|| [SocketAddr::from((Ipv4Addr::LOCALHOST, port)), SocketAddr::from((Ipv6Addr::LOCALHOST, port))])
}

/// The upstream client's resolver: [`localhost_addresses`] for `localhost` names, the system's
/// (getaddrinfo, on tokio's blocking pool) for the others.
#[derive(Clone)]
pub(crate) struct LocalhostResolver(GaiResolver);

impl Default for LocalhostResolver {
    fn default() -> Self {
        LocalhostResolver(GaiResolver::new())
    }
}

type Resolved = std::vec::IntoIter<SocketAddr>;

impl tower_service::Service<Name> for LocalhostResolver {
    type Response = Resolved;
    type Error = std::io::Error;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<Resolved>> + Send>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, name: Name) -> Self::Future {
        // The connector sets the port on what is returned.
        if let Some(addresses) = localhost_addresses(name.as_str(), 0) {
            return Box::pin(std::future::ready(Ok(Vec::from(addresses).into_iter())));
        }
        let lookup = self.0.call(name);
        Box::pin(async move { Ok(lookup.await?.collect::<Vec<_>>().into_iter()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_names_are_both_loopback_addresses_and_nothing_else_is() {
        for host in ["localhost", "LocalHost", "localhost.", "app.localhost", "a.b.LOCALHOST"] {
            let addresses = localhost_addresses(host, 8000).unwrap_or_else(|| panic!("{host}"));
            assert_eq!(addresses.map(|a| a.to_string()), ["127.0.0.1:8000".to_string(), "[::1]:8000".to_string()]);
        }
        for host in ["notlocalhost", "localhost.com", "xlocalhost", ".localhost", "127.0.0.1", "example.test"] {
            assert!(localhost_addresses(host, 8000).is_none(), "{host}");
        }
    }
}
