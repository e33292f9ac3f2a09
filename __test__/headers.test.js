'use strict'
// Request and response headers, request bodies, redirects, cookies, methods and status codes.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const crypto = require('node:crypto')
const { deferred, withTimeout, startUpstream, request, withProxy, ACCEPT_HTML, fileUpstream } = require('./helpers')

const routes = {}
const up = fileUpstream(routes)

routes['/echo'] = (req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers }))
}

test('Host is the target host; Origin and Referer from the local origin are rewritten to the target origin', async () => {
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const local = `http://127.0.0.1:${server.port}`
    const n = up.requests.length
    await request(server.url + '/echo?q=1', { headers: { origin: local, referer: `${local}/from/page?x=1#h` } })
    const seen = up.requests[n]
    assert.equal(seen.headers.host, up.host)
    assert.equal(seen.headers.origin, up.url)
    assert.equal(seen.headers.referer, `${up.url}/from/page?x=1#h`)
    assert.equal(seen.url, '/echo?q=1')
  })
})

test('Origin and Referer of another origin are left alone', async () => {
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const n = up.requests.length
    await request(server.url + '/echo', { headers: { origin: 'http://elsewhere.test', referer: 'http://elsewhere.test/page' } })
    assert.equal(up.requests[n].headers.origin, 'http://elsewhere.test')
    assert.equal(up.requests[n].headers.referer, 'http://elsewhere.test/page')
  })
})

test('reqHeaders are added to every upstream request', async () => {
  await withProxy({ proxy: { target: up.url, reqHeaders: { 'X-Dev-Proxy': 'yes', 'x-token': 'abc 123' } }, port: 0 }, async (server) => {
    const n = up.requests.length
    await request(server.url + '/echo', { headers: { 'x-client': '1' } })
    await request(server.url + '/echo', { method: 'POST', body: 'x' })
    for (const seen of up.requests.slice(n)) {
      assert.equal(seen.headers['x-dev-proxy'], 'yes')
      assert.equal(seen.headers['x-token'], 'abc 123')
    }
    assert.equal(up.requests[n].headers['x-client'], '1', 'client headers are still forwarded')
  })
})

test('hop-by-hop headers are dropped in both directions', async () => {
  routes['/hop'] = (req, res) => {
    res.setHeader('content-type', 'text/plain')
    res.setHeader('x-resp-hop', 'secret')
    res.setHeader('connection', 'keep-alive, X-Resp-Hop')
    res.setHeader('keep-alive', 'timeout=7, max=3')
    res.setHeader('x-normal', 'kept')
    res.end('ok')
  }
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const n = up.requests.length
    const res = await request(server.url + '/hop', {
      headers: {
        connection: 'keep-alive, X-Client-Hop',
        'keep-alive': 'timeout=30',
        'x-client-hop': 'hop',
        te: 'trailers',
        'x-end-to-end': 'e2e',
      },
    })
    assert.equal(res.status, 200)
    const h = up.requests[n].headers
    assert.equal(h['x-end-to-end'], 'e2e')
    assert.equal(h['keep-alive'], undefined, 'Keep-Alive forwarded upstream')
    assert.equal(h['x-client-hop'], undefined, 'header named in Connection forwarded upstream')
    assert.ok(!/x-client-hop/i.test(h.connection || ''), `Connection forwarded as-is: ${h.connection}`)
    assert.ok(!/trailers/i.test(h.te || ''), `TE forwarded: ${h.te}`)
    assert.equal(res.headers['x-normal'], 'kept')
    assert.equal(res.headers['x-resp-hop'], undefined, 'header named in the upstream Connection forwarded to the client')
    // the proxy may send its own Keep-Alive for its own connection, but not the upstream's
    assert.notEqual(res.headers['keep-alive'], 'timeout=7, max=3', 'upstream Keep-Alive forwarded to the client')
  })
})

test('a 5 MB POST body is streamed upstream intact (upstream echoes its sha256)', async () => {
  routes['/sha'] = (req, res) => {
    const h = crypto.createHash('sha256')
    let n = 0
    req.on('data', (c) => {
      h.update(c)
      n += c.length
    })
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ sha: h.digest('hex'), n }))
    })
  }
  const body = crypto.randomBytes(5 * 1024 * 1024)
  const sha = crypto.createHash('sha256').update(body).digest('hex')
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const res = await request(server.url + '/sha', { method: 'POST', body, headers: { 'content-type': 'application/octet-stream' }, timeout: 30000 })
    assert.equal(res.status, 200)
    assert.deepEqual(JSON.parse(res.body), { sha, n: body.length })
  })
})

