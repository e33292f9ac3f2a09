'use strict'
// Bad options, upstream failures, https targets.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const selfsigned = require('selfsigned')
const { lib, deferred, startUpstream, deadPort, occupyPort, request, withProxy, ACCEPT_HTML } = require('./helpers')

let up
const routes = {
  '/ok': (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end('<html><body>fine</body></html>')
  },
  '/destroy': (req) => req.socket.destroy(),
}
before(async () => {
  up = await startUpstream(routes)
})
after(async () => {
  await up.close()
})

/** start() must reject (or throw) with a message matching every regex in `res`. */
async function rejectsWith(options, res, label) {
  let server
  const err = await (async () => lib().start(options))().then(
    (s) => {
      server = s
      return null
    },
    (e) => e,
  )
  if (server) {
    await server.stop()
    assert.fail(`${label}: start() resolved, expected a rejection`)
  }
  assert.ok(err instanceof Error, `${label}: rejected with a non-Error: ${err}`)
  for (const re of res) assert.match(err.message, re, `${label}: message ${JSON.stringify(err.message)}`)
  return err
}

test('bad options reject with a message naming the culprit', async () => {
  await rejectsWith({ port: 0 }, [/proxy/i], 'missing proxy')
  await rejectsWith(undefined, [/proxy|option/i], 'no options at all')
  await rejectsWith({ proxy: 'http://[::1', port: 0 }, [/proxy|http:\/\/\[::1/i], 'invalid URL')
  await rejectsWith({ proxy: 'http://exa mple.test', port: 0 }, [/proxy|exa mple/i], 'invalid host')
  await rejectsWith({ proxy: 'ftp://127.0.0.1:21', port: 0 }, [/ftp/], 'unsupported scheme')
  await rejectsWith({ proxy: { target: 'ftp://127.0.0.1:21' }, port: 0 }, [/ftp/], 'unsupported scheme (object form)')
  await rejectsWith({ proxy: {}, port: 0 }, [/target|proxy/i], 'proxy object without target')
  await rejectsWith({ proxy: up.url, port: 'abc' }, [/port/i], 'port: "abc"')
  await rejectsWith({ proxy: up.url, port: 70000 }, [/port|70000/i], 'port out of range')
  await rejectsWith({ proxy: up.url, port: 0, rewriteRules: 5 }, [/rewriteRules/], 'rewriteRules: 5')
  await rejectsWith({ proxy: up.url, port: 0, rewriteRules: [{ replace: 'x' }] }, [/match/], 'rule without match')
  await rejectsWith({ proxy: up.url, port: 0, rewriteRules: [{ match: 5, replace: 'x' }] }, [/match/], 'rule with a numeric match')
})

test('unsupported regex features in rewriteRules are rejected, naming the rule and the feature', async () => {
  const ok = { match: /fine/g, replace: 'x' }
  const rule = /rewriteRules\[0\]|rule/i
  await rejectsWith({ proxy: up.url, port: 0, rewriteRules: [{ match: /(?=a)\uDE00/g, replace: '' }] }, [rule, /look-around in a pattern that names lone low surrogates/], 'look-around with a lone low surrogate')
  await rejectsWith({ proxy: up.url, port: 0, rewriteRules: [{ match: /(?<=[^a]*)b/g, replace: '' }] }, [rule, /lookbehind|look-behind|lookaround|look-around/i], 'lookbehind')
  await rejectsWith({ proxy: up.url, port: 0, rewriteRules: [{ match: /(a)\1/g, replace: '' }] }, [rule, /back.?reference/i], 'backreference')
  await rejectsWith({ proxy: up.url, port: 0, rewriteRules: [{ match: /[[a-c]--a]/giv, replace: '' }] }, [/rewriteRules\[0\]/, /a single character or \\q\{…\} subtracted with the `i` flag/], 'v flag: a character subtracted with i')
  // the culprit's index is named
  await rejectsWith({ proxy: up.url, port: 0, rewriteRules: [ok, { match: /x(?<=[^y]*)b/, replace: '' }] }, [/rewriteRules\[1\]|rule\s*#?\s*1\b/i], 'index of the bad rule')
})

test('rewrite() rejects the same unsupported features synchronously', () => {
  const { rewrite } = lib()
  assert.throws(() => rewrite('ab', [{ match: /(?=a)\uDE00/g, replace: '' }]), /look-around in a pattern that names lone low surrogates/)
  assert.throws(() => rewrite('ab', [{ match: /(?<=[^a]*)b/g, replace: '' }]), /lookbehind|look-behind|lookaround|look-around/i)
  assert.throws(() => rewrite('aa', [{ match: /(a)\1/g, replace: '' }]), /back.?reference/i)
  assert.throws(() => rewrite('a', [{ match: /[[a-c]--a]/iv, replace: '' }]), /subtracted with the `i` flag/)
  assert.throws(() => rewrite('a', 5), /rules/i)
  assert.throws(() => rewrite('a', [{ replace: 'x' }]), /match/)
})

test('a port in use with strictPort is rejected with a message naming the port and code EADDRINUSE; a good start afterwards works', async () => {
  // Without strictPort the proxy moves to the next free port, as Browsersync does (ports.test.js).
  const busy = await occupyPort(0)
  try {
    const err = await rejectsWith({ proxy: up.url, port: busy.port, host: '127.0.0.1', strictPort: true }, [new RegExp(String(busy.port))], 'port in use')
    assert.equal(err.code, 'EADDRINUSE')
  } finally {
    await busy.close()
  }
  // after failed starts the addon still works in the same process
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const res = await request(server.url + '/ok', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.status, 200)
    assert.equal(res.body.toString(), '<html><body>fine</body></html>')
  })
})

test('connection refused -> 502 with a short HTML page naming the target and the error', async () => {
  const port = await deadPort()
  const target = `http://127.0.0.1:${port}`
  await withProxy({ proxy: target, port: 0 }, async (server) => {
    const res = await request(server.url + '/anything', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.status, 502)
    assert.match(res.headers['content-type'] || '', /text\/html/)
    const body = res.body.toString()
    assert.ok(body.includes(`127.0.0.1:${port}`), `502 page must name the target: ${body}`)
    assert.match(body, /refused/i, `502 page must name the error: ${body}`)
    assert.ok(body.length < 4096, `502 page should be short (${body.length} bytes)`)
    assert.equal(server.stats().upstreamErrors, 1)
    // a non-HTML client gets the 502 too
    const res2 = await request(server.url + '/api', { headers: { accept: 'application/json' } })
    assert.equal(res2.status, 502)
  })
})

test('an upstream that drops the connection gives 502, and the next request to a live route works', async () => {
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const good1 = await request(server.url + '/ok', { headers: { accept: ACCEPT_HTML } })
    assert.equal(good1.status, 200)
    const bad = await request(server.url + '/destroy', { headers: { accept: ACCEPT_HTML } })
    assert.equal(bad.status, 502)
    assert.ok(bad.body.toString().includes(up.host), `502 page must name the target: ${bad.body}`)
    const good2 = await request(server.url + '/ok', { headers: { accept: ACCEPT_HTML } })
    assert.equal(good2.status, 200)
    assert.equal(good2.body.toString(), '<html><body>fine</body></html>')
  })
})

