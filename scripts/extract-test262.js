#!/usr/bin/env node
'use strict'
// `node scripts/extract-test262.js <test262 checkout>` writes __test__/fixtures/test262-regex.json: the regexes
// of test262's RegExp, String.prototype.{replace,replaceAll,match,matchAll,search,split} and Annex B regex
// tests, each with subjects from its own file, for __test__/test262.test.js (issue 54). The suite itself is
// not in this repository; the fixture records the commit it came from.
//
// Every file is parsed with @babel/parser (no regex over JS). Collected from each file:
// - regex literals, and `RegExp(...)` / `new RegExp(...)` whose arguments are literals (strings, a
//   template without substitutions, or a regex literal with literal flags); patterns this Node's V8 rejects
//   are left out (test262's syntax-error tests);
// - its string literals up to SUBJECT_MAX UTF-16 units, those some regex of the file matches first, at most
//   SUBJECTS_PER_FILE of them;
// - code points from test262's `buildString({ loneCodePoints, ranges })` calls (the property-escape tests):
//   the lone ones and each range's ends and middle, surrogates left out, packed into strings of at most
//   SUBJECT_MAX units.
// Patterns are deduplicated by V8's `source` and flags; each keeps the subjects of every file it is in (at most
// SUBJECTS_PER_PATTERN). Output is deterministic: files in sorted order, everything in first-seen order.

const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { parse } = require('@babel/parser')

const ROOT = path.resolve(__dirname, '..')
const OUT = path.join(ROOT, '__test__', 'fixtures', 'test262-regex.json')
const DIRS = [
  'test/built-ins/RegExp',
  ...['replace', 'replaceAll', 'match', 'matchAll', 'search', 'split'].map((m) => `test/built-ins/String/prototype/${m}`),
  'test/annexB/built-ins/RegExp',
  ...['replace', 'replaceAll', 'match', 'matchAll', 'search', 'split'].map((m) => `test/annexB/built-ins/String/prototype/${m}`),
  'test/annexB/language/literals/regexp',
]
const SUBJECT_MAX = 200
const SUBJECTS_PER_FILE = 8
const SUBJECTS_PER_PATTERN = 12
const BUILD_STRING_SUBJECTS = 3
// Every pattern also runs on these (test/test262.test.js adds nothing else).
const FIXED_SUBJECTS = ['', 'abc', 'aZ09 _-\té€\r\n\u2028中😀x', 'a😀b\ud800c\udc00'] // the last: an astral character, lone surrogates

function walkFiles(dir) {
  if (!fs.existsSync(dir)) return []
  const out = []
  for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) out.push(...walkFiles(full))
    else if (entry.isFile() && entry.name.endsWith('.js') && !entry.name.endsWith('_FIXTURE.js')) out.push(full)
  }
  return out
}

/** Every node of a Babel AST, depth first in source order. */
function* nodes(node) {
  if (!node || typeof node.type !== 'string') return
  yield node
  for (const key of Object.keys(node)) {
    if (key === 'loc' || key === 'start' || key === 'end' || key === 'extra' || key.endsWith('Comments')) continue
    const value = node[key]
    if (Array.isArray(value)) for (const item of value) yield* nodes(item)
    else if (value && typeof value === 'object') yield* nodes(value)
  }
}

/** A string a literal node spells: a string literal, or a template literal without substitutions. */
function literalString(node) {
  if (!node) return undefined
  if (node.type === 'StringLiteral') return node.value
  if (node.type === 'TemplateLiteral' && node.expressions.length === 0 && typeof node.quasis[0].value.cooked === 'string') return node.quasis[0].value.cooked
  return undefined
}

function numbers(node) {
  if (!node || node.type !== 'ArrayExpression') return null
  const out = []
  for (const el of node.elements) {
    if (el && el.type === 'NumericLiteral') out.push(el.value)
    else if (el && el.type === 'ArrayExpression') {
      const pair = numbers(el)
      if (!pair) return null
      out.push(pair)
    } else return null
  }
  return out
}

/** Code points of a `buildString({ loneCodePoints: [...], ranges: [[a, b], ...] })` call, sampled. */
function buildStringSample(call) {
  const arg = call.arguments[0]
  if (!arg || arg.type !== 'ObjectExpression') return null
  const props = {}
  for (const p of arg.properties) if (p.type === 'ObjectProperty' && p.key.type === 'Identifier') props[p.key.name] = numbers(p.value)
  if (!props.loneCodePoints || !props.ranges) return null
  const points = [...props.loneCodePoints]
  for (const [a, b] of props.ranges) points.push(a, Math.floor((a + b) / 2), b)
  return [...new Set(points)].filter((cp) => cp >= 0 && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff))
}

/** Strings of at most SUBJECT_MAX units made of `points` in order, at most BUILD_STRING_SUBJECTS of them. */
function pack(points) {
  const out = []
  let s = ''
  for (const cp of points) {
    const c = String.fromCodePoint(cp)
    if (s.length + c.length > SUBJECT_MAX) {
      out.push(s)
      s = ''
      if (out.length === BUILD_STRING_SUBJECTS) return out
    }
    s += c
  }
  if (s) out.push(s)
  return out
}

