#!/usr/bin/env node
'use strict'
// npm's `prepare` (run by `npm install` in a clone, by `npm pack`, and by every `npm install` of a
// project that installs the clone by path): builds the addon (napi build) and the WebAssembly build
// (scripts/build-wasm.sh) only when they are missing or older than what they are built from, and says so
// in one line either way. A fresh clone has neither, so it builds both (what CI does).
//
// Fresh: the artifact exists, and the sha-256 of its inputs is the one recorded when it was last
// checked here (.build-stamp.json, with the artifact's size and mtime, so a rebuild by hand is noticed);
// with no record that still holds, every input is older than the artifact (mtimes), and the hash is
// recorded for next time. A checkout that rewrites files without changing them is then no reason to
// build, and an edit is, whatever the mtimes say.
//
// `node scripts/prepare.js --check`: builds nothing; exits 0 when both are fresh, 1 naming what is not.
// DEVPROXY_FORCE_BUILD=1 builds both whatever they are.
//
// Test hooks (issue 52): a clone's builds have the `test-hooks` cargo feature, which the tests use
// (`__panicProbe`, `__rewriteEach`, `__liveFunctions`); an artifact built without it (`npm run build`) is
// stale here. Under `npm publish` it is the other way round: the root package ships the WebAssembly
// build, which must carry no hooks, and no addon (the platform packages hold those: nothing to build).

const fs = require('node:fs')
const path = require('node:path')
const crypto = require('node:crypto')
const { spawnSync } = require('node:child_process')

const ROOT = path.resolve(__dirname, '..')
const STAMP = path.join(ROOT, '.build-stamp.json')
const { napi } = require(path.join(ROOT, 'package.json'))
// npm names the command that runs a lifecycle script; `prepare` runs under install, pack and publish.
const PUBLISH = process.env.npm_command === 'publish'
const HOOKS = PUBLISH ? [] : ['--features', 'test-hooks']

/** `linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`: the suffix `napi build --platform` names the addon by. */
function platformSuffix() {
  let abi = ''
  if (process.platform === 'linux') abi = process.report.getReport().header.glibcVersionRuntime ? '-gnu' : '-musl'
  else if (process.platform === 'win32') abi = '-msvc'
  return `${process.platform}-${process.arch}${abi}`
}

