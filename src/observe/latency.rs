//! `stats()`'s latency percentiles (HDR histograms of upstream and total time) and per-rule match
//! counters across requests. One short lock per finished request, none per chunk.

use std::collections::HashMap;
// Lock poisoning policy: recover; a histogram or counter a panicking thread left is still valid.
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use hdrhistogram::Histogram;

use super::RuleMatches;

/// Largest time recorded, in microseconds (an hour); longer ones count as this.
const HIGHEST_US: u64 = 3_600_000_000;
/// Significant figures kept: 1% precision, a few KiB per histogram.
const SIGNIFICANT_FIGURES: u8 = 2;
/// Most distinct rules counted (rules come and go with `addRule`); later ones are left out.
const MAX_COUNTED_RULES: usize = 1024;

pub(super) struct Latency {
    times: Mutex<Times>,
    rules: Mutex<HashMap<String, u64>>,
}

struct Times {
    upstream: Histogram<u64>,
    total: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Latency {
        let histogram =
            || Histogram::new_with_bounds(1, HIGHEST_US, SIGNIFICANT_FIGURES).expect("the histogram bounds are valid");
        Latency {
            times: Mutex::new(Times { upstream: histogram(), total: histogram() }),
            rules: Mutex::new(HashMap::new()),
        }
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX).clamp(1, HIGHEST_US)
}

impl Latency {
    pub(super) fn record(&self, upstream: Option<Duration>, total: Duration, rules: &[RuleMatches]) {
        {
            let mut times = self.times.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(upstream) = upstream {
                times.upstream.saturating_record(micros(upstream));
            }
            times.total.saturating_record(micros(total));
        }
        if rules.is_empty() {
            return;
        }
        let mut counts = self.rules.lock().unwrap_or_else(PoisonError::into_inner);
        for rule in rules {
            if let Some(count) = counts.get_mut(&rule.rule) {
                *count += rule.matches;
            } else if counts.len() < MAX_COUNTED_RULES {
                counts.insert(rule.rule.clone(), rule.matches);
            }
        }
    }

    pub(super) fn snapshot(&self) -> ObserveSnapshot {
        let (upstream, total) = {
            let times = self.times.lock().unwrap_or_else(PoisonError::into_inner);
            (LatencySnapshot::of(&times.upstream), LatencySnapshot::of(&times.total))
        };
        let mut rules: Vec<RuleCount> = self
            .rules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(rule, &matches)| RuleCount { rule: rule.clone(), matches })
            .collect();
        rules.sort_by(|a, b| b.matches.cmp(&a.matches).then_with(|| a.rule.cmp(&b.rule)));
        ObserveSnapshot { upstream, total, rules, dropped_records: 0 }
    }
}

/// Percentiles of one kind of time, in milliseconds (0 before the first sample).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LatencySnapshot {
    /// Samples recorded.
    pub count: u64,
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
}

impl LatencySnapshot {
    fn of(histogram: &Histogram<u64>) -> LatencySnapshot {
        let at = |q: f64| histogram.value_at_quantile(q) as f64 / 1000.0;
        LatencySnapshot { count: histogram.len(), p50_ms: at(0.5), p99_ms: at(0.99) }
    }
}

/// How often one rule matched, over every request so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleCount {
    /// The rule's label (its pattern, `snippet`, `link rewrite`).
    pub rule: String,
    /// Matches replaced, over all bodies.
    pub matches: u64,
}

/// What `stats()` adds to the counters: latency percentiles and per-rule matches (most first).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObserveSnapshot {
    /// Time to the upstream's response headers (answers without an upstream exchange are left out).
    pub upstream: LatencySnapshot,
    /// Time from arrival to the body's end.
    pub total: LatencySnapshot,
    /// Rules that matched at least once (at most 1024 distinct ones).
    pub rules: Vec<RuleCount>,
    /// Records a consumer (`onRequest`) fell too far behind to take, dropped.
    pub dropped_records: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_rule_counts() {
        let latency = Latency::default();
        let rule = |name: &str, matches| RuleMatches { rule: name.into(), matches };
        for ms in 1..=100u64 {
            let rules = if ms % 2 == 0 { vec![rule("/a/g", 2), rule("snippet", 1)] } else { Vec::new() };
            latency.record(Some(Duration::from_millis(ms)), Duration::from_millis(ms * 2), &rules);
        }
        latency.record(None, Duration::from_millis(1), &[]);
        let snap = latency.snapshot();
        assert_eq!(snap.upstream.count, 100);
        assert_eq!(snap.total.count, 101);
        // 2 significant figures: within 1%.
        assert!((snap.upstream.p50_ms - 50.0).abs() <= 0.5, "{snap:?}");
        assert!((snap.upstream.p99_ms - 99.0).abs() <= 1.0, "{snap:?}");
        assert!((snap.total.p99_ms - 198.0).abs() <= 2.0, "{snap:?}");
        assert_eq!(
            snap.rules,
            vec![RuleCount { rule: "/a/g".into(), matches: 100 }, RuleCount { rule: "snippet".into(), matches: 50 }]
        );
    }

    #[test]
    fn rule_table_is_bounded() {
        let latency = Latency::default();
        for i in 0..MAX_COUNTED_RULES + 10 {
            latency.record(None, Duration::from_millis(1), &[RuleMatches { rule: format!("/r{i}/"), matches: 1 }]);
        }
        assert_eq!(latency.snapshot().rules.len(), MAX_COUNTED_RULES);
    }
}
