'use strict'
// The live inspector at /__devproxy/ (issue 16): its JSON snapshot, its event stream, masking of
// secret headers, the host check in front of it, and `inspector: false` / `{ path, size }`.
// Real servers on 127.0.0.1; every wait is on an event, the timeouts only turn a hang into a failure.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const { HOST, lib, startUpstream, request, withProxy, withTimeout, stopIfStarted } = require('./helpers.js')

const WAIT = 10000
const page = (req, res) => {
  res.writeHead(200, { 'content-type': 'text/html', 'set-cookie': 'session=upstream-secret; Path=/' })
  res.end('<html><body>hi</body></html>')
}

/** GETs a path of the proxy; the body as text, JSON when it is JSON. */
async function get(server, path, headers = {}) {
  const res = await request(`http://${HOST}:${server.port}${path}`, { headers })
  const text = res.body.toString('utf8')
  const json = /json/.test(res.headers['content-type'] || '') ? JSON.parse(text) : undefined
  return { ...res, text, json }
}

/**
 * Opens the inspector's event stream; `next(pred)` resolves with the first event (`{ event, data }`,
 * data parsed) matching `pred`, from those not yet consumed.
 */
function openEvents(server, path = '/__devproxy/api/events', headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: HOST, port: server.port, path, headers, agent: false }, (res) => {
      const queue = []
      const waiters = []
      let buffer = ''
      const deliver = () => {
        for (let w = 0; w < waiters.length; w++) {
          const i = queue.findIndex(waiters[w].pred)
          if (i >= 0) {
            const [hit] = queue.splice(i, 1)
            waiters.splice(w--, 1)[0].resolve(hit)
          }
        }
      }
      res.setEncoding('utf8')
      res.on('data', (chunk) => {
        buffer += chunk
        let end
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const event = /^event: (.*)$/m.exec(block)
          const data = /^data: (.*)$/m.exec(block)
          if (event && data) queue.push({ event: event[1], data: JSON.parse(data[1]) })
        }
        deliver()
      })
      resolve({
        res,
        next(pred, label = 'an event') {
          return withTimeout(new Promise((ok) => {
            waiters.push({ pred, resolve: ok })
            deliver()
          }), WAIT, label)
        },
        close: () => req.destroy(),
      })
    })
    req.on('error', reject)
  })
}

