//! The generated HTML the benches run on: a head with meta/link/script tags, a `<body class="...">`
//! near the top, nav lists, paragraphs with an absolute link every ~150-300 bytes, img srcset, and
//! inline scripts with JSON-escaped and protocol-relative URLs (benches/lib/html.js makes the same
//! shape for the peer benchmarks).

/// SplitMix64: small, fast, and the same sequence on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.range(0, items.len() - 1)]
    }
}

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "with",
    "was",
    "on",
    "be",
    "by",
    "this",
    "are",
    "from",
    "or",
    "an",
    "at",
    "which",
    "but",
    "not",
    "have",
    "has",
    "one",
    "can",
    "all",
    "their",
    "proxy",
    "server",
    "request",
    "response",
    "browser",
    "stream",
    "chunk",
    "header",
    "content",
    "page",
    "developer",
    "reload",
    "network",
    "latency",
    "session",
    "document",
    "element",
    "style",
    "script",
    "throughput",
    "compression",
    "encoding",
    "template",
    "component",
    "render",
    "cache",
    "origin",
    "configuration",
    "deployment",
    "performance",
    "measurement",
    "experience",
    "interface",
    "library",
    "café",
    "naïve",
    "über",
    "résumé",
    "déjà",
    "vu",
    "façade",
    "smörgåsbord",
    "東京",
    "データ",
    "—",
];

const SECTIONS: &[&str] = &["docs", "blog", "guides", "api", "products", "support", "news", "community"];

/// One paragraph: words with an absolute link every 20-40 words (one per ~150-300 bytes of HTML), now
/// and then a relative or external link, and tokens like `sku-10293` for the no-prefix regex case.
fn paragraph(rng: &mut Rng, host: &str, out: &mut String) {
    out.push_str("<p>");
    let words = rng.range(60, 140);
    let mut until_link = rng.range(20, 40);
    for i in 0..words {
        if i > 0 {
            out.push(' ');
        }
        until_link -= 1;
        if until_link == 0 {
            until_link = rng.range(20, 40);
            let section = rng.pick(SECTIONS);
            let id = rng.range(1, 99_999);
            match rng.range(0, 19) {
                0 => out.push_str(&format!("<a href=\"/{section}/{id}\">{}</a>", rng.pick(WORDS))),
                1 => out.push_str(&format!(
                    "<a href=\"https://cdn.example.com/{section}/{id}\" rel=\"noopener\">{}</a>",
                    rng.pick(WORDS)
                )),
                2 => out.push_str(&format!(
                    "<a href='http://{host}/{section}/{id}?ref=inline&amp;page={}'>{}</a>",
                    rng.range(1, 9),
                    rng.pick(WORDS)
                )),
                3 => out.push_str(&format!(
                    "<a href=\"http://{host}/{section}/{id}#section-{}\">{}</a>",
                    rng.range(1, 9),
                    rng.pick(WORDS)
                )),
                _ => out.push_str(&format!(
                    "<a href=\"http://{host}/{section}/{id}/{}-{}\">{} {}</a>",
                    rng.pick(WORDS),
                    rng.pick(WORDS),
                    rng.pick(WORDS),
                    rng.pick(WORDS)
                )),
            }
        } else if rng.range(0, 59) == 0 {
            let id = rng.range(100, 99_999);
            out.push_str(&format!("{}-{id}", rng.pick(&["sku", "item", "order", "build", "ticket"])));
        } else {
            out.push_str(rng.pick(WORDS));
        }
    }
    out.push_str(".</p>\n");
}

