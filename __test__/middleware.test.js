'use strict'
// Connect-style `middleware` / `proxy.middleware` on Node's own http objects, before the proxy.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const crypto = require('node:crypto')
const { request, withProxy, withTimeout, fileUpstream, ACCEPT_HTML, lib, stopIfStarted, tapStderr } = require('./helpers')

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
  await assert.rejects(stopIfStarted(lib().start({ proxy: up.url, middleware: [() => {}, { route: '/x' }], port: 0, quiet: true })), /middleware\[1\]/)
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

test('the middleware see the request without the proxy\'s own headers; the client\'s raw header lines stay in order, in pairs', async () => {
  const seen = []
  const middleware = [(req, res, next) => { seen.push({ headers: { ...req.headers }, raw: [...req.rawHeaders] }); next() }]
  await withProxy({ proxy: up.url, middleware, port: 0 }, async (server) => {
    const res = await request(server.url + '/echo', { headers: { 'x-first': 'one', 'x-repeated': ['a', 'b'], 'x-last': 'two' } })
    assert.equal(res.status, 200)
    const { headers, raw } = seen[0]
    assert.equal(raw.length % 2, 0)
    const names = raw.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase())
    for (const own of ['x-devproxy-middleware', 'x-devproxy-return']) {
      assert.equal(headers[own], undefined, `${own} in req.headers`)
      assert.ok(!names.includes(own), `${own} in req.rawHeaders: ${raw}`)
    }
    const pairs = []
    for (let i = 0; i < raw.length; i += 2) if (raw[i].toLowerCase().startsWith('x-')) pairs.push(`${raw[i].toLowerCase()}: ${raw[i + 1]}`)
    assert.deepEqual(pairs, ['x-first: one', 'x-repeated: a', 'x-repeated: b', 'x-last: two'])
    assert.equal(headers.host, `127.0.0.1:${server.port}`)
    assert.ok(names.includes('host'))
    // What went on through next() is the client's request, the proxy's return ticket spent, not echoed.
    const echoed = JSON.parse(res.body).headers
    assert.equal(echoed['x-repeated'], 'a, b')
    assert.equal(echoed['x-devproxy-return'], undefined)
  })
})

test('no middleware (none, undefined, null): the proxy serves; null top-level middleware leaves proxy.middleware in force, without a warning', async () => {
  for (const middleware of [undefined, null, []]) {
    await withProxy({ proxy: up.url, middleware, port: 0 }, async (server) => {
      assert.equal(JSON.parse((await request(server.url + '/echo')).body).url, '/echo', `middleware: ${middleware}`)
    })
  }
  const stderr = await capturingStderr(async () => {
    await withProxy({ proxy: { target: up.url, middleware: (req, res) => res.end('from proxy.middleware') }, middleware: null, port: 0 }, async (server) => {
      assert.equal((await request(server.url + '/any')).body.toString(), 'from proxy.middleware')
    })
    await withProxy({ proxy: up.url, middleware: (req, res) => res.end('top only'), port: 0 }, async (server) => {
      assert.equal((await request(server.url + '/any')).body.toString(), 'top only')
    })
    await withProxy({ proxy: { target: up.url, middleware: null }, middleware: (req, res) => res.end('top, proxy.middleware null'), port: 0 }, async (server) => {
      assert.equal((await request(server.url + '/any')).body.toString(), 'top, proxy.middleware null')
    })
    await withProxy({ proxy: { target: up.url, middleware: null }, port: 0 }, async (server) => {
      assert.equal(JSON.parse((await request(server.url + '/echo')).body).url, '/echo', 'proxy.middleware: null alone')
    })
  })
  assert.doesNotMatch(stderr, /\[devproxy\]/, 'no warning when only one of them is given (nor any other)')
})

