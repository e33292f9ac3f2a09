'use strict'
// Test hooks stay out of what is published (issue 52 item 7). The addon's `__panicProbe`,
// `__rewriteEach` and `__panicProbes` option and the .wasm's `__liveFunctions` exist only in builds with
// the `test-hooks` cargo feature: scripts/prepare.js builds a clone's with it (these tests use them), the
// release workflow without. The wasm module's JS hooks live in __test__/fixtures/wasm-hooks.mjs.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { ROOT, RELEASE_BUILD, hooks, lib } = require('./helpers.js')

const HOOK = /__panicProbes?\b|__rewriteEach|__openBody|__memoryBytes|__liveFunctions/
const WIN = process.platform === 'win32'
const CLEAN_ENV = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)))
const read = (f) => fs.readFileSync(path.join(ROOT, f), 'utf8')

test('no file of the root package but the WebAssembly build names a test hook (npm pack --dry-run): binding.d.ts, wasm/index.d.ts, lib/, the loaders', () => {
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, env: CLEAN_ENV, encoding: 'utf8', shell: WIN, timeout: 120000 })
  assert.equal(r.status, 0, r.stderr)
  const files = JSON.parse(r.stdout)[0].files.map((f) => f.path)
  for (const f of ['binding.d.ts', 'binding.js', 'wasm/index.d.ts', 'wasm/node.mjs', 'wasm/rewriter.mjs', 'index.js', 'lib/rules.js']) {
    assert.ok(files.includes(f), `${f} is packed`)
  }
  // wasm/pkg/ here is this clone's build, with the hooks; the release workflow's has none (below).
  const named = files.filter((f) => !f.startsWith('wasm/pkg/') && /\.(js|mjs|cjs|ts)$/.test(f) && HOOK.test(read(f)))
  assert.deepEqual(named, [])
  assert.equal(files.some((f) => f.includes('wasm-hooks')), false, 'the wasm hooks module is not packed')
})

test('the check above is real: a hook in binding.d.ts is seen', () => {
  const text = read('binding.d.ts')
  assert.equal(HOOK.test(text), false)
  assert.equal(HOOK.test(`${text}\nexport declare function __panicProbe(place: string): Promise<void>\n`), true)
  assert.equal(HOOK.test('__panicProbes: true'), true)
})

test('the release workflow, cross-build.sh and npm run build build without the feature; prepare.js builds a clone with it', () => {
  const workflow = read('.github/workflows/release.yml')
  const builds = workflow.split('\n').filter((line) => /napi build|build-wasm\.sh|cross-build\.sh|cargo (zig)?build/.test(line))
  assert.ok(builds.length >= 3, `the workflow's build lines: ${builds.join('\n')}`)
  for (const line of builds) assert.doesNotMatch(line, /test-hooks|--features|\s-F\s|--all-features/, line)
  assert.match(workflow, /run: sh scripts\/build-wasm\.sh\n/, 'the .wasm is built bare')
  for (const script of ['scripts/cross-build.sh', 'scripts/release-dry-run.sh']) {
    const text = read(script).split('\n').filter((line) => !line.trim().startsWith('#'))
    assert.equal(text.some((line) => /test-hooks|--features/.test(line)), false, script)
  }
  const pkg = JSON.parse(read('package.json'))
  assert.doesNotMatch(pkg.scripts.build, /features/)
  const cargo = read('Cargo.toml')
  assert.match(cargo, /^test-hooks = \[\]$/m)
  assert.match(cargo, /^default = \["napi"\]$/m, 'not a default feature')
  assert.match(read('scripts/prepare.js'), /\['--features', 'test-hooks'\]/)
})

/** The .node file binding.js loaded (the clone's, or the platform package's). */
function ADDON() {
  require(path.join(ROOT, 'lib', 'native.js'))
  return Object.keys(require.cache).find((f) => f.endsWith('.node'))
}

test('this clone\'s build has the hooks, reached only from the tests: not from the package\'s entry points', { skip: RELEASE_BUILD && 'a release build (DEVPROXY_RELEASE_BUILD=1): see the next test' }, async () => {
  const { __panicProbe, __rewriteEach } = hooks()
  assert.equal(typeof __panicProbe, 'function')
  assert.deepEqual(__rewriteEach(['a', 'ba'], [{ match: 'a', replace: 'c' }]), ['c', 'bc'])
  assert.equal(lib().__panicProbe, undefined)
  assert.equal(lib().__rewriteEach, undefined)
  assert.ok(fs.readFileSync(ADDON()).includes('__panicProbe'), 'the addon\'s bytes name the hook')
  const api = await import('../wasm/node.mjs')
  assert.deepEqual(Object.keys(api).sort(), ['CompiledRules', 'compileRules', 'createRewriter', 'rewrite', 'rewriteBody'])
  const wasm = await import('./fixtures/wasm-hooks.mjs')
  assert.equal(typeof wasm.__liveFunctions(), 'number')
  assert.ok(wasm.__memoryBytes() > 0)
})

// The release workflow's test jobs run the suite on what it built (DEVPROXY_RELEASE_BUILD=1).
test('a release build has no hooks: not in the addon (its exports; its bytes: no hook name, no probe\'s panic message), not in the .wasm', { skip: !RELEASE_BUILD && 'this clone\'s build has them (the release workflow sets DEVPROXY_RELEASE_BUILD=1)' }, async () => {
  const native = require(path.join(ROOT, 'lib', 'native.js'))
  assert.equal(native.__panicProbe, undefined)
  assert.equal(native.__rewriteEach, undefined)
  const bytes = fs.readFileSync(ADDON())
  for (const name of ['__panicProbe', '__rewriteEach', 'panic probe']) assert.equal(bytes.includes(name), false, `${ADDON()} names ${name}`)
  assert.equal(fs.readFileSync(path.join(ROOT, 'wasm', 'pkg', 'devproxy_native.js'), 'utf8').includes('__liveFunctions'), false)
  const wasm = await import('./fixtures/wasm-hooks.mjs')
  assert.throws(() => wasm.__liveFunctions(), /built without the test-hooks feature/)
})
