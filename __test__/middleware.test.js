'use strict'
// Connect-style `middleware` / `proxy.middleware` on Node's own http objects, before the proxy.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const crypto = require('node:crypto')
const { request, withProxy, fileUpstream, ACCEPT_HTML, lib } = require('./helpers')

const routes = {}
const up = fileUpstream(routes)

routes['/echo'] = (req, res) => {
  const chunks = []
  req.on('data', (c) => chunks.push(c))
  req.on('end', () => {
    const body = Buffer.concat(chunks)
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, bodyLength: body.length, bodySha: crypto.createHash('sha256').update(body).digest('hex') }))
  })
}
routes['/page'] = (req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' })
  res.end(`<html><body><a href="http://${req.headers.host}/x">x</a></body></html>`)
}

test('a middleware that ends the response answers it; Node req/res are real http objects; the upstream is not asked', async () => {
  const seen = []
  const middleware = [
    (req, res, next) => {
      seen.push({ isIncoming: req instanceof http.IncomingMessage, isServerResponse: res instanceof http.ServerResponse, url: req.url, host: req.headers.host })
      if (req.url === '/hello') {
        res.setHeader('content-type', 'text/plain')
        res.setHeader('x-mw', '1')
        res.end('hello from middleware')
        return
      }
      next()
    },
  ]
  await withProxy({ proxy: up.url, middleware, port: 0 }, async (server) => {
    const n = up.requests.length
    const res = await request(server.url + '/hello')
    assert.equal(res.status, 200)
    assert.equal(res.body.toString(), 'hello from middleware')
    assert.equal(res.headers['x-mw'], '1')
    assert.equal(res.headers['x-devproxy-middleware'], undefined)
    assert.equal(up.requests.length, n, 'the upstream was not asked')
    assert.deepEqual(seen[0], { isIncoming: true, isServerResponse: true, url: '/hello', host: `127.0.0.1:${server.port}` })
    assert.equal(server.stats().requests, 1)
  })
})

test('next() continues to the proxy with what the middleware changed (url, headers); the answer is rewritten once', async () => {
  const middleware = [
    (req, res, next) => {
      req.headers['x-added-by-mw'] = 'yes'
      if (req.url === '/alias') req.url = '/echo?from=alias'
      next()
    },
  ]
  await withProxy({ proxy: up.url, middleware, port: 0 }, async (server) => {
    const n = up.requests.length
    const res = await request(server.url + '/alias')
    assert.equal(res.status, 200)
    const seen = up.requests[n]
    assert.equal(seen.url, '/echo?from=alias')
    assert.equal(seen.headers['x-added-by-mw'], 'yes')
    assert.equal(seen.headers.host, up.host, 'the proxy still sends the target Host')
    assert.equal(seen.headers['x-devproxy-middleware'], undefined, 'the token never reaches the target')
    assert.equal(res.headers['x-devproxy-passed'], undefined, 'nor the client')
    const page = await request(server.url + '/page', { headers: { accept: ACCEPT_HTML } })
    const body = page.body.toString()
    assert.match(body, new RegExp(`href="//127.0.0.1:${server.port}/x"`))
    assert.equal(server.stats().requests, 2, 'the request sent on by next() is not counted twice')
    // The echo's JSON (its origins: rewriteJson) and the page, each once: never again on the way back through the host.
    assert.equal(server.stats().rewritten, 2)
  })
})

test('over HTTPS (https: true), next() reaches the proxy: the host trusts exactly the certificate the proxy serves', async () => {
  const middleware = [(req, res, next) => { req.headers['x-added-by-mw'] = 'tls'; next() }]
  await withProxy({ proxy: up.url, middleware, https: true, port: 0 }, async (server) => {
    assert.match(server.url, /^https:/)
    const n = up.requests.length
    const res = await request(server.url + '/echo', { ca: server.certificate })
    assert.equal(res.status, 200)
    assert.equal(JSON.parse(res.body).headers['x-added-by-mw'], 'tls')
    assert.equal(up.requests.length, n + 1, 'the upstream got the request once')
    const page = await request(server.url + '/page', { ca: server.certificate, headers: { accept: ACCEPT_HTML } })
    assert.match(page.body.toString(), new RegExp(`href="//127.0.0.1:${server.port}/x"`))
  })
})