test('{ handle } without a route runs for every path; bad entries of either option are refused naming the entry and the problem', async () => {
  const seen = []
  await withProxy({ proxy: up.url, middleware: [{ handle: (req, res) => { seen.push(req.url); res.end('any') } }], port: 0 }, async (server) => {
    assert.equal((await request(server.url + '/a/b?c')).body.toString(), 'any')
    assert.equal((await request(server.url + '/')).body.toString(), 'any')
    assert.deepEqual(seen, ['/a/b?c', '/'])
  })
  const f = (req, res) => res.end()
  const refused = [
    [{ middleware: [f, null] }, /option `middleware\[1\]` must be a function \(req, res, next\) or \{ route, handle \}/],
    [{ middleware: 'x' }, /option `middleware` must be a function/],
    [{ middleware: [{ route: 5, handle: f }] }, /option `middleware\[0\]\.route` must be a string, got number/],
    [{ middleware: [{ route: null, handle: f }] }, /option `middleware\[0\]\.route` must be a string, got object/],
    [{ proxyMiddleware: [f, { route: '/x' }] }, /option `proxy\.middleware\[1\]` must be a function/],
  ]
  for (const [options, message] of refused) {
    const { proxyMiddleware, ...rest } = options
    const proxy = proxyMiddleware === undefined ? up.url : { target: up.url, middleware: proxyMiddleware }
    await assert.rejects(stopIfStarted(lib().start({ proxy, port: 0, quiet: true, ...rest })), (err) => err instanceof TypeError && message.test(err.message), JSON.stringify(rest))
  }
})

