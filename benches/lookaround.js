'use strict'
// Look-around rules against V8 (issue 54 item 4), in one run: V8's `String.prototype.replace` and the
// engine's `rewrite()` on the same rules and inputs, medians of 5, and the engine's time per MB from 1 to
// 64 MB (benches/lookaround.rs measures the same in Rust with criterion).
//
// Run: node benches/lookaround.js   (after the addon is built: npm install in a clone)
//
// - runaway: /(?=(?:a+)+c)a|(?<!a)b/g on n `a`s then `b` (no match). V8 backtracks through every way of
//   splitting the run at every start: its time doubles with each `a`, so it runs on runs of 16-26.
// - links: /(?<![\w.])cdn\.example\.com(?=\/)/g on an HTML page that names the host every ~400 bytes.
// - quoteless: /(?<=href=")[^"]*/g on text without `"`, where the pattern without its lookbehind matches from
//   every position to the end (the skip ahead once read that far from each: 64 KB took 6.7 s).
// - iu words: /\bfoo\b/giu (with `iu`, `\b` counts ſ and K as word characters: look-arounds) against /gu.
// - groups: /(?<=(\w+)=")[^"]*/g with `[$1]`: a group inside an unbounded lookbehind, against V8 and the rule
//   without the group.
// - nested: /(?=a*b(?!c))a/g and test262's /(?<=a(?=([bc]{2}(?<!a{2}))d)\w{3})\w\w/g, look-arounds inside
//   look-arounds.

const { rewrite } = require('..')

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
function time(fn, runs = 5) {
  const ms = []
  let out
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint()
    out = fn()
    ms.push(Number(process.hrtime.bigint() - t) / 1e6)
  }
  return { ms: median(ms), out }
}

const runaway = /(?=(?:a+)+c)a|(?<!a)b/g
console.log('runaway: /(?=(?:a+)+c)a|(?<!a)b/g on n a then b')
console.log('n\tV8 ms\tengine ms\tV8/engine')
for (const n of [16, 18, 20, 22, 24, 26]) {
  const input = 'a'.repeat(n) + 'b'
  const v8 = time(() => input.replace(runaway, 'x'), 3)
  const engine = time(() => rewrite(input, [{ match: runaway, replace: 'x' }]))
  if (v8.out !== engine.out) throw new Error(`n=${n}: outputs differ`)
  console.log(`${n}\t${v8.ms.toFixed(2)}\t${engine.ms.toFixed(3)}\t${(v8.ms / engine.ms).toFixed(0)}x`)
}

const page = (bytes) => {
  const parts = []
  let size = 0
  for (let i = 0; size < bytes; i++) {
    const part = `<p>Item ${i}: <a href="https://cdn.example.com/img/${i}.png">x.cdn.example.com</a> and more text here, with words.</p>\n`
    parts.push(part)
    size += part.length
  }
  return parts.join('')
}
const links = /(?<![\w.])cdn\.example\.com(?=\/)/g
console.log('\nper MB: engine on a run of a (runaway) and on a page (links); V8 on the page')
console.log('MB\trunaway ms/MB\tlinks ms/MB\tV8 links ms/MB')
for (const mb of [1, 4, 16, 64]) {
  const bytes = mb * 1e6
  const run = 'a'.repeat(bytes - 1) + 'b'
  const a = time(() => rewrite(run, [{ match: runaway, replace: 'x' }]), 3)
  if (a.out !== run) throw new Error('runaway: the engine changed the body')
  const html = page(bytes)
  const b = time(() => rewrite(html, [{ match: links, replace: 'static.example.net' }]), 3)
  const v8 = time(() => html.replace(links, 'static.example.net'), 3)
  if (b.out !== v8.out) throw new Error(`links ${mb} MB: outputs differ`)
  console.log(`${mb}\t${(a.ms / mb).toFixed(1)}\t\t${(b.ms / mb).toFixed(1)}\t\t${(v8.ms / mb).toFixed(1)}`)
}

