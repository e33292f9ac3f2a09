'use strict'
// Who may talk to the proxy: the Host check against DNS rebinding (allowedHosts), the Origin check of
// WebSocket upgrades against cross-site WebSocket hijacking (allowedOrigins), and CORS headers that are
// never the proxy's own. The last test runs the rebinding attack in Chromium.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const fs = require('node:fs')
const http = require('node:http')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')
const WebSocket = require('ws')
const { HOST, lib, withTimeout, startUpstream, request, withProxy, stopIfStarted } = require('./helpers')

// What an attacker's page must never read: the target's page and the token reqHeaders adds.
const SECRET = `secret-page-${crypto.randomBytes(6).toString('hex')}`
const TOKEN = `Bearer token-${crypto.randomBytes(6).toString('hex')}`

let up
let wss
before(async () => {
  wss = new WebSocket.WebSocketServer({ noServer: true })
  wss.on('connection', (ws) => ws.send('hello'))
  up = await startUpstream(
    {
      '/': (req, res) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
        res.end(`<html><body><p>${SECRET}</p><p>auth=${req.headers.authorization}</p></body></html>`)
      },
      // Echoes the Origin it got, as CORS middleware configured for the target's origin does.
      '/cors-echo': (req, res) => {
        res.writeHead(200, { 'access-control-allow-origin': req.headers.origin || 'none', 'access-control-allow-credentials': 'true', vary: 'Origin' })
        res.end('cors')
      },
      '/cors-star': (req, res) => {
        res.writeHead(200, { 'access-control-allow-origin': '*' })
        res.end('star')
      },
      '/no-cors': (req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{"private":true}')
      },
    },
    { onUpgrade: (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)) },
  )
})
after(async () => {
  for (const c of wss.clients) c.terminate()
  wss.close()
  await up.close()
})

const options = (extra = {}) => ({ proxy: { target: up.url, reqHeaders: { Authorization: TOKEN } }, port: 0, ...extra })

/** GET / through the proxy with this Host header. */
const getWithHost = (server, host, path = '/') => request(`http://${HOST}:${server.port}${path}`, { headers: { host } })

/** Sends raw bytes (a request that ends the connection), resolves {status, head, body} when the server closes. */
function rawExchange(port, bytes) {
  return withTimeout(
    new Promise((resolve, reject) => {
      const socket = net.connect(port, HOST)
      const chunks = []
      socket.on('data', (c) => chunks.push(c))
      socket.on('error', reject)
      socket.on('close', () => {
        const text = Buffer.concat(chunks).toString('latin1')
        const [head, ...rest] = text.split('\r\n\r\n')
        resolve({ status: Number((head.match(/^HTTP\/1\.[01] (\d{3})/) || [])[1]), head, body: rest.join('\r\n\r\n') })
      })
      // write, not end: hyper drops a request whose client half-closes before the answer
      socket.write(bytes)
    }),
    15000,
    'a raw exchange',
  )
}

function assertRefusedHost(res, host, label = host) {
  const body = res.body.toString()
  assert.equal(res.status, 403, `${label}: ${body.slice(0, 200)}`)
  assert.ok(!body.includes(SECRET) && !body.includes(TOKEN), `${label}: the 403 leaks the target's page`)
  assert.match(body, /allowedHosts/, `${label}: the page names the option`)
  assert.equal(res.headers['access-control-allow-origin'], undefined, `${label}: no CORS header of our own`)
  const name = host.replace(/:\d+$/, '').replace(/\.$/, '').toLowerCase()
  assert.ok(body.includes(name), `${label}: the page names the refused host ${name}: ${body}`)
}

test('DNS rebinding: a Host naming another site gets 403 naming allowedHosts, and nothing reaches the target', async () => {
  await withProxy(options(), async (server) => {
    const before = up.requests.length
    for (const host of [`evil.example:${server.port}`, 'evil.example', 'localhost.evil.example', '127.0.0.1.nip.io', `EVIL.Example.:${server.port}`, 'localhost:notaport']) {
      assertRefusedHost(await getWithHost(server, host), host)
    }
    assert.equal(up.requests.length, before, 'no refused request reached the upstream')
  })
})

