'use strict'
// WebSocket upgrades are tunnelled to the target (proxy.ws defaults to true).

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const WebSocket = require('ws')
const selfsigned = require('selfsigned')
const { withTimeout, startUpstream, deadPort, withProxy } = require('./helpers')

let up
let wss
before(async () => {
  wss = new WebSocket.WebSocketServer({
    noServer: true,
    handleProtocols: (protocols) => (protocols.has('chat.v2') ? 'chat.v2' : false),
  })
  wss.on('connection', (ws, req) => {
    ws.on('message', (data, isBinary) => {
      const text = isBinary ? null : data.toString()
      if (text === 'close-me') return ws.close(4000, 'bye')
      ws.send(data, { binary: isBinary })
    })
    ws.send(`hello ${req.url}`)
  })
  up = await startUpstream(
    {},
    {
      onUpgrade(req, socket, head) {
        if (req.url.startsWith('/forbidden')) {
          socket.end('HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno')
          return
        }
        wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req))
      },
    },
  )
})
after(async () => {
  for (const c of wss.clients) c.terminate()
  wss.close()
  await up.close()
})

/** Open a client; resolves {ws, messages: next()} once open, rejects on error/unexpected response. */
function connect(url, protocols, opts = {}) {
  const ws = new WebSocket(url, protocols, opts)
  const queue = []
  const waiting = []
  ws.on('message', (data, isBinary) => {
    const m = { data, isBinary }
    if (waiting.length) waiting.shift()(m)
    else queue.push(m)
  })
  const opened = new Promise((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
    ws.once('unexpected-response', (req, res) => {
      const err = new Error(`unexpected response ${res.statusCode}`)
      err.statusCode = res.statusCode
      res.resume()
      req.destroy()
      reject(err)
    })
  })
  const next = () =>
    withTimeout(
      queue.length ? Promise.resolve(queue.shift()) : new Promise((resolve) => waiting.push(resolve)),
      5000,
      'a WebSocket message',
    )
  return { ws, opened: withTimeout(opened, 5000, 'WebSocket open'), next }
}

test('WebSocket upgrade is tunnelled: path and query kept, Host set to the target, Origin rewritten; text and binary echo', async () => {
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const n = up.requests.length
    const c = connect(`ws://127.0.0.1:${server.port}/socket?room=1`, [], { origin: `http://127.0.0.1:${server.port}` })
    try {
      await c.opened
      const hello = await c.next()
      assert.equal(hello.data.toString(), 'hello /socket?room=1')
      const seen = up.requests.slice(n).find((r) => r.upgrade)
      assert.ok(seen, 'upstream saw the upgrade request')
      assert.equal(seen.url, '/socket?room=1')
      assert.equal(seen.headers.host, up.host)
      assert.equal(seen.headers.origin, up.url, 'Origin must be rewritten to the target origin')

      c.ws.send('ping é')
      const m1 = await c.next()
      assert.equal(m1.isBinary, false)
      assert.equal(m1.data.toString(), 'ping é')

      const big = crypto.randomBytes(1024 * 1024)
      c.ws.send(big)
      const m2 = await c.next()
      assert.equal(m2.isBinary, true)
      assert.ok(Buffer.from(m2.data).equals(big), 'binary 1 MiB echo intact')
      assert.equal(server.stats().websockets, 1, 'stats().websockets counts the tunnel')
    } finally {
      c.ws.terminate()
    }
  })
})

test('WebSocket subprotocol negotiation and close codes pass through the tunnel', async () => {
  await withProxy({ proxy: { target: up.url, ws: true }, port: 0 }, async (server) => {
    const c = connect(`ws://127.0.0.1:${server.port}/proto`, ['chat.v1', 'chat.v2'])
    try {
      await c.opened
      assert.equal(c.ws.protocol, 'chat.v2')
      await c.next() // hello
      const closed = new Promise((resolve) => c.ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })))
      c.ws.send('close-me')
      assert.deepEqual(await withTimeout(closed, 5000, 'close frame'), { code: 4000, reason: 'bye' })
    } finally {
      c.ws.terminate()
    }
  })
})

