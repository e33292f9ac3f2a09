//! Engine tests: JS semantics on fixed cases, and chunking-invariance against whole-body application
//! and against a reference built on `regex_automata::meta::Regex`. That reference shares the JS-regex
//! translation and the replacement templates with the engine: the independent one is the Node-recorded
//! corpus of tests/js_expectations.rs.

use proptest::prelude::*;
use regex_automata::{meta, Input};

use super::replacement::group_info;
use super::replacement::Template;
use super::rule::{parse, Engine};
use super::seeded::{seeded, text};
use super::*;

fn text_rule(source: &str, flags: &str, replace: &str) -> Rule {
    Rule::regex(source, flags, RuleReplacement::Text(replace.into())).unwrap()
}

fn whole(input: &str, rules: &[Rule]) -> String {
    String::from_utf8(rewrite_bytes(input.as_bytes(), rules, "local:3000", DEFAULT_MAX_MATCH_BYTES).unwrap()).unwrap()
}

fn chunked(input: &[u8], rules: &[Rule], cuts: &[usize], max_match: usize) -> Vec<u8> {
    let mut rewriter = Rewriter::new(rules, "local:3000", max_match);
    let mut out = Vec::new();
    let mut at = 0;
    for &cut in cuts {
        let cut = cut.clamp(at, input.len());
        rewriter.push(&input[at..cut], &mut out).unwrap();
        rewriter.push(&[], &mut out).unwrap();
        at = cut;
    }
    rewriter.push(&input[at..], &mut out).unwrap();
    rewriter.finish(&mut out).unwrap();
    out
}

fn one_byte_chunks(input: &[u8], rules: &[Rule]) -> Vec<u8> {
    let cuts: Vec<usize> = (0..input.len()).collect();
    chunked(input, rules, &cuts, DEFAULT_MAX_MATCH_BYTES)
}

// Each expectation is what Node 20 prints for input.replace(regex, replacement).
#[test]
fn matches_js_replace_on_known_cases() {
    let cases: &[(&str, &str, &str, &str, &str)] = &[
        ("aab", "a*", "g", "-", "--b-"),
        ("abc", "x*", "g", "-", "-a-b-c-"),
        ("abc", "", "g", "-", "-a-b-c-"),
        ("abcab", "abc|a", "g", "[$&]", "[abc][a]b"),
        ("xabcx", "a|abc", "g", "[$&]", "x[a]bcx"),
        ("aXbX", "x", "gi", "_", "a_b_"),
        ("one two", "(\\w+) (\\w+)", "", "$2 $1", "two one"),
        ("one two", "(?<a>\\w+) (?<b>\\w+)", "", "$<b>-$<a>", "two-one"),
        ("a\nb\n", "^\\w$", "gm", "<$&>", "<a>\n<b>\n"),
        ("a\nb\n", "^\\w$", "g", "<$&>", "a\nb\n"),
        ("éa éb", "\\bé?a", "g", "X", "éX éb"),
        ("<p>aaa</p>", "a+?", "g", "b", "<p>bbb</p>"),
        ("café CAFÉ", "café", "gi", "tea", "tea tea"),
        ("$1", "1", "", "$$", "$$"),
        ("ab", "(x)?b", "", "[$1]", "a[]"),
        ("a.b", ".", "g", "-", "---"),
        ("a\nb", ".", "g", "-", "-\n-"),
        ("a\nb", ".", "gs", "-", "---"),
        ("a\u{d}\u{a}b\u{d}c\u{2028}d\u{2029}e", "^", "gm", "<", "<a\u{d}<\u{a}<b\u{d}<c\u{2028}<d\u{2029}<e"),
        ("a\u{d}\u{a}b\u{d}c\u{2028}d\u{2029}e", "$", "gm", ">", "a>\u{d}>\u{a}b>\u{d}c>\u{2028}d>\u{2029}e>"),
        (
            "a\u{d}\u{a}b\u{d}c\u{2028}d\u{2029}e",
            "^\\w|\\w$",
            "gm",
            "[$&]",
            "[a]\u{d}\u{a}[b]\u{d}[c]\u{2028}[d]\u{2029}[e]",
        ),
        ("x\u{2028}\u{2029}\u{d}\u{d}\u{a}\u{a}", "^$", "gm", "|", "x\u{2028}|\u{2029}|\u{d}|\u{d}|\u{a}|\u{a}|"),
        ("p\u{d}\u{a}\u{2028}q", "(\\r)?(\\n)?^", "gm", "<$1$2>", "<>p<\u{d}\u{a}><>\u{2028}<>q"),
    ];
    for (input, source, flags, replace, expected) in cases {
        let rule = text_rule(source, flags, replace);
        assert_eq!(&whole(input, std::slice::from_ref(&rule)), expected, "/{source}/{flags} on {input:?}");
        let streamed = one_byte_chunks(input.as_bytes(), &[rule]);
        assert_eq!(std::str::from_utf8(&streamed).unwrap(), *expected, "1-byte chunks, /{source}/{flags} on {input:?}");
    }
}

#[test]
fn string_rules_replace_the_first_occurrence_only() {
    let rule = Rule::literal("a.b", RuleReplacement::Text("[$&]".into())).unwrap();
    assert_eq!(whole("axb a.b a.b", &[rule]), "axb [a.b] a.b");
}

#[test]
fn rules_chain_in_order() {
    let rules = [text_rule("a", "g", "b"), text_rule("b", "g", "c")];
    assert_eq!(whole("ab", &rules), "cc");
}

#[test]
fn snippet_goes_after_the_first_body_tag_only() {
    let rule = Rule::snippet("<script></script>");
    let html = "<html><BODY class=\"x\">hi<body></html>";
    let expected = "<html><BODY class=\"x\"><script></script>hi<body></html>";
    assert_eq!(whole(html, std::slice::from_ref(&rule)), expected);
    assert_eq!(one_byte_chunks(html.as_bytes(), std::slice::from_ref(&rule)), expected.as_bytes());
    assert_eq!(whole("<p>no body</p>", &[rule]), "<p>no body</p>");
}

// A `<meta>` policy before the body: the meta stage amends it, and the snippet stage after it writes the nonce,
// however the page is cut. Report-only metas (which browsers ignore) and pages without a policy stay as
// they are, snippet byte for byte.
#[test]
fn a_meta_policy_gets_the_snippet_nonce_in_any_chunking() {
    let rules = [Rule::csp_meta(), Rule::snippet("<script async src=\"/c.js\"></script>")];
    let run = |html: &str, cut_every_byte: bool| {
        let page = std::sync::Arc::new(crate::csp::PagePolicy::new("http", "localhost:3000"));
        let mut rewriter = Rewriter::new(&rules, "localhost:3000", DEFAULT_MAX_MATCH_BYTES).with_page_policy(page);
        let mut out = Vec::new();
        let step = if cut_every_byte { 1 } else { html.len() };
        for piece in html.as_bytes().chunks(step) {
            rewriter.push(piece, &mut out).unwrap();
        }
        rewriter.finish(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    let html = "<head><meta http-equiv=\"Content-Security-Policy\" content=\"script-src 'self'; connect-src 'none'\"></head><body>x";
    for cut in [false, true] {
        let out = run(html, cut);
        let nonce = out.split("'nonce-").nth(1).and_then(|rest| rest.split('\'').next()).unwrap().to_string();
        let expected = format!(
            "<head><meta http-equiv=\"Content-Security-Policy\" content=\"script-src 'self' 'nonce-{nonce}'; connect-src http://localhost:3000 ws://localhost:3000\"></head><body><script nonce=\"{nonce}\" async src=\"/c.js\"></script>x"
        );
        assert_eq!(out, expected);
    }
    for untouched in [
        "<meta http-equiv=\"content-security-policy-report-only\" content=\"script-src 'self'\"><body>",
        "<meta name=\"csp\" content=\"script-src 'self'\"><body>",
        "<meta http-equiv=content-security-policy content=\"script-src 'unsafe-inline'\"><body>",
    ] {
        let expected = untouched.replace("<body>", "<body><script async src=\"/c.js\"></script>");
        assert_eq!(run(untouched, false), expected);
        assert_eq!(run(untouched, true), expected);
    }
}

// A page whose start showed `<body` with no policy leaves the meta rule out: a policy `<meta>` after the body
// (which browsers ignore) stays as it came; with the rule in, it would have been amended.
#[test]
fn a_meta_rule_left_out_amends_nothing() {
    let rules = [Rule::csp_meta(), Rule::snippet("<script async src=\"/c.js\"></script>")];
    let html = "<body>x<meta http-equiv=\"Content-Security-Policy\" content=\"connect-src 'none'\">";
    let run = |leave_out: bool| {
        let page = std::sync::Arc::new(crate::csp::PagePolicy::new("http", "localhost:3000"));
        let mut rewriter = Rewriter::new(&rules, "localhost:3000", DEFAULT_MAX_MATCH_BYTES).with_page_policy(page);
        if leave_out {
            rewriter.leave_out_meta_policy();
        }
        let mut out = Vec::new();
        rewriter.push(html.as_bytes(), &mut out).unwrap();
        rewriter.finish(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    let snippet_placed = html.replace("<body>", "<body><script async src=\"/c.js\"></script>");
    assert_eq!(run(true), snippet_placed);
    assert_ne!(run(false), snippet_placed, "the meta rule in amends the policy");
}

// Percent-encoded origins (a `redirect_to` in a login form): not Browsersync's, the proxy's own rule after
// its link rewrite; any case, whole and in one-byte chunks, other hosts and schemes left alone.
#[test]
fn encoded_origins_of_the_target_point_at_the_proxy() {
    let rules = [Rule::links("wp.test:8088", "http"), Rule::encoded_origin("wp.test:8088", "http")];
    let page = r#"<a href="/wp-login.php?redirect_to=http%3A%2F%2Fwp.test%3A8088%2Fwp-admin%2F">in</a> HTTPS%3a%2f%2fWP.TEST%3a8088 ftp%3A%2F%2Fwp.test%3A8088 http%3A%2F%2Fwp.test%3A9999"#;
    let expected = r#"<a href="/wp-login.php?redirect_to=http%3A%2F%2Flocalhost%3A3102%2Fwp-admin%2F">in</a> http%3A%2F%2Flocalhost%3A3102 ftp%3A%2F%2Fwp.test%3A8088 http%3A%2F%2Fwp.test%3A9999"#;
    let out = rewrite_bytes(page.as_bytes(), &rules, "localhost:3102", DEFAULT_MAX_MATCH_BYTES).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), expected);
    let mut r = Rewriter::new(&rules, "localhost:3102", DEFAULT_MAX_MATCH_BYTES);
    let mut o = Vec::new();
    for b in page.as_bytes() {
        r.push(std::slice::from_ref(b), &mut o).unwrap();
    }
    r.finish(&mut o).unwrap();
    assert_eq!(String::from_utf8(o).unwrap(), expected, "one byte at a time");
    // An https proxy, an IPv6 Host.
    let https = [Rule::encoded_origin("wp.test", "https")];
    let out = rewrite_bytes(b"r=https%3A%2F%2Fwp.test%2F", &https, "[::1]:3000", DEFAULT_MAX_MATCH_BYTES).unwrap();
    assert_eq!(out, b"r=https%3A%2F%2F%5B%3A%3A1%5D%3A3000%2F");
}

// A form field's value keeps a scheme (the proxy's): `<input type="url" value="//x">` is invalid and its
// form is not sent. Everywhere else Browsersync's `//local` form; in every chunking the same.
#[test]
fn link_rewrite_keeps_a_scheme_in_value_attributes_only() {
    let rule = Rule::links("example.com", "https");
    let input = concat!(
        r#"<input type="url" name="u" value="http://example.com/a"><input VALUE = 'https://example.com'>"#,
        r#"<input value=http://example.com/b><a href="http://example.com/c" data-value="http://example.com/d">"#,
        r#"<input value="//example.com/e"><textarea>http://example.com/f</textarea>"#
    );
    let wanted = concat!(
        r#"<input type="url" name="u" value="https://me:1/a"><input VALUE = 'https://me:1'>"#,
        r#"<input value=https://me:1/b><a href="//me:1/c" data-value="//me:1/d">"#,
        r#"<input value="//me:1/e"><textarea>//me:1/f</textarea>"#
    );
    let whole = rewrite_bytes(input.as_bytes(), std::slice::from_ref(&rule), "me:1", DEFAULT_MAX_MATCH_BYTES).unwrap();
    assert_eq!(String::from_utf8(whole).unwrap(), wanted);
    for piece in [1, 2, 5, 13] {
        let mut rewriter = Rewriter::new(std::slice::from_ref(&rule), "me:1", DEFAULT_MAX_MATCH_BYTES);
        let mut out = Vec::new();
        for chunk in input.as_bytes().chunks(piece) {
            rewriter.push(chunk, &mut out).unwrap();
        }
        rewriter.finish(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), wanted, "in pieces of {piece}");
    }
}

// The reference table of ../shared/reference/browsersync-proxy.md (target example.com,
// proxy host 192.168.0.4:3002); the Node tests compare more cases with browser-sync's own function.
#[test]
fn link_rewrite_matches_browsersync_table() {
    let rule = Rule::links("example.com", "http");
    let rewrite = |input: &str| {
        let out =
            rewrite_bytes(input.as_bytes(), std::slice::from_ref(&rule), "192.168.0.4:3002", DEFAULT_MAX_MATCH_BYTES)
                .unwrap();
        let streamed = {
            let mut r = Rewriter::new(std::slice::from_ref(&rule), "192.168.0.4:3002", DEFAULT_MAX_MATCH_BYTES);
            let mut o = Vec::new();
            for b in input.as_bytes() {
                r.push(std::slice::from_ref(b), &mut o).unwrap();
            }
            r.finish(&mut o).unwrap();
            o
        };
        assert_eq!(out, streamed, "chunking changed the result for {input:?}");
        String::from_utf8(out).unwrap()
    };
    assert_eq!(rewrite("'http://example.com/css/styles'"), "'//192.168.0.4:3002/css/styles'");
    assert_eq!(rewrite("\"//example.com/file.js\""), "\"//192.168.0.4:3002/file.js\"");
    assert_eq!(rewrite("'example.com/sub/dir'"), "'192.168.0.4:3002/sub/dir'");
    assert_eq!(rewrite("'/example.com/sub/dir'"), "'/192.168.0.4:3002/sub/dir'");
    assert_eq!(rewrite("<h1>example.com</h1>"), "<h1>example.com</h1>");
    assert_eq!(rewrite("see https://example.com/ now"), "see //192.168.0.4:3002/ now");
    assert_eq!(rewrite("https://example.com"), "//192.168.0.4:3002");
    assert_eq!(rewrite("assets.cdn.example.com:1234"), "assets.cdn.example.com:1234");
    assert_eq!(rewrite(r"http:\/\/example.com\/x"), r"http:\/\/192.168.0.4:3002\/x");
    assert_eq!(rewrite("<a href=\"https://example.com/a?b=1#top\">"), "<a href=\"//192.168.0.4:3002/a?b=1#top\">");
    assert_eq!(rewrite("examplexcom"), "examplexcom");
    // Node's url.parse reads `host:port/x` as scheme `host:` and host `port`.
    let rule = Rule::links("127.0.0.1:8080", "http");
    let out = rewrite_bytes(b"'127.0.0.1:8080/sub/dir' \"127.0.0.1:8080\"", &[rule], "me:1", DEFAULT_MAX_MATCH_BYTES)
        .unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "'//me:1/sub/dir' \"//me:1\"");
}

