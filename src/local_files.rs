//! `serveStatic`: GET and HEAD requests whose path names a file under one of the local directories
//! are answered here, before any target (serve-static's behaviour, as Browsersync mounts it). A path
//! that names nothing falls through to the proxy, like serve-static's `next()`; one that tries to
//! leave its directory gets 404 and goes nowhere. The file's body then meets the same body plan as a
//! proxied one (snippet, rules, compression), read in chunks, never whole.

use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};

use crate::body::{self, Plan, ProxyBody, RequestFacts, UpstreamBody};
use crate::codec::{self, Encoding};
use crate::config::StaticMount;
use crate::pages::ProxyError;
use crate::stats::Stats;

/// What a request path is under the `serveStatic` directories.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// No file: the request goes on to the proxy.
    Miss,
    /// An existing file, opened.
    File(LocalFile),
    /// A directory named without its trailing `/`: serve-static's 301 to `location`.
    Redirect(String),
    /// A path that would leave its directory (`..`, NUL, a symlink out of it): 404, never forwarded.
    Refused,
}

/// An open file and what its headers need.
#[derive(Debug)]
pub(crate) struct LocalFile {
    pub file: std::fs::File,
    pub path: PathBuf,
    pub len: u64,
    pub modified: SystemTime,
}

/// Maps a request's raw (percent-encoded) path to a file under the first directory that has one,
/// as serve-static does: the path is decoded once (`%2e%2e` is `..`, `%2f` is `/`), dotfiles are
/// as if absent, a directory gets its index file (or, without its trailing `/`, a redirect), and
/// `extensions` are tried for a path that names nothing. A `..` segment, a NUL or a symlink that
/// resolves outside the directory refuses the request. Blocking: call it off the runtime's workers.
pub(crate) fn resolve(mounts: &[StaticMount], raw_path: &str, query: Option<&str>) -> Lookup {
    for mount in mounts {
        let Some(rest) = raw_path.strip_prefix(mount.route.as_str()) else { continue };
        if !(rest.is_empty() || rest.starts_with('/')) {
            continue;
        }
        let Ok(decoded) = percent_encoding::percent_decode_str(rest).decode_utf8() else { continue };
        let segments: Vec<&str> = decoded.split(['/', '\\']).filter(|s| !s.is_empty() && *s != ".").collect();
        if decoded.contains('\0') || segments.contains(&"..") {
            return Lookup::Refused;
        }
        // serve-static's `dotfiles: 'ignore'`: `.env`, `.git/config` are as if they did not exist.
        if segments.iter().any(|s| s.starts_with('.')) {
            continue;
        }
        let candidate = segments.iter().fold(mount.dir.clone(), |path, segment| path.join(segment));
        let wants_directory = decoded.ends_with('/') || decoded.is_empty();
        let found = match std::fs::metadata(&candidate) {
            Ok(meta) if meta.is_dir() && !wants_directory => {
                // Leading slashes collapsed: `//evil.example` must not become a redirect elsewhere.
                let location = format!("/{}/", raw_path.trim_start_matches('/'));
                return Lookup::Redirect(query.map_or(location.clone(), |q| format!("{location}?{q}")));
            }
            Ok(meta) if meta.is_dir() => mount.index.iter().map(|name| candidate.join(name)).find(|p| p.is_file()),
            Ok(meta) if meta.is_file() && !wants_directory => Some(candidate),
            Ok(_) => None,
            Err(_) if wants_directory => None,
            Err(_) => mount
                .extensions
                .iter()
                .map(|ext| candidate.with_file_name(format!("{}.{ext}", segments.last().unwrap_or(&""))))
                .find(|p| p.is_file()),
        };
        let Some(found) = found else { continue };
        return match open_inside(&mount.dir, &found) {
            Some(file) => Lookup::File(file),
            None => Lookup::Refused,
        };
    }
    Lookup::Miss
}

/// Opens `path` if it really lies under `root` once symlinks are resolved.
fn open_inside(root: &Path, path: &Path) -> Option<LocalFile> {
    let (root, real) = (std::fs::canonicalize(root).ok()?, std::fs::canonicalize(path).ok()?);
    if !real.starts_with(&root) {
        return None;
    }
    let file = std::fs::File::open(&real).ok()?;
    let meta = file.metadata().ok()?;
    meta.is_file().then(|| LocalFile {
        file,
        len: meta.len(),
        modified: meta.modified().unwrap_or(UNIX_EPOCH),
        path: real,
    })
}

