'use strict'
// Issue 54's proof: the engine gives V8's answer on test262's own regexes. Every regex literal and literal
// `new RegExp(...)` of test262's RegExp, String.prototype.{replace,replaceAll,match,matchAll,search,split} and
// Annex B regex tests (__test__/fixtures/test262-regex.json, written by scripts/extract-test262.js; the commit
// it came from is in the file) runs on the string literals of its test file and a few fixed subjects, with
// '[$&]' (the rule's own flags), a template naming every group and a recording replacement function (the rule
// made global), whole and streamed (one-byte and seeded random cuts: differential.js), against
// String.prototype.replace. Through the addon here, and through the WebAssembly build in a child under
// `node --no-addons` (REWRITE_ENGINE=wasm runs only that engine), both at once.
//
// Every case is equal, refused (by the feature the error names), or differs. Differences must be none, but for
// the engine's Unicode tables being an older version than this Node's: a case that differs only on code points
// where a `\p{…}` of the pattern answers otherwise in V8 than in the engine is counted apart, with those code
// points. Refusals may only go down: the counts below are ceilings.
//
// Subjects with lone surrogates are compared on their well-formed form, as the engine reads its input (UTF-8:
// a lone surrogate is U+FFFD; docs/rewrite-rules.md); and V8's own replace bug with a global `u` regex and a
// function is avoided as rewrite.test.js does (differential.js, specReplace). Cases where V8 starts a `u` match
// inside a surrogate pair (a V8 bug, ibid.) are counted apart.

const { test, before } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { hooks, mulberry32 } = require('./helpers')
const { jsForm, recorded, asUtf8, checkCases, v8StartsInsidePairs } = require('./differential')
const corpus = require('./fixtures/test262-regex.json')

let t262Engine = null
const WASM_CHILD = process.env.REWRITE_ENGINE === 'wasm'
const SEED = Number(process.env.TEST262_SEED || 262)

// Ceilings, per refusal category: patterns, and cases (pattern x replacement x subject). Progress lowers them.
const REFUSED_AT_MOST = {
  // Patterns with groups inside look-arounds and backreferences moved here once the groups were taken.
  backreference: { patterns: 77, cases: 2472 },
  lookahead: { patterns: 0, cases: 0 },
  lookbehind: { patterns: 0, cases: 0 },
  'look-around': { patterns: 0, cases: 0 },
  'Unicode property unknown': { patterns: 0, cases: 0 },
  other: { patterns: 0, cases: 0 },
}
// Cases that differ only by the Unicode version of the property tables, and the code points involved: none
// where the Node's Unicode is the tables' 17.0; a Node of another version differs where Unicode changed.
const UNICODE_VERSION_AT_MOST = process.versions.unicode === '17.0' ? { cases: 0, codePoints: 0 } : { cases: Infinity, codePoints: Infinity }
// Cases skipped because V8 starts a `u` match between the halves of a pair (V8's bug).
const V8_INSIDE_PAIRS_AT_MOST = 0

const FEATURES = [
  ['lookahead', /lookahead/],
  ['lookbehind', /lookbehind/],
  ['backreference', /backreference/],
  ['Unicode property unknown', /Unicode property .*tables do not have it/],
  // The look-around forms the engine leaves out (quantified, with the m flag's anchors, nested...).
  ['look-around', /look-around/],
]

/** The refusal category an engine error names. */
const category = (message) => (FEATURES.find(([, re]) => re.test(message)) || ['other'])[0]

/** `re` with the `g` flag. */
const global = (re) => (re.global ? re : new RegExp(re.source, re.flags + 'g'))

/** The pattern's groups: how many, and their names. */
function groupsOf(re) {
  const m = new RegExp(`${re.source}|`, re.flags.replace(/[gy]/g, '')).exec('')
  return { count: m.length - 1, names: Object.keys(m.groups || {}) }
}

/** The replacements a pattern runs with: [regex, replace]. */
function replacementsFor(re) {
  const { count, names } = groupsOf(re)
  const fn = recorded((...args) => {
    const at = args.findIndex((a) => typeof a === 'number')
    const groups = args.slice(1, at).map((g) => (g === undefined ? 'U' : asUtf8(g)))
    // Well-formed: a half of an astral character shown to a function comes out as U+FFFD on both sides.
    return `{${asUtf8(args[0])}|${groups.join('|')}@${args[at]}}`
  })
  const out = [[re, '[$&]'], [global(re), fn]]
  if (count) {
    const numbered = Array.from({ length: Math.min(count, 12) }, (_, i) => `$${i + 1}`)
    out.push([global(re), `<${[...numbered, ...names.slice(0, 6).map((n) => `$<${n}>`)].join('|')}>`])
  }
  return out
}

/** The property escapes a pattern source names (`\p{…}`, `\P{…}`). */
function propertyEscapes(source) {
  return [...new Set(source.match(/\\[pP]\{[^}]*\}/g) || [])]
}

/**
 * Where the pattern's property escapes (`\p{…}`, `\P{…}`), each alone, answer otherwise in the engine than in
 * V8 on the code points of `subjects`: a Map from code point to the escapes.
 */