test('a chunked request body reaches the upstream before the client has finished sending it', async () => {
  const upstreamGotFirst = deferred()
  routes['/stream-in'] = (req, res) => {
    const chunks = []
    req.on('data', (c) => {
      chunks.push(c)
      if (Buffer.concat(chunks).includes('part-one')) upstreamGotFirst.resolve()
    })
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end(Buffer.concat(chunks))
    })
  }
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const done = deferred()
    const req = http.request(server.url + '/stream-in', { method: 'POST', agent: false, headers: { 'content-type': 'text/plain' } })
    req.on('error', done.reject)
    req.on('response', (res) => {
      const c = []
      res.on('data', (d) => c.push(d))
      res.on('end', () => done.resolve({ status: res.statusCode, body: Buffer.concat(c).toString() }))
      res.on('error', done.reject)
    })
    req.flushHeaders()
    req.write('part-one|')
    try {
      await withTimeout(upstreamGotFirst.promise, 5000, 'the first body chunk at the upstream (request body buffered?)')
    } catch (err) {
      req.destroy()
      throw err
    }
    req.end('part-two')
    const res = await withTimeout(done.promise, 10000, 'response')
    assert.equal(res.status, 200)
    assert.equal(res.body, 'part-one|part-two')
  })
})

test('request trailers reach the target where the body goes as it came (any type, and text nothing was replaced in); a rewritten body leaves them out', async () => {
  routes['/trailers'] = (req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      // Not JSON: rewriteJson would turn the target's origin in the echo back into the proxy's.
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end(JSON.stringify({ body: Buffer.concat(chunks).toString('latin1'), trailers: req.trailers }))
    })
  }
  const net = require('node:net')
  await withProxy({ proxy: up.url, port: 0, quiet: true }, async (server) => {
    const local = `127.0.0.1:${server.port}`
    // A chunked POST over a raw socket, ending with `x-checksum`; the JSON the target answered with.
    const send = (type, pieces) =>
      withTimeout(new Promise((resolve, reject) => {
        const socket = net.connect(server.port, '127.0.0.1')
        const chunks = pieces.map((p) => `${Buffer.byteLength(p, 'latin1').toString(16)}\r\n${p}\r\n`).join('')
        // write, not end: a client that half-closes is one that went away (hyper's default).
        socket.write(`POST /trailers HTTP/1.1\r\nHost: ${local}\r\nContent-Type: ${type}\r\nTransfer-Encoding: chunked\r\nTrailer: x-checksum\r\nConnection: close\r\n\r\n${chunks}0\r\nx-checksum: abc123\r\n\r\n`, 'latin1')
        const got = []
        socket.on('data', (d) => got.push(d))
        socket.on('error', reject)
        socket.on('end', () => {
          const text = Buffer.concat(got).toString('latin1')
          const [head, body] = text.split('\r\n\r\n')
          if (!head.startsWith('HTTP/1.1 200')) return reject(new Error(head))
          // The proxy answers chunked or with a length: take the JSON either way.
          resolve(JSON.parse(body.slice(body.indexOf('{'), body.lastIndexOf('}') + 1)))
        })
      }), 10000, `the ${type} upload`)
    for (const [type, pieces] of [
      ['application/octet-stream', ['\x01binary', ` http://${local}/x`]],
      ['text/plain', ['nothing of ', 'the proxy here']],
      ['application/json', ['{"a":', '1}']],
    ]) {
      const seen = await send(type, pieces)
      assert.equal(seen.body, pieces.join(''), `${type}: the body as it came`)
      assert.deepEqual(seen.trailers, { 'x-checksum': 'abc123' }, `${type}: its trailers too`)
    }
    const rewritten = await send('text/plain', ['see ', `http://${local}/x`])
    assert.equal(rewritten.body, `see ${up.url}/x`, 'the text rewritten')
    assert.deepEqual(rewritten.trailers, {}, 'the trailers of a rewritten body are left out')
  })
})

test('Location on redirects pointing at the target is rewritten to the local origin; others are kept', async () => {
  routes['/redir'] = (req, res) => {
    const q = new URL(req.url, 'http://x').searchParams
    res.writeHead(Number(q.get('status')), { location: q.get('to'), 'content-type': 'text/plain' })
    res.end('moved')
  }
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const local = `http://127.0.0.1:${server.port}`
    for (const status of [201, 301, 302, 307, 308]) {
      const to = `${up.url}/next/page?a=1&b=%20#frag`
      const res = await request(`${server.url}/redir?status=${status}&to=${encodeURIComponent(to)}`)
      assert.equal(res.status, status)
      assert.equal(res.headers.location, `${local}/next/page?a=1&b=%20#frag`, `status ${status}`)
    }
    for (const to of ['http://elsewhere.test/x', '/relative/path?z=1', `http://127.0.0.1:${up.port + 1 === server.port ? up.port + 2 : up.port + 1}/other-port`]) {
      const res = await request(`${server.url}/redir?status=302&to=${encodeURIComponent(to)}`)
      assert.equal(res.headers.location, to, `foreign/relative Location ${to} must be kept`)
    }
  })
})

