//! Types that exist only for binding.d.ts: napi writes each `#[napi(object)]` struct here as a
//! TypeScript interface, with its docs, for `start()`'s options, the rules, `record`, `replay` and
//! the JS side of `start()`. Nothing converts JS values to them: the parsers (`options`, `rules`,
//! `local`, `record`, `replay`, `hooks`) read objects key by key through `args::Fields` (or serde),
//! so that an error names the bad key. Some field types stand in for a TypeScript type (`ts_type`)
//! that Rust has no word for, such as a function or a union.

// napi only declares these; no Rust code builds or reads one.
#![allow(dead_code)]

use std::collections::HashMap;

use napi_derive::napi;

use super::hooks::MiddlewareHostOptions;

/// Options of `start()`; names follow Browsersync's.
#[napi(object)]
pub struct ProxyOptions {
    /// The site to proxy: its URL (`http`/`https`; no scheme means `http://`; only scheme, host and
    /// port are used, a path is the start path), or `{ target, ... }` with the target's settings.
    #[napi(ts_type = "string | ProxyTargetOptions")]
    pub proxy: String,
    /// Port to listen on (default 3000). When it is in use, the next free port is taken and logged,
    /// as Browsersync does (see `strictPort`); 0 picks any free port.
    pub port: Option<u32>,
    /// Address to listen on (default `127.0.0.1`). `0.0.0.0` exposes the proxy, and through it the
    /// target, to the whole network.
    pub host: Option<String>,
    /// User rules, applied in order after the snippet and before the link rewrite.
    pub rewrite_rules: Option<Vec<RewriteRule>>,
    /// HTML placed right after the first `<body ...>` tag of rewritten pages (see `snippetOptions`).
    /// `false`: no snippet; `true` (Browsersync's default): nothing to inject.
    #[napi(ts_type = "string | boolean")]
    pub snippet: Option<String>,
    /// Also rewrite CSS, JS, JSON, SVG and XML responses (Browsersync only rewrites HTML).
    pub rewrite_text_types: Option<bool>,
    /// JSON responses (`application/json`, `+json`) get the target's exact origin, written plainly
    /// (`http://wp.test`), slash-escaped (`http:\/\/wp.test`) or percent-encoded, turned into the
    /// proxy's, and nothing else (default true; Browsersync leaves JSON alone). `.well-known`
    /// documents, wherever they live (an OpenID issuer's path), are left as they are.
    pub rewrite_json: Option<bool>,
    /// The proxy's own origins (every form the link rewrite writes: `http://localhost:3000`,
    /// `//localhost:3000`, `http:\/\/localhost:3000`, `http%3A%2F%2Flocalhost%3A3000`) go back to the
    /// target's, scheme included, in query strings and in form, JSON, text and multipart form fields the
    /// browser sends (default true), so that saving a page does not write the proxy's URLs into the
    /// site. A body with nothing to rewrite goes byte for byte; files are never rewritten.
    pub rewrite_request_bodies: Option<bool>,
    /// Longest text one pending match may hold back (default 65536).
    pub max_match_bytes: Option<u32>,
    /// Longest wait for upstream response headers, and between body chunks, in ms; 0 (the default):
    /// no limit, as Browsersync.
    pub upstream_timeout_ms: Option<u32>,
    /// How long `stop()` lets in-flight responses finish (default 5000).
    pub grace_period_ms: Option<u32>,
    /// No log lines on stderr (default false); the same as `logLevel: 'silent'`.
    pub quiet: Option<bool>,
    /// Whether pages are fetched compressed from the target: `'auto'` (default) fetches them
    /// uncompressed from a loopback target and compressed from any other, `'always'`, `'never'`.
    /// The client gets a compressed page either way.
    #[napi(ts_type = "'auto' | 'always' | 'never'")]
    pub upstream_compression: Option<String>,
    /// Client connections served at once (default 1024); further ones wait until one closes.
    pub max_connections: Option<u32>,
    /// Host names the proxy answers to; any other `Host` gets 403 (DNS rebinding). `'auto'`
    /// (default): `localhost`, `*.localhost`, IP addresses, `host` and the machine's host name. An
    /// array adds names to these; `'.example.com'` allows example.com and its subdomains. `'all'`
    /// switches the check off: unsafe, any web page can then read the proxied site.
    #[napi(ts_type = "'auto' | 'all' | string[]")]
    pub allowed_hosts: Option<String>,
    /// Origins, besides the proxy's and the target's, whose pages may open WebSockets through the
    /// proxy, e.g. `['http://localhost:5173']`; others get 403 (cross-site WebSocket hijacking).
    pub allowed_origins: Option<Vec<String>>,
    /// Where the snippet goes and which URLs are rewritten (Browsersync's `snippetOptions`).
    pub snippet_options: Option<SnippetOptions>,
    /// `'info'` (default: warnings and failures), `'debug'` (also a line per request) or `'silent'`.
    #[napi(ts_type = "'silent' | 'info' | 'debug' | 'warn'")]
    pub log_level: Option<String>,
    /// What log lines start with, in brackets (default `devproxy`).
    pub log_prefix: Option<String>,
    /// The path to open first, exposed as `server.startPath` (default: the `proxy` URL's path).
    pub start_path: Option<String>,
    /// Browsersync's top-level form of `proxy.ws`.
    pub ws: Option<bool>,
    /// Serve HTTPS (HTTP/2 and HTTP/1.1 by ALPN). `true`: a self-signed certificate for localhost,
    /// 127.0.0.1, ::1 and `host`, generated at start (`server.certificate` gives its PEM);
    /// `{ key, cert }`: PEM files. Default: HTTPS when the target is `https:` (as Browsersync);
    /// `false` keeps plain HTTP.
    #[napi(ts_type = "boolean | HttpsOptions")]
    pub https: Option<bool>,
    /// Fail with `EADDRINUSE` when `port` is taken, instead of taking the next free port
    /// (Browsersync's behaviour, the default).
    pub strict_port: Option<bool>,
    /// Browsersync's name for the listen address; overrides `host`.
    pub listen: Option<String>,
    /// Local directories whose files are answered before the proxy, as in Browsersync:
    /// `['public', { route: '/assets', dir: 'static' }]` (`route` and `dir` a string or an array;
    /// relative dirs from the working directory). GET and HEAD only; a path that names no file goes
    /// on to the target. Pages among the files get the snippet and rules like proxied ones.
    #[napi(ts_type = "Array<string | StaticDir>")]
    pub serve_static: Option<Vec<String>>,
    /// serve-static's options for the string entries of `serveStatic` (Browsersync's
    /// `serveStaticOptions`): `index` and `extensions`; any other key is refused unless it asks for
    /// what the proxy does anyway (`dotfiles: 'ignore'`, `etag`, `lastModified`, `acceptRanges`,
    /// `redirect`, `fallthrough`: `true`).
    pub serve_static_options: Option<StaticOptions>,
    /// Path prefixes sent to other targets, as Vite's `server.proxy`: `{ '/api': 'http://127.0.0.1:4000' }`.
    /// `/api` takes `/api` and `/api/...` (not `/apix`), HTTP and WebSocket, path unchanged; the
    /// longest prefix wins; everything else goes to `proxy`. Links to every target are rewritten.
    #[napi(ts_type = "Record<string, string | RouteOptions>")]
    pub routes: Option<HashMap<String, String>>,
    /// A `Server-Timing` header on every answer (default true): `upstream;dur=` (ms to the target's
    /// response headers) and `proxy;dur=` (the proxy's own time before the headers). DevTools shows it
    /// in the Timing tab. Times known only at the body's end go to the request log and `onRequest`.
    pub server_timing: Option<bool>,
    /// One log line per request at `logLevel: 'info'` (default false; `'debug'` always logs them):
    /// method, path, status, coding in->out, bytes in->out, total and upstream time, rewritten or passed.
    pub log_requests: Option<bool>,
    /// Form of the request lines: `'text'` (default) or `'json'` (the exchange record, one JSON object
    /// per line, without the prefix).
    #[napi(ts_type = "'text' | 'json'")]
    pub log_format: Option<String>,
    /// The live inspector, a page at the proxy's own origin under `/__devproxy/` that shows the last
    /// exchanges (headers with secrets masked, timings, rules matched) as they happen. Default on;
    /// `false` turns it off (nothing is kept, and `/__devproxy/` goes to the target like any path);
    /// `{ path: '/__x/', size: 500 }` moves it or keeps another number of exchanges.
    #[napi(ts_type = "boolean | InspectorOptions")]
    pub inspector: Option<bool>,
    /// Answer requests from a cassette instead of the target (see `ReplayOptions`); switch at run
    /// time with `server.replay()` / `server.passthrough()`.
    #[napi(ts_type = "ReplayOptions")]
    pub replay: Option<HashMap<String, String>>,
    /// Record upstream exchanges (streams with their timing) to a cassette: `{ path, match?, redact? }`.
    /// Secret headers and query parameters are redacted; an exchange whose body holds a key-shaped
    /// string is not written (the log names where), unless `redact.allow` lists it.
    pub record: Option<RecordOptions>,
}