test('DNS rebinding: absolute-form requests check Host too, and HTML in a refused Host is escaped', async () => {
  await withProxy(options(), async (server) => {
    const before = up.requests.length
    const res = await rawExchange(server.port, `GET http://${HOST}:${server.port}/ HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`)
    assert.equal(res.status, 403, res.head)
    assert.ok(!res.body.includes(SECRET), 'the target page leaked')
    const xss = await rawExchange(server.port, `GET / HTTP/1.1\r\nHost: <img src=x onerror=alert(1)>\r\nConnection: close\r\n\r\n`)
    assert.equal(xss.status, 403, xss.head)
    assert.ok(!xss.body.includes('<img'), `the Host is escaped: ${xss.body}`)
    assert.ok(xss.body.includes('&lt;img src=x onerror=alert(1)&gt;'), xss.body)
    assert.equal(up.requests.length, before, 'no refused request reached the upstream')
  })
})

test("allowedHosts 'auto' (default): localhost, *.localhost, IP literals and the machine's host name reach the target", async () => {
  await withProxy(options(), async (server) => {
    const p = server.port
    const machine = os.hostname()
    for (const host of [`localhost:${p}`, `LOCALHOST:${p}`, `app.localhost:${p}`, `127.0.0.1:${p}`, `[::1]:${p}`, '10.1.2.3', `${machine}:${p}`, `localhost.:${p}`]) {
      const res = await getWithHost(server, host)
      assert.equal(res.status, 200, `${host}: ${res.body.toString().slice(0, 200)}`)
      assert.ok(res.body.toString().includes(SECRET), host)
      assert.ok(res.body.toString().includes(`auth=${TOKEN}`), `${host}: reqHeaders reached the target`)
    }
  })
})

test('without Host (no browser sends that): HTTP/1.0 is served, HTTP/1.1 gets 400 as RFC 9112 requires', async () => {
  await withProxy(options(), async (server) => {
    const res = await rawExchange(server.port, 'GET / HTTP/1.0\r\n\r\n')
    assert.equal(res.status, 200, res.head)
    assert.ok(res.body.includes(SECRET))
    const before = up.requests.length
    const missing = await rawExchange(server.port, 'GET / HTTP/1.1\r\nConnection: close\r\n\r\n')
    assert.equal(missing.status, 400, missing.head)
    assert.match(missing.body, /Host/)
    assert.equal(up.requests.length, before, 'it never reached the target')
  })
})

test("allowedHosts: an array adds exact names and leading-dot domains to 'auto'; 'all' switches the check off", async () => {
  await withProxy(options({ allowedHosts: ['dev.test', '.corp.test'] }), async (server) => {
    for (const host of ['dev.test', `Dev.Test:${server.port}`, 'corp.test', 'a.b.corp.test', `localhost:${server.port}`, '127.0.0.1']) {
      const res = await getWithHost(server, host)
      assert.equal(res.status, 200, `${host} is allowed`)
      assert.ok(res.body.toString().includes(SECRET), host)
    }
    for (const host of ['x.dev.test', 'evilcorp.test', 'corp.test.evil', 'evil.example']) {
      assertRefusedHost(await getWithHost(server, host), host)
    }
  })
  await withProxy(options({ allowedHosts: 'all' }), async (server) => {
    const res = await getWithHost(server, 'evil.example')
    assert.equal(res.status, 200)
    assert.ok(res.body.toString().includes(SECRET))
  })
  await withProxy(options({ allowedHosts: ['dev.test', 'all'] }), async (server) => {
    assert.equal((await getWithHost(server, 'evil.example')).status, 200, "'all' in the array")
  })
})

test('allowedHosts and allowedOrigins: bad values are rejected naming the option and the element', async () => {
  const cases = [
    [{ allowedHosts: 'sometimes' }, /`allowedHosts`.*'auto', 'all' or an array/],
    [{ allowedHosts: 5 }, /`allowedHosts` must be an array/],
    [{ allowedHosts: ['ok.test', 'fine.test', 3] }, /`allowedHosts\[2\]` must be a string, got a number/],
    [{ allowedHosts: ['a.test:3000'] }, /`allowedHosts\[0\]`.*a\.test:3000.*without a port/],
    [{ allowedHosts: ['ok.test', '*.example.com'] }, /`allowedHosts\[1\]`.*leading dot/],
    [{ allowedOrigins: 'http://localhost:5173' }, /`allowedOrigins` must be an array/],
    [{ allowedOrigins: ['http://localhost:5173', 'localhost:5174'] }, /`allowedOrigins\[1\]`.*localhost:5174/],
    [{ allowedOrigins: ['http://localhost:5173/app'] }, /`allowedOrigins\[0\]`/],
  ]
  for (const [extra, message] of cases) {
    await assert.rejects(stopIfStarted(lib().start({ quiet: true, ...options(extra) })), (err) => {
      assert.match(err.message, message, JSON.stringify(extra))
      return true
    })
  }
})

