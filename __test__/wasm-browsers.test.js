'use strict'
// devproxy-native/wasm where users run it outside Node (issue 53 item 5): bundled for browsers by
// esbuild and by Vite with their defaults (no loader, no plugin, no flag), and with no bundler at all
// through an import map; run in headless Chromium in a page and in a Service Worker that rewrites a
// fetched page through createRewriter; and under Bun and Deno from their npm packages. Every host runs
// the same cases (fixtures/wasm-browsers/app.mjs) and must give Node's results. The package's `browser`
// export (wasm/browser.mjs) is what makes the bundlers work: the module inlined as base64, compiled
// synchronously (a Service Worker may not use top-level await).
//
// The project the bundlers and runtimes see is a temp folder with the fixture's files and
// node_modules/devproxy-native linked to this checkout, resolved through its `exports` as installed.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { pathToFileURL } = require('node:url')
const { ROOT, startUpstream, writeChunks, launchChromium, withTimeout } = require('./helpers')

const FIXTURE = path.join(__dirname, 'fixtures', 'wasm-browsers')
const WAIT = 30000
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm' }

let dir
/** Node's results for the shared cases, what every other host must give. */
let expected
let app
let browser

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-wasm-browsers-'))
  for (const name of fs.readdirSync(FIXTURE)) fs.copyFileSync(path.join(FIXTURE, name), path.join(dir, name))
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ private: true, type: 'module' }))
  fs.mkdirSync(path.join(dir, 'node_modules'))
  fs.symlinkSync(ROOT, path.join(dir, 'node_modules', 'devproxy-native'), 'dir')
  app = await import(pathToFileURL(path.join(dir, 'app.mjs')).href)
  expected = await app.run()
  // Node's results are themselves right, or equality with them would prove little.
  assert.equal(expected.whole, 'The 24 pears, teh color')
  assert.equal(expected.chunks, 'The 24 pears color')
  assert.equal(
    expected.streamed,
    app.ORIGIN_PAGE.replace('<body class="x">', '$&' + app.STREAM_OPTIONS.snippet).replaceAll('Teh', 'The').replace('3 apples', '6 pears')
      .replace('colour', 'color').replaceAll(/(https:)?\/\/shop\.example/g, '//edge.example'),
  )
})

after(async () => {
  if (browser) await browser.close()
  if (dir) fs.rmSync(dir, { recursive: true, force: true })
})

/** A static server on 127.0.0.1 for `root`'s files, plus /origin.html streamed in the fixture's chunks. */
function serve(root, extra = {}) {
  const routes = { ...extra }
  const walk = (sub) => {
    for (const entry of fs.readdirSync(path.join(root, sub), { withFileTypes: true })) {
      const rel = path.posix.join(sub, entry.name)
      if (entry.isDirectory()) walk(rel)
      else routes[`/${rel}`] = file(path.join(root, rel))
    }
  }
  walk('')
  routes['/'] = routes['/index.html']
  routes['/origin.html'] = (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
    return writeChunks(res, app.originChunks())
  }
  return startUpstream(routes)
}

function file(full) {
  return (req, res) => {
    res.writeHead(200, { 'content-type': TYPES[path.extname(full)] || 'application/octet-stream', 'cache-control': 'no-store' })
    res.end(fs.readFileSync(full))
  }
}

function allFiles(root) {
  return fs.readdirSync(root, { recursive: true }).filter((f) => fs.statSync(path.join(root, f)).isFile())
}

/**
 * The bundle's page in Chromium: the shared cases' results in the page, then the Service Worker
 * registered (`swType` 'classic' or 'module', or none) and /origin.html fetched through it.
 */
async function inChromium(server, swType) {
  browser ??= await launchChromium()
  // A context of its own: its own Service Worker registrations and caches.
  const context = await browser.newContext()
  try {
    const page = await context.newPage()
    const problems = []
    page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`))
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} for ${response.url()}`)
    })
    page.on('console', (msg) => {
      // A failed load is reported by its URL above.
      if (/^Failed to load resource/.test(msg.text())) return
      if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`console.${msg.type()}: ${msg.text()}`)
    })
    await page.goto(`${server.url}/`, { timeout: WAIT })
    const inPage = await withTimeout(page.evaluate(() => window.__result), WAIT, 'the page\'s result')
    assert.deepEqual(inPage, { value: expected }, `the page gives Node's results (${problems.join('; ')})`)
    if (!swType) return { problems }
    const viaWorker = await withTimeout(
      page.evaluate(async (type) => {
        const registration = await navigator.serviceWorker.register('/sw.js', { type })
        // The worker claims the page once active (clients.claim()): then the page's fetches go through it.
        if (!navigator.serviceWorker.controller) {
          await new Promise((resolve) => navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true }))
        }
        const response = await fetch('/origin.html')
        return { by: response.headers.get('x-rewritten-by'), text: await response.text(), scope: registration.scope }
      }, swType),
      WAIT,
      'the Service Worker\'s answer',
    )
    assert.equal(viaWorker.by, 'service-worker', 'the page went through the Service Worker')
    assert.equal(viaWorker.text, expected.streamed, 'the Service Worker\'s rewrite equals Node\'s')
    return { problems }
  } finally {
    await context.close()
  }
}

