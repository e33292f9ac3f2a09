//! A page's Content-Security-Policy, amended so that the snippet the proxy injects runs and its client
//! can connect back (browser-sync issues 1395, 1241, 1499, 2062), loosening nothing else: the snippet's
//! `<script>`s get a nonce that the policy's script directive lists, and the proxy's own origins join
//! `connect-src`. The header, its report-only twin (`headers::amend_csp`) and `<meta http-equiv>` tags
//! (the rewrite engine's `Rule::csp_meta`) all go through [`amend`].

use std::sync::atomic::{AtomicBool, Ordering};

/// What one page's policies gain: the response's nonce and the proxy's origins.
#[derive(Debug)]
pub struct PagePolicy {
    nonce: String,
    /// The proxy's origin as the page reached it (`http://localhost:3000`) and its WebSocket twin.
    origins: Option<[String; 2]>,
    /// Some policy of the page needs the snippet's scripts to carry the nonce.
    nonce_needed: AtomicBool,
    /// The snippet's place was not found before the headers had to go out: neither the snippet nor
    /// the policies' amendment (header or `<meta>`) is written.
    withheld: AtomicBool,
}

impl PagePolicy {
    /// A fresh nonce for a page served at `local_scheme://local_host`. A `Host` that is not a plain
    /// host and port adds no origin: it would be written into the policy. (Not in the WebAssembly
    /// build, which leaves the page's headers to its host.)
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new(local_scheme: &str, local_host: &str) -> PagePolicy {
        let plain = !local_host.is_empty()
            && local_host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
        let ws = if local_scheme == "https" { "wss" } else { "ws" };
        PagePolicy {
            nonce: new_nonce(),
            origins: plain.then(|| [format!("{local_scheme}://{local_host}"), format!("{ws}://{local_host}")]),
            nonce_needed: AtomicBool::new(false),
            withheld: AtomicBool::new(false),
        }
    }

    /// Neither the snippet nor any amendment is written on this page from now on: the snippet's place
    /// did not come while the policies still could be amended (a page without `<body>`, or one that
    /// ends, or holds more than the look-ahead, before it).
    pub fn withhold(&self) {
        self.withheld.store(true, Ordering::Relaxed);
    }

    /// Whether [`PagePolicy::withhold`] was called.
    pub fn withheld(&self) -> bool {
        self.withheld.load(Ordering::Relaxed)
    }

    /// A header's or meta tag's policies amended; `None` when they allow the snippet as they are (or the
    /// snippet is withheld).
    pub fn amend(&self, policies: &str) -> Option<String> {
        if self.withheld() {
            return None;
        }
        let (text, nonce_needed) = amend(policies, &self.nonce, self.origins.as_ref())?;
        if nonce_needed {
            self.nonce_needed.store(true, Ordering::Relaxed);
        }
        Some(text)
    }

    /// A `<meta http-equiv="Content-Security-Policy" content="...">` tag with its policies amended;
    /// `None` when it stays as it is.
    pub fn amend_meta(&self, tag: &[u8]) -> Option<Vec<u8>> {
        if !sets_policy(tag) {
            return None;
        }
        let (start, end) = content_attribute(tag)?;
        let raw = std::str::from_utf8(&tag[start..end]).ok()?;
        let value = match raw.as_bytes() {
            [quote @ (b'"' | b'\''), .., last] if last == quote && raw.len() > 1 => &raw[1..raw.len() - 1],
            _ => raw,
        };
        // Character references (`&#39;self&#39;`) are the policy's text once the browser has read them.
        let amended = self.amend(&html_escape::decode_html_entities(value))?;
        // Written back double-quoted: the nonce's quotes cannot end the attribute.
        let amended = html_escape::encode_double_quoted_attribute(&amended);
        let mut out = Vec::with_capacity(tag.len() + amended.len() + 2);
        out.extend_from_slice(&tag[..start]);
        out.push(b'"');
        out.extend_from_slice(amended.as_bytes());
        out.push(b'"');
        out.extend_from_slice(&tag[end..]);
        Some(out)
    }

    /// `snippet` as this page injects it: with the nonce on its `<script>` tags when a policy needs it.
    pub fn snippet(&self, snippet: &str) -> Option<String> {
        self.nonce_needed.load(Ordering::Relaxed).then(|| with_nonce(snippet, &self.nonce))
    }
}

