//! `serveStatic`: GET and HEAD requests whose path names a file under one of the local directories
//! are answered here, before any target (serve-static's behaviour, as Browsersync mounts it). A path
//! that names nothing falls through to the proxy, like serve-static's `next()`; one that tries to
//! leave its directory gets 404 and goes nowhere. The file's body then meets the same body plan as a
//! proxied one (snippet, rules, compression), read in chunks, never whole.

use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};

use crate::body::{self, Plan, ProxyBody, RequestFacts, Tee, UpstreamBody};
use crate::codec::{self, Encoding};
use crate::config::StaticMount;
use crate::proxy::pages::ProxyError;
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
        let Some(rest) = below(mount, raw_path) else { continue };
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

/// The part of `raw_path` below the mount's route (`/assets` takes `/assets` and `/assets/...`).
fn below<'a>(mount: &StaticMount, raw_path: &'a str) -> Option<&'a str> {
    let rest = raw_path.strip_prefix(mount.route.as_str())?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

/// Opens `path` if it really lies under `root` once symlinks are resolved.
fn open_inside(root: &Path, path: &Path) -> Option<LocalFile> {
    let real = std::fs::canonicalize(path).ok()?;
    // A canonical path under `root` as written is under it (none of its components is a symlink);
    // otherwise the root itself may be reached through one: compare with its canonical form.
    if !real.starts_with(root) && !std::fs::canonicalize(root).is_ok_and(|root| real.starts_with(root)) {
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
    File { head: http::response::Parts, body: UpstreamBody, version: FileVersion },
}

/// One version of one file: what a compressed copy is kept under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FileVersion {
    path: PathBuf,
    len: u64,
    modified: SystemTime,
}

/// Local text files compressed once per version and coding, then served from memory, so that an
/// unchanged stylesheet is not compressed again on every request: at most [`CACHE_BYTES`] in all,
/// least recently used first out; a file whose compressed form exceeds [`CACHE_ENTRY_BYTES`] is
/// streamed and compressed every time.
pub(crate) struct CompressedFiles {
    /// The copies by version and coding token, and their total size.
    cache: Mutex<(lru::LruCache<CopyKey, Bytes>, usize)>,
}

type CopyKey = (FileVersion, &'static str);

const CACHE_BYTES: usize = 32 << 20;
const CACHE_ENTRY_BYTES: usize = 1 << 20;

impl CompressedFiles {
    pub(crate) fn new() -> CompressedFiles {
        CompressedFiles { cache: Mutex::new((lru::LruCache::unbounded(), 0)) }
    }

    /// The cached compressed copy of this file version in `encoding`.
    pub(crate) fn get(&self, version: &FileVersion, encoding: Encoding) -> Option<Bytes> {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache.0.get(&(version.clone(), encoding.token())).cloned()
    }

    /// `body`, whose bytes are kept as this version's copy once it has ended whole.
    pub(crate) fn keep(self: &Arc<Self>, version: FileVersion, encoding: Encoding, body: ProxyBody) -> ProxyBody {
        let files = self.clone();
        let done = Box::new(move |bytes: Bytes| {
            let mut guard = files.cache.lock().unwrap_or_else(PoisonError::into_inner);
            let (cache, total) = &mut *guard;
            *total += bytes.len();
            if let Some(old) = cache.put((version, encoding.token()), bytes) {
                *total -= old.len();
            }
            while *total > CACHE_BYTES {
                let Some((_, evicted)) = cache.pop_lru() else { break };
                *total -= evicted.len();
            }
        });
        ProxyBody::Tee(Box::new(Tee::new(body, CACHE_ENTRY_BYTES, done)))
    }
}

/// The response for a cached compressed copy: the file's headers, `encoding`, its exact length.
pub(crate) fn cached(mut head: http::response::Parts, encoding: Encoding, bytes: Bytes) -> Response<ProxyBody> {
    crate::proxy::headers::for_rewritten_body(&mut head.headers, encoding);
    head.headers.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
    Response::from_parts(head, ProxyBody::full(bytes))
}

/// Looks the request up (on the blocking pool) and answers it; `None`: not ours, on to the proxy.
pub(crate) async fn answer<B>(
    mounts: &Arc<Vec<StaticMount>>,
    req: &Request<B>,
    stats: &Arc<Stats>,
) -> Result<Option<Answer>, ProxyError> {
    // Only a path under some route costs a trip to the blocking pool.
    let path = req.uri().path();
    if !matches!(*req.method(), Method::GET | Method::HEAD) || !mounts.iter().any(|m| below(m, path).is_some()) {
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
        Lookup::File(file) => Some(respond(file, req.method(), req.headers(), stats)),
    })
}