function tableDifferences(engine, escapes, subjects, flags) {
  const points = [...new Set(subjects.flatMap((s) => [...s]))]
  const out = new Map()
  for (const escape of escapes) {
    const re = new RegExp(escape, `g${flags.includes('v') ? 'v' : 'u'}`)
    let got
    try {
      got = engine.rewriteEach(points, [{ match: re, replace: '1' }])
    } catch {
      continue
    }
    points.forEach((c, i) => {
      if (asUtf8(c.replace(re, '1')) !== got[i]) out.set(c.codePointAt(0), [...(out.get(c.codePointAt(0)) || []), escape])
    })
  }
  return out
}

// test262's generated property-escape tests name each property four to eight ways (`Script=Latin`, `sc=Latn`...),
// with and without `\P`: every one runs with '[$&]'; one in SAMPLE also with the function.
const SAMPLE = 8
const generated = (file) => corpus.files[file].includes('/property-escapes/generated/')

/** Runs the corpus through one engine; returns its tallies. */
function runCorpus(engine, only = null) {
  const started = Date.now()
  const rnd = mulberry32(SEED)
  const pick = mulberry32(SEED + 1)
  const fixed = corpus.subjects.slice(0, corpus.fixed)
  const tally = { patterns: 0, equal: 0, differ: [], refused: {}, unicodeVersion: { cases: 0, points: new Map() }, v8InsidePairs: 0 }
  for (const [source, flags, file, own] of corpus.patterns) {
    if (only && !only.test(corpus.files[file])) continue
    tally.patterns++
    const re = new RegExp(source, flags)
    let subjects = [...fixed, ...own.map((i) => corpus.subjects[i])]
    // Their files' other strings spell the escapes (`\\p{ASCII}`), which the fixed subjects stand for.
    if (generated(file)) subjects = [...fixed, ...own.map((i) => corpus.subjects[i]).filter((s) => !s.includes('\\'))]
    let replacements = replacementsFor(re)
    if (generated(file) && pick() * SAMPLE >= 1) replacements = replacements.slice(0, 1)
    let tables = null
    for (const [k, [match, replace]] of replacements.entries()) {
      const rules = [{ match, replace }]
      const cases = []
      for (const subject of subjects) {
        const reference = subject.toWellFormed()
        if (v8StartsInsidePairs(reference, match)) tally.v8InsidePairs++
        else cases.push({ input: subject, reference })
      }
      const problems = checkCases(engine, cases, rules, rnd, { explain: false })
      if (k === 0 && problems.some(Boolean)) {
        // A refused rule is refused whatever its replacement and input.
        let refusal = null
        try {
          engine.rewrite('', [{ match: re, replace: '[$&]' }])
        } catch (err) {
          refusal = String(err && err.message)
        }
        if (refusal !== null) {
          const entry = (tally.refused[category(refusal)] ||= { patterns: [], cases: 0 })
          entry.patterns.push(`${re} (${corpus.files[file]}): ${refusal}`)
          entry.cases += subjects.length * replacementsFor(re).length
          break
        }
      }
      const differing = problems.map((problem, i) => [problem, cases[i]]).filter(([problem]) => problem)
      tally.equal += problems.length - differing.length
      if (!differing.length) continue
      // A case that differs only on code points where a property escape of the pattern answers otherwise, and is
      // equal without them, differs by the Unicode version of the tables.
      const escapes = propertyEscapes(source)
      if (escapes.length && !tables) tables = tableDifferences(engine, escapes, subjects.map((s) => s.toWellFormed()), flags)
      const rests = differing.map(([, c]) => ({ input: [...c.reference].filter((ch) => !(tables && tables.has(ch.codePointAt(0)))).join('') }))
      const restProblems = tables && tables.size ? checkCases(engine, rests, rules, rnd, { explain: false }) : rests.map(() => 'no table difference')
      differing.forEach(([problem, c], i) => {
        const points = tables ? [...c.reference].filter((ch) => tables.has(ch.codePointAt(0))) : []
        if (points.length && !restProblems[i]) {
          tally.unicodeVersion.cases++
          for (const ch of points) {
            const cp = ch.codePointAt(0)
            tally.unicodeVersion.points.set(cp, [...new Set([...(tally.unicodeVersion.points.get(cp) || []), ...tables.get(cp)])])
          }
        } else tally.differ.push({ file: corpus.files[file], input: c.input, reference: c.reference, rules })
      })
    }
  }
  tally.seconds = (Date.now() - started) / 1000
  return tally
}

/** `U+A7F1 (\p{Script=Latin} \p{sc=Latn})` */
const codePoint = ([cp, escapes]) => `U+${cp.toString(16).toUpperCase().padStart(4, '0')} (${escapes[0]}${escapes.length > 1 ? ` and ${escapes.length - 1} more` : ''})`