test('HTML a middleware answers gets the snippet and rules, as Browsersync response modifier wraps middleware', async () => {
  const middleware = [(req, res) => { res.setHeader('content-type', 'text/html'); res.end('<html><body><p>mw page</p></body></html>') }]
  await withProxy({ proxy: up.url, middleware, snippet: '<script>SNIP</script>', rewriteRules: [{ match: /mw page/, replace: 'MW PAGE' }], port: 0 }, async (server) => {
    const res = await request(server.url + '/any', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.body.toString(), '<html><body><script>SNIP</script><p>MW PAGE</p></body></html>')
  })
})

test('a POST body streams through middleware next() to the upstream unchanged', async () => {
  const middleware = [(req, res, next) => next()]
  const body = crypto.randomBytes(3 * 1024 * 1024 + 17)
  await withProxy({ proxy: up.url, middleware, port: 0 }, async (server) => {
    const res = await request(server.url + '/echo', { method: 'POST', body, headers: { 'content-type': 'application/octet-stream' } })
    const echoed = JSON.parse(res.body)
    assert.equal(echoed.method, 'POST')
    assert.equal(echoed.bodyLength, body.length)
    assert.equal(echoed.bodySha, crypto.createHash('sha256').update(body).digest('hex'))
  })
})

test('a middleware reads the POST body and answers with it', async () => {
  const middleware = [(req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => res.end('got ' + Buffer.concat(chunks).toString()))
  }]
  await withProxy({ proxy: up.url, middleware, port: 0 }, async (server) => {
    const res = await request(server.url + '/form', { method: 'POST', body: 'a=1&b=2' })
    assert.equal(res.body.toString(), 'got a=1&b=2')
  })
})

test('next(err) and a throwing middleware give a 500 naming the error; the server keeps serving', async () => {
  const middleware = [
    (req, res, next) => {
      if (req.url === '/next-err') return next(new Error('passed to next'))
      if (req.url === '/throw') throw new RangeError('thrown in middleware')
      next()
    },
  ]
  await withProxy({ proxy: up.url, middleware, port: 0 }, async (server) => {
    const a = await request(server.url + '/next-err')
    assert.equal(a.status, 500)
    assert.match(a.body.toString(), /middleware/)
    assert.match(a.body.toString(), /Error: passed to next/)
    const b = await request(server.url + '/throw')
    assert.equal(b.status, 500)
    assert.match(b.body.toString(), /RangeError: thrown in middleware/)
    const ok = await request(server.url + '/echo')
    assert.equal(ok.status, 200)
    assert.equal(JSON.parse(ok.body).url, '/echo')
  })
})

test('{ route, handle } runs only for its route (connect matching, route stripped from req.url); other paths pay nothing', async () => {
  const seen = []
  const middleware = [
    { route: '/api', handle: (req, res) => { seen.push(req.url); res.end('api ' + req.url) } },
    { route: '/passed', handle: (req, res, next) => next() },
  ]
  // Which requests reach the middleware host (a Node http.Server of lib/middleware.js): counted on the
  // servers created while the proxy starts, to show that other paths never make the trip through Node.
  const http = require('node:http')
  const createServer = http.createServer
  const hosts = []
  http.createServer = function (...args) {
    const created = createServer.apply(this, args)
    hosts.push(created)
    return created
  }
  let handedOff = 0
  try {
    await withProxy({ proxy: { target: up.url, middleware }, port: 0 }, async (server) => {
      for (const host of hosts) host.on('request', () => handedOff++)
      assert.equal(hosts.length, 1, 'one middleware host')
      assert.equal((await request(server.url + '/api/users?x=1')).body.toString(), 'api /users?x=1')
      assert.equal((await request(server.url + '/API')).body.toString(), 'api /')
      assert.equal(handedOff, 2)
      const n = up.requests.length
      const other = await request(server.url + '/apix')
      assert.equal(other.status, 404, 'the upstream answered /apix')
      assert.equal(up.requests.length, n + 1)
      assert.equal(handedOff, 2, '/apix never went to the middleware host')
      await request(server.url + '/passed/x')
      assert.equal(handedOff, 3, 'a matching route does')
      assert.deepEqual(seen, ['/users?x=1', '/'])
    })
  } finally {
    http.createServer = createServer
  }
})

