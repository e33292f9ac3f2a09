//! TLS on both sides. Served (`https`): the proxy's certificate, generated for the local names at
//! start with rcgen or read from the user's PEM files, offered with ALPN `h2` then `http/1.1`.
//! Upstream: whom the proxy trusts when it verifies the target's certificate (`proxy.secure`).

use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::client::danger::ServerCertVerifier;
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::config::{Https, Target};
use crate::error::StartError;

/// What the proxy serves HTTPS with.
pub(crate) struct ServedTls {
    pub(crate) acceptor: TlsAcceptor,
    /// The certificate (chain) as PEM, for clients to trust: `server.certificate` in JS.
    pub(crate) certificate_pem: String,
}

/// The ALPN name of HTTP/2; a connection that did not agree on it speaks HTTP/1.1.
pub(crate) const ALPN_H2: &[u8] = b"h2";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server side of `https`: a self-signed certificate, or the files of `https: { key, cert }`.
/// HTTP/2 is offered first, as production sites do; no extended CONNECT is announced, so browsers
/// open WebSockets on HTTP/1.1 connections, which the tunnel handles.
pub(crate) fn served(https: &Https, listen_host: &str) -> Result<ServedTls, StartError> {
    let (chain, key, certificate_pem) = match https {
        Https::Files { key, cert, ca } => from_files(key, cert, ca)?,
        Https::Auto | Https::Off | Https::SelfSigned => self_signed(listen_host)?,
    };
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| StartError::Https(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| StartError::Https(format!("the key and certificate cannot be used together: {e}")))?;
    config.alpn_protocols = vec![ALPN_H2.to_vec(), b"http/1.1".to_vec()];
    Ok(ServedTls { acceptor: TlsAcceptor::from(Arc::new(config)), certificate_pem })
}

/// The names the self-signed certificate is for (rcgen makes IP addresses IP SANs).
fn certificate_names(listen_host: &str) -> Vec<String> {
    let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    let host = listen_host.trim().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    let unspecified = host.parse::<IpAddr>().is_ok_and(|ip| ip.is_unspecified());
    if !host.is_empty() && !unspecified && !names.contains(&host) {
        names.push(host);
    }
    names
}

type Chain = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>, String);

/// A certificate for `localhost`, `127.0.0.1`, `::1` and the listen host (unless it is `0.0.0.0`
/// or `::`), signed by its own key: browsers ask once, Node clients trust `server.certificate`.
fn self_signed(listen_host: &str) -> Result<Chain, StartError> {
    let failed = |e: rcgen::Error| StartError::Https(format!("cannot generate a self-signed certificate: {e}"));
    let mut params = rcgen::CertificateParams::new(certificate_names(listen_host)).map_err(failed)?;
    params.distinguished_name.push(rcgen::DnType::CommonName, "devproxy-native (self-signed, localhost)");
    let key = rcgen::KeyPair::generate().map_err(failed)?;
    let cert = params.self_signed(&key).map_err(failed)?;
    let der = PrivateKeyDer::Pkcs8(key.serialize_der().into());
    Ok((vec![cert.der().clone()], der, cert.pem()))
}

/// Reads `https: { key, cert, ca }`; each problem names the option, the path and what is wrong.
fn from_files(key: &Path, cert: &Path, ca: &[std::path::PathBuf]) -> Result<Chain, StartError> {
    let (mut chain, mut pem) = read_certificates("cert", cert)?;
    for path in ca {
        let (more, text) = read_certificates("ca", path)?;
        chain.extend(more);
        pem.push_str(&text);
    }
    let bytes = read("key", key)?;
    let key = PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
        let text = String::from_utf8_lossy(&bytes);
        let reason = if text.contains("ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED") {
            "holds an encrypted key, which is not supported: decrypt it with \
             `openssl pkey -in key.pem -out key-decrypted.pem` and pass that file"
                .to_string()
        } else if text.contains("BEGIN CERTIFICATE") {
            "holds a certificate, not a private key: `key` and `cert` may be swapped".to_string()
        } else {
            format!("holds no PEM private key (-----BEGIN PRIVATE KEY-----, RSA or EC PRIVATE KEY): {}", pem_error(e))
        };
        file_error("key", key, reason)
    })?;
    Ok((chain, key, pem))
}