/** Every file under `dir` (relative to ROOT), sorted; none when it does not exist. */
function walk(dir) {
  const full = path.join(ROOT, dir)
  if (!fs.existsSync(full)) return []
  const out = []
  for (const entry of fs.readdirSync(full, { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name)
    if (entry.isDirectory()) out.push(...walk(rel))
    else if (entry.isFile()) out.push(rel)
  }
  return out.sort()
}

const CRATE = () => [...walk('src'), 'Cargo.toml', 'Cargo.lock', 'build.rs', '.cargo/config.toml'].filter((f) => fs.existsSync(path.join(ROOT, f)))

/** What is built, from what, by which command. */
const TARGETS = [
  {
    name: 'the addon',
    artifacts: [`${napi.binaryName}.${platformSuffix()}.node`],
    inputs: CRATE,
    // The hooks are `skip_typescript`: binding.js and binding.d.ts come out as a release build's.
    command: ['napi', ['build', '--platform', '--release', ...HOOKS, '--js', 'binding.js', '--dts', 'binding.d.ts']],
    // A name only the hooks register (src/binding/mod.rs).
    hook: { file: `${napi.binaryName}.${platformSuffix()}.node`, marker: '__panicProbe' },
  },
  {
    name: 'the WebAssembly build',
    artifacts: ['wasm/pkg/devproxy_native.js', 'wasm/pkg/devproxy_native_bg.wasm', 'wasm/pkg/devproxy_native_bg_inline.mjs'],
    inputs: () => [...CRATE(), 'scripts/build-wasm.sh'],
    command: ['sh', ['scripts/build-wasm.sh', ...HOOKS]],
    // wasm-bindgen's glue names every export (src/wasm.rs).
    hook: { file: 'wasm/pkg/devproxy_native.js', marker: '__liveFunctions' },
  },
].filter((target) => !(PUBLISH && target.name === 'the addon'))

/** Whether the artifact has the test hooks (its bytes name the hook's export). */
const hooked = ({ file, marker }) => fs.readFileSync(path.join(ROOT, file)).includes(marker)

function hashOf(files) {
  const hash = crypto.createHash('sha256')
  for (const file of files) hash.update(`${file}\0`).update(fs.readFileSync(path.join(ROOT, file))).update('\0')
  return hash.digest('hex')
}

const statOf = (files) => files.map((f) => {
  const s = fs.statSync(path.join(ROOT, f))
  return [f, s.size, s.mtimeMs]
})

function readStamp() {
  try {
    return JSON.parse(fs.readFileSync(STAMP, 'utf8'))
  } catch {
    return {}
  }
}

/** `{ fresh, reason, record }` for one target; `record` is what the stamp keeps for it when fresh. */
function judge(target, stamp) {
  const missing = target.artifacts.find((f) => !fs.existsSync(path.join(ROOT, f)))
  if (missing) return { fresh: false, reason: `${missing} is missing` }
  if (hooked(target.hook) !== !PUBLISH) {
    return { fresh: false, reason: PUBLISH ? 'it has the test hooks, which a published package must not carry' : 'it was built without the test hooks (the test-hooks feature)' }
  }
  const inputs = target.inputs()
  const hash = hashOf(inputs)
  const record = { hash, artifacts: statOf(target.artifacts) }
  const kept = stamp[target.name]
  if (kept && JSON.stringify(kept.artifacts) === JSON.stringify(record.artifacts)) {
    return kept.hash === hash ? { fresh: true, record } : { fresh: false, reason: 'its sources changed since it was built' }
  }
  const oldest = Math.min(...record.artifacts.map(([, , mtime]) => mtime))
  const newer = inputs.find((f) => fs.statSync(path.join(ROOT, f)).mtimeMs > oldest)
  if (newer) return { fresh: false, reason: `${newer} is newer than ${target.artifacts[0]}` }
  return { fresh: true, record }
}

function main() {
  const check = process.argv.includes('--check')
  const force = /^(1|true|yes)$/i.test(process.env.DEVPROXY_FORCE_BUILD || '')
  const stamp = readStamp()
  const verdicts = TARGETS.map((target) => ({ target, ...(force ? { fresh: false, reason: 'DEVPROXY_FORCE_BUILD is set' } : judge(target, stamp)) }))
  const stale = verdicts.filter((v) => !v.fresh)
  const next = { ...stamp }
  for (const v of verdicts) if (v.fresh) next[v.target.name] = v.record
  const save = () => {
    try {
      fs.writeFileSync(STAMP, JSON.stringify(next, null, 2) + '\n')
    } catch {
      // A read-only checkout: the mtimes decide next time too.
    }
  }
  if (stale.length === 0) {
    if (!check) save()
    console.log(
      PUBLISH
        ? 'devproxy-native: publishing: the WebAssembly build is up to date with src/ and has no test hooks; the addons are in the platform packages'
        : 'devproxy-native: the addon and the WebAssembly build are up to date with src/; not building (DEVPROXY_FORCE_BUILD=1 builds anyway)',
    )
    return 0
  }
  const why = stale.map((v) => `${v.target.name}: ${v.reason}`).join('; ')
  if (check) {
    console.log(`devproxy-native: would build (${why})`)
    return 1
  }
  console.log(`devproxy-native: building (${why})`)
  for (const v of stale) {
    const [bin, args] = v.target.command
    const run = spawnSync(bin, args, { cwd: ROOT, stdio: 'inherit', shell: process.platform === 'win32' })
    if (run.status !== 0) {
      const how = run.error ? `${bin} could not run: ${run.error.code || run.error.message}` : `exit ${run.status ?? run.signal}`
      console.error(`devproxy-native: building ${v.target.name} failed (${how}); it needs Rust (https://rustup.rs) and this clone's devDependencies (npm install)`)
      return 1
    }
    const judged = judge(v.target, {})
    if (judged.fresh) next[v.target.name] = judged.record
  }
  save()
  return 0
}

process.exitCode = main()
