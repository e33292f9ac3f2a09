//! The rewrite engine alone with many user rules (issue 32): how the cost of a page grows with the rule
//! count, at 1, 10, 100, 1,000 and 10,000 literal rules and 1, 10, 100 regex rules.
//!
//! Run: `cargo bench --no-default-features --bench rules -- --warm-up-time 1 --measurement-time 3`
//!
//! Each case rewrites one generated ~100 KiB page (`common::generate_html`) fed in 16 KiB chunks through a
//! fresh `Rewriter` into a reused output buffer, with the rules as the proxy runs them: the snippet rule
//! first, the user rules, then the link rule (Browsersync's order), after `Rule::grouped` (consecutive
//! literal rules that cannot interact share one search). The user rules are those of the peer benchmark's
//! workloads 12 and 13 (`benches/lib/many-rules.js`):
//!
//! - `literals/N`: `/legacy-host-I\.example\.org/g` → `new-host-I.example.net` (never in the page), except
//!   five spread over the list (fewer when N < 5) that are strings of the page, each replaced by a distinct
//!   string no rule matches (`throughput` → `bandwidth`, ...).
//! - `regexes/N`: `/data-track-I="[^"]*"/g` → `''` (none matches): removals whose matches may overlap (a
//!   value may hold another's `data-track-J="`), so each is a stage of its own: the cost of each.
//! - `independent/N`: `/legacy-(\d+)\.cdn-I\.org/g` → `new-$1.cdn-I.io` (never in the page), and one rule
//!   of the page, `/\b(sku|ticket)-(\d{3,})\b/g` → `$1#$2`: regex rules that cannot interact, grouped up to 64
//!   to a stage (`regex_groups`); `independent-alone/N` the same rules with a stage each (not grouped), the
//!   engine before regex groups.
//! - `base`: the snippet and link rules only.
//!
//! Before measuring, every case's output is checked against a reference that applies the rules one after
//! another: the snippet rule, then `str::replace` for each literal rule on the whole page, then the link
//! rule. It also prints how long compiling and grouping 10,000 literal rules takes.

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use devproxy_native::rewrite::{rewrite_bytes, Rewriter, Rule, RuleReplacement, DEFAULT_MAX_MATCH_BYTES};

mod common;
use common::generate_html;

/// The proxied server, as the link rule looks for it.
const TARGET_HOST: &str = "127.0.0.1:8080";
/// The proxy, as the browser's Host header names it.
const LOCAL_HOST: &str = "127.0.0.1:3000";
const SNIPPET: &str = "<script async src=\"/__dev.js\"></script>";
const PAGE_BYTES: usize = 100 * 1024;
const CHUNK: usize = 16 * 1024;
const LITERAL_COUNTS: [usize; 5] = [1, 10, 100, 1_000, 10_000];
const REGEX_COUNTS: [usize; 3] = [1, 10, 100];
const INDEPENDENT_COUNTS: [usize; 4] = [1, 10, 100, 1_000];

/// Strings of the page and their replacements (as in `benches/lib/many-rules.js`): none overlaps another,
/// none is made by another's replacement, and none touches the target host, `<body` or the snippet.
const PAGE_LITERALS: [(&str, &str); 5] = [
    ("content-block", "content-panel"),
    ("cdn.example.com", "static.example.net"),
    ("throughput", "bandwidth"),
    ("nav-list", "menu-list"),
    ("theme-light", "theme-dark"),
];

/// `count` indices spread over `0..n` (the middle of `count` equal slices), fewer when `n < count`.
fn spread(n: usize, count: usize) -> Vec<usize> {
    let mut out: Vec<usize> = (0..n.min(count)).map(|k| (2 * k + 1) * n / (2 * count)).collect();
    out.dedup();
    out
}

/// The `n` literal rules as (text, replacement), in order.
fn literal_specs(n: usize) -> Vec<(String, String)> {
    let mut specs: Vec<(String, String)> =
        (0..n).map(|i| (format!("legacy-host-{i}.example.org"), format!("new-host-{i}.example.net"))).collect();
    for (at, (text, replace)) in spread(n, PAGE_LITERALS.len()).into_iter().zip(PAGE_LITERALS) {
        specs[at] = (text.to_string(), replace.to_string());
    }
    specs
}

