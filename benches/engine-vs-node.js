#!/usr/bin/env node
// Node's String.prototype.replace doing Browsersync's rules on the body the criterion bench wrote.
//
//   cargo bench --no-default-features --bench rewrite -- --warm-up-time 1 --measurement-time 5
//   node benches/engine-vs-node.js            # prints Node MB/s, the engine's (from criterion) and ratios
//   node benches/engine-vs-node.js --json     # the same as one JSON object
//
// The rules are Browsersync's own: `rewriteLinks` from browser-sync/dist/server/proxy-utils.js and the
// default snippet rule (/<body[^>]*>/i, match + snippet), applied by resp-modifier's applyRules exactly as
// Browsersync's proxy does (snippet first, then the link rewrite), with Host: 127.0.0.1:3000.
// The result is compared with the engine's output for the same body (benches/.work/engine-out.html).
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const RUNS = 5;
const TARGET = { hostname: '127.0.0.1', port: '8080' };
const LOCAL_HOST = '127.0.0.1:3000';
const SNIPPET = '<script async src="/__dev.js"></script>';
const root = path.join(__dirname, '..');
const work = path.join(__dirname, '.work');

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function browsersyncRules() {
  const { rewriteLinks } = require('browser-sync/dist/server/proxy-utils');
  const defaults = require('browser-sync/dist/default-config');
  const snippetRule = defaults.snippetOptions.rule;
  return [
    // browser-sync/dist/snippet.js getRegex(): once, fn(req, res, match) => rule.fn(snippet, match)
    { match: snippetRule.match, fn: (req, res, match) => snippetRule.fn(SNIPPET, match), once: true },
    rewriteLinks(TARGET),
  ];
}

function applyRules(rules, body, req, res) {
  // resp-modifier's own implementation, as Browsersync calls it.
  return require('resp-modifier/lib/utils').applyRules(rules, body, req, res);
}

function criterionMBps(name, bytes) {
  const file = path.join(root, 'target', 'criterion', 'rewrite', name, 'new', 'estimates.json');
  try {
    const est = JSON.parse(fs.readFileSync(file, 'utf8'));
    const ns = est.median.point_estimate;
    return { mbps: bytes / (ns / 1e9) / 1e6, ms: ns / 1e6, at: fs.statSync(file).mtime.toISOString() };
  } catch {
    return null;
  }
}

function main() {
  const json = process.argv.includes('--json');
  const bodyFile = path.join(work, 'body.html');
  if (!fs.existsSync(bodyFile)) {
    console.error(`${bodyFile} is missing: run \`cargo bench --no-default-features --bench rewrite\` first`);
    process.exit(1);
  }
  const bytes = fs.statSync(bodyFile).size;
  const body = fs.readFileSync(bodyFile, 'utf8');
  const req = { headers: { host: LOCAL_HOST }, url: '/' };
  const res = {};

  // Warm-up (JIT, regex compilation), and the correctness check against the engine.
  const out = applyRules(browsersyncRules(), body, req, res);
  let sameAsEngine = null;
  const engineOut = path.join(work, 'engine-out.html');
  if (fs.existsSync(engineOut)) sameAsEngine = fs.readFileSync(engineOut, 'utf8') === out;

  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const rules = browsersyncRules(); // fresh RegExp objects (lastIndex), as per response in Browsersync
    const t0 = process.hrtime.bigint();
    const r = applyRules(rules, body, req, res);
    const t1 = process.hrtime.bigint();
    if (r.length !== out.length) throw new Error('non-deterministic output');
    times.push(Number(t1 - t0) / 1e6);
  }
  const nodeMs = median(times);
  const nodeMBps = bytes / (nodeMs / 1e3) / 1e6;

  // The no-literal-prefix regex, for reference.
  const reTimes = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = process.hrtime.bigint();
    body.replace(/\b[a-z]+-[0-9]{3,}\b/g, '[$&]');
    reTimes.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const reMBps = bytes / (median(reTimes) / 1e3) / 1e6;

  const engine = {
    whole: criterionMBps('a_links_snippet_whole', bytes),
    pushWhole: criterionMBps('a2_links_snippet_push_whole', bytes),
    chunks4k: criterionMBps('b_links_snippet_4k_chunks', bytes),
    noPrefix: criterionMBps('c_no_prefix_regex_whole', bytes),
  };
  const result = {
    node: process.version,
    bodyBytes: bytes,
    runs: RUNS,
    nodeLinksSnippet: { medianMs: +nodeMs.toFixed(2), MBps: +nodeMBps.toFixed(1), runsMs: times.map((t) => +t.toFixed(2)) },
    nodeNoPrefixRegex: { MBps: +reMBps.toFixed(1) },
    outputIdenticalToEngine: sameAsEngine,
    engine,
    ratios: {
      engineWholeVsNode: engine.whole && +(engine.whole.mbps / nodeMBps).toFixed(2),
      engine4kVsNode: engine.chunks4k && +(engine.chunks4k.mbps / nodeMBps).toFixed(2),
      engineNoPrefixVsNode: engine.noPrefix && +(engine.noPrefix.mbps / reMBps).toFixed(2),
    },
  };
  if (json) {
    console.log(JSON.stringify(result, null, 2));
    return;
  }
  console.log(`body: ${bytes} bytes; Node ${process.version}; ${RUNS} runs each`);
  console.log(`Node replace, Browsersync snippet + rewriteLinks: median ${nodeMs.toFixed(1)} ms = ${nodeMBps.toFixed(1)} MB/s  (runs: ${times.map((t) => t.toFixed(1)).join(', ')} ms)`);
  console.log(`Node replace, /\\b[a-z]+-[0-9]{3,}\\b/g:              ${reMBps.toFixed(1)} MB/s`);
  console.log(`output identical to the engine's: ${sameAsEngine === null ? 'engine output missing' : sameAsEngine}`);
  for (const [k, v] of Object.entries(engine)) {
    if (v) console.log(`engine (criterion median, ${v.at}) ${k}: ${v.ms.toFixed(2)} ms = ${v.mbps.toFixed(1)} MB/s`);
  }
  for (const [k, v] of Object.entries(result.ratios)) if (v) console.log(`ratio ${k}: ${v}x`);
}

main();
