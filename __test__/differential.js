'use strict'
// The differential check of rewrite() against String.prototype.replace, shared by rewrite.test.js (seeded random
// rules) and test262.test.js (test262's regexes): V8's expected result, the engine run whole and in chunkings
// (one call, the rules compiled once), function replacements' arguments recorded on both sides and compared.

const assert = require('node:assert/strict')
const util = require('node:util')

/**
 * Rule functions are called as Browsersync calls them, `(req, res, match, ...groups, offset, string)`;
 * the reference functions here take JS's `(match, ...)`, so this `rewrite` drops `req` and `res`
 * (after checking that they are there) before calling them. `engine`: the addon's `hooks()` or the
 * WebAssembly build's `fixtures/wasm-hooks.mjs`.
 */
function jsForm(engine) {
  const { rewrite, __rewriteEach } = engine
  const asJs = (rule) => {
    if (!rule || typeof rule !== 'object' || typeof rule.replace !== 'function') return rule
    const f = rule.replace
    return {
      ...rule,
      replace: (req, res, ...args) => {
        assert.equal(req.url, '/', 'rewrite() gives its default req')
        assert.equal(res.statusCode, 200, 'rewrite() gives its default res')
        return f(...args)
      },
    }
  }
  return {
    rewrite: (input, rules) => rewrite(input, Array.isArray(rules) ? rules.map(asJs) : rules),
    // Several inputs, the rules compiled once (a test hook of the binding).
    rewriteEach: (inputs, rules) => __rewriteEach(inputs, rules.map(asJs)),
  }
}

// While a list, function replacements push [their id, their arguments] to it.
let recording = null
let nextId = 0

/** A replacement function that records its arguments; its output depends on the match and the offset. */
function recorded(fn) {
  const id = nextId++
  const f = (...args) => {
    if (recording) recording.push([id, args])
    return fn(...args)
  }
  f.toString = () => fn.toString()
  return f
}

// JS passes (match, p1, ..., pn, offset, string[, groups]): the offset is the only number.
const offsetOf = (args) => args.find((a) => typeof a === 'number')

/** JSON.stringify that also escapes U+2028/U+2029 and other invisible characters, for readable failures. */
function show(str) {
  return JSON.stringify(str).replace(/[\u2028\u2029\u00a0\ufeff\u0080-\u009f]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
}

function describe(input, rules) {
  const rs = rules.map((r) => `{ match: ${r.match instanceof RegExp ? r.match : show(r.match)}, replace: ${typeof r.replace === 'function' ? r.replace.toString() : show(r.replace)} }`)
  return `rewrite(${show(input)}, [${rs.join(', ')}])`
}

/** Whether a regex matches code points (`u`, or `v`, which implies it), not UTF-16 units. */
function unicodeMode(re) {
  return re instanceof RegExp && (re.unicode || re.unicodeSets)
}

function expected(input, rules) {
  return rules.reduce((s, r) => {
    // The engine reads a sticky rule's lastIndex as 0 at every input; a non-global sticky replace moves it.
    if (r.match instanceof RegExp && r.match.sticky) r.match.lastIndex = 0
    return r.match.global && unicodeMode(r.match) && typeof r.replace === 'function' ? specReplace(s, r.match, r.replace) : s.replace(r.match, r.replace)
  }, input)
}

/**
 * String.prototype.replace as the spec writes it, on V8's own RegExp matching (matchAll). V8's replace with a
 * global `u` regex and a function gives an unset group as "" instead of undefined at matches after the first on
 * strings with non-Latin-1 characters (Node 20: `"中中".replace(/|()?/gu, (m, g) => typeof g)` gives
 * "undefined中string中undefined"; `matchAll` and `exec` say undefined), so such rules are checked against this.
 */
function specReplace(input, regex, fn) {
  let out = ''
  let last = 0
  for (const m of input.matchAll(regex)) {
    const args = [...m, m.index, input]
    if (m.groups) args.push(m.groups)
    out += input.slice(last, m.index) + fn(...args)
    last = m.index + m[0].length
  }
  return out + input.slice(last)
}

/**
 * Ways to cut `input` into chunks for rewrite([chunks]): one byte each (cuts inside every character and
 * every match), Buffers and Uint8Arrays cut at random bytes (empty chunks too), strings cut between
 * code points.
 */
function chunkings(input, rnd) {
  const bytes = Buffer.from(input)
  // Tiny chunks cost a rescan of a long pending match each (README, Streaming): only on small inputs.
  const fine = bytes.length <= 4096
  const lists = fine ? [[...bytes.keys()].map((i) => bytes.subarray(i, i + 1))] : []
  for (const asUint8Array of [false, true]) {
    const cuts = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => Math.floor(rnd() * (bytes.length + 1)))
    let at = 0
    const list = []
    for (const cut of [...cuts.sort((x, y) => x - y), bytes.length]) {
      const piece = bytes.subarray(at, cut)
      list.push(asUint8Array ? new Uint8Array(piece) : piece)
      at = cut
    }
    lists.push(list)
  }
  const chars = [...input]
  const strings = []
  for (let at = 0; at < chars.length; ) {
    const n = fine ? 1 + Math.floor(rnd() * 3) : Math.ceil(chars.length / 4)
    strings.push(chars.slice(at, at + n).join(''))
    at += n
  }
  lists.push(strings)
  return lists
}

