'use strict'
// The adapter hands every option of `start()` to the native server (issue 31: `record`, `onRequest`...
// went to browser-sync and were dropped in silence).

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { ROOT, startUpstream, request, withTimeout, ACCEPT_HTML, tapStderr } = require('./helpers')
const { PROXY_OPTIONS, SHARED_OPTIONS, splitOptions, unknownOptions, applyHttpModule } = require('../lib/browser-sync-options.js')

test("every option start() reads reaches it through the adapter (only `snippet` is browser-sync's to decide)", () => {
  // start()'s own list of top-level options (src/binding/option_names.rs), plus the one only the JS side reads.
  const source = fs.readFileSync(path.join(ROOT, 'src', 'binding', 'option_names.rs'), 'utf8')
  const list = /pub\(super\) const PROXY: &\[&str\] = &\[([^\]]*)\]/.exec(source)
  assert.ok(list, 'the option list is in src/binding/option_names.rs')
  const native = [...list[1].matchAll(/"([A-Za-z]+)"/g)].map((m) => m[1])
  assert.ok(native.length > 20, `read ${native.length} names`)
  const routed = new Set([...PROXY_OPTIONS, ...SHARED_OPTIONS])
  const missing = [...native, 'onRequest', 'middleware'].filter((name) => !routed.has(name) && name !== 'snippet')
  assert.deepEqual(missing, [])
})

