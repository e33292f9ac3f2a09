'use strict'
// `require('devproxy-native/browser-sync')` in headless Chromium: a fixture site loads through the
// adapter, Browsersync's client connects over the WebSocket route, CSS edits are injected, HTML edits
// reload, `notify()` shows. The same scenario runs against plain browser-sync 3 (its proxy mode) as the
// reference, and through the adapter on browser-sync 2 and 3. Every wait is on an event (page, socket,
// file watcher); the timeouts only turn a hang into a failure.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const zlib = require('node:zlib')
const { once } = require('node:events')
const { ROOT, HOST, startUpstream, deadPort, withTimeout, deferred, launchChromium } = require('./helpers.js')

const WAIT = 30000
const adapter = require(path.join(ROOT, 'browser-sync.js'))

// A 1x1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
)

let browser
before(async () => {
  browser = await launchChromium(['--disable-quic', '--disable-features=HttpsUpgrades'])
})
after(async () => {
  if (browser) await browser.close()
})

/** Sends `body` gzip-compressed when the request accepts gzip, as a production server would. */
function sendMaybeGzip(req, res, type, body) {
  res.setHeader('content-type', type)
  res.setHeader('vary', 'Accept-Encoding')
  if (/\bgzip\b/.test(req.headers['accept-encoding'] || '')) {
    res.setHeader('content-encoding', 'gzip')
    res.end(zlib.gzipSync(body))
  } else {
    res.end(body)
  }
}

function html(origin, version) {
  return `<!doctype html>
<html><head><title>fixture</title>
<link rel="stylesheet" href="${origin}/style.css">
<script src="${origin}/app.js"></script>
</head><body>
<h1 id="title">${version}</h1>
<img id="img" src="${origin}/img.png" alt="">
<a id="link" href="${origin}/next">next</a>
</body></html>
`
}

const css = (color) => `body { color: ${color}; }\n`

/**
 * The fixture site: HTML and CSS read from a directory on every request (so edits show), absolute
 * links to its own origin everywhere, gzip for whoever accepts it.
 */
