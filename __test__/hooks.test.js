'use strict'
// proxy.proxyReq / proxy.proxyReqWs / proxy.proxyRes (Browsersync's http-proxy hooks) and
// proxy.proxyOptions (xfwd, changeOrigin), against real loopback upstreams.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const net = require('node:net')
const { deferred, withTimeout, request, withProxy, fileUpstream, ACCEPT_HTML, startUpstream, lib, deadPort, stopIfStarted } = require('./helpers')

const routes = {}
const up = fileUpstream(routes)

routes['/echo'] = (req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers }))
}
routes['/moved'] = (req, res) => {
  res.writeHead(302, { location: `http://${req.headers.host}/there`, 'set-cookie': ['a=1; Domain=127.0.0.1; Path=/'] })
  res.end()
}
routes['/page'] = (req, res) => {
  res.writeHead(200, { 'content-type': 'text/html', 'x-upstream': 'yes' })
  res.end(`<html><body><a href="${`http://${req.headers.host}/x`}">x</a></body></html>`)
}
routes['/other-path'] = (req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' })
  res.end('other ' + req.url)
}

test('proxyReq: repeated headers as Node folds them (req.headers: cookies with "; ", others with ", "; getHeader: every value); null and undefined values', async () => {
  const seen = []
  const proxy = {
    target: up.url,
    proxyReq: [
      (proxyReq, req) => {
        seen.push({ headers: req.headers, multi: proxyReq.getHeader('X-Multi'), missing: proxyReq.getHeader('x-missing') })
        assert.throws(() => proxyReq.setHeader('x-undefined', undefined), /proxyReq\.setHeader\('x-undefined'\): value is undefined/)
        proxyReq.setHeader('x-null', null)
        proxyReq.setHeader('x-list', ['p', 'q'])
      },
    ],
  }
  await withProxy({ proxy, port: 0 }, async (server) => {
    const n = up.requests.length
    const res = await request(server.url + '/echo', {
      // Raw pairs, repeats kept (Node adds no Host to an array: it is given).
      headers: ['Host', new URL(server.url).host, 'Cookie', 'a=1', 'x-multi', '1', 'cookie', 'b=2', 'X-Multi', '2', 'x-one', 'only'],
    })
    assert.equal(res.status, 200)
    assert.equal(seen.length, 1)
    const { headers, multi, missing } = seen[0]
    assert.equal(headers.cookie, 'a=1; b=2')
    assert.equal(headers['x-multi'], '1, 2')
    assert.equal(headers['x-one'], 'only')
    assert.deepEqual(multi, ['1', '2'])
    assert.equal(missing, undefined)
    const raw = up.requests[n].rawHeaders
    const values = (name) => raw.flatMap((v, i) => (i % 2 === 0 && v.toLowerCase() === name ? [raw[i + 1]] : []))
    assert.deepEqual(values('x-list'), ['p', 'q'], 'an array value is one header each')
    assert.deepEqual(values('x-null'), [], 'a null value sends no header')
    assert.deepEqual(values('x-multi'), ['1', '2'])
  })
})

test('proxyReq: a header set, one removed and the path changed reach the upstream; the client request is passed as req', async () => {
  const seen = []
  const proxy = {
    target: up.url,
    proxyReq: [
      (proxyReq, req) => {
        seen.push({
          method: proxyReq.method,
          path: proxyReq.path,
          host: proxyReq.getHeader('host'),
          headers: proxyReq.getHeaders(),
          req: { url: req.url, method: req.method, host: req.headers.host, custom: req.headers['x-custom'] },
        })
        proxyReq.setHeader('X-From-Hook', 'one')
        proxyReq.removeHeader('x-drop-me')
      },
      (proxyReq) => {
        // The second function sees what the first one did.
        proxyReq.setHeader('x-second', String(proxyReq.getHeader('x-from-hook')) + '+two')
        proxyReq.path = '/echo?rewritten=1'
      },
    ],
  }
  await withProxy({ proxy, port: 0 }, async (server) => {
    const n = up.requests.length
    const res = await request(server.url + '/echo?q=1', {
      headers: { 'x-custom': 'c', 'x-drop-me': 'gone' },
    })
    assert.equal(res.status, 200)
    const upstreamSaw = up.requests[n]
    assert.equal(upstreamSaw.url, '/echo?rewritten=1')
    assert.equal(upstreamSaw.headers['x-from-hook'], 'one')
    assert.equal(upstreamSaw.headers['x-second'], 'one+two')
    assert.equal(upstreamSaw.headers['x-drop-me'], undefined)
    assert.equal(seen.length, 1)
    assert.equal(seen[0].method, 'GET')
    assert.equal(seen[0].path, '/echo?q=1')
    assert.equal(seen[0].host, up.host, 'the hook sees the Host the target gets (changeOrigin)')
    assert.equal(seen[0].headers['x-custom'], 'c')
    assert.deepEqual(seen[0].req, { url: '/echo?q=1', method: 'GET', host: `127.0.0.1:${server.port}`, custom: 'c' })
  })
})

test('the hook objects\' header API as Node\'s: hasHeader and getHeader ignore case, getHeaderNames and getHeaders list what is set, setHeader chains; Browsersync\'s arguments (res and options undefined)', async () => {
  const seen = {}
  const proxy = {
    target: up.url,
    proxyReq: (proxyReq, req, res, options, ...more) => {
      proxyReq.setHeader('X-Mixed-Case', 'v1')
      proxyReq.removeHeader('X-DROP')
      seen.req = {
        has: [proxyReq.hasHeader('x-mixed-case'), proxyReq.hasHeader('X-MIXED-CASE'), proxyReq.hasHeader('x-drop'), proxyReq.hasHeader('x-absent')],
        names: proxyReq.getHeaderNames(),
        headers: proxyReq.getHeaders(),
        prototype: Object.getPrototypeOf(proxyReq.getHeaders()),
        args: [typeof req, res, options, more.length],
      }
    },
    proxyRes: (proxyRes, req, res, ...more) => {
      seen.res = {
        type: proxyRes.getHeader('Content-Type'),
        chained: proxyRes.setHeader('X-Res-Added', 'r1') === proxyRes,
        added: proxyRes.headers['x-res-added'],
        args: [typeof req, res, more.length],
      }
      proxyRes.removeHeader('X-UPSTREAM')
    },
  }
  await withProxy({ proxy, port: 0 }, async (server) => {
    const res = await request(server.url + '/page', { headers: { 'x-drop': 'gone', 'x-keep': 'k', accept: ACCEPT_HTML } })
    assert.equal(res.status, 200)
    assert.deepEqual(seen.req.has, [true, true, false, false])
    assert.ok(seen.req.names.includes('x-mixed-case') && seen.req.names.includes('x-keep') && seen.req.names.includes('host'), `names: ${seen.req.names}`)
    assert.ok(!seen.req.names.includes('x-drop') && seen.req.names.every((n) => n === n.toLowerCase()), `names: ${seen.req.names}`)
    assert.equal(seen.req.headers['x-mixed-case'], 'v1')
    assert.equal(seen.req.headers['x-keep'], 'k')
    assert.equal(seen.req.headers['x-drop'], undefined)
    assert.deepEqual(Object.keys(seen.req.headers).sort(), [...seen.req.names].sort(), 'getHeaders has what getHeaderNames names')
    assert.equal(seen.req.prototype, null, 'getHeaders is a null-prototype object, as Node\'s')
    assert.deepEqual(seen.req.args, ['object', undefined, undefined, 0])
    assert.equal(seen.res.type, 'text/html')
    assert.equal(seen.res.chained, true)
    assert.equal(seen.res.added, 'r1')
    assert.deepEqual(seen.res.args, ['object', undefined, 0])
    assert.equal(res.headers['x-res-added'], 'r1')
    assert.equal(res.headers['x-upstream'], undefined)
  })
})

test('a proxyRes statusCode that is not a number is a 500 naming it; one given as a numeric string is sent', async () => {
  const proxy = {
    target: up.url,
    proxyRes: (proxyRes, req) => {
      proxyRes.statusCode = req.url === '/page' ? 'two hundred' : '202'
    },
  }
  await withProxy({ proxy, port: 0 }, async (server) => {
    const bad = await request(server.url + '/page')
    assert.equal(bad.status, 500)
    assert.match(bad.body.toString(), /proxyRes\.statusCode must be a number, got two hundred/)
    const ok = await request(server.url + '/echo')
    assert.equal(ok.status, 202)
  })
})

test('prepareHooks: no dispatcher for a kind without functions (requests pay nothing for it), none at all for a URL string or null', () => {
  const { prepareHooks } = require(require('node:path').resolve(__dirname, '..', 'lib', 'hooks.js'))
  assert.deepStrictEqual(prepareHooks('http://127.0.0.1:1'), {})
  assert.deepStrictEqual(prepareHooks(null), {})
  assert.deepStrictEqual(prepareHooks({ target: 'http://127.0.0.1:1', proxyReq: [] }), { proxyReq: undefined, proxyReqWs: undefined, proxyRes: undefined })
  const some = prepareHooks({ target: 'http://127.0.0.1:1', proxyRes: () => {} })
  assert.equal(typeof some.proxyRes, 'function')
  assert.equal(some.proxyReq, undefined)
})

test('proxyReq runs before reqHeaders are applied, so reqHeaders win (Browsersync appends them to proxyReq)', async () => {
  const proxy = {
    target: up.url,
    reqHeaders: { 'x-both': 'from-reqHeaders' },
    proxyReq: (proxyReq) => {
      proxyReq.setHeader('x-both', 'from-hook')
      proxyReq.setHeader('x-only-hook', '1')
    },
  }
  await withProxy({ proxy, port: 0 }, async (server) => {
    const n = up.requests.length
    await request(server.url + '/echo')
    assert.equal(up.requests[n].headers['x-both'], 'from-reqHeaders')
    assert.equal(up.requests[n].headers['x-only-hook'], '1')
  })
})

test('proxyRes sees the target raw response before cookie and Location rewrites, and its changes reach the client', async () => {
  const seen = []
  const proxy = {
    target: up.url,
    proxyRes: (proxyRes, req) => {
      seen.push({ status: proxyRes.statusCode, location: proxyRes.headers.location, cookie: proxyRes.headers['set-cookie'], url: req.url })
      if (req.url === '/moved') {
        proxyRes.setHeader('x-added', 'by-hook')
        proxyRes.headers['set-cookie'] = proxyRes.headers['set-cookie'].concat('b=2; Domain=127.0.0.1')
      } else {
        proxyRes.statusCode = 203
        proxyRes.removeHeader('x-upstream')
      }
    },
  }
  await withProxy({ proxy, port: 0 }, async (server) => {
    const moved = await request(server.url + '/moved')
    assert.equal(moved.status, 302)
    assert.equal(moved.headers['x-added'], 'by-hook')
    assert.equal(moved.headers.location, `http://127.0.0.1:${server.port}/there`, 'Location still rewritten after the hook')
    assert.deepEqual(moved.headers['set-cookie'], ['a=1; Path=/', 'b=2'], 'Domain stripped after the hook, its cookie too')
    assert.equal(seen[0].status, 302)
    assert.equal(seen[0].location, `http://${up.host}/there`, 'the hook sees the target Location')
    assert.deepEqual(seen[0].cookie, ['a=1; Domain=127.0.0.1; Path=/'])
    const page = await request(server.url + '/page', { headers: { accept: ACCEPT_HTML } })
    assert.equal(page.status, 203)
    assert.equal(page.headers['x-upstream'], undefined)
    assert.match(page.body.toString(), new RegExp(`href="//127.0.0.1:${server.port}/x"`), 'the body is still rewritten')
  })
})

test('requests with hooks do not wait for each other: 40 are answered while one is held upstream', async () => {
  const gate = deferred()
  const arrived = deferred()
  routes['/slow'] = async (req, res) => {
    arrived.resolve()
    await gate.promise
    res.end('slow done')
  }
  let calls = 0
  const proxy = { target: up.url, proxyReq: (proxyReq) => { calls++; proxyReq.setHeader('x-n', String(calls)) } }
  await withProxy({ proxy, port: 0 }, async (server) => {
    const slow = request(server.url + '/slow')
    await withTimeout(arrived.promise, 10000, 'the slow request to reach the upstream')
    const others = await Promise.all(Array.from({ length: 40 }, () => request(server.url + '/echo')))
    assert.ok(others.every((r) => r.status === 200))
    gate.resolve()
    assert.equal((await slow).body.toString(), 'slow done')
    assert.equal(calls, 41)
  })
})

/** A raw HTTP/1.1 exchange whose request is written at once (libuv tries the write synchronously). */
async function rawClient(port) {
  const sock = net.connect(port, '127.0.0.1')
  await new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject) })
  let data = ''
  sock.on('data', (d) => { data += d })
  const ended = new Promise((resolve) => sock.on('close', () => resolve(data)))
  return { send: (path) => sock.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`), ended }
}

test('pending hooks hold no proxy thread: with 8 hooks waiting for the blocked JS thread, another server answers', async () => {
  // Server A has a proxyReq hook; B none, in the same process and runtime. JS is blocked (a busy loop)
  // once A has 8 requests waiting on their hook, more than the runtime's worker threads: B can only
  // produce its answer meanwhile if no worker is held by a pending hook. B's target is a dead port, so
  // its answer (a 502) is made natively: the upstreams here are JS servers, blocked too.
  let hookCalls = 0
  const dead = await deadPort()
  await withProxy({ proxy: { target: up.url, proxyReq: () => { hookCalls++ } }, port: 0 }, async (a) => {
    await withProxy({ proxy: `http://127.0.0.1:${dead}`, port: 0 }, async (b) => {
      const clientsA = await Promise.all(Array.from({ length: 8 }, () => rawClient(a.port)))
      const clientB = await rawClient(b.port)
      for (const c of clientsA) c.send('/echo?a')
      const until = Date.now() + 15000
      while (a.stats().requests < 8 && Date.now() < until) {}
      assert.equal(a.stats().requests, 8, 'A got its 8 requests while JS was blocked')
      assert.equal(hookCalls, 0, 'their hooks are pending: JS has not run')
      clientB.send('/echo?b')
      while (b.stats().upstreamErrors < 1 && Date.now() < until) {}
      assert.equal(b.stats().upstreamErrors, 1, 'B answered while the 8 hooks were pending')
      assert.equal(hookCalls, 0)
      assert.match(await withTimeout(clientB.ended, 10000, 'B answer'), /^HTTP\/1\.1 502/)
      for (const c of clientsA) assert.match(await withTimeout(c.ended, 10000, 'A answer'), /^HTTP\/1\.1 200/)
      assert.equal(hookCalls, 8)
    })
  })
})