/// Where the proxy forwards to: a URL string, or an object with more settings.
#[napi(object)]
pub struct ProxyTargetOptions {
    /// The upstream site, e.g. `https://example.com`. Only scheme, host and port are used.
    pub target: String,
    /// Tunnel WebSocket upgrades (default true).
    pub ws: Option<bool>,
    /// Headers set on every upstream request.
    pub req_headers: Option<HashMap<String, String>>,
    /// `{ stripDomain: true }` (default) removes `Domain=` from `Set-Cookie`.
    pub cookies: Option<CookieOptions>,
    /// `true`: verify the upstream's TLS certificate against the OS's trust store (where mkcert,
    /// Valet/Herd and Local install their CA) and the certificates of `NODE_EXTRA_CA_CERTS`; `false`:
    /// accept any certificate, as Browsersync always does. Unset: verified unless the target is on
    /// this machine (`localhost`, a loopback IP, a name resolving only to loopback addresses).
    pub secure: Option<bool>,
    /// Browsersync's http-proxy options: `xfwd`, `secure` and `changeOrigin` are honoured; any other
    /// key is ignored with a warning naming it.
    pub proxy_options: Option<HttpProxyOptions>,
}

/// The http-proxy options Browsersync passes through (`proxy.proxyOptions`) that mean something here.
#[napi(object)]
pub struct HttpProxyOptions {
    /// Add `X-Forwarded-For`, `-Port`, `-Proto` (appended to the client's) and `-Host` (default false).
    pub xfwd: Option<bool>,
    /// Verify the upstream's TLS certificate; `proxy.secure` wins when both are given.
    pub secure: Option<bool>,
    /// Send the target's `Host` (default true); `false` sends the client's `Host`.
    pub change_origin: Option<bool>,
}

