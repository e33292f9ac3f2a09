//! The keys of each `start()` options object, as JS spells them. The `#[napi(object)]` structs of
//! `declarations` declare them for binding.d.ts (types and docs); the parsers read an object only
//! through these lists (`args::Fields`), and tests/option_names.rs checks each list against the
//! matching interface of binding.d.ts, so a key cannot be declared in one place and missing from the
//! other. Plain data, no napi: that test includes this file, so it runs in every build, `cargo test
//! --no-default-features` (`npm test`) included.

pub(super) const PROXY: &[&str] = &[
    "proxy",
    "port",
    "host",
    "rewriteRules",
    "snippet",
    "rewriteTextTypes",
    "rewriteJson",
    "rewriteRequestBodies",
    "maxMatchBytes",
    "upstreamTimeoutMs",
    "gracePeriodMs",
    "quiet",
    "upstreamCompression",
    "maxConnections",
    "allowedHosts",
    "allowedOrigins",
    "snippetOptions",
    "logLevel",
    "logPrefix",
    "startPath",
    "ws",
    "https",
    "strictPort",
    "listen",
    "serveStatic",
    "serveStaticOptions",
    "routes",
    "inspector",
    "serverTiming",
    "logRequests",
    "logFormat",
    "replay",
    "record",
];
pub(super) const PROXY_TARGET: &[&str] = &["target", "ws", "reqHeaders", "cookies", "secure", "proxyOptions"];
pub(super) const PROXY_OPTIONS: &[&str] = &["xfwd", "secure", "changeOrigin"];
pub(super) const COOKIE: &[&str] = &["stripDomain"];
pub(super) const RULE: &[&str] = &["match", "replace", "fn", "paths", "id"];
pub(super) const SNIPPET_OPTIONS: &[&str] = &["rule", "whitelist", "blacklist", "ignorePaths", "async"];
pub(super) const SNIPPET_RULE: &[&str] = &["match", "fn"];
pub(super) const HTTPS: &[&str] = &["key", "cert", "ca", "pfx", "passphrase"];
pub(super) const STATIC_DIR: &[&str] = &["route", "dir", "options"];
pub(super) const STATIC_OPTIONS: &[&str] = &["index", "extensions"];
pub(super) const ROUTE: &[&str] = &["target", "ws", "reqHeaders", "secure", "replay", "record"];
pub(super) const RECORD: &[&str] = &["path", "match", "redact"];
pub(super) const REDACT: &[&str] = &["headers", "json", "allow"];
pub(super) const INSPECTOR: &[&str] = &["path", "size", "remote"];
