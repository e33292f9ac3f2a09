//! URL globs as Browsersync's resp-modifier applies them (a rule's `paths`, `snippetOptions`'
//! `whitelist`/`blacklist`/`ignorePaths`): a request URL (path and query, as the client sent it)
//! matches when it equals a pattern or matches it as a minimatch glob. Compiled once, with globset.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::error::ConfigError;

/// A compiled list of URL patterns.
#[derive(Debug, Clone)]
pub struct UrlGlobs {
    /// The patterns as given: resp-modifier first compares the URL with each one as a string.
    exact: Vec<String>,
    set: GlobSet,
}

impl UrlGlobs {
    /// Compiles `patterns`; an invalid one is named by `option` and its index.
    ///
    /// minimatch's defaults, as far as globset has them: `*` and `?` stop at `/`, `**` as a whole
    /// segment crosses them, `{a,b}`, `[a-z]`, `[!a]`, backslash escapes. Differences (documented in
    /// docs/rewrite-rules.md): `*` also matches a segment that starts with a dot, and extglobs (`+(a|b)`) are
    /// rejected rather than matched.
    pub fn new(patterns: &[String], option: &'static str) -> Result<UrlGlobs, ConfigError> {
        let mut set = GlobSetBuilder::new();
        for (index, pattern) in patterns.iter().enumerate() {
            let glob = GlobBuilder::new(pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .empty_alternates(true)
                .build()
                .map_err(|e| ConfigError::InvalidEntry {
                    option,
                    index,
                    reason: format!("'{pattern}' is not a valid glob: {}", e.kind()),
                })?;
            set.add(glob);
        }
        let set = set.build().map_err(|e| ConfigError::InvalidOption { name: option, reason: e.to_string() })?;
        Ok(UrlGlobs { exact: patterns.to_vec(), set })
    }

    /// Whether the request URL (path and query) is one of the patterns or matches one.
    pub fn matches(&self, url: &str) -> bool {
        self.exact.iter().any(|p| p == url) || self.set.is_match(url)
    }

    /// resp-modifier's blacklist test, less its extension list: the URL equals a pattern, or is not `/`
    /// and matches one.
    pub fn blacklists(&self, url: &str) -> bool {
        self.exact.iter().any(|p| p == url) || (url != "/" && self.set.is_match(url))
    }

    /// No patterns at all.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(patterns: &[&str]) -> UrlGlobs {
        UrlGlobs::new(&patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>(), "paths").unwrap()
    }

    #[test]
    fn matches_like_minimatch() {
        let g = globs(&["/api/*.json", "/static/**", "/exact?x=1"]);
        assert!(g.matches("/api/a.json"));
        assert!(!g.matches("/api/v1/a.json"), "* stops at /");
        assert!(!g.matches("/api/a.json?v=1"), "the query is part of the URL");
        assert!(g.matches("/static/css/a.css") && g.matches("/static/a"));
        assert!(g.matches("/exact?x=1"));
        assert!(!g.matches("/other"));
        assert!(globs(&["/{a,b}.html"]).matches("/b.html"));
    }

    #[test]
    fn blacklist_never_globs_the_root() {
        let g = globs(&["/**"]);
        assert!(!g.blacklists("/") && g.blacklists("/x"));
        assert!(globs(&["/"]).blacklists("/"));
    }

    #[test]
    fn bad_globs_are_named() {
        let err = UrlGlobs::new(&["/ok".into(), "/[z-a".into()], "snippetOptions.blacklist").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("snippetOptions.blacklist[1]") && text.contains("/[z-a"), "{text}");
    }
}
