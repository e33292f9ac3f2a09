'use strict'
// Upstream faults, made with a raw net.Server for byte-level control: refusal, resets, malformed compressed
// bodies, wrong Content-Length, stalls. The proxy runs in a child process without `quiet`, so that its
// stderr can be checked: each error logged once, with the URL. After every fault the next request works.
// Also: a client that disconnects mid-response cancels the upstream request.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const net = require('node:net')
const zlib = require('node:zlib')
const { HOST, deferred, withTimeout, request, withProxy, startUpstream, ACCEPT_HTML } = require('./helpers')
const { spawnProxyChild } = require('./fixtures/runners')

const UPSTREAM_TIMEOUT_MS = 400
const OK_BODY = '<html><body>ok</body></html>'

/**
 * A raw HTTP/1.1 upstream. `handlers[path](socket, req)` writes whatever it likes, and returns true (or a
 * Promise of true) when it wrote a complete response and the connection may carry the next request; any other
 * value leaves the socket to the handler. '/ok' answers OK_BODY with Content-Length and keeps the connection
 * alive. Every request is recorded.
 */
async function rawUpstream(handlers) {
  const requests = []
  const sockets = new Set()
  let connections = 0
  const onConnection = (socket) => {
    connections++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let buf = Buffer.alloc(0)
    let owned = false // a handler is writing its response: later requests wait in `buf`
    let seq = 0
    const parse = () => {
      while (!owned) {
        const end = buf.indexOf('\r\n\r\n')
        if (end < 0) return
        const head = buf.subarray(0, end).toString('latin1').split('\r\n')
        buf = buf.subarray(end + 4)
        const [method, url] = head[0].split(' ')
        const headers = {}
        for (const line of head.slice(1)) {
          const i = line.indexOf(':')
          headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
        }
        const req = { method, url, headers, seq: seq++ } // seq: the request's index on its connection
        requests.push(req)
        const handler = handlers[url.split('?')[0]]
        if (!handler) {
          socket.write('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n')
          continue
        }
        const keep = handler(socket, req)
        if (keep && typeof keep.then === 'function') {
          owned = true
          keep.then((again) => {
            if (!again) return
            owned = false
            parse()
          })
        } else if (keep !== true) {
          owned = true
        }
      }
    }
    socket.on('data', (d) => {
      buf = Buffer.concat([buf, d])
      parse()
    })
  }
  const server = net.createServer(onConnection)
  const listen = (port) =>
    new Promise((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, HOST, () => {
        server.off('error', reject)
        resolve()
      })
    })
  await listen(0)
  const port = server.address().port
  return {
    port,
    url: `http://${HOST}:${port}`,
    requests,
    /** Connections accepted so far. */
    get connections() {
      return connections
    },
    /** Stop listening and drop every connection: connects are refused until `resume()`. */
    async refuse() {
      await new Promise((resolve) => {
        server.close(() => resolve())
        for (const s of sockets) s.destroy()
      })
    },
    resume: () => listen(port),
    async close() {
      for (const s of sockets) s.destroy()
      if (server.listening) await new Promise((resolve) => server.close(() => resolve()))
    },
  }
}

let up
let child
let proxyUrl
let stderrListeners = []
const handlers = {
  '/ok': (socket) => {
    socket.write(`HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: ${OK_BODY.length}\r\n\r\n${OK_BODY}`)
    return true
  },
}

before(async () => {
  up = await rawUpstream(handlers)
  child = spawnProxyChild()
  child.child.stderr.on('data', () => {
    for (const l of stderrListeners) l()
  })
  child.send({ type: 'start', options: { proxy: up.url, port: 0, quiet: false, upstreamTimeoutMs: UPSTREAM_TIMEOUT_MS } })
  proxyUrl = (await child.next('started')).url
})
after(async () => {
  if (child) {
    child.send({ type: 'stop' })
    await child.next('stopped').catch(() => {})
    await child.kill()
  }
  if (up) await up.close()
})