/** Calls grouped by function (so by rule: streaming interleaves the rules' calls), in order within each. */
function byFunction(calls) {
  return calls.map((call, i) => [call, i]).sort((x, y) => x[0][0] - y[0][0] || x[1] - y[1]).map(([call]) => call)
}

/**
 * A JS string as the engine's UTF-8 output shows it: a lone surrogate (a rule without `u` that splits an
 * astral character) as U+FFFD, which is how Node writes it in UTF-8 (README, Rules); in the groups object a
 * function gets too.
 */
function asUtf8(value) {
  if (typeof value === 'string') return value.toWellFormed()
  // The named groups object a function gets: its strings likewise.
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === null) {
    return Object.assign(Object.create(null), Object.fromEntries(Object.entries(value).map(([k, v]) => [k, asUtf8(v)])))
  }
  return value
}

/**
 * Runs `fn`, returning its result (or the error message) and the calls recorded meanwhile: `calls` as compared
 * (by function, strings as UTF-8 shows them), `order` as made, arguments as given.
 */
function run(fn) {
  recording = []
  const order = recording
  const calls = () => byFunction(order).map(([id, args]) => [id, args.map(asUtf8)])
  try {
    return { out: asUtf8(fn()), calls: calls(), order }
  } catch (err) {
    return { out: `<threw ${err && err.message}>`, calls: calls(), order }
  } finally {
    recording = null
  }
}

/** JS's calls as the streaming engine makes them: `string` (after the offset) is undefined. */
function streamed(calls) {
  return calls.map(([id, args]) => [id, args.map((a, i) => (i > 0 && typeof args[i - 1] === 'number' ? undefined : a))])
}

// Function calls whose arguments were compared, and those where UTF-16 and UTF-8 offsets differ.
const counters = { callsCompared: 0, callsAfterNonAscii: 0 }

/**
 * Cases of one rule list: each `{ input, reference }` (the reference, the input V8 gets, is the input unless
 * given) whole and in each chunking must give JS's output and JS's function calls. Returns, per case, the
 * problems found or null. All runs of all cases go through the engine in one call first, the rules compiled
 * once, their function calls split by JS's count per run (when the counts do not add up, each case goes again in
 * a call of its own); a case whose runs differ runs again, each run on its own, so the report shows which
 * (`explain: false`: a one-line report instead, without the rules compiled again for each run).
 */