/** The regexes (as [pattern, flags]) and subjects of one file's source; null when it does not parse. */
function extractFile(source, isModule) {
  let ast
  try {
    ast = parse(source, { sourceType: isModule ? 'module' : 'script', errorRecovery: false, allowReturnOutsideFunction: true })
  } catch {
    return null
  }
  const regexes = []
  const strings = []
  const built = []
  for (const node of nodes(ast.program)) {
    if (node.type === 'RegExpLiteral') regexes.push([node.pattern, node.flags])
    else if (node.type === 'StringLiteral' || node.type === 'TemplateLiteral') {
      const s = literalString(node)
      if (s !== undefined && s.length <= SUBJECT_MAX) strings.push(s)
    } else if ((node.type === 'CallExpression' || node.type === 'NewExpression') && node.callee.type === 'Identifier') {
      if (node.callee.name === 'RegExp' && node.arguments.length >= 1 && node.arguments.length <= 2) {
        const [p, f] = node.arguments
        const flags = f === undefined ? '' : literalString(f)
        if (flags === undefined) continue
        const pattern = p.type === 'RegExpLiteral' ? p.pattern : literalString(p)
        // RegExp(/x/g) keeps the literal's flags; with a second argument they are replaced.
        if (pattern !== undefined) regexes.push([pattern, f === undefined && p.type === 'RegExpLiteral' ? p.flags : flags])
      } else if (node.callee.name === 'buildString') {
        const points = buildStringSample(node)
        if (points) built.push(...pack(points))
      }
    }
  }
  return { regexes, strings, built }
}

function main() {
  const checkout = process.argv[2]
  if (!checkout || !fs.existsSync(path.join(checkout, 'test'))) {
    console.error('usage: node scripts/extract-test262.js <test262 checkout>')
    process.exit(2)
  }
  const commit = execFileSync('git', ['-C', checkout, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim()
  const date = execFileSync('git', ['-C', checkout, 'log', '-1', '--format=%cI'], { encoding: 'utf8' }).trim()
  const files = []
  const patterns = new Map() // `${flags}/${source}` -> { source, flags, file, subjects: Set }
  let parsed = 0
  let unparsed = 0
  let rejected = 0
  let found = 0
  for (const dir of DIRS) {
    for (const file of walkFiles(path.join(checkout, dir))) {
      const text = fs.readFileSync(file, 'utf8')
      const rel = path.relative(checkout, file).split(path.sep).join('/')
      // test262's front matter: `flags: [module]` files are modules.
      const front = text.slice(text.indexOf('/*---'), text.indexOf('---*/'))
      const result = extractFile(text, front.split('\n').some((line) => line.trim().startsWith('flags:') && line.includes('module')))
      if (!result) {
        unparsed++
        continue
      }
      parsed++
      const valid = []
      for (const [pattern, flags] of result.regexes) {
        found++
        try {
          valid.push(new RegExp(pattern, flags))
        } catch {
          rejected++
        }
      }
      if (!valid.length) continue
      // The file's strings, those a regex of the file matches first, then its buildString samples.
      const unique = [...new Set(result.strings)]
      const matches = (s) => valid.some((re) => new RegExp(re.source, re.flags.replace(/[gy]/g, '')).test(s))
      const chosen = [...unique.filter(matches), ...unique.filter((s) => !matches(s))].slice(0, SUBJECTS_PER_FILE)
      const subjects = [...new Set([...chosen, ...result.built])]
      const fileIndex = files.push(rel) - 1
      for (const re of valid) {
        const key = `${re.flags}/${re.source}`
        if (!patterns.has(key)) patterns.set(key, { source: re.source, flags: re.flags, file: fileIndex, subjects: new Set() })
        const entry = patterns.get(key)
        for (const s of subjects) if (entry.subjects.size < SUBJECTS_PER_PATTERN) entry.subjects.add(s)
      }
    }
  }
  // Subjects stored once, named by index; the fixed ones first.
  const subjectIndex = new Map(FIXED_SUBJECTS.map((s, i) => [s, i]))
  const subjectList = [...FIXED_SUBJECTS]
  const index = (s) => {
    if (!subjectIndex.has(s)) subjectIndex.set(s, subjectList.push(s) - 1)
    return subjectIndex.get(s)
  }
  const rows = [...patterns.values()].map((p) => [p.source, p.flags, p.file, [...p.subjects].filter((s) => !FIXED_SUBJECTS.includes(s)).map(index)])
  const fixture = {
    about: 'Regexes and subjects extracted from test262 by scripts/extract-test262.js for __test__/test262.test.js; rows are [source, flags, file, [subject indexes]], every row also runs on the first `fixed` subjects',
    test262: { repository: 'https://github.com/tc39/test262', commit, date, dirs: DIRS },
    extractedWith: { node: process.version, v8: process.versions.v8, unicode: process.versions.unicode },
    fixed: FIXED_SUBJECTS.length,
    files,
    subjects: subjectList,
    patterns: rows,
  }
  const json = '{\n' + Object.entries(fixture).map(([k, v]) => {
    if (Array.isArray(v) && k !== 'dirs') return `${JSON.stringify(k)}: [\n${v.map((x) => JSON.stringify(x)).join(',\n')}\n]`
    return `${JSON.stringify(k)}: ${JSON.stringify(v)}`
  }).join(',\n') + '\n}\n'
  fs.writeFileSync(OUT, json)
  console.log(`${parsed} files parsed (${unparsed} did not: test262's parse-error tests), ${found} regexes found, ${rejected} rejected by V8, ${rows.length} distinct patterns from ${files.length} files, ${subjectList.length} subjects; ${(json.length / 1024).toFixed(0)} KiB written to ${path.relative(ROOT, OUT)} (test262 ${commit})`)
}

main()