test('snapshot: a proxied request shows up in api/exchanges with method, URL, status, time and headers; the page and its assets are served', async () => {
  const upstream = await startUpstream({ '/page': page, '/missing': (req, res) => { res.writeHead(404); res.end() } })
  try {
    await withProxy({ proxy: upstream.url, port: 0 }, async (server) => {
      assert.equal((await get(server, '/page?x=1', { accept: 'text/html' })).status, 200)
      assert.equal((await get(server, '/missing')).status, 404)
      const snap = await get(server, '/__devproxy/api/exchanges')
      assert.equal(snap.status, 200)
      assert.match(snap.headers['content-type'], /application\/json/)
      assert.equal(snap.headers['cache-control'], 'no-store')
      assert.equal(snap.json.capacity, 500)
      assert.equal(snap.json.total, 2, 'the inspector\'s own requests are not recorded')
      const [first, second] = snap.json.records
      assert.deepEqual([first.method, first.url, first.status], ['GET', '/page?x=1', 200])
      assert.deepEqual([second.url, second.status], ['/missing', 404])
      assert.ok(first.id < second.id)
      assert.ok(typeof first.totalMs === 'number' && first.totalMs >= 0)
      assert.ok(first.requestHeaders.some(([n, v]) => n === 'accept' && v === 'text/html'))
      assert.ok(first.responseHeaders.some(([n, v]) => n === 'content-type' && /text\/html/.test(v)))
      assert.equal(upstream.requests.length, 2, 'nothing under /__devproxy/ reached the target')

      const html = await get(server, '/__devproxy/')
      assert.equal(html.status, 200)
      assert.match(html.headers['content-type'], /text\/html/)
      assert.match(html.headers['content-security-policy'], /script-src 'self'/)
      assert.match(html.text, /<script src="inspector\.js"/)
      assert.doesNotMatch(html.text, /https?:\/\//, 'no CDN: the page loads nothing from elsewhere')
      assert.match((await get(server, '/__devproxy/inspector.js')).headers['content-type'], /javascript/)
      assert.match((await get(server, '/__devproxy/inspector.css')).headers['content-type'], /text\/css/)
      const bare = await get(server, '/__devproxy')
      assert.deepEqual([bare.status, bare.headers.location], [308, '/__devproxy/'])
      assert.equal((await get(server, '/__devproxy/nope')).status, 404)
      const post = await request(`http://${HOST}:${server.port}/__devproxy/api/exchanges`, { method: 'POST', body: 'x' })
      assert.equal(post.status, 405)
      assert.equal(upstream.requests.length, 2)
    })
  } finally {
    await upstream.close()
  }
})

test('SSE: api/events starts with a snapshot and then sends each new exchange as it happens', async () => {
  const upstream = await startUpstream({ '/page': page })
  try {
    await withProxy({ proxy: upstream.url, port: 0 }, async (server) => {
      await get(server, '/page?before')
      const events = await openEvents(server)
      try {
        assert.match(events.res.headers['content-type'], /text\/event-stream/)
        const snapshot = await events.next((e) => e.event === 'snapshot', 'the snapshot')
        assert.deepEqual(snapshot.data.records.map((r) => r.url), ['/page?before'])
        await get(server, '/page?live')
        const live = await events.next((e) => e.event === 'record' && e.data.url === '/page?live', 'the live record')
        assert.equal(live.data.status, 200)
        assert.equal(live.data.method, 'GET')
      } finally {
        events.close()
      }
    })
  } finally {
    await upstream.close()
  }
})

test('masking: Authorization, Cookie, Set-Cookie and API-key headers show as [redacted] in the snapshot and the stream', async () => {
  const upstream = await startUpstream({ '/page': page })
  const secrets = {
    authorization: 'Bearer sk-secret-1',
    'proxy-authorization': 'Basic c2VjcmV0LTI=',
    cookie: 'sid=secret-3',
    'x-api-key': 'secret-4',
    'api-key': 'secret-5',
    'x-goog-api-key': 'secret-6',
    'openai-organization': 'org-secret-7',
    'openai-project': 'proj-secret-8',
  }
  try {
    await withProxy({ proxy: upstream.url, port: 0 }, async (server) => {
      const events = await openEvents(server)
      try {
        await events.next((e) => e.event === 'snapshot')
        await get(server, '/page', { ...secrets, 'x-visible': 'shown' })
        assert.equal(upstream.requests[0].headers.authorization, secrets.authorization, 'the target still gets the real value')
        const live = await events.next((e) => e.event === 'record', 'the record')
        const snap = await get(server, '/__devproxy/api/exchanges')
        for (const [label, text, record] of [['stream', JSON.stringify(live.data), live.data], ['snapshot', snap.text, snap.json.records[0]]]) {
          for (const value of [...Object.values(secrets), 'upstream-secret']) {
            assert.ok(!text.includes(value), `${label} leaks ${value}`)
          }
          const req = Object.fromEntries(record.requestHeaders)
          for (const name of Object.keys(secrets)) assert.equal(req[name], '[redacted]', `${label}: ${name}`)
          assert.equal(req['x-visible'], 'shown')
          assert.equal(Object.fromEntries(record.responseHeaders)['set-cookie'], '[redacted]')
        }
      } finally {
        events.close()
      }
    })
  } finally {
    await upstream.close()
  }
})

test('a rewritten page: its record has codings, bytes, the rules that matched and, while a viewer is open, the before/after preview; api/rules sums them', async () => {
  const upstream = await startUpstream({
    '/page': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end('<html><body><p>hi there, hi</p></body></html>')
    },
  })
  try {
    await withProxy({ proxy: upstream.url, port: 0, rewriteRules: [{ match: /hi/g, replace: 'hello' }] }, async (server) => {
      // Without a viewer the record has no preview (it would cost a copy nobody looks at) ...
      await get(server, '/page', { accept: 'text/html', 'accept-encoding': 'gzip' })
      const events = await openEvents(server)
      let live
      try {
        await events.next((e) => e.event === 'snapshot')
        // ... with the page open it has one.
        await get(server, '/page?open', { accept: 'text/html', 'accept-encoding': 'gzip' })
        live = await events.next((e) => e.event === 'record' && e.data.url === '/page?open', 'the record')
      } finally {
        events.close()
      }
      const snap = await get(server, '/__devproxy/api/exchanges')
      const [closed, r] = snap.json.records
      assert.equal(closed.preview, undefined, 'no viewer, no preview')
      assert.deepEqual(live.data.preview, r.preview)
      assert.equal(r.rewritten, true)
      assert.deepEqual([r.codingIn, r.codingOut], ['identity', 'gzip'])
      // What came in is the page as the target sent it (identity); what went out, the gzip'd rewrite.
      assert.equal(r.bytesIn, Buffer.byteLength('<html><body><p>hi there, hi</p></body></html>'), JSON.stringify(r))
      assert.ok(r.bytesOut > 0, JSON.stringify(r))
      assert.equal(r.preview.before, '<html><body><p>hi there, hi</p></body></html>')
      assert.equal(r.preview.after, '<html><body><p>hello there, hello</p></body></html>')
      const rule = r.rules.find((x) => x.matches === 2)
      assert.ok(rule, JSON.stringify(r.rules))
      const rules = await get(server, '/__devproxy/api/rules')
      const row = rules.json.rules.find((x) => x.rule === rule.rule)
      assert.deepEqual([row.exchanges, row.matches], [2, 4])
      assert.ok(typeof row.rewriteMs === 'number')
    })
  } finally {
    await upstream.close()
  }
})