test('wasm in Chromium: bundled by esbuild with its defaults (iife), in a page and a Service Worker', async () => {
  const esbuild = require('esbuild')
  const out = path.join(dir, 'dist-esbuild')
  // esbuild's defaults for a browser bundle: no loader for .wasm, format iife (a classic worker).
  const result = await esbuild.build({ absWorkingDir: dir, entryPoints: ['page.js', 'sw.js'], bundle: true, outdir: out, logLevel: 'silent' })
  assert.deepEqual(result.errors, [])
  assert.deepEqual(result.warnings.map((w) => w.text), [], 'esbuild warned')
  fs.writeFileSync(path.join(out, 'index.html'), '<!doctype html><meta charset="utf-8"><body><script src="/page.js"></script>')
  assert.deepEqual(allFiles(out).sort(), ['index.html', 'page.js', 'sw.js'])
  const server = await serve(out)
  try {
    const { problems } = await inChromium(server, 'classic')
    assert.deepEqual(problems, [])
  } finally {
    await server.close()
  }
})

test('wasm in Chromium: bundled by Vite (vite build, no plugin), in a page and a module Service Worker', async () => {
  const { build } = await import('vite')
  const out = path.join(dir, 'dist-vite')
  await build({
    root: dir,
    configFile: false,
    logLevel: 'silent',
    build: {
      outDir: out,
      emptyOutDir: true,
      rolldownOptions: {
        input: { index: path.join(dir, 'index.html'), sw: path.join(dir, 'sw.js') },
        // A Service Worker's script needs a fixed name; the page's can be hashed.
        output: { entryFileNames: (chunk) => (chunk.name === 'sw' ? 'sw.js' : 'assets/[name]-[hash].js') },
      },
    },
  })
  const files = allFiles(out)
  assert.ok(files.includes('index.html') && files.includes('sw.js'), files.join(', '))
  // The module is inlined: no .wasm copied beside it for the glue's unused loader.
  assert.deepEqual(files.filter((f) => f.endsWith('.wasm')), [])
  const server = await serve(out)
  try {
    const { problems } = await inChromium(server, 'module')
    assert.deepEqual(problems, [])
  } finally {
    await server.close()
  }
})

test('wasm in Chromium: no bundler, the package mapped by an import map', async () => {
  // The browser export served as it is in the package; a worker has no import maps, so the page alone.
  const html =
    '<!doctype html><meta charset="utf-8"><script type="importmap">' +
    JSON.stringify({ imports: { 'devproxy-native/wasm': '/devproxy-native/wasm/browser.mjs' } }) +
    '</script><body><script type="module" src="/page.js"></script>'
  const routes = { '/': (req, res) => res.writeHead(200, { 'content-type': TYPES['.html'] }).end(html) }
  for (const name of ['app.mjs', 'page.js']) routes[`/${name}`] = file(path.join(dir, name))
  for (const rel of ['browser.mjs', 'rewriter.mjs', 'pkg/devproxy_native.js', 'pkg/devproxy_native_bg_inline.mjs']) {
    routes[`/devproxy-native/wasm/${rel}`] = file(path.join(ROOT, 'wasm', rel))
  }
  const server = await startUpstream(routes)
  try {
    const { problems } = await inChromium(server, null)
    assert.deepEqual(problems, [])
  } finally {
    await server.close()
  }
})

/**
 * A runtime's binary: where its package's postinstall put it (`npm install` runs it: bun moves the binary
 * out of its platform package), else in the platform package (`npm install --ignore-scripts`).
 */
function runtimeBinary(installed, candidates) {
  const linked = path.join(ROOT, 'node_modules', installed)
  // Without its postinstall, bun's bin/bun.exe is a placeholder script of a few hundred bytes.
  if (fs.existsSync(linked) && fs.statSync(linked).size > 1 << 20) return linked
  for (const [pkg, rel] of candidates) {
    const full = path.join(ROOT, 'node_modules', pkg, rel)
    if (fs.existsSync(full)) return full
  }
  throw new Error(`neither ${installed} nor any of ${candidates.map(([pkg]) => pkg).join(', ')} is installed (npm install)`)
}

const ARCH = process.arch === 'arm64' ? 'aarch64' : process.arch

function runCli(binary, args, env) {
  const child = spawnSync(binary, [...args, 'cli.mjs'], { cwd: dir, encoding: 'utf8', timeout: WAIT, env: { ...process.env, ...env } })
  assert.equal(child.status, 0, `${binary} failed: ${child.error || ''}${child.stderr}`)
  return JSON.parse(child.stdout.trim().split('\n').pop())
}

test('wasm under Bun (npm package bun): the package imported by name gives Node\'s results', () => {
  const bun = runtimeBinary(
    'bun/bin/bun.exe',
    [`bun-${process.platform}-${ARCH}`, `bun-${process.platform}-${ARCH}-baseline`, `bun-${process.platform}-${ARCH}-musl`].map((p) => [`@oven/${p}`, 'bin/bun']),
  )
  const { entry, value } = runCli(bun, [], { BUN_RUNTIME_TRANSPILER_CACHE_PATH: '0' })
  assert.deepEqual(value, expected)
  assert.match(entry, /\/wasm\/node\.mjs$/, 'Bun takes the `node` export')
})

test('wasm under Deno (npm package deno): the package imported by name gives Node\'s results', () => {
  const deno = runtimeBinary('deno/deno', [[`@deno/${process.platform}-${process.arch}${process.platform === 'linux' ? '-glibc' : ''}`, 'deno']])
  // Reads the .wasm from the package: --allow-read alone; its cache in the temp folder, no update check.
  const { entry, value } = runCli(deno, ['run', '--allow-read'], { DENO_DIR: path.join(dir, '.deno'), DENO_NO_UPDATE_CHECK: '1' })
  assert.deepEqual(value, expected)
  assert.match(entry, /\/wasm\/node\.mjs$/, 'Deno takes the `deno` export')
})