test('upstreamTimeoutMs: an upstream that never answers gets a 502 once the timeout has passed', async () => {
  const release = deferred()
  routes['/hang'] = async (req, res) => {
    await Promise.race([release.promise, new Promise((resolve) => res.on('close', resolve))])
    if (!res.destroyed) res.end('late')
  }
  try {
    await withProxy({ proxy: up.url, port: 0, upstreamTimeoutMs: 300 }, async (server) => {
      const t0 = Date.now()
      const res = await request(server.url + '/hang', { headers: { accept: ACCEPT_HTML }, timeout: 30000 })
      const elapsed = Date.now() - t0
      assert.equal(res.status, 502, 'README: no answer within upstreamTimeoutMs gives a 502 page')
      // the promise is the lower bound (not cut before the timeout); the ceiling is the request's failure guard
      assert.ok(elapsed >= 250, `answered after ${elapsed} ms, before the timeout`)
      assert.match(res.body.toString(), /upstreamTimeoutMs/)
      assert.ok(res.body.toString().includes(up.host), 'the 502 page names the target')
    })
  } finally {
    release.resolve()
  }
})

test('https targets: self-signed works with secure: false (the proxy then serves https, as Browsersync does) and by default on this machine; secure: true gives a 502 naming the target and a certificate error', async () => {
  const pems = await selfsigned.generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 24 * 3600 * 1000),
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  })
  let tup
  tup = await startUpstream(
    {
      '/to-next': (req, res) => {
        res.writeHead(302, { location: `${tup.url}/next?x=1` })
        res.end()
      },
      '/secure-page': (req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end(`<html><body><a href="https://${tup.host}/next">n</a> ${req.headers.host}</body></html>`)
      },
    },
    { tls: { key: pems.private, cert: pems.cert } },
  )
  try {
    assert.ok(tup.url.startsWith('https://'))
    await withProxy({ proxy: { target: tup.url, secure: false }, port: 0 }, async (server) => {
      assert.match(server.url, /^https:/)
      const ca = server.certificate
      const res = await request(server.url + '/secure-page', { headers: { accept: ACCEPT_HTML }, ca })
      assert.equal(res.status, 200)
      assert.equal(res.body.toString(), `<html><body><a href="//127.0.0.1:${server.port}/next">n</a> ${tup.host}</body></html>`)
      // Host is the target's; Origin/Referer become the https target origin; Location comes back to the proxy's https origin
      const n = tup.requests.length
      const redirect = await request(server.url + '/to-next', { headers: { origin: server.url, referer: `${server.url}/from` }, ca })
      assert.equal(redirect.status, 302)
      assert.equal(redirect.headers.location, `${server.url}/next?x=1`)
      assert.equal(tup.requests[n].headers.host, tup.host)
      assert.equal(tup.requests[n].headers.origin, tup.url)
      assert.equal(tup.requests[n].headers.referer, `${tup.url}/from`)
    })
    // A target on this machine: its certificate is not checked unless `secure: true` says so.
    await withProxy({ proxy: tup.url, port: 0 }, async (server) => {
      const res = await request(server.url + '/secure-page', { headers: { accept: ACCEPT_HTML }, ca: server.certificate })
      assert.equal(res.status, 200)
    })
    await withProxy({ proxy: { target: tup.url, secure: true }, port: 0 }, async (server) => {
      const res = await request(server.url + '/secure-page', { headers: { accept: ACCEPT_HTML }, ca: server.certificate })
      assert.equal(res.status, 502)
      const body = res.body.toString()
      assert.ok(body.includes(tup.host), `502 page must name the target: ${body}`)
      assert.match(body, /certificate|cert\b|self.signed|UnknownIssuer/i, `502 page must name a certificate error: ${body}`)
    })
  } finally {
    await tup.close()
  }
})

test('a target without a scheme gets http://', async () => {
  await withProxy({ proxy: up.host, port: 0 }, async (server) => {
    const n = up.requests.length
    const res = await request(server.url + '/ok', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.status, 200)
    assert.equal(up.requests[n].headers.host, up.host)
  })
})

test('a path in the target is not a prefix (Browsersync keeps only protocol//host[:port])', async () => {
  await withProxy({ proxy: `${up.url}/start/page`, port: 0 }, async (server) => {
    const n = up.requests.length
    const res = await request(server.url + '/ok', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.status, 200)
    assert.equal(up.requests[n].url, '/ok')
  })
})