test('Set-Cookie loses Domain= and keeps Secure, HttpOnly, SameSite, Path, Expires, Max-Age; several cookies stay separate', async () => {
  const cookies = [
    'sid=abc123; Domain=127.0.0.1; Path=/; Expires=Wed, 21 Oct 2037 07:28:00 GMT; Secure; HttpOnly; SameSite=Lax',
    'pref=dark; domain=.127.0.0.1; Path=/app; Max-Age=3600; SameSite=None; Secure',
    'plain=1',
  ]
  routes['/cookies'] = (req, res) => {
    res.setHeader('set-cookie', cookies)
    res.end('ok')
  }
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const res = await request(server.url + '/cookies')
    const got = res.headers['set-cookie']
    assert.ok(Array.isArray(got) && got.length === 3, `expected 3 Set-Cookie headers, got ${JSON.stringify(got)}`)
    for (const c of got) assert.ok(!/domain=/i.test(c), `Domain kept in ${c}`)
    const attrs = (c) => c.split(';').map((s) => s.trim().toLowerCase())
    const a0 = attrs(got[0])
    assert.equal(a0[0], 'sid=abc123')
    for (const want of ['path=/', 'expires=wed, 21 oct 2037 07:28:00 gmt', 'secure', 'httponly', 'samesite=lax']) assert.ok(a0.includes(want), `${want} missing in ${got[0]}`)
    const a1 = attrs(got[1])
    assert.equal(a1[0], 'pref=dark')
    for (const want of ['path=/app', 'max-age=3600', 'samesite=none', 'secure']) assert.ok(a1.includes(want), `${want} missing in ${got[1]}`)
    assert.equal(got[2], 'plain=1')
  })
})

test('cookies: { stripDomain: false } keeps Domain=', async () => {
  routes['/cookie-domain'] = (req, res) => {
    res.setHeader('set-cookie', 'sid=1; Domain=127.0.0.1; Path=/; Secure')
    res.end('ok')
  }
  await withProxy({ proxy: { target: up.url, cookies: { stripDomain: false } }, port: 0 }, async (server) => {
    const res = await request(server.url + '/cookie-domain')
    assert.match(res.headers['set-cookie'][0], /Domain=127\.0\.0\.1/)
    assert.match(res.headers['set-cookie'][0], /Secure/)
  })
})

test('methods, paths with odd characters, status codes and custom response headers pass through', async () => {
  routes['/status'] = (req, res) => {
    const code = Number(new URL(req.url, 'http://x').searchParams.get('code'))
    res.writeHead(code, { 'x-upstream': 'yes', 'content-type': 'text/plain' })
    res.end(code === 204 || code === 304 ? undefined : `status ${code}`)
  }
  routes['/a%20b/%C3%A9'] = routes['/echo']
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    for (const code of [200, 404, 418, 500, 503]) {
      const res = await request(`${server.url}/status?code=${code}`, { headers: { accept: ACCEPT_HTML } })
      assert.equal(res.status, code)
      assert.equal(res.headers['x-upstream'], 'yes')
      assert.equal(res.body.toString(), `status ${code}`)
    }
    for (const code of [204, 304]) {
      const res = await request(`${server.url}/status?code=${code}`)
      assert.equal(res.status, code)
      assert.equal(res.body.length, 0)
    }
    for (const method of ['PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      const res = await request(`${server.url}/echo?m=${method}&x=%2F%3F`, { method, body: method === 'DELETE' || method === 'OPTIONS' ? undefined : 'payload' })
      const seen = JSON.parse(res.body)
      assert.equal(seen.method, method)
      assert.equal(seen.url, `/echo?m=${method}&x=%2F%3F`)
    }
    const res = await request(`${server.url}/a%20b/%C3%A9?k=v`)
    assert.equal(JSON.parse(res.body).url, '/a%20b/%C3%A9?k=v')
    const head = await request(`${server.url}/status?code=200`, { method: 'HEAD' })
    assert.equal(head.status, 200)
    assert.equal(head.headers['x-upstream'], 'yes')
    assert.equal(head.body.length, 0)
  })
})

test('percent-encoded origins of the target come back to the proxy: in pages, in Location and in Refresh (and Refresh\'s url=)', async () => {
  const site = await startUpstream({
    '/login': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end(`<html><body><form action="/login?redirect_to=${encodeURIComponent(site.url + '/admin/')}"></form></body></html>`)
    },
    '/go': (req, res) => {
      res.writeHead(302, { location: `${site.url}/login?redirect_to=${encodeURIComponent(site.url + '/admin/')}` })
      res.end()
    },
    '/later': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', refresh: `3; url=${site.url}/login?r=${encodeURIComponent(site.url)}` })
      res.end('wait')
    },
  })
  try {
    await withProxy({ proxy: site.url, port: 0, quiet: true }, async (server) => {
      const local = `http://${new URL(server.url).host}`
      const page = await request(`${server.url}/login`, { headers: { accept: ACCEPT_HTML } })
      assert.match(page.body.toString(), new RegExp(`redirect_to=${encodeURIComponent(local + '/admin/').replace(/[.%]/g, '\\$&')}"`))
      const go = await request(`${server.url}/go`)
      assert.equal(go.headers.location, `${local}/login?redirect_to=${encodeURIComponent(local + '/admin/')}`)
      const later = await request(`${server.url}/later`)
      assert.equal(later.headers.refresh, `3; url=${local}/login?r=${encodeURIComponent(local)}`)
    })
  } finally {
    await site.close()
  }
})