/// Look-arounds (see `look_around`): outputs from Node 20's `input.replace(new RegExp(source, flags), replace)`,
/// whole and in one-byte chunks.
#[rustfmt::skip]
const LOOK_AROUND_CASES: &[(&str, &str, &str, &str, &str)] = &[
    (r#"foo(?!bar)"#, "g", r#"foobar foobaz foo"#, r#"[$&]"#, r#"foobar [foo]baz [foo]"#),
    (r#"(?<=href=")[^"]*"#, "g", r#"<a href="x/y">z</a><a href="">"#, r#"<$&>"#, r#"<a href="<x/y>">z</a><a href="<>">"#),
    (r#"(?<!\w)cat"#, "g", r#"cat bobcat cat_ concat cat"#, r#"dog"#, r#"dog bobcat dog_ concat dog"#),
    (r#"a+(?=b)"#, "g", r#"aaab aac ab aaaa"#, r#"[$&]"#, r#"[aaa]b aac [a]b aaaa"#),
    (r#"a+(?!b)"#, "g", r#"aaab aac ab aaaa"#, r#"[$&]"#, r#"[aa]ab [aa]c ab [aaaa]"#),
    (r#"(\w+)(?=\.js\b)"#, "g", r#"app.js app.json x.js"#, r#"$1.min"#, r#"app.min.js app.json x.min.js"#),
    (r#"(?<=\$)\d+(?:\.\d\d)?"#, "g", r#"cost $12.50 and 7 and $3"#, r#"#"#, r#"cost $# and 7 and $#"#),
    (r#"\b(?=\w)"#, "g", r#"ab cd"#, r#"|"#, r#"|ab |cd"#),
    (r#"(?=)"#, "g", r#"ab"#, r#"-"#, r#"-a-b-"#),
    (r#"(?<=a|bc)x"#, "g", r#"ax bx bcx x"#, r#"Y"#, r#"aY bx bcY x"#),
    (r#"(?<!^)x"#, "g", r#"xxx"#, r#"Y"#, r#"xYY"#),
    (r#"x(?=$)"#, "g", r#"xx"#, r#"Y"#, r#"xY"#),
    (r#"(?<=é)a"#, "gi", r#"éa ÉA ea"#, r#"_"#, r#"é_ É_ ea"#),
    (r#"(?<=😀)a"#, "g", r#"😀a 😁a"#, r#"_"#, r#"😀_ 😁a"#),
    (r#".(?<=[aeiou])"#, "g", r#"education"#, r#"*"#, r#"*d*c*t**n"#),
    (r#"(?:a(?=b)|ab)c"#, "g", r#"abc ac"#, r#"[$&]"#, r#"[abc] ac"#),
    (r#"(?=(?:ab)+c)a"#, "g", r#"ababc abab"#, r#"_"#, r#"_b_bc abab"#),
    (r#"(?<![a-z])(?:https?:)?//cdn\.example\.com(?=/)"#, "g", r#"src="//cdn.example.com/x" xhttp://cdn.example.com/y https://cdn.example.com"#, r#"LOCAL"#, r#"src="LOCAL/x" xhttp:LOCAL/y https://cdn.example.com"#),
    // A body with a part that never matches (a lone surrogate under `v`): the tail kept is its other part's.
    // With `i` and `u` (or `v`), ſ and K (U+212A) are word characters for `\b` and `\B`; with one of the two, not.
    ("\\bs", "giu", "\u{212A}ſ \u{212A} ſ s", "_", "\u{212A}ſ \u{212A} _ _"),
    ("\\Bs", "giu", "\u{212A}ſ \u{212A} ſ s xs", "_", "\u{212A}_ \u{212A} ſ s x_"),
    ("s\\b", "giu", "ſ\u{212A} ſ sſ", "_", "ſ\u{212A} _ s_"),
    ("\\b", "giu", "aſ-\u{212A}", "|", "|aſ|-|\u{212A}|"),
    ("\\B", "giv", "ſ\u{212A}-ſ", "|", "ſ|\u{212A}-ſ"),
    ("\\bk\\b", "gi", "\u{212A} k", "_", "\u{212A} _"),
    ("\\bk", "giu", "ſ\u{212A} \u{212A} é k", "_", "ſ\u{212A} _ é _"),
    ("(?<=a)\\b", "giu", "a\u{212A} a-", "|", "a\u{212A} a|-"),
    ("\\bs", "gu", "\u{212A}s ſs", "_", "\u{212A}_ ſ_"),
    // A side known to be a word character needs no look-around: each combination, and where it is not known.
    ("a\\bb", "giu", "ab aſb", "_", "ab aſb"),
    ("s\\Bk", "giu", "sk ſ\u{212A} s-k", "_", "_ _ s-k"),
    ("s?\\bk", "giu", "ſ\u{212A} -k sk", "_", "ſ\u{212A} -_ sk"),
    ("(?:\\bs)+", "giu", "ſſ -ss \u{212A}s", "_", "_ſ -_s \u{212A}s"),
    ("x|\\bs", "giu", "\u{212A}s xs -ſ", "_", "\u{212A}s _s -_"),
    ("\\bs*", "giu", "\u{212A}ss -", "_", "_\u{212A}ss_ -"),
    ("-(?=s)\\bs", "giu", "-s -ſ", "_", "_ _"),
    ("s\\b(?:k)", "giu", "s\u{212A} sk", "_", "s\u{212A} sk"),
    ("(s)\\B", "giu", "ſ\u{212A} s-", "[$1]", "[ſ]\u{212A} s-"),
    ("k+\\b", "giu", "\u{212A}k\u{212A}ſ kk-", "_", "\u{212A}k\u{212A}ſ _-"),
    // The m flag's `^` and `$` (after or before `\n`, `\r`, U+2028 and U+2029) in and around look-arounds.
    ("(?<=^)\\w+", "gm", "ab cd\nef\r\ngh\u{2028}ij", "[$&]", "[ab] cd\n[ef]\r\n[gh]\u{2028}[ij]"),
    ("\\w+(?<=$)", "gm", "ab cd\nef\r\ngh\u{2029}ij", "[$&]", "ab [cd]\n[ef]\r\n[gh]\u{2029}[ij]"),
    ("(?<=^[a-c]{3})def", "gm", "abcdef\rbbbdef xabcdef", "_", "abc_\rbbb_ xabcdef"),
    ("(?<=^)\\w+(?<=$)", "gm", "ab\ncd ef\n\u{2028}gh", "[$&]", "[ab]\ncd ef\n\u{2028}[gh]"),
    ("^(?=a)", "gm", "ab\nba\r\nax", "_", "_ab\nba\r\n_ax"),
    ("x(?=$|\\r)", "gm", "x\rx\r\nxx\u{2028}x", "_", "_\r_\r\nx_\u{2028}_"),
    ("(?<=\\n)x", "gm", "\u{2028}x\nx\r\nx", "_", "\u{2028}x\n_\r\n_"),
    ("(?<=\\r)x", "gm", "\rx\u{2029}x", "_", "\r_\u{2029}x"),
    ("\\Bs$", "gimv", "ſs\nKs\u{2028}-s", "_", "ſ_\nK_\u{2028}-s"),
    ("(?<=\\n|^)a$", "gm", "a\na\u{2028}a b", "_", "_\n_\u{2028}a b"),
    ("(?<!^)b", "gm", "bb\nbb", "_", "b_\nb_"),
    // Capture groups inside look-arounds: the body's preferred match where it held (a lookbehind's read right
    // to left); a negative one's are undefined. In one-byte chunks a lookbehind's groups lie in the tail.
    ("(?<=(\\w{2}))def", "g", "abcdef xdef", "[$1]", "abc[bc] xdef"),
    ("(?<=(\\w(\\w)))d", "g", "abcd ad", "[$1|$2]", "abc[bc|c] ad"),
    ("a(?=(a+)(b))", "g", "xaaab", "[$1|$2]", "x[aa|b][a|b]ab"),
    ("x(?=(a+))", "g", "xaaaa xb xa", "[$1]", "[aaaa]aaaa xb [a]a"),
    ("(?=(?<w>\\w+))\\w", "g", "ab c", "[$<w>]", "[ab][b] [c]"),
    ("(?!(a))b", "g", "ab b", "[$1]", "a[] []"),
    ("(?=(a))*a", "g", "aa", "[$1]", "[][]"),
    ("(?:(?=(a))a|(b))+", "g", "aab", "[$1|$2]", "[|b]"),
    ("(?<=^(\\w{1,3}) )x", "gm", "ab x\ncd x", "[$1]", "ab [ab]\ncd [cd]"),
    ("(?<=(é{1,3}))x", "gu", "ééx éx", "[$1]", "éé[éé] é[é]"),
    ("(?<=(\\d{1,3})(\\d))x", "g", "123x 4x", "[$1|$2]", "123[12|3] 4x"),
    ("(?<=(?:(a)|(b)){1,3})c", "g", "abc bac", "[$1|$2]", "ab[a|] ba[|b]"),
    ("(?<=([ab]{1,2})\\D|(abc))\\w", "g", "abcdef", "[$1|$2]", "ab[a|][ab|]ef"),
    ("\\w(?=(\\w)(?<n>\\w)?)", "g", "abcd", "[$1|$<n>]", "[b|c][c|d][d|]d"),
    // Lookbehinds with no bound on their length: their automaton reads forward from the text's start, carried
    // from chunk to chunk.
    ("(?<=fo+)x", "g", "foox fx fooo x", "_", "foo_ fx fooo x"),
    ("(?<=<a[^>]*)href", "g", "<a class=\"x\" href=\"/\"> <b href=\"/\"> <a\nhref>", "HREF", "<a class=\"x\" HREF=\"/\"> <b href=\"/\"> <a\nHREF>"),
    ("(?<=^\\w+)def", "g", "abcdef xyzdef", "_", "abc_ xyzdef"),
    ("(?<=^\\w+)\\d", "gm", "ab1 cd2\nef3 4", "_", "ab_ cd2\nef_ 4"),
    ("(?<=[a|b|c]*)[^a|b|c]{3}", "g", "abcdef", "[$&]", "abc[def]"),
    ("(?<=\\w*)x", "g", "ab x x", "_", "ab _ _"),
    ("(?<!a+)b", "g", "aab b cb", "_", "aab _ c_"),
    ("(?<=(?:ab)+)c", "g", "ababc abc bc ac", "_", "abab_ ab_ bc ac"),
    ("(?<=é+)x", "gu", "ééx éx ex", "_", "éé_ é_ ex"),
    ("(?<=\\$\\d*\\.)\\d\\d", "g", "$12.50 and 3.45 $.99", "##", "$12.## and 3.45 $.##"),
    ("(?<=^(?:[^\\n]*\\n)*[^\\n]*)z", "g", "a\nb z", "_", "a\nb _"),
    // A rule that begins with a positive lookbehind: its automaton finds where a match may start (and, with
    // nothing else looking around, the rule's own automaton finds the match).
    ("(?<=x)", "g", "axbx", "[$&]", "ax[]bx[]"),
    ("(?<=a)b*", "g", "ab abb a", "[$&]", "a[b] a[bb] a[]"),
    ("(?<=\\$)\\d+(?=\\.)", "g", "$12.50 $7 $3.1", "[$&]", "$[12].50 $7 $[3].1"),
    ("(?<=é)\\w?", "gu", "éaé😀é", "[$&]", "é[a]é[]😀é[]"),
    ("(?<=<(\\w+) )[^>]*", "g", "<a href=x><b><img src=y>", "[$1:$&]", "<a [a:href=x]><b><img [img:src=y]>"),
    // Groups inside them: the body's reversed program reads back from where the lookbehind held, as far as its
    // preferred match goes on.
    ("(?<=(b+))c", "g", "abbbc bc c", "[$1]", "abbb[bbb] b[b] c"),
    ("(?<=^(\\w+))def", "g", "abcdefdef", "[$1]", "abc[abc][abcdef]"),
    ("(?<=(?<a>\\w)+)f", "u", "abcdef", "[$<a>]", "abcde[a]"),
    ("(?<=(\\w+?))x", "g", "abxcdx x", "[$1]", "ab[b]cd[d] x"),
    ("(?<=^(\\w+?))x", "gm", "ab\ncdx\nx", "[$1]", "ab\ncd[cd]\nx"),
    ("(?<=(a|ab)(c*))d", "g", "abcccd acd", "[$1|$2]", "abccc[ab|ccc] ac[a|c]"),
    ("(?<=\\b(\\w+)\\s+)is", "g", "this is what it is", "[$1]", "this [this] what it [it]"),
    // Annex B's quantified lookaheads: a minimum of 0 is no look-around, any other the look-around once.
    (".(?=Z)*", "g", "aZb", "[$&]", "[a][Z][b]"),
    (".(?=Z)+", "g", "aZbZZ", "[$&]", "[a]Z[b][Z]Z"),
    ("[a-e](?!Z){2}", "g", "aZbcZ", "[$&]", "aZ[b]cZ"),
    ("a(?=b){1,}?", "g", "ab ac", "_", "_b ac"),
    ("x(?!y)??", "g", "xy xz", "_", "_y _z"),
    ("(?:a(?=b)*)+b", "g", "aab ab", "_", "_ _"),
    ("(?<=[^\\n]{0,2}\\u2028[\\uDC00-\\uDE00]|\\D)\\B", "gv", "\r\n\u{2029}<中\u{2029}", "[$&]", "\r[]\n[]\u{2029}[]<[]中[]\u{2029}[]"),
    // Look-arounds inside look-arounds (V8's answers).
    (r#"(?<=ab(?=c)\wd)\w\w"#, "g", "abcdef abxdef abcdxy abcd", r#"[$&]"#, "abcd[ef] abxdef abcd[xy] abcd"),
    (r#"(?<=a(?=([^a]{2})d)\w{3})\w\w"#, "g", "abcdef acbdxy aaadxx", r#"<$1:$&>"#, "abcd<bc:ef> acbd<cb:xy> aaadxx"),
    (r#"(?<=a(?=([bc]{2}(?<!a{2}))d)\w{3})\w\w"#, "g", "abcdef acbdxy aabdxx", r#"<$1:$&>"#, "abcd<bc:ef> acbd<cb:xy> aabdxx"),
    (r#"^faaao?(?<=^f[oa]+(?=o))"#, "g", "faaao", r#"[$&]"#, "[faaa]o"),
    (r#"(?<=\B)(?<=c(?<=\w))\w{3}"#, "g", "abcdef c def ccdef", r#"[$&]"#, "abc[def] c def c[cde]f"),
    (r#"a(?=b(?!c))"#, "g", "abc abd ab a", r#"[$&]"#, "abc [a]bd [a]b a"),
    (r#"(?<!(?=x)\w)y"#, "g", "xy zy y", r#"[$&]"#, "xy z[y] [y]"),
    (r#"(?=a(?=(b)))(\w)"#, "g", "ab ac abab", r#"<$1$2>"#, "<ba>b ac <ba>b<ba>b"),
    (r#"(?=\bs)\w+"#, "giu", "so ſo as ſ s", r#"[$&]"#, "[so] [ſo] as [ſ] [s]"),
    (r#"(?<=^a(?=b))b"#, "gm", "ab\nab\u{2028}ab xab", r#"[$&]"#, "a[b]\na[b]\u{2028}a[b] xab"),
    (r#"(?<=.(?=x))x"#, "g", "😀x ax", r#"[$&]"#, "😀[x] a[x]"),
    (r#"(?<=(?<!b)a(?=(\w)))\w"#, "g", "aa ba ac", r#"<$1$&>"#, "a<aa> ba a<cc>"),
    (r#"(?<=(a(?<=(\w)a)))b"#, "g", "ab aab cab", r#"<$1.$2>"#, "ab aa<a.a> ca<a.c>"),
    (r#"(?<=a(?!b[^x]*x)\w*)z"#, "g", "abyz aqz abyxz", r#"[$&]"#, "abyz aq[z] abyxz"),
];

#[test]
fn look_arounds_give_node_results_whole_and_in_one_byte_chunks() {
    for &(source, flags, input, replace, want) in LOOK_AROUND_CASES {
        let rule = Rule::regex(source, flags, RuleReplacement::Text(replace.into()))
            .unwrap_or_else(|e| panic!("/{source}/{flags}: {e}"));
        let rules = [rule];
        assert_eq!(whole(input, &rules), want, "/{source}/{flags} whole on {input:?}");
        let got = String::from_utf8(one_byte_chunks(input.as_bytes(), &rules)).unwrap();
        assert_eq!(got, want, "/{source}/{flags} in one-byte chunks on {input:?}");
    }
}

/// `(?:a+)+c` run from every position of a long run of `a` would read on to the cap from each (V8 backtracks
/// exponentially): the runs meet in one automaton state, and each goes on from where the last stopped
/// (`look_around::LookMemo`), so the body costs a few steps per byte.
#[test]
fn lookaheads_that_read_far_from_every_position_stay_linear() {
    // With a group inside, a run reads on past the body's first match, to where its preferred one ends.
    for pattern in ["(?=(?:a+)+c)a|(?<!a)b", "(?=(a+)c)a|(?<!a)b"] {
        let rule = text_rule(pattern, "g", "x");
        let input = "a".repeat(300_000) + "b";
        let (tx, rx) = std::sync::mpsc::channel();
        let sent = input.clone();
        std::thread::spawn(move || tx.send(whole(&sent, &[rule])).unwrap());
        let out = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the lookahead rule did not finish");
        assert_eq!(out, input, "{pattern}");
    }
}

/// `(?<=href=")[^"]*` without its lookbehind matches from every position to the end of a text without `"`:
/// skipping to where that match starts read on to the end from every position (64 KiB took 6.7 s in
/// release). The skip gives up after a bounded read, so the text is read a bounded number of times.
#[test]
fn skips_over_long_matches_of_the_pattern_without_its_look_arounds_stay_linear() {
    let rule = text_rule(r#"(?<=href=")[^"]*"#, "g", "x");
    let input = "<p>no quote here, just words and <b>tags</b>.</p>\n".repeat(6000) + r#"<a href="/y">"#;
    let want = input.replace(r#"href="/y""#, r#"href="x""#);
    let (tx, rx) = std::sync::mpsc::channel();
    let sent = input.clone();
    std::thread::spawn(move || tx.send(whole(&sent, &[rule])).unwrap());
    let out = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the lookbehind rule did not finish");
    assert_eq!(out, want);
}

/// The same rule fed in 4 KiB chunks: every start's lookahead waits on the next chunk, and the one most
/// preferred stands for all (waiting threads piled up, one per position: 64 KiB took 28 s in release).
#[test]
fn lookaheads_waiting_on_the_next_chunk_stay_linear() {
    let rule = text_rule("(?=(?:a+)+c)a", "g", "x");
    let input = "a".repeat(128 * 1024) + "b";
    let (tx, rx) = std::sync::mpsc::channel();
    let sent = input.clone();
    std::thread::spawn(move || {
        let cuts: Vec<usize> = (1..sent.len() / 4096 + 1).map(|i| i * 4096).collect();
        tx.send(chunked(sent.as_bytes(), &[rule], &cuts, DEFAULT_MAX_MATCH_BYTES)).unwrap()
    });
    let out = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the lookahead rule did not finish");
    assert_eq!(out, input.as_bytes());
}

/// Rules that are a middle of one length between look-arounds (`look_rule::match_between_edges`) cut at every
/// place and at every pair of places: a middle whose match the data's end leaves undecided (`qy` of `qYq|y `,
/// reported only with the byte after it) is tried where it starts, not given up on.
#[test]
fn edge_look_rules_give_the_whole_answer_however_cut() {
    let cases = [
        ("q[ax-zb](?=\\s+)", "g", "qYqy tqaqy  qz"),
        ("foo(?!bar)", "g", "foobar foobaz foo"),
        ("(?<![\\w.])cdn\\.example\\.com(?=/)", "g", "cdn.example.com/ x.cdn.example.com/ (cdn.example.com/a"),
        ("\\bfoo\\b", "giu", "foo Kfoo fooſ FOO"),
        ("(?<=a)(?!b)", "g", "abacab"),
    ];
    for (source, flags, input) in cases {
        let rules = [Rule::regex(source, flags, RuleReplacement::Text("[$&]".into())).unwrap()];
        let want = whole(input, &rules);
        assert!(want.contains('['), "/{source}/{flags} matches nothing in {input:?}");
        let len = input.len();
        for a in 0..=len {
            for b in a..=len {
                let got =
                    String::from_utf8(chunked(input.as_bytes(), &rules, &[a, b], DEFAULT_MAX_MATCH_BYTES)).unwrap();
                assert_eq!(got, want, "/{source}/{flags} on {input:?} cut at {a} and {b}");
            }
        }
    }
}

/// Look-arounds inside look-arounds read the stage's tail and the hay as one text: a cut anywhere gives the
/// whole answer (the lookbehind's context, the lookahead inside it and their groups on either side of it).
#[test]
fn nested_look_arounds_give_the_whole_answer_however_cut() {
    let nested = LOOK_AROUND_CASES.iter().skip_while(|case| case.0 != r"(?<=ab(?=c)\wd)\w\w");
    let mut checked = 0;
    for &(source, flags, input, replace, want) in nested {
        let rules = [Rule::regex(source, flags, RuleReplacement::Text(replace.into())).unwrap()];
        let len = input.len();
        for a in 0..=len {
            for b in a..=len {
                let got =
                    String::from_utf8(chunked(input.as_bytes(), &rules, &[a, b], DEFAULT_MAX_MATCH_BYTES)).unwrap();
                assert_eq!(got, want, "/{source}/{flags} on {input:?} cut at {a} and {b}");
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 14);
}

/// A lookbehind with a look-around inside has no automaton to carry over the text: its body's run reads back
/// 1024 bytes at most, and where it is still alive there the lookbehind fails, whole or streamed.
#[test]
fn a_lookbehind_with_a_look_around_inside_reads_back_1024_bytes_at_most() {
    let rules = [text_rule("(?<=x[^y]*(?=z))z", "g", "[$&]")];
    let (near, far) = ("q".repeat(1000), "q".repeat(1100));
    let input = format!("x{near}z x{far}z");
    let want = format!("x{near}[z] x{far}z");
    assert_eq!(whole(&input, &rules), want);
    for cuts in [vec![7, 500, 1030, 1900], (0..input.len()).collect()] {
        let out = chunked(input.as_bytes(), &rules, &cuts, DEFAULT_MAX_MATCH_BYTES);
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }
}

#[test]
fn look_arounds_the_engine_cannot_run_are_refused_by_name() {
    for (source, flags, what) in [
        ("(?<=[^a]*)b", "", "lookbehind that can match more than 1024 bytes that may begin inside a character"),
        ("(?<=\\s*)b|^c", "m", "lookbehind that can match more than 1024 bytes that may begin with \\n"),
        ("(?<=\\uDE00)a", "", "lone low surrogates"),
        // V8 throws a SyntaxError for these: Annex B repeats lookaheads only, and only without `u` or `v`.
        ("(?!a){2,1}", "", "numbers out of order in {} quantifier at offset 5"),
        ("(?<=a)*", "", "invalid quantifier at offset 6"),
        ("(?<!a){1}", "", "invalid quantifier at offset 6"),
        ("(?=a)+", "u", "invalid quantifier at offset 5"),
        ("(?!a)?", "v", "invalid quantifier at offset 5"),
    ] {
        let err = Rule::regex(source, flags, RuleReplacement::Text(String::new())).unwrap_err().to_string();
        assert!(err.contains(what), "/{source}/{flags}: {err}");
    }
}

#[test]
fn rejected_features_name_themselves() {
    for (source, feature) in [("(?<=[^a]*)b", "lookbehind"), ("(a)\\1", "backreference")] {
        let err = Rule::regex(source, "g", RuleReplacement::Text(String::new())).unwrap_err().to_string();
        assert!(err.contains(feature), "{source}: {err}");
    }
    let err = Rule::regex("[[a-c]--a]", "giv", RuleReplacement::Text(String::new())).unwrap_err().to_string();
    assert!(err.contains("subtracted with the `i` flag"), "{err}");
    assert!(Rule::regex("\\p{RGI_Emoji}", "gv", RuleReplacement::Text(String::new())).is_ok());
}

#[test]
fn pathological_pattern_runs_in_linear_time() {
    let rule = text_rule("(a+)+$", "g", "x");
    let input = "a".repeat(100_000) + "!";
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(whole(&input, &[rule])).unwrap());
    // A backtracking engine needs ~2^100000 steps here; this one finishes at once.
    let out = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("(a+)+$ did not finish");
    assert_eq!(out.len(), 100_001);
}

/// Every start outgrows the cap: trying them one by one cost `n * cap` steps (a 200 KB body took 95 s).
#[test]
fn starts_that_all_outgrow_the_cap_cost_linear_time() {
    let rules = [text_rule("[^b]+", "g", "X"), text_rule("[\\s\\S]*?</body>", "g", "[$&]")];
    let cap = DEFAULT_MAX_MATCH_BYTES;
    let input = "a".repeat(256 << 10);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let whole = rewrite_bytes(input.as_bytes(), &rules[..1], "l", cap).unwrap();
        let mut rewriter = Rewriter::new(&rules, "l", cap);
        let mut streamed = Vec::new();
        for chunk in input.as_bytes().chunks(4096) {
            rewriter.push(chunk, &mut streamed).unwrap();
        }
        rewriter.finish(&mut streamed).unwrap();
        tx.send((input, whole, streamed, rewriter.abandoned_matches())).unwrap();
    });
    let (input, whole, streamed, abandoned) =
        rx.recv_timeout(std::time::Duration::from_secs(60)).expect("abandoning every start took too long");
    // Each start older than the cap is abandoned; the first that fits matches to the end.
    let kept = input.len() - cap;
    assert_eq!(whole.len(), kept + 1);
    assert_eq!(&whole[kept..], b"X");
    assert_eq!(streamed, whole, "4 KiB chunks differ from the whole body");
    // The first rule abandons every start older than the cap, the second nearly as many of its input's.
    assert!(abandoned >= kept as u64 + (kept - cap) as u64, "abandoned {abandoned}");
}

/// A match that stays pending over many chunks is read on from where the last chunk left it, with the
/// automata's line and low-surrogate views of the held bytes kept: tiny chunks give the whole body's result
/// (the 1-byte chunks here read the held bytes again at each chunk before: quadratic in what is held).
#[test]
fn pending_matches_read_on_chunk_by_chunk_give_the_whole_body_result() {
    let rules = [
        Rule::snippet("<script></script>"),
        // The line view, and the line view with the low-surrogate view on top (`[^>😀]` without `u`).
        text_rule("<a[^>]*>$", "gm", "[A]"),
        text_rule("x[^>\u{1F600}]*>$", "gm", "[X]"),
        text_rule("q[^>\u{1F600}]*>", "g", "[Q]"),
    ];
    let held = |unit: &str, bytes: usize| unit.repeat(bytes / unit.len());
    // Without `u`, `[^>😀]` leaves out the halves of 😀 (D83D, DE00): 😁 (D83D DE01) and 𐈀 (D800 DE00) end a
    // run, 🎉 (D83C DF89) and 𝒜 (D835 DC9C) do not.
    let long = |astral: &str| format!("é{astral}\r\u{2028}€\n{}", "z".repeat(20));
    let rest = format!(
        "<a {}>\r\n x{}>\u{2029} q{}\u{10200}> q{}>",
        held(&long("😁"), 20_000),
        held(&long("🎉"), 20_000),
        held("🎉ab𝒜", 10_000),
        held("🎉ab𝒜", 10_000)
    );
    let closing = format!("<html><body class=\"{}\">{rest}", held("c", 30_000));
    // The `<body` candidate outgrows the cap and is given up; the others match.
    let open = format!("<html><body class=\"{}\" {rest}", held("c", 70_000));
    for page in [&closing, &open] {
        let whole = rewrite_bytes(page.as_bytes(), &rules, "l", DEFAULT_MAX_MATCH_BYTES).unwrap();
        for size in [1, 3, 16, 4096] {
            let cuts: Vec<usize> = (size..page.len()).step_by(size).collect();
            let out = chunked(page.as_bytes(), &rules, &cuts, DEFAULT_MAX_MATCH_BYTES);
            assert!(out == whole, "{size}-byte chunks differ from the whole body ({} bytes)", page.len());
        }
    }
    let whole =
        String::from_utf8(rewrite_bytes(closing.as_bytes(), &rules, "l", DEFAULT_MAX_MATCH_BYTES).unwrap()).unwrap();
    for replaced in ["\"><script></script>", "[A]", "[X]", "[Q]"] {
        assert!(whole.contains(replaced), "{replaced} in the closing page");
    }
}

#[test]
fn held_back_bytes_stay_under_the_cap() {
    let rules = [text_rule("<body[^>]*>", "i", "$&!"), text_rule("\\b[a-z]+-[0-9]{3,}\\b", "g", "#")];
    let cap = 1024;
    let mut rewriter = Rewriter::new(&rules, "l", cap);
    let chunk = "<p>text item-1234 <bod".repeat(200);
    let mut out = Vec::new();
    for _ in 0..200 {
        out.clear();
        rewriter.push(chunk.as_bytes(), &mut out).unwrap();
        assert!(rewriter.held_bytes() <= 2 * (cap + 2), "held {}", rewriter.held_bytes());
    }
}

/// An unbounded lookbehind's groups are read back at most 1024 bytes (the stage keeps that much of its text):
/// further, whole or in chunks alike, the match is given up on and counted, as an over-long one is.
#[test]
fn a_lookbehinds_groups_further_back_than_1024_bytes_leave_the_match_as_it_is() {
    let rules = [text_rule("(?<=(b+))c", "g", "[$1]")];
    let (near, far) = ("b".repeat(1000), "b".repeat(1100));
    let input = format!("a{near}c a{far}c");
    let want = format!("a{near}[{near}] a{far}c");
    for cuts in [vec![7, 500, 1030, 1900], (0..input.len()).collect()] {
        let mut rewriter = Rewriter::new(&rules, "l", DEFAULT_MAX_MATCH_BYTES);
        let mut out = Vec::new();
        let mut at = 0;
        for cut in cuts {
            rewriter.push(&input.as_bytes()[at..cut], &mut out).unwrap();
            at = cut;
        }
        rewriter.push(&input.as_bytes()[at..], &mut out).unwrap();
        rewriter.finish(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), want);
        assert_eq!(rewriter.abandoned_matches(), 1);
    }
    assert_eq!(whole(&input, &rules), want);
}

#[test]
fn an_overlong_candidate_is_abandoned_and_counted() {
    let rules = [text_rule("<a[^>]*>", "g", "[A]")];
    let input = format!("<a{}<a>", "x".repeat(100));
    let out = chunked(input.as_bytes(), &rules, &[7, 50], 32);
    assert_eq!(String::from_utf8(out).unwrap(), format!("<a{}[A]", "x".repeat(100)));
    let mut rewriter = Rewriter::new(&rules, "l", 32);
    let mut out = Vec::new();
    rewriter.push(input.as_bytes(), &mut out).unwrap();
    rewriter.finish(&mut out).unwrap();
    assert_eq!(rewriter.abandoned_matches(), 1);
}

struct Upper;
impl ReplaceFn for Upper {
    fn replace(&self, call: &ReplaceCall) -> Result<String, String> {
        Ok(format!("{}{}", call.whole.to_uppercase(), call.groups.len()))
    }
}

#[test]
fn function_replacements_get_match_and_groups() {
    let rule = Rule::regex("(b)(x)?", "g", RuleReplacement::Function(std::sync::Arc::new(Upper))).unwrap();
    assert_eq!(whole("abcb", &[rule]), "aB2cB2");
}

/// A replacement function that records what it is called with and puts `with` in place of the match.
#[derive(Default)]
struct Recorder {
    with: &'static str,
    calls: std::sync::Mutex<Vec<Call>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Call {
    whole: String,
    offset: usize,
    names: Option<Vec<Option<String>>>,
}

impl Recorder {
    fn rule(source: &str, flags: &str, with: &'static str) -> (Rule, std::sync::Arc<Recorder>) {
        let recorder = std::sync::Arc::new(Recorder { with, ..Recorder::default() });
        let rule = Rule::regex(source, flags, RuleReplacement::Function(recorder.clone())).unwrap();
        (rule, recorder)
    }

    fn take(&self) -> Vec<Call> {
        std::mem::take(&mut self.calls.lock().unwrap())
    }
}

impl ReplaceFn for Recorder {
    fn replace(&self, call: &ReplaceCall) -> Result<String, String> {
        let names = call.names.map(|names| names.iter().map(|n| n.map(str::to_string)).collect());
        self.calls.lock().unwrap().push(Call { whole: call.whole.to_string(), offset: call.offset, names });
        Ok(self.with.to_string())
    }
}

/// JS's offset of each character of `input` that `is_match` selects: its UTF-16 index.
fn utf16_offsets(input: &str, is_match: impl Fn(char) -> bool) -> Vec<(String, usize)> {
    input
        .char_indices()
        .filter(|&(_, c)| is_match(c))
        .map(|(i, c)| (c.to_string(), input[..i].encode_utf16().count()))
        .collect()
}

/// Every chunking of `len` bytes worth trying: none, one cut anywhere, two cuts anywhere, 1-byte chunks.
fn cut_lists(len: usize) -> Vec<Vec<usize>> {
    let mut lists = vec![vec![], (0..len).collect()];
    for a in 0..=len {
        lists.push(vec![a]);
        lists.extend((a..=len).map(|b| vec![a, b]));
    }
    lists
}

#[test]
fn function_offsets_are_utf16_indexes_in_each_rules_input_whatever_the_chunking() {
    // 1-, 2-, 3- and 4-byte characters (4 bytes: two UTF-16 units), CRLF, and replacements that
    // change the length, so that the second rule's offsets are in the first rule's output.
    let input = "aé€😀a\r\nxé😀€a 中文a😀z";
    let (first, first_calls) = Recorder::rule("[a😀]", "gu", "ü😀x");
    let (second, second_calls) = Recorder::rule("€|中|x", "g", "€€");
    let rules = [first, second];
    let between: String =
        input.chars().map(|c| if matches!(c, 'a' | '😀') { "ü😀x".into() } else { c.to_string() }).collect();
    let output: String =
        between.chars().map(|c| if matches!(c, '€' | '中' | 'x') { "€€".into() } else { c.to_string() }).collect();
    let want_first = utf16_offsets(input, |c| matches!(c, 'a' | '😀'));
    let want_second = utf16_offsets(&between, |c| matches!(c, '€' | '中' | 'x'));
    let byte_offsets: Vec<usize> =
        input.char_indices().filter(|&(_, c)| matches!(c, 'a' | '😀')).map(|(i, _)| i).collect();
    assert_ne!(
        want_first.iter().map(|w| w.1).collect::<Vec<_>>(),
        byte_offsets,
        "offsets must differ from byte offsets"
    );
    let seen = |calls: Vec<Call>| calls.into_iter().map(|c| (c.whole, c.offset)).collect::<Vec<_>>();
    assert_eq!(whole(input, &rules), output);
    assert_eq!(seen(first_calls.take()), want_first, "whole input, first rule");
    assert_eq!(seen(second_calls.take()), want_second, "whole input, second rule");
    for cuts in cut_lists(input.len()) {
        let out = chunked(input.as_bytes(), &rules, &cuts, DEFAULT_MAX_MATCH_BYTES);
        assert_eq!(String::from_utf8(out).unwrap(), output, "cuts {cuts:?}");
        assert_eq!(seen(first_calls.take()), want_first, "cuts {cuts:?}, first rule");
        assert_eq!(seen(second_calls.take()), want_second, "cuts {cuts:?}, second rule");
    }
}

#[test]
fn function_offsets_count_invalid_utf8_as_the_replacement_characters_it_decodes_to() {
    // A stray byte, a cut 3-byte and 4-byte character, an overlong, a surrogate, a lone continuation.
    let input: &[u8] = b"a\xffa\xe2\x82a\xf0\x9f\x98a\xc0\x80a\xed\xa0\x80a\x80a\xe2\x82\xac\xf0\x9f\x98\x80a\xe2";
    let (rule, calls) = Recorder::rule("a", "g", "b");
    let want: Vec<usize> = (0..input.len())
        .filter(|&i| input[i] == b'a')
        .map(|i| String::from_utf8_lossy(&input[..i]).encode_utf16().count())
        .collect();
    assert_eq!(want.len(), 8);
    for cuts in cut_lists(input.len()) {
        chunked(input, std::slice::from_ref(&rule), &cuts, DEFAULT_MAX_MATCH_BYTES);
        let offsets: Vec<usize> = calls.take().into_iter().map(|c| c.offset).collect();
        assert_eq!(offsets, want, "cuts {cuts:?}");
    }
}

#[test]
fn function_calls_name_the_groups_when_the_pattern_names_any() {
    let (named, named_calls) = Recorder::rule("(?<x>a)(?<y>b)?|(c)", "g", "");
    let (plain, plain_calls) = Recorder::rule("(a)(b)?", "g", "");
    whole("ac ab", &[named, plain]);
    let names = Some(vec![Some("x".to_string()), Some("y".to_string()), None]);
    let calls = named_calls.take();
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().all(|c| c.names == names), "{calls:?}");
    // The first rule removed every a: the second has nothing to match.
    assert!(plain_calls.take().is_empty());
    let (plain, plain_calls) = Recorder::rule("(a)(b)?", "g", "");
    whole("ab", &[plain]);
    assert_eq!(plain_calls.take(), vec![Call { whole: "ab".into(), offset: 0, names: None }]);
}

/// Reference: JS's replace loop driven by `meta::Regex` over the whole input (same translated pattern
/// and template as the engine, so it checks the streaming search, not the translation). Without `u` it
/// steps by UTF-16 unit and writes the result as JavaScript's string would be (see `hay::unit_text`).
fn reference(input: &str, source: &str, flags: &str, replace: &str) -> String {
    use super::hay::{low_half, resolve_surrogates, unit_text};
    let parsed = js_regex::parse_flags(flags).unwrap();
    let units = !parsed.unicode;
    let pattern = js_regex::translate(source, &parsed).unwrap();
    // The engine's reading of the text: its line view (see `lines`), which spans map back to one to one.
    let re = meta::Regex::builder()
        .configure(meta::Regex::config().utf8_empty(false).line_terminator(super::lines::LINE_TERMINATOR))
        .build_from_hir(&super::lines::line_view_hir(&parse(&pattern).unwrap()))
        .unwrap();
    let template = {
        let hir = parse(&pattern).unwrap();
        let (count, named) = group_info(&hir);
        Template::parse(replace, count, named).unwrap()
    };
    let hay = input.as_bytes();
    let mut view = Vec::new();
    super::lines::line_view(hay, &mut view);
    let text =
        |from: usize, to: usize| if units { unit_text(hay, from, to).into_owned() } else { hay[from..to].to_vec() };
    let (mut out, mut emitted, mut last_index) = (Vec::new(), 0, 0);
    let mut caps = re.create_captures();
    while last_index <= hay.len() {
        re.search_captures(&Input::new(&view).range(last_index..), &mut caps);
        let Some(m) = caps.get_match() else { break };
        let boundary = m.start() == hay.len() || input.is_char_boundary(m.start());
        if !(boundary || (units && low_half(hay, m.start()))) {
            // JS never sees a position inside a character (but for a low half without `u`).
            last_index = m.start() + 1;
            continue;
        }
        out.extend(text(emitted, m.start()));
        let groups: Vec<Option<Vec<u8>>> =
            (0..caps.group_len()).map(|i| caps.get_group(i).map(|s| text(s.start, s.end))).collect();
        let names: Vec<Option<&str>> = caps.group_info().pattern_names(regex_automata::PatternID::ZERO).collect();
        template.expand(
            &text(m.start(), m.end()),
            |i| groups[i].as_deref(),
            |n| names.iter().position(|x| *x == Some(n)).and_then(|i| groups[i].as_deref()),
            &mut out,
        );
        emitted = m.end();
        last_index = match hay.get(m.end()) {
            _ if !m.is_empty() => m.end(),
            Some(0xF0..=0xF4) if units => m.end() + 3,
            Some(&b) => m.end() + super::hay::utf8_width(b),
            None => m.end() + 1,
        };
        if !parsed.global {
            break;
        }
    }
    out.extend(text(emitted, hay.len()));
    resolve_surrogates(&mut out, 0, false);
    String::from_utf8(out).unwrap()
}

/// Compiling DFAs dominates a test case: each (pattern, replacement) pair is compiled once.
fn cached_rule(pattern: usize, replacement: usize) -> Rule {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static CACHE: Mutex<Option<HashMap<(usize, usize), Rule>>> = Mutex::new(None);
    let mut cache = CACHE.lock().unwrap();
    let (source, flags) = PATTERNS[pattern];
    cache
        .get_or_insert_with(HashMap::new)
        .entry((pattern, replacement))
        .or_insert_with(|| text_rule(source, flags, REPLACEMENTS[replacement]))
        .clone()
}

const PATTERNS: &[(&str, &str)] = &[
    ("abc|a", "g"),
    ("a|abc", "g"),
    ("ab*", "g"),
    ("ab*?", "g"),
    ("a*", "g"),
    ("x*", "g"),
    ("b*", ""),
    ("^a", "g"),
    ("^a", "gm"),
    ("a$", "g"),
    ("a$", "gm"),
    ("^", "gm"),
    ("$", "gm"),
    ("\\ba", "g"),
    ("a\\b", "g"),
    ("\\Bb", "g"),
    ("(a)(b)?", "g"),
    ("(?<x>a+)c", "g"),
    ("a.c", "g"),
    ("a.c", "gs"),
    ("[^b]+", "g"),
    ("é+", "g"),
    ("é|a", "gi"),
    ("A+B", "gi"),
    ("(ab|a)*c", "g"),
    ("a{2,3}", "g"),
    ("a{2,3}?", "g"),
    ("\\d+", "g"),
    ("\\s+", "g"),
    ("<b[^>]*>", "gi"),
    ("a\\nb", "g"),
    ("\\w+", "g"),
    ("c", ""),
    // Captures whose search needs the byte before the match.
    ("\\b(a)", "g"),
    ("^(a|b)", "gm"),
    // Runs that match early and then live on: merged runs with different match histories.
    ("a.*c|a", "g"),
    ("[ab]+c|b", "g"),
    // Characters of 3 and 4 bytes, and JS line terminators beyond \n and \r.
    ("€+|한", "g"),
    ("[€😀]", "gu"),
    ("😀+", "gu"),
    ("😀|한+", "g"),
    ("[^a]", "g"),
    ("^.", "gm"),
    (".$", "gm"),
    ("\\s", "g"),
    ("(€)(한)?", "g"),
    // JS line terminators for multi-line anchors: \r, \n, \u2028, \u2029, and the position inside \r\n.
    ("\\w*$", "gm"),
    ("\\r^\\n|\\u2028^", "gm"),
    ("(^|b)(\\r?)$", "gm"),
    ("[\\s\\S]$|^[\\s\\S]", "gm"),
];
const REPLACEMENTS: &[&str] = &["", "-", "[$&]", "$1$1", "<$<x>>", "$$"];

/// Characters of 1 to 4 bytes (é ß, € 한, 😀) and every JS line terminator (\u2028, \u2029; \u0085 is
/// none in JS), so that cuts fall inside characters.
const ALPHABET: &[&str] = &[
    "a", "b", "c", "é", "A", "B", " ", "\n", "\r\n", "<b>", "1", "x", "ß", "€", "한", "😀", "😁", "🎉", "\u{2028}",
    "\u{2029}", "\u{0085}", "\r",
];

fn alphabet_input() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(ALPHABET), 0..40).prop_map(|parts| parts.concat())
}

/// A few kilobytes: longer runs and more chunk edges per input.
fn long_alphabet_input() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(ALPHABET), 500..1500).prop_map(|parts| parts.concat())
}

/// Cut positions anywhere in `len` bytes, inside multi-byte characters too, sorted.
fn cut_positions(picks: &[prop::sample::Index], len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = picks.iter().map(|i| i.index(len + 1)).collect();
    cuts.sort_unstable();
    cuts
}

/// The chunking properties: whole, cut at `cuts` and in one-byte chunks give the reference's result;
/// with a small cap the result may differ from the reference, but never with the chunking.
fn check_chunkings(
    input: &str,
    rule_picks: &[(usize, usize)],
    cuts: &[prop::sample::Index],
    max_match: usize,
) -> Result<(), TestCaseError> {
    let rules: Vec<Rule> = rule_picks.iter().map(|&(p, r)| cached_rule(p, r)).collect();
    let cuts = cut_positions(cuts, input.len());
    let big = DEFAULT_MAX_MATCH_BYTES;
    let whole_out = rewrite_bytes(input.as_bytes(), &rules, "l", big).unwrap();
    prop_assert_eq!(&chunked(input.as_bytes(), &rules, &cuts, big), &whole_out);
    prop_assert_eq!(&one_byte_chunks(input.as_bytes(), &rules), &whole_out);
    let expected = rule_picks
        .iter()
        .fold(input.to_string(), |s, &(p, r)| reference(&s, PATTERNS[p].0, PATTERNS[p].1, REPLACEMENTS[r]));
    prop_assert_eq!(String::from_utf8(whole_out).unwrap(), expected);
    let capped = rewrite_bytes(input.as_bytes(), &rules, "l", max_match).unwrap();
    prop_assert_eq!(chunked(input.as_bytes(), &rules, &cuts, max_match), capped);
    Ok(())
}

proptest! {
    // PROPTEST_CASES=N runs a longer search locally.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn chunking_never_changes_the_result(
        input in alphabet_input(),
        rule_picks in prop::collection::vec((0..PATTERNS.len(), 0..REPLACEMENTS.len()), 1..4),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        max_match in prop::sample::select(vec![4usize, 64, DEFAULT_MAX_MATCH_BYTES]),
    ) {
        check_chunkings(&input, &rule_picks, &cuts, max_match)?;
    }

    /// Inputs of a few kilobytes cut anywhere, one-byte chunks included, against the reference.
    #[test]
    fn long_inputs_cut_anywhere_give_the_whole_body_result(
        input in long_alphabet_input(),
        rule_picks in prop::collection::vec((0..PATTERNS.len(), 0..REPLACEMENTS.len()), 1..4),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
        max_match in prop::sample::select(vec![4usize, 64, DEFAULT_MAX_MATCH_BYTES]),
    ) {
        check_chunkings(&input, &rule_picks, &cuts, max_match)?;
    }

    /// The one-pass sweep settles starts exactly as trying each one in turn does, abandoned ones
    /// included, whatever the cap.
    #[test]
    fn sweep_agrees_with_trying_each_start(
        input in alphabet_input(),
        pattern in 0..PATTERNS.len(),
        from_pick in 0usize..64,
        before in prop::option::of(prop::sample::select(vec![b'a', b' ', b'\n', b'\r', 0xC3])),
        last in any::<bool>(),
        max_match in prop::sample::select(vec![1usize, 2, 3, 5, 8, 64]),
    ) {
        let rule = cached_rule(pattern, 0);
        // The sweep is the regex stages' own: literal patterns run as literal rules.
        let Engine::Regex(re) = &rule.inner.engine else { return Ok(()) };
        let bytes = input.as_bytes();
        let from = from_pick.min(bytes.len());
        let (naive, swept, staged) = super::next_match::first_viable_three_ways(re, bytes, before, from, last, max_match);
        prop_assert_eq!(&naive.0, &swept.0, "pattern {:?} input {:?} from {} last {} cap {}", PATTERNS[pattern], input, from, last, max_match);
        prop_assert_eq!(naive.1, swept.1, "abandoned count");
        // A stage's own search (unanchored scan, prefix DFA at the end of the data) lands on the same
        // answer; it may skip counting starts that died after outgrowing the cap.
        prop_assert_eq!(&staged, &naive.0, "stage search: pattern {:?} input {:?} from {} last {} cap {}", PATTERNS[pattern], input, from, last, max_match);
    }

    #[test]
    fn utf16_counter_agrees_with_lossy_decoding_at_every_cut(
        parts in prop::collection::vec(prop_oneof![
            prop::sample::select(vec!["a", "é", "€", "中", "😀", "\r\n"]).prop_map(|s| s.as_bytes().to_vec()),
            prop::collection::vec(any::<u8>(), 1..3),
            prop::sample::select(vec![0x80u8, 0xbf, 0xc0, 0xc2, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff]).prop_map(|b| vec![b]),
        ], 0..20),
        cuts in prop::collection::vec(0usize..60, 0..8),
    ) {
        let input = parts.concat();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(input.len())).collect();
        cuts.sort_unstable();
        cuts.push(input.len());
        let mut counter = Utf16Counter::default();
        let mut at = 0;
        for cut in cuts {
            counter.feed(&input[at..cut]);
            at = cut;
            let want = String::from_utf8_lossy(&input[..at]).encode_utf16().count();
            prop_assert_eq!(counter.units(), want, "input {:?} up to {}", input, at);
        }
    }

    #[test]
    fn link_rewrite_is_chunking_invariant(
        parts in prop::collection::vec(prop::sample::select(vec![
            "'", "\"", "//", "/", ".", "http://", "https://", "http:\\/\\/", "ex.com", "ex.com:1", ":", " ", "x", "\n", "#h", "?q", "é",
        ]), 0..30),
        cuts in prop::collection::vec(0usize..80, 0..10),
    ) {
        let input = parts.concat();
        let rules = [Rule::links("ex.com", "http")];
        let mut cuts = cuts;
        cuts.sort_unstable();
        let whole_out = rewrite_bytes(input.as_bytes(), &rules, "local:3000", DEFAULT_MAX_MATCH_BYTES).unwrap();
        prop_assert_eq!(&chunked(input.as_bytes(), &rules, &cuts, DEFAULT_MAX_MATCH_BYTES), &whole_out);
    }
}

/// A bounded rule for the hold-back tests, with its longest match in bytes and two independent
/// descriptions of its matches.
struct Bounded {
    rule: Rule,
    longest: usize,
    /// Some match starts with these bytes (a whole match included).
    starts_a_match: fn(&[u8]) -> bool,
    is_a_match: fn(&[u8]) -> bool,
}

/// Compiled once: compiling DFAs dominates a test case.
fn bounded_rules() -> &'static [Bounded] {
    static RULES: std::sync::OnceLock<Vec<Bounded>> = std::sync::OnceLock::new();
    RULES.get_or_init(|| {
        let same = || RuleReplacement::Text("$&".into());
        vec![
            Bounded {
                rule: Rule::regex("abc", "g", same()).unwrap(),
                longest: 3,
                starts_a_match: |s| b"abc".starts_with(s),
                is_a_match: |s| s == b"abc",
            },
            Bounded {
                rule: Rule::regex("a[0-9]{2,5}", "g", same()).unwrap(),
                longest: 6,
                starts_a_match: |s| s.len() <= 6 && s.first() == Some(&b'a') && s[1..].iter().all(u8::is_ascii_digit),
                is_a_match: |s| (3..=6).contains(&s.len()) && s[0] == b'a' && s[1..].iter().all(u8::is_ascii_digit),
            },
            Bounded {
                rule: Rule::literal("abab", same()).unwrap(),
                longest: 4,
                starts_a_match: |s| b"abab".starts_with(s),
                is_a_match: |s| s == b"abab",
            },
            Bounded {
                rule: Rule::regex("€{1,2}|한", "g", same()).unwrap(),
                longest: 6,
                starts_a_match: |s| "€€".as_bytes().starts_with(s) || "한".as_bytes().starts_with(s),
                is_a_match: |s| ["€", "€€", "한"].iter().any(|m| m.as_bytes() == s),
            },
        ]
    })
}

/// Feeds `input` cut at `cuts`; after each push checks that the output is the input less what is held,
/// and that the held bytes can still belong to a match: they start one, or they are a whole match
/// and the one byte after it (the DFA reports a match one byte late, so only the byte after the match
/// says it is over). So at most the longest match plus one byte is held. Returns the bytes held after
/// each push.
fn held_after_each_push(bounded: &Bounded, input: &[u8], cuts: &[usize]) -> Vec<usize> {
    let Bounded { rule, longest, starts_a_match, is_a_match } = bounded;
    let mut rewriter = Rewriter::new(std::slice::from_ref(rule), "l", DEFAULT_MAX_MATCH_BYTES);
    let (mut out, mut held_log, mut at) = (Vec::new(), Vec::new(), 0);
    for &cut in cuts.iter().chain([&input.len()]) {
        rewriter.push(&input[at..cut], &mut out).unwrap();
        at = cut;
        let held = rewriter.held_bytes();
        let label = rule.label();
        assert!(held <= longest + 1, "{label} holds {held} bytes after {:?}, longest match {longest}", &input[..at]);
        // The replacement is the match itself: what is not out yet is exactly what is held.
        assert_eq!(out, &input[..at - held], "{label}: output lags the input by more than the held bytes");
        let kept = &input[at - held..at];
        assert!(
            held == 0 || starts_a_match(kept) || is_a_match(&kept[..held - 1]),
            "{label} holds {:?}, which no match starts with",
            String::from_utf8_lossy(kept)
        );
        held_log.push(held);
    }
    rewriter.finish(&mut out).unwrap();
    assert_eq!(out, input);
    held_log
}

#[test]
fn what_bounded_rules_hold_back_at_the_chunk_end() {
    let rules = bounded_rules();
    let held = |rule: usize, input: &[u8]| held_after_each_push(&rules[rule], input, &[])[0];
    assert_eq!(held(0, b"xyz"), 0, "no start of /abc/ at the end");
    assert_eq!(held(0, b"xxab"), 2, "\"ab\" may become \"abc\"");
    // Rules 0 and 2 are literal rules: a whole match is final at once (see `literals`).
    assert_eq!(held(0, b"xabc"), 0, "a literal's whole match is replaced at once");
    assert_eq!(held(0, b"abcaba"), 1, "after a match, \"a\" may start another");
    assert_eq!(held(1, b"a1a12"), 3);
    assert_eq!(held(1, b"xa12345"), 6, "the longest match");
    assert_eq!(held(1, b"a1234567"), 0, "\"a12345\" is over two bytes on, and digits start no match");
    assert_eq!(held(2, b"xaba"), 3);
    assert_eq!(held(2, b"ababab"), 0, "the literal rule replaced its one match and holds nothing more");
    assert_eq!(held(3, "x€".as_bytes()), 3);
    assert_eq!(held(3, "한".as_bytes()), 3);
    // Cut inside a character: bytes of a UTF-8 sequence that a match may go on with.
    let euro = "€".as_bytes();
    assert_eq!(held(3, &[b"x", &euro[..2]].concat()), 2, "two of the three bytes of \"€\"");
    assert_eq!(held(3, &[euro, euro, &euro[..1], b"x"].concat()), 0, "\"€€\" is over, the next one cut short");
    // One byte more than docs/rewrite-rules.md's "at most the longest possible match": a longest match and the byte
    // after it wait for the byte after that (the match is reported one byte late). Not so for literals.
    assert_eq!(held(1, b"a123456"), 7);
    assert_eq!(held(0, b"xabcx"), 0);
    assert_eq!(held(2, b"ababa"), 0);
}

proptest! {
    #[test]
    fn bounded_rules_hold_back_only_what_may_still_match(
        rule in 0..4usize,
        parts in prop::collection::vec(
            prop::sample::select(vec!["a", "b", "c", "ab", "abc", "1", "23", "4567", "x", "€", "한", "😀", " "]),
            0..200,
        ),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..30),
    ) {
        let input = parts.concat().into_bytes();
        held_after_each_push(&bounded_rules()[rule], &input, &cut_positions(&cuts, input.len()));
    }
}

/// Puts `[match|group 1|…]` in place of a match, with `U` for a group that did not participate.
struct Bracket;
impl ReplaceFn for Bracket {
    fn replace(&self, call: &ReplaceCall) -> Result<String, String> {
        let groups = call.groups.iter().map(|g| g.unwrap_or("U"));
        Ok(format!("[{}]", std::iter::once(call.whole).chain(groups).collect::<Vec<_>>().join("|")))
    }
}

// JavaScript's repetition rules (an optional iteration that matches empty fails; a body's groups are cleared at
// every iteration), which the engine's own rules read differently. Expectations from Node 20:
// `hay.replace(new RegExp(source, flags), (...a) => "[" + groups.map(g => g ?? "U").join("|") + "]")`.
#[test]
fn repetitions_follow_js_iteration_rules() {
    let cases: &[(&str, &str, &str, &str)] = &[
        ("(?:|a)*", "g", "aab", "[aa][]b[]"),
        ("x(?:a??)+", "g", "xaax", "[xaa][x]"),
        ("(?:a?|b){2,3}", "g", "abbab", "[ab][b][ab][]"),
        ("((a)|(b))+", "g", "abba", "[abba|a|a|U]"),
        ("x(?:a(b)?)*", "g", "xabaab", "[xabaab|b]"),
        ("(a?){1,3}", "g", "aab", "[aa|a][|]b[|]"),
        ("(?:(a)|b){2}", "g", "abba", "[ab|U][ba|a]"),
        ("(a|)*b", "g", "aab", "[aab|a]"),
        ("(a*)*", "g", "aab", "[aa|aa][|U]b[|U]"),
        ("(a*)+?b", "g", "ab", "[ab|a]"),
        ("(?:(a)|(b)|)+c", "g", "abc", "[abc|U|b]"),
        ("((a??)|b)*?c", "g", "aabc", "[aabc|b|U]"),
        ("(?:\\b|a)*", "g", "aa b", "[aa][] []b[]"),
        ("(z)((a+)?(b+)?(c))*", "g", "zaacbbbcac", "[zaacbbbcac|z|ac|a|U|c]"),
        ("(a|ab)(c|bcd)(d*)", "g", "abcd", "[abcd|a|bcd|]"),
        ("(?:(a)|b)*?c", "g", "abac", "[abac|a]"),
        ("(?:()|a)+", "g", "aa", "[aa|U][|]"),
        ("(\\w?)*?$", "g", "ab", "[ab|b][|U]"),
        ("(\u{1F389}{2,}||\\s{2}){1,3}", "g", "\r\nA", "[\r\n|\r\n][|]A[|]"),
    ];
    for &(source, flags, hay, want) in cases {
        let rule = Rule::regex(source, flags, RuleReplacement::Function(std::sync::Arc::new(Bracket))).unwrap();
        let rules = [rule];
        assert_eq!(whole(hay, &rules), want, "/{source}/{flags} on {hay:?}");
        let bytes = one_byte_chunks(hay.as_bytes(), &rules);
        assert_eq!(String::from_utf8(bytes).unwrap(), want, "/{source}/{flags} on {hay:?} in 1-byte chunks");
        // Spans alone (no groups asked for) come from the automata.
        let spans = text_rule(source, flags, "[$&]");
        let mut want_spans = String::new();
        let mut in_groups = false;
        for c in want.chars() {
            match c {
                '|' => in_groups = true,
                ']' => {
                    in_groups = false;
                    want_spans.push(c);
                }
                _ if !in_groups => want_spans.push(c),
                _ => {}
            }
        }
        assert_eq!(whole(hay, &[spans]), want_spans, "/{source}/{flags} on {hay:?}, spans only");
    }
}

// Without `u` JavaScript sees an astral character as two UTF-16 units. Expectations from Node 20, with the
// result written as Node writes a string in UTF-8 (a lone surrogate as U+FFFD), whole and in 1-byte chunks.
#[test]
fn astral_characters_are_two_units_without_u() {
    let cases: &[(&str, &str, &str, &str, &str)] = &[
        ("(?:)", "g", "a\u{1F600}", "-", "-a-\u{FFFD}-\u{FFFD}-"),
        ("(?:)", "g", "a\u{1F600}", "", "a\u{1F600}"),
        ("x*", "g", "\u{1F600}\u{1F600}", "", "\u{1F600}\u{1F600}"),
        ("[^a]b", "g", "\u{1F600}b", "[$&]", "\u{FFFD}[\u{FFFD}b]"),
        ("(.)(.)", "g", "\u{1F600}x", "[$2$1]", "[\u{FFFD}\u{FFFD}]x"),
        ("(.)(.)", "g", "\u{1F600}x", "$1$2", "\u{1F600}x"),
        (".{3}", "", "\u{1F600}\u{1F600}", "X", "X\u{FFFD}"),
        (".{3}", "", "\u{1F600}\u{1F600}", "$&", "\u{1F600}\u{1F600}"),
        (".", "g", "\u{1F389}", "X", "XX"),
        ("\\S", "", "\u{1F389}", "", "\u{FFFD}"),
        ("\u{1F600}+", "g", "\u{1F600}\u{1F600}", "X", "XX"),
        ("\u{1F600}{0}", "g", "\u{1F601}", "X", "X\u{FFFD}"),
        ("\u{1F600}*?", "g", "\u{1F600}", "[$&]", "[\u{FFFD}]\u{FFFD}"),
        ("\\uD83D", "g", "\u{1F600}\u{1F389}", "X", "X\u{FFFD}\u{1F389}"),
        ("\\b", "g", "a\u{1F600}", "|", "|a|\u{1F600}"),
        (".$", "", "a\u{1F600}", "X", "a\u{FFFD}X"),
        (".$", "u", "a\u{1F600}", "X", "aX"),
        // Lone surrogates in the pattern (issue 17): the halves of the characters that have them.
        ("[\u{1F600}]", "g", "\u{1F600}", "x", "xx"),
        ("[\u{1F600}]", "g", "a\u{1F600}\u{1F601}", "[$&]", "a[\u{FFFD}][\u{FFFD}][\u{FFFD}]\u{FFFD}"),
        ("[^\u{1F600}]", "g", "\u{1F600}\u{1F601}a", "-", "\u{1F600}\u{FFFD}--"),
        ("\\uDE00", "g", "\u{1F600}\u{1F601}", "X", "\u{FFFD}X\u{1F601}"),
        ("\\uD83D\\uDE00", "g", "a\u{1F600}b", "X", "aXb"),
        ("[\\uD800-\\uDFFF]", "g", "a\u{1F600}", "-", "a--"),
        ("[\\uDC00-\\uDE00]+", "g", "\u{1F600}\u{1F601}\u{1F389}", "<$&>", "\u{FFFD}<\u{FFFD}>\u{1F601}\u{1F389}"),
        (".\\uDE01", "g", "a\u{1F601}\u{1F600}", "[$&]", "a[\u{1F601}]\u{1F600}"),
        ("(?:\\uDE00|a)+", "g", "\u{1F600}a\u{1F600}", "($&)", "\u{FFFD}(\u{FFFD}a)\u{FFFD}(\u{FFFD})"),
        ("[a-\u{1F600}]", "g", "b\u{1F600}\u{1F601}", "x", "xxxx\u{FFFD}"),
        ("\\uDE00", "gi", "\u{1F600}", "X", "\u{FFFD}X"),
        ("^\\uDE00", "gm", "\u{1F600}\n\u{1F600}", "X", "\u{1F600}\n\u{1F600}"),
        ("(?:)|\\uDE00", "g", "\u{1F600}", "-", "-\u{FFFD}-\u{FFFD}-"),
        (
            "\\ud83d\\ude00[\u{1F601}\\uDE00]",
            "g",
            "\u{1F601}\u{1F601}\u{1F600}\u{1F601}",
            "X",
            "\u{1F601}\u{1F601}X\u{FFFD}",
        ),
        ("\\uDE00$|a", "gm", "a\u{1F600}\r\u{1F389}", "X", "X\u{FFFD}X\r\u{1F389}"),
        // With `u` a lone surrogate matches only a lone surrogate, which UTF-8 text has none of.
        ("a\\uDE00|b", "gu", "a\u{1F600}b", "X", "a\u{1F600}X"),
        ("[\\uD800-\\uDFFF\\u{1F600}]", "gu", "\u{1F600}\u{1F601}", "X", "X\u{1F601}"),
        ("[^\\uDE00]", "gu", "\u{1F600}a", "X", "XX"),
        ("[a-\\uD800]", "gu", "ab\u{D7FF}\u{E000}", "X", "XXX\u{E000}"),
    ];
    for &(source, flags, hay, replace, want) in cases {
        let rules = [text_rule(source, flags, replace)];
        assert_eq!(whole(hay, &rules), want, "/{source}/{flags} on {hay:?} with {replace:?}");
        let bytes = one_byte_chunks(hay.as_bytes(), &rules);
        assert_eq!(String::from_utf8(bytes).unwrap(), want, "/{source}/{flags} on {hay:?} in 1-byte chunks");
    }
}

/// Rules that need JS's repetition rules or UTF-16 halves (issue 17), for the chunking property below.
const JS_RULE_PATTERNS: &[(&str, &str)] = &[
    ("(?:|a)*", "g"),
    ("((a)|(b))+", "g"),
    ("(a?){1,3}", "g"),
    ("x(?:a(b)?)*", "g"),
    ("(?:a??b?)+c", "g"),
    (".", "g"),
    ("[^a]{1,3}", "g"),
    ("(.)(.)", "g"),
    ("\u{1F600}*?", "g"),
    ("(?:)", "g"),
    ("\\S\\S|\\s", "g"),
    ("\\uD83D", "g"),
    // Lone low surrogates: the low view, alone and with the line view.
    ("[\u{1F600}]", "g"),
    ("[^\u{1F600}]+", "g"),
    ("(\\uDE00|\\uDF89)(.)?", "g"),
    ("[\\uDC00-\\uDE00]", "g"),
    ("(?:\\uDE00|a)+$", "gm"),
    ("(\\W)\\b", "g"),
    (".{3}", ""),
    // Multi-line anchors on the line view: the engine's groups, JS's groups, empty matches.
    ("(^|\\r)(\\n?)$", "gm"),
    ("(?:^(.)|\\u2028)+", "gm"),
    ("$|^", "gm"),
    ("[\\s\\S]$", "gm"),
];
const JS_RULE_REPLACEMENTS: &[&str] = &["", "-", "[$&]", "$1", "<$2$1>"];

fn js_rule(pattern: usize, replacement: usize) -> Rule {
    static RULES: std::sync::OnceLock<Vec<Vec<Rule>>> = std::sync::OnceLock::new();
    let rules = RULES.get_or_init(|| {
        JS_RULE_PATTERNS
            .iter()
            .map(|&(source, flags)| {
                let mut list: Vec<Rule> = JS_RULE_REPLACEMENTS.iter().map(|r| text_rule(source, flags, r)).collect();
                list.push(Rule::regex(source, flags, RuleReplacement::Function(std::sync::Arc::new(Bracket))).unwrap());
                list
            })
            .collect()
    });
    rules[pattern][replacement].clone()
}

proptest! {
    /// JS's repetition rules and the UTF-16 halves of astral characters give the same output whole and in
    /// 1-, 7- and 4096-byte chunks (cuts inside characters and inside pairs' halves included).
    #[test]
    fn js_semantics_rules_are_chunking_invariant(
        input in prop_oneof![alphabet_input(), long_alphabet_input()],
        picks in prop::collection::vec((0..JS_RULE_PATTERNS.len(), 0..=JS_RULE_REPLACEMENTS.len()), 1..3),
    ) {
        let rules: Vec<Rule> = picks.iter().map(|&(p, r)| js_rule(p, r)).collect();
        let bytes = input.as_bytes();
        let whole_out = rewrite_bytes(bytes, &rules, "l", DEFAULT_MAX_MATCH_BYTES).unwrap();
        prop_assert!(std::str::from_utf8(&whole_out).is_ok(), "output is UTF-8");
        for size in [1usize, 7, 4096] {
            let cuts: Vec<usize> = (size..bytes.len()).step_by(size).collect();
            let out = chunked(bytes, &rules, &cuts, DEFAULT_MAX_MATCH_BYTES);
            prop_assert_eq!(&out, &whole_out, "{}-byte chunks, rules {:?}", size, picks);
        }
    }
}

/// The line view (see `lines`): same length, `\r` and U+2028/U+2029 spelled so that one byte around a
/// position tells a line start or end, and a possible U+2028 cut by the end of the data held until known.
#[test]
fn line_view_spells_js_line_terminators() {
    use super::lines::{line_view, settled_len};
    let mut view = Vec::new();
    let text = "a\r\nb\u{2028}c\u{2029}\u{2020}\u{FFFD}".as_bytes();
    line_view(text, &mut view);
    assert_eq!(view.len(), text.len());
    let mut want = b"a\xFF\nb\x0D\xA8\x0Ac\x0D\xA9\x0A".to_vec();
    // U+2020 (E2 80 A0) and U+FFFD are themselves; a stray 0xFF byte is 0xFE.
    want.extend_from_slice("\u{2020}\u{FFFD}".as_bytes());
    assert_eq!(view, want);
    line_view(b"x\xFFy", &mut view);
    assert_eq!(view, b"x\xFEy");
    assert_eq!(settled_len(b"ab\xE2"), 2);
    assert_eq!(settled_len(b"ab\xE2\x80"), 2);
    assert_eq!(settled_len(b"ab\xE2\x80\xA8"), 5);
    assert_eq!(settled_len(b"ab\x80"), 3);
}

/// Only patterns that tell some low surrogates from others read the low view (see `js_regex::units`); in it the
/// last byte of an astral character names its low surrogate's set, and nothing else changes.
#[test]
fn low_view_only_where_low_surrogates_are_told_apart() {
    let view_of = |source: &str, flags: &str| match &text_rule(source, flags, "x").inner.engine {
        Engine::Regex(re) => re.low_view.clone(),
        Engine::Links(_) | Engine::Origins(_) | Engine::Literals(_) => None,
    };
    for (source, flags) in
        [(".", "g"), ("[\\uD800-\\uDFFF]", "g"), ("\\uD83D", "g"), ("\u{1F600}", "g"), ("\\uDE00", "gu")]
    {
        assert!(view_of(source, flags).is_none(), "/{source}/{flags} needs no view");
    }
    let view = view_of("[\u{1F600}]|\u{1F601}", "g").expect("[😀] tells DE00 from the other lows");
    let text = "a\u{1F600}\u{1F601}\u{1F389}\u{1F600}".as_bytes();
    let mut bytes = text.to_vec();
    view.apply(text, &mut bytes);
    let last_bytes = |b: &[u8]| [b[4], b[8], b[12], b[16]];
    let [de00, de01, df89, de00_again] = last_bytes(&bytes);
    assert_eq!(de00, de00_again);
    assert!(de00 != de01 && de00 != df89 && de01 != df89, "DE00, DE01 (named by 😁) and the rest differ");
    assert!([de00, de01, df89].iter().all(|b| (0x80..=0xBF).contains(b)), "still continuation bytes");
    let mut rest = bytes.clone();
    for at in [4, 8, 12, 16] {
        rest[at] = text[at];
    }
    assert_eq!(rest, text, "only the last bytes of astral characters change");
}

/// `String.prototype.replace` with a string pattern (or a literal regex), one rule after another: the
/// reference for literal rules searched together.
fn replace_in_turn(input: &str, rules: &[(String, String, bool)]) -> String {
    let mut text = input.to_string();
    for (needle, output, global) in rules {
        text = if *global { text.replace(needle.as_str(), output) } else { text.replacen(needle.as_str(), output, 1) };
    }
    text
}

/// How many seeded cases a test runs: `LITERAL_CASES` where set (a longer search locally), else `default`.
fn literal_cases(default: usize) -> usize {
    std::env::var("LITERAL_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// `rules` give `expected` for `input` whole, and cut at up to `cuts` places drawn by `next`.
fn assert_whole_and_cut(
    input: &str,
    rules: &[Rule],
    expected: &str,
    cuts: usize,
    next: &mut dyn FnMut(usize) -> usize,
    case: &str,
) {
    assert_eq!(whole(input, rules), expected, "{case}");
    let cuts: Vec<usize> =
        (0..cuts).map(|_| next(input.len() + 1)).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let out = chunked(input.as_bytes(), rules, &cuts, DEFAULT_MAX_MATCH_BYTES);
    assert_eq!(String::from_utf8(out).unwrap(), expected, "{case} cut at {cuts:?}");
}

/// Whether a watched pair sent the rules in turn on `input` (a stage gave way to more).
fn ran_in_turn(grouped: &[Rule], input: &str) -> bool {
    let mut rewriter = Rewriter::new(grouped, "local:3000", DEFAULT_MAX_MATCH_BYTES);
    rewriter.finish_with(input.as_bytes());
    rewriter.stage_count() > grouped.len()
}

/// `literal_rules`' specs of global rules, needle and output each.
fn global_specs(pairs: &[(&str, &str)]) -> Vec<(String, String, bool)> {
    pairs.iter().map(|(needle, output)| (needle.to_string(), output.to_string(), true)).collect()
}

fn literal_rules(specs: &[(String, String, bool)]) -> Vec<Rule> {
    specs
        .iter()
        .map(|(needle, output, global)| {
            let replacement = RuleReplacement::Text(output.replace('$', "$$"));
            if *global {
                let source: String = needle
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c.to_string() } else { format!("\\{c}") })
                    .collect();
                Rule::regex(&source, "g", replacement).unwrap()
            } else {
                Rule::literal(needle, replacement).unwrap()
            }
        })
        .collect()
}

fn literal_spec() -> impl Strategy<Value = (String, String, bool)> {
    // A tiny alphabet, so that needles and replacements overlap, contain and chain into each other often.
    ("[abc]{1,3}", "[abcd]{0,3}", any::<bool>())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(512),
        ..ProptestConfig::default()
    })]

    /// Literal rules searched together give what the rules in turn give, whatever interacts and however
    /// the body is cut, and the groups are the same stages in the same order (each literal regex rule
    /// really is run as a literal).
    #[test]
    fn grouped_literal_rules_equal_the_rules_in_turn(
        specs in prop::collection::vec(literal_spec(), 1..12),
        input in "[abcdx]{0,80}",
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
    ) {
        let rules = literal_rules(&specs);
        prop_assert!(rules.iter().all(|r| matches!(r.inner.engine, Engine::Literals(_))));
        let grouped = Rule::grouped(&rules);
        prop_assert!(grouped.len() <= rules.len());
        let expected = replace_in_turn(&input, &specs);
        prop_assert_eq!(whole(&input, &grouped), expected.clone());
        let cut_at: Vec<usize> = cut_positions(&cuts, input.len());
        prop_assert_eq!(String::from_utf8(chunked(input.as_bytes(), &grouped, &cut_at, DEFAULT_MAX_MATCH_BYTES)).unwrap(), expected);
    }
}

#[test]
fn many_independent_literal_rules_run_as_one_stage_and_count_per_rule() {
    let specs: Vec<(String, String, bool)> = (0..1000)
        .map(|i| (format!("legacy-host-{i}.example.org"), format!("new-host-{i}.example.net"), true))
        .collect();
    let rules = literal_rules(&specs);
    let grouped = Rule::grouped(&rules);
    assert_eq!(grouped.len(), 1, "one search for the thousand");
    let input = "see legacy-host-7.example.org and legacy-host-999.example.org, legacy-host-7.example.org";
    let mut rewriter = Rewriter::new(&grouped, "local:3000", DEFAULT_MAX_MATCH_BYTES);
    let mut out = Vec::new();
    rewriter.push(input.as_bytes(), &mut out).unwrap();
    rewriter.finish(&mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), replace_in_turn(input, &specs));
    let counts: Vec<(String, u64)> =
        rewriter.match_counts().filter(|(_, n)| *n > 0).map(|(label, n)| (label.to_string(), n)).collect();
    assert_eq!(
        counts,
        [(r"/legacy\-host\-7\.example\.org/g".to_string(), 2), (r"/legacy\-host\-999\.example\.org/g".to_string(), 1)]
    );
}

/// Dense matches of a set too big for the block scan (searched again after each match) and of one rule
/// alone (`memmem`), chunked and whole: the rules in turn.
#[test]
fn dense_matches_of_big_sets_and_single_rules_equal_the_rules_in_turn() {
    let big: Vec<(String, String, bool)> = (0..150).map(|i| (format!("w{i}z"), format!("W{i}"), i % 7 != 3)).collect();
    let single = vec![("w7z".to_string(), "seven".to_string(), true)];
    let input: String =
        (0..3000).map(|i| format!("w{}z{}", (i * 37) % 170, if i % 3 == 0 { " " } else { "" })).collect();
    for specs in [big, single] {
        let rules = literal_rules(&specs);
        let grouped = Rule::grouped(&rules);
        assert_eq!(grouped.len(), 1);
        let expected = replace_in_turn(&input, &specs);
        assert_ne!(expected, input);
        assert_eq!(whole(&input, &grouped), expected);
        let cuts: Vec<usize> = (1..40).map(|k| k * input.len() / 40 + k % 5).collect();
        assert_eq!(
            String::from_utf8(chunked(input.as_bytes(), &grouped, &cuts, DEFAULT_MAX_MATCH_BYTES)).unwrap(),
            expected
        );
    }
}

/// The loop for dense matches (`literal_run`): global sets of needles up to 20 bytes long that overlap each
/// other, outputs from empty to 40 bytes, gaps from none to hundreds of bytes, every case cut into chunks at
/// random places and whole: the rules in turn. Some sets must share a search, or the loop is not tested.
#[test]
fn dense_runs_of_long_needles_and_outputs_equal_the_rules_in_turn() {
    let mut next = seeded(0xd15e_u64);
    let mut shared = 0;
    for _ in 0..1000 {
        // Needles of `a`, `b` and `c` (so that they overlap and watch each other), outputs of other letters
        // (so that they never chain), all global.
        let specs: Vec<(String, String, bool)> = (0..1 + next(10))
            .map(|_| (text(1 + next(20), b"abc", &mut next), text(next(41), b"xyzXYZ", &mut next), true))
            .collect();
        let mut input = String::new();
        while input.len() < 200 + next(3000) {
            let piece = match next(3) {
                0 => specs[next(specs.len())].0.clone(),
                1 => text(next(4), b"abc", &mut next),
                _ => text(next(300), b"abcq", &mut next),
            };
            input.push_str(&piece);
        }
        let rules = literal_rules(&specs);
        let grouped = Rule::grouped(&rules);
        shared += usize::from(grouped.len() < rules.len());
        let expected = replace_in_turn(&input, &specs);
        assert_eq!(whole(&input, &grouped), expected, "{specs:?} over {input:?}");
        let mut cuts: Vec<usize> = (0..next(12)).map(|_| next(input.len() + 1)).collect();
        cuts.sort_unstable();
        let out = chunked(input.as_bytes(), &grouped, &cuts, DEFAULT_MAX_MATCH_BYTES);
        assert_eq!(String::from_utf8(out).unwrap(), expected, "{specs:?} over {input:?} cut at {cuts:?}");
    }
    assert!(shared > 300, "only {shared} of 1000 cases shared a search");
}

/// As above with `\b` at either end of the needles, which stay in the dense loop: needles and outputs are
/// word characters with `-` and ` ` inside, the text has the needles next to word characters and not.
#[test]
fn dense_runs_of_whole_words_equal_the_rules_in_turn() {
    let mut next = seeded(0xb0d5_u64);
    let mut shared = 0;
    for _ in 0..400 {
        // Word characters at both ends of every needle and output, so that they may share a search.
        let edged = |inner: String, next: &mut dyn FnMut(usize) -> usize| {
            format!("{}{inner}{}", text(1, b"ab", next), text(1, b"bc", next))
        };
        let specs: Vec<(String, usize, String)> = (0..1 + next(8))
            .map(|_| {
                let needle = edged(text(next(12), b"abc- ", &mut next), &mut next);
                (needle, next(4), edged(text(next(20), b"xyzXYZ", &mut next), &mut next))
            })
            .collect();
        let mut input = String::new();
        while input.len() < 200 + next(3000) {
            let piece = match next(3) {
                0 => specs[next(specs.len())].0.clone(),
                1 => text(next(4), b"abc -", &mut next),
                _ => text(next(200), b"abcq -", &mut next),
            };
            input.push_str(&piece);
        }
        let rules: Vec<Rule> = specs
            .iter()
            .map(|(needle, bounds, output)| text_rule(&bounded_source(needle, *bounds), "g", output))
            .collect();
        assert!(rules.iter().all(|r| matches!(r.inner.engine, Engine::Literals(_))), "{specs:?}");
        let grouped = Rule::grouped(&rules);
        shared += usize::from(grouped.len() < rules.len());
        let expected = specs.iter().fold(input.clone(), |text, (needle, bounds, output)| {
            reference(&text, &bounded_source(needle, *bounds), "g", output)
        });
        assert_eq!(whole(&input, &grouped), expected, "{specs:?} over {input:?}");
        let mut cuts: Vec<usize> = (0..next(12)).map(|_| next(input.len() + 1)).collect();
        cuts.sort_unstable();
        let out = chunked(input.as_bytes(), &grouped, &cuts, DEFAULT_MAX_MATCH_BYTES);
        assert_eq!(String::from_utf8(out).unwrap(), expected, "{specs:?} over {input:?} cut at {cuts:?}");
    }
    assert!(shared > 100, "only {shared} of 400 cases shared a search");
}

/// The same comparison over seeded rule sets drawn so that many rules can share a search: every case
/// equals the rules in turn, and a good share of them do run grouped (so the comparison is not only of
/// rules left alone).
#[test]
fn seeded_literal_rule_sets_group_and_equal_the_rules_in_turn() {
    let mut next = seeded(0x5eed_u64);
    let word = |len: usize, next: &mut dyn FnMut(usize) -> usize| -> String {
        (0..len).map(|_| (b'a' + next(12) as u8) as char).collect()
    };
    let (mut cases, mut merged, mut in_turn) = (0, 0, 0);
    let rounds = literal_cases(1500);
    for _ in 0..rounds {
        let count = 2 + next(12);
        let specs: Vec<(String, String, bool)> = (0..count)
            .map(|_| {
                // A few needles of three letters only, which overlap each other's ends often.
                let needle = if next(6) == 0 {
                    (0..3 + next(3)).map(|_| (b'a' + next(3) as u8) as char).collect()
                } else {
                    word(3 + next(4), &mut next)
                };
                // Mostly letters no needle has (independent rules), sometimes the needles' own (chains).
                let output = word(next(5), &mut next);
                let output = if next(4) == 0 { output } else { output.to_uppercase() };
                (needle, output, next(4) != 0)
            })
            .collect();
        // Random letters, or the needles themselves run together (where pairs meet).
        let input = if next(2) == 0 {
            word(next(400), &mut next)
        } else {
            (0..next(40))
                .map(|_| if next(4) == 0 { word(1 + next(3), &mut next) } else { specs[next(count)].0.clone() })
                .collect()
        };
        let rules = literal_rules(&specs);
        let grouped = Rule::grouped(&rules);
        cases += 1;
        merged += usize::from(grouped.len() < rules.len());
        let expected = replace_in_turn(&input, &specs);
        assert_eq!(whole(&input, &grouped), expected, "{specs:?} on {input:?}");
        // And what the automaton per rule (the engine before literal rules were searched) gives.
        let per_rule: Vec<Rule> = specs
            .iter()
            .map(|(needle, output, global)| {
                let replacement = RuleReplacement::Text(output.replace('$', "$$"));
                let pattern = super::js_regex::literal(needle);
                Rule::compile(needle.clone(), &pattern, *global, super::rule::Units::No, replacement).unwrap()
            })
            .collect();
        assert!(per_rule.iter().all(|r| matches!(r.inner.engine, Engine::Regex(_))));
        assert_eq!(whole(&input, &per_rule), expected);
        let cuts: Vec<usize> =
            (0..6).map(|_| next(input.len() + 1)).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
        assert_eq!(
            String::from_utf8(chunked(input.as_bytes(), &grouped, &cuts, DEFAULT_MAX_MATCH_BYTES)).unwrap(),
            expected
        );
        in_turn += usize::from(ran_in_turn(&grouped, &input));
    }
    assert!(merged * 5 >= cases, "only {merged} of {cases} rule sets shared a search");
    assert!(in_turn * 200 >= cases, "only {in_turn} of {cases} bodies ran rules in turn after a shared search");
}

/// A later needle that ends where an earlier replacement begins, its first part in the text before the
/// match or at the end of an earlier match's replacement or needle: one search, the rules in turn's output,
/// cut at every place.
#[test]
fn needles_across_a_replacements_start_share_a_search_and_equal_the_rules_in_turn() {
    let cases = [
        (
            vec![("k", "zp", true), ("mm", "ay", true), ("pa", "1", true), ("ep", "E", true)],
            "xkmm k mm pmm kmm pp emm kkmm pkmm",
        ),
        // `aaab` across `abb`'s replacement `ba`, whose own match is across `a-ba`'s `b-aa`, after an earlier
        // `abb` whose replacement ends with the part's first `a`.
        (vec![("a-ba", "b-aa", true), ("abb", "ba", true), ("aaab", " b ", true)], "-abbaaaba-baaaab"),
        // First matches only, the later ones across the earlier ones' replacements.
        (vec![("ab", "ca", false), ("ac", "ca", false), ("bc", "", false)], "axxaxxxbaabxxx"),
    ];
    for (specs, input) in cases {
        let specs: Vec<(String, String, bool)> = specs.into_iter().map(|(n, o, g)| (n.into(), o.into(), g)).collect();
        let rules = literal_rules(&specs);
        let grouped = Rule::grouped(&rules);
        assert_eq!(grouped.len(), 1, "one search for {specs:?}");
        let expected = replace_in_turn(input, &specs);
        assert_eq!(whole(input, &grouped), expected, "{specs:?}");
        assert!(ran_in_turn(&grouped, input));
        for cut in 0..=input.len() {
            let out = chunked(input.as_bytes(), &grouped, &[cut], DEFAULT_MAX_MATCH_BYTES);
            assert_eq!(String::from_utf8(out).unwrap(), expected, "{specs:?} cut at {cut}");
        }
    }
    assert_eq!(
        replace_in_turn(
            "xkmm k mm pmm kmm pp emm kkmm pkmm",
            &[("k", "zp", true), ("mm", "ay", true), ("pa", "1", true)].map(|(n, o, g)| (n.into(), o.into(), g))
        ),
        "xz1y zp ay 1y z1y pp eay zpz1y pz1y"
    );
}

/// Rules whose replacement begins as their needle does: any-case words replaced by their capitals, and
/// needles replaced by themselves and more. A later needle that ends where such a replacement begins is
/// then the pair of needles that is watched, not a reason to keep the rules apart: every case equals the
/// rules in turn (the regex reference), whole and cut. Some replacements begin otherwise: those pairs must
/// stay apart, and the comparison fails if they do not.
#[test]
fn replacements_that_begin_as_their_needles_share_a_search_and_equal_the_rules_in_turn() {
    let mut next = seeded(0xca95_u64);
    let (mut merged, mut in_turn) = (0, 0);
    let rounds = literal_cases(1500);
    for _ in 0..rounds {
        let any_case = next(2) == 0;
        let specs: Vec<(String, String)> = (0..2 + next(6))
            .map(|_| {
                let needle = text(2 + next(4), b"abcd", &mut next);
                // And now and then one that does not, so that the pairs that must stay apart are drawn too.
                let output = match (any_case, next(4)) {
                    (_, 0) => text(1 + next(3), b"abcdxy", &mut next),
                    (true, 1) => needle.to_uppercase(),
                    (true, _) => needle[..1].to_uppercase() + &needle[1..],
                    (false, 1) => needle.clone() + &text(1 + next(3), b"xyz", &mut next),
                    (false, _) => needle[..1 + next(needle.len())].to_string() + &text(next(3), b"xyz", &mut next),
                };
                (needle, output)
            })
            .collect();
        let flags = if any_case { "gi" } else { "g" };
        let input: String = (0..next(60))
            .map(|_| match next(3) {
                0 => text(1 + next(3), b"abcdABx", &mut next),
                _ if any_case && next(2) == 0 => specs[next(specs.len())].0.to_uppercase(),
                _ => specs[next(specs.len())].0.clone(),
            })
            .collect();
        let rules: Vec<Rule> = specs.iter().map(|(needle, output)| text_rule(needle, flags, output)).collect();
        assert!(rules.iter().all(|r| matches!(r.inner.engine, Engine::Literals(_))), "{specs:?}");
        let grouped = Rule::grouped(&rules);
        merged += usize::from(grouped.len() < rules.len());
        let expected =
            specs.iter().fold(input.clone(), |text, (needle, output)| reference(&text, needle, flags, output));
        assert_whole_and_cut(&input, &grouped, &expected, 6, &mut next, &format!("{specs:?} /{flags} on {input:?}"));
        in_turn += usize::from(ran_in_turn(&grouped, &input));
    }
    assert!(merged * 2 >= rounds, "only {merged} of {rounds} rule sets shared a search");
    assert!(in_turn * 20 >= rounds, "only {in_turn} of {rounds} bodies ran rules in turn after a shared search");
}

/// Whole words replaced by other words: a needle that ends where an earlier replacement begins (`domain`
/// and `new-...`), or that stands inside one, cannot match there when the replacement's bytes beside it
/// fail its `\b`, so the rules share a search. Seeded cases with needles, replacements and text drawn from
/// the same few letters (with `-` and ` `) equal the rules in turn, whole and cut.
#[test]
fn whole_words_whose_bounds_fail_beside_a_replacement_share_a_search_and_equal_the_rules_in_turn() {
    let hosts = (0..5).map(|i| (format!(r"old-{i}\.example\.org"), format!("new-{i}.example.net")));
    let words = [("domain", "realm"), ("node", "vertex"), ("server", "host"), ("token", "ticket"), ("static", "fixed")];
    let words = words.iter().map(|(w, o)| (format!(r"\b{w}\b"), o.to_string()));
    let rules: Vec<Rule> = hosts.chain(words).map(|(source, output)| text_rule(&source, "g", &output)).collect();
    assert_eq!(Rule::grouped(&rules).len(), 1, "one set for the hosts and the whole words");
    let input = "domaiold-0.example.org, serverealm, toke new-1 tokenew staticket node";
    assert_eq!(whole(input, &Rule::grouped(&rules)), whole(input, &rules));

    let mut next = seeded(0xb0b0_u64);
    let mut merged = 0;
    let rounds = literal_cases(1500);
    for _ in 0..rounds {
        // Any case too, with words replaced by their capitals now and then.
        let flags = if next(2) == 0 { "gi" } else { "g" };
        let specs: Vec<(String, usize, String)> = (0..2 + next(6))
            .map(|_| {
                let needle = format!("{}{}", text(1, b"ab", &mut next), text(1 + next(3), b"ab-", &mut next));
                let needle = needle.trim_end_matches('-').to_string() + &text(1, b"ab", &mut next);
                let output = if next(3) == 0 { needle.to_uppercase() } else { text(1 + next(4), b"ab- ", &mut next) };
                (needle, next(4), output)
            })
            .collect();
        let input: String = (0..next(40))
            .map(|_| match next(4) {
                0 => text(1 + next(3), b"ab -", &mut next),
                1 => specs[next(specs.len())].0.to_uppercase(),
                _ => specs[next(specs.len())].0.clone(),
            })
            .collect();
        let rules: Vec<Rule> = specs
            .iter()
            .map(|(needle, bounds, output)| text_rule(&bounded_source(needle, *bounds), flags, output))
            .collect();
        let grouped = Rule::grouped(&rules);
        merged += usize::from(grouped.len() < rules.len());
        let expected = specs.iter().fold(input.clone(), |text, (needle, bounds, output)| {
            reference(&text, &bounded_source(needle, *bounds), flags, output)
        });
        assert_whole_and_cut(&input, &grouped, &expected, 6, &mut next, &format!("{specs:?} /{flags} on {input:?}"));
    }
    assert!(merged * 4 >= rounds, "only {merged} of {rounds} rule sets shared a search");
}

/// The words of `benches/rules.rs` as any-case rules replaced by their capitals run as one set, as they do
/// matching case.
#[test]
fn any_case_words_replaced_by_their_capitals_run_as_one_set() {
    let words = ["header", "rewrite", "rust", "stream", "domain", "node", "server", "engine", "token", "static"];
    for flags in ["g", "gi"] {
        let rules: Vec<Rule> = words.iter().map(|w| text_rule(w, flags, &w.to_uppercase())).collect();
        assert_eq!(Rule::grouped(&rules).len(), 1, "/{flags}");
    }
    let rules: Vec<Rule> = words.iter().map(|w| text_rule(w, "gi", &w.to_uppercase())).collect();
    let input = "a serverewrite Node and tokenode, STREAMust";
    let expected = words.iter().fold(input.to_string(), |text, w| reference(&text, w, "gi", &w.to_uppercase()));
    assert_eq!(whole(input, &Rule::grouped(&rules)), expected);
}

#[test]
fn the_cap_is_on_the_rules_memory_and_its_error_says_so() {
    let literals: Vec<Rule> = (0..1000).map(|i| text_rule(&format!("host-{i}\\.test"), "g", "x")).collect();
    let literal_bytes: usize = literals.iter().map(Rule::memory_usage).sum();
    assert!(literal_bytes < 1000 * 2048, "a literal rule costs little: {literal_bytes} bytes for 1,000");
    let regex = text_rule("[a-z]{2,8}[0-9]+x", "g", "y");
    assert!(regex.memory_usage() > 1024, "a regex rule's automata are counted");
    super::rule::check_memory_within(&literals, 4 << 20).unwrap();
    let err = super::rule::check_memory_within(literals.iter().chain([&regex]), literal_bytes).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("the 1001 rules' automata take") && text.contains("MiB a rule set may use"), "{text}");
}

#[test]
fn a_pattern_whose_automaton_costs_too_much_work_is_refused_by_that_bound() {
    // The DFA of `{3000}` would fit the size cap, but each state tracks up to 3,000 starts at once: the
    // work bound refuses it (its text names the cause), where the size cap alone took seconds to.
    let text = |source: &str| {
        Rule::regex(source, "gi", RuleReplacement::Text("x".into())).err().map(|e| e.to_string()).unwrap_or_default()
    };
    let refused = text(r"\b(?:\w+\s+){3000}");
    assert!(refused.contains("would take more than about a second") && refused.contains("byte classes"), "{refused}");
    // Long repetitions that do not pile up starts, and the same shape at a usual length, are fine.
    for fine in [r"\b(?:\w+\s+){100}", "[a-z]{5000}", r"<img[^>]+tracker\.example[^>]*>"] {
        assert_eq!(text(fine), "", "{fine}");
    }
}

#[test]
fn a_watched_pair_sends_the_rules_in_turn_from_there_with_counts_kept() {
    let specs = global_specs(&[("rewrite", "W"), ("q", "Q"), ("server", "V")]);
    let grouped = Rule::grouped(&literal_rules(&specs));
    assert_eq!(grouped.len(), 1, "one shared search");
    let input = "q server q serverewrite server rewrite q";
    let expected = replace_in_turn(input, &specs);
    assert_eq!(expected, "Q V Q serveW V W Q");
    assert_eq!(whole(input, &grouped), expected);
    for cut in 0..=input.len() {
        let out = chunked(input.as_bytes(), &grouped, &[cut], DEFAULT_MAX_MATCH_BYTES);
        assert_eq!(String::from_utf8(out).unwrap(), expected, "cut at {cut}");
    }
    let mut rewriter = Rewriter::new(&grouped, "local:3000", DEFAULT_MAX_MATCH_BYTES);
    rewriter.finish_with(input.as_bytes());
    assert_eq!(rewriter.stage_count(), 2, "the shared search gave way to the rules in turn");
    let counts: Vec<u64> = rewriter.match_counts().map(|(_, n)| n).collect();
    assert_eq!(counts, [2, 3, 2], "each rule's matches, before and after the pair");
}

/// Stage outputs are taken for a chunk and given back after it: a page whose response waits on the
/// network holds none (a list of 120 rules held 22 buffers of 48 KiB per page in flight).
#[test]
fn a_rewriter_holds_no_output_buffer_between_chunks() {
    let specs = global_specs(&[("server", "V"), ("rewrite", "W"), ("q", "Q")]);
    let rules = literal_rules(&specs);
    let mut rewriter = Rewriter::new(&rules, "local:3000", DEFAULT_MAX_MATCH_BYTES);
    let mut out = Vec::new();
    for chunk in ["q server q rewr", "ite serv", "er q"] {
        rewriter.push(chunk.as_bytes(), &mut out).unwrap();
        assert_eq!(rewriter.output_capacity(), 0, "after {chunk:?}");
    }
    rewriter.finish(&mut out).unwrap();
    assert_eq!(rewriter.output_capacity(), 0);
    assert_eq!(String::from_utf8(out).unwrap(), "Q V Q W V Q");
}

proptest! {
    /// The percent-encoded origin rule finds its candidates by the `%3` inside its matches: it rewrites as
    /// the same pattern found from its prefix does, whole and in any chunking.
    #[test]
    fn the_encoded_origin_rule_found_by_its_inner_piece_equals_its_pattern(
        origins in prop::collection::vec(
            (
                prop::sample::select(vec!["http", "https", "HTTPS", "Http", "ftp", "", "%"]),
                prop::sample::select(vec!["%3A", "%3a", "%3", ":", "%3A%3A"]),
                prop::sample::select(vec!["%2F%2F", "%2f%2F", "%2F", "//"]),
                prop::sample::select(vec!["wp.test", "WP.Test", "wp.tes", ""]),
                prop::sample::select(vec!["%3A8088", "%3a8088", "%3A9999", "", "%3"]),
                prop::sample::select(vec!["", "x", " ", "%3D", "\""]),
            ),
            0..12,
        ),
        cuts in prop::collection::vec(0..200usize, 0..8),
    ) {
        let input: String = origins.iter().map(|(a, b, c, d, e, f)| [*a, *b, *c, *d, *e, *f].concat()).collect();
        let inner = [Rule::encoded_origin("wp.test:8088", "http")];
        let pattern = "(?i:https?%3A%2F%2Fwp\\.test%3A8088)";
        let replacement = super::replacement::Replacement::EncodedLocalOrigin { scheme: "http" };
        let prefix = [Rule::build("reference".into(), pattern, true, rule::Units::No, replacement).unwrap()];
        let mut cuts = cuts;
        cuts.sort_unstable();
        let expected = chunked(input.as_bytes(), &prefix, &[], DEFAULT_MAX_MATCH_BYTES);
        prop_assert_eq!(&chunked(input.as_bytes(), &inner, &cuts, DEFAULT_MAX_MATCH_BYTES), &expected, "cuts {:?}", cuts);
        prop_assert_eq!(&one_byte_chunks(input.as_bytes(), &inner), &expected);
    }
}

/// The `y` flag: matches back to back from the body's start, none after the first gap, whatever the cuts
/// (expected values are V8's: `input.replace(/source/flags, replace)` in Node 20).
#[test]
fn sticky_rules_match_back_to_back_from_the_start_only() {
    let cases = [
        ("aaba", "a", "gy", "-", "--ba"),
        ("aaba", "a", "y", "-", "-aba"),
        ("baa", "a", "gy", "-", "baa"),
        ("baa", "a", "y", "-", "baa"),
        ("abab", "ab|b", "gy", "[$&]", "[ab][ab]"),
        ("xxy", "x*", "gy", "-", "--y-"),
        ("ab", "", "gy", "-", "-a-b-"),
        ("😀a", "", "guy", "-", "-😀-a-"),
        ("a1b2c3 d4", r"[a-z]\d", "gy", "<$&>", "<a1><b2><c3> d4"),
        ("<b>x</b>", r"<\w>|x", "gy", "", "</b>"),
    ];
    for (input, source, flags, replace, want) in cases {
        let rules = [text_rule(source, flags, replace)];
        let want = want.as_bytes();
        assert_eq!(whole(input, &rules).as_bytes(), want, "/{source}/{flags} on {input:?}");
        assert_eq!(
            one_byte_chunks(input.as_bytes(), &rules),
            want,
            "/{source}/{flags} on {input:?}, one byte at a time"
        );
    }
}

/// A literal rule's JS source: `needle` escaped, with `\b` at the ends asked for.
fn bounded_source(needle: &str, bounds: usize) -> String {
    let escaped: String = needle
        .chars()
        .map(|c| if c.is_alphanumeric() || c == '_' { c.to_string() } else { format!("\\{c}") })
        .collect();
    format!("{}{escaped}{}", if bounds & 1 != 0 { r"\b" } else { "" }, if bounds & 2 != 0 { r"\b" } else { "" })
}

#[test]
fn whole_words_run_as_one_literal_set_and_replace_whole_words_only() {
    let words = ["header", "rewrite", "node", "stream", "domain"];
    let rules: Vec<Rule> = words.iter().map(|w| text_rule(&format!(r"\b{w}\b"), "g", &w.to_uppercase())).collect();
    assert!(rules.iter().all(|r| matches!(r.inner.engine, Engine::Literals(_))), "each a literal rule");
    let grouped = Rule::grouped(&rules);
    assert_eq!(grouped.len(), 1, "one search for all");
    let input = "header headers subheader node_ node-stream domain.\nrewrite(header)_domain domain";
    let expected = "HEADER headers subheader node_ NODE-STREAM DOMAIN.\nREWRITE(HEADER)_domain DOMAIN";
    assert_eq!(whole(input, &grouped), expected);
    assert_eq!(String::from_utf8(one_byte_chunks(input.as_bytes(), &grouped)).unwrap(), expected);
    // A rule that writes a word character where its needle had none would change what a later `\b` sees.
    let rules = [text_rule(r"\-", "g", "x"), text_rule(r"\bnode\b", "g", "NODE")];
    assert_eq!(Rule::grouped(&rules).len(), 2);
    assert_eq!(whole("-node node", &Rule::grouped(&rules)), "xnode NODE");
    // Any case, but `$&` (the text as found) keeps a regex rule.
    let rules = [text_rule("node", "gi", "N"), text_rule(r"\bheader", "gi", "H"), text_rule("node", "gi", "[$&]")];
    assert!(rules[..2].iter().all(|r| matches!(r.inner.engine, Engine::Literals(_))));
    assert!(matches!(rules[2].inner.engine, Engine::Regex(_)));
    assert_eq!(whole("NODE Node subHeader HEADER", &Rule::grouped(&rules[..2])), "N N subHeader H");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(512),
        ..ProptestConfig::default()
    })]

    /// Literal rules with `\b` at either end, grouped, give what the rules in turn give (the regex
    /// reference), whole and however the body is cut.
    #[test]
    fn literal_rules_with_word_bounds_equal_the_rules_in_turn(
        specs in prop::collection::vec(("[aAb_é -]{1,3}", 0..4usize, "[abB_é-]{0,2}", any::<bool>()), 1..8),
        input in "[aAbB_é -]{0,60}",
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
    ) {
        let flags = |any_case: bool| if any_case { "gi" } else { "g" };
        let rules: Vec<Rule> = specs
            .iter()
            .map(|(needle, bounds, output, any_case)| text_rule(&bounded_source(needle, *bounds), flags(*any_case), output))
            .collect();
        // Any case runs as a literal rule for ASCII text only.
        for ((needle, _, _, any_case), rule) in specs.iter().zip(&rules) {
            prop_assert_eq!(matches!(rule.inner.engine, Engine::Literals(_)), !any_case || needle.is_ascii());
        }
        let grouped = Rule::grouped(&rules);
        let expected = specs.iter().fold(input.clone(), |text, (needle, bounds, output, any_case)| {
            reference(&text, &bounded_source(needle, *bounds), flags(*any_case), output)
        });
        prop_assert_eq!(whole(&input, &grouped), expected.clone());
        let cut_at: Vec<usize> = cut_positions(&cuts, input.len());
        prop_assert_eq!(String::from_utf8(chunked(input.as_bytes(), &grouped, &cut_at, DEFAULT_MAX_MATCH_BYTES)).unwrap(), expected.clone());
        prop_assert_eq!(String::from_utf8(one_byte_chunks(input.as_bytes(), &grouped)).unwrap(), expected);
    }
}

/// A global rule of plain texts in an alternation runs as one literal set (one stage, one rule counted) and
/// gives what the regex gives: seeded alternations of overlapping texts, with and without `\b` around them,
/// capturing or not, any case or not, with templates of `$&` and `$1`; those that must stay regex rules
/// (a bounded alternative that begins another, `$&` with `i`) are compared too.
#[test]
fn alternations_of_plain_texts_run_as_one_set_and_equal_the_regex() {
    let mut next = seeded(0xa17e_u64);
    let rounds = literal_cases(1500);
    let mut as_sets = 0;
    for _ in 0..rounds {
        // Now and then one inside another (which keeps the rule a regex rule), mostly texts that overlap
        // each other's ends.
        let words: Vec<String> = (0..2 + next(5))
            .map(|_| if next(8) == 0 { text(1, b"abc", &mut next) } else { text(3 + next(3), b"abcd", &mut next) })
            .collect();
        let (open, close) = [("(?:", ")"), ("(", ")"), ("", "")][next(3)];
        let bound = if open.is_empty() { "" } else { [r"\b", ""][next(2)] };
        let source = format!("{bound}{open}{}{close}{bound}", words.join("|"));
        let flags = if next(3) == 0 { "gi" } else { "g" };
        let replace = ["X", "<$&>", "[$1]", "$$-", ""][next(5)];
        let rule = text_rule(&source, flags, replace);
        let input: String = (0..next(30))
            .map(|_| match next(3) {
                0 => text(1 + next(3), b"abcdA -", &mut next),
                1 if flags == "gi" => words[next(words.len())].to_uppercase(),
                _ => words[next(words.len())].clone(),
            })
            .collect();
        let expected = reference(&input, &source, flags, replace);
        if matches!(&rule.inner.engine, Engine::Literals(set) if set.is_alternation()) {
            as_sets += 1;
            assert_eq!(rule.member_count(), 1);
            assert_eq!(Rule::grouped(&[rule.clone(), rule.clone()]).len(), 2, "never grouped");
        }
        let rules = [rule];
        let case = format!("/{source}/{flags} -> {replace:?} on {input:?}");
        assert_whole_and_cut(&input, &rules, &expected, 4, &mut next, &case);
    }
    assert!(as_sets * 3 >= rounds, "only {as_sets} of {rounds} alternations ran as sets");
}

#[test]
fn alternations_that_are_not_plain_texts_stay_regex_rules() {
    let is_set = |source: &str, flags: &str| matches!(&text_rule(source, flags, "x").inner.engine, Engine::Literals(set) if set.is_alternation());
    assert!(is_set(r"\b(?:header|rewrite|rust)\b", "g"));
    assert!(is_set(r"header|rewrite|a\|b|c\.d", "g"));
    assert!(is_set(r"(header|rewrite)", "gi"));
    // Not global, a bound on the first and last alternatives only, a look-ahead, a class, a bounded
    // alternative that begins another, an escaped backslash before `b`, an empty alternative.
    for (source, flags) in [
        ("header|rewrite", ""),
        (r"\bheader|rewrite\b", "g"),
        ("(?=a)|b", "g"),
        ("[ab]|c", "g"),
        (r"\b(?:head|header)\b", "g"),
        (r"(?:a|b)\\b", "g"),
        ("a||b", "g"),
        ("a|b+", "g"),
    ] {
        assert!(!is_set(source, flags), "/{source}/{flags}");
    }
    // `$&` under `i` is the text as it was found.
    assert!(!matches!(&text_rule("(?:ab|cd)", "gi", "<$&>").inner.engine, Engine::Literals(_)));
    assert_eq!(whole("x AB cd", &[text_rule("(?:ab|cd)", "gi", "<$&>")]), "x <AB> <cd>");
}

/// An alternation is one user rule wherever rules are counted: one label and count, one flag in
/// `matched_rules` (the skip table's bits follow it).
#[test]
fn an_alternation_counts_as_one_rule() {
    let rules = [text_rule(r"\b(?:header|rewrite)\b", "g", "X"), text_rule("node", "g", "N")];
    let mut rewriter = Rewriter::new(&Rule::grouped(&rules), "local:3000", DEFAULT_MAX_MATCH_BYTES);
    let mut out = Vec::new();
    rewriter.push(b"header rewrite headers", &mut out).unwrap();
    rewriter.finish(&mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "X X headers");
    let counts: Vec<(String, u64)> = rewriter.match_counts().map(|(label, n)| (label.to_string(), n)).collect();
    assert_eq!(counts, [(r"/\b(?:header|rewrite)\b/g".to_string(), 2), ("/node/g".to_string(), 0)]);
    assert_eq!(rewriter.matched_rules(), [true, false]);
    assert_eq!(rules.iter().map(Rule::member_count).sum::<usize>(), 2);
}

/// Alternations past ASCII: with `u` an astral alternative runs in the set; without it, it stays a regex rule
/// (a regex without `u` may split it into UTF-16 units). Both give the regex's answer.
#[test]
fn alternations_past_ascii_equal_the_regex() {
    let input = "é😀 ab é-😀é x😀y";
    for (source, flags, in_set) in
        [("(?:é|😀)", "gu", true), ("(?:é|😀)", "g", false), (r"\b(?:é|ab)\b", "g", true), ("(é|x)", "gi", false)]
    {
        let rule = text_rule(source, flags, "[$&]");
        let is_set = matches!(&rule.inner.engine, Engine::Literals(set) if set.is_alternation());
        assert_eq!(is_set, in_set, "/{source}/{flags}");
        assert_eq!(whole(input, &[rule]), reference(input, source, flags, "[$&]"), "/{source}/{flags}");
    }
}

/// A list with a rule that matches any case is compared folded, but a case-sensitive rule's needle does not
/// stand in for another's end by its folded form: `A ` (written as `a-`) then `éa\b` needs the rules in turn.
#[test]
fn folded_texts_do_not_stand_in_for_a_case_sensitive_needle() {
    let rules = [text_rule("b", "gi", "é"), text_rule("A ", "g", "a-"), text_rule(&bounded_source("éa", 2), "g", "")];
    let grouped = Rule::grouped(&rules);
    assert_eq!(grouped.len(), 2, "the any-case rule, then the two that share a search");
    let input = "éA  éA";
    assert_eq!(whole(input, &grouped), "- éA");
    for cut in 0..=input.len() {
        let out = chunked(input.as_bytes(), &grouped, &[cut], DEFAULT_MAX_MATCH_BYTES);
        assert_eq!(String::from_utf8(out).unwrap(), "- éA", "cut at {cut}");
    }
}
