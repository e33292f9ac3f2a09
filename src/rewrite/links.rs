//! Browsersync's link rewrite (`rewriteLinks` in browser-sync's proxy-utils.js), reproduced exactly
//! except that the target host is matched literally (Browsersync forgets to escape its dots).
//!
//! Browsersync's regex uses two look-aheads, `(?!:)` and `(?=[ ,'"\s])`, which a DFA cannot run. Both
//! look one character ahead, so the pattern below consumes that character instead and [`replace`]
//! gives it back: the next search starts at it, as it would in JS.

/// Bytes that may stand before the host in a match: `https:\/\/` is the longest.
pub(super) const MAX_LEAD: usize = 10;

/// JS `[ ,'"\s]`: where a quoted URL ends.
const DELIMITER: &str =
    r#" ,'"\t\n\x0B\x0C\r\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}"#;

/// The four alternatives of Browsersync's regex, in its order (leftmost-first keeps its priorities).
pub(super) fn pattern(target_host: &str) -> String {
    let host = regex_syntax::escape(target_host);
    let d = DELIMITER;
    [
        // JSON-escaped URLs: https:\/\/HOST
        format!(r"https?:\\/\\/{host}"),
        // quoted protocol-relative URLs: "//HOST
        format!(r#"['"]//{host}"#),
        // absolute URLs anywhere: https://HOST(?!:)(/)?
        format!(r"https?://{host}(?:/|[^:/]|\z)"),
        // quoted attribute values: ('|")(https?://|/|\.)?HOST(?!:)(/)?(.*?)(?=[ ,'"\s])
        format!(r#"['"](?:https?://|/|\.)?{host}(?:/[^{d}]*|[^{d}:/][^{d}]*)?[{d}]"#),
    ]
    .join("|")
}

/// Writes the replacement for `matched` (Browsersync's replacement function, with the request's
/// Host as `local_host`) and returns how many bytes of `matched` the JS match would have covered.
pub(super) fn replace(matched: &[u8], target_host: &str, local_host: &str, out: &mut Vec<u8>) -> usize {
    let quote = matches!(matched.first(), Some(b'\'' | b'"'));
    let logical = if quote {
        if matched[1..].starts_with(b"//") && matched[3..].starts_with(target_host.as_bytes()) {
            matched.len() // `"//HOST`: nothing looked ahead
        } else {
            matched.len() - last_char_width(matched) // the delimiter after a quoted value
        }
    } else if matched.starts_with(br"http:\/\/") || matched.starts_with(br"https:\/\/") {
        matched.len()
    } else {
        // `https://HOST` plus `/`, or plus a look-ahead character (absent at the end of the body).
        let bare = matched.iter().position(|&b| b == b':').map_or(0, |i| i + 3) + target_host.len();
        if matched.get(bare) == Some(&b'/') {
            bare + 1
        } else {
            bare
        }
    };
    let text = String::from_utf8_lossy(&matched[..logical]);
    let (captured, url) = if quote { text.split_at(1) } else { ("", &text[..]) };
    out.extend_from_slice(captured.as_bytes());
    match parse_legacy_url(url) {
        // Like Node's url.parse: with a host, rebuild a protocol-relative URL.
        Some(path_and_hash) => {
            out.extend_from_slice(b"//");
            out.extend_from_slice(local_host.as_bytes());
            out.extend_from_slice(path_and_hash.as_bytes());
        }
        // Without one, replace the first occurrence of the host.
        None => out.extend_from_slice(url.replacen(target_host, local_host, 1).as_bytes()),
    }
    logical
}

fn last_char_width(bytes: &[u8]) -> usize {
    let mut width = 1;
    while width < bytes.len() && (0x80..0xC0).contains(&bytes[bytes.len() - width]) {
        width += 1;
    }
    width
}

/// What Browsersync keeps of Node's legacy `url.parse(url)`: `path` (with Browsersync's trailing-slash
/// rule) plus `hash`; `None` when the URL has no host.
fn parse_legacy_url(url: &str) -> Option<String> {
    // url.parse turns `\` into `/` before the query or hash.
    let first_special = url.find(['?', '#']).unwrap_or(url.len());
    let url = format!("{}{}", url[..first_special].replace('\\', "/"), &url[first_special..]);
    // Any `scheme:` counts, so `host:port/x` parses as scheme `host`, host `port`.
    let colon = url.find(':')?;
    let scheme = url[..colon].to_ascii_lowercase();
    if scheme.is_empty()
        || !scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        || scheme == "javascript"
    {
        return None;
    }
    let slashed_scheme = matches!(scheme.as_str(), "http" | "https" | "ftp" | "gopher" | "file");
    let mut rest = &url[colon + 1..];
    let slashes = rest.starts_with("//");
    if slashes {
        rest = &rest[2..];
    } else if slashed_scheme {
        return None;
    }
    let host_end = rest.find(|c: char| HOST_ENDS.contains(&c)).unwrap_or(rest.len());
    if host_end == 0 {
        return None;
    }
    let after_host = &rest[host_end..];
    let (before_hash, hash) = match after_host.find('#') {
        Some(i) => after_host.split_at(i),
        None => (after_host, ""),
    };
    let mut path = auto_escape(before_hash);
    if slashed_scheme && !path.starts_with('/') {
        path.insert(0, '/');
    }
    if path == "/" && !url.ends_with('/') {
        path.clear();
    }
    path.push_str(&auto_escape(hash));
    Some(path)
}

/// Characters that end the host in Node's legacy url.parse.
const HOST_ENDS: &[char] = &['/', '?', '#', '\\', '<', '>', '"', '\'', '`', ' ', '\r', '\n', '\t', '{', '}', '|', '^'];

fn auto_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\'' | '{' | '}' | '|' | '\\' | '^' | '`' | '<' | '>' | '"' | ' ' | '\r' | '\n' | '\t' => {
                escaped.push_str(&format!("%{:02X}", c as u32))
            }
            _ => escaped.push(c),
        }
    }
    escaped
}