#[napi(object)]
pub struct CookieOptions {
    pub strip_domain: Option<bool>,
}

/// `inspector: { path, size }`.
#[napi(object)]
pub struct InspectorOptions {
    /// The reserved path prefix it is served under (default `'/__devproxy/'`; a final `/` is added).
    pub path: Option<String>,
    /// How many exchanges it keeps, the oldest dropped first (default 500, at most 10000).
    pub size: Option<u32>,
    /// Also answer clients on other machines (default false: loopback clients only, even with
    /// `host: '0.0.0.0'`). It shows URLs, masked headers and the first KiB of bodies to anyone who
    /// can reach the port.
    pub remote: Option<bool>,
}

/// `https: { key, cert }`: the certificate the proxy serves, as PEM files.
#[napi(object)]
pub struct HttpsOptions {
    /// Path of the private key (PEM: PKCS#8, PKCS#1 or SEC1; not encrypted).
    pub key: String,
    /// Path of the certificate (PEM), leaf first, intermediates after it.
    pub cert: String,
    /// More certificates (paths) sent after `cert`: intermediates.
    #[napi(ts_type = "string | string[]")]
    pub ca: Option<Vec<String>>,
    /// Not supported (PKCS#12): rejected with the `openssl` commands that convert it to `key`/`cert`.
    pub pfx: Option<String>,
    /// Not supported (encrypted keys): rejected with the `openssl` command that decrypts the key.
    pub passphrase: Option<String>,
}

