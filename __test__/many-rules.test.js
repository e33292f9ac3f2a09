'use strict'
// Many rules in one pass (issue 32): literal rules that cannot interact share one search, the rest keep a
// stage each. Whatever the grouping decides, the result must be what String.prototype.replace gives rule
// after rule. Seeded random rule sets of 2-200 rules mix string rules (first occurrence only), literal
// regexes (/g), regexes with classes, alternations and `i`, and rules built to interact (a replacement
// holding a later rule's needle, overlapping and repeated needles, removals that join text), on random
// bodies in random chunks; and through a running proxy, 10,000 rules.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { ACCEPT_HTML, hooks, mulberry32, randomSplits, request, startUpstream, withProxy } = require('./helpers')

// The rules compiled once for all inputs: the addon's test hook (the test-hooks feature).
const rewriteEach = (inputs, rules) => hooks().__rewriteEach(inputs, rules)

const SEED = Number(process.env.MANY_RULES_SEED || 0x32)
const WORDS = ['alpha', 'beta', 'gamma', 'host', 'cdn', 'old', 'new', 'ab', 'ba', 'abc', 'x', 'track', '.example.org', '-', ' ', '\n', 'é', '東京']

function pick(rnd, list) {
  return list[Math.floor(rnd() * list.length)]
}

