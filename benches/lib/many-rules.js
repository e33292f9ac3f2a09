'use strict';
// The user rules of workloads 12 and 13 (issue 32, many rules in one pass), generated deterministically in
// one place for every contender: `manyRules()` in the shape of devproxy-native's `rewriteRules`,
// `manyRulesNginx()` the same rules as nginx `subs_filter` directives.
//
// Literal rules `legacy-host-I.example.org` -> `new-host-I.example.net` (never in the page), except five
// spread over the list whose strings do occur in the page of benches/lib/html.js, each replaced by a
// distinct string that no rule matches. Regex rules `data-track-I="[^"]*"` -> '' (never in the page),
// except two that match: one removes ` loading="lazy"` from the images, one rewrites `sku-123`/`ticket-456`.
// No rule touches the upstream's host, `<body` or the snippet, so the link rewrite and the snippet work
// as in workload 1.
//
// Workload 14 (issue 51 item 2, a realistic list that matches often; `benches/rules.rs`'s `word_rules`):
// `wordRules()` / `wordRulesNginx()`, 83 literal host names `old-I.example.org` -> `new-I.example.net` (never
// in the page), the 17 `WORDS` each replaced by its uppercase form (a global regex of the escaped word; each
// found ~610 times in the words page of benches/lib/html.js, `generateWordsHtml`), then 20 removals
// ` data-tracking-I="[^"]*"` -> '' (three of which match the page a few times). The snippet goes in before
// the user rules (Browsersync's order), so its `browser` and `client` come out uppercase too.
// Workload 15: the same list with the words as whole words replaced by other words (`wordRules({ wholeSynonyms:
// true })`: `/\bheader\b/g` -> `heading`).

/** Literals of the page (counts on the 100 KB page in parentheses), non-overlapping with each other. */
const PAGE_LITERALS = [
  ['content-block', 'content-panel'], // every section's class (~32)
  ['cdn.example.com', 'static.example.net'], // off-site links (~19)
  ['throughput', 'bandwidth'], // a word of the text (~170)
  ['nav-list', 'menu-list'], // nav lists' class (~9)
  ['theme-light', 'theme-dark'], // the body's class (1)
];
/** Regexes of the page: [source, replacement] (PCRE and JS read both alike). */
const PAGE_REGEXES = [
  [' loading="[a-z]+"', ''], // the images' attribute (~10)
  ['\\b(sku|ticket)-(\\d{3,})\\b', '$1#$2'], // ids in the text (~90)
];

/** `count` indices spread over 0..n-1 (the middle of `count` equal slices), fewer when n < count. */
function spread(n, count) {
  const out = new Set();
  for (let k = 0; k < Math.min(n, count); k++) out.add(Math.floor(((2 * k + 1) * n) / (2 * count)));
  return [...out];
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * The rules as data: `{ kind: 'literal', text, replace }` or `{ kind: 'regex', source, replace }`, all global,
 * literals first, then regexes.
 */
function ruleSpecs({ literals = 100, regexes = 20 } = {}) {
  const out = [];
  const pageLiterals = new Map(spread(literals, PAGE_LITERALS.length).map((at, k) => [at, PAGE_LITERALS[k]]));
  for (let i = 0; i < literals; i++) {
    const [text, replace] = pageLiterals.get(i) || [`legacy-host-${i}.example.org`, `new-host-${i}.example.net`];
    out.push({ kind: 'literal', text, replace });
  }
  const pageRegexes = new Map(spread(regexes, PAGE_REGEXES.length).map((at, k) => [at, PAGE_REGEXES[k]]));
  for (let i = 0; i < regexes; i++) {
    const [source, replace] = pageRegexes.get(i) || [`data-track-${i}="[^"]*"`, ''];
    out.push({ kind: 'regex', source, replace });
  }
  return out;
}

/** The rules for devproxy-native's `rewriteRules`: `{ match: RegExp (global), replace: string }`. */
function manyRules(opts) {
  return ruleSpecs(opts).map(toRule);
}

/**
 * The same rules as nginx directives: `subs_filter 'legacy-host-0.example.org' 'new-host-0.example.net' g;`
 * (a fixed string without `r`) and `subs_filter 'data-track-0="[^"]*"' '' gr;` (PCRE with `r`).
 */
function manyRulesNginx(opts) {
  return ruleSpecs(opts).map(toNginx);
}

/**
 * Common words that overlap at their ends (`rust`/`stream`, `header`/`rewrite`, `domain`/`node`), as a real
 * rule list's do (issue 51); the same list as `WORDS` in benches/rules.rs.
 */
const WORDS = [
  'header', 'rewrite', 'rust', 'stream', 'domain', 'node', 'proxy', 'server', 'client', 'cache', 'engine', 'browser',
  'module', 'request', 'response', 'token', 'static',
];
/** The removals (by index I of `data-tracking-I`) whose attribute the words page carries a few times. */
const TRACKING_IN_PAGE = [3, 11, 17];

/** Other words for `WORDS`, in order (benches/rules.rs's `SYNONYMS`). */
const SYNONYMS = [
  'heading', 'rework', 'oxide', 'flow', 'realm', 'vertex', 'gateway', 'host', 'customer', 'store', 'motor', 'navigator',
  'unit', 'query', 'reply', 'ticket', 'fixed',
];

/**
 * Workload 14's rules as data, in order (the shape of `ruleSpecs`): 83 hosts, the 17 words, 20 removals.
 * `wholeSynonyms` (workload 15): each word as a whole word (`\bheader\b`) replaced by another word
 * (`heading`), as a real list's words are.
 */
function wordRuleSpecs({ wholeSynonyms = false } = {}) {
  const out = [];
  for (let i = 0; i < 83; i++) out.push({ kind: 'literal', text: `old-${i}.example.org`, replace: `new-${i}.example.net` });
  WORDS.forEach((word, i) => {
    out.push(
      wholeSynonyms
        ? { kind: 'regex', source: `\\b${word}\\b`, replace: SYNONYMS[i] }
        : { kind: 'literal', text: word, replace: word.toUpperCase() },
    );
  });
  for (let i = 0; i < 20; i++) out.push({ kind: 'regex', source: ` data-tracking-${i}="[^"]*"`, replace: '' });
  return out;
}

/** A rule spec for devproxy-native's `rewriteRules`: a global RegExp (literals escaped). */
const toRule = (r) => ({ match: new RegExp(r.kind === 'literal' ? escapeRegExp(r.text) : r.source, 'g'), replace: r.replace });
/** A rule spec as an nginx directive: a fixed string without `r` (literals), PCRE with `r` (regexes). */
function toNginx(r) {
  const q = (s) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return r.kind === 'literal' ? `subs_filter ${q(r.text)} ${q(r.replace)} g;` : `subs_filter ${q(r.source)} ${q(r.replace)} gr;`;
}

/** Workload 14's rules (15's with `{ wholeSynonyms: true }`) for devproxy-native's `rewriteRules`. */
const wordRules = (opts) => wordRuleSpecs(opts).map(toRule);
/** The same as nginx `subs_filter` directives. */
const wordRulesNginx = (opts) => wordRuleSpecs(opts).map(toNginx);

module.exports = {
  manyRules,
  manyRulesNginx,
  ruleSpecs,
  wordRules,
  wordRulesNginx,
  wordRuleSpecs,
  WORDS,
  SYNONYMS,
  TRACKING_IN_PAGE,
};