/// A `serveStatic` entry with a route: `{ route: '/assets', dir: 'static' }`.
#[napi(object)]
pub struct StaticDir {
    /// URL path the directory answers under (default: every path); an array mounts it at each.
    #[napi(ts_type = "string | string[]")]
    pub route: Option<String>,
    /// The directory, or several (tried in order); relative to the working directory.
    #[napi(ts_type = "string | string[]")]
    pub dir: String,
    /// serve-static's options for this entry (Browsersync does not apply `serveStaticOptions` here).
    pub options: Option<StaticOptions>,
}

/// serve-static's options, those the proxy implements.
#[napi(object)]
pub struct StaticOptions {
    /// File(s) served for a directory (default `'index.html'`); `false`: none.
    #[napi(ts_type = "string | string[] | false")]
    pub index: Option<String>,
    /// Extensions tried when a path names no file: `['html']` serves `about.html` for `/about`.
    #[napi(ts_type = "string[] | false")]
    pub extensions: Option<Vec<String>>,
}

/// A `routes` target with settings, like `proxy`'s object form.
#[napi(object)]
pub struct RouteOptions {
    /// The target's URL; only scheme, host and port are used.
    pub target: String,
    /// Tunnel WebSocket upgrades under this prefix (default true).
    pub ws: Option<bool>,
    /// Headers set on every request to this target.
    pub req_headers: Option<HashMap<String, String>>,
    /// Verify this target's TLS certificate (unset: verified unless the target is on this machine).
    pub secure: Option<bool>,
    /// Answer this prefix's requests from a cassette (see `ReplayOptions`) while the rest is proxied.
    #[napi(ts_type = "ReplayOptions")]
    pub replay: Option<HashMap<String, String>>,
    /// Record this prefix's exchanges to a cassette of their own (see `RecordOptions`).
    pub record: Option<RecordOptions>,
}

/// A rewrite rule, as in Browsersync's `rewriteRules`.
#[napi(object)]
pub struct RewriteRule {
    /// A RegExp (JS syntax and flags; no lookaround, backreferences or `y`) or a literal string
    /// (replaces its first occurrence, like `String.prototype.replace`).
    #[napi(ts_type = "RegExp | string")]
    pub r#match: String,
    /// A replacement string (`$&`, `$1`..`$99`, `$<name>`, `$$`) or a function called for each match
    /// as Browsersync calls it: `(req, res, match, p1, ..., pn, offset, string, groups)`. `req` and `res`
    /// are the request and response of the body (`RuleRequest`, `RuleResponse`; for `rewrite()`, those
    /// it is given or its defaults); then JS's replace arguments: `offset` is the match's UTF-16 index in
    /// the rule's input; `string` is that input for `rewrite()` of a string and `undefined` on streamed
    /// bodies (the proxy, `rewrite()` of chunks), which are never held whole; `groups` (only when the
    /// pattern has named groups) maps each name to its text or `undefined`. Function rules run in JS
    /// and are slower.
    #[napi(ts_type = "string | ((req: RuleRequest, res: RuleResponse, match: string, ...args: any[]) => string)")]
    pub replace: Option<String>,
    /// Browsersync's name for a function `replace` (or a replacement string); give one of the two.
    #[napi(
        js_name = "fn",
        ts_type = "string | ((req: RuleRequest, res: RuleResponse, match: string, ...args: any[]) => string)"
    )]
    pub func: Option<String>,
    /// Globs (minimatch syntax, matched against the request URL: path and query) limiting the rule to
    /// those URLs; there it runs on any response type, and the rules without `paths`, the snippet and
    /// the link rewrite do not (Browsersync's behaviour).
    #[napi(ts_type = "string | string[]")]
    pub paths: Option<Vec<String>>,
    /// Browsersync's rule id (`bs.removeRewriteRule(id)` through the adapter); the proxy ignores it.
    #[napi(ts_type = "string | number")]
    pub id: Option<String>,
}