test('a throwing proxyReq or proxyRes gives a 500 naming the error; the server keeps serving', async () => {
  const proxy = {
    target: up.url,
    proxyReq: (proxyReq, req) => { if (req.url.startsWith('/echo?boom')) throw new Error('hook exploded') },
    proxyRes: (proxyRes, req) => { if (req.url === '/page') throw new TypeError('res hook broke') },
  }
  await withProxy({ proxy, port: 0 }, async (server) => {
    const n = up.requests.length
    const bad = await request(server.url + '/echo?boom')
    assert.equal(bad.status, 500)
    assert.match(bad.body.toString(), /proxy\.proxyReq/)
    assert.match(bad.body.toString(), /hook exploded/)
    assert.equal(up.requests.length, n, 'nothing reached the upstream')
    const badRes = await request(server.url + '/page')
    assert.equal(badRes.status, 500)
    assert.match(badRes.body.toString(), /proxy\.proxyRes/)
    assert.match(badRes.body.toString(), /res hook broke/)
    const ok = await request(server.url + '/echo?fine')
    assert.equal(ok.status, 200)
    assert.equal(JSON.parse(ok.body).url, '/echo?fine')
  })
})

test('an invalid header set by a hook is a 500 naming it, not a crash', async () => {
  const proxy = { target: up.url, proxyReq: (proxyReq) => proxyReq.setHeader('bad header', 'x') }
  await withProxy({ proxy, port: 0 }, async (server) => {
    const res = await request(server.url + '/echo')
    assert.equal(res.status, 500)
    assert.match(res.body.toString(), /bad header/)
  })
})