fn read(option: &'static str, path: &Path) -> Result<Vec<u8>, StartError> {
    std::fs::read(path).map_err(|e| {
        let reason = match e.kind() {
            std::io::ErrorKind::NotFound => "does not exist".to_string(),
            _ => format!("cannot be read: {e}"),
        };
        file_error(option, path, reason)
    })
}

fn read_certificates(option: &'static str, path: &Path) -> Result<(Vec<CertificateDer<'static>>, String), StartError> {
    let bytes = read(option, path)?;
    let chain = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(option, path, format!("is not a valid PEM file: {}", pem_error(e))))?;
    if chain.is_empty() {
        let text = String::from_utf8_lossy(&bytes);
        let reason = if text.contains("PRIVATE KEY") {
            "holds a private key, not a certificate: `key` and `cert` may be swapped"
        } else {
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
        };
        return Err(file_error(option, path, reason.into()));
    }
    Ok((chain, String::from_utf8_lossy(&bytes).into_owned()))
}

fn file_error(option: &'static str, path: &Path, reason: String) -> StartError {
    StartError::HttpsFile { option, path: path.display().to_string(), reason }
}

fn pem_error(e: rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::NoItemsFound => "nothing found".into(),
        other => format!("{other:?}"),
    }
}

/// The upstream verifier, and a warning for the log.
pub(crate) type Trust = (Arc<dyn ServerCertVerifier>, Option<String>);

/// The verifier of upstream certificates when `proxy.secure` is on (the default), built once per
/// process, as Node reads `NODE_EXTRA_CA_CERTS` once.
///
/// rustls-platform-verifier rather than rustls-native-certs + webpki-roots: on macOS and Windows it
/// asks the OS's own verifier, so the keychain or certificate store where mkcert, Valet/Herd and
/// Local install their CA counts with the user's trust settings (trust there is more than a list
/// of roots: per-user trust, distrust, revocation), exactly as the browser sees it; on Linux it
/// reads the distribution's CA store, where `mkcert -install` puts it. The certificates of
/// `NODE_EXTRA_CA_CERTS`, which Node users already set for such CAs, are added on every OS. With
/// no OS store at all (a bare container), Mozilla's roots (webpki-roots) stand in.
/// The second value is a warning for the log (a `NODE_EXTRA_CA_CERTS` that could not be used),
/// given to the first caller only: one line per process, as Node's own.
pub(crate) fn upstream_verifier() -> Result<Trust, StartError> {
    static VERIFIER: OnceLock<Result<Trust, String>> = OnceLock::new();
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let (verifier, warning) = VERIFIER
        .get_or_init(|| {
            let (extra, warning) = node_extra_ca_certs();
            let verifier: Arc<dyn ServerCertVerifier> =
                match rustls_platform_verifier::Verifier::new_with_extra_roots(extra.clone(), provider()) {
                    Ok(platform) => Arc::new(platform),
                    Err(_) => {
                        let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
                        roots.add_parsable_certificates(extra);
                        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
                            .build()
                            .map_err(|e| format!("cannot set up the trust store for upstream TLS: {e}"))?
                    }
                };
            Ok((verifier, warning))
        })
        .clone()
        .map_err(StartError::Https)?;
    let first = !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed);
    Ok((verifier, warning.filter(|_| first)))
}

/// The certificates of `NODE_EXTRA_CA_CERTS` (a PEM file), and a warning when it names a file
/// that cannot be used (Node warns about it too, and goes on without it; so do we).
fn node_extra_ca_certs() -> (Vec<CertificateDer<'static>>, Option<String>) {
    let Some(path) = std::env::var_os("NODE_EXTRA_CA_CERTS").filter(|p| !p.is_empty()) else {
        return (Vec::new(), None);
    };
    let path = Path::new(&path);
    let warn = |why: String| {
        Some(format!("NODE_EXTRA_CA_CERTS: '{}' {why}; its certificates are not trusted", path.display()))
    };
    match std::fs::read(path) {
        Ok(bytes) => match CertificateDer::pem_slice_iter(&bytes).collect::<Result<Vec<_>, _>>() {
            Ok(certs) if certs.is_empty() => (certs, warn("holds no PEM certificate".into())),
            Ok(certs) => (certs, None),
            Err(e) => (Vec::new(), warn(format!("is not a valid PEM file: {}", pem_error(e)))),
        },
        Err(e) => (Vec::new(), warn(format!("cannot be read: {e}"))),
    }
}