test('the inspector is not for other sites: no CORS headers for a foreign Origin, no framing, no inline script, no sniffing', async () => {
  const upstream = await startUpstream({})
  try {
    await withProxy({ proxy: upstream.url, port: 0, quiet: true }, async (server) => {
      const foreign = { origin: 'https://evil.example', referer: 'https://evil.example/page' }
      const page = await get(server, '/__devproxy/', foreign)
      assert.equal(page.status, 200)
      assert.equal(page.headers['x-frame-options'], 'DENY')
      const csp = page.headers['content-security-policy']
      assert.match(csp, /frame-ancestors 'none'/)
      assert.match(csp, /script-src 'self'(;|$)/, 'no inline script, no other origin')
      assert.match(csp, /default-src 'none'/)
      for (const path of ['/__devproxy/', '/__devproxy/api/exchanges', '/__devproxy/api/rules', '/__devproxy/inspector.js']) {
        const res = await get(server, path, foreign)
        assert.equal(res.headers['access-control-allow-origin'], undefined, path)
        assert.equal(res.headers['access-control-allow-credentials'], undefined, path)
        assert.equal(res.headers['x-content-type-options'], 'nosniff', path)
      }
    })
  } finally {
    await upstream.close()
  }
})

test('inspector: false reserves nothing: /__devproxy/ goes to the target like any path', async () => {
  const upstream = await startUpstream({
    '/__devproxy/': (req, res) => res.end('the target\'s own /__devproxy/'),
    '/__devproxy/api/exchanges': (req, res) => res.end('the target\'s api'),
  })
  try {
    await withProxy({ proxy: upstream.url, port: 0, inspector: false }, async (server) => {
      assert.equal((await get(server, '/__devproxy/')).text, 'the target\'s own /__devproxy/')
      assert.equal((await get(server, '/__devproxy/api/exchanges')).text, 'the target\'s api')
      assert.deepEqual(upstream.requests.map((r) => r.url), ['/__devproxy/', '/__devproxy/api/exchanges'])
    })
  } finally {
    await upstream.close()
  }
})