function word(rnd, max = 3) {
  const n = 1 + Math.floor(rnd() * max)
  let s = ''
  for (let i = 0; i < n; i++) s += pick(rnd, WORDS)
  return s
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')

/** One random rule; `needles` are earlier rules' needles, to build interactions on. */
function randomRule(rnd, needles) {
  const kind = rnd()
  const needle = needles.length && rnd() < 0.25 ? pick(rnd, needles) : word(rnd)
  // Replacements: plain words, sometimes another rule's needle (a chain), sometimes empty (a removal), `$&`.
  const r = rnd()
  const replace = r < 0.15 ? '' : r < 0.35 && needles.length ? pick(rnd, needles) + word(rnd, 1) : r < 0.45 ? '[$&]' : word(rnd, 2)
  needles.push(needle)
  if (kind < 0.35) return { match: needle, replace } // a string: first occurrence only
  if (kind < 0.75) return { match: new RegExp(escape(needle), 'g'), replace } // a literal regex
  if (kind < 0.85) return { match: new RegExp(escape(needle), ''), replace } // a literal regex, first only
  const regexes = [/a[bc]+/g, /(al|be)ta/g, /OLD/gi, /x+/g, /[0-9]{2,}/g, /e\b/g, /h.st/g]
  return { match: pick(rnd, regexes), replace }
}

function randomBody(rnd, needles) {
  const n = Math.floor(rnd() * 400)
  let s = ''
  for (let i = 0; i < n; i++) s += rnd() < 0.3 && needles.length ? pick(rnd, needles) : pick(rnd, WORDS)
  return s
}

const inTurn = (body, rules) => rules.reduce((text, rule) => text.replace(rule.match, rule.replace), body)

test('random rule sets of 2-200 rules, built to interact, give String.prototype.replace\'s result rule after rule, whole and in random chunks', () => {
  const rnd = mulberry32(SEED)
  for (let round = 0; round < 60; round++) {
    const count = 2 + Math.floor(rnd() * 199)
    const needles = []
    const rules = Array.from({ length: count }, () => randomRule(rnd, needles))
    const bodies = Array.from({ length: 3 }, () => randomBody(rnd, needles))
    const inputs = bodies.flatMap((body) => [body, randomSplits(Buffer.from(body), rnd, 8)])
    const got = rewriteEach(inputs, rules)
    for (let i = 0; i < inputs.length; i++) {
      const body = bodies[Math.floor(i / 2)]
      const expected = inTurn(body, rules)
      if (got[i] !== expected) {
        const shown = rules.map((r) => `${r.match}→${JSON.stringify(r.replace)}`).join(', ')
        assert.equal(got[i], expected, `seed ${SEED} round ${round}, ${i % 2 ? 'chunked' : 'whole'}: rules ${shown} on ${JSON.stringify(body)}`)
      }
    }
  }
})

/** A random regex rule over a few word pools: rules of different pools can share a search, rules of one pool
 * (or whose replacement writes another rule's word) may interact. */
const POOLS = ['cdn', 'sku', 'img', 'ab', 'xy']
function randomRegexRule(rnd) {
  const pool = pick(rnd, POOLS)
  const tail = pick(rnd, ['-[0-9]+', '[0-9]{2,}', '(-[a-z]+)?', '[._]', '', '(\\d)', '[a-c]+'])
  const source = `${rnd() < 0.3 ? '\\b' : ''}${pool}${tail}${rnd() < 0.2 ? '\\b' : ''}`
  const f = rnd()
  const flags = f < 0.15 ? 'gi' : f < 0.3 ? '' : 'g' // '': first match only
  const r = rnd()
  const grouped = source.includes('(')
  const replace = r < 0.1 ? '' : r < 0.25 ? `<$&>` : r < 0.4 && grouped ? `${pool.toUpperCase()}$1` : r < 0.5 ? pick(rnd, POOLS) : `${pool.toUpperCase()}${Math.floor(rnd() * 9)}`
  return { match: new RegExp(source, flags), replace }
}

function randomRegexBody(rnd) {
  const tokens = [...POOLS, ...POOLS.map((p) => p.toUpperCase()), '-', '.', '_', ' ', '12', '7', 'a', 'é', '東京', '-abc', '\n']
  let s = ''
  for (let i = Math.floor(rnd() * 300); i > 0; i--) s += pick(rnd, tokens)
  return s
}

test('random regex rule sets of 2-200 rules (groups, `\\b`, `$1`, `$&`, `i`, first match only, removals, chains) give String.prototype.replace\'s result rule after rule, whole and in random chunks', () => {
  const rnd = mulberry32(SEED + 1)
  for (let round = 0; round < 60; round++) {
    const count = 2 + Math.floor(rnd() * 199)
    const rules = Array.from({ length: count }, () => randomRegexRule(rnd))
    const bodies = Array.from({ length: 3 }, () => randomRegexBody(rnd))
    const inputs = bodies.flatMap((body) => [body, randomSplits(Buffer.from(body), rnd, 8)])
    const got = rewriteEach(inputs, rules)
    for (let i = 0; i < inputs.length; i++) {
      const body = bodies[Math.floor(i / 2)]
      const expected = inTurn(body, rules)
      if (got[i] !== expected) {
        const shown = rules.map((r) => `${r.match}→${JSON.stringify(r.replace)}`).join(', ')
        assert.equal(got[i], expected, `seed ${SEED + 1} round ${round}, ${i % 2 ? 'chunked' : 'whole'}: rules ${shown} on ${JSON.stringify(body)}`)
      }
    }
  }
})

test('a proxy with 10,000 literal rules rewrites pages with them, and the rules interact as they would one by one', async () => {
  const rules = Array.from({ length: 10000 }, (_, i) => ({ match: new RegExp(`legacy-${i}\\.example\\.org`, 'g'), replace: `cdn-${i}.example.net` }))
  // Two that interact: the first's replacement is the second's match, so the page gets the second's.
  rules.splice(5000, 0, { match: 'chain-start', replace: 'chain-middle' }, { match: /chain-middle/g, replace: 'chain-end' })
  const page = '<html><body><img src="//legacy-7.example.org/a.png"> legacy-9999.example.org chain-start legacy-10000.example.org</body></html>'
  const upstream = await startUpstream({ '/': (req, res) => res.end(page) })
  try {
    await withProxy({ proxy: upstream.url, port: 0, rewriteRules: rules }, async (server) => {
      const res = await request(server.url + '/', { headers: { accept: ACCEPT_HTML } })
      assert.equal(res.body.toString(), inTurn(page, rules))
      assert.match(res.body.toString(), /cdn-7\.example\.net.*cdn-9999\.example\.net chain-end legacy-10000/)
      const counted = Object.fromEntries(server.stats().rules.filter((r) => r.matches > 0).map((r) => [r.rule, r.matches]))
      assert.deepEqual(counted, { '/legacy-7\\.example\\.org/g': 1, '/legacy-9999\\.example\\.org/g': 1, '"chain-start"': 1, '/chain-middle/g': 1 }, 'matches counted per rule')
    })
  } finally {
    await upstream.close()
  }
})

test('a proxy with 1,000 regex rules that cannot interact rewrites pages with them and counts matches per rule', async () => {
  // Searched together in groups (src/rewrite/regex_groups.rs); `$1` writes a group's digits.
  const rules = Array.from({ length: 1000 }, (_, i) => ({ match: new RegExp(`legacy-(\\d+)\\.cdn-${i}\\.org`, 'g'), replace: `new-$1.cdn-${i}.io` }))
  rules.splice(500, 0, { match: /\b(sku|ticket)-(\d{3,})\b/g, replace: '$1#$2' })
  const page = '<html><body><a href="//legacy-12.cdn-7.org/x">sku-1234</a> legacy-3.cdn-999.org ticket-12 legacy-1.cdn-1000.org legacy-5.cdn-7.org</body></html>'
  const upstream = await startUpstream({ '/': (req, res) => res.end(page) })
  try {
    await withProxy({ proxy: upstream.url, port: 0, rewriteRules: rules }, async (server) => {
      const res = await request(server.url + '/', { headers: { accept: ACCEPT_HTML } })
      assert.equal(res.body.toString(), inTurn(page, rules))
      assert.match(res.body.toString(), /new-12\.cdn-7\.io.*sku#1234.*new-3\.cdn-999\.io ticket-12 legacy-1\.cdn-1000\.org new-5\.cdn-7\.io/)
      const counted = Object.fromEntries(server.stats().rules.filter((r) => r.matches > 0).map((r) => [r.rule, r.matches]))
      assert.deepEqual(counted, { '/legacy-(\\d+)\\.cdn-7\\.org/g': 2, '/legacy-(\\d+)\\.cdn-999\\.org/g': 1, '/\\b(sku|ticket)-(\\d{3,})\\b/g': 1 }, 'matches counted per rule')
    })
  } finally {
    await upstream.close()
  }
})
