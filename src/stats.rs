//! Counters of what the proxy did, and its log lines.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Stats {
    requests: AtomicU64,
    rewritten: AtomicU64,
    passed_through: AtomicU64,
    upstream_errors: AtomicU64,
    abandoned_matches: AtomicU64,
    websockets: AtomicU64,
    quiet: bool,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub requests: u64,
    pub rewritten: u64,
    pub passed_through: u64,
    pub upstream_errors: u64,
    pub abandoned_matches: u64,
    pub websockets: u64,
}

impl Stats {
    pub fn new(quiet: bool) -> Stats {
        Stats { quiet, ..Stats::default() }
    }

    pub fn add_request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }
    pub fn add_rewritten(&self) {
        self.rewritten.fetch_add(1, Ordering::Relaxed);
    }
    pub fn add_passed_through(&self) {
        self.passed_through.fetch_add(1, Ordering::Relaxed);
    }
    pub fn add_upstream_error(&self) {
        self.upstream_errors.fetch_add(1, Ordering::Relaxed);
    }
    pub fn add_abandoned(&self, count: u64) {
        self.abandoned_matches.fetch_add(count, Ordering::Relaxed);
    }
    pub fn add_websocket(&self) {
        self.websockets.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            requests: self.requests.load(Ordering::Relaxed),
            rewritten: self.rewritten.load(Ordering::Relaxed),
            passed_through: self.passed_through.load(Ordering::Relaxed),
            upstream_errors: self.upstream_errors.load(Ordering::Relaxed),
            abandoned_matches: self.abandoned_matches.load(Ordering::Relaxed),
            websockets: self.websockets.load(Ordering::Relaxed),
        }
    }

    /// One line on stderr, unless the server was started with `quiet`. Every log line of the proxy goes
    /// through here. A failed write is ignored: `eprintln!` would panic on a closed stderr, and a log line
    /// is not worth a request.
    pub fn log_error(&self, message: &str) {
        if !self.quiet {
            use std::io::Write;
            let _ = writeln!(std::io::stderr().lock(), "[devproxy] {message}");
        }
    }
}
