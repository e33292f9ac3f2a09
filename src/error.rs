//! Typed errors of the core. The Node binding turns each into a JS `Error` whose message names the culprit.

use std::net::SocketAddr;

/// A JavaScript `RegExp` that the translator rejects: invalid in JavaScript, or a feature the engine cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsRegexError {
    /// A feature a non-backtracking engine cannot run, or that we do not support.
    #[error("unsupported regex feature: {feature} at offset {offset}{hint}")]
    Unsupported { feature: String, offset: usize, hint: String },
    #[error("unsupported regex flag `{0}`")]
    UnsupportedFlag(char),
    /// Unknown or repeated flag letters.
    #[error("invalid regex flags `{0}`")]
    InvalidFlags(String),
    #[error("invalid regex: {message} at offset {offset}")]
    Syntax { message: String, offset: usize },
}

/// A rule that cannot be compiled.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error(transparent)]
    Regex(#[from] JsRegexError),
    #[error("invalid replacement: {0}")]
    Replacement(String),
    #[error("pattern too complex for a linear-time engine ({0})")]
    TooComplex(String),
    #[error("too many rules: at most {0} are allowed")]
    TooMany(usize),
}

/// A replacement that failed while a body was being rewritten (a JS callback threw).
#[derive(Debug, Clone, thiserror::Error)]
#[error("replacement function of rule {rule} failed: {message}")]
pub struct ReplaceError {
    pub rule: String,
    pub message: String,
}

/// Options that do not describe a proxy we can run.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("option `proxy` is required: the target site's URL, e.g. 'https://example.com'")]
    MissingTarget,
    #[error("proxy target '{url}' is not a valid URL: {reason}")]
    InvalidTarget { url: String, reason: String },
    #[error("proxy target '{url}' has unsupported scheme '{scheme}': use http or https")]
    UnsupportedScheme { url: String, scheme: String },
    #[error("option `{name}` is invalid: {reason}")]
    InvalidOption { name: &'static str, reason: String },
    #[error("option `{option}[{index}]` is invalid: {reason}")]
    InvalidEntry { option: &'static str, index: usize, reason: String },
    #[error("rewriteRules[{index}] ({label}): {source}")]
    Rule { index: usize, label: String, source: RuleError },
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("port {port} is already in use on {host}: pick another port, or 0 for any free one")]
    PortInUse { host: String, port: u16 },
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("cannot listen on host '{host}': {reason}")]
    BadHost { host: String, reason: String },
}

/// The text of a panic's payload, for the log line and page of the request it cost.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