/** Opens a WebSocket through the proxy; resolves {status: 101, origin seen upstream} or {status} of the refusal. */
function tryWebSocket(server, { origin, host } = {}) {
  const n = up.requests.length
  const headers = host ? { host } : {}
  const ws = new WebSocket(`ws://${HOST}:${server.port}/sock`, { origin, headers })
  return withTimeout(
    new Promise((resolve, reject) => {
      ws.once('message', (data) => {
        const seen = up.requests.slice(n).find((r) => r.upgrade)
        ws.terminate()
        resolve({ status: 101, message: data.toString(), upstreamOrigin: seen && seen.headers.origin })
      })
      ws.once('unexpected-response', (req, res) => {
        const chunks = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => {
          resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString(), upstreamSaw: up.requests.length - n })
          req.destroy()
        })
      })
      ws.once('error', reject)
    }),
    10000,
    `a WebSocket with Origin ${origin}`,
  )
}

test('WebSocket: pages of the proxy, of the target and of allowedOrigins connect (Origin still rewritten); no Origin connects', async () => {
  await withProxy(options({ allowedOrigins: ['http://localhost:5173'] }), async (server) => {
    const own = `http://${HOST}:${server.port}`
    const cases = [
      [{ origin: own }, up.url],
      [{ origin: `http://localhost:${server.port}`, host: `localhost:${server.port}` }, up.url],
      [{ origin: up.url }, up.url],
      [{ origin: 'http://localhost:5173' }, 'http://localhost:5173'],
      [{}, undefined],
    ]
    for (const [opts, upstreamOrigin] of cases) {
      const r = await tryWebSocket(server, opts)
      assert.equal(r.status, 101, `${JSON.stringify(opts)}: ${r.body}`)
      assert.equal(r.message, 'hello')
      assert.equal(r.upstreamOrigin, upstreamOrigin, `${JSON.stringify(opts)}: Origin seen upstream`)
    }
  })
})

test('WebSocket: cross-site Origins and rebound Hosts get 403 and never reach the target (cross-site WebSocket hijacking)', async () => {
  await withProxy(options(), async (server) => {
    const p = server.port
    const cases = [
      [{ origin: 'http://localhost:5173', host: `localhost:${p}` }, /allowedOrigins/, 'another local dev server'],
      [{ origin: `http://${HOST}:${p + 1 > 65535 ? p - 1 : p + 1}` }, /allowedOrigins/, 'another port'],
      [{ origin: 'https://evil.example' }, /allowedOrigins/, 'another site'],
      [{ origin: 'null' }, /allowedOrigins/, 'an opaque origin'],
      [{ origin: `http://evil.example:${p}`, host: `evil.example:${p}` }, /allowedHosts/, 'same-origin after rebinding'],
      [{ origin: `http://evil.example:${p}` }, /allowedOrigins/, 'a rebound origin on the proxy address'],
      [{ host: `evil.example:${p}` }, /allowedHosts/, 'a rebound Host without Origin'],
    ]
    for (const [opts, option, label] of cases) {
      const r = await tryWebSocket(server, opts)
      assert.equal(r.status, 403, `${label}: ${JSON.stringify(r)}`)
      assert.match(r.body, option, label)
      assert.equal(r.upstreamSaw, 0, `${label}: the upgrade reached the target`)
    }
    assert.equal(server.stats().websockets, 0)
  })
})

test('CORS: the proxy adds no Access-Control-Allow-Origin; the upstream one naming the target names the proxy, others pass as they are', async () => {
  await withProxy(options(), async (server) => {
    const own = `http://${HOST}:${server.port}`
    const echoed = await request(`${own}/cors-echo`, { headers: { origin: own } })
    assert.equal(up.requests.at(-1).headers.origin, up.url, 'the upstream saw its own origin')
    assert.equal(echoed.headers['access-control-allow-origin'], own, 'its answer names the proxy again')
    assert.equal(echoed.headers['access-control-allow-credentials'], 'true')
    const foreign = await request(`${own}/cors-echo`, { headers: { origin: 'http://localhost:5173' } })
    assert.equal(foreign.headers['access-control-allow-origin'], 'http://localhost:5173', 'another origin passes unchanged')
    const star = await request(`${own}/cors-star`, { headers: { origin: 'http://localhost:5173' } })
    assert.equal(star.headers['access-control-allow-origin'], '*', "the upstream's * passes")
    for (const [path, method] of [['/no-cors', 'GET'], ['/no-cors', 'OPTIONS'], ['/missing', 'GET']]) {
      const res = await request(`${own}${path}`, { method, headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' } })
      assert.equal(res.headers['access-control-allow-origin'], undefined, `${method} ${path}: none added`)
    }
  })
})

// --- Chromium: the attack as a browser runs it -------------------------------------------------------

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium'

/** Launches Chromium, mapping evil.test to 127.0.0.1; fails (never skips) when it cannot. */
async function launchChromium(profile) {
  let chromium
  try {
    ;({ chromium } = require('playwright-core'))
  } catch (err) {
    throw new Error(`playwright-core is missing (npm install): ${err.message}`)
  }
  const args = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-features=HttpsUpgrades',
    '--host-resolver-rules=MAP evil.test 127.0.0.1',
  ]
  try {
    return await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args, timeout: 60000 })
  } catch (err) {
    throw new Error(`Chromium could not be launched from ${CHROMIUM} (install it with the README's set-up command): ${err.message}`)
  }
}