/// 128 random bits, base64: what CSP asks of a nonce.
#[cfg(not(target_arch = "wasm32"))]
fn new_nonce() -> String {
    use base64::Engine as _;
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 16];
    // The system generator does not fail on the platforms we build for; were it to, the nonce is still
    // unique to the process and time, and a page's policy still names only it.
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        bytes = now.as_nanos().to_le_bytes();
    }
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `policies` (comma-separated, as one header field may carry several) with each amended; `None` when
/// none changes. The flag says whether some policy now expects the snippet's nonce.
fn amend(policies: &str, nonce: &str, origins: Option<&[String; 2]>) -> Option<(String, bool)> {
    let mut nonce_needed = false;
    let mut changed = false;
    let amended: Vec<String> = policies
        .split(',')
        .map(|policy| match amend_policy(policy, nonce, origins) {
            Some((text, needs)) => {
                changed = true;
                nonce_needed |= needs;
                text
            }
            None => policy.trim().to_string(),
        })
        .collect();
    changed.then(|| (amended.join(", "), nonce_needed))
}

/// One policy's directives: the first of a name counts (CSP ignores repeats).
fn amend_policy(policy: &str, nonce: &str, origins: Option<&[String; 2]>) -> Option<(String, bool)> {
    let mut directives: Vec<String> =
        policy.split(';').map(str::trim).filter(|d| !d.is_empty()).map(String::from).collect();
    let find = |directives: &[String], name: &str| {
        directives.iter().position(|d| d.split_ascii_whitespace().next().is_some_and(|n| n.eq_ignore_ascii_case(name)))
    };
    let mut changed = false;
    let mut nonce_needed = false;
    // Script elements follow `script-src-elem`, else `script-src`, else `default-src`.
    let script = find(&directives, "script-src-elem")
        .or_else(|| find(&directives, "script-src"))
        .map(|at| (at, false))
        .or_else(|| find(&directives, "default-src").map(|at| (at, true)));
    if let Some((at, from_default)) = script {
        let sources = sources(&directives[at]);
        // A nonce would switch `'unsafe-inline'` off for the page's own scripts: where inline scripts
        // run already, the snippet does too.
        let inline_runs = has(&sources, "'unsafe-inline'")
            && !sources.iter().any(|s| {
                let s = s.to_ascii_lowercase();
                s.starts_with("'nonce-") || s.starts_with("'sha") || s == "'strict-dynamic'"
            });
        if !inline_runs {
            let nonce = format!("'nonce-{nonce}'");
            let name = if from_default { "script-src" } else { directive_name(&directives[at]) };
            let directive = with_sources(name, &sources, &[nonce]);
            place(&mut directives, at, from_default, directive);
            changed = true;
            nonce_needed = true;
        }
    }
    let connect = find(&directives, "connect-src")
        .map(|at| (at, false))
        .or_else(|| find(&directives, "default-src").map(|at| (at, true)));
    if let (Some((at, from_default)), Some(origins)) = (connect, origins) {
        let sources = sources(&directives[at]);
        let missing: Vec<String> = origins.iter().filter(|o| !has(&sources, o)).cloned().collect();
        if !missing.is_empty() {
            let name = if from_default { "connect-src" } else { directive_name(&directives[at]) };
            let directive = with_sources(name, &sources, &missing);
            place(&mut directives, at, from_default, directive);
            changed = true;
        }
    }
    changed.then(|| (directives.join("; "), nonce_needed))
}

fn directive_name(directive: &str) -> &str {
    directive.split_ascii_whitespace().next().unwrap_or_default()
}

fn sources(directive: &str) -> Vec<&str> {
    directive.split_ascii_whitespace().skip(1).collect()
}

fn has(sources: &[&str], source: &str) -> bool {
    sources.iter().any(|s| s.eq_ignore_ascii_case(source))
}