let markId = 0
/** Writes a marker into the child's stderr and resolves with everything logged since the previous marker. */
async function stderrSinceLastMark() {
  const id = ++markId
  child.send({ type: 'mark', id })
  await child.next('marked')
  const marker = `@@mark ${id}\n`
  const seen = () => child.output().stderr.includes(marker)
  if (!seen()) {
    const d = deferred()
    const l = () => seen() && d.resolve()
    stderrListeners.push(l)
    try {
      await withTimeout(d.promise, 5000, `marker ${id} on the child's stderr`)
    } finally {
      stderrListeners = stderrListeners.filter((x) => x !== l)
    }
  }
  const all = child.output().stderr
  const end = all.indexOf(marker)
  const prev = all.lastIndexOf('@@mark ', end - 1)
  const start = prev < 0 ? 0 : all.indexOf('\n', prev) + 1
  return all.slice(start, end)
}

/** The outcome of one request: {status, body} when complete, {aborted, status, partial} when cut, {error} else. */
async function outcome(p, { accept = ACCEPT_HTML, headers = {}, onData } = {}) {
  return request(proxyUrl + p, { headers: { accept, ...headers }, timeout: 10000, onData }).then(
    (res) => ({ status: res.status, headers: res.headers, body: res.body }),
    (err) => {
      assert.ok(!err.timeout, `${p}: the client must not hang: ${err.message}`)
      if (err.aborted) return { aborted: true, status: err.status, headers: err.headers, partial: err.partialBody }
      return { error: err }
    },
  )
}

/** The checks after every fault: logged exactly once with the URL (unless `logged` is 0), the next request works. */
async function afterFault(p, { logged = 1, mentions } = {}) {
  const next = await outcome('/ok')
  assert.equal(next.status, 200, `${p}: the next request must succeed, got ${describe(next)}`)
  assert.equal(next.body.toString(), OK_BODY)
  const log = await stderrSinceLastMark()
  const url = `${up.url}${p}`
  const lines = log.split('\n').filter((l) => l.includes(url))
  const what = logged === 0 ? 'not be logged' : `be logged ${logged === 1 ? 'once' : `${logged} times`} with the URL ${url}`
  assert.equal(lines.length, logged, `${p}: the error must ${what}; stderr since the last check:\n${log}`)
  if (mentions) assert.match(lines[0], mentions, `${p}: the log line names the cause`)
}

function assert502(o, p, reason) {
  assert.ok(!o.aborted && !o.error && o.status === 502, `${p}: expected a 502, got ${describe(o)}`)
  const body = o.body.toString()
  assert.ok(body.includes(p), `${p}: the 502 page names the URL: ${body}`)
  if (reason) assert.match(body, reason, `${p}: the 502 page names the cause`)
}

function describe(o) {
  if (o.error) return `no response (${o.error.message})`
  if (o.aborted) return `an aborted ${o.status} response after ${o.partial.length} bytes`
  const text = o.body.toString()
  const reason = /<pre>([^<]*)<\/pre>/.exec(text)
  return `a complete ${o.status} response of ${o.body.length} bytes: ${reason ? reason[1] : text.slice(0, 300)}`
}

function assertAborted(o, p, firstBytes) {
  assert.ok(o.aborted, `${p}: expected an aborted response, got ${describe(o)}`)
  assert.equal(o.status, 200, `${p}: the upstream's status was passed on before the cut`)
  if (firstBytes) {
    // A reset discards whatever the proxy had not read yet, so only part of `firstBytes` may arrive:
    // what does arrive must be exactly their beginning (the client saw at least one byte before the cut).
    const got = o.partial.subarray(0, firstBytes.length)
    assert.ok(got.length > 0, `${p}: body bytes arrived before the cut`)
    assert.ok(got.equals(firstBytes.subarray(0, got.length)), `${p}: the bytes before the cut arrived intact`)
  }
}

/**
 * A handler that sends `head` + `first`, waits until the client has seen body bytes, then runs `then(socket)`
 * (whose result, true when the response is then complete, says whether the connection stays usable).
 */
function midBody(head, first, then) {
  const clientHasBytes = deferred()
  const handler = async (socket) => {
    socket.write(head + '\r\n')
    socket.write(first)
    await withTimeout(clientHasBytes.promise, 5000, 'the client receiving the first body bytes')
    return then(socket)
  }
  return { handler, onData: () => clientHasBytes.resolve() }
}