/** The attacker's site: one page, on 127.0.0.1:port, which Chromium knows as evil.test. */
async function attackerSite(port = 0) {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'no-store', connection: 'close' })
    res.end('<!doctype html><title>evil</title><p>an ordinary page on evil.test</p>')
  })
  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, HOST, resolve)
  })
  return {
    port: server.address().port,
    close: () =>
      new Promise((resolve) => {
        server.close(resolve)
        server.closeAllConnections()
      }),
  }
}

/** What script on the page can read from a same-origin fetch. */
const readFromPage = (page, url) =>
  page.evaluate(async (url) => {
    try {
      const res = await fetch(url, { cache: 'no-store' })
      return { status: res.status, body: await res.text() }
    } catch (err) {
      return { error: String(err) }
    }
  }, url)

/**
 * DNS rebinding, played for real: Chromium loads http://evil.test:P/ from the attacker's server on
 * 127.0.0.1:P; that server goes away and the proxy starts on the same port, as if evil.test now
 * resolved to this machine; the page then fetches its own origin, which is the proxy.
 */
async function rebind(context, proxyOptions) {
  const attacker = await attackerSite()
  const page = await context.newPage()
  try {
    const loaded = await page.goto(`http://evil.test:${attacker.port}/`)
    assert.equal(loaded.status(), 200, "the attacker's page loads as evil.test")
    await attacker.close()
    const server = await lib().start({ quiet: true, ...proxyOptions, port: attacker.port })
    try {
      const nonce = crypto.randomBytes(4).toString('hex')
      return await readFromPage(page, `http://evil.test:${attacker.port}/?n=${nonce}`)
    } finally {
      await withTimeout(server.stop(), 15000, 'server.stop()')
    }
  } finally {
    await page.close()
  }
}

test('Chromium: a rebound page from another site cannot read the proxied page; the proxy\'s own pages can', { timeout: 180000 }, async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-chromium-'))
  const context = await launchChromium(profile)
  try {
    // Control: with the check off, the same page reads the target's page and token: the attack is real.
    const open = await rebind(context, options({ allowedHosts: 'all' }))
    assert.equal(open.status, 200, `with allowedHosts 'all' the rebound fetch reaches the target: ${JSON.stringify(open).slice(0, 300)}`)
    assert.ok(open.body.includes(SECRET) && open.body.includes(TOKEN), 'with the check off the page reads the secret and the token')

    const refused = await rebind(context, options())
    assert.equal(refused.status, 403, `the rebound fetch is refused: ${JSON.stringify(refused).slice(0, 300)}`)
    assert.ok(!refused.body.includes(SECRET), 'the page could read the target page')
    assert.ok(!refused.body.includes(TOKEN), 'the page could read the reqHeaders token')
    assert.match(refused.body, /allowedHosts/)

    // The proxy's own origin still works in the same browser.
    await withProxy(options(), async (server) => {
      const page = await context.newPage()
      try {
        const loaded = await page.goto(`${server.url}/`)
        assert.equal(loaded.status(), 200)
        assert.ok((await page.content()).includes(SECRET), 'the proxied page renders')
        const own = await readFromPage(page, `${server.url}/?again=1`)
        assert.equal(own.status, 200, JSON.stringify(own).slice(0, 300))
        assert.ok(own.body.includes(SECRET) && own.body.includes(TOKEN), "the proxy's own page reads it")
      } finally {
        await page.close()
      }
    })
  } finally {
    await context.close()
    fs.rmSync(profile, { recursive: true, force: true })
  }
})