test('with proxy.ws = false the upgrade is not tunnelled', async () => {
  await withProxy({ proxy: { target: up.url, ws: false }, port: 0 }, async (server) => {
    const n = up.requests.length
    const c = connect(`ws://127.0.0.1:${server.port}/nows`)
    try {
      const err = await c.opened.then(
        () => assert.fail('upgrade should not be tunnelled'),
        (e) => e,
      )
      assert.ok(!err.timeout, `the upgrade request must be answered or closed, not left hanging: ${err.message}`)
      assert.equal(up.requests.slice(n).filter((r) => r.upgrade).length, 0, 'upstream must not see an upgrade')
    } finally {
      c.ws.terminate()
    }
  })
})

test('an upstream refusing the upgrade (403) is reported to the client as that response', async () => {
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const c = connect(`ws://127.0.0.1:${server.port}/forbidden`)
    try {
      const err = await c.opened.then(
        () => assert.fail('upgrade should not succeed'),
        (e) => e,
      )
      assert.equal(err.statusCode, 403, String(err && err.message))
    } finally {
      c.ws.terminate()
    }
  })
})

test('an upgrade to a dead upstream fails promptly with 502', async () => {
  const port = await deadPort()
  await withProxy({ proxy: `http://127.0.0.1:${port}`, port: 0 }, async (server) => {
    const c = connect(`ws://127.0.0.1:${server.port}/dead`)
    try {
      const err = await c.opened.then(
        () => assert.fail('upgrade should not succeed'),
        (e) => e,
      )
      assert.equal(err.statusCode, 502, String(err && err.message))
    } finally {
      c.ws.terminate()
    }
  })
})

test('several WebSockets at once are tunnelled independently', async () => {
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const clients = [1, 2, 3, 4].map((i) => connect(`ws://127.0.0.1:${server.port}/multi${i}`))
    try {
      await Promise.all(clients.map((c) => c.opened))
      const hellos = await Promise.all(clients.map((c) => c.next()))
      assert.deepEqual(hellos.map((m) => m.data.toString()), ['hello /multi1', 'hello /multi2', 'hello /multi3', 'hello /multi4'])
      clients.forEach((c, i) => c.ws.send(`msg ${i}`))
      const echoes = await Promise.all(clients.map((c) => c.next()))
      assert.deepEqual(echoes.map((m) => m.data.toString()), ['msg 0', 'msg 1', 'msg 2', 'msg 3'])
    } finally {
      for (const c of clients) c.ws.terminate()
    }
  })
})

test('WebSocket to an https target: tunnelled over TLS with secure: false (Origin becomes the https origin); refused with 502 when the certificate is checked (secure: true)', async () => {
  const pems = await selfsigned.generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 24 * 3600 * 1000),
  })
  const tlsWss = new WebSocket.WebSocketServer({ noServer: true })
  tlsWss.on('connection', (ws, req) => {
    ws.on('message', (data) => ws.send(data))
    ws.send(`tls hello ${req.url}`)
  })
  const tup = await startUpstream({}, { tls: { key: pems.private, cert: pems.cert }, onUpgrade: (req, socket, head) => tlsWss.handleUpgrade(req, socket, head, (ws) => tlsWss.emit('connection', ws, req)) })
  try {
    await withProxy({ proxy: { target: tup.url, secure: false }, port: 0 }, async (server) => {
      // an https target: the proxy serves https too, so the page's WebSocket is wss://
      assert.match(server.url, /^https:/)
      const c = connect(`wss://127.0.0.1:${server.port}/tls-sock`, [], { origin: server.url, ca: server.certificate })
      try {
        await c.opened
        assert.equal((await c.next()).data.toString(), 'tls hello /tls-sock')
        const seen = tup.requests.find((r) => r.upgrade)
        assert.equal(seen.headers.origin, tup.url)
        assert.equal(seen.headers.host, tup.host)
        c.ws.send('over tls')
        assert.equal((await c.next()).data.toString(), 'over tls')
      } finally {
        c.ws.terminate()
      }
    })
    await withProxy({ proxy: { target: tup.url, secure: true }, port: 0 }, async (server) => {
      const c = connect(`wss://127.0.0.1:${server.port}/tls-sock`, [], { ca: server.certificate })
      try {
        const err = await c.opened.then(
          () => assert.fail('upgrade through an unverified certificate should not succeed'),
          (e) => e,
        )
        assert.equal(err.statusCode, 502, String(err && err.message))
      } finally {
        c.ws.terminate()
      }
    })
  } finally {
    for (const ws of tlsWss.clients) ws.terminate()
    tlsWss.close()
    await tup.close()
  }
})