function checkCases(engine, cases, rules, rnd, { explain: detail = true } = {}) {
  const prepared = cases.map(({ input, reference = input }) => {
    const want = run(() => expected(reference, rules))
    for (const [, args] of want.calls) {
      const at = args.findIndex((a) => typeof a === 'number')
      counters.callsCompared++
      if (Buffer.byteLength(args[at + 1].slice(0, args[at])) !== args[at]) counters.callsAfterNonAscii++
    }
    const lists = chunkings(input, rnd)
    return { input, want, lists, wants: [want, ...lists.map(() => ({ out: want.out, calls: streamed(want.calls) }))] }
  })
  const check = (group) => {
    const batch = run(() => engine.rewriteEach(group.flatMap((c) => [c.input, ...c.lists]), rules))
    const runs = group.reduce((n, c) => n + c.wants.length, 0)
    const calls = group.reduce((n, c) => n + c.want.calls.length * c.wants.length, 0)
    const fits = Array.isArray(batch.out) && batch.out.length === runs && batch.calls.length === calls
    if (!fits && group.length > 1 && Array.isArray(batch.out)) return group.map((c) => check([c])[0])
    let atRun = 0
    let atCall = 0
    return group.map((c) => {
      const n = c.want.calls.length
      let same = fits
      // run() sorted the calls by function, and only within a run is that the order to compare: take them again
      // in call order.
      for (const [i, w] of c.wants.entries()) {
        if (!same) break
        const from = atCall + i * n
        const got = byFunction(batch.order.slice(from, from + n)).map(([id, args]) => [id, args.map(asUtf8)])
        same = asUtf8(batch.out[atRun + i]) === w.out && util.isDeepStrictEqual(got, w.calls)
      }
      atRun += c.wants.length
      atCall += n * c.wants.length
      if (same) return null
      return detail ? explain(engine, c, rules, batch) : `${describe(c.input, rules)}: differs (whole or streamed)`
    })
  }
  return check(prepared)
}

/** One case's runs, each on its own: what differs from JS. */
function explain({ rewrite }, { input, want, lists }, rules, batch) {
  const whole = run(() => rewrite(input, rules))
  const problems = []
  if (whole.out !== want.out) problems.push(`expected ${show(want.out)}\n    got      ${show(whole.out)}`)
  else if (!util.isDeepStrictEqual(whole.calls, want.calls)) problems.push(`calls ${util.inspect(whole.calls)}\n    JS's  ${util.inspect(want.calls)}`)
  for (const chunks of lists) {
    const got = run(() => rewrite(chunks, rules))
    const label = `chunks ${util.inspect(chunks)}`
    if (got.out !== want.out) problems.push(`${label}: got ${show(got.out)}`)
    else if (!util.isDeepStrictEqual(got.calls, streamed(want.calls))) problems.push(`${label}: calls ${util.inspect(got.calls)}\n    JS's  ${util.inspect(streamed(want.calls))}`)
  }
  // The batch differed but no run does on its own: that is a failure too.
  if (!problems.length) problems.push(`all runs in one call gave ${util.inspect(batch.out)} with ${batch.calls.length} calls`)
  return `${describe(input, rules)}\n    ${problems.slice(0, 3).join('\n    ')}`
}

/** One case (`checkCases` of one): the problems found, or null. */
function checkCase(engine, input, rules, rnd) {
  return checkCases(engine, [{ input }], rules, rnd)[0]
}

/**
 * Whether V8 starts a match of a `u` rule between the halves of an astral character, which the spec forbids
 * (a V8 bug: after a failed attempt it may step one UTF-16 unit, `[..."b😀".matchAll(/\B/gu)]` gives indexes 2
 * and 3); the engine never starts there.
 */
function v8StartsInsidePairs(input, match) {
  if (!unicodeMode(match)) return false
  const re = new RegExp(match.source, match.global ? match.flags : match.flags + 'g')
  const inside = (i) => i > 0 && (input.charCodeAt(i - 1) & 0xfc00) === 0xd800 && (input.charCodeAt(i) & 0xfc00) === 0xdc00
  for (const m of input.matchAll(re)) {
    if (inside(m.index)) return true
    if (!match.global) break
  }
  return false
}

module.exports = {
  jsForm,
  recorded,
  offsetOf,
  show,
  describe,
  unicodeMode,
  expected,
  specReplace,
  chunkings,
  asUtf8,
  run,
  streamed,
  counters,
  checkCases,
  checkCase,
  v8StartsInsidePairs,
}
