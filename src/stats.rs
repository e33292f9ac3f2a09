//! Counters of what the proxy did, and its log lines.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub(crate) struct Stats {
    requests: AtomicU64,
    rewritten: AtomicU64,
    passed_through: AtomicU64,
    upstream_errors: AtomicU64,
    abandoned_matches: AtomicU64,
    websockets: AtomicU64,
    /// `None`: silent.
    log: Option<LogSettings>,
    /// `logPrefix`, kept for what is written even when silent (warnings about the options).
    prefix: String,
}

#[derive(Debug)]
struct LogSettings {
    debug: bool,
    prefix: String,
}

/// Which log lines the proxy writes on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// None.
    Silent,
    /// Warnings about the options and failures (the default).
    Info,
    /// Also one line per request: method, URL, status and what was done with the body.
    Debug,
}

impl LogLevel {
    /// The option's JS value (`'silent'`, `'info'`, `'debug'`; Browsersync's `'warn'` is `Info`).
    pub fn parse(value: &str) -> Option<LogLevel> {
        match value {
            "silent" => Some(LogLevel::Silent),
            "info" | "warn" => Some(LogLevel::Info),
            "debug" => Some(LogLevel::Debug),
            _ => None,
        }
    }
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Requests received (WebSocket upgrades included).
    pub requests: u64,
    /// Responses whose body went through the rewrite pipeline.
    pub rewritten: u64,
    /// Responses whose body was passed on untouched.
    pub passed_through: u64,
    /// Upstream failures: no connection, no response headers in time, or a body cut off.
    pub upstream_errors: u64,
    /// Match candidates left unreplaced because they grew past `maxMatchBytes`.
    pub abandoned_matches: u64,
    /// WebSocket tunnels opened.
    pub websockets: u64,
}

impl Stats {
    pub(crate) fn new(level: LogLevel, prefix: &str) -> Stats {
        let log =
            (level != LogLevel::Silent).then(|| LogSettings { debug: level == LogLevel::Debug, prefix: prefix.into() });
        Stats { log, prefix: prefix.into(), ..Stats::default() }
    }

    /// A warning about the options given (an unknown key, one that is ignored): written whatever the
    /// log level, since a config the proxy does not follow is not chatter.
    pub(crate) fn log_config(&self, message: &str) {
        use std::io::Write;
        let message = crate::observe::mask::mask_text(message);
        let _ = writeln!(std::io::stderr().lock(), "[{}] {message}", self.prefix);
    }

    pub(crate) fn add_request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn add_rewritten(&self) {
        self.rewritten.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn add_passed_through(&self) {
        self.passed_through.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn add_upstream_error(&self) {
        self.upstream_errors.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn add_abandoned(&self, count: u64) {
        self.abandoned_matches.fetch_add(count, Ordering::Relaxed);
    }
    pub(crate) fn add_websocket(&self) {
        self.websockets.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            requests: self.requests.load(Ordering::Relaxed),
            rewritten: self.rewritten.load(Ordering::Relaxed),
            passed_through: self.passed_through.load(Ordering::Relaxed),
            upstream_errors: self.upstream_errors.load(Ordering::Relaxed),
            abandoned_matches: self.abandoned_matches.load(Ordering::Relaxed),
            websockets: self.websockets.load(Ordering::Relaxed),
        }
    }

    /// One line on stderr, `[prefix] message`, unless the server is silent (`logLevel: 'silent'`,
    /// `quiet`). Every log line of the proxy goes through here. A failed write is ignored: `eprintln!`
    /// would panic on a closed stderr, and a log line is not worth a request.
    /// Secrets in the line (query parameters, key-shaped strings) are masked as everywhere else
    /// (observe/mask.rs).
    pub(crate) fn log_error(&self, message: &str) {
        if let Some(log) = &self.log {
            use std::io::Write;
            let message = crate::observe::mask::mask_text(message);
            let _ = writeln!(std::io::stderr().lock(), "[{}] {message}", log.prefix);
        }
    }

    /// Whether any line is written (not `logLevel: 'silent'`).
    pub(crate) fn logs(&self) -> bool {
        self.log.is_some()
    }

    /// A line as it is, without the prefix (the request log's JSON lines), unless silent.
    pub(crate) fn log_raw(&self, line: &str) {
        if self.log.is_some() {
            use std::io::Write;
            let line = crate::observe::mask::mask_text(line);
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
    }

    /// Whether `logLevel` is `'debug'` (callers skip formatting debug lines otherwise).
    pub(crate) fn debug_enabled(&self) -> bool {
        self.log.as_ref().is_some_and(|log| log.debug)
    }

    /// A line written only at `logLevel: 'debug'`.
    pub(crate) fn log_debug(&self, message: impl FnOnce() -> String) {
        if self.debug_enabled() {
            self.log_error(&message());
        }
    }
}