/// Where and how the snippet goes, and which URLs are rewritten (Browsersync's `snippetOptions`).
#[napi(object)]
pub struct SnippetOptions {
    /// `{ match, fn }`: a RegExp where the snippet goes (default `/<body[^>]*>/i`) and
    /// `fn(snippet, match)` returning the text that replaces the match (default `match + snippet`).
    pub rule: Option<SnippetRule>,
    /// Globs of URLs rewritten whatever their `Accept` header, extension or body.
    #[napi(ts_type = "string | string[]")]
    pub whitelist: Option<Vec<String>>,
    /// Globs of URLs never rewritten (the URL `/` only when listed exactly).
    #[napi(ts_type = "string | string[]")]
    pub blacklist: Option<Vec<String>>,
    /// Like `blacklist`; a leading `/` is added when missing, as Browsersync does.
    #[napi(ts_type = "string | string[]")]
    pub ignore_paths: Option<Vec<String>>,
    /// Browsersync's client-script loading flag: accepted and ignored.
    pub r#async: Option<bool>,
}

/// Where the snippet goes (`snippetOptions.rule`): Browsersync's `{ match, fn }`.
#[napi(object)]
pub struct SnippetRule {
    /// Where the snippet goes: the first match in the page (default `/<body[^>]*>/i`).
    #[napi(ts_type = "RegExp")]
    pub r#match: Option<String>,
    /// The text that replaces the match (default `match + snippet`); called once per page, in JS.
    #[napi(js_name = "fn", ts_type = "(snippet: string, match: string) => string")]
    pub func: Option<String>,
}

/// `record`: upstream exchanges appended to a cassette (JSON Lines; see docs/record-and-replay.md).
#[napi(object)]
pub struct RecordOptions {
    /// The cassette file (created, or emptied when it exists); its directory must exist.
    pub path: String,
    /// Path globs (as a rule's `paths`): only requests whose path matches one are recorded.
    #[napi(js_name = "match", ts_type = "string | string[]")]
    pub matches: Option<Vec<String>>,
    /// What to redact besides the default secret headers and query parameters.
    pub redact: Option<RedactOptions>,
}

/// `record.redact`.
#[napi(object)]
pub struct RedactOptions {
    /// More header names whose values are written as `[redacted]`.
    pub headers: Option<Vec<String>>,
    /// JSON paths in request bodies and SSE events whose values are written as `[redacted]`:
    /// `'$.user'`, `'metadata.email'`, `'messages[*].content'`.
    pub json: Option<Vec<String>>,
    /// Fields (as a refusal names them, e.g. `'messages[0].content'`) or strings (at least 8
    /// characters) that the key scan lets through.
    pub allow: Option<Vec<String>>,
}

/// Answer requests from a cassette (JSON Lines, see docs/record-and-replay.md) instead of the target: each
/// response at its recorded offsets, its chunks as recorded.
#[napi(object)]
pub struct ReplayOptions {
    /// The cassette file (relative to the working directory).
    pub path: String,
    /// 1 (default): recorded timing; 4: four times faster; 0: as fast as possible.
    pub speed: Option<f64>,
    /// A request no recording matches: `'error'` (default) answers 404 with a JSON body naming the
    /// nearest recording and the fields that differ; `'proxy'` forwards it to the target; `'record'`
    /// forwards and records it (update mode).
    #[napi(ts_type = "'error' | 'proxy' | 'record'")]
    pub on_miss: Option<String>,
    /// What matching leaves out (method, path, query and body are compared).
    #[napi(js_name = "match")]
    pub matching: Option<ReplayMatch>,
    /// Faults to inject, for testing a UI's error handling.
    pub faults: Option<Vec<ReplayFault>>,
    /// With `onMiss: 'record'` (only): what the recorded misses have redacted, as `record.redact`.
    pub redact: Option<RedactOptions>,
}

