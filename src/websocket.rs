//! WebSocket upgrades: the handshake goes to the target with Origin rewritten (Browsersync users
//! ask for it, #1185), then bytes are copied both ways until either side closes.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::uri::PathAndQuery;
use http::{Request, Response, StatusCode};
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::body::{ProxyBody, UpstreamBody};
use crate::config::Scheme;
use crate::headers;
use crate::server::{bad_gateway, Phase, Shared};

pub fn is_upgrade<B>(req: &Request<B>) -> bool {
    let has_token = |name: header::HeaderName, token: &str| {
        req.headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    };
    has_token(header::CONNECTION, "upgrade") && has_token(header::UPGRADE, "websocket")
}

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

async fn connect(shared: &Shared) -> Result<Box<dyn Stream>, String> {
    let target = &shared.config.target;
    let host = target.host.trim_start_matches('[').trim_end_matches(']');
    let tcp = TcpStream::connect((host, target.port)).await.map_err(|e| format!("connect failed: {e}"))?;
    let _ = tcp.set_nodelay(true);
    if target.scheme == Scheme::Http {
        return Ok(Box::new(tcp));
    }
    let name =
        rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| format!("invalid TLS name: {e}"))?;
    let tls = tokio_rustls::TlsConnector::from(shared.websocket_tls.clone())
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake failed: {}", crate::forward::describe(&e)))?;
    Ok(Box::new(tls))
}

pub(crate) async fn tunnel(shared: Arc<Shared>, mut req: Request<Incoming>, local_host: &str) -> Response<ProxyBody> {
    let config = &shared.config;
    let url = format!("{}{}", config.target.origin(), req.uri().path_and_query().map_or("/", |p| p.as_str()));
    let client_upgrade = hyper::upgrade::on(&mut req);
    let (mut parts, _) = req.into_parts();
    headers::to_upstream(&mut parts.headers, config, local_host, true);
    let mut origin_form = http::uri::Parts::default();
    origin_form.path_and_query =
        Some(parts.uri.path_and_query().cloned().unwrap_or_else(|| PathAndQuery::from_static("/")));
    parts.uri = match http::Uri::from_parts(origin_form) {
        Ok(uri) => uri,
        Err(e) => return bad_gateway(&shared, &url, &format!("invalid upstream URL: {e}")),
    };
    let io = match connect(&shared).await {
        Ok(io) => io,
        Err(reason) => return bad_gateway(&shared, &url, &reason),
    };
    let (mut sender, conn) = match hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(io)).await {
        Ok(pair) => pair,
        Err(e) => return bad_gateway(&shared, &url, &crate::forward::describe(&e)),
    };
    tokio::spawn(conn.with_upgrades());
    let mut response = match sender.send_request(Request::from_parts(parts, Empty::new())).await {
        Ok(response) => response,
        Err(e) => return bad_gateway(&shared, &url, &crate::forward::describe(&e)),
    };
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        // The upstream refused the upgrade: pass its answer on as is.
        let (mut head, body) = response.into_parts();
        headers::to_client(&mut head.headers, head.status, config, local_host);
        let upstream = UpstreamBody::new(body, config.upstream_timeout, shared.stats.clone(), url);
        return Response::from_parts(head, ProxyBody::Passthrough { prefix: None, upstream });
    }
    let upstream_upgrade = hyper::upgrade::on(&mut response);
    let (mut head, _) = response.into_parts();
    headers::to_client(&mut head.headers, head.status, config, local_host);
    head.headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    shared.stats.add_websocket();
    let mut phase = shared.phase.clone();
    let stats = shared.stats.clone();
    tokio::spawn(async move {
        let (client, upstream) = match tokio::try_join!(client_upgrade, upstream_upgrade) {
            Ok(pair) => pair,
            Err(e) => return stats.log_error(&format!("websocket upgrade of {url} failed: {e}")),
        };
        let (mut client, mut upstream) = (TokioIo::new(client), TokioIo::new(upstream));
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
            _ = phase.wait_for(|&p| p == Phase::Cut) => {}
        }
    });
    Response::from_parts(head, ProxyBody::Full(None))
}
