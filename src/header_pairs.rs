//! Headers as text: how records, cassettes and replacement functions show them.

use http::HeaderMap;

/// Headers as (lower-case name, value) pairs in order, values decoded lossily.
pub(crate) fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| (name.as_str().to_string(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
        .collect()
}
