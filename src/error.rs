//! Typed errors of the core. The Node binding turns each into a JS `Error` whose message names the culprit.

use std::net::SocketAddr;

/// A JavaScript `RegExp` that the translator rejects: invalid in JavaScript, or a feature the engine cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsRegexError {
    /// A feature a non-backtracking engine cannot run, or that we do not support.
    #[error("unsupported regex feature: {feature} at offset {offset}{hint}")]
    Unsupported {
        /// The construct, as the user would name it (e.g. "lookbehind").
        feature: String,
        /// Offset in the pattern source, so the message points at the culprit.
        offset: usize,
        /// What to write instead, or which limit applies; may be empty.
        hint: String,
    },
    /// A valid JavaScript flag the engine cannot honour (`y`, `v`).
    #[error("unsupported regex flag `{0}`")]
    UnsupportedFlag(char),
    /// Unknown or repeated flag letters.
    #[error("invalid regex flags `{0}`")]
    InvalidFlags(String),
    /// A pattern JavaScript itself would reject with a `SyntaxError`.
    #[error("invalid regex: {message} at offset {offset}")]
    Syntax {
        /// What is wrong, in the words of JavaScript's own error where possible.
        message: String,
        /// Offset in the pattern source.
        offset: usize,
    },
}

/// A rule that cannot be compiled.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// The pattern did not translate.
    #[error(transparent)]
    Regex(#[from] JsRegexError),
    /// The replacement string asks for what a streaming engine does not hold (the text around the match).
    #[error("invalid replacement: {0}")]
    Replacement(String),
    /// The automaton would exceed its size limit, or the engine rejected the translation; the text says which.
    #[error("pattern too complex for a linear-time engine ({0})")]
    TooComplex(String),
    /// Rules whose automata would take more memory than a rule set may ([`crate::rewrite::RULES_MEMORY_BUDGET`]).
    #[error(
        "the {rules} rules' automata take {} MiB, more than the {} MiB a rule set may use (regex rules cost the most; literal rules a few hundred bytes each)",
        used.div_ceil(1 << 20),
        budget >> 20
    )]
    TooMuchMemory {
        /// How many rules.
        rules: usize,
        /// Their heap bytes.
        used: usize,
        /// The budget in bytes.
        budget: usize,
    },
}

/// A replacement that failed while a body was being rewritten (a JS callback threw).
#[derive(Debug, Clone, thiserror::Error)]
#[error("replacement function of rule {rule} failed: {message}")]
pub struct ReplaceError {
    /// The failing rule's label, so the user can tell which rule threw.
    pub rule: String,
    /// What the callback threw, as text.
    pub message: String,
}

/// Options that do not describe a proxy we can run.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// No target URL was given (or it was blank).
    #[error("option `proxy` is required: the target site's URL, e.g. 'https://example.com'")]
    MissingTarget,
    /// The target does not parse as a URL, or has no host.
    #[error("proxy target '{url}' is not a valid URL: {reason}")]
    InvalidTarget {
        /// The target as the user wrote it.
        url: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The target is a URL, but not one we can forward to.
    #[error("proxy target '{url}' has unsupported scheme '{scheme}': use http or https")]
    UnsupportedScheme {
        /// The target as the user wrote it.
        url: String,
        /// The scheme found in it.
        scheme: String,
    },
    /// An option whose value is out of range or of the wrong form.
    #[error("option `{name}` is invalid: {reason}")]
    InvalidOption {
        /// The option's name as the JS caller spells it.
        name: &'static str,
        /// Why the value was rejected.
        reason: String,
    },
    /// One entry of a list option (e.g. `allowedHosts`) is unusable.
    #[error("option `{option}[{index}]` is invalid: {reason}")]
    InvalidEntry {
        /// The list option's name as the JS caller spells it.
        option: &'static str,
        /// The entry's position in the list.
        index: usize,
        /// Why the entry was rejected.
        reason: String,
    },
    /// A `routes` entry is unusable.
    #[error("option `routes['{prefix}']` is invalid: {reason}")]
    Route {
        /// The route's key as the user wrote it.
        prefix: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The rewrite rules together are too big (each compiled on its own).
    #[error("rewriteRules: {0}")]
    Rules(RuleError),
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The options were rejected before any socket was opened.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Something else listens on the requested port and `strictPort` forbids moving on: the common
    /// case gets its own advice.
    #[error(
        "port {port} is already in use on {host} (strictPort): pick another port, 0 for any free one, \
         or drop strictPort to take the next free one"
    )]
    PortInUse {
        /// The host the proxy was to listen on.
        host: String,
        /// The port that is taken.
        port: u16,
    },
    /// Every port from the requested one up to 65535 is taken.
    #[error("port {port} and every port after it are in use on {host}: pick another port, or 0 for any free one")]
    NoFreePort {
        /// The host the proxy was to listen on.
        host: String,
        /// The port asked for, where the search started.
        port: u16,
    },
    /// A file of `https: { key, cert, ca }` cannot be read or does not hold what it should.
    #[error("option `https.{option}`: '{path}' {reason}")]
    HttpsFile {
        /// `key`, `cert` or `ca`.
        option: &'static str,
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The served certificate could not be set up (generation failed, or rustls refused the pair).
    #[error("option `https`: {0}")]
    Https(String),
    /// Any other failure to bind or listen.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address we tried.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// A `replay` cassette that cannot be read or is not a valid cassette (file and line named).
    #[error("replay: {0}")]
    Cassette(#[from] CassetteError),
    /// The listen host is neither `localhost` nor an IP address.
    #[error("cannot listen on host '{host}': {reason}")]
    BadHost {
        /// The host as the user wrote it.
        host: String,
        /// Why it cannot be used.
        reason: String,
    },
}

/// The text of a panic's payload, for the log line and page of the request it cost.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// A cassette that cannot be replayed; the message names the file and, when it is one, the line.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    /// The file cannot be opened or read.
    #[error("cassette '{path}': {reason}")]
    Io {
        /// The path as given.
        path: String,
        /// The OS's reason.
        reason: String,
    },
    /// One line is wrong.
    #[error("cassette '{path}' line {line}: {reason}")]
    Line {
        /// The path as given.
        path: String,
        /// 1-based.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}
