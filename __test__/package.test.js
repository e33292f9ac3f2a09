'use strict'
// The package as npm users get it: `npm pack` the root and this platform's package, install both
// tarballs into a fresh project with no Rust toolchain on PATH and npm preferring its cache
// (--prefer-offline: connect, the one runtime dependency, is there since `npm install` here fetched it;
// plain --offline cannot work in a fresh project, whose install needs the registry's metadata that a
// lockfile install never cached), then use it there.
// Also: every version is in step (scripts/sync-versions.js), and a bump moves them all.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync, spawnSync } = require('node:child_process')
const { ROOT } = require('./helpers.js')

const root = require('../package.json')
const WIN = process.platform === 'win32'

/** This machine's platform package, named as napi names them (npm/<platform>/). */
function platformDir() {
  let abi = ''
  if (process.platform === 'linux') abi = process.report.getReport().header.glibcVersionRuntime ? '-gnu' : '-musl'
  else if (WIN) abi = '-msvc'
  return `${process.platform}-${process.arch}${abi}`
}

/** The environment without the npm_* variables of an outer `npm test`, which the inner npm would obey. */
const CLEAN_ENV = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)))

/** Runs npm (or npx) with `env`; returns stdout, throws with npm's output on failure. */
function npm(args, { cwd, env = CLEAN_ENV, bin = 'npm' } = {}) {
  const r = spawnSync(bin, args, { cwd, env, encoding: 'utf8', shell: WIN, timeout: 120000 })
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`)
  return r.stdout
}

/** PATH without any directory that holds cargo or rustc: the user has no Rust. */
function pathWithoutRust() {
  const exe = WIN ? '.exe' : ''
  return process.env.PATH.split(path.delimiter)
    .filter((dir) => !['cargo', 'rustc'].some((t) => fs.existsSync(path.join(dir, t + exe))))
    .join(path.delimiter)
}

test('versions are in step: platform packages, optionalDependencies, Cargo.toml, binding.js', () => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'sync-versions.js'), '--check'], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  for (const triple of root.napi.targets) {
    const { platformArchABI } = require('@napi-rs/cli').parseTriple(triple)
    const pkg = require(`../npm/${platformArchABI}/package.json`)
    assert.equal(root.optionalDependencies[pkg.name], root.version, `${pkg.name} is an optional dependency at ${root.version}`)
    assert.ok(pkg.os && pkg.cpu, `${pkg.name} says which os and cpu it is for`)
    if (platformArchABI.startsWith('linux-')) assert.deepEqual(pkg.libc, [platformArchABI.endsWith('-musl') ? 'musl' : 'glibc'])
  }
})

test('a version bump moves every package (npm version runs scripts/sync-versions.js)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-version-'))
  try {
    for (const f of ['package.json', 'Cargo.toml', 'Cargo.lock', 'binding.js']) fs.copyFileSync(path.join(ROOT, f), path.join(dir, f))
    fs.cpSync(path.join(ROOT, 'npm'), path.join(dir, 'npm'), { recursive: true })
    fs.cpSync(path.join(ROOT, 'scripts'), path.join(dir, 'scripts'), { recursive: true })
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
    pkg.version = '9.8.7'
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(pkg, null, 2))
    const env = { ...process.env, NODE_PATH: path.join(ROOT, 'node_modules') }
    const script = path.join(dir, 'scripts', 'sync-versions.js')
    const before = spawnSync(process.execPath, [script, '--check'], { env, encoding: 'utf8' })
    assert.equal(before.status, 1)
    const current = root.version.replace(/\./g, '\\.')
    assert.match(before.stderr, new RegExp(`out of step: npm/linux-x64-gnu: version ${current}, root 9\\.8\\.7`))
    const run = spawnSync(process.execPath, [script], { env, encoding: 'utf8' })
    assert.equal(run.status, 0, run.stderr)
    const after = spawnSync(process.execPath, [script, '--check'], { env, encoding: 'utf8' })
    assert.equal(after.status, 0, after.stderr)
    const bumped = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
    assert.ok(Object.values(bumped.optionalDependencies).every((v) => v === '9.8.7'))
    assert.equal(JSON.parse(fs.readFileSync(path.join(dir, 'npm', 'darwin-arm64', 'package.json'), 'utf8')).version, '9.8.7')
    assert.match(fs.readFileSync(path.join(dir, 'Cargo.toml'), 'utf8'), /^version = "9\.8\.7"$/m)
    assert.match(fs.readFileSync(path.join(dir, 'Cargo.lock'), 'utf8'), /name = "devproxy-native"\nversion = "9\.8\.7"/)
    assert.doesNotMatch(fs.readFileSync(path.join(dir, 'binding.js'), 'utf8'), /'0\.1\.0'/)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('the MIT licence is in the repository and in every tarball: the root package and each platform package (npm pack --dry-run)', () => {
  const licence = fs.readFileSync(path.join(ROOT, 'LICENSE'), 'utf8')
  assert.match(licence, /^MIT License\n\nCopyright \(c\) 2026 devproxy-native contributors\n/)
  assert.match(licence, /THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND/)
  assert.equal(root.license, 'MIT')
  const packed = (cwd) => JSON.parse(npm(['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd }))[0].files.map((f) => f.path)
  assert.ok(packed(ROOT).includes('LICENSE'), 'the root tarball holds LICENSE')
  for (const triple of root.napi.targets) {
    const { platformArchABI } = require('@napi-rs/cli').parseTriple(triple)
    const dir = path.join(ROOT, 'npm', platformArchABI)
    assert.equal(require(path.join(dir, 'package.json')).license, 'MIT')
    // npm/<platform>/ is packed from its own folder (napi pre-publish), so it needs its own copy.
    assert.equal(fs.readFileSync(path.join(dir, 'LICENSE'), 'utf8'), licence, `npm/${platformArchABI}/LICENSE is the root's`)
    assert.ok(packed(dir).includes('LICENSE'), `the ${platformArchABI} tarball holds LICENSE`)
  }
})