/// A deterministic, realistic HTML page of at least `size` bytes whose absolute links point at `host`.
pub fn generate_html(host: &str, size: usize) -> Vec<u8> {
    let mut rng = Rng(0x5EED_D3F0_0000_0001);
    let mut out = String::with_capacity(size + 64 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<title>Generated benchmark page</title>\n");
    out.push_str(&format!("<meta property=\"og:url\" content=\"http://{host}/\">\n"));
    out.push_str(&format!("<meta property=\"og:image\" content=\"http://{host}/img/social.png\">\n"));
    out.push_str(&format!("<link rel=\"canonical\" href=\"http://{host}/\">\n"));
    out.push_str(&format!("<link rel=\"icon\" href=\"http://{host}/favicon.ico\">\n"));
    for name in ["reset", "main", "theme", "print"] {
        out.push_str(&format!("<link rel=\"stylesheet\" href=\"http://{host}/assets/css/{name}.css?v=3\">\n"));
    }
    out.push_str(&format!("<link rel=\"preconnect\" href=\"//{host}\">\n"));
    for name in ["runtime", "vendor", "app"] {
        out.push_str(&format!("<script src=\"http://{host}/assets/js/{name}.js\" defer></script>\n"));
    }
    out.push_str(&format!(
        "<script>window.__CONFIG__ = {{\"api\":\"http:\\/\\/{host}\\/api\\/v1\",\"cdn\":\"//{host}/static\",\"ws\":'//{host}/socket'}};</script>\n"
    ));
    out.push_str("<style>body{margin:0;font-family:system-ui} .nav-list li{display:inline-block}</style>\n");
    out.push_str("</head>\n<body class=\"page page-home theme-light has-sidebar\" data-route=\"/\">\n");
    out.push_str("<header class=\"site-header\"><nav><ul class=\"nav-list\">\n");
    for section in SECTIONS {
        out.push_str(&format!("<li><a href=\"http://{host}/{section}/\">{section}</a></li>\n"));
    }
    out.push_str("</ul></nav></header>\n<main>\n");
    let closing = "</main>\n<footer><p>Generated for the devproxy-native benchmarks.</p></footer>\n</body>\n</html>\n";
    let mut n = 0usize;
    while out.len() + closing.len() < size {
        n += 1;
        let section = rng.pick(SECTIONS);
        out.push_str(&format!("<section id=\"s{n}\" class=\"content-block col-{}\">\n", rng.range(1, 12)));
        out.push_str(&format!(
            "<h2><a href=\"http://{host}/{section}/{n}/\">{} {}</a></h2>\n",
            rng.pick(WORDS),
            rng.pick(WORDS)
        ));
        for _ in 0..rng.range(2, 5) {
            paragraph(&mut rng, host, &mut out);
        }
        if n.is_multiple_of(3) {
            let id = rng.range(1, 99_999);
            out.push_str(&format!(
                "<img src=\"http://{host}/img/{id}.jpg\" srcset=\"http://{host}/img/{id}-480w.jpg 480w, http://{host}/img/{id}-800w.jpg 800w, http://{host}/img/{id}-1200w.jpg 1200w\" sizes=\"(max-width: 600px) 480px, 800px\" alt=\"{}\" loading=\"lazy\">\n",
                rng.pick(WORDS)
            ));
        }
        if n.is_multiple_of(4) {
            out.push_str("<ul class=\"nav-list related\">\n");
            for _ in 0..rng.range(3, 6) {
                let s = rng.pick(SECTIONS);
                let id = rng.range(1, 99_999);
                out.push_str(&format!("<li><a href=\"http://{host}/{s}/{id}/\">{}</a></li>\n", rng.pick(WORDS)));
            }
            out.push_str("</ul>\n");
        }
        if n.is_multiple_of(8) {
            let id = rng.range(1, 99_999);
            out.push_str(&format!(
                "<script>window.__DATA_{n}__ = {{\"self\":\"http:\\/\\/{host}\\/api\\/items\\/{id}\",\"next\":\"https:\\/\\/{host}\\/api\\/items\\/{}\",\"asset\":\"//{host}/static/{id}.js\",\"page\":'//{host}/page/{n}'}};</script>\n",
                id + 1
            ));
        }
        out.push_str("</section>\n");
    }
    out.push_str(closing);
    out.into_bytes()
}

/// An API reference page (the shape of rustdoc's or TypeDoc's): one section per method, each the same
/// markup around other names, types and a sentence. Its repeats are long and far apart, which a
/// one-probe match finder misses: zlib's level 1 sends ~1.4x level 6's bytes here.
#[allow(dead_code)] // used by the codec bench and tests/page_weight.rs, not by every bench
pub fn generate_doc_page(size: usize) -> Vec<u8> {
    const NAMES: &[&str] = &[
        "push",
        "pop",
        "insert",
        "remove",
        "retain",
        "dedup",
        "drain",
        "clear",
        "len",
        "split_off",
        "resize",
        "extend",
        "truncate",
        "reserve",
        "shrink",
        "append",
        "swap",
        "sort",
        "reverse",
        "contains",
        "iter",
    ];
    const TYPES: &[&str] = &["usize", "T", "&T", "Option<T>", "&mut [T]", "Vec<T, A>", "bool", "Range<usize>"];
    let mut rng = Rng(0x5EED_D0C5_0000_0002);
    let mut out = String::with_capacity(size + 4096);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Vec in std::vec</title>");
    out.push_str(
        "<link rel=\"stylesheet\" href=\"../../static.files/rustdoc.css\"></head>\n<body class=\"rustdoc struct\">\n",
    );
    let mut index = 0;
    while out.len() < size {
        let name = format!("{}_{}", rng.pick(NAMES), rng.pick(NAMES));
        let (arg, ty, ret) = (rng.pick(NAMES), rng.pick(TYPES), rng.pick(TYPES));
        let since = rng.range(1, 90);
        out.push_str(&format!(
            "<details class=\"toggle method-toggle\" open><summary><section id=\"method.{name}\" class=\"method\">\
             <span class=\"rightside\"><span class=\"since\" title=\"Stable since Rust version 1.{since}.0\">1.{since}.0</span> \
             &middot; <a class=\"src\" href=\"../../src/alloc/vec/mod.rs.html#{line}\">Source</a></span>\
             <h4 class=\"code-header\">pub fn <a href=\"#method.{name}\" class=\"fn\">{name}</a>(&amp;mut self, {arg}: {ty}) -&gt; {ret}</h4>\
             </section></summary><div class=\"docblock\"><p>",
            line = 1000 + index * 17,
        ));
        for _ in 0..rng.range(8, 30) {
            out.push_str(rng.pick(WORDS));
            out.push(' ');
        }
        out.push_str("</p></div></details>\n");
        index += 1;
    }
    out.push_str("</body></html>\n");
    out.into_bytes()
}