/// The answer for a found file: 304 when the client's copy is current, 206/416 for a `Range`, the
/// headers alone for HEAD, else the whole file.
fn respond(file: LocalFile, method: &Method, request: &HeaderMap, stats: &Arc<Stats>) -> Answer {
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
    let version = FileVersion { path: file.path.clone(), len: file.len, modified: file.modified };
    let mut std_file = file.file;
    if range.start > 0 && std_file.seek(SeekFrom::Start(range.start)).is_err() {
        return Answer::Done(bare(StatusCode::INTERNAL_SERVER_ERROR, HeaderMap::new()));
    }
    let body = UpstreamBody::file(std_file, len, stats.clone(), label);
    let mut response = Response::new(());
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    let (head, ()) = response.into_parts();
    if status == StatusCode::PARTIAL_CONTENT {
        return Answer::Done(Response::from_parts(head, ProxyBody::Passthrough { prefix: None, upstream: body }));
    }
    Answer::File { head, body, version }
}

/// The body plan of a whole local file: the proxy's own choice (pages get the snippet and rules,
/// text types too with `rewriteTextTypes`), and otherwise compressible text is still compressed in
/// the client's coding, as a page fetched uncompressed is.
pub(crate) fn plan(facts: &RequestFacts, head: &http::response::Parts, beyond: body::BeyondPages) -> Plan {
    match body::plan(facts, head.status, &head.headers, beyond) {
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
    let escaped = crate::proxy::pages::escape_html(location);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs.iter().map(|(name, value)| (name.clone(), HeaderValue::from_str(value).unwrap())).collect()
    }

    #[test]
    fn ranges_follow_rfc_9110() {
        let range = |value: &str, len| requested_range(&headers(&[(header::RANGE, value)]), "W/\"t\"", "date", len);
        assert_eq!(range("bytes=0-9", 100), Ok(Some(0..10)));
        assert_eq!(range("bytes=90-", 100), Ok(Some(90..100)));
        assert_eq!(range("bytes=95-200", 100), Ok(Some(95..100)));
        assert_eq!(range("bytes=-10", 100), Ok(Some(90..100)));
        assert_eq!(range("bytes=-500", 100), Ok(Some(0..100)));
        assert_eq!(range("bytes=100-", 100), Err(()));
        assert_eq!(range("bytes=0-0", 0), Err(()));
        assert_eq!(range("bytes=0-1,5-6", 100), Ok(None));
        assert_eq!(range("items=0-1", 100), Ok(None));
        let stale = headers(&[(header::RANGE, "bytes=0-1"), (header::IF_RANGE, "\"other\"")]);
        assert_eq!(requested_range(&stale, "W/\"t\"", "date", 100), Ok(None));
    }

    #[test]
    fn validators_compare_weakly_and_by_whole_seconds() {
        let modified = UNIX_EPOCH + Duration::from_millis(1_700_000_000_500);
        let tag = |value: &str| not_modified(&headers(&[(header::IF_NONE_MATCH, value)]), "W/\"a-b\"", modified);
        assert!(tag("W/\"a-b\"") && tag("\"a-b\"") && tag("\"x\", W/\"a-b\"") && tag("*"));
        assert!(!tag("\"a-c\""));
        let since = |t: SystemTime| {
            not_modified(&headers(&[(header::IF_MODIFIED_SINCE, &httpdate::fmt_http_date(t))]), "W/\"a-b\"", modified)
        };
        assert!(since(modified) && since(modified + Duration::from_secs(5)));
        assert!(!since(modified - Duration::from_secs(1)));
    }
}