const page = (n) => '<html><head><title>t</title></head><body>\n' + 'line of page text\n'.repeat(n)

// First test of the file: the proxy has no pooled upstream connection yet, so the request must connect (and be
// refused) rather than meet a pooled connection that the refusal just closed.
test('upstream refuses connections: 502 naming the refusal, logged once with the URL; works again once it listens', async () => {
  await up.refuse()
  let o
  try {
    o = await outcome('/refused')
  } finally {
    await up.resume()
  }
  assert502(o, '/refused', /refused/i)
  await afterFault('/refused', { mentions: /refused/i })
})

test('upstream resets the connection in the middle of its response headers: 502, logged once, next request works', async () => {
  for (const [p, accept] of [['/reset-head-html', ACCEPT_HTML], ['/reset-head-bin', '*/*']]) {
    handlers[p] = (socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/ht')
      setImmediate(() => socket.resetAndDestroy())
    }
    const o = await outcome(p, { accept })
    assert502(o, p)
    await afterFault(p)
  }
})

test('upstream resets the connection in the middle of the body: the response is aborted after the bytes sent, logged once', async () => {
  const first = page(100)
  // rewritten route (chunked HTML)
  const html = midBody('HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n', `${first.length.toString(16)}\r\n${first}\r\n`, (s) => s.resetAndDestroy())
  handlers['/reset-body-html'] = html.handler
  const o1 = await outcome('/reset-body-html', { onData: html.onData })
  assertAborted(o1, '/reset-body-html', Buffer.from(first))
  await afterFault('/reset-body-html')
  // passthrough route (binary, Content-Length)
  const bytes = Buffer.alloc(20000, 0xab)
  const bin = midBody('HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n', bytes, (s) => s.resetAndDestroy())
  handlers['/reset-body.bin'] = bin.handler
  const o2 = await outcome('/reset-body.bin', { accept: '*/*', onData: bin.onData })
  assertAborted(o2, '/reset-body.bin', bytes)
  assert.equal(o2.headers['content-length'], '100000', 'Content-Length passed on')
  await afterFault('/reset-body.bin')
})

test('malformed gzip, br, zstd and deflate bodies on a rewritten (HTML) route: 502 naming the coding, logged once', async () => {
  const garbage = Buffer.from('this is not compressed at all: <html><body>hello</body></html>\n'.repeat(4))
  for (const [coding, name] of [['gzip', /gzip/i], ['br', /\bbr\b|brotli/i], ['zstd', /zstd|zstandard/i], ['deflate', /deflate|zlib/i]]) {
    const p = `/malformed-${coding}`
    handlers[p] = (socket) => {
      socket.write(`HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: ${coding}\r\nContent-Length: ${garbage.length}\r\n\r\n`)
      socket.write(garbage)
      return true
    }
    const o = await outcome(p, { headers: { 'accept-encoding': 'gzip, deflate, br, zstd' } })
    assert502(o, p, name)
    await afterFault(p, { mentions: name })
  }
})

test('a gzip body that turns corrupt after the page has started: the response is aborted, logged once', async () => {
  const text = page(2000)
  const gz = zlib.gzipSync(text)
  // the first part of a valid stream decodes to the page start; then bytes that no gzip stream contains
  const good = gz.subarray(0, Math.floor(gz.length / 2))
  const bad = Buffer.concat([Buffer.alloc(64, 0xff), gz.subarray(0, 200)])
  const html = midBody(
    `HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nContent-Length: ${good.length + bad.length}\r\n`,
    good,
    (s) => {
      s.write(bad)
      return true // the response is complete as declared; only its content is corrupt
    },
  )
  handlers['/corrupt-later'] = html.handler
  const o = await outcome('/corrupt-later', { onData: html.onData })
  assertAborted(o, '/corrupt-later', Buffer.from('<html><head><title>t</title></head><body>'))
  await afterFault('/corrupt-later')
})