test('record and onRequest given to the adapter\'s init() are used: a cassette is written, onRequest is called', async () => {
  const up = await startUpstream({
    '/page': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end('<html><body>page</body></html>')
    },
  })
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-adapter-'))
  const cassette = path.join(dir, 'c.jsonl')
  const records = []
  const bs = require(path.join(ROOT, 'browser-sync.js')).create()
  try {
    const { err } = await new Promise((resolve) =>
      bs.init(
        {
          proxy: up.url,
          port: 0,
          open: false,
          online: false,
          ui: false,
          notify: false,
          logLevel: 'silent',
          record: { path: cassette },
          onRequest: (entry) => records.push(entry),
        },
        (e) => resolve({ err: e }),
      ),
    )
    assert.equal(err, null)
    const url = bs.getOption('urls').get('local').replace('localhost', '127.0.0.1')
    assert.equal((await request(url + '/page', { headers: { accept: ACCEPT_HTML } })).status, 200)
    await withTimeout(
      (async () => {
        while (!records.some((r) => r.url === '/page') || bs.proxy.recording().written < 1) await new Promise((r) => setTimeout(r, 20))
      })(),
      10000,
      'the record and the cassette line',
    )
    assert.match(fs.readFileSync(cassette, 'utf8'), /"url":"\/page"/)
  } finally {
    await bs.exit()
    await up.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('a misspelt option is warned about with the closest name, whatever the entry point and even with every log off', { timeout: 60000 }, async () => {
  const { spawnNode } = require('./helpers')
  const run = async (mode) => {
    const child = spawnNode(path.join(__dirname, 'fixtures', 'typo-child.js'), [mode])
    const { code } = await withTimeout(child.exited, 50000, `the ${mode} child`)
    const { stderr } = child.output()
    assert.equal(code, 0, stderr)
    return stderr
  }
  // start() with quiet: true: the native side's warnings (top-level and nested keys).
  const viaStart = await run('start')
  assert.match(viaStart, /\[devproxy\] unknown option `rewriteRule`; did you mean `rewriteRules`\?/)
  assert.match(viaStart, /\[devproxy\] unknown option `proxy\.reqHeader`; did you mean `proxy\.reqHeaders`\?/)
  // The adapter with logLevel: 'silent': keys that neither browser-sync nor start() reads.
  const viaAdapter = await run('adapter')
  // Each once: the adapter says it; start() gets none of the keys it does not read, so it says nothing more.
  assert.equal(viaAdapter.match(/unknown option `rewriteRule`/g)?.length, 1, viaAdapter)
  assert.match(viaAdapter, /\[Browsersync\] unknown option `rewriteRule`; did you mean `rewriteRules`\?/)
  assert.equal(viaAdapter.match(/unknown option `ghostmode`/g)?.length, 1, viaAdapter)
  assert.match(viaAdapter, /\[Browsersync\] unknown option `ghostmode`; did you mean `ghostMode`\?/)
  assert.match(viaAdapter, /\[Browsersync\] unknown option `zqxjvwk`; it is ignored/)
  assert.doesNotMatch(viaAdapter, /belongs to Browsersync's other features/, 'start() is given no option of browser-sync\'s')
  assert.doesNotMatch(viaAdapter, /unknown option `(proxy|port|open|online|ui|logLevel)`/, 'known options are not reported')
})

test('every top-level option browser-sync 2 and 3 read is known to the adapter: none is reported unknown', () => {
  const binding = require(path.join(ROOT, 'binding.js'))
  // Names read at the top level of the options (`options.get("x")`, `incoming.getIn(["x", ...])`),
  // less those read from nested maps (server, snippetOptions, ghostMode...) or set by browser-sync itself.
  const nestedOrInternal = new Set(['blacklist', 'whitelist', 'rule', 'directory', 'extensions', 'index', 'debug', 'detect', 'json', 'mode', 'scheme', 'scriptPaths', 'urls', 'version'])
  for (const pkg of ['browser-sync', 'browser-sync-2']) {
    const dist = path.join(ROOT, 'node_modules', pkg, 'dist')
    const read = new Set()
    for (const file of fs.readdirSync(dist, { recursive: true })) {
      if (!file.endsWith('.js')) continue
      const text = fs.readFileSync(path.join(dist, file), 'utf8')
      for (const m of text.matchAll(/\b(?:options|incoming|opts)\.(?:get|has)\("([A-Za-z]+)"|\b(?:options|incoming|opts)\.getIn\(\["([A-Za-z]+)"/g)) read.add(m[1] ?? m[2])
    }
    const topLevel = [...read].filter((name) => !nestedOrInternal.has(name))
    assert.ok(topLevel.length > 40, `${pkg}: ${topLevel.length} names read`)
    for (const name of ['cwd', 'callbacks', 'tunnel', 'scriptPath', 'uiPort', 'ports', 'serveStaticOptions']) assert.ok(topLevel.includes(name), `${pkg} reads ${name}`)
    const defaults = require(path.join(dist, 'default-config.js'))
    const config = Object.fromEntries(topLevel.map((name) => [name, true]))
    assert.deepEqual(unknownOptions(config, defaults, binding.__closestName), [], pkg)
  }
  // Read by browser-sync 2 only (in its default config): browser-sync 3 drops it, so it is reported there.
  const defaults3 = require(path.join(ROOT, 'node_modules', 'browser-sync', 'dist', 'default-config.js'))
  assert.deepEqual(unknownOptions({ xip: true }, defaults3, binding.__closestName), ['unknown option `xip`; it is ignored'])
})

test('options go where they are read: the proxy\'s to start(), browser-sync\'s to it, the shared ones to both', () => {
  const middleware = () => {}
  const { proxyOptions, bsOptions } = splitOptions({ proxy: 'http://127.0.0.1:1', port: 3000, middleware, files: ['*.css'], ghostMode: false, logPrefix: 'app', startPath: '/x', snippetOptions: { async: true } })
  assert.deepEqual(proxyOptions, { proxy: 'http://127.0.0.1:1', port: 3000, middleware, logPrefix: 'app', startPath: '/x', snippetOptions: { async: true } })
  assert.deepEqual(bsOptions, { files: ['*.css'], ghostMode: false, logPrefix: 'app', startPath: '/x', snippetOptions: { async: true } })
})

test("httpModule's values: none, null or 'http' change nothing and say nothing; 'http2' keeps an https given; another module is named in one warning", () => {
  for (const httpModule of [undefined, null, 'http']) {
    const given = httpModule === undefined ? { port: 3000 } : { port: 3000, httpModule }
    assert.deepEqual(applyHttpModule(given), { options: { port: 3000 }, warnings: [] }, String(httpModule))
  }
  const https = { key: 'k.pem', cert: 'c.pem' }
  assert.deepEqual(applyHttpModule({ httpModule: 'http2', https }), { options: { https }, warnings: [] })
  assert.deepEqual(applyHttpModule({ httpModule: 'http2' }), { options: { https: true }, warnings: [] })
  const { options, warnings } = applyHttpModule({ httpModule: 'spdy', port: 1 })
  assert.deepEqual(options, { port: 1 })
  assert.deepEqual(warnings, [
    "option `httpModule` ('spdy') is not used: the proxy's server is native (HTTP/1.1, and HTTP/2 over https); 'http2' means https: true",
  ])
})

test("httpModule: 'http2' serves the site over https, HTTP/2 to an HTTP/2 client, as Browsersync's http2 server; another module is said to be unused", { timeout: 60000 }, async () => {
  const http2 = require('node:http2')
  const up = await startUpstream({
    '/page': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end('<html><body>page</body></html>')
    },
  })
  const init = async (extra) => {
    const bs = require(path.join(ROOT, 'browser-sync.js')).create()
    const { err } = await new Promise((resolve) =>
      bs.init({ proxy: up.url, port: 0, open: false, online: false, ui: false, notify: false, logLevel: 'silent', ...extra }, (e) => resolve({ err: e })),
    )
    assert.ifError(err)
    return bs
  }
  const stderr = tapStderr()
  try {
    const bs = await init({ httpModule: 'http2' })
    try {
      const server = bs.proxy
      assert.match(server.url, /^https:/)
      const session = http2.connect(server.url, { ca: server.certificate })
      const answer = await withTimeout(
        new Promise((resolve, reject) => {
          session.on('error', reject)
          const stream = session.request({ ':path': '/page', accept: ACCEPT_HTML })
          let status
          let body = ''
          stream.on('response', (headers) => { status = headers[':status'] })
          stream.setEncoding('utf8')
          stream.on('data', (c) => { body += c })
          stream.on('end', () => resolve({ status, body, alpn: session.alpnProtocol }))
          stream.on('error', reject)
        }),
        10000,
        'an HTTP/2 request',
      )
      session.close()
      assert.equal(answer.alpn, 'h2')
      assert.equal(answer.status, 200)
      assert.match(answer.body, /page/)
      assert.match(answer.body, /browser-sync-client/, 'with the snippet')
    } finally {
      await bs.exit()
    }
    assert.equal(stderr.text().match(/httpModule/g), null, "'http2' is understood: nothing to warn about")
    const custom = await init({ httpModule: { createServer() {} } })
    try {
      assert.match(custom.proxy.url, /^http:/)
    } finally {
      await custom.exit()
    }
    const said = stderr.text()
    assert.equal(said.match(/httpModule/g)?.length, 1, said)
    assert.match(said, /\[Browsersync\] option `httpModule` \(object\) is not used: the proxy's server is native/)
  } finally {
    stderr.restore()
    await up.close()
  }
})

test("the site's URLs (banner, getOption('urls')) are browser-sync 3's for the same config; better where it prints what cannot be opened", { timeout: 120000 }, async () => {
  const { deadPort } = require('./helpers')
  const devIp = require(require.resolve('dev-ip', { paths: [path.dirname(require.resolve('browser-sync'))] }))
  const up = await startUpstream({ '/': (req, res) => res.end('site') })
  const urlsOf = async (api, config) => {
    const port = await deadPort()
    const instance = api.create()
    const { err, bs } = await new Promise((resolve) =>
      instance.init({ proxy: up.url, port, open: false, ui: false, notify: false, ghostMode: false, logLevel: 'silent', ...config }, (e, b) => resolve({ err: e, bs: b })),
    )
    assert.ifError(err)
    const urls = bs.options.get('urls').toJS()
    await instance.exit()
    return JSON.parse(JSON.stringify(urls).replaceAll(`:${port}`, ':PORT'))
  }
  const adapter = require(path.join(ROOT, 'browser-sync.js'))
  const browserSync = require('browser-sync')
  try {
    const same = [
      { online: false },
      { online: false, listen: '127.0.0.1' },
      { online: false, startPath: 'x' },
      { online: false, startPath: '/x/y' },
      { online: true, host: '127.0.0.1' },
      { online: false, host: '127.0.0.1' },
      { online: false, https: true },
    ]
    for (const config of same) assert.deepEqual(await urlsOf(adapter, config), await urlsOf(browserSync, config), JSON.stringify(config))

    const lan = devIp()
    const lanUrl = lan.length ? { external: `http://${lan[0]}:PORT` } : {}
    const better = [
      // [config, browser-sync 3's, the adapter's]
      [{ online: false, listen: '::1' }, { local: 'http://::1:PORT' }, { local: 'http://[::1]:PORT' }],
      [{ online: true, host: '::1' }, { local: 'http://localhost:PORT', external: 'http://::1:PORT' }, { local: 'http://localhost:PORT', external: 'http://[::1]:PORT' }],
      [{ online: true, host: '0.0.0.0' }, { local: 'http://localhost:PORT', external: 'http://0.0.0.0:PORT' }, { local: 'http://localhost:PORT', ...lanUrl }],
      [{ online: false, listen: '0.0.0.0' }, { local: 'http://0.0.0.0:PORT' }, { local: 'http://localhost:PORT', ...lanUrl }],
      [{ online: true, host: '0.0.0.0', detect: false }, { local: 'http://localhost:PORT', external: 'http://0.0.0.0:PORT' }, { local: 'http://localhost:PORT' }],
      // Browsersync listens on every address, the proxy on loopback unless `host` says otherwise.
      [{ online: true }, { local: 'http://localhost:PORT', ...lanUrl }, { local: 'http://localhost:PORT' }],
      [{ online: true, detect: false }, { local: 'http://localhost:PORT', external: 'http://false:PORT' }, { local: 'http://localhost:PORT' }],
      // `host: 'localhost'` is loopback too; `::` is a wildcard like 0.0.0.0.
      [{ online: true, host: 'localhost' }, { local: 'http://localhost:PORT', ...lanUrl }, { local: 'http://localhost:PORT' }],
      [{ online: false, listen: '::' }, { local: 'http://:::PORT' }, { local: 'http://localhost:PORT', ...lanUrl }],
    ]
    for (const [config, theirs, ours] of better) {
      assert.deepEqual(await urlsOf(browserSync, config), theirs, `browser-sync 3, ${JSON.stringify(config)}`)
      assert.deepEqual(await urlsOf(adapter, config), ours, `adapter, ${JSON.stringify(config)}`)
    }
  } finally {
    await up.close()
  }
})

test("browser-sync's UI listens on 127.0.0.1 through the adapter; `ui.listen` is said to be unused, not dropped in silence", { timeout: 60000 }, async () => {
  const { deadPort } = require('./helpers')
  const up = await startUpstream({ '/': (req, res) => res.end('site') })
  const stderr = tapStderr()
  try {
    for (const ui of [{}, { listen: '0.0.0.0' }]) {
      const uiPort = await deadPort()
      const instance = require(path.join(ROOT, 'browser-sync.js')).create()
      const { err } = await new Promise((resolve) =>
        instance.init({ proxy: up.url, port: 0, open: false, online: false, notify: false, logLevel: 'silent', logPrefix: 'my-app', ui: { port: uiPort, ...ui } }, (e) => resolve({ err: e })),
      )
      try {
        assert.ifError(err)
        assert.deepEqual(instance.instance.ui.server.address(), { address: '127.0.0.1', family: 'IPv4', port: uiPort })
        assert.equal(instance.getOption('urls').get('ui'), `http://localhost:${uiPort}`, 'as Browsersync prints it')
        const res = await request(`http://127.0.0.1:${uiPort}/`)
        assert.equal(res.status, 200, 'the UI answers')
        // The UI's page connects to browser-sync's own server, not to the site. Checked on the first
        // instance: browser-sync-ui keeps the first connector it made for the process (browser-sync 3 too).
        if (ui.listen === undefined) {
          const connector = await (await fetch(`http://127.0.0.1:${uiPort}/js/vendor/socket.js`)).text()
          const socketUrl = new URL(connector.match(/socketUrl = '(http:[^']*)';/)[1])
          assert.equal(socketUrl.pathname, '/browser-sync-cp')
          assert.notEqual(Number(socketUrl.port), instance.proxy.port)
          const handshake = await fetch(`${socketUrl.origin}/browser-sync/socket.io/?EIO=4&transport=polling`)
          assert.match(await handshake.text(), /^0\{"sid":/, "browser-sync's socket.io answers there")
        }
      } finally {
        await instance.exit()
      }
      const said = stderr.text().match(/option `ui\.listen` is not used/g)?.length ?? 0
      assert.equal(said, ui.listen ? 1 : 0, stderr.text())
    }
    assert.match(stderr.text(), /\[my-app\] option `ui\.listen` is not used: browser-sync's UI listens where its own server does, on 127\.0\.0\.1 through the adapter \(browser-sync replaces `ui\.listen` with `listen`\)/)
  } finally {
    stderr.restore()
    await up.close()
  }
})

test("a port out of range reaches init's callback with start()'s message (not the port probe's)", { timeout: 60000 }, async () => {
  for (const port of [70000, -1]) {
    const instance = require(path.join(ROOT, 'browser-sync.js')).create()
    const err = await new Promise((resolve) =>
      instance.init({ proxy: 'http://127.0.0.1:9', port, open: false, online: false, ui: false, notify: false, logLevel: 'silent' }, resolve),
    )
    assert.equal(err?.message, `option \`port\` must be a whole number from 0 to 65535, got ${port}`)
    assert.equal(instance.active, false)
  }
})

test("the site's port in use: the site takes the next free one before browser-sync's UI does, as in Browsersync (site P+1, UI P+2)", { timeout: 60000 }, async () => {
  const net = require('node:net')
  const bindable = (port) =>
    new Promise((resolve) => {
      const probe = net.createServer()
      probe.once('error', () => resolve(false))
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)))
    })
  // A port P held by someone else, and P+1..P+3 free.
  let busy = null
  for (let tries = 0; tries < 50 && busy === null; tries++) {
    const candidate = net.createServer()
    const base = 20000 + Math.floor(Math.random() * 40000)
    const held = await new Promise((resolve) => {
      candidate.once('error', () => resolve(false))
      candidate.listen(base, '127.0.0.1', () => resolve(true))
    })
    if (!held) continue
    if ((await bindable(base + 1)) && (await bindable(base + 2)) && (await bindable(base + 3))) busy = { server: candidate, port: base }
    else candidate.close()
  }
  assert.ok(busy, 'four consecutive ports, the first held')
  const up = await startUpstream({ '/': (req, res) => res.end('site') })
  const P = busy.port
  try {
    for (const [name, api] of [['browser-sync 3', require('browser-sync')], ['adapter', require(path.join(ROOT, 'browser-sync.js'))]]) {
      const instance = api.create()
      const { err } = await new Promise((resolve) =>
        instance.init({ proxy: up.url, port: P, ui: { port: P + 1 }, open: false, online: false, notify: false, logLevel: 'silent' }, (e) => resolve({ err: e })),
      )
      try {
        assert.ifError(err)
        const urls = instance.getOption('urls').toJS()
        assert.deepEqual(urls, { local: `http://localhost:${P + 1}`, ui: `http://localhost:${P + 2}` }, name)
        assert.equal(instance.getOption('port'), P + 1, name)
      } finally {
        await instance.exit()
      }
    }
  } finally {
    busy.server.close()
    await up.close()
  }
})