/// A literal spec as the proxy gets it: a global `RegExp` whose source is the text escaped.
fn literal_rule(text: &str, replace: &str) -> Rule {
    let source = text.replace('.', r"\.");
    let rule = Rule::regex(&source, "g", RuleReplacement::Text(replace.to_string())).expect("literal rule");
    assert_eq!(rule.member_labels().len(), 1);
    rule
}

fn regex_rules(n: usize) -> Vec<Rule> {
    (0..n)
        .map(|i| Rule::regex(&format!(r#"data-track-{i}="[^"]*""#), "g", RuleReplacement::Text(String::new())))
        .collect::<Result<_, _>>()
        .expect("regex rule")
}

/// `independent/N`'s rules: the page's `sku-123` rule in the middle of `n - 1` that never match.
fn independent_rules(n: usize) -> Vec<Rule> {
    let text = |source: &str, replace: &str| {
        Rule::regex(source, "g", RuleReplacement::Text(replace.to_string())).expect("regex rule")
    };
    (0..n)
        .map(|i| match i == n / 2 {
            true => text(r"\b(sku|ticket)-(\d{3,})\b", "$1#$2"),
            false => text(&format!(r"legacy-(\d+)\.cdn-{i}\.org"), &format!("new-$1.cdn-{i}.io")),
        })
        .collect()
}

/// The snippet, `user` and the link rule, each a stage of its own (nothing grouped).
fn pipeline_alone(user: &[Rule]) -> Vec<Rule> {
    let mut rules = vec![Rule::snippet(SNIPPET)];
    rules.extend_from_slice(user);
    rules.push(Rule::links(TARGET_HOST, "http"));
    rules
}

/// The snippet, `user` and the link rule, grouped as the proxy groups them.
fn pipeline(user: &[Rule]) -> Vec<Rule> {
    let mut rules = Vec::with_capacity(user.len() + 2);
    rules.push(Rule::snippet(SNIPPET));
    rules.extend_from_slice(user);
    rules.push(Rule::links(TARGET_HOST, "http"));
    Rule::grouped(&rules)
}

fn chunked(page: &[u8], rules: &[Rule], out: &mut Vec<u8>) {
    out.clear();
    let mut rewriter = Rewriter::new(rules, LOCAL_HOST, DEFAULT_MAX_MATCH_BYTES);
    for piece in page.chunks(CHUNK) {
        rewriter.push(piece, out).expect("push");
    }
    rewriter.finish(out).expect("finish");
}

/// The rules applied one after another: the snippet, `str::replace` for each literal, the link rule.
fn reference(page: &[u8], literals: &[(String, String)]) -> Vec<u8> {
    let snippet = rewrite_bytes(page, &[Rule::snippet(SNIPPET)], LOCAL_HOST, DEFAULT_MAX_MATCH_BYTES).expect("snippet");
    let mut text = String::from_utf8(snippet).expect("the page is UTF-8");
    for (needle, replace) in literals {
        text = text.replace(needle.as_str(), replace);
    }
    rewrite_bytes(text.as_bytes(), &[Rule::links(TARGET_HOST, "http")], LOCAL_HOST, DEFAULT_MAX_MATCH_BYTES)
        .expect("links")
}

/// The removals whose attributes the words page names (benches/lib/many-rules.js `TRACKING_IN_PAGE`).
const TRACKING_IN_PAGE: [usize; 3] = [3, 11, 17];

/// Common words that overlap at their ends (`rust`/`stream`, `header`/`rewrite`, `domain`/`node`), as a
/// real rule list's do (issue 51): each found ~570 times in the words page.
const WORDS: [&str; 17] = [
    "header", "rewrite", "rust", "stream", "domain", "node", "proxy", "server", "client", "cache", "engine", "browser",
    "module", "request", "response", "token", "static",
];

/// Other words for [`WORDS`], in order.
const SYNONYMS: [&str; 17] = [
    "heading",
    "rework",
    "oxide",
    "flow",
    "realm",
    "vertex",
    "gateway",
    "host",
    "customer",
    "store",
    "motor",
    "navigator",
    "unit",
    "query",
    "reply",
    "ticket",
    "fixed",
];

/// A 100 KiB page whose text is mostly the words of [`WORDS`] (~9,700 matches), with links to the target.
fn words_page() -> Vec<u8> {
    let filler = ["the", "a", "of", "and", "to", "in", "is"];
    let mut page = String::from("<!doctype html><html><head><title>words</title></head><body class=\"page\">\n<p>");
    let (mut i, mut paragraph) = (0usize, 0usize);
    while page.len() < PAGE_BYTES {
        page.push_str(WORDS[(i * 7) % WORDS.len()]);
        page.push(' ');
        if i % 2 == 1 {
            page.push_str(filler[i % filler.len()]);
            page.push(' ');
        }
        if i % 40 == 39 {
            paragraph += 1;
            // Every 25th paragraph names one of three of the removals' attributes, as workload 14's page does.
            let attribute = match paragraph % 25 {
                0 => format!(
                    " data-tracking-{}=\"p{paragraph}\"",
                    TRACKING_IN_PAGE[(paragraph / 25) % TRACKING_IN_PAGE.len()]
                ),
                _ => String::new(),
            };
            page.push_str(&format!("<a href=\"http://{TARGET_HOST}/p/{i}\">more</a></p>\n<p{attribute}>"));
        }
        i += 1;
    }
    page.push_str("</p></body></html>\n");
    page.into_bytes()
}

/// A realistic list shaped as issue 51's: 83 host names that never match, the 17 words (each to its
/// capitalised self), and 20 attribute removals, three of which match a few times.
fn word_rules() -> (Vec<Rule>, Vec<(String, String)>) {
    let mut rules = Vec::new();
    let mut literals = Vec::new();
    for i in 0..83 {
        let (text, replace) = (format!("old-{i}.example.org"), format!("new-{i}.example.net"));
        rules.push(literal_rule(&text, &replace));
        literals.push((text, replace));
    }
    for word in WORDS {
        let replace = word.to_uppercase();
        rules.push(literal_rule(word, &replace));
        literals.push((word.to_string(), replace));
    }
    for i in 0..20 {
        let removal = |text: &str| Rule::regex(text, "g", RuleReplacement::Text(String::new())).expect("removal");
        rules.push(removal(&format!(r#" data-tracking-{i}="[^"]*""#)));
    }
    (rules, literals)
}

/// `text` without its ` data-tracking-I="..."` attributes for `I` in `0..20` (the words list's removals).
fn without_tracking(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = memchr::memmem::find(rest, b" data-tracking-") {
        let after = &rest[at + b" data-tracking-".len()..];
        let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
        let removed =
            std::str::from_utf8(&after[..digits]).ok().and_then(|d| d.parse::<usize>().ok()).filter(|&i| i < 20);
        let value = after[digits..].strip_prefix(b"=\"").and_then(|v| memchr::memchr(b'"', v).map(|end| end + 3));
        let (keep, skip) = match (removed, value) {
            (Some(_), Some(value)) => (at, b" data-tracking-".len() + digits + value),
            _ => (at + 1, 0),
        };
        out.extend_from_slice(&rest[..keep]);
        rest = &rest[keep + skip..];
    }
    out.extend_from_slice(rest);
    out
}

/// `RULES_LOOPS=N [RULES_CASE=words|words-base|words-part/{hosts,17-words,removals}|workload-12]`: that case
/// (`words` unless named) N times and nothing else, for callgrind (`--toggle-collect=rules::loops`, instructions
/// divided by N). Whether it ran.
fn profiled(case: &str, page: &[u8], rules: &[Rule], out: &mut Vec<u8>) -> bool {
    let Some(count) = std::env::var("RULES_LOOPS").ok().and_then(|n| n.parse::<usize>().ok()) else { return false };
    if std::env::var("RULES_CASE").as_deref().unwrap_or("words") != case {
        return false;
    }
    loops(count, page, rules, out);
    true
}

#[inline(never)]
fn loops(count: usize, page: &[u8], rules: &[Rule], out: &mut Vec<u8>) {
    for _ in 0..count {
        chunked(black_box(page), rules, out);
    }
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    memchr::memmem::find_iter(hay, needle).count()
}

fn benches(c: &mut Criterion) {
    let page = generate_html(TARGET_HOST, PAGE_BYTES);
    let mut out = Vec::with_capacity(page.len() * 2);

    // Compiling and grouping 10,000 literal rules, once.
    let specs = literal_specs(10_000);
    let started = Instant::now();
    let compiled = compile_literals(&specs);
    let compile = started.elapsed();
    let grouped = pipeline(&compiled);
    let total = started.elapsed();
    eprintln!(
        "10,000 literal rules: compiled in {:.1} ms, grouped in {:.1} ms ({:.1} ms in all), {} stages with \
         the snippet and link rules",
        compile.as_secs_f64() * 1e3,
        (total - compile).as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3,
        grouped.len()
    );
    let started = Instant::now();
    let regexes = regex_rules(100);
    eprintln!("100 regex rules: compiled in {:.1} ms", started.elapsed().as_secs_f64() * 1e3);

    let base = pipeline(&[]);
    let base_out = reference(&page, &[]);
    chunked(&page, &base, &mut out);
    assert!(out == base_out, "base: output differs from the reference");
    for (text, _) in PAGE_LITERALS {
        assert!(count(&page, text.as_bytes()) > 0, "{text} is not in the page");
    }
    assert_eq!(count(&page, b"legacy-host-"), 0);
    assert_eq!(count(&page, b"data-track-"), 0);
    eprintln!(
        "page: {} bytes, {} occurrences of {TARGET_HOST}; page literals: {}",
        page.len(),
        count(&page, TARGET_HOST.as_bytes()),
        PAGE_LITERALS.map(|(text, _)| format!("{text} x{}", count(&page, text.as_bytes()))).join(", ")
    );

    let mut literal_cases = Vec::new();
    for n in LITERAL_COUNTS {
        let specs = literal_specs(n);
        let rules = pipeline(&compile_literals(&specs));
        let expected = reference(&page, &specs);
        chunked(&page, &rules, &mut out);
        assert!(out == expected, "literals/{n}: output differs from str::replace in order");
        assert!(out != base_out, "literals/{n}: no rule matched");
        let sizes: Vec<usize> = rules.iter().map(|rule| rule.member_labels().len()).collect();
        eprintln!(
            "literals/{n}: {} stages after grouping (rules per stage {sizes:?}), output {} bytes",
            rules.len(),
            out.len()
        );
        literal_cases.push((n, rules));
    }
    let mut regex_cases = Vec::new();
    for n in REGEX_COUNTS {
        let rules = pipeline(&regexes[..n]);
        chunked(&page, &rules, &mut out);
        assert!(out == base_out, "regexes/{n}: output differs from the base output (no rule matches)");
        eprintln!("regexes/{n}: {} stages", rules.len());
        regex_cases.push((n, rules));
    }

    let mut independent_cases = Vec::new();
    for n in INDEPENDENT_COUNTS {
        let started = Instant::now();
        let user = independent_rules(n);
        let compiled = started.elapsed();
        let rules = pipeline(&user);
        let grouped = started.elapsed() - compiled;
        let alone = pipeline_alone(&user);
        let expected = rewrite_bytes(&page, &alone, LOCAL_HOST, DEFAULT_MAX_MATCH_BYTES).expect("rules in turn");
        chunked(&page, &rules, &mut out);
        assert!(out == expected, "independent/{n}: output differs from the rules in turn");
        assert!(out != base_out, "independent/{n}: no rule matched");
        eprintln!(
            "independent/{n}: {} stages after grouping, compiled in {:.1} ms, grouped in {:.1} ms",
            rules.len(),
            compiled.as_secs_f64() * 1e3,
            grouped.as_secs_f64() * 1e3
        );
        independent_cases.push((n, rules, alone));
    }

    let words = words_page();
    let (word_list, word_literals) = word_rules();
    let words_rules = pipeline(&word_list);
    let words_base = pipeline(&[]);
    chunked(&words, &words_rules, &mut out);
    let expected = without_tracking(&reference(&words, &word_literals));
    assert!(out == expected, "words: output differs from str::replace in order, then the removals");
    assert!(count(&words, b" data-tracking-") > count(&out, b" data-tracking-"), "words: no removal matched");
    let matches: usize = WORDS.iter().map(|w| count(&words, w.as_bytes())).sum();
    let word_sizes: Vec<usize> = words_rules.iter().map(|rule| rule.member_labels().len()).collect();
    eprintln!(
        "words: {} bytes, {matches} occurrences of the 17 words, {} stages (rules per stage {word_sizes:?})",
        words.len(),
        words_rules.len()
    );

    // Its parts, each with the snippet and link rules: where the time per match goes.
    let word_parts: Vec<(&str, Vec<Rule>)> = [("hosts", 0..83), ("17-words", 83..100), ("removals", 100..120)]
        .into_iter()
        .map(|(part, range)| (part, pipeline(&word_list[range])))
        .collect();
    if profiled("words", &words, &words_rules, &mut out) || profiled("words-base", &words, &words_base, &mut out) {
        return;
    }
    for (part, rules) in &word_parts {
        if profiled(&format!("words-part/{part}"), &words, rules, &mut out) {
            return;
        }
    }

    let mut group = c.benchmark_group("rules");
    group.throughput(Throughput::Bytes(page.len() as u64));
    group.sampling_mode(SamplingMode::Flat).sample_size(20);
    group.bench_function("base", |b| b.iter(|| chunked(black_box(&page), &base, &mut out)));
    group.bench_function("words-base", |b| b.iter(|| chunked(black_box(&words), &words_base, &mut out)));
    group.bench_function("words", |b| b.iter(|| chunked(black_box(&words), &words_rules, &mut out)));
    for (part, rules) in &word_parts {
        group.bench_function(format!("words-part/{part}"), |b| b.iter(|| chunked(black_box(&words), rules, &mut out)));
    }
    // The 17 words as users also write them: whole words (`/\bheader\b/g`) and in any case (`/header/gi`).
    for (variant, pattern, flags) in [("whole-words", r"\b{}\b", "g"), ("any-case", "{}", "gi")] {
        let word = |w: &str| Rule::regex(&pattern.replace("{}", w), flags, RuleReplacement::Text(w.to_uppercase()));
        let rules = pipeline(&WORDS.map(|w| word(w).expect("a word rule")));
        group
            .bench_function(format!("words-as/{variant}"), |b| b.iter(|| chunked(black_box(&words), &rules, &mut out)));
    }
    // The 17 words highlighted as one rule, `/\b(?:header|rewrite|...)\b/g` -> `<b>$&</b>` (one set of
    // alternatives, `alternation.rs`), and as 17 whole-word rules `/\bheader\b/g` -> `<b>header</b>`, whose
    // replacements begin and end with non-word characters where their needles have word characters: a later
    // word's `\b` beside an earlier one's replacement reads the written `>`, so each is a stage of its own.
    let alternation = format!(r"\b(?:{})\b", WORDS.join("|"));
    let rule = Rule::regex(&alternation, "g", RuleReplacement::Text("<b>$&</b>".into())).expect("alternation");
    let highlight = WORDS.map(|w| Rule::regex(&format!(r"\b{w}\b"), "g", RuleReplacement::Text(format!("<b>{w}</b>"))));
    for (variant, user) in
        [("alternation", vec![rule]), ("highlight", highlight.into_iter().collect::<Result<Vec<_>, _>>().expect("w"))]
    {
        let rules = pipeline(&user);
        chunked(&words, &rules, &mut out);
        let expected =
            rewrite_bytes(&words, &pipeline_alone(&user), LOCAL_HOST, DEFAULT_MAX_MATCH_BYTES).expect("in turn");
        assert!(out == expected, "words-as/{variant}: output differs from the rules in turn");
        group
            .bench_function(format!("words-as/{variant}"), |b| b.iter(|| chunked(black_box(&words), &rules, &mut out)));
    }
    // The whole list with the words replaced by other words (`header` -> `heading`), as a real list's are,
    // plain and as whole words: a word that ends where a host's replacement `new-...` begins (`domain`),
    // or another's replacement (`server` and `realm`), keeps the plain rules apart, not whole words.
    for (variant, pattern) in [("synonyms", "{}"), ("whole-synonyms", r"\b{}\b")] {
        let mut list = word_list.clone();
        for (rule, (word, synonym)) in list[83..100].iter_mut().zip(WORDS.iter().zip(SYNONYMS)) {
            *rule =
                Rule::regex(&pattern.replace("{}", word), "g", RuleReplacement::Text(synonym.into())).expect("a word");
        }
        let rules = pipeline(&list);
        chunked(&words, &rules, &mut out);
        let expected =
            rewrite_bytes(&words, &pipeline_alone(&list), LOCAL_HOST, DEFAULT_MAX_MATCH_BYTES).expect("in turn");
        assert!(out == expected, "words-list/{variant}: output differs from the rules in turn");
        eprintln!("words-list/{variant}: {} stages", rules.len());
        group.bench_function(format!("words-list/{variant}"), |b| {
            b.iter(|| chunked(black_box(&words), &rules, &mut out))
        });
    }
    // Workload 12's whole list (`manyRules({ literals: 100, regexes: 20 })`): the literals above, then 18
    // removals that never match and, at 5 and 15, the page's ` loading="lazy"` removal and `sku-123` rule.
    let mut workload_12 = compile_literals(&literal_specs(100));
    workload_12.extend((0..20).map(|i| {
        match i {
            5 => Rule::regex(r#" loading="[a-z]+""#, "g", RuleReplacement::Text(String::new())),
            15 => Rule::regex(r"\b(sku|ticket)-(\d{3,})\b", "g", RuleReplacement::Text("$1#$2".into())),
            _ => Rule::regex(&format!(r#"data-track-{i}="[^"]*""#), "g", RuleReplacement::Text(String::new())),
        }
        .expect("a workload 12 rule")
    }));
    let (rules, alone) = (pipeline(&workload_12), pipeline_alone(&workload_12));
    chunked(&page, &rules, &mut out);
    let expected = rewrite_bytes(&page, &alone, LOCAL_HOST, DEFAULT_MAX_MATCH_BYTES).expect("rules in turn");
    assert!(out == expected, "workload-12: output differs from the rules in turn");
    eprintln!("workload-12: {} stages", rules.len());
    if profiled("workload-12", &page, &rules, &mut out) {
        return;
    }
    group.bench_function("workload-12", |b| b.iter(|| chunked(black_box(&page), &rules, &mut out)));
    for (n, rules) in &literal_cases {
        group.bench_with_input(BenchmarkId::new("literals", n), rules, |b, rules| {
            b.iter(|| chunked(black_box(&page), rules, &mut out))
        });
    }
    for (n, rules) in &regex_cases {
        group.bench_with_input(BenchmarkId::new("regexes", n), rules, |b, rules| {
            b.iter(|| chunked(black_box(&page), rules, &mut out))
        });
    }
    for (n, rules, alone) in &independent_cases {
        group.bench_with_input(BenchmarkId::new("independent", n), rules, |b, rules| {
            b.iter(|| chunked(black_box(&page), rules, &mut out))
        });
        if *n <= 100 {
            group.bench_with_input(BenchmarkId::new("independent-alone", n), alone, |b, rules| {
                b.iter(|| chunked(black_box(&page), rules, &mut out))
            });
        }
    }
    group.finish();
}

/// The literal rules of `specs`, compiled (a fresh compile per case, as a proxy started with them would).
fn compile_literals(specs: &[(String, String)]) -> Vec<Rule> {
    specs.iter().map(|(text, replace)| literal_rule(text, replace)).collect()
}

criterion_group!(rules, benches);
criterion_main!(rules);
