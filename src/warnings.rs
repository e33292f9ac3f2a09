//! Warnings about option keys the proxy does not act on: Browsersync's other features (left to the
//! `devproxy-native/browser-sync` adapter), Browsersync options it does not support, and unknown
//! keys, with the closest known name. Nothing a user passes is dropped in silence.

/// Browsersync's top-level options that belong to its other features (file watching, the browser,
/// the UI, ghost mode, its client script...), from browser-sync's default-config and docs.
pub const BROWSERSYNC_OTHER: &[&str] = &[
    "ui",
    "files",
    "watchEvents",
    "watch",
    "ignore",
    "single",
    "watchOptions",
    "server",
    "ghostMode",
    "logConnections",
    "logFileChanges",
    "logSnippet",
    "open",
    "browser",
    "cors",
    "hostnameSuffix",
    "reloadOnRestart",
    "notify",
    "scrollProportionally",
    "scrollThrottle",
    "scrollRestoreTechnique",
    "scrollElements",
    "scrollElementMapping",
    "reloadDelay",
    "reloadDebounce",
    "reloadThrottle",
    "plugins",
    "injectChanges",
    "minify",
    "localOnly",
    "codeSync",
    "timestamps",
    "clientEvents",
    "socket",
    "tagNames",
    "injectFileTypes",
    "injectNotification",
    "excludedFileTypes",
    "online",
    "xip",
    "tunnel",
    "httpModule",
    "callbacks",
    "cwd",
    "scriptPath",
];

/// Keys of `start()`'s options that other parts of the proxy read (TLS, static files, hooks): known,
/// so never reported here.
pub const HANDLED_ELSEWHERE: &[&str] =
    &["https", "strictPort", "listen", "serveStatic", "serveStaticOptions", "routes", "middleware", "onRequest"];

/// Keys of the `proxy` object read elsewhere (the hooks).
pub const PROXY_HANDLED_ELSEWHERE: &[&str] = &["proxyReq", "proxyReqWs", "proxyRes", "middleware", "proxyOptions"];

/// Browsersync's `proxy` keys this proxy does not support.
pub const PROXY_UNSUPPORTED: &[&str] = &["errHandler", "route", "url"];

/// The warnings for `keys` of the options object `object` (`""` at the top level, else e.g.
/// `"proxy"`): a key in `known` or `elsewhere` is fine; one in `browsersync_other` is Browsersync's and
/// left to the adapter; one in `unsupported` is ignored; any other is unknown, with the closest known
/// key when one is close.
pub fn for_keys(
    object: &str,
    keys: &[String],
    known: &[&str],
    elsewhere: &[&str],
    browsersync_other: &[&str],
    unsupported: &[&str],
) -> Vec<String> {
    let path = |key: &str| if object.is_empty() { key.to_string() } else { format!("{object}.{key}") };
    keys.iter()
        .filter(|key| !known.contains(&key.as_str()) && !elsewhere.contains(&key.as_str()))
        .map(|key| {
            if browsersync_other.contains(&key.as_str()) {
                format!(
                    "option `{}` belongs to Browsersync's other features, not its proxy: the \
                     `devproxy-native/browser-sync` adapter handles it; start() ignores it",
                    path(key)
                )
            } else if unsupported.contains(&key.as_str()) {
                format!("option `{}` is not supported by devproxy-native and is ignored", path(key))
            } else {
                let candidates = known.iter().chain(elsewhere).chain(browsersync_other);
                match closest(key, candidates.copied()) {
                    Some(near) => format!("unknown option `{}`; did you mean `{}`?", path(key), path(near)),
                    None => format!("unknown option `{}`; it is ignored", path(key)),
                }
            }
        })
        .collect()
}

/// The candidate most like `key` (Jaro-Winkler, case-insensitive), if it is alike enough to be a typo.
pub(crate) fn closest<'a>(key: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let key = key.to_ascii_lowercase();
    candidates
        .map(|c| (strsim::jaro_winkler(&key, &c.to_ascii_lowercase()), c))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warn(keys: &[&str]) -> Vec<String> {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        for_keys("", &keys, &["proxy", "rewriteRules", "port"], HANDLED_ELSEWHERE, BROWSERSYNC_OTHER, &[])
    }

    #[test]
    fn one_line_per_ignored_or_unknown_key() {
        let lines = warn(&["proxy", "https", "files", "rewriteRule", "zzzzqqq"]);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("`files`") && lines[0].contains("devproxy-native/browser-sync"), "{}", lines[0]);
        assert_eq!(lines[1], "unknown option `rewriteRule`; did you mean `rewriteRules`?");
        assert_eq!(lines[2], "unknown option `zzzzqqq`; it is ignored");
    }

    #[test]
    fn nested_keys_are_named_with_their_object() {
        let keys = vec!["errHandler".to_string(), "taget".to_string()];
        let lines = for_keys("proxy", &keys, &["target", "ws"], PROXY_HANDLED_ELSEWHERE, &[], PROXY_UNSUPPORTED);
        assert!(lines[0].contains("`proxy.errHandler` is not supported"), "{}", lines[0]);
        assert_eq!(lines[1], "unknown option `proxy.taget`; did you mean `proxy.target`?");
    }
}