test('a malformed compressed body on a passthrough route is passed on byte for byte (not the proxy\'s to decode), nothing logged', async () => {
  const garbage = Buffer.from('definitely not gzip \x00\x01\x02', 'latin1')
  handlers['/malformed.bin'] = (socket) => {
    socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Encoding: gzip\r\nContent-Length: ${garbage.length}\r\n\r\n`)
    socket.write(garbage)
    return true
  }
  const o = await outcome('/malformed.bin', { accept: '*/*', headers: { 'accept-encoding': 'gzip' } })
  assert.equal(o.status, 200, describe(o))
  assert.equal(o.headers['content-encoding'], 'gzip')
  assert.ok(o.body.equals(garbage), 'bytes passed on unchanged')
  await afterFault('/malformed.bin', { logged: 0 })
})

test('Content-Length larger than the body (upstream closes early): the response is aborted, logged once', async () => {
  const first = page(50)
  for (const [p, accept, type] of [['/short-html', ACCEPT_HTML, 'text/html'], ['/short.bin', '*/*', 'application/octet-stream']]) {
    const h = midBody(`HTTP/1.1 200 OK\r\nContent-Type: ${type}\r\nContent-Length: ${first.length + 5000}\r\n`, first, (s) => s.end())
    handlers[p] = h.handler
    const o = await outcome(p, { accept, onData: h.onData })
    assertAborted(o, p, Buffer.from(first))
    await afterFault(p)
  }
})

test('Content-Length smaller than the body: exactly the declared bytes are passed on, and the extra bytes never become the next response', async () => {
  // The extra bytes are a complete HTTP response: if the proxy reused that upstream connection they would
  // answer the next request (response smuggling).
  const smuggled = 'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 8\r\n\r\nSMUGGLED'
  for (const [p, accept, type] of [['/long-html', ACCEPT_HTML, 'text/html'], ['/long.bin', '*/*', 'application/octet-stream']]) {
    const declared = '<html><body>declared</body></html>'
    handlers[p] = (socket) => {
      socket.write(`HTTP/1.1 200 OK\r\nContent-Type: ${type}\r\nContent-Length: ${declared.length}\r\n\r\n${declared}${smuggled}`)
    }
    const o = await outcome(p, { accept })
    assert.equal(o.status, 200, `${p}: ${describe(o)}`)
    assert.equal(o.body.toString(), declared, `${p}: the declared bytes, no more`)
    for (let i = 0; i < 3; i++) {
      const next = await outcome('/ok')
      assert.equal(next.status, 200, `${p}: request ${i + 1} after it: ${describe(next)}`)
      assert.equal(next.body.toString(), OK_BODY, `${p}: request ${i + 1} after it gets its own response`)
    }
    await afterFault(p, { logged: 0 })
  }
})

test('upstream stalls before its headers: 502 after upstreamTimeoutMs, logged once', async () => {
  handlers['/stall-head'] = () => {}
  const t0 = Date.now()
  const o = await outcome('/stall-head')
  const ms = Date.now() - t0
  assert502(o, '/stall-head', /upstreamTimeoutMs|timed? ?out|within/i)
  // not before the timeout (the ceiling is the request's failure guard: no speed claim here)
  assert.ok(ms >= UPSTREAM_TIMEOUT_MS - 50, `answered after ${ms} ms`)
  await afterFault('/stall-head')
})

test('upstream stalls after its headers, before any HTML byte: 502 after upstreamTimeoutMs (nothing was sent yet), logged once', async () => {
  handlers['/stall-before-body'] = (socket) => {
    socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n')
  }
  const o = await outcome('/stall-before-body')
  assert502(o, '/stall-before-body', /sent nothing|upstreamTimeoutMs|timed? ?out/i)
  await afterFault('/stall-before-body')
})

test('upstream stalls in the middle of the body: the response is aborted after upstreamTimeoutMs, logged once', async () => {
  const first = page(80)
  for (const [p, accept, type] of [['/stall-body-html', ACCEPT_HTML, 'text/html'], ['/stall-body.bin', '*/*', 'application/octet-stream']]) {
    const h = midBody(`HTTP/1.1 200 OK\r\nContent-Type: ${type}\r\nContent-Length: ${first.length + 5000}\r\n`, first, () => {})
    handlers[p] = h.handler
    const t0 = Date.now()
    const o = await outcome(p, { accept, onData: h.onData })
    const ms = Date.now() - t0
    assertAborted(o, p, Buffer.from(first))
    assert.ok(ms >= UPSTREAM_TIMEOUT_MS - 50, `${p}: cut after ${ms} ms, before upstreamTimeoutMs`)
    await afterFault(p)
  }
})

test('a client that disconnects mid-response cancels the upstream request (its socket is closed)', async () => {
  // the upstream either keeps streaming or goes quiet after the first chunk (a long poll, an SSE stream)
  const closed = {}
  const routes = {}
  for (const mode of ['streaming', 'quiet']) {
    for (const kind of ['html', 'bin']) {
      const p = `/${mode}-${kind}`
      closed[p] = deferred()
      routes[p] = (req, res) => {
        res.socket.on('close', () => closed[p].resolve())
        res.writeHead(200, { 'content-type': kind === 'html' ? 'text/html' : 'application/octet-stream' })
        res.write(kind === 'html' ? page(20) : Buffer.alloc(4096, 1))
        if (mode === 'streaming') {
          const timer = setInterval(() => res.write(kind === 'html' ? '<p>more</p>\n' : Buffer.alloc(4096, 2)), 10)
          res.on('close', () => clearInterval(timer))
        }
      }
    }
  }
  const httpUp = await startUpstream({ ...routes, '/fine': (req, res) => res.end(OK_BODY) })
  try {
    await withProxy({ proxy: httpUp.url, port: 0 }, async (server) => {
      for (const p of Object.keys(routes)) {
        const gotBytes = deferred()
        const req = http.get(server.url + p, { agent: false, headers: { accept: p.endsWith('html') ? ACCEPT_HTML : '*/*' } }, (res) => {
          res.once('data', () => gotBytes.resolve())
          res.on('error', () => {})
        })
        req.on('error', () => {})
        await withTimeout(gotBytes.promise, 5000, `${p}: first body bytes at the client`)
        req.destroy()
        // a generous guard: without the cancellation the 'quiet' upstreams would stay open forever
        await withTimeout(closed[p].promise, 20000, `${p}: the upstream connection to be closed after the client left`)
      }
      // and the proxy still serves
      const res = await request(server.url + '/fine', { headers: { accept: ACCEPT_HTML } })
      assert.equal(res.status, 200)
      assert.equal(res.body.toString(), OK_BODY)
    })
  } finally {
    await httpUp.close()
  }
})

/**
 * A raw upstream whose '/first' answers a page on a kept-alive connection and whose `path` closes a reused
 * connection without answering (`how`: 'fin' or 'rst'), as an upstream's keep-alive timeout does; on a fresh
 * connection `path` is answered by `fresh(socket, req)`.
 */
function closesReusedConnection(how, path, fresh) {
  return rawUpstream({
    '/first': (socket) => {
      socket.write(`HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: ${OK_BODY.length}\r\n\r\n${OK_BODY}`)
      return true
    },
    [path]: (socket, req) => {
      if (req.seq === 0) return fresh(socket, req)
      if (how === 'fin') socket.end()
      else socket.resetAndDestroy()
    },
  })
}

test('an upstream that closes a kept-alive connection as the next request arrives (its keep-alive timeout): the request is retried on a new connection', async () => {
  // Node's http.Server closes idle connections after keepAliveTimeout (5 s by default); a request the proxy
  // sends on that connection at that moment reaches a closing socket. Nothing was answered, so a GET can be
  // retried on a new connection, as browsers and nginx do for a reused connection.
  const failures = []
  for (const how of ['fin', 'rst']) {
    const ka = await closesReusedConnection(how, '/second', (socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 6\r\n\r\nsecond')
      return true
    })
    try {
      await withProxy({ proxy: ka.url, port: 0 }, async (server) => {
        const first = await request(server.url + '/first', { headers: { accept: ACCEPT_HTML } })
        assert.equal(first.status, 200)
        const second = await request(server.url + '/second', { headers: { accept: ACCEPT_HTML }, timeout: 10000 }).then(
          (r) => ({ status: r.status, body: r.body }),
          (err) => ({ error: err }),
        )
        const seen = ka.requests.filter((r) => r.url === '/second').map((r) => r.seq)
        assert.deepEqual(seen.slice(0, 1), [1], `${how}: the proxy reused the kept-alive connection`)
        if (second.status !== 200 || second.body.toString() !== 'second' || seen.join() !== '1,0') {
          failures.push(`${how}: GET /second after the upstream closed the reused connection got ${describe(second)}; upstream saw it on connections with request index ${JSON.stringify(seen)} (want [1,0]: retried once, on a new connection)`)
        }
      })
    } finally {
      await ka.close()
    }
  }
  assert.deepEqual(failures, [])
})

test('retry: a body-less HEAD or OPTIONS that meets a reused connection closed without an answer is retried once, on a fresh connection', async () => {
  const failures = []
  for (const method of ['HEAD', 'OPTIONS']) {
    for (const how of ['fin', 'rst']) {
      const ka = await closesReusedConnection(how, '/second', (socket, req) => {
        // HEAD: the headers a GET would get, no body; OPTIONS: an Allow list
        if (req.method === 'HEAD') socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 6\r\nX-Second: yes\r\n\r\n')
        else socket.write('HTTP/1.1 204 No Content\r\nAllow: GET, HEAD, OPTIONS\r\nX-Second: yes\r\n\r\n')
        return true
      })
      try {
        await withProxy({ proxy: ka.url, port: 0 }, async (server) => {
          const first = await request(server.url + '/first', { headers: { accept: ACCEPT_HTML } })
          assert.equal(first.status, 200)
          assert.equal(ka.connections, 1)
          const second = await request(server.url + '/second', { method, headers: { accept: ACCEPT_HTML }, timeout: 20000 }).then(
            (r) => ({ status: r.status, headers: r.headers, body: r.body }),
            (err) => ({ error: err }),
          )
          const seen = ka.requests.filter((r) => r.url === '/second').map((r) => `${r.method}#${r.seq}`)
          const want = method === 'HEAD' ? 200 : 204
          if (second.status !== want || second.headers['x-second'] !== 'yes' || second.body.length !== 0 || seen.join() !== `${method}#1,${method}#0` || ka.connections !== 2) {
            failures.push(`${method} (${how}): got ${describe(second)}; upstream saw ${JSON.stringify(seen)} (want [${method}#1, ${method}#0]: the reused connection, then once on a fresh one) over ${ka.connections} connections (want 2)`)
          }
        })
      } finally {
        await ka.close()
      }
    }
  }
  assert.deepEqual(failures, [])
})