test('without this platform\'s package: require, import and npx devproxy say in one line which package is missing and how to get it', () => {
  const platform = platformDir()
  const pkg = `${root.name}-${platform}`
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-nobinding-'))
  try {
    // The root package's JS as npm installs it, without the .node file and without ${pkg}.
    const installed = path.join(work, 'node_modules', root.name)
    fs.mkdirSync(installed, { recursive: true })
    for (const f of ['package.json', 'index.js', 'index.mjs', 'binding.js', 'browser-sync.js', 'browser-sync.mjs', 'lib', 'bin']) {
      fs.cpSync(path.join(ROOT, f), path.join(installed, f), { recursive: true })
    }
    const env = { ...CLEAN_ENV }
    delete env.NAPI_RS_NATIVE_LIBRARY_PATH
    const run = (args) => spawnSync(process.execPath, args, { cwd: work, env, encoding: 'utf8', timeout: 30000 })
    const missing =
      `the platform package ${pkg} (the native addon for ${process.platform} ${process.arch}) is not installed; ` +
      `install it with \`npm install ${pkg}@${root.version}\`, or reinstall without --omit=optional (npm installs it as an optional dependency)`

    const required = run(['-e', "try { require('devproxy-native') } catch (e) { console.log(JSON.stringify({ message: e.message, code: e.code })) }"])
    assert.equal(required.status, 0, required.stderr)
    assert.deepEqual(JSON.parse(required.stdout), { message: missing, code: 'ERR_DEVPROXY_NATIVE_MISSING' })
    const imported = run(['--input-type=module', '-e', "import('devproxy-native/browser-sync').catch((e) => console.log(e.message))"])
    assert.equal(imported.stdout, missing + '\n', imported.stderr)

    const cli = run([path.join(installed, 'bin', 'devproxy.js'), 'http://127.0.0.1:9'])
    assert.equal(cli.status, 1)
    assert.equal(cli.stderr, `devproxy: ${missing}\n`, 'one line, no stack trace')
    assert.equal(cli.stdout, '')
    const version = run([path.join(installed, 'bin', 'devproxy.js'), '--version'])
    assert.equal(version.stdout, `${root.version}\n`, '--version needs no addon')

    // The package there but its addon damaged: the line says so and why.
    const dir = path.join(work, 'node_modules', pkg)
    fs.mkdirSync(dir)
    const file = `${root.napi.binaryName}.${platform}.node`
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: pkg, version: root.version, main: file }))
    fs.writeFileSync(path.join(dir, file), 'not an addon')
    const damaged = run([path.join(installed, 'bin', 'devproxy.js'), 'http://127.0.0.1:9'])
    assert.equal(damaged.status, 1)
    assert.equal(damaged.stderr.split('\n').length, 2, damaged.stderr)
    assert.match(damaged.stderr, new RegExp(`^devproxy: the platform package ${pkg} is installed but its addon did not load \\(.*${file.replace(/\./g, '\\.')}.*\\); reinstall it: npm install ${pkg}@`))
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
})

