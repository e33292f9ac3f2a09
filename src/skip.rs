//! Rules that never match a URL's body, remembered so that the next response skips them (Prexy's
//! bitmap). For each URL and validator (`ETag`, else `Last-Modified`) a bounded LRU table keeps one
//! bit per user rule, set when the rule ran over the whole body and replaced nothing. The next
//! response for the same URL with the same validator is the same body, so those rules would find
//! nothing again: they are not run. Exactness rests on three things: the validator (a changed body
//! changes it; without one nothing is skipped), the rule set's generation (any `addRule` or
//! `removeRule` makes every entry stale), and rules that replace through no function (a function's
//! output may differ per request and feed different text to the rules after it).

use std::num::NonZeroUsize;
use std::sync::Mutex;

use http::header::{self, HeaderMap};
use http::Method;

/// URLs remembered; each entry is its key (URL and validator) plus 16 bytes.
const ENTRIES: usize = 4096;
/// URLs or validators longer than this are not remembered (memory stays bounded).
const MAX_KEY_BYTES: usize = 2048;
/// Only the first 64 user rules of a request can be skipped: one bit each.
pub(crate) const SKIPPABLE_RULES: usize = 64;

/// Which response a remembered bitmap belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SkipKey {
    url: String,
    validator: String,
}

impl SkipKey {
    /// The key of a `GET` response with a validator; `None` (skip nothing) otherwise.
    pub(crate) fn of(method: &Method, url: &str, headers: &HeaderMap) -> Option<SkipKey> {
        if method != Method::GET {
            return None;
        }
        let validator = [header::ETAG, header::LAST_MODIFIED]
            .iter()
            .find_map(|name| headers.get(name))
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())?;
        (url.len() + validator.len() <= MAX_KEY_BYTES)
            .then(|| SkipKey { url: url.to_string(), validator: validator.to_string() })
    }
}

#[derive(Clone, Copy)]
struct Entry {
    generation: u64,
    /// Bit i: the request's i-th user rule found nothing in this body.
    never: u64,
}

/// The bounded table of a running server.
pub(crate) struct SkipTable {
    entries: Mutex<lru::LruCache<SkipKey, Entry>>,
}

impl Default for SkipTable {
    fn default() -> SkipTable {
        SkipTable::with_capacity(ENTRIES)
    }
}

impl SkipTable {
    pub(crate) fn with_capacity(entries: usize) -> SkipTable {
        let entries = NonZeroUsize::new(entries).unwrap_or(NonZeroUsize::MIN);
        SkipTable { entries: Mutex::new(lru::LruCache::new(entries)) }
    }

    /// The user rules known to find nothing in this body under this rule set (a bitmap).
    pub(crate) fn never_matched(&self, key: &SkipKey, generation: u64) -> u64 {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.get(key).filter(|e| e.generation == generation).map_or(0, |e| e.never)
    }

    /// Remembers what a whole body showed.
    pub(crate) fn remember(&self, key: SkipKey, generation: u64, never: u64) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.put(key, Entry { generation, never });
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs.iter().map(|(n, v)| (n.clone(), v.parse().unwrap())).collect()
    }

    #[test]
    fn only_get_responses_with_a_validator_have_a_key() {
        let etag = headers(&[(header::ETAG, "\"v1\"")]);
        assert!(SkipKey::of(&Method::GET, "/", &etag).is_some());
        assert!(SkipKey::of(&Method::POST, "/", &etag).is_none());
        assert!(SkipKey::of(&Method::GET, "/", &HeaderMap::new()).is_none());
        let modified = headers(&[(header::LAST_MODIFIED, "Mon, 30 Nov 2026 10:00:00 GMT")]);
        assert!(SkipKey::of(&Method::GET, "/", &modified).is_some());
        assert!(SkipKey::of(&Method::GET, &"/x".repeat(MAX_KEY_BYTES), &etag).is_none());
        // ETag wins over Last-Modified; another validator is another key.
        let both = headers(&[(header::ETAG, "\"v1\""), (header::LAST_MODIFIED, "Mon, 30 Nov 2026 10:00:00 GMT")]);
        assert_eq!(SkipKey::of(&Method::GET, "/", &both), SkipKey::of(&Method::GET, "/", &etag));
        let v2 = headers(&[(header::ETAG, "\"v2\"")]);
        assert_ne!(SkipKey::of(&Method::GET, "/", &v2), SkipKey::of(&Method::GET, "/", &etag));
    }

    #[test]
    fn entries_are_bounded_and_tied_to_the_rule_generation() {
        let table = SkipTable::with_capacity(2);
        let key = |url: &str| SkipKey::of(&Method::GET, url, &headers(&[(header::ETAG, "\"e\"")])).unwrap();
        table.remember(key("/a"), 7, 0b101);
        assert_eq!(table.never_matched(&key("/a"), 7), 0b101);
        assert_eq!(table.never_matched(&key("/a"), 8), 0, "a rule added or removed since: nothing skipped");
        table.remember(key("/b"), 7, 1);
        table.remember(key("/c"), 7, 1);
        assert_eq!(table.len(), 2);
        assert_eq!(table.never_matched(&key("/a"), 7), 0, "the least recently used entry went");
    }
}