/// How a request that found something under `serveStatic` is answered.
pub(crate) enum Answer {
    /// A finished response: redirect, 304, 404, 416, a HEAD, or a byte range (never rewritten).
    Done(Response<ProxyBody>),
    /// The whole file as a 200, to go through the body plan like a proxied response.
    File { head: http::response::Parts, body: UpstreamBody },
}

/// Looks the request up (on the blocking pool) and answers it; `None`: not ours, on to the proxy.
pub(crate) async fn answer<B>(
    mounts: &Arc<Vec<StaticMount>>,
    req: &Request<B>,
    idle: Duration,
    stats: &Arc<Stats>,
) -> Result<Option<Answer>, ProxyError> {
    if mounts.is_empty() || !matches!(*req.method(), Method::GET | Method::HEAD) {
        return Ok(None);
    }
    let (mounts, path, query) = (mounts.clone(), req.uri().path().to_string(), req.uri().query().map(str::to_string));
    let lookup = tokio::task::spawn_blocking(move || resolve(&mounts, &path, query.as_deref()))
        .await
        .map_err(|e| ProxyError::Internal { path: req.uri().path().to_string(), reason: e.to_string() })?;
    Ok(match lookup {
        Lookup::Miss => None,
        Lookup::Refused => Some(Answer::Done(bare(StatusCode::NOT_FOUND, HeaderMap::new()))),
        Lookup::Redirect(location) => Some(Answer::Done(redirect(&location))),
        Lookup::File(file) => Some(respond(file, req.method(), req.headers(), idle, stats)),
    })
}

/// The answer for a found file: 304 when the client's copy is current, 206/416 for a `Range`, the
/// headers alone for HEAD, else the whole file.
fn respond(file: LocalFile, method: &Method, request: &HeaderMap, idle: Duration, stats: &Arc<Stats>) -> Answer {
    let mut headers = HeaderMap::new();
    let content_type = content_type(&file.path);
    headers.insert(header::CONTENT_TYPE, content_type);
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=0"));
    let modified = httpdate::fmt_http_date(file.modified);
    headers.insert(header::LAST_MODIFIED, HeaderValue::from_str(&modified).expect("an HTTP date is a header value"));
    let etag = etag(&file);
    headers.insert(header::ETAG, HeaderValue::from_str(&etag).expect("hex digits make a header value"));
    if body::is_compressible(&headers) {
        headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    if not_modified(request, &etag, file.modified) {
        return Answer::Done(bare(StatusCode::NOT_MODIFIED, headers));
    }
    let mut range = 0..file.len;
    let mut status = StatusCode::OK;
    match requested_range(request, &etag, &modified, file.len) {
        Ok(None) => {}
        Ok(Some(wanted)) => {
            let content_range = format!("bytes {}-{}/{}", wanted.start, wanted.end - 1, file.len);
            headers.insert(header::CONTENT_RANGE, HeaderValue::from_str(&content_range).expect("digits"));
            (range, status) = (wanted, StatusCode::PARTIAL_CONTENT);
        }
        Err(()) => {
            let content_range = format!("bytes */{}", file.len);
            headers.insert(header::CONTENT_RANGE, HeaderValue::from_str(&content_range).expect("digits"));
            return Answer::Done(bare(StatusCode::RANGE_NOT_SATISFIABLE, headers));
        }
    }
    let len = range.end - range.start;
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    if method == Method::HEAD {
        return Answer::Done(bare(status, headers));
    }
    let label = file.path.display().to_string();
    let mut std_file = file.file;
    if range.start > 0 && std_file.seek(SeekFrom::Start(range.start)).is_err() {
        return Answer::Done(bare(StatusCode::INTERNAL_SERVER_ERROR, HeaderMap::new()));
    }
    let body = UpstreamBody::file(std_file, len, idle, stats.clone(), label);
    let mut response = Response::new(());
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    let (head, ()) = response.into_parts();
    if status == StatusCode::PARTIAL_CONTENT {
        return Answer::Done(Response::from_parts(head, ProxyBody::Passthrough { prefix: None, upstream: body }));
    }
    Answer::File { head, body }
}

/// The body plan of a whole local file: the proxy's own choice (pages get the snippet and rules,
/// text types too with `rewriteTextTypes`), and otherwise compressible text is still compressed in
/// the client's coding, as a page fetched uncompressed is.
pub(crate) fn plan(facts: &RequestFacts, head: &http::response::Parts, rewrite_text_types: bool) -> Plan {
    match body::plan(facts, head.status, &head.headers, rewrite_text_types) {
        Plan::Passthrough if body::is_compressible(&head.headers) => {
            match codec::choose_output(Encoding::Identity, &codec::accepted(facts.accept_encoding), true) {
                Encoding::Identity => Plan::Passthrough,
                encode => Plan::Compress { encode },
            }
        }
        plan => plan,
    }
}

/// serve-static's `Content-Type`: from the extension (the mime_guess table), with a UTF-8 charset for
/// text, JavaScript and JSON.
fn content_type(path: &Path) -> HeaderValue {
    let mime = mime_guess::from_path(path).first_or_octet_stream();
    let essence = mime.essence_str();
    let text =
        mime.type_() == mime_guess::mime::TEXT || essence == "application/javascript" || essence == "application/json";
    let value = if text && mime.get_param(mime_guess::mime::CHARSET).is_none() {
        format!("{essence}; charset=UTF-8")
    } else {
        mime.to_string()
    };
    HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("application/octet-stream"))
}