test('npm pack + install into a fresh project, from npm\'s cache and without Rust: require, proxy, npx devproxy', async () => {
  const platform = platformDir()
  const addon = path.join(ROOT, `${root.napi.binaryName}.${platform}.node`)
  assert.ok(fs.existsSync(addon), `${addon} is built (npm install builds it)`)
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-pack-'))
  try {
    // The root package: what `files` lists, no addon, no sources or tests. --ignore-scripts: packing must
    // not rebuild the addon (`prepare`).
    const [packed] = JSON.parse(npm(['pack', '--json', '--ignore-scripts', '--pack-destination', work], { cwd: ROOT }))
    const files = packed.files.map((f) => f.path)
    for (const f of ['package.json', 'index.js', 'index.d.ts', 'binding.js', 'binding.d.ts', 'lib/start.js', 'lib/cli.js', 'bin/devproxy.js', 'wasm/index.d.ts', 'wasm/node.mjs', 'wasm/edge.mjs', 'wasm/rewriter.mjs', 'wasm/browser.mjs', 'wasm/pkg/devproxy_native.js', 'wasm/pkg/devproxy_native_bg.wasm', 'wasm/pkg/devproxy_native_bg_inline.mjs']) {
      assert.ok(files.includes(f), `the root package holds ${f}`)
    }
    assert.deepEqual(files.filter((f) => /\.node$|^src\/|^__test__\/|^npm\/|^Cargo/.test(f)), [])

    // This platform's package with the built addon, as the release's `napi artifacts` fills it.
    const platformCopy = path.join(work, platform)
    fs.cpSync(path.join(ROOT, 'npm', platform), platformCopy, { recursive: true })
    fs.copyFileSync(addon, path.join(platformCopy, path.basename(addon)))
    const [platformPacked] = JSON.parse(npm(['pack', '--json', '--pack-destination', work], { cwd: platformCopy }))
    assert.deepEqual(platformPacked.files.map((f) => f.path).sort(), ['LICENSE', 'README.md', path.basename(addon), 'package.json'].sort())

    const app = path.join(work, 'app')
    fs.mkdirSync(app)
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }))
    const env = { ...CLEAN_ENV, PATH: pathWithoutRust(), npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' }
    for (const key of Object.keys(env)) if (/^(CARGO|RUSTUP)/.test(key)) delete env[key]
    assert.equal(spawnSync('cargo', ['--version'], { env, shell: WIN }).status === 0, false, 'no cargo on PATH')
    npm(['install', path.join(work, packed.filename), path.join(work, platformPacked.filename)], { cwd: app, env })

    const installed = path.join(app, 'node_modules')
    assert.ok(fs.existsSync(path.join(installed, root.name, 'bin', 'devproxy.js')))
    assert.ok(fs.existsSync(path.join(installed, `${root.name}-${platform}`, path.basename(addon))))

    // The installed package, used as a user would: a rewritten page through a proxy on loopback.
    fs.writeFileSync(path.join(app, 'use.js'), `
const http = require('node:http')
const { start } = require('devproxy-native')
const site = http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' })
  res.end('<html><body><a href="http://' + req.headers.host + '/x">x</a></body></html>')
})
site.listen(0, '127.0.0.1', async () => {
  const target = 'http://127.0.0.1:' + site.address().port
  const server = await start({ proxy: target, port: 0, snippet: '<i>snippet</i>', logLevel: 'silent' })
  const body = await (await fetch(server.url + '/', { headers: { accept: 'text/html' } })).text()
  await server.stop()
  site.close()
  console.log(JSON.stringify({ body, port: server.port, from: require.resolve('devproxy-native'), addon: Object.keys(require.cache).find((f) => f.endsWith('.node')) }))
})
`)
    const used = spawnSync(process.execPath, ['use.js'], { cwd: app, env, encoding: 'utf8', timeout: 60000 })
    assert.equal(used.status, 0, used.stderr)
    const result = JSON.parse(used.stdout)
    assert.equal(result.body, `<html><body><i>snippet</i><a href="//127.0.0.1:${result.port}/x">x</a></body></html>`)
    assert.equal(result.from, path.join(fs.realpathSync(installed), root.name, 'index.js'))
    assert.equal(result.addon, path.join(fs.realpathSync(installed), `${root.name}-${platform}`, path.basename(addon)))

    // devproxy-native/wasm from the installed package, with no native code at all (`--no-addons`).
    fs.writeFileSync(path.join(app, 'edge.mjs'), `
import { rewrite, createRewriter } from 'devproxy-native/wasm'
const page = new Response('<body>Hi <a href="https://a.example/x">x</a>').body
const rules = [{ match: /Hi/, replace: 'Yo' }]
const out = await new Response(page.pipeThrough(createRewriter(rules, { from: 'https://a.example', to: 'http://localhost:8787' }))).text()
console.log(JSON.stringify({ out, text: rewrite('abc', [{ match: 'b', replace: (req, res, m) => m.toUpperCase() }]) }))
`)
    const edge = spawnSync(process.execPath, ['--no-addons', 'edge.mjs'], { cwd: app, env, encoding: 'utf8', timeout: 60000 })
    assert.equal(edge.status, 0, edge.stderr)
    assert.deepEqual(JSON.parse(edge.stdout), { out: '<body>Yo <a href="//localhost:8787/x">x</a>', text: 'aBc' })

    assert.equal(npm(['devproxy', '--version'], { cwd: app, env, bin: 'npx' }), `${root.version}\n`)
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
})
