'use strict'
// `prepare` (scripts/prepare.js) builds only what is missing or stale (issue 52). A clone is copied to a
// temp dir (the sources, the package's files and the built artifacts, made newer than the sources as a
// build leaves them); with no Rust on PATH, any build it started would fail, so each step that must not
// build proves it by succeeding, and the ones that must build are asked with --check.
// Then the flows users run: `npm pack` in the clone (runs prepare), the tarball installed into a fresh
// project twice, and the clone installed by path (`npm install ../devproxy-native`, which runs the
// clone's prepare at every install of the project) twice, with npm 11's install-scripts approval.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { ROOT, RELEASE_BUILD } = require('./helpers.js')

const root = require('../package.json')
const WIN = process.platform === 'win32'
// A clone's artifacts have the test hooks; the release workflow's (DEVPROXY_RELEASE_BUILD=1) are stale here.
const CLONE_ONLY = { skip: RELEASE_BUILD && 'the release builds are not a clone\'s (no test hooks)' }
const FRESH = 'devproxy-native: the addon and the WebAssembly build are up to date with src/; not building'

function platformDir() {
  let abi = ''
  if (process.platform === 'linux') abi = process.report.getReport().header.glibcVersionRuntime ? '-gnu' : '-musl'
  else if (WIN) abi = '-msvc'
  return `${process.platform}-${process.arch}${abi}`
}
const ADDON = `${root.napi.binaryName}.${platformDir()}.node`
const WASM = ['wasm/pkg/devproxy_native.js', 'wasm/pkg/devproxy_native_bg.wasm', 'wasm/pkg/devproxy_native_bg_inline.mjs']

/** The environment of a user without Rust: no npm_* of an outer `npm test`, no cargo/rustc on PATH. */
function userEnv() {
  const exe = WIN ? '.exe' : ''
  const PATH = process.env.PATH.split(path.delimiter)
    .filter((dir) => !['cargo', 'rustc', 'napi'].some((t) => fs.existsSync(path.join(dir, t + exe))))
    .join(path.delimiter)
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(npm_|CARGO|RUSTUP|DEVPROXY_)/i.test(key)))
  return { ...env, PATH, npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' }
}

function run(bin, args, cwd, env = userEnv()) {
  const r = spawnSync(bin, args, { cwd, env, encoding: 'utf8', shell: WIN, timeout: 60000 })
  return { status: r.status, out: `${r.stdout}${r.stderr}` }
}

/** A clone as `npm install` leaves it: sources a minute old, the artifacts built after them. */
function makeClone(dir, { artifacts = true } = {}) {
  const inputs = ['src', 'Cargo.toml', 'Cargo.lock', 'build.rs', '.cargo', 'scripts/build-wasm.sh', 'scripts/prepare.js', 'package.json']
  for (const f of [...inputs, ...root.files.filter((f) => !f.includes('*') && !f.startsWith('wasm/pkg/'))]) {
    fs.cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true })
  }
  for (const f of fs.readdirSync(path.join(ROOT, 'wasm')).filter((f) => /\.(mjs|d\.ts|json)$/.test(f))) fs.copyFileSync(path.join(ROOT, 'wasm', f), path.join(dir, 'wasm', f))
  const old = new Date(Date.now() - 60000)
  const age = (p) => {
    if (fs.statSync(p).isDirectory()) for (const e of fs.readdirSync(p)) age(path.join(p, e))
    else fs.utimesSync(p, old, old)
  }
  age(dir)
  if (artifacts) {
    fs.mkdirSync(path.join(dir, 'wasm', 'pkg'), { recursive: true })
    for (const f of [ADDON, ...WASM]) fs.copyFileSync(path.join(ROOT, f), path.join(dir, f))
  }
}