/// `replay.match`.
#[napi(object)]
pub struct ReplayMatch {
    /// Query parameters left out of the match, by name.
    pub ignore_query: Option<Vec<String>>,
    /// JSON body fields left out of the match: `'user'`, or nested ones as `'metadata.trace_id'`.
    pub ignore_fields: Option<Vec<String>>,
}

/// One `replay.faults` entry: `{ stallMs, beforeChunk }`, `{ cutAfterChunk }` or `{ status, body? }`.
#[napi(object)]
pub struct ReplayFault {
    /// URL glob (path and query) the fault applies to; default every replayed request.
    #[napi(js_name = "match")]
    pub matches: Option<String>,
    /// Wait this many ms more (at any speed) before chunk `beforeChunk`; later chunks move as much.
    pub stall_ms: Option<u32>,
    /// The chunk (0-based, default 0) a stall comes before.
    pub before_chunk: Option<u32>,
    /// Reset the connection after this chunk (0-based), as an upstream dying mid-stream.
    pub cut_after_chunk: Option<u32>,
    /// Answer this error status instead, with `body` or one shaped like the API's own error
    /// (OpenAI's; Anthropic's for `/v1/messages` and 529).
    #[napi(ts_type = "429 | 500 | 503 | 529 | number")]
    pub status: Option<u32>,
    /// The error answer's body (JSON text).
    pub body: Option<String>,
}

/// What lib/start.js prepared for the native server. Internal: built by `start()` of index.js from
/// `proxy.proxyReq`, `proxy.proxyReqWs`, `proxy.proxyRes` and `middleware`.
#[napi(object)]
pub struct JsSide {
    #[napi(ts_type = "(call: HookRequestCall) => Promise<{ value?: HookRequestHead; error?: string }>")]
    pub proxy_req: Option<String>,
    #[napi(ts_type = "(call: HookRequestCall) => Promise<{ value?: HookRequestHead; error?: string }>")]
    pub proxy_req_ws: Option<String>,
    #[napi(ts_type = "(call: HookResponseCall) => Promise<{ value?: HookResponseHead; error?: string }>")]
    pub proxy_res: Option<String>,
    pub middleware: Option<MiddlewareHostOptions>,
    /// `onRequest`'s dispatcher: called with a JSON array of exchange records (see on_request.rs).
    #[napi(ts_type = "(batch: string) => Promise<{ value?: unknown; error?: string }>")]
    pub on_request: Option<String>,
}

/// The `req` a rule function gets: Browsersync's (Node's `IncomingMessage`), reduced to what a rule reads.
/// Unlike Node's: no stream, no socket; `rawHeaders` has lower-case names.
#[napi(object)]
pub struct RuleRequest {
    /// The request target as the client sent it (`/path?query`).
    pub url: String,
    pub method: String,
    /// Lower-case names; repeated headers folded as Node folds them (`set-cookie` an array, `cookie`
    /// joined with `; `, others with `, `, single-valued ones keep the first).
    #[napi(ts_type = "Record<string, string | string[]>")]
    pub headers: String,
    pub raw_headers: Vec<String>,
}

/// The `res` a rule function gets: Browsersync's (Node's `ServerResponse`), reduced to what a rule reads:
/// the status and the headers as they go to the client. Unlike Node's: read-only (no `setHeader`, no
/// `write`), and `Content-Length`, `Content-Encoding` and `Vary` are those of the rewritten body.
#[napi(object)]
pub struct RuleResponse {
    pub status_code: u32,
    #[napi(ts_type = "(name: string) => string | string[] | undefined")]
    pub get_header: String,
    #[napi(ts_type = "() => Record<string, string | string[]>")]
    pub get_headers: String,
    #[napi(ts_type = "() => string[]")]
    pub get_header_names: String,
    #[napi(ts_type = "(name: string) => boolean")]
    pub has_header: String,
}