test('no retry for a request with a body: a POST that meets a reused connection closed without an answer reaches the upstream once and gets a 502', async () => {
  for (const how of ['fin', 'rst']) {
    const ka = await closesReusedConnection(how, '/post', (socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\nConnection: close\r\n\r\nsent')
      socket.end()
    })
    try {
      await withProxy({ proxy: ka.url, port: 0 }, async (server) => {
        const first = await request(server.url + '/first', { headers: { accept: ACCEPT_HTML } })
        assert.equal(first.status, 200)
        const post = await request(server.url + '/post', { method: 'POST', body: 'payload=1', headers: { 'content-type': 'text/plain' }, timeout: 20000 }).then(
          (r) => ({ status: r.status, headers: r.headers, body: r.body }),
          (err) => ({ error: err }),
        )
        const seen = ka.requests.filter((r) => r.url === '/post').map((r) => `${r.method}#${r.seq}`)
        assert.deepEqual(seen, ['POST#1'], `${how}: the POST reached the upstream exactly once, on the reused connection`)
        assert.equal(ka.connections, 1, `${how}: no fresh connection was opened to send it again`)
        assert.equal(post.status, 502, `${how}: the client gets a 502, got ${describe(post)}`)
        assert.ok(post.body.toString().includes('/post'), `${how}: the 502 page names the URL`)
        // the proxy carries on: a new connection serves the next request
        const next = await request(server.url + '/first', { headers: { accept: ACCEPT_HTML } })
        assert.equal(next.status, 200)
      })
    } finally {
      await ka.close()
    }
  }
})