async function fixtureSite() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-adapter-'))
  const file = (name) => path.join(dir, name)
  const upstream = await startUpstream({
    '/': (req, res) => sendMaybeGzip(req, res, 'text/html; charset=utf-8', fs.readFileSync(file('index.html'))),
    '/style.css': (req, res) => sendMaybeGzip(req, res, 'text/css', fs.readFileSync(file('style.css'))),
    '/app.js': (req, res) => sendMaybeGzip(req, res, 'text/javascript', 'window.appRan = true;\n'),
    '/img.png': (req, res) => {
      res.setHeader('content-type', 'image/png')
      res.end(PNG)
    },
  })
  fs.writeFileSync(file('index.html'), html(upstream.url, 'VERSION_1'))
  fs.writeFileSync(file('style.css'), css('rgb(1, 2, 3)'))
  return {
    upstream,
    dir,
    file,
    files: [file('*.html'), file('*.css')],
    async close() {
      await upstream.close()
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Resolves when every file watcher of `bs` has done its initial scan (edits before it are not seen). */
async function watchersReady(bs) {
  const watchers = Object.values(bs.instance.watchers || {}).flatMap((ns) => ns.watchers)
  assert.ok(watchers.length > 0, 'browser-sync watches the fixture files')
  // chokidar 3 has no public "is ready" flag; `ready` is emitted once, possibly already.
  await Promise.all(watchers.map((w) => (w._readyEmitted ? null : once(w, 'ready'))))
}

/** Starts `bs` with `config` and resolves with browser-sync's `(err, bs)` callback arguments. */
function initBs(bs, config) {
  return new Promise((resolve) => bs.init(config, (err, inner) => resolve({ err, inner })))
}

/** How a contender starts: returns `{ bs, url, stop }` for the fixture site. */
const contenders = {
  async 'browser-sync 3 (reference, its own proxy)'(site) {
    const bs = require('browser-sync').create()
    const port = await deadPort()
    const { err } = await initBs(bs, {
      proxy: site.upstream.url, port, listen: HOST, open: false, online: false, ui: false, logLevel: 'silent',
      files: site.files,
    })
    assert.ifError(err)
    return { bs, url: `http://${HOST}:${port}`, compressed: false, stop: async () => bs.exit() }
  },
  async 'adapter on browser-sync 3'(site) {
    return adapterContender(adapter, site)
  },
  async 'adapter on browser-sync 2'(site) {
    return adapterContender(adapter.withBrowserSync('browser-sync-2'), site)
  },
}

async function adapterContender(api, site) {
  const bs = api.create()
  const { err, inner } = await initBs(bs, {
    proxy: site.upstream.url, port: 0, open: false, online: false, ui: false, logLevel: 'silent', files: site.files,
  })
  assert.ifError(err)
  assert.equal(inner, bs.instance, "init's callback gets browser-sync's instance")
  assert.equal(bs.active, true)
  assert.ok(bs.proxy, 'the instance exposes the native proxy')
  return { bs, url: bs.proxy.url, compressed: true, stop: () => bs.exit() }
}

/** The scenario every contender must pass the same way. */
async function liveReloadScenario(start) {
  const site = await fixtureSite()
  const { bs, url, compressed, stop } = await start(site)
  const context = await browser.newContext()
  try {
    const page = await context.newPage()
    const origin = new URL(url).origin
    const requested = []
    page.on('request', (r) => requested.push(r.url()))
    const socketOpened = deferred()
    const socketFrames = deferred()
    page.on('websocket', (ws) => {
      const u = new URL(ws.url())
      if (!u.pathname.startsWith('/browser-sync/socket.io/')) return
      socketOpened.resolve(u)
      ws.on('framereceived', () => socketFrames.resolve())
    })
    let connected = once(bs.emitter, 'client:connected')

    // The page, its CSS, JS and image, all through the proxy.
    const response = await page.goto(url + '/', { waitUntil: 'load' })
    assert.equal(response.status(), 200)
    const encoding = response.headers()['content-encoding']
    if (compressed) assert.match(encoding || '', /^(gzip|br|zstd|deflate)$/, 'the page arrives compressed through the adapter')
    else assert.equal(encoding, undefined, 'browser-sync drops the compression of pages it rewrites (a deliberate difference)')
    assert.equal(await page.textContent('#title'), 'VERSION_1')
    assert.equal(await page.evaluate(() => window.appRan), true, 'the JS ran')
    assert.equal(await page.evaluate(() => document.getElementById('img').naturalWidth), 1, 'the image loaded')
    assert.equal(await page.evaluate(() => getComputedStyle(document.body).color), 'rgb(1, 2, 3)')
    const link = await page.getAttribute('#link', 'href')
    assert.equal(new URL(link, url).origin, origin, 'absolute links point at the proxy')

    // Browsersync's client connects over the WebSocket, on the page's origin.
    await withTimeout(connected, WAIT, 'client:connected')
    const wsUrl = await withTimeout(socketOpened.promise, WAIT, 'the Browsersync WebSocket')
    assert.equal(wsUrl.host, new URL(url).host, 'the socket is on the page origin')
    await withTimeout(socketFrames.promise, WAIT, 'a frame on the Browsersync WebSocket')

    // CSS edit: injected, no reload.
    await watchersReady(bs)
    await page.evaluate(() => {
      window.notReloaded = true
    })
    let changed = once(bs.emitter, 'file:changed')
    fs.writeFileSync(site.file('style.css'), css('rgb(4, 5, 6)'))
    await withTimeout(changed, WAIT, 'the watcher event for style.css')
    await page.waitForFunction(() => getComputedStyle(document.body).color === 'rgb(4, 5, 6)', null, { timeout: WAIT })
    assert.equal(await page.evaluate(() => window.notReloaded), true, 'the CSS was injected without a reload')

    // notify(): the message shows in the page.
    const message = 'Hello from the adapter test'
    bs.notify(message)
    await page.waitForFunction((msg) => document.body.innerText.includes(msg), message, { timeout: WAIT })

    // HTML edit: the page reloads and shows the new version.
    connected = once(bs.emitter, 'client:connected')
    const reloaded = page.waitForEvent('load', { timeout: WAIT })
    changed = once(bs.emitter, 'file:changed')
    fs.writeFileSync(site.file('index.html'), html(site.upstream.url, 'VERSION_2'))
    await withTimeout(changed, WAIT, 'the watcher event for index.html')
    await reloaded
    assert.equal(await page.textContent('#title'), 'VERSION_2')
    assert.equal(await page.evaluate(() => window.notReloaded), undefined, 'the page was reloaded')
    await withTimeout(connected, WAIT, 'client:connected after the reload')

    // Nothing was fetched from the upstream's origin directly.
    const foreign = requested.filter((u) => !u.startsWith('data:') && new URL(u).origin !== origin)
    assert.deepEqual(foreign, [], 'every resource came through the proxy')
    for (const name of ['/style.css', '/app.js', '/img.png', '/browser-sync/browser-sync-client.js']) {
      assert.ok(requested.some((u) => new URL(u).pathname === name), `${name} was requested`)
    }
    assert.ok(requested.some((u) => /\/style\.css\?browsersync=/.test(u)), 'the injected CSS was fetched through the proxy')
  } finally {
    await context.close()
    await stop()
    await site.close()
  }
}

for (const [name, start] of Object.entries(contenders)) {
  test(`live reload in Chromium: ${name}`, { timeout: 180000 }, () => liveReloadScenario(start))
}

test('through the adapter, an SSE page and a WebSocket echo page work while live reload is connected', { timeout: 180000 }, async () => {
  const { WebSocketServer } = require('ws')
  const wss = new WebSocketServer({ noServer: true })
  wss.on('connection', (ws) => ws.on('message', (data) => ws.send(`echo:${data}`)))
  const sseClients = []
  const sseConnected = deferred()
  const page = (body) => (req, res) => {
    res.setHeader('content-type', 'text/html')
    res.end(`<!doctype html><html><head><title>t</title></head><body>${body}</body></html>`)
  }
  const upstream = await startUpstream(
    {
      '/sse': page(`<ul id="events"></ul><script>
        const es = new EventSource('/events');
        es.onmessage = (e) => { const li = document.createElement('li'); li.textContent = e.data; document.getElementById('events').appendChild(li) };
      </script>`),
      '/events': (req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
        res.write('data: first\n\n')
        sseClients.push(res)
        sseConnected.resolve()
      },
      '/ws': page(`<ul id="echoes"></ul><script>
        const ws = new WebSocket('ws://' + location.host + '/echo');
        ws.onopen = () => ws.send('ping');
        ws.onmessage = (e) => { const li = document.createElement('li'); li.textContent = e.data; document.getElementById('echoes').appendChild(li); if (e.data === 'echo:ping') ws.send('pong') };
      </script>`),
    },
    { onUpgrade: (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)) },
  )
  const bs = adapter.create()
  const context = await browser.newContext()
  try {
    const { err } = await initBs(bs, { proxy: upstream.url, port: 0, open: false, online: false, ui: false, logLevel: 'silent' })
    assert.ifError(err)
    const url = bs.proxy.url
    const sse = await context.newPage()
    let connected = once(bs.emitter, 'client:connected')
    await sse.goto(url + '/sse', { waitUntil: 'load' })
    await withTimeout(connected, WAIT, 'live reload on the SSE page')
    await withTimeout(sseConnected.promise, WAIT, 'the EventSource request')
    await sse.waitForFunction(() => document.getElementById('events').textContent === 'first', null, { timeout: WAIT })
    for (const res of sseClients) res.write('data: second\n\n')
    await sse.waitForFunction(() => document.getElementById('events').textContent === 'firstsecond', null, { timeout: WAIT })

    const ws = await context.newPage()
    connected = once(bs.emitter, 'client:connected')
    await ws.goto(url + '/ws', { waitUntil: 'load' })
    await withTimeout(connected, WAIT, 'live reload on the WebSocket page')
    await ws.waitForFunction(() => document.getElementById('echoes').textContent === 'echo:pingecho:pong', null, { timeout: WAIT })

    // Live reload still reaches both pages.
    const message = 'still connected'
    bs.notify(message)
    for (const p of [sse, ws]) await p.waitForFunction((m) => document.body.innerText.includes(m), message, { timeout: WAIT })
    // And the SSE stream is still open.
    for (const res of sseClients) res.write('data: third\n\n')
    await sse.waitForFunction(() => document.getElementById('events').textContent === 'firstsecondthird', null, { timeout: WAIT })
  } finally {
    await context.close()
    for (const res of sseClients) res.end()
    await bs.exit()
    wss.close()
    await upstream.close()
  }
})

test('ghost mode through the adapter: a click in one page is replayed in another', { timeout: 180000 }, async () => {
  const upstream = await startUpstream({
    '/': (req, res) => {
      res.setHeader('content-type', 'text/html')
      res.end(`<!doctype html><html><head><title>g</title></head><body>
        <button id="b" onclick="this.dataset.clicks = (+(this.dataset.clicks || 0) + 1)">b</button></body></html>`)
    },
  })
  const bs = adapter.create()
  const context = await browser.newContext()
  try {
    const { err } = await initBs(bs, { proxy: upstream.url, port: 0, open: false, online: false, ui: false, logLevel: 'silent' })
    assert.ifError(err)
    const pages = []
    for (let i = 0; i < 2; i++) {
      const connected = once(bs.emitter, 'client:connected')
      const page = await context.newPage()
      await page.goto(bs.proxy.url + '/', { waitUntil: 'load' })
      await withTimeout(connected, WAIT, `live reload on page ${i}`)
      pages.push(page)
    }
    await pages[0].click('#b')
    await pages[1].waitForFunction(() => document.getElementById('b').dataset.clicks === '1', null, { timeout: WAIT })
  } finally {
    await context.close()
    await bs.exit()
    await upstream.close()
  }
})

// --- The API, without a browser ------------------------------------------------------------------

test('init reports a port in use and a bad option to its callback, and stops browser-sync again', { timeout: 60000 }, async () => {
  const { occupyPort } = require('./helpers.js')
  const busy = await occupyPort()
  const upstream = await startUpstream({})
  try {
    for (const [config, pattern] of [
      [{ port: busy.port, strictPort: true }, new RegExp(`${busy.port}`)],
      [{ port: 0, rewriteRules: [{ match: /x(?<=[^y]*)b/, replace: 'x' }] }, /rewriteRules\[0\].*lookbehind/],
      [{ port: 0, server: 'public' }, /both server & proxy/],
    ]) {
      const bs = adapter.create()
      const { err, inner } = await initBs(bs, { proxy: upstream.url, open: false, online: false, ui: false, logLevel: 'silent', ...config })
      assert.ok(err instanceof Error, 'the callback gets an error')
      assert.match(err.message, pattern)
      assert.equal(inner, undefined)
      assert.equal(bs.active, false)
      assert.equal(bs.proxy, null)
      assert.notEqual(bs.instance.server?.listening, true, "browser-sync's own server is not left running")
    }
    // Without a callback, the error is printed with browser-sync's prefix, once.
    const printed = []
    const said = deferred()
    const consoleError = console.error
    console.error = (...args) => {
      printed.push(args.join(' '))
      said.resolve()
    }
    try {
      const bs = adapter.create()
      bs.init({ proxy: upstream.url, port: busy.port, strictPort: true, open: false, online: false, ui: false, logLevel: 'silent' })
      await withTimeout(said.promise, 20000, 'the error printed')
      assert.match(printed[0], new RegExp(`^\\[Browsersync\\] .*${busy.port}`))
      assert.equal(bs.active, false)
      await bs.exit()
      assert.equal(printed.length, 1, printed.join('\n'))
    } finally {
      console.error = consoleError
    }
  } finally {
    await busy.close()
    await upstream.close()
  }
})

test('module-level form, has/get, and the error naming `npm i -D browser-sync`', { timeout: 60000 }, async () => {
  const api = adapter.withBrowserSync('browser-sync')
  // Before any instance: stream() passes files through, reload() does nothing, nothing is active.
  assert.equal(typeof api.stream().pipe, 'function')
  assert.equal(api.reload(), undefined)
  assert.equal(api.active, false)
  assert.equal(api.has('singleton'), false)

  const upstream = await startUpstream({ '/': (req, res) => res.end('<html><body>hi</body></html>') })
  try {
    const ready = deferred()
    const { err } = await new Promise((resolve) => {
      api({ proxy: upstream.url, port: 0, open: false, online: false, ui: false, logLevel: 'silent',
        callbacks: { ready: (e, b) => ready.resolve({ e, b }) } }, (e, b) => resolve({ err: e, b }))
    })
    assert.ifError(err)
    const { e: readyErr } = await ready.promise
    assert.ifError(readyErr)
    assert.equal(api.active, true)
    assert.equal(api.has('singleton'), true)
    const single = api.get('singleton')
    assert.equal(single.getOption('mode'), 'proxy', 'browser-sync reports proxy mode')
    assert.equal(single.getOption('port'), single.proxy.port, 'getOption("port") is the proxy port')
    assert.equal(single.getOption('urls').get('local'), `http://localhost:${single.proxy.port}`)
    const page = await fetch(single.proxy.url + '/', { headers: { accept: 'text/html' } })
    assert.match(await page.text(), /<body><script id="__bs_script__">[\s\S]*src = '\/browser-sync\/browser-sync-client\.js\?v=[\d.]+'/)
    assert.throws(() => api.get('nope'), /`nope` was not found/)
    // A second module-level init: browser-sync 3's message (its logger, its colours, console.log's
    // arguments), and the running instance back.
    const logged = (call) => {
      const calls = []
      const consoleLog = console.log
      console.log = (...args) => calls.push(args)
      try {
        return { value: call(), calls }
      } finally {
        console.log = consoleLog
      }
    }
    const ours = logged(() => api({ proxy: upstream.url, port: 0 }))
    assert.equal(ours.value, single)
    const reference = require('browser-sync')
    reference.reset()
    const referenceReady = deferred()
    reference({ open: false, online: false, ui: false, logLevel: 'silent', listen: HOST, port: await deadPort() }, referenceReady.resolve)
    await withTimeout(referenceReady.promise, 20000, "browser-sync 3's module-level init")
    const theirs = logged(() => reference({ open: false }))
    reference.reset()
    assert.equal(ours.calls.length, 1)
    assert.deepEqual(ours.calls, theirs.calls)
    assert.match(ours.calls[0].join(' '), /You tried to start Browsersync twice!.*To create multiple instances, use.*browserSync\.create\(\)\.init\(\)/)
    // pause()/resume() at module level act on the singleton, as its `paused` says.
    api.pause()
    assert.equal(single.paused, true)
    assert.equal(api.paused, true)
    api.resume()
    assert.equal(api.paused, false)
    await api.exit()
    assert.equal(api.active, false)
  } finally {
    await upstream.close()
  }

  const missing = adapter.withBrowserSync('browser-sync-not-installed')
  assert.throws(() => missing.create(), {
    code: 'MODULE_NOT_FOUND',
    message: `devproxy-native/browser-sync needs the browser-sync package (\`browser-sync-not-installed\`), which is not installed in ${process.cwd()}: run \`npm i -D browser-sync\``,
  })
})