/// Whether `target`'s host is this machine: `localhost` and `*.localhost` (RFC 6761), a loopback IP,
/// or a name that resolves to loopback addresses only (a hosts-file or dnsmasq name such as
/// `mysite.test`). A name that does not resolve within 2 s counts as elsewhere.
pub(crate) async fn is_on_this_machine(target: &Target) -> bool {
    let host = target.host.trim_start_matches('[').trim_end_matches(']');
    if target.is_loopback() || host.parse::<IpAddr>().is_ok() {
        return target.is_loopback();
    }
    let lookup = tokio::net::lookup_host((host, target.port));
    match tokio::time::timeout(std::time::Duration::from_secs(2), lookup).await {
        Ok(Ok(addrs)) => {
            let ips: Vec<IpAddr> = addrs.map(|addr| addr.ip().to_canonical()).collect();
            !ips.is_empty() && ips.iter().all(IpAddr::is_loopback)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::VerifyTls;

    #[tokio::test]
    async fn an_unset_check_is_off_only_for_targets_on_this_machine() {
        let policy = |url: &str| {
            let target = Target::parse(url).unwrap();
            async move { VerifyTls::UnlessLoopback.settle(is_on_this_machine(&target).await) }
        };
        for url in ["https://localhost:8443", "https://app.localhost", "https://127.0.0.5", "https://[::1]:9"] {
            assert_eq!(policy(url).await, VerifyTls::Never, "{url}");
        }
        // Addresses elsewhere are decided without a lookup; a name that does not resolve counts as elsewhere.
        for url in ["https://192.0.2.1", "https://[2001:db8::1]", "https://no-such-host.invalid"] {
            assert_eq!(policy(url).await, VerifyTls::Always, "{url}");
        }
        assert_eq!(VerifyTls::Always.settle(true), VerifyTls::Always, "`secure: true` is kept");
        assert_eq!(VerifyTls::Never.settle(false), VerifyTls::Never, "`secure: false` is kept");
    }

    #[test]
    fn the_self_signed_certificate_names_the_local_hosts() {
        let (chain, _, pem) = self_signed("my-laptop.lan").unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
        let der = chain[0].as_ref();
        // SAN entries are stored as they are: DNS names in ASCII, IP addresses as their bytes.
        let has = |needle: &[u8]| der.windows(needle.len()).any(|w| w == needle);
        assert!(has(b"localhost") && has(b"my-laptop.lan"));
        assert!(has(&[127, 0, 0, 1]) && has(&std::net::Ipv6Addr::LOCALHOST.octets()));
        assert_eq!(certificate_names("0.0.0.0"), ["localhost", "127.0.0.1", "::1"]);
        assert_eq!(certificate_names("[::]"), ["localhost", "127.0.0.1", "::1"]);
        assert_eq!(certificate_names("LOCALHOST"), ["localhost", "127.0.0.1", "::1"]);
        assert_eq!(certificate_names("192.168.1.20"), ["localhost", "127.0.0.1", "::1", "192.168.1.20"]);
    }

    #[test]
    fn bad_files_name_the_option_the_path_and_the_problem() {
        let dir = std::env::temp_dir().join(format!("devproxy-tls-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (_, _, cert_pem) = self_signed("localhost").unwrap();
        let cert = dir.join("cert.pem");
        std::fs::write(&cert, &cert_pem).unwrap();
        let missing = dir.join("missing.pem");
        let err = from_files(&missing, &cert, &[]).unwrap_err().to_string();
        assert!(err.contains("https.key") && err.contains("missing.pem") && err.contains("does not exist"), "{err}");
        let err = from_files(&cert, &cert, &[]).unwrap_err().to_string();
        assert!(err.contains("https.key") && err.contains("swapped"), "{err}");
        let junk = dir.join("junk.pem");
        std::fs::write(&junk, "hello").unwrap();
        let err = from_files(&cert, &junk, &[]).unwrap_err().to_string();
        assert!(err.contains("https.cert") && err.contains("junk.pem") && err.contains("no PEM certificate"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
