'use strict';
// Deterministic, realistic HTML (the same shape as the generator in benches/rewrite.rs): a head with
// meta/link/script tags, a `<body class="...">` near the top, nav lists, paragraphs of text with an
// absolute link to `host` every ~150-300 bytes, img srcset, and inline scripts with JSON-escaped and
// protocol-relative URLs. `token`, when given, is appended to every link's query (`?u=TOKEN`), which
// lets the upstream make a per-request-unique page by splitting on it.

const WORDS = [
  'the', 'of', 'and', 'to', 'in', 'is', 'that', 'for', 'it', 'as', 'with', 'was', 'on', 'be', 'by', 'this',
  'are', 'from', 'or', 'an', 'at', 'which', 'but', 'not', 'have', 'has', 'one', 'can', 'all', 'their',
  'proxy', 'server', 'request', 'response', 'browser', 'stream', 'chunk', 'header', 'content', 'page',
  'developer', 'reload', 'network', 'latency', 'session', 'document', 'element', 'style', 'script',
  'throughput', 'compression', 'encoding', 'template', 'component', 'render', 'cache', 'origin',
  'configuration', 'deployment', 'performance', 'measurement', 'experience', 'interface', 'library',
  'café', 'naïve', 'über', 'résumé', 'déjà', 'vu', 'façade', 'smörgåsbord', '東京', 'データ', '—',
];
const SECTIONS = ['docs', 'blog', 'guides', 'api', 'products', 'support', 'news', 'community'];

/** mulberry32: tiny deterministic PRNG. */
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    range: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (xs) => xs[Math.floor(next() * xs.length)],
  };
}

/** At least `size` bytes (UTF-8) of HTML whose absolute links point at `host` ("127.0.0.1:8080"). */
function generateHtml(host, size, token) {
  const r = rng(0x5eedd3f0);
  const q = token === undefined ? '' : `?u=${token}`;
  const parts = [];
  let bytes = 0;
  const push = (s) => {
    parts.push(s);
    bytes += Buffer.byteLength(s);
  };
  push('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n');
  push('<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>Benchmark page</title>\n');
  push(`<meta property="og:url" content="http://${host}/${q}">\n<link rel="canonical" href="http://${host}/${q}">\n`);
  push(`<link rel="icon" href="http://${host}/favicon.ico${q}">\n`);
  for (const n of ['reset', 'main', 'theme']) push(`<link rel="stylesheet" href="http://${host}/assets/css/${n}.css${q}">\n`);
  push(`<link rel="preconnect" href="//${host}">\n`);
  for (const n of ['runtime', 'vendor', 'app']) push(`<script src="http://${host}/assets/js/${n}.js${q}" defer></script>\n`);
  push(`<script>window.__CONFIG__ = {"api":"http:\\/\\/${host}\\/api\\/v1","cdn":"//${host}/static","ws":'//${host}/socket'};</script>\n`);
  push('</head>\n<body class="page page-home theme-light has-sidebar" data-route="/">\n<header><nav><ul class="nav-list">\n');
  for (const s of SECTIONS) push(`<li><a href="http://${host}/${s}/${q}">${s}</a></li>\n`);
  push('</ul></nav></header>\n<main>\n');
  const closing = '</main>\n<footer><p>Generated for the devproxy-native benchmarks.</p></footer>\n</body>\n</html>\n';
  let n = 0;
  while (bytes + closing.length < size) {
    n++;
    const section = r.pick(SECTIONS);
    push(`<section id="s${n}" class="content-block col-${r.range(1, 12)}">\n`);
    push(`<h2><a href="http://${host}/${section}/${n}/${q}">${r.pick(WORDS)} ${r.pick(WORDS)}</a></h2>\n`);
    const paragraphs = r.range(2, 5);
    for (let p = 0; p < paragraphs; p++) {
      const words = r.range(60, 140);
      let untilLink = r.range(20, 40);
      const w = [];
      for (let i = 0; i < words; i++) {
        if (--untilLink === 0) {
          untilLink = r.range(20, 40);
          const s = r.pick(SECTIONS);
          const id = r.range(1, 99999);
          const kind = r.range(0, 19);
          if (kind === 0) w.push(`<a href="/${s}/${id}">${r.pick(WORDS)}</a>`);
          else if (kind === 1) w.push(`<a href="https://cdn.example.com/${s}/${id}" rel="noopener">${r.pick(WORDS)}</a>`);
          else if (kind === 2) w.push(`<a href='http://${host}/${s}/${id}${q}'>${r.pick(WORDS)}</a>`);
          else w.push(`<a href="http://${host}/${s}/${id}/${r.pick(WORDS)}-${r.pick(WORDS)}${q}">${r.pick(WORDS)} ${r.pick(WORDS)}</a>`);
        } else if (r.range(0, 59) === 0) {
          w.push(`${r.pick(['sku', 'item', 'order', 'build', 'ticket'])}-${r.range(100, 99999)}`);
        } else {
          w.push(r.pick(WORDS));
        }
      }
      push(`<p>${w.join(' ')}.</p>\n`);
    }
    if (n % 3 === 0) {
      const id = r.range(1, 99999);
      push(`<img src="http://${host}/img/${id}.jpg${q}" srcset="http://${host}/img/${id}-480w.jpg 480w, http://${host}/img/${id}-800w.jpg 800w" alt="${r.pick(WORDS)}" loading="lazy">\n`);
    }
    if (n % 4 === 0) {
      push('<ul class="nav-list related">\n');
      const items = r.range(3, 6);
      for (let i = 0; i < items; i++) push(`<li><a href="http://${host}/${r.pick(SECTIONS)}/${r.range(1, 99999)}/${q}">${r.pick(WORDS)}</a></li>\n`);
      push('</ul>\n');
    }
    if (n % 8 === 0) {
      const id = r.range(1, 99999);
      push(`<script>window.__DATA_${n}__ = {"self":"http:\\/\\/${host}\\/api\\/items\\/${id}","asset":"//${host}/static/${id}.js","page":'//${host}/page/${n}'};</script>\n`);
    }
    push('</section>\n');
  }
  push(closing);
  return parts.join('');
}

/**
 * Workload 14's page (benches/rules.rs's `words_page`, plus a few tracking attributes): at least `size` bytes
 * of HTML whose text is mostly the 17 words of benches/lib/many-rules.js (each ~610 times in 100 KiB),
 * every other one followed by a short filler word, a link to `host` closing every paragraph of 40 words,
 * and every 25th paragraph carrying a `data-tracking-I="..."` attribute that one of the rules removes.
 */
function generateWordsHtml(host, size) {
  const { WORDS: words, TRACKING_IN_PAGE: tracking } = require('./many-rules');
  const filler = ['the', 'a', 'of', 'and', 'to', 'in', 'is'];
  let page = '<!doctype html><html><head><title>words</title></head><body class="page">\n<p>';
  let paragraph = 0;
  for (let i = 0; page.length < size; i++) {
    page += `${words[(i * 7) % words.length]} `;
    if (i % 2 === 1) page += `${filler[i % filler.length]} `;
    if (i % 40 === 39) {
      paragraph++;
      const attr = paragraph % 25 === 0 ? ` data-tracking-${tracking[(paragraph / 25) % tracking.length]}="p${paragraph}"` : '';
      page += `<a href="http://${host}/p/${i}">more</a></p>\n<p${attr}>`;
    }
  }
  return `${page}</p></body></html>\n`;
}

module.exports = { generateHtml, generateWordsHtml };