test('next() with a value that is not an Error: the 500 page says what it was called with', async () => {
  const middleware = [
    (req, res, next) => {
      if (req.url === '/string') return next('plain reason')
      if (req.url === '/object') return next({ code: 42 })
      if (req.url === '/symbol') return next(Symbol('odd'))
      next()
    },
  ]
  await withProxy({ proxy: up.url, middleware, port: 0 }, async (server) => {
    for (const [path, said] of [['/string', 'next() was called with plain reason'], ['/object', 'next() was called with {"code":42}'], ['/symbol', 'next() was called with Symbol(odd)']]) {
      const res = await request(server.url + path)
      assert.equal(res.status, 500, path)
      assert.match(res.headers['content-type'], /^text\/html/)
      const body = res.body.toString()
      assert.ok(body.includes(said.replace(/"/g, '&quot;')) || body.includes(said), `${path}: ${body}`)
    }
  })
})

test('the middleware host\'s refusal is a plain 403 that names no secret', async () => {
  const before = new Set(await listeningPorts())
  await withProxy({ proxy: up.url, middleware: [(req, res) => res.end('ok')], port: 0 }, async (server) => {
    const [hostPort] = (await listeningPorts()).filter((p) => !before.has(p) && p !== server.port)
    for (const headers of [{}, { 'x-devproxy-middleware': 'x'.repeat(48) }]) {
      const res = await request(`http://127.0.0.1:${hostPort}/x`, { headers })
      assert.equal(res.status, 403)
      assert.equal(res.headers['content-type'], 'text/plain')
      assert.equal(res.body.toString(), 'not for you\n')
    }
    assert.equal((await request(server.url + '/x')).body.toString(), 'ok', 'the host still serves the proxy')
  })
})

test('next() reaches the proxy whichever address it listens on (::1, 0.0.0.0, ::)', async () => {
  const middleware = [(req, res, next) => { req.headers['x-added-by-mw'] = 'yes'; next() }]
  for (const listen of ['::1', '0.0.0.0', '::']) {
    await withProxy({ proxy: up.url, middleware, listen, port: 0 }, async (server) => {
      const res = await request(`http://${listen === '::1' || listen === '::' ? '[::1]' : '127.0.0.1'}:${server.port}/echo`)
      assert.equal(res.status, 200, `listen ${listen}: ${res.body}`)
      assert.equal(JSON.parse(res.body).headers['x-added-by-mw'], 'yes', `listen ${listen}`)
    })
  }
  // Where the host dials: a wildcard on loopback (Linux takes 0.0.0.0 and :: as a destination, so the
  // requests above pass either way; Windows refuses them).
  const { dialAddress } = require('../lib/middleware.js')
  assert.deepEqual(
    ['http://0.0.0.0:3000', 'https://[::]:3001', 'http://[::1]:3002', 'http://127.0.0.1:3003', 'https://localhost:3004'].map(dialAddress),
    [
      { host: '127.0.0.1', port: 3000 },
      { host: '::1', port: 3001 },
      { host: '::1', port: 3002 },
      { host: '127.0.0.1', port: 3003 },
      { host: 'localhost', port: 3004 },
    ],
  )
})

/** The addresses this process listens on (TCP, from /proc): its own sockets only, by inode. */
function listeningAddresses() {
  const fs = require('node:fs')
  const inodes = new Set()
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/self/fd/${fd}`))?.[1]
      if (inode) inodes.add(inode)
    } catch {} // closed since the listing
  }
  const addresses = []
  for (const file of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    for (const line of fs.readFileSync(file, 'utf8').trim().split('\n').slice(1)) {
      const [, local, , state, , , , , , inode] = line.trim().split(/\s+/)
      // 0A: LISTEN. The address is hex, in 32-bit words of the host's (little-endian) order.
      if (state !== '0A' || !inodes.has(inode)) continue
      const [hex, port] = local.split(':')
      const bytes = hex.match(/.{8}/g).flatMap((word) => Buffer.from(word, 'hex').reverse().toJSON().data)
      const address = bytes.length === 4 ? bytes.join('.') : (bytes.every((b, i) => b === (i === 15 ? 1 : 0)) ? '::1' : Buffer.from(bytes).toString('hex'))
      addresses.push(`${address} ${parseInt(port, 16)}`)
    }
  }
  return addresses
}

test('with middleware, the process listens on loopback only: the host too (its token is no substitute)', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const before = new Set(listeningAddresses())
  await withProxy({ proxy: up.url, port: 0, middleware: [(req, res, next) => next()] }, async (server) => {
    const added = listeningAddresses().filter((address) => !before.has(address))
    assert.equal(added.length, 2, `the proxy and the middleware host: ${added.join(', ')}`)
    assert.ok(added.includes(`127.0.0.1 ${server.port}`), added.join(', '))
    for (const address of added) assert.match(address, /^(127\.\d+\.\d+\.\d+|::1) \d+$/)
  })
})

test('a body parser before next(): what it left in req.body goes on (JSON, form, raw); none, when the body is gone, is a 500 naming it', async () => {
  const bodyParser = require('body-parser')
  const middleware = [
    bodyParser.json(),
    bodyParser.urlencoded({ extended: false }),
    bodyParser.text(),
    bodyParser.raw({ type: 'application/x-raw' }),
    bodyParser.json({ type: 'application/vnd.api+json' }),
    (req, res, next) => {
      if (req.url === '/echo?odd-object') {
        req.resume()
        req.body = { odd: true }
        return req.on('end', next)
      }
      if (req.url === '/echo?json') req.body.added = 'by middleware'
      if (req.url === '/echo?drained') delete req.body
      next()
    },
  ]
  await withProxy({ proxy: up.url, middleware, port: 0 }, async (server) => {
    const send = (query, type, body) => request(`${server.url}/echo?${query}`, { method: 'POST', body, headers: { 'content-type': type }, timeout: 10000 })
    const sha = (text) => crypto.createHash('sha256').update(text).digest('hex')

    const json = await send('json', 'application/json', JSON.stringify({ a: 1 }))
    const sentJson = JSON.stringify({ a: 1, added: 'by middleware' })
    assert.deepEqual([json.status, JSON.parse(json.body).bodySha], [200, sha(sentJson)])
    assert.equal(JSON.parse(json.body).headers['content-length'], String(Buffer.byteLength(sentJson)))

    const form = await send('form', 'application/x-www-form-urlencoded', 'a=1&b=%C3%A9')
    assert.deepEqual([form.status, JSON.parse(form.body).bodySha], [200, sha('a=1&b=%C3%A9')])

    const text = await send('text', 'text/plain; charset=utf-8', 'héllo')
    assert.deepEqual([text.status, JSON.parse(text.body).bodySha], [200, sha('héllo')])

    // A parser for another type leaves the stream alone: it streams on as sent.
    const other = await send('other', 'application/octet-stream', Buffer.from([0, 1, 2, 255]))
    assert.deepEqual([other.status, JSON.parse(other.body).bodyLength], [200, 4])

    // A chunked upload (no Content-Length: a stream): the body sent on has a length, and no chunked
    // framing besides (both would be ambiguous framing, which the proxy refuses).
    const chunked = await new Promise((resolve, reject) => {
      const req = http.request(`${server.url}/echo?chunked`, { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
        const chunks = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }))
      })
      req.on('error', reject)
      req.write('{"a":')
      setTimeout(() => req.end('2}'), 20)
    })
    assert.equal(chunked.status, 200, chunked.body.toString())
    assert.equal(JSON.parse(chunked.body).bodySha, sha('{"a":2}'))
    assert.equal(JSON.parse(chunked.body).headers['transfer-encoding'], undefined)

    // body-parser's raw parser leaves a Buffer; a JSON type with a suffix (RFC 6839) is JSON too.
    const raw = await request(`${server.url}/echo?raw`, { method: 'POST', body: Buffer.from([1, 2, 3]), headers: { 'content-type': 'application/x-raw' }, timeout: 10000 })
    assert.deepEqual([raw.status, JSON.parse(raw.body).bodySha], [200, sha(Buffer.from([1, 2, 3]))])
    const suffixed = await send('suffixed', 'application/vnd.api+json', '{"data":[]}')
    assert.deepEqual([suffixed.status, JSON.parse(suffixed.body).bodySha], [200, sha('{"data":[]}')])
    // An object for a type that has no encoding here: refused, naming the type.
    const odd = await send('odd-object', 'application/x-odd', 'x')
    assert.equal(odd.status, 500)
    assert.match(odd.body.toString(), /with a req\.body the proxy cannot send \(an object, content type &quot;application\/x-odd&quot;\)/)

    const drained = await send('drained', 'application/json', '{"a":1}')
    assert.equal(drained.status, 500)
    assert.match(drained.body.toString(), /a middleware read the body of POST \/echo\?drained and called next\(\) with no req\.body/)
    assert.equal((await request(server.url + '/echo')).status, 200, 'the proxy keeps serving')
  })
  // A GET whose (empty) stream a middleware read goes on without a body, and without a Content-Length added.
  const readsAll = (req, res, next) => { req.resume(); req.on('end', next) }
  await withProxy({ proxy: up.url, middleware: [readsAll], port: 0 }, async (server) => {
    const res = await request(server.url + '/echo', { timeout: 10000 })
    assert.equal(res.status, 200)
    assert.equal(JSON.parse(res.body).headers['content-length'], undefined)
  })
})

test('a middleware that failed after sending the head: the client\'s response is cut, the proxy keeps serving', async () => {
  const middleware = [(req, res, next) => {
    if (req.url !== '/late') return next()
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('partial ')
    setTimeout(() => next(new Error('failed late')), 20)
  }]
  await withProxy({ proxy: up.url, middleware, port: 0 }, async (server) => {
    await assert.rejects(request(server.url + '/late', { timeout: 10000 }), (err) => err.aborted === true || err.code === 'ECONNRESET')
    assert.equal((await request(server.url + '/echo')).status, 200)
  })
})

test('through next(), an upstream that dies mid-body cuts the client\'s response; a client that leaves closes the upstream request', async () => {
  let upstreamClosed
  const closed = new Promise((resolve) => { upstreamClosed = resolve })
  routes['/dies'] = (req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' })
    res.write(Buffer.alloc(1000, 1))
    setTimeout(() => res.destroy(), 50)
  }
  routes['/endless'] = (req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' })
    const timer = setInterval(() => res.write(Buffer.alloc(1000, 2)), 10)
    res.on('close', () => { clearInterval(timer); upstreamClosed() })
  }
  try {
    await withProxy({ proxy: up.url, middleware: [(req, res, next) => next()], port: 0 }, async (server) => {
      await assert.rejects(request(server.url + '/dies', { timeout: 10000 }), (err) => err.aborted === true || err.code === 'ECONNRESET')
      let received = 0
      const leaving = request(server.url + '/endless', {
        timeout: 10000,
        onData: (chunk, res) => {
          received += chunk.length
          if (received >= 3000) res.destroy()
        },
      }).catch(() => {})
      await withTimeout(closed, 10000, 'the upstream request closed after the client left')
      await leaving
      assert.equal((await request(server.url + '/echo')).status, 200)
    })
  } finally {
    delete routes['/dies']
    delete routes['/endless']
  }
})

async function capturingStderr(fn) {
  const stderr = tapStderr()
  try {
    await fn()
  } finally {
    stderr.restore()
  }
  return stderr.text()
}

test('through next(), the client gets the target\'s answer as the proxy alone gives it: status, header names and order, repeated Set-Cookie', async () => {
  routes['/headers'] = (req, res) => {
    res.sendDate = false
    res.writeHead(201, { 'X-Custom-Case': 'A', 'Set-Cookie': ['a=1; Path=/', 'b=2; HttpOnly'], 'Cache-Control': 'no-store', 'content-type': 'text/plain' })
    res.end('made')
  }
  const answer = async (options) =>
    withProxy({ proxy: up.url, port: 0, serverTiming: false, ...options }, async (server) => {
      const res = await request(server.url + '/headers')
      const raw = []
      for (let i = 0; i < res.rawHeaders.length; i += 2) {
        // only the connection's own framing may differ (keep-alive from one hop or another)
        if (!['date', 'connection', 'keep-alive'].includes(res.rawHeaders[i].toLowerCase())) raw.push(res.rawHeaders[i], res.rawHeaders[i + 1])
      }
      return { status: res.status, raw, body: res.body.toString() }
    })
  try {
    const direct = await answer({})
    assert.equal(direct.status, 201)
    assert.deepEqual(direct.raw.filter((_, i) => i % 2 === 0 && /set-cookie/i.test(direct.raw[i])).length, 2)
    assert.deepEqual(await answer({ middleware: [(req, res, next) => next()] }), direct)
  } finally {
    delete routes['/headers']
  }
})

test('a process whose server has middleware (one request went through next()) exits after unref(), and after stop()', async () => {
  const { spawnNode } = require('./helpers')
  const GC_CHILD = require('node:path').join(__dirname, 'fixtures/gc-child.js')
  for (const ending of ['unref', 'stop']) {
    const child = spawnNode(GC_CHILD, ['middleware', up.url], {}, ['--expose-gc'])
    try {
      const { url } = await child.next('started')
      await child.next('serving')
      // keep-alive connections between the proxy and its middleware host exist from here on
      for (let i = 0; i < 3; i++) assert.equal((await request(url + '/echo')).status, 200)
      child.send({ type: ending })
      const { code, signal } = await withTimeout(child.exited, 10000, `the process to exit after ${ending}()`)
      assert.deepEqual({ code, signal }, { code: 0, signal: null }, child.output().stderr)
    } finally {
      await child.kill()
    }
  }
})

test('proxy: null, with or without middleware, is refused with the message about proxy (not a failed middleware lookup)', async () => {
  for (const middleware of [undefined, [(req, res, next) => next()]]) {
    await assert.rejects(stopIfStarted(lib().start({ proxy: null, middleware, port: 0, quiet: true })), /option `proxy` is required/)
  }
})

test('a middleware that read the body itself: req.body null, a number or an object without a type is refused naming it; a form type with parameters is a form; an empty body goes on empty; a chunked one with nothing left is refused', async () => {
  const reads = (req, res, next) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      const query = req.url.split('?')[1]
      if (query === 'null') req.body = null
      if (query === 'number') req.body = 42
      if (query === 'untyped' || query === 'form') req.body = { a: '1', b: 'é' }
      next()
    })
  }
  await withProxy({ proxy: up.url, middleware: [reads], port: 0, serverTiming: false }, async (server) => {
    const send = (query, headers, body) => request(`${server.url}/echo?${query}`, { method: 'POST', body, headers, timeout: 10000 })
    const refused = async (query, headers, body, what) => {
      const res = await send(query, headers, body)
      assert.equal(res.status, 500, query)
      const text = res.body.toString()
      assert.match(text, new RegExp(`a middleware read the body of POST /echo\\?${query} and called next\\(\\) with ${what}`), query)
      assert.match(text, /set req\.body to the body to send on \(a Buffer, a string, or an object for a JSON or form content type\)/, query)
    }
    await refused('null', { 'content-type': 'application/json' }, '{}', 'a req\\.body the proxy cannot send \\(null\\)')
    await refused('number', { 'content-type': 'application/json' }, '42', 'a req\\.body the proxy cannot send \\(number\\)')
    await refused('untyped', {}, 'a=1', 'a req\\.body the proxy cannot send \\(an object, content type missing\\)')
    // The media type decides, not a parameter that names another one.
    const form = await send('form', { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8; profile="application/json"' }, 'x')
    assert.equal(form.status, 200, form.body.toString())
    const sentForm = 'a=1&b=%C3%A9'
    assert.equal(JSON.parse(form.body).bodySha, crypto.createHash('sha256').update(sentForm).digest('hex'))
    // Content-Length: 0 listened to its end: no bytes are read (Node's readableDidRead stays false), it goes on as it came.
    const empty = await send('empty', { 'content-type': 'application/json', 'content-length': '0' })
    assert.equal(empty.status, 200, empty.body.toString())
    assert.deepEqual([JSON.parse(empty.body).bodyLength, JSON.parse(empty.body).headers['content-length']], [0, '0'])
    // A chunked upload read to its end, with no req.body: the body announced is gone.
    const chunked = await new Promise((resolve, reject) => {
      const req = http.request(`${server.url}/echo?chunked`, { method: 'POST', headers: { 'content-type': 'text/plain' }, agent: false }, (res) => {
        const chunks = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }))
      })
      req.on('error', reject)
      req.write('some ')
      setTimeout(() => req.end('text'), 20)
    })
    assert.equal(chunked.status, 500)
    assert.match(chunked.body, /read the body of POST \/echo\?chunked and called next\(\) with no req\.body/)
  })
})

test('next() called after the server stopped: the request back to the proxy fails quietly, the process carries on', async () => {
  let held
  const holding = new Promise((resolve) => { held = resolve })
  const server = await lib().start({ proxy: up.url, port: 0, quiet: true, middleware: [(req, res, next) => held(next)] })
  const asked = request(server.url + '/echo', { timeout: 10000 }).catch((err) => err)
  const next = await withTimeout(holding, 10000, 'the middleware to be reached')
  await server.stop()
  const failures = []
  const onError = (err) => failures.push(err)
  process.on('uncaughtException', onError)
  try {
    next()
    // the request to the stopped proxy is refused at once on loopback; its error comes within a few turns
    await new Promise((resolve) => setTimeout(resolve, 200))
  } finally {
    process.off('uncaughtException', onError)
  }
  assert.deepEqual(failures, [])
  const answer = await asked
  assert.ok(answer instanceof Error || answer.status >= 500, 'the client got no success')
})
