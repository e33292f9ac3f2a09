'use strict';
// devproxy-native through its Node API, in its own process (a child of benches/run.js).
const path = require('node:path');

const [target, snippet, staticDir, variant] = process.argv.slice(2);
// Workload 6's local files, under /static only: the other workloads' paths never look at the disk.
const serveStatic = staticDir ? [{ route: '/static', dir: staticDir }] : undefined;
// `hook`: a `proxy.proxyReq` function that sets a header on every upstream request (workload 7).
let hookCalls = 0;
// `inspector-off`: `inspector: false` (workload 10 compares it with the default, inspector on).
const inspector = variant === 'inspector-off' ? false : undefined
const proxy =
  variant === 'hook'
    ? { target, proxyReq: (proxyReq) => { hookCalls++; proxyReq.setHeader('x-bench-hook', '1'); } }
    : target;

// `record`: every exchange recorded (workload 11). To /dev/null: the tee, decoding and JSON cost is
// measured, not the disk's speed (a 100 KB page at thousands of req/s would fill gigabytes).
const record = variant === 'record' ? { path: '/dev/null' } : undefined;
// `always`: pages fetched compressed even from this loopback upstream (`upstreamCompression: 'always'`), as
// from a CDN or any remote target: a br page is decoded and re-encoded as br (workload 8).
const upstreamCompression = variant === 'always' ? 'always' : undefined;
// `rules:L:R`: L literal and R regex user rules (benches/lib/many-rules.js) as `rewriteRules` (workloads 12, 13).
const rulesVariant = /^rules:(\d+):(\d+)$/.exec(variant || '');
// `words`: workload 14's 120 rules (83 hosts, 17 common words, 20 removals; many-rules.js `wordRules()`);
// `whole-synonyms`: workload 15's (the words as whole words replaced by other words).
const manyRules = require('./many-rules');
const rewriteRules = rulesVariant
  ? manyRules.manyRules({ literals: Number(rulesVariant[1]), regexes: Number(rulesVariant[2]) })
  : variant === 'words' || variant === 'whole-synonyms'
    ? manyRules.wordRules({ wholeSynonyms: variant === 'whole-synonyms' })
    : undefined;

(async () => {
  const lib = require(path.join(__dirname, '..', '..'));
  let server;
  try {
    server = await lib.start({ proxy, port: 0, snippet, quiet: true, serveStatic, record, inspector, upstreamCompression, rewriteRules });
  } catch (err) {
    // An older build may not know `quiet`.
    if (!/quiet/i.test(String(err && err.message))) throw err;
    server = await lib.start({ proxy: target, port: 0, snippet, serveStatic, rewriteRules });
  }
  process.send({ ready: true, port: server.port });
  process.on('message', (m) => {
    if (m === 'hookCalls') process.send({ hookCalls });
    if (m === 'recording') process.send({ recording: server.recording ? server.recording() : null });
  });
  process.on('disconnect', async () => {
    try {
      await Promise.race([server.stop(), new Promise((r) => setTimeout(r, 2000))]);
    } finally {
      process.exit(0);
    }
  });
})().catch((err) => {
  process.send({ error: String((err && err.stack) || err) });
  process.exit(1);
});