test('inspector: { path, size } moves the page and bounds the buffer; the default prefix then goes to the target', async () => {
  const upstream = await startUpstream({ '/page': page, '/__devproxy/': (req, res) => res.end('target') })
  try {
    await withProxy({ proxy: upstream.url, port: 0, inspector: { path: '/__x', size: 2 } }, async (server) => {
      for (const n of [1, 2, 3]) await get(server, `/page?${n}`)
      const snap = await get(server, '/__x/api/exchanges')
      assert.equal(snap.json.capacity, 2)
      assert.equal(snap.json.total, 3)
      assert.deepEqual(snap.json.records.map((r) => r.url), ['/page?2', '/page?3'])
      assert.match((await get(server, '/__x/')).text, /devproxy inspector/)
      assert.equal((await get(server, '/__devproxy/')).text, 'target')
    })
  } finally {
    await upstream.close()
  }
})

test('bad inspector options are rejected naming the option', async () => {
  const upstream = await startUpstream({})
  try {
    for (const [inspector, says] of [
      [{ path: 'x/' }, /inspector\.path/],
      [{ path: '/' }, /inspector\.path.*every request/],
      // One range in every message: the one the docs give.
      [{ size: 0 }, /option `inspector\.size` must be a whole number from 1 to 10000, got 0/],
      [{ size: 1e6 }, /option `inspector\.size` must be a whole number from 1 to 10000, got 1000000/],
      ['yes', /inspector/],
    ]) {
      await assert.rejects(stopIfStarted(lib().start({ proxy: upstream.url, port: 0, quiet: true, inspector })), says, JSON.stringify(inspector))
    }
  } finally {
    await upstream.close()
  }
})

test('the host check applies to the inspector: a rebound Host gets 403 for the page, the snapshot and the stream', async () => {
  const upstream = await startUpstream({ '/page': page })
  try {
    await withProxy({ proxy: upstream.url, port: 0 }, async (server) => {
      await get(server, '/page')
      for (const path of ['/__devproxy/', '/__devproxy/api/exchanges', '/__devproxy/api/events', '/__devproxy/api/rules']) {
        const res = await get(server, path, { host: `evil.example:${server.port}` })
        assert.equal(res.status, 403, path)
        assert.doesNotMatch(res.text, /"records"|\/page/, path)
      }
      assert.equal((await get(server, '/__devproxy/api/exchanges', { host: `localhost:${server.port}` })).status, 200)
    })
  } finally {
    await upstream.close()
  }
})

test('api/rules answers the per-rule table as JSON; stop() ends an open event stream', async () => {
  const upstream = await startUpstream({ '/page': page })
  const rewriteRules = [{ match: /h/g, replace: 'H' }, { match: 'never there', replace: 'x' }]
  const server = await lib().start({ proxy: upstream.url, port: 0, quiet: true, rewriteRules })
  try {
    // Two pages: the table counts each rule's matches over both (rules that never matched are not listed).
    for (let i = 0; i < 2; i++) await get(server, '/page', { accept: 'text/html' })
    const rules = await get(server, '/__devproxy/api/rules')
    assert.equal(rules.status, 200)
    const table = rules.json.rules.map((r) => ({ rule: r.rule, matches: r.matches }))
    assert.deepEqual(table, server.stats().rules.map((r) => ({ rule: r.rule, matches: r.matches })), 'the same table as stats()')
    const count = '<html><body>hi</body></html>'.split('h').length - 1
    assert.deepEqual(table, [{ rule: '/h/g', matches: 2 * count }])
    const events = await openEvents(server)
    await events.next((e) => e.event === 'snapshot')
    const ended = new Promise((resolve) => events.res.on('end', resolve))
    await withTimeout(server.stop(), 15000, 'server.stop() with an open event stream')
    await withTimeout(ended, WAIT, 'the event stream to end')
  } finally {
    await withTimeout(server.stop(), 15000, 'server.stop()')
    await upstream.close()
  }
})
