'use strict'
// The public types, checked by compiling user code with tsc in a project of its own (the package
// linked in, as `npm link` would): what must compile does, each `@ts-expect-error` line is an error
// (tsc fails otherwise), internals are not exported, and a file written against @types/browser-sync
// compiles both as it is and after the one-line switch to the adapter.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFile } = require('node:child_process')
const { ROOT } = require('./helpers')

const FIXTURES = path.join(__dirname, 'fixtures', 'types')
let project
before(() => {
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-types-'))
  fs.mkdirSync(path.join(project, 'node_modules'))
  fs.symlinkSync(ROOT, path.join(project, 'node_modules', 'devproxy-native'), 'dir')
  fs.symlinkSync(path.join(ROOT, 'node_modules', '@types'), path.join(project, 'node_modules', '@types'), 'dir')
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'typed-project', private: true }))
})
after(() => fs.rmSync(project, { recursive: true, force: true }))

/** tsc --strict (nodenext) on `files` of the project; resolves to its exit code and output. */
function tsc(files) {
  const bin = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
  const args = ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext']
  args.push('--types', 'node', '--skipLibCheck', 'false', ...files)
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd: project, timeout: 120000 }, (err, stdout) => resolve({ code: err ? err.code : 0, out: stdout }))
  })
}

function copy(name, as = name, edit = (text) => text) {
  fs.writeFileSync(path.join(project, as), edit(fs.readFileSync(path.join(FIXTURES, name), 'utf8')))
  return as
}

test('the public API type-checks as a strict user writes it: readonly options, rule shapes, server methods; what the runtime refuses does not compile', async () => {
  const result = await tsc([copy('public.mts')])
  assert.equal(result.code, 0, result.out)
})

test('devproxy-native/wasm type-checks as a Worker writes it; what the runtime refuses does not compile', async () => {
  const result = await tsc([copy('wasm.mts')])
  assert.equal(result.code, 0, result.out)
})

test('internals (test hooks, the native side\'s plain data, the loader\'s flavour) are not exported', async () => {
  const result = await tsc([copy('internals.mts')])
  assert.equal(result.code, 0, result.out)
})

test('code typed against @types/browser-sync compiles as it is, and after switching the import to the adapter', async () => {
  const original = await tsc([copy('gulpfile.cts', 'gulpfile-original.cts')])
  assert.equal(original.code, 0, `the fixture is valid code for @types/browser-sync:\n${original.out}`)
  const switched = await tsc([
    copy('gulpfile.cts', 'gulpfile-switched.cts', (text) => {
      const next = text.replace("require('browser-sync')", "require('devproxy-native/browser-sync')")
      assert.notEqual(next, text)
      return next
    }),
  ])
  assert.equal(switched.code, 0, switched.out)
})

test('the adapter\'s declared names include every name @types/browser-sync declares', () => {
  const names = (file) => new Set([...fs.readFileSync(file, 'utf8').matchAll(/^\s*(?:interface|type)\s+(\w+)/gm)].map((m) => m[1]))
  const theirs = names(path.join(ROOT, 'node_modules', '@types', 'browser-sync', 'index.d.ts'))
  const ours = names(path.join(ROOT, 'browser-sync.d.ts'))
  assert.ok(theirs.size >= 20, `read ${theirs.size} names`)
  assert.deepEqual([...theirs].filter((name) => !ours.has(name)), [])
})