const quoteless = /(?<=href=")[^"]*/g
const words = [/\bfoo\b/gu, /\bfoo\b/giu]
console.log('\nper MB: quoteless text (engine, V8), and a page with a `foo` every 64 bytes (/\\bfoo\\b/gu, /giu)')
console.log('MB\tquoteless ms/MB\tV8 ms/MB\tgu ms/MB\tgiu ms/MB')
for (const mb of [1, 4, 16]) {
  const text = '<p>no quote here, just words and <b>tags</b>.</p>\n'.repeat(Math.ceil((mb * 1e6) / 52))
  const q = time(() => rewrite(text, [{ match: quoteless, replace: 'x' }]), 3)
  const v8 = time(() => text.replace(quoteless, 'x'), 3)
  if (q.out !== v8.out) throw new Error(`quoteless ${mb} MB: outputs differ`)
  const wordPage = '<p>The header of the stream, with some words and foo bar. </p>\n'.repeat(Math.ceil((mb * 1e6) / 64))
  const [gu, giu] = words.map((match) => time(() => rewrite(wordPage, [{ match, replace: 'X' }]), 3))
  if (gu.out !== wordPage.replace(words[0], 'X') || giu.out !== gu.out) throw new Error(`words ${mb} MB: outputs differ`)
  console.log(`${mb}\t${(q.ms / mb).toFixed(1)}\t\t${(v8.ms / mb).toFixed(1)}\t\t${(gu.ms / mb).toFixed(1)}\t\t${(giu.ms / mb).toFixed(1)}`)
}

// Groups inside an unbounded lookbehind: the attribute name before each quoted value, `$1` in the template (the
// body's reversed program reads back from where the lookbehind held), against the same rule without the group.
const named = /(?<=(\w+)=")[^"]*/g
const unnamed = /(?<=\w+=")[^"]*/g
console.log('\nper MB: a page, /(?<=(\\w+)=")[^"]*/g with [$1] (engine, V8) and /(?<=\\w+=")[^"]*/g with _ (engine)')
console.log('MB\tgroup ms/MB\tV8 ms/MB\tno group ms/MB')
for (const mb of [1, 4, 16]) {
  const html = page(mb * 1e6)
  const g = time(() => rewrite(html, [{ match: named, replace: '[$1]' }]), 3)
  const v8 = time(() => html.replace(named, '[$1]'), 3)
  if (g.out !== v8.out) throw new Error(`group ${mb} MB: outputs differ`)
  const n = time(() => rewrite(html, [{ match: unnamed, replace: '_' }]), 3)
  console.log(`${mb}\t${(g.ms / mb).toFixed(1)}\t\t${(v8.ms / mb).toFixed(1)}\t\t${(n.ms / mb).toFixed(1)}`)
}

// Look-arounds inside look-arounds: a lookahead with one inside whose body reads to the end of a run of 1,000
// `a` from every position (V8 reads the run again from each; the engine's runs meet in the same threads), and
// test262's three levels (a lookbehind, a lookahead with a group, a lookbehind) with a match every 9 bytes.
const nestedAhead = /(?=a*b(?!c))a/g
const nestedBehind = /(?<=a(?=([bc]{2}(?<!a{2}))d)\w{3})\w\w/g
console.log('\nper MB: /(?=a*b(?!c))a/g on runs of 1,000 a and b (engine, V8); /(?<=a(?=([bc]{2}(?<!a{2}))d)\\w{3})\\w\\w/g with [$1] on "abcdefgh " (engine, V8)')
console.log('MB\tahead ms/MB\tV8 ms/MB\tbehind ms/MB\tV8 ms/MB')
for (const mb of [1, 4, 16]) {
  const runs = ('a'.repeat(1000) + 'b').repeat(Math.ceil((mb * 1e6) / 1001))
  const ahead = time(() => rewrite(runs, [{ match: nestedAhead, replace: 'x' }]), 3)
  const aheadV8 = time(() => runs.replace(nestedAhead, 'x'), 3)
  if (ahead.out !== aheadV8.out) throw new Error(`nested ahead ${mb} MB: outputs differ`)
  const text = 'abcdefgh '.repeat(Math.ceil((mb * 1e6) / 9))
  const behind = time(() => rewrite(text, [{ match: nestedBehind, replace: '[$1]' }]), 3)
  const behindV8 = time(() => text.replace(nestedBehind, '[$1]'), 3)
  if (behind.out !== behindV8.out) throw new Error(`nested behind ${mb} MB: outputs differ`)
  const perMb = (t) => (t.ms / mb).toFixed(1)
  console.log(`${mb}\t${perMb(ahead)}\t\t${perMb(aheadV8)}\t\t${perMb(behind)}\t\t${perMb(behindV8)}`)
}
