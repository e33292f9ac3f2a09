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

    #[test]
    fn an_if_range_that_still_holds_keeps_the_range_and_an_empty_file_has_none() {
        let if_range = |condition: &str| {
            let request = headers(&[(header::RANGE, "bytes=0-1"), (header::IF_RANGE, condition)]);
            requested_range(&request, "W/\"t\"", "date", 100)
        };
        assert_eq!(if_range("\"t\""), Ok(Some(0..2)));
        assert_eq!(if_range("date"), Ok(Some(0..2)));
        let suffix = headers(&[(header::RANGE, "bytes=-5")]);
        assert_eq!(requested_range(&suffix, "W/\"t\"", "date", 0), Err(()));
    }

    /// A fresh directory under the system's temporary one (removed when dropped): `a.txt`,
    /// `index.html`, `sub/index.html`, `about.html` and a dotfile, `.env`.
    struct Site(PathBuf);

    impl Site {
        fn new(name: &str) -> Site {
            let dir = std::env::temp_dir().join(format!("devproxy-local-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("sub")).unwrap();
            for (file, text) in [
                ("a.txt", "0123456789"),
                ("index.html", "<p>home</p>"),
                ("sub/index.html", "<p>sub</p>"),
                ("about.html", "<p>about</p>"),
                (".env", "SECRET=1"),
                ("logo.png", "png"),
            ] {
                std::fs::write(dir.join(file), text).unwrap();
            }
            Site(dir)
        }

        fn mount(&self, route: &str) -> StaticMount {
            StaticMount::new(route, self.0.to_str().unwrap()).unwrap()
        }
    }

    impl Drop for Site {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A lookup in a word: `miss`, `refused`, `redirect <location>` or `file <its text>`.
    fn found(lookup: Lookup) -> String {
        match lookup {
            Lookup::Miss => "miss".into(),
            Lookup::Refused => "refused".into(),
            Lookup::Redirect(location) => format!("redirect {location}"),
            Lookup::File(file) => format!("file {}", std::io::read_to_string(file.file).unwrap()),
        }
    }

    #[test]
    fn paths_find_files_indexes_and_extensions_under_their_route_only() {
        let site = Site::new("resolve");
        let mut mount = site.mount("/static");
        mount.extensions = vec!["html".into()];
        let mounts = [mount];
        let at = |path: &str| found(resolve(&mounts, path, None));
        assert_eq!(at("/static/a.txt"), "file 0123456789");
        assert_eq!(at("/static/./a.txt"), "file 0123456789");
        assert_eq!(at("/static//sub/index.html"), "file <p>sub</p>");
        assert_eq!(at("/static/%61.txt"), "file 0123456789");
        assert_eq!(at("/static/"), "file <p>home</p>");
        assert_eq!(at("/static"), "file <p>home</p>");
        assert_eq!(at("/static/sub/"), "file <p>sub</p>");
        assert_eq!(at("/static/sub"), "redirect /static/sub/");
        assert_eq!(found(resolve(&mounts, "/static/sub", Some("v=1"))), "redirect /static/sub/?v=1");
        // A file named as a directory is not that file; `extensions` are tried for a file only.
        assert_eq!(at("/static/a.txt/"), "miss");
        assert_eq!(at("/static/about"), "file <p>about</p>");
        assert_eq!(at("/static/about/"), "miss");
        assert_eq!(at("/static/nothing"), "miss");
        // Dotfiles are as if absent; other routes, and names that only start like the route, are not ours.
        assert_eq!(at("/static/.env"), "miss");
        assert_eq!(at("/staticx/a.txt"), "miss");
        assert_eq!(at("/a.txt"), "miss");
        // Leaving the directory, however spelled, is refused rather than passed on.
        assert_eq!(at("/static/../a.txt"), "refused");
        assert_eq!(at("/static/sub%2f..%2fa.txt"), "refused");
        assert_eq!(at("/static/sub%5c..%5ca.txt"), "refused");
        assert_eq!(at("/static/a.txt%00"), "refused");
        // The first mount with the file answers; leading slashes never make a redirect elsewhere.
        let root = [site.mount("")];
        assert_eq!(found(resolve(&root, "/", None)), "file <p>home</p>");
        assert_eq!(found(resolve(&root, "//sub", None)), "redirect /sub/");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_out_of_the_directory_is_refused_and_a_symlinked_directory_serves() {
        let site = Site::new("links");
        let outside = Site::new("links-outside");
        std::os::unix::fs::symlink(outside.0.join(".env"), site.0.join("escape.txt")).unwrap();
        std::os::unix::fs::symlink(site.0.join("sub"), site.0.join("inner")).unwrap();
        let mounts = [site.mount("")];
        assert_eq!(found(resolve(&mounts, "/escape.txt", None)), "refused");
        assert_eq!(found(resolve(&mounts, "/inner/index.html", None)), "file <p>sub</p>");
        // The mounted directory itself reached through a symlink.
        let link = outside.0.join("site");
        std::os::unix::fs::symlink(&site.0, &link).unwrap();
        let through = [StaticMount::new("", link.to_str().unwrap()).unwrap()];
        assert_eq!(found(resolve(&through, "/a.txt", None)), "file 0123456789");
        assert_eq!(found(resolve(&through, "/escape.txt", None)), "refused");
    }

    #[test]
    fn content_types_come_from_the_extension_with_a_utf8_charset_for_text_scripts_and_json() {
        let of = |name: &str| content_type(Path::new(name)).to_str().unwrap().to_string();
        assert_eq!(of("a.txt"), "text/plain; charset=UTF-8");
        assert_eq!(of("a.js"), "text/javascript; charset=UTF-8");
        assert_eq!(of("a.mjs"), "application/javascript; charset=UTF-8");
        assert_eq!(of("a.json"), "application/json; charset=UTF-8");
        assert_eq!(of("a.png"), "image/png");
        assert_eq!(of("a.svg"), "image/svg+xml");
        assert_eq!(of("a"), "application/octet-stream");
    }

    #[test]
    fn the_etag_is_weak_and_made_of_size_and_modification_millis() {
        let site = Site::new("etag");
        let file = LocalFile {
            file: std::fs::File::open(site.0.join("a.txt")).unwrap(),
            path: site.0.join("a.txt"),
            len: 255,
            modified: UNIX_EPOCH + Duration::from_millis(4096),
        };
        assert_eq!(etag(&file), "W/\"ff-1000\"");
    }

    #[test]
    fn a_local_text_file_is_compressed_for_a_client_that_accepts_it_and_nothing_else_is() {
        let facts =
            |path_and_query: &'static str, accept: &'static str, accept_encoding: Option<&'static str>| RequestFacts {
                method: &Method::GET,
                path_and_query,
                accept: Some(accept),
                accept_encoding,
                upstream_identity: false,
                mode: body::PageMode::Pages,
            };
        let head = |content_type: &str| {
            let mut head = Response::new(()).into_parts().0;
            head.headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(content_type).unwrap());
            head
        };
        let pages = body::BeyondPages { text_types: false, json_origins: false };
        let css = facts("/app.css", "*/*", Some("gzip"));
        assert_eq!(plan(&css, &head("text/css"), pages), Plan::Compress { encode: Encoding::Gzip });
        assert_eq!(plan(&facts("/app.css", "*/*", None), &head("text/css"), pages), Plan::Passthrough);
        assert_eq!(plan(&facts("/logo.png", "*/*", Some("gzip")), &head("image/png"), pages), Plan::Passthrough);
        let page = facts("/", "text/html", Some("gzip"));
        assert!(matches!(plan(&page, &head("text/html"), pages), Plan::Rewrite { .. }));
    }

    async fn text(body: ProxyBody) -> String {
        use http_body_util::BodyExt;
        String::from_utf8(body.collect().await.unwrap().to_bytes().to_vec()).unwrap()
    }

    fn version(name: &str) -> FileVersion {
        FileVersion { path: PathBuf::from(name), len: 1, modified: UNIX_EPOCH }
    }

    /// Sends `bytes` through [`CompressedFiles::keep`] to its end, as a response would.
    async fn keep(files: &Arc<CompressedFiles>, name: &str, bytes: Bytes) {
        let sent = text(files.keep(version(name), Encoding::Gzip, ProxyBody::full(bytes.clone()))).await;
        assert_eq!(sent.len(), bytes.len());
    }

    #[tokio::test]
    async fn a_compressed_copy_is_kept_whole_for_its_version_and_coding_only() {
        let files = Arc::new(CompressedFiles::new());
        let body = files.keep(version("a"), Encoding::Gzip, ProxyBody::full("zipped"));
        assert_eq!(files.get(&version("a"), Encoding::Gzip), None, "not before the body has ended");
        assert_eq!(text(body).await, "zipped");
        assert_eq!(files.get(&version("a"), Encoding::Gzip), Some(Bytes::from("zipped")));
        assert_eq!(files.get(&version("a"), Encoding::Brotli), None);
        assert_eq!(files.get(&version("b"), Encoding::Gzip), None);
        keep(&files, "largest", Bytes::from(vec![b'x'; CACHE_ENTRY_BYTES])).await;
        assert!(files.get(&version("largest"), Encoding::Gzip).is_some());
        keep(&files, "too large", Bytes::from(vec![b'x'; CACHE_ENTRY_BYTES + 1])).await;
        assert_eq!(files.get(&version("too large"), Encoding::Gzip), None);
    }

    #[tokio::test]
    async fn the_copies_take_at_most_32_mib_and_the_least_recently_used_goes_first() {
        let files = Arc::new(CompressedFiles::new());
        let mib = Bytes::from(vec![b'x'; CACHE_ENTRY_BYTES]);
        let there = |name: &str| files.get(&version(name), Encoding::Gzip).is_some();
        // A copy kept again replaces the old one and counts once.
        keep(&files, "a", mib.clone()).await;
        keep(&files, "a", mib.clone()).await;
        for n in 1..=31 {
            keep(&files, &format!("b{n}"), mib.clone()).await;
        }
        // Exactly 32 MiB: nothing goes. `a` is now the most recently used.
        assert!(there("a") && there("b1"));
        keep(&files, "c", Bytes::from_static(b"c")).await;
        assert!(!there("b2"), "one byte over: the least recently used goes");
        assert!(there("a") && there("b1") && there("b3") && there("c"));
        keep(&files, "d", mib.clone()).await;
        assert!(!there("b4"), "over again: the next least recently used goes, and only it");
        assert!(there("b5") && there("d"));
    }

    #[tokio::test]
    async fn a_cached_copy_goes_out_in_its_coding_with_its_exact_length() {
        let mut head = Response::new(()).into_parts().0;
        head.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/css"));
        head.headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("1000"));
        head.headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        let response = cached(head, Encoding::Gzip, Bytes::from("zipped"));
        let (head, body) = response.into_parts();
        assert_eq!(head.headers[header::CONTENT_ENCODING], "gzip");
        assert_eq!(head.headers[header::CONTENT_LENGTH], "6");
        assert_eq!(head.headers[header::VARY], "Accept-Encoding");
        assert!(!head.headers.contains_key(header::ACCEPT_RANGES));
        assert_eq!(text(body).await, "zipped");
    }

    /// What the client gets for a request to `mounts`: status, headers, body, and whether the body
    /// still goes through the body plan (`Answer::File`); `None`, on to the proxy.
    async fn ask(
        mounts: &Arc<Vec<StaticMount>>,
        method: Method,
        uri: &str,
        pairs: &[(header::HeaderName, &str)],
    ) -> Option<(StatusCode, HeaderMap, String, bool)> {
        let mut req = Request::builder().method(method).uri(uri).body(()).unwrap();
        *req.headers_mut() = headers(pairs);
        let stats = Arc::new(Stats::new(crate::config::LogLevel::Silent, "test"));
        Some(match answer(mounts, &req, &stats).await.unwrap()? {
            Answer::Done(response) => {
                let (head, body) = response.into_parts();
                (head.status, head.headers, text(body).await, false)
            }
            Answer::File { head, body, .. } => {
                let body = text(ProxyBody::Passthrough { prefix: None, upstream: body }).await;
                (head.status, head.headers, body, true)
            }
        })
    }

    #[tokio::test]
    async fn gets_and_heads_of_local_files_are_answered_and_everything_else_goes_on() {
        let site = Site::new("answer");
        let mounts = Arc::new(vec![site.mount("/static")]);
        let (status, headers, body, planned) = ask(&mounts, Method::GET, "/static/a.txt", &[]).await.unwrap();
        assert_eq!((status, body.as_str(), planned), (StatusCode::OK, "0123456789", true));
        assert_eq!(headers[header::CONTENT_LENGTH], "10");
        assert_eq!(headers[header::CONTENT_TYPE], "text/plain; charset=UTF-8");
        assert_eq!(headers[header::ACCEPT_RANGES], "bytes");
        assert_eq!(headers[header::VARY], "Accept-Encoding");
        let etag = headers[header::ETAG].to_str().unwrap().to_string();
        assert!(etag.starts_with("W/\"a-"), "{etag}");
        // HEAD: the same headers, no body.
        let (status, head_headers, body, planned) = ask(&mounts, Method::HEAD, "/static/a.txt", &[]).await.unwrap();
        assert_eq!((status, body.as_str(), planned), (StatusCode::OK, "", false));
        assert_eq!(head_headers[header::CONTENT_LENGTH], "10");
        assert_eq!(head_headers[header::ETAG], etag.as_str());
        // Not compressible: no `Vary`.
        let (_, png, _, _) = ask(&mounts, Method::GET, "/static/logo.png", &[]).await.unwrap();
        assert!(!png.contains_key(header::VARY));
        // Other methods, other paths and missing files are the proxy's.
        assert!(ask(&mounts, Method::POST, "/static/a.txt", &[]).await.is_none());
        assert!(ask(&mounts, Method::GET, "/a.txt", &[]).await.is_none());
        assert!(ask(&mounts, Method::GET, "/static/nothing", &[]).await.is_none());
        // Leaving the directory: 404 here, never forwarded.
        let (status, _, body, _) = ask(&mounts, Method::GET, "/static/../a.txt", &[]).await.unwrap();
        assert_eq!((status, body.as_str()), (StatusCode::NOT_FOUND, ""));
        let (status, headers, body, _) = ask(&mounts, Method::GET, "/static/sub?v=1", &[]).await.unwrap();
        assert_eq!(status, StatusCode::MOVED_PERMANENTLY);
        assert_eq!(headers[header::LOCATION], "/static/sub/?v=1");
        assert!(body.contains("Redirecting to /static/sub/?v=1"), "{body}");
    }

    #[tokio::test]
    async fn ranges_and_validators_of_local_files_get_206_416_and_304() {
        let site = Site::new("ranges");
        let mounts = Arc::new(vec![site.mount("")]);
        let (status, headers, body, planned) =
            ask(&mounts, Method::GET, "/a.txt", &[(header::RANGE, "bytes=2-4")]).await.unwrap();
        assert_eq!((status, body.as_str(), planned), (StatusCode::PARTIAL_CONTENT, "234", false));
        assert_eq!(headers[header::CONTENT_LENGTH], "3");
        assert_eq!(headers[header::CONTENT_RANGE], "bytes 2-4/10");
        let (status, _, body, _) = ask(&mounts, Method::GET, "/a.txt", &[(header::RANGE, "bytes=0-1")]).await.unwrap();
        assert_eq!((status, body.as_str()), (StatusCode::PARTIAL_CONTENT, "01"));
        let (status, headers, body, _) =
            ask(&mounts, Method::GET, "/a.txt", &[(header::RANGE, "bytes=20-")]).await.unwrap();
        assert_eq!((status, body.as_str()), (StatusCode::RANGE_NOT_SATISFIABLE, ""));
        assert_eq!(headers[header::CONTENT_RANGE], "bytes */10");
        let (_, headers, _, _) = ask(&mounts, Method::GET, "/a.txt", &[]).await.unwrap();
        let etag = headers[header::ETAG].to_str().unwrap().to_string();
        let (status, headers, body, _) =
            ask(&mounts, Method::GET, "/a.txt", &[(header::IF_NONE_MATCH, &etag)]).await.unwrap();
        assert_eq!((status, body.as_str()), (StatusCode::NOT_MODIFIED, ""));
        assert_eq!(headers[header::ETAG], etag.as_str());
    }
}