function summary(name, t) {
  const refused = Object.entries(t.refused).map(([k, v]) => `${k} ${v.cases} (${v.patterns.length} patterns)`).join(', ')
  return `test262 through ${name}: ${t.patterns} patterns; cases: ${t.equal} equal, ${t.differ.length} differ, refused: ${refused || 'none'}; ` +
    `${t.unicodeVersion.cases} differ only by the Unicode version (on ${t.unicodeVersion.points.size} code points); ` +
    `${t.v8InsidePairs} skipped (V8 starts a u match inside a pair); ${t.seconds.toFixed(1)} s`
}

/** A differing case in full: each run on its own, against V8. */
function explained({ file, input, reference, rules }) {
  return `${file}: ${checkCases(t262Engine, [{ input, reference }], rules, mulberry32(SEED))[0]}`
}

function assertTally(name, t) {
  assert.equal(t.differ.length, 0, `${t.differ.length} cases differ from V8 through ${name}; the first:\n  ${t.differ.slice(0, 8).map(explained).join('\n  ')}`)
  for (const [cat, { patterns, cases }] of Object.entries(t.refused)) {
    const most = REFUSED_AT_MOST[cat]
    const list = cat === 'other' ? `:\n  ${patterns.join('\n  ')}` : `; e.g. ${patterns[0]}`
    assert.ok(patterns.length <= most.patterns, `${name}: ${patterns.length} patterns refused for ${cat}, at most ${most.patterns}${list}`)
    assert.ok(cases <= most.cases, `${name}: ${cases} cases refused for ${cat}, at most ${most.cases}${list}`)
  }
  const points = [...t.unicodeVersion.points].sort((a, b) => a[0] - b[0]).map(codePoint)
  assert.ok(t.unicodeVersion.cases <= UNICODE_VERSION_AT_MOST.cases && points.length <= UNICODE_VERSION_AT_MOST.codePoints,
    `${name}: ${t.unicodeVersion.cases} cases differ by the Unicode version, on ${points.length} code points: ${points.join(', ')}`)
  assert.ok(t.v8InsidePairs <= V8_INSIDE_PAIRS_AT_MOST, `${name}: ${t.v8InsidePairs} cases where V8 starts a u match inside a pair`)
}

function report(t, name, tally) {
  t.diagnostic(summary(name, tally))
  if (tally.unicodeVersion.points.size) t.diagnostic(`Unicode version: ${[...tally.unicodeVersion.points].sort((a, b) => a[0] - b[0]).map(codePoint).join(', ')}`)
  if (process.env.TEST262_REPORT) {
    const { points } = tally.unicodeVersion
    require('node:fs').writeFileSync(process.env.TEST262_REPORT, JSON.stringify({ ...tally, differ: tally.differ.slice(0, 30).map(explained), unicodeVersion: { cases: tally.unicodeVersion.cases, points: [...points].sort((a, b) => a[0] - b[0]).map(codePoint) } }, null, 1))
  }
  if (process.env.TEST262_VERBOSE) for (const [cat, { patterns }] of Object.entries(tally.refused)) t.diagnostic(`refused, ${cat}:\n${patterns.join('\n')}`)
}

if (WASM_CHILD) {
  test('test262 corpus: the WebAssembly build gives V8\'s answers', async (t) => {
    const engine = (t262Engine = jsForm(await import('./fixtures/wasm-hooks.mjs')))
    const tally = runCorpus(engine, process.env.TEST262_ONLY ? new RegExp(process.env.TEST262_ONLY) : null)
    report(t, 'the WebAssembly build', tally)
    assertTally('the WebAssembly build', tally)
  })
} else {
  // The WebAssembly run, in a child under --no-addons, runs while the addon's runs here.
  let child
  before(() => {
    if (process.env.TEST262_ADDON_ONLY) return
    const env = { ...process.env, REWRITE_ENGINE: 'wasm' }
    // A test file run by `node --test` would report to it, not print TAP: not this child.
    delete env.NODE_TEST_CONTEXT
    const proc = spawn(process.execPath, ['--no-addons', '--test-reporter=tap', __filename], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    proc.stdout.on('data', (d) => (stdout += d))
    proc.stderr.on('data', (d) => (stderr += d))
    child = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr })))
  })

  test('test262 corpus: the addon gives V8\'s answers', (t) => {
    const engine = (t262Engine = jsForm(hooks()))
    const tally = runCorpus(engine, process.env.TEST262_ONLY ? new RegExp(process.env.TEST262_ONLY) : null)
    report(t, 'the addon', tally)
    assertTally('the addon', tally)
  })

  test('test262 corpus: the WebAssembly build gives V8\'s answers, under node --no-addons', { skip: !!process.env.TEST262_ADDON_ONLY }, async (t) => {
    const { code, signal, stdout, stderr } = await child
    for (const line of stdout.split('\n').map((l) => l.trim()).filter((l) => /^# (test262 through|Unicode version)/.test(l))) t.diagnostic(line.slice(2))
    const failed = stdout.split('\n').filter((line) => /^\s*not ok/.test(line))
    assert.equal(code, 0, `the corpus failed through WebAssembly (signal ${signal}):\n${failed.join('\n')}\n${stdout.slice(-6000)}${stderr}`)
    assert.match(stdout, /^# pass 1$/m)
    assert.match(stdout, /^\s*# test262 through the WebAssembly build/m)
  })
}