test('hooks that are not functions are refused naming the option', async () => {
  await assert.rejects(stopIfStarted(lib().start({ proxy: { target: up.url, proxyReq: [() => {}, 'x'] }, port: 0, quiet: true })), /proxy\.proxyReq\[1\]/)
  await assert.rejects(stopIfStarted(lib().start({ proxy: { target: up.url, proxyRes: 5 }, port: 0, quiet: true })), /option `proxy\.proxyRes` must be a function, got number/)
  await assert.rejects(stopIfStarted(lib().start({ proxy: { target: up.url, proxyReqWs: [null] }, port: 0, quiet: true })), /option `proxy\.proxyReqWs\[0\]` must be a function, got null/)
  // null and undefined mean none, as in Browsersync.
  const server = await lib().start({ proxy: { target: up.url, proxyReq: null, proxyRes: undefined }, port: 0, quiet: true })
  await server.stop()
})

test('proxyReqWs changes the WebSocket handshake the upstream gets', async () => {
  const handshake = deferred()
  const wsUp = await startUpstream({}, {
    onUpgrade: (req, socket) => {
      handshake.resolve({ url: req.url, token: req.headers['x-ws-token'] })
      socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n')
    },
  })
  try {
    const proxy = { target: wsUp.url, proxyReqWs: (proxyReq, req) => { proxyReq.setHeader('x-ws-token', 'secret:' + req.url) } }
    await withProxy({ proxy, port: 0 }, async (server) => {
      const res = await request(server.url + '/socket', { headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' } })
      assert.equal(res.status, 403)
      assert.deepEqual(await withTimeout(handshake.promise, 10000, 'the handshake'), { url: '/socket', token: 'secret:/socket' })
    })
  } finally {
    await wsUp.close()
  }
})

test('proxyOptions: xfwd adds X-Forwarded-*, changeOrigin: false keeps the client Host', async () => {
  await withProxy({ proxy: { target: up.url, proxyOptions: { xfwd: true, changeOrigin: false } }, port: 0 }, async (server) => {
    const n = up.requests.length
    await request(server.url + '/echo', { headers: { 'x-forwarded-for': '10.1.2.3' } })
    const h = up.requests[n].headers
    assert.equal(h.host, `127.0.0.1:${server.port}`)
    assert.equal(h['x-forwarded-for'], '10.1.2.3,127.0.0.1')
    assert.equal(h['x-forwarded-port'], String(server.port))
    assert.equal(h['x-forwarded-proto'], 'http')
    assert.equal(h['x-forwarded-host'], `127.0.0.1:${server.port}`)
  })
  await withProxy({ proxy: { target: up.url }, port: 0 }, async (server) => {
    const n = up.requests.length
    await request(server.url + '/echo')
    assert.equal(up.requests[n].headers['x-forwarded-for'], undefined, 'no X-Forwarded-* without xfwd')
    assert.equal(up.requests[n].headers.host, up.host)
  })
})

test('proxyOptions keys that do nothing here are named in a warning', async () => {
  const { spawnSync } = require('node:child_process')
  const script = `
    const { start } = require(${JSON.stringify(require('node:path').resolve(__dirname, '..'))})
    start({ proxy: { target: ${JSON.stringify(up.url)}, proxyOptions: { xfwd: true, autoRewrite: true, followRedirects: true, ws: true } }, port: 0 })
      .then((s) => s.stop())
  `
  const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20000 })
  assert.equal(out.status, 0, out.stderr)
  assert.match(out.stderr, /proxy\.proxyOptions\.followRedirects is not supported/)
  assert.match(out.stderr, /proxy\.proxyOptions\.ws is ignored/)
  assert.doesNotMatch(out.stderr, /proxyOptions\.(xfwd|autoRewrite)/)
  // Each warning once, the others silent: `target` (what the proxy does anyway) and `autoRewrite: false`,
  // which is named for what it would change.
  const { proxyOptionsWarnings } = require(require('node:path').resolve(__dirname, '..', 'lib', 'hooks.js'))
  assert.deepEqual(proxyOptionsWarnings({ proxyOptions: { target: 'x', secure: false, changeOrigin: true, autoRewrite: false, timeout: 5 } }), [
    'proxy.proxyOptions.autoRewrite: false is not supported: redirects to the target always come back to the proxy',
    'proxy.proxyOptions.timeout is not supported by devproxy-native and is ignored (supported: xfwd, secure, changeOrigin)',
  ])
  assert.deepEqual(proxyOptionsWarnings({ proxyOptions: null }), [])
  assert.deepEqual(proxyOptionsWarnings('http://x'), [])
  // start() without `proxy` (serveStatic or replay only) asks too.
  assert.deepEqual(proxyOptionsWarnings(null), [])
  assert.deepEqual(proxyOptionsWarnings(undefined), [])
})