/// A weak validator from size and modification time, like serve-static's: the body may go out
/// rewritten or compressed, so it is never byte-for-byte.
fn etag(file: &LocalFile) -> String {
    let millis = file.modified.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    format!("W/\"{:x}-{millis:x}\"", file.len)
}

/// `If-None-Match` (weak comparison), else `If-Modified-Since` (whole seconds, as HTTP dates go).
fn not_modified(request: &HeaderMap, etag: &str, modified: SystemTime) -> bool {
    if let Some(tags) = request.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) {
        let ours = etag.trim_start_matches("W/");
        return tags.split(',').map(str::trim).any(|tag| tag == "*" || tag.trim_start_matches("W/") == ours);
    }
    let since = request.get(header::IF_MODIFIED_SINCE).and_then(|v| v.to_str().ok());
    let Some(since) = since.and_then(|v| httpdate::parse_http_date(v).ok()) else { return false };
    let seconds = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    seconds(modified) <= seconds(since)
}

/// The byte range asked for: `Ok(None)` for the whole file (no `Range`, several ranges, a `Range`
/// that does not parse, or an `If-Range` that no longer holds), `Err` when it cannot be satisfied.
fn requested_range(
    request: &HeaderMap,
    etag: &str,
    modified: &str,
    len: u64,
) -> Result<Option<std::ops::Range<u64>>, ()> {
    let Some(value) = request.get(header::RANGE).and_then(|v| v.to_str().ok()) else { return Ok(None) };
    if let Some(condition) = request.get(header::IF_RANGE).and_then(|v| v.to_str().ok()) {
        if condition != etag.trim_start_matches("W/") && condition != modified {
            return Ok(None);
        }
    }
    let Ok(parsed) = http_range_header::parse_range_header(value) else { return Ok(None) };
    if parsed.ranges.len() != 1 {
        return Ok(None);
    }
    match parsed.validate(len) {
        Ok(ranges) if len > 0 => Ok(ranges.first().map(|r| *r.start()..*r.end() + 1)),
        // A suffix longer than the file is the whole file (RFC 9110 §14.1.2).
        Err(http_range_header::RangeUnsatisfiableError::FileSuffixOutOfBounds) if len > 0 => Ok(Some(0..len)),
        _ => Err(()),
    }
}

/// A response without a body (a HEAD keeps the `Content-Length` its GET would have).
fn bare(status: StatusCode, headers: HeaderMap) -> Response<ProxyBody> {
    let mut response = Response::new(ProxyBody::Full(None));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// serve-static's redirect of a directory to its trailing-slash form.
fn redirect(location: &str) -> Response<ProxyBody> {
    let escaped = location.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>Redirecting</title>\n<pre>Redirecting to {escaped}</pre>\n"
    );
    let mut response = Response::new(ProxyBody::full(html));
    *response.status_mut() = StatusCode::MOVED_PERMANENTLY;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=UTF-8"));
    if let Ok(value) = HeaderValue::from_str(location) {
        headers.insert(header::LOCATION, value);
    }
    response
}
