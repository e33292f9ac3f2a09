'use strict'
// The public types, checked by compiling user code with tsc in a project of its own (the package
// linked in, as `npm link` would): what must compile does, each `@ts-expect-error` line is an error
// (tsc fails otherwise), internals are not exported, and code written against @types/browser-sync
// compiles both as it is and after the one-line switch to the adapter: on TypeScript 5.9, 6 and 7 (the
// devDependencies typescript, typescript-6 and typescript-7), with no `types` option, so on 6 and
// later no @types package is loaded unless a file references it (the package's .d.ts must).

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

/** The TypeScript versions users have, as devDependencies: [package, major]. */
const TYPESCRIPTS = [['typescript', '5'], ['typescript-6', '6'], ['typescript-7', '7']]

/**
 * tsc --strict (nodenext) on `files` of the project; resolves to its exit code and output. `types`:
 * the `--types` list (null: none given, the compiler's default).
 */
function tsc(files, { typescript = 'typescript', types = ['node'] } = {}) {
  const bin = path.join(ROOT, 'node_modules', typescript, 'bin', 'tsc')
  const args = ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext']
  if (types) args.push('--types', types.join(','))
  args.push('--skipLibCheck', 'false', ...files)
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd: project, timeout: 120000 }, (err, stdout, stderr) => resolve({ code: err ? err.code : 0, out: stdout + stderr }))
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

test('the TypeScript versions tested are the ones their names say', async () => {
  for (const [typescript, major] of TYPESCRIPTS) {
    const bin = path.join(ROOT, 'node_modules', typescript, 'bin', 'tsc')
    const version = await new Promise((resolve) => execFile(process.execPath, [bin, '--version'], (err, stdout) => resolve(err ? String(err) : stdout)))
    assert.match(version, new RegExp(`^Version ${major}\\.`), typescript)
  }
})

for (const [typescript, major] of TYPESCRIPTS) {
  test(`TypeScript ${major}: @types/browser-sync's kinds of use and a gulp 4 gulpfile compile as they are and after the switch, with the default types`, async () => {
    const files = [copy('gulp.d.ts')]
    const original = [copy('browser-sync-cases.cts', `cases-original-${major}.cts`), copy('gulpfile.mts', `gulpfile-original-${major}.mts`)]
    const before = await tsc([...files, ...original], { typescript, types: null })
    assert.equal(before.code, 0, `the fixtures are valid code for @types/browser-sync:\n${before.out}`)
    const switched = [
      copy('browser-sync-cases.cts', `cases-switched-${major}.cts`, (text) => switchTo(text, "require('browser-sync')", "require('devproxy-native/browser-sync')")),
      copy('gulpfile.mts', `gulpfile-switched-${major}.mts`, (text) => switchTo(text, "from 'browser-sync'", "from 'devproxy-native/browser-sync'")),
    ]
    const after = await tsc([...files, ...switched], { typescript, types: null })
    assert.equal(after.code, 0, after.out)
  })

  test(`TypeScript ${major}: the package's own .d.ts need no \`types\` setting (Node's types referenced), with skipLibCheck off`, async () => {
    const result = await tsc([copy('public.mts', `public-${major}.mts`)], { typescript, types: null })
    assert.equal(result.code, 0, result.out)
  })
}

/** `text` with its one import of browser-sync switched to the adapter. */
function switchTo(text, from, to) {
  assert.equal(text.split(from).length, 2, `one ${from} in the fixture`)
  return text.replace(from, to)
}
