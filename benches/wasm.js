#!/usr/bin/env node
// The rewrite engine as WebAssembly (devproxy-native/wasm) against the same engine native (the addon),
// in one run, on the 100 KB page of benches/lib/html.js cut into 16 KiB chunks (a body as it streams).
//
//   npm run build && npm run build:wasm   # both engines built
//   node benches/wasm.js                  # MB/s of each, medians of 7 rounds, and the ratios
//   node benches/wasm.js --json           # the same as one JSON object
//   WASM_ENTRY=/other/__test__/fixtures/wasm-hooks.mjs node benches/wasm.js   # another checkout's WebAssembly build (say, without SIMD)
//
// Both run `rewrite([chunks], rules)` (the streaming engine, function-free rules compiled once per round
// through the `__rewriteEach` test hook, so compiling is not measured) on 20 copies of the page per round.
// A last line measures the Worker's path: `createRewriter` with the link rewrite, the snippet and the 120
// rules, through a web `TransformStream` (WebAssembly only: the addon has no such entry).
'use strict';

const path = require('node:path');
const { generateHtml } = require('./lib/html');
const { manyRules } = require('./lib/many-rules');

const ROUNDS = 7;
const COPIES = 20;
const CHUNK = 16 * 1024;

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function chunks(buffer) {
  const out = [];
  for (let at = 0; at < buffer.length; at += CHUNK) out.push(buffer.subarray(at, at + CHUNK));
  return out;
}

/** MB/s of `fn` (which rewrites `bytes` in all), median over the rounds, after one warm-up round. */
function mbps(fn, bytes) {
  fn();
  const rates = [];
  for (let i = 0; i < ROUNDS; i++) {
    const start = process.hrtime.bigint();
    fn();
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    rates.push(bytes / 1e6 / seconds);
  }
  return median(rates);
}

async function streamMbps(wasm, page, rules, bytes) {
  const once = async () => {
    const body = new ReadableStream({
      start(controller) {
        for (let i = 0; i < COPIES; i++) for (const c of chunks(page)) controller.enqueue(c);
        controller.close();
      },
    });
    const options = { from: 'http://127.0.0.1:8080', to: 'http://127.0.0.1:3000', snippet: '<script async src="/__dev.js"></script>' };
    await new Response(body.pipeThrough(wasm.createRewriter(rules, options))).arrayBuffer();
  };
  await once();
  const rates = [];
  for (let i = 0; i < ROUNDS; i++) {
    const start = process.hrtime.bigint();
    await once();
    rates.push(bytes / 1e6 / (Number(process.hrtime.bigint() - start) / 1e9));
  }
  return median(rates);
}

async function main() {
  // The test hooks of a clone's build (the `test-hooks` feature: scripts/prepare.js).
  const native = require(path.join(__dirname, '..', '__test__', 'helpers.js')).hooks();
  const entry = process.env.WASM_ENTRY ? require('node:url').pathToFileURL(process.env.WASM_ENTRY).href : '../__test__/fixtures/wasm-hooks.mjs';
  const wasm = await import(entry);
  const page = Buffer.from(generateHtml('127.0.0.1:8080', 100 * 1024));
  const inputs = Array.from({ length: COPIES }, () => chunks(page));
  const bytes = page.length * COPIES;
  const workloads = [
    ['1 regex rule (the target origin)', [{ match: /http:\/\/127\.0\.0\.1:8080/g, replace: '//127.0.0.1:3000' }]],
    ['10 literal rules', manyRules({ literals: 10, regexes: 0 })],
    ['100 literal rules', manyRules({ literals: 100, regexes: 0 })],
    ['120 rules (100 literal, 20 regex; workload 12)', manyRules()],
  ];
  const results = [];
  for (const [name, rules] of workloads) {
    const same = native.__rewriteEach([inputs[0]], rules)[0] === wasm.__rewriteEach([inputs[0]], rules)[0];
    if (!same) throw new Error(`${name}: the engines' outputs differ`);
    const nativeRate = mbps(() => native.__rewriteEach(inputs, rules), bytes);
    const wasmRate = mbps(() => wasm.__rewriteEach(inputs, rules), bytes);
    results.push({ workload: name, nativeMBps: nativeRate, wasmMBps: wasmRate, ratio: wasmRate / nativeRate });
  }
  const streamed = await streamMbps(wasm, page, manyRules(), bytes);
  const report = { pageBytes: page.length, copies: COPIES, rounds: ROUNDS, results, createRewriterMBps: streamed };
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(report, null, 2));
    return;
  }
  console.log(`page ${page.length} bytes in ${CHUNK}-byte chunks, ${COPIES} per round, median of ${ROUNDS} rounds`);
  for (const r of results) {
    console.log(`${r.workload.padEnd(48)} native ${r.nativeMBps.toFixed(0).padStart(5)} MB/s   wasm ${r.wasmMBps.toFixed(0).padStart(5)} MB/s   wasm/native ${r.ratio.toFixed(2)}x`);
  }
  console.log(`${'createRewriter: 120 rules + snippet + links'.padEnd(48)} wasm ${streamed.toFixed(0).padStart(5)} MB/s (TransformStream)`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