test('prepare --check: a fresh clone must build both; built ones are fresh; an edit makes them stale, a touch does not once recorded; a build without Rust fails in one line', CLONE_ONLY, (t) => {
  for (const f of [ADDON, ...WASM]) {
    if (!fs.existsSync(path.join(ROOT, f))) return t.skip(`${f} is not built here`)
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-prepare-'))
  const prepare = (args = [], env) => run(process.execPath, ['scripts/prepare.js', ...args], dir, env)
  try {
    makeClone(dir, { artifacts: false })
    const bare = prepare(['--check'])
    assert.equal(bare.status, 1)
    assert.equal(bare.out, `devproxy-native: would build (the addon: ${ADDON} is missing; the WebAssembly build: ${WASM[0]} is missing)\n`)
    // What CI's `npm install` in a fresh clone does: it builds. Here, without Rust, that fails in one line.
    const build = prepare()
    assert.equal(build.status, 1)
    assert.match(build.out, /^devproxy-native: building \(the addon: .* is missing; the WebAssembly build: .* is missing\)\n/)
    assert.match(build.out, /devproxy-native: building the addon failed \(.*\); it needs Rust \(https:\/\/rustup\.rs\) and this clone's devDependencies \(npm install\)\n$/)

    fs.rmSync(dir, { recursive: true, force: true })
    fs.mkdirSync(dir)
    makeClone(dir)
    assert.equal(prepare(['--check']).status, 0)
    assert.ok(!fs.existsSync(path.join(dir, '.build-stamp.json')), '--check writes nothing')
    const lib = path.join(dir, 'src', 'lib.rs')
    const now = new Date()
    fs.utimesSync(lib, now, now)
    const touched = prepare(['--check'])
    assert.equal(touched.status, 1, 'with no record, mtimes decide')
    assert.equal(touched.out, `devproxy-native: would build (the addon: src/lib.rs is newer than ${ADDON}; the WebAssembly build: src/lib.rs is newer than ${WASM[0]})\n`)

    // Recorded once fresh (this run builds nothing: without Rust it would fail), a touch is no reason.
    const old = new Date(Date.now() - 60000)
    fs.utimesSync(lib, old, old)
    const recorded = prepare()
    assert.equal(recorded.status, 0, recorded.out)
    assert.equal(recorded.out, `${FRESH} (DEVPROXY_FORCE_BUILD=1 builds anyway)\n`)
    fs.utimesSync(lib, now, now)
    assert.equal(prepare(['--check']).status, 0, 'same content, newer mtime: fresh')
    fs.appendFileSync(lib, '\n// an edit\n')
    fs.utimesSync(lib, old, old)
    const edited = prepare(['--check'])
    assert.equal(edited.status, 1, 'an edit, even with an old mtime: stale')
    assert.match(edited.out, /the addon: its sources changed since it was built; the WebAssembly build: its sources changed since it was built/)
    const forced = prepare(['--check'], { ...userEnv(), DEVPROXY_FORCE_BUILD: '1' })
    assert.equal(forced.status, 1)
    assert.match(forced.out, /DEVPROXY_FORCE_BUILD is set/)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('installing twice without Rust builds nothing: npm pack in a built clone, its tarball into a fresh project, the clone by path with its prepare approved', CLONE_ONLY, (t) => {
  for (const f of [ADDON, ...WASM]) {
    if (!fs.existsSync(path.join(ROOT, f))) return t.skip(`${f} is not built here`)
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-install-twice-'))
  try {
    const clone = path.join(work, 'devproxy-native')
    fs.mkdirSync(clone)
    makeClone(clone)
    const built = Object.fromEntries([ADDON, ...WASM].map((f) => [f, fs.statSync(path.join(clone, f)).mtimeMs]))
    assert.equal(run('cargo', ['--version'], clone).status === 0, false, 'no cargo on PATH')

    // `npm pack` runs prepare: it says the build is up to date, and packs.
    const packed = run('npm', ['pack', '--pack-destination', work, '--foreground-scripts'], clone)
    assert.equal(packed.status, 0, packed.out)
    assert.ok(packed.out.includes(FRESH), packed.out)
    const tarball = path.join(work, `${root.name}-${root.version}.tgz`)
    assert.ok(fs.existsSync(tarball))

    // The tarball, into a fresh project twice: npm runs no prepare for a tarball, and the second install
    // changes nothing.
    const app = path.join(work, 'app')
    fs.mkdirSync(app)
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }))
    for (const round of [1, 2]) {
      const r = run('npm', ['install', '--no-save', '--foreground-scripts', '--omit=optional', tarball], app)
      assert.equal(r.status, 0, `round ${round}: ${r.out}`)
      assert.doesNotMatch(r.out, /devproxy-native: building/)
    }
    assert.ok(fs.existsSync(path.join(app, 'node_modules', root.name, 'index.js')))

    // The clone by path, as the README's install from a clone does, twice: npm runs the clone's prepare
    // each time (npm 11 lists it as not covered by `allowScripts` until the project approves it).
    const user = path.join(work, 'user')
    fs.mkdirSync(user)
    fs.writeFileSync(path.join(user, 'package.json'), JSON.stringify({ name: 'user', version: '1.0.0', private: true }))
    const first = run('npm', ['install', '-D', '--foreground-scripts', '../devproxy-native'], user)
    assert.equal(first.status, 0, first.out)
    assert.ok(first.out.includes(FRESH), `prepare ran and built nothing: ${first.out}`)
    const approved = run('npm', ['install-scripts', 'approve', root.name], user)
    if (approved.status === 0) {
      assert.match(first.out, /not yet covered by allowScripts/, 'npm 11 lists the prepare it ran')
      assert.ok(JSON.stringify(JSON.parse(fs.readFileSync(path.join(user, 'package.json'), 'utf8')).allowScripts || {}).includes(root.name), approved.out)
    } else {
      assert.match(approved.out, /Unknown command|install-scripts/, 'an npm without install-scripts approval')
    }
    const second = run('npm', ['install', '--foreground-scripts'], user)
    assert.equal(second.status, 0, second.out)
    assert.ok(second.out.includes(FRESH), `prepare ran again and built nothing: ${second.out}`)
    if (approved.status === 0) assert.doesNotMatch(second.out, /not yet covered by allowScripts/)
    assert.ok(fs.lstatSync(path.join(user, 'node_modules', root.name)).isSymbolicLink())
    for (const [f, mtime] of Object.entries(built)) assert.equal(fs.statSync(path.join(clone, f)).mtimeMs, mtime, `${f} untouched`)
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
})

test('test hooks (issue 52 item 7): a clone builds with them, `npm publish` without: each refuses the other\'s artifacts, and publish needs no addon', CLONE_ONLY, (t) => {
  for (const f of [ADDON, ...WASM]) {
    if (!fs.existsSync(path.join(ROOT, f))) return t.skip(`${f} is not built here`)
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-prepare-hooks-'))
  const prepare = (args, npmCommand) => run(process.execPath, ['scripts/prepare.js', ...args], dir, { ...userEnv(), ...(npmCommand ? { npm_command: npmCommand } : {}) })
  try {
    makeClone(dir)
    // This clone's artifacts have the hooks: fresh for a clone (and for `npm pack`), not for publishing.
    assert.equal(prepare(['--check']).status, 0)
    assert.equal(prepare(['--check'], 'pack').status, 0)
    const refused = prepare(['--check'], 'publish')
    assert.equal(refused.status, 1)
    assert.equal(refused.out, 'devproxy-native: would build (the WebAssembly build: it has the test hooks, which a published package must not carry)\n')
    // Without Rust, publishing from such a clone fails instead of shipping them.
    assert.equal(prepare([], 'publish').status, 1)

    // The release workflow's .wasm (built bare: its glue names no hook), and no addon in the root.
    const glue = path.join(dir, WASM[0])
    fs.writeFileSync(glue, fs.readFileSync(glue, 'utf8').replaceAll('__liveFunctions', '__gone'))
    fs.rmSync(path.join(dir, ADDON))
    const published = prepare([], 'publish')
    assert.equal(published.status, 0, published.out)
    assert.equal(published.out, 'devproxy-native: publishing: the WebAssembly build is up to date with src/ and has no test hooks; the addons are in the platform packages\n')
    // The same .wasm is stale for the clone's own tests.
    const dev = prepare(['--check'])
    assert.equal(dev.status, 1)
    assert.equal(dev.out, `devproxy-native: would build (the addon: ${ADDON} is missing; the WebAssembly build: it was built without the test hooks (the test-hooks feature))\n`)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