/// `name` with `sources` and `added`; `'none'` goes, as it means nothing beside other sources.
fn with_sources(name: &str, sources: &[&str], added: &[String]) -> String {
    let kept = sources.iter().copied().filter(|s| !s.eq_ignore_ascii_case("'none'"));
    std::iter::once(name).chain(kept).chain(added.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
}

/// A directive derived from `default-src` joins the policy; any other replaces the one it amends.
fn place(directives: &mut Vec<String>, at: usize, from_default: bool, directive: String) {
    if from_default {
        directives.push(directive);
    } else {
        directives[at] = directive;
    }
}

/// ` nonce="..."` on every `<script` start tag of `html`.
fn with_nonce(html: &str, nonce: &str) -> String {
    let mut out = String::with_capacity(html.len() + 32);
    let mut rest = html;
    while let Some(at) = find_ascii_case_insensitive(rest, "<script") {
        let end = at + "<script".len();
        out.push_str(&rest[..end]);
        if rest[end..].starts_with(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/') {
            out.push_str(" nonce=\"");
            out.push_str(nonce);
            out.push('"');
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn find_ascii_case_insensitive(haystack: &str, needle: &str) -> Option<usize> {
    haystack.as_bytes().windows(needle.len()).position(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Whether a `<meta>` tag says `http-equiv=content-security-policy` (quoted or not, any case): not
/// `content-security-policy-report-only`, which a meta tag cannot set.
fn sets_policy(tag: &[u8]) -> bool {
    const NAME: &[u8] = b"http-equiv";
    const VALUE: &[u8] = b"content-security-policy";
    let skip_spaces = |mut i: usize| {
        while tag.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    let has_value_at = |i: usize| tag.get(i..i + VALUE.len()).is_some_and(|v| v.eq_ignore_ascii_case(VALUE));
    (0..tag.len().saturating_sub(NAME.len() - 1)).any(|at| {
        if !tag[at..at + NAME.len()].eq_ignore_ascii_case(NAME) {
            return false;
        }
        let i = skip_spaces(at + NAME.len());
        if tag.get(i) != Some(&b'=') {
            return false;
        }
        let i = skip_spaces(i + 1);
        match tag.get(i) {
            Some(&quote @ (b'"' | b'\'')) => has_value_at(i + 1) && tag.get(i + 1 + VALUE.len()) == Some(&quote),
            _ => {
                has_value_at(i)
                    && tag.get(i + VALUE.len()).is_some_and(|b| b.is_ascii_whitespace() || b"/>".contains(b))
            }
        }
    })
}

/// Where the `content` attribute's value is in a tag (quotes included): the bytes after `content`,
/// `=` and any spaces, up to its closing quote, or the next space or `>` when unquoted.
fn content_attribute(tag: &[u8]) -> Option<(usize, usize)> {
    let mut at = 0;
    while at < tag.len() {
        // Attribute names start after a space (the tag name comes first).
        let name_start = at + tag[at..].iter().position(u8::is_ascii_whitespace)? + 1;
        let name_len = tag[name_start..].iter().take_while(|b| !b" \t\n\r\x0c=>".contains(b)).count();
        let name = &tag[name_start..name_start + name_len];
        let mut i = name_start + name_len;
        while tag.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if tag.get(i) != Some(&b'=') {
            at = name_start + name_len.max(1) - 1;
            continue;
        }
        i += 1;
        while tag.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        let start = i;
        let end = match tag.get(i) {
            Some(&quote @ (b'"' | b'\'')) => start + 1 + tag[start + 1..].iter().position(|&b| b == quote)? + 1,
            Some(_) => start + tag[start..].iter().take_while(|b| !b" \t\n\r\x0c>".contains(b)).count(),
            None => return None,
        };
        if name.eq_ignore_ascii_case(b"content") {
            return Some((start, end));
        }
        at = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins() -> [String; 2] {
        ["http://localhost:3000".to_string(), "ws://localhost:3000".to_string()]
    }

    fn amended(policy: &str) -> Option<(String, bool)> {
        amend(policy, "N", Some(&origins()))
    }

    #[test]
    fn a_nonce_joins_the_directive_scripts_follow() {
        assert_eq!(
            amended("script-src 'nonce-abc' 'strict-dynamic'; object-src 'none'"),
            Some(("script-src 'nonce-abc' 'strict-dynamic' 'nonce-N'; object-src 'none'".into(), true))
        );
        // `script-src-elem` decides for elements; `script-src` (and its inline handlers) stays.
        assert_eq!(
            amended("script-src 'self' 'unsafe-inline'; script-src-elem 'self'").unwrap().0,
            "script-src 'self' 'unsafe-inline'; script-src-elem 'self' 'nonce-N'"
        );
        // From `default-src`: a `script-src` with the same sources, and `connect-src` likewise.
        assert_eq!(
            amended("default-src 'self'").unwrap().0,
            "default-src 'self'; script-src 'self' 'nonce-N'; connect-src 'self' http://localhost:3000 ws://localhost:3000"
        );
        // `'none'` means nothing beside a source.
        assert_eq!(amended("script-src 'none'").unwrap().0, "script-src 'nonce-N'");
    }

    #[test]
    fn where_inline_scripts_run_nothing_is_added_for_scripts() {
        // A nonce would turn `'unsafe-inline'` off for the page's own scripts.
        assert_eq!(amended("script-src 'self' 'unsafe-inline'"), None);
        // Already off (a hash or nonce is listed): the snippet needs the nonce.
        assert!(amended("script-src 'unsafe-inline' 'sha256-xyz'").unwrap().1);
        // No script directive at all: scripts are not restricted.
        assert_eq!(amended("img-src 'self'"), None);
    }

    #[test]
    fn connect_src_gains_the_proxy_origins_once() {
        assert_eq!(
            amended("connect-src https://api.example.com").unwrap(),
            ("connect-src https://api.example.com http://localhost:3000 ws://localhost:3000".into(), false)
        );
        assert_eq!(amended("connect-src http://LOCALHOST:3000 ws://localhost:3000"), None);
        assert_eq!(amend("connect-src 'none'", "N", None), None, "no origin to add from an odd Host");
    }

    #[test]
    fn each_policy_of_a_field_is_amended_and_repeats_are_ignored() {
        assert_eq!(amended("script-src 'self', img-src *").unwrap().0, "script-src 'self' 'nonce-N', img-src *");
        assert_eq!(
            amended("SCRIPT-SRC 'self'; script-src 'unsafe-inline'").unwrap().0,
            "SCRIPT-SRC 'self' 'nonce-N'; script-src 'unsafe-inline'"
        );
    }

    #[test]
    fn snippet_scripts_carry_the_nonce_only_when_a_policy_asks() {
        let page = PagePolicy::new("http", "localhost:3000");
        let snippet = "<script async src=\"/c.js\"></script><SCRIPT>x()</SCRIPT><scripts>";
        assert_eq!(page.snippet(snippet), None);
        page.amend("script-src 'self'").unwrap();
        let nonced = page.snippet(snippet).unwrap();
        let nonce = &page.nonce;
        assert_eq!(
            nonced,
            format!("<script nonce=\"{nonce}\" async src=\"/c.js\"></script><SCRIPT nonce=\"{nonce}\">x()</SCRIPT><scripts>")
        );
        assert_ne!(PagePolicy::new("http", "h").nonce, page.nonce, "one nonce per page");
        assert_eq!(base64::Engine::decode(&base64::engine::general_purpose::STANDARD, nonce).unwrap().len(), 16);
    }

    #[test]
    fn a_host_that_is_not_a_host_adds_nothing() {
        let page = PagePolicy::new("https", "evil; script-src *");
        assert!(page.origins.is_none());
        assert_eq!(PagePolicy::new("https", "[::1]:3000").origins.unwrap()[1], "wss://[::1]:3000");
    }

    #[test]
    fn meta_tags_get_their_content_amended_and_double_quoted() {
        let page = PagePolicy::new("http", "localhost:3000");
        let nonce = page.nonce.clone();
        // Character references are read as the browser reads them (`;` in `&apos;` ends no directive).
        let tag = b"<meta http-equiv='Content-Security-Policy' content='script-src &apos;self&#39; https://a.test/?a=1&amp;b \"x\"'>";
        let out = String::from_utf8(page.amend_meta(tag).unwrap()).unwrap();
        assert_eq!(
            out,
            format!(
                "<meta http-equiv='Content-Security-Policy' content=\"script-src 'self' https://a.test/?a=1&amp;b &quot;x&quot; 'nonce-{nonce}'\">"
            )
        );
        let unquoted = b"<META CONTENT=script-src\thttp-equiv=content-security-policy>";
        let out = String::from_utf8(page.amend_meta(unquoted).unwrap()).unwrap();
        assert_eq!(out, format!("<META CONTENT=\"script-src 'nonce-{nonce}'\"\thttp-equiv=content-security-policy>"));
        assert_eq!(page.amend_meta(b"<meta http-equiv=content-security-policy content=\"img-src *\">"), None);
        assert_eq!(page.amend_meta(b"<meta http-equiv=content-security-policy>"), None);
        // Other meta tags, and the report-only policy a meta tag cannot set, stay as they are.
        for tag in [
            &b"<meta name=viewport content=\"script-src 'none'\">"[..],
            b"<meta http-equiv=content-security-policy-report-only content=\"script-src 'none'\">",
            b"<meta http-equiv=\"content-security-policy-x\" content=\"script-src 'none'\">",
            b"<meta http-equiv=refresh content=\"script-src 'none'\">",
        ] {
            assert_eq!(page.amend_meta(tag), None, "{}", String::from_utf8_lossy(tag));
        }
        for tag in [
            &b"<meta HTTP-EQUIV = 'Content-Security-Policy' content=\"script-src 'none'\">"[..],
            b"<meta content=\"script-src 'none'\" http-equiv=content-security-policy/>",
            b"<meta\thttp-equiv=content-security-policy\ncontent=\"script-src 'none'\">",
        ] {
            assert!(page.amend_meta(tag).is_some(), "{}", String::from_utf8_lossy(tag));
        }
    }
}