test('top-level middleware wins over proxy.middleware, as in Browsersync, with a warning', async () => {
  const top = (req, res) => res.end('top')
  const fromProxy = (req, res) => res.end('proxy')
  await withProxy({ proxy: { target: up.url, middleware: fromProxy }, middleware: top, port: 0 }, async (server) => {
    assert.equal((await request(server.url + '/')).body.toString(), 'top')
  })
  const { spawnSync } = require('node:child_process')
  const script = `
    const { start } = require(${JSON.stringify(require('node:path').resolve(__dirname, '..'))})
    const f = (req, res) => res.end()
    start({ proxy: { target: ${JSON.stringify(up.url)}, middleware: [f] }, middleware: [f], port: 0 }).then((s) => s.stop())
  `
  const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20000 })
  assert.equal(out.status, 0, out.stderr)
  assert.match(out.stderr, /proxy\.middleware is ignored because middleware is given/)
})

test('the middleware host serves only the native server: a request without the token gets 403', async () => {
  let ran = 0
  const middleware = [(req, res) => { ran++; res.end('ok') }]
  // Find the host's port: it is the only other listening socket this test makes; reach it through the
  // token check by scanning what the proxy sends (the host's port is not exposed, so look it up).
  const before = new Set(await listeningPorts())
  await withProxy({ proxy: up.url, middleware, port: 0 }, async (server) => {
    const hostPorts = (await listeningPorts()).filter((p) => !before.has(p) && p !== server.port)
    assert.equal(hostPorts.length, 1, `one new listening port besides the proxy: ${hostPorts}`)
    const res = await request(`http://127.0.0.1:${hostPorts[0]}/x`, { headers: { 'x-devproxy-middleware': 'guess' } })
    assert.equal(res.status, 403)
    assert.equal(ran, 0)
    assert.equal((await request(server.url + '/x')).body.toString(), 'ok')
    assert.equal(ran, 1)
  })
})

test('stop() closes the middleware host', async () => {
  const before = new Set(await listeningPorts())
  const server = await lib().start({ proxy: up.url, middleware: [(req, res) => res.end()], port: 0, quiet: true })
  const during = (await listeningPorts()).filter((p) => !before.has(p))
  assert.equal(during.length, 2, 'proxy and host listen')
  await server.stop()
  const after = (await listeningPorts()).filter((p) => !before.has(p))
  assert.deepEqual(after, [])
})

test('bad middleware entries are refused naming the entry', async () => {
  await assert.rejects(lib().start({ proxy: up.url, middleware: [() => {}, { route: '/x' }], port: 0, quiet: true }), /middleware\[1\]/)
})

/** TCP ports this process listens on (Linux /proc/net/tcp, state 0A), so tests see servers JS cannot name. */
async function listeningPorts() {
  const fs = require('node:fs/promises')
  const inodes = new Set()
  for (const fd of await fs.readdir('/proc/self/fd')) {
    const link = await fs.readlink(`/proc/self/fd/${fd}`).catch(() => '')
    const m = /^socket:\[(\d+)\]$/.exec(link)
    if (m) inodes.add(m[1])
  }
  const ports = []
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await fs.readFile(file, 'utf8').catch(() => '')
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/)
      if (cols[3] === '0A' && inodes.has(cols[9])) ports.push(parseInt(cols[1].split(':')[1], 16))
    }
  }
  return ports
}
