'use strict'
// What the proxy says about each request: the Server-Timing header (read by Node and by headless
// Chromium's PerformanceResourceTiming), the exchange records given to `onRequest`, the request log
// (text and JSON lines, from a child's stderr) and stats()'s latency percentiles and per-rule counters.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const zlib = require('node:zlib')
const { performance } = require('node:perf_hooks')
const {
  deferred,
  withTimeout,
  until,
  startUpstream,
  deadPort,
  request,
  withProxy,
  fileUpstream,
  spawnNode,
  ACCEPT_HTML,
  decodeBody,
  launchChromium,
  stopIfStarted,
} = require('./helpers')

const WAIT = 20000
const PAGE = '<!doctype html><html><head><title>t</title><link rel="stylesheet" href="/style.css"></head><body><p>hello hello</p></body></html>'

/** When the last `/slow` request reached the upstream and when its headers were sent (performance.now()). */
let slowHeld = null
const routes = {
  '/moved': (req, res) => {
    res.writeHead(302, { location: '/page', 'content-type': 'text/html; charset=UTF-8', 'content-length': '0' })
    res.end()
  },
  '/page': (req, res) => {
    const gzip = /\bgzip\b/.test(req.headers['accept-encoding'] || '')
    const body = gzip ? zlib.gzipSync(PAGE) : Buffer.from(PAGE)
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': body.length, ...(gzip ? { 'content-encoding': 'gzip' } : {}) })
    res.end(body)
  },
  '/style.css': (req, res) => {
    res.writeHead(200, { 'content-type': 'text/css', 'server-timing': 'app;dur=1' })
    res.end('p { color: red }')
  },
  // Holds its headers until the next turn of a timer, so that the upstream time is clearly above zero;
  // the test compares the header with what the upstream measured itself, never with a fixed bound.
  '/slow': (req, res) => {
    const arrived = performance.now()
    setTimeout(() => {
      slowHeld = performance.now() - arrived
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end('slow')
    }, 30)
  },
}
const up = fileUpstream(routes)

/** `Server-Timing` as {name: dur}. */
function timings(header) {
  const out = {}
  for (const part of String(header || '').split(',')) {
    const [name, ...params] = part.trim().split(';')
    const dur = params.map((p) => p.trim()).find((p) => p.startsWith('dur='))
    if (name) out[name] = dur === undefined ? null : Number(dur.slice(4))
  }
  return out
}

test('Server-Timing: upstream;dur is the time to the target\'s headers, proxy;dur the rest; the target\'s own is kept', async () => {
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const sent = performance.now()
    const res = await request(server.url + '/slow')
    const total = performance.now() - sent
    const t = timings(res.headers['server-timing'])
    assert.ok(Number.isFinite(t.upstream) && Number.isFinite(t.proxy), res.headers['server-timing'])
    // The header has one decimal: allow its rounding.
    assert.ok(t.upstream + 0.05 >= slowHeld, `upstream ${t.upstream} ms < the ${slowHeld} ms the target held its headers`)
    assert.ok(t.upstream + t.proxy <= total + 0.1, `${t.upstream} + ${t.proxy} ms > the ${total} ms the client waited`)
    assert.ok(t.proxy >= 0)

    const css = await request(server.url + '/style.css')
    assert.match(css.headers['server-timing'], /^app;dur=1, upstream;dur=[\d.]+, proxy;dur=[\d.]+$/)
    const page = await request(server.url + '/page', { headers: { accept: ACCEPT_HTML, 'accept-encoding': 'gzip' } })
    assert.ok('upstream' in timings(page.headers['server-timing']), 'a rewritten page has it too')
  })
})

test('Server-Timing: proxy;dur alone on a local file and on an error page; none with serverTiming: false', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-observe-'))
  fs.writeFileSync(path.join(root, 'local.txt'), 'local file')
  try {
    await withProxy({ proxy: up.url, port: 0, serveStatic: [root] }, async (server) => {
      const local = await request(server.url + '/local.txt')
      assert.equal(local.body.toString(), 'local file')
      assert.deepEqual(Object.keys(timings(local.headers['server-timing'])), ['proxy'])
    })
    await withProxy({ proxy: `http://127.0.0.1:${await deadPort()}`, port: 0 }, async (server) => {
      const failed = await request(server.url + '/x')
      assert.equal(failed.status, 502)
      assert.deepEqual(Object.keys(timings(failed.headers['server-timing'])), ['proxy'])
    })
    await withProxy({ proxy: up.url, port: 0, serverTiming: false }, async (server) => {
      const page = await request(server.url + '/page', { headers: { accept: ACCEPT_HTML } })
      assert.equal(page.status, 200)
      assert.equal(page.headers['server-timing'], undefined)
      const css = await request(server.url + '/style.css')
      assert.equal(css.headers['server-timing'], 'app;dur=1', 'the target\'s own header is passed on untouched')
    })
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
})

/** Collects onRequest entries; `until(n)` resolves once n have arrived. */
function collector() {
  const entries = []
  let waiting = null
  return {
    entries,
    onRequest(entry) {
      entries.push(entry)
      if (waiting && entries.length >= waiting.n) waiting.d.resolve()
    },
    until(n) {
      if (entries.length >= n) return Promise.resolve()
      waiting = { n, d: deferred() }
      return withTimeout(waiting.d.promise, WAIT, `${n} onRequest entries (got ${entries.length})`)
    },
  }
}

test('onRequest: one record per request with codings, bytes, times, rules and source', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-observe-'))
  fs.writeFileSync(path.join(root, 'local.txt'), 'local file')
  const c = collector()
  try {
    await withProxy({
      proxy: up.url,
      port: 0,
      serveStatic: [root],
      snippet: '<script>snip</script>',
      rewriteRules: [{ match: /hello/g, replace: 'bye' }],
      onRequest: c.onRequest,
    }, async (server) => {
      const page = await request(server.url + '/page?q=1', { headers: { accept: ACCEPT_HTML, 'accept-encoding': 'gzip', authorization: 'Bearer sk-observe-secret', cookie: 'sid=observe-secret' } })
      assert.match(decodeBody(page.body, page.headers['content-encoding']).toString(), /<p>bye bye<\/p>/)
      await c.until(1)
      const css = await request(server.url + '/style.css')
      await c.until(2)
      await request(server.url + '/local.txt')
      await c.until(3)
      await request(server.url + '/nothing-here')
      await c.until(4)

      const [p, s, l, missing] = c.entries
      assert.equal(p.method, 'GET')
      assert.equal(p.url, '/page?q=1')
      assert.equal(p.status, 200)
      assert.equal(p.source, 'proxy')
      assert.equal(p.codingOut, page.headers['content-encoding'] || 'identity')
      assert.equal(p.bytesOut, page.body.length)
      // The upstream answered a page request from this loopback proxy uncompressed: the page's own bytes.
      assert.equal(p.codingIn, 'identity')
      assert.equal(p.bytesIn, Buffer.byteLength(PAGE))
      assert.equal(p.rewritten, true)
      assert.deepEqual(p.rules, [{ rule: 'snippet', matches: 1 }, { rule: '/hello/g', matches: 2 }])
      assert.ok(p.upstreamMs >= 0 && p.totalMs >= p.upstreamMs, `${p.upstreamMs} / ${p.totalMs}`)
      assert.equal(typeof p.rewriteMs, 'number')
      assert.equal(typeof p.encodeMs, 'number')
      assert.equal(p.error, null)
      assert.ok(p.requestHeaders.some(([n, v]) => n === 'accept' && v === ACCEPT_HTML))
      // Secrets never reach a consumer of the records (onRequest, the log, the inspector).
      assert.ok(p.requestHeaders.some(([n, v]) => n === 'authorization' && v === '[redacted]'), JSON.stringify(p.requestHeaders))
      assert.ok(p.requestHeaders.some(([n, v]) => n === 'cookie' && v === '[redacted]'))
      assert.ok(!JSON.stringify(p).includes('observe-secret'))
      assert.ok(p.responseHeaders.some(([n]) => n === 'server-timing'))
      assert.ok(p.id >= 1 && s.id > p.id, 'ids increase')
      assert.ok(Math.abs(p.startedAt - Date.now()) < 3600e3, 'startedAt is epoch milliseconds')

      assert.equal(s.rewritten, false)
      assert.equal(s.rewriteMs, null)
      assert.deepEqual(s.rules, [])
      assert.equal(s.bytesIn, css.body.length)
      assert.equal(s.bytesOut, css.body.length)
      assert.equal(s.codingIn, 'identity')

      assert.equal(l.source, 'local')
      assert.equal(l.upstreamMs, null)
      assert.equal(l.bytesOut, 'local file'.length)

      assert.equal(missing.status, 404)
      assert.equal(missing.source, 'proxy')
    })
    // A failed exchange is recorded as such.
    await withProxy({ proxy: `http://127.0.0.1:${await deadPort()}`, port: 0, onRequest: c.onRequest }, async (server) => {
      await request(server.url + '/gone')
      await c.until(5)
      const failed = c.entries[4]
      assert.equal(failed.status, 502)
      assert.equal(failed.source, 'error')
      assert.match(failed.error, /\/gone/)
    })
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
})

test('onRequest: a throwing callback costs its own record only; a non-function is refused', async () => {
  const c = collector()
  let calls = 0
  const onRequest = (entry) => {
    calls++
    if (calls === 1) throw new Error('boom')
    c.onRequest(entry)
  }
  await withProxy({ proxy: up.url, port: 0, onRequest }, async (server) => {
    await request(server.url + '/style.css')
    await request(server.url + '/style.css')
    await c.until(1)
    assert.equal(calls, 2)
    assert.equal((await request(server.url + '/style.css')).status, 200, 'the proxy still serves')
  })
  const { start } = require('..')
  await assert.rejects(stopIfStarted(start({ proxy: up.url, port: 0, onRequest: 'yes' })), /option `onRequest` must be a function, got string/)
})

test('onRequest never holds up the proxy: with Node\'s thread blocked, a client in another process gets 5,000 answers; records past 4096 waiting are dropped and counted', async () => {
  const child = spawnNode(path.join(__dirname, 'fixtures', 'load-child.js'))
  const flag = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-load-')), 'done')
  const COUNT = 5000
  try {
    const { url } = await child.next('upstream')
    let received = 0
    await withProxy({ proxy: url, port: 0, onRequest: () => received++ }, async (server) => {
      child.send({ type: 'fire', url: `${server.url}/x`, count: COUNT, concurrency: 32, flag })
      // This thread, which runs onRequest, is blocked until the child has every answer (a 90 s guard).
      const deadline = Date.now() + 90_000
      while (!fs.existsSync(flag) && Date.now() < deadline);
      assert.ok(fs.existsSync(flag), 'the child did not get its answers while Node\'s thread was blocked')
      const fired = JSON.parse(fs.readFileSync(flag, 'utf8'))
      assert.deepEqual({ ok: fired.ok, failed: fired.failed }, { ok: COUNT, failed: 0 })
      // Then every record is either delivered or counted as dropped.
      await withTimeout(
        (async () => {
          while (received + server.stats().droppedRecords < COUNT) await new Promise((resolve) => setTimeout(resolve, 20))
        })(),
        20_000,
        'records delivered or counted',
      )
      const dropped = server.stats().droppedRecords
      // 4096 wait in the queue, and at most one batch of 256 was on its way to JS.
      assert.ok(received >= 4096 && received <= 4096 + 256, `${received} records delivered`)
      assert.equal(received + dropped, COUNT)
      assert.equal(server.stats().requests, COUNT)
    })
  } finally {
    child.kill()
  }
})

test('onRequest: a middleware\'s own answer is recorded as such; one passed on with next() once, as the proxy\'s', async () => {
  const c = collector()
  const middleware = [{ route: '/mw', handle: (req, res) => res.end('from middleware') }, (req, res, next) => next()]
  await withProxy({ proxy: up.url, port: 0, middleware, onRequest: c.onRequest }, async (server) => {
    const own = await request(server.url + '/mw')
    assert.equal(own.body.toString(), 'from middleware')
    await c.until(1)
    const passed = await request(server.url + '/style.css')
    assert.equal(passed.body.toString(), 'p { color: red }')
    await c.until(2)
    assert.deepEqual(c.entries.map((e) => [e.url, e.source]), [['/mw', 'middleware'], ['/style.css', 'proxy']])
    assert.equal(typeof c.entries[1].upstreamMs, 'number')
    assert.equal(passed.headers['server-timing'].match(/upstream;/g).length, 1, passed.headers['server-timing'])
    // No second record of the passed-on request: the next request's record is the third one.
    await request(server.url + '/mw')
    await c.until(3)
    assert.deepEqual(c.entries.map((e) => e.url), ['/mw', '/style.css', '/mw'])
  })
})

test('a redirect\'s empty body goes out as it came (Content-Length: 0, no coding), and a client that follows it at once is not recorded as gone', async () => {
  const c = collector()
  await withProxy({ proxy: up.url, port: 0, onRequest: c.onRequest }, async (server) => {
    for (let i = 0; i < 3; i++) {
      // As a browser following the redirect: the head is all it reads.
      const head = await new Promise((resolve, reject) => {
        const req = require('node:http').get(`${server.url}/moved`, { headers: { accept: ACCEPT_HTML, 'accept-encoding': 'gzip, br' } }, (res) => {
          resolve({ status: res.statusCode, headers: res.headers })
          res.socket.destroy()
        })
        req.on('error', reject)
      })
      assert.equal(head.status, 302)
      assert.equal(head.headers['content-length'], '0')
      assert.equal(head.headers['content-encoding'], undefined, 'no gzip stream around nothing')
      assert.equal(head.headers['transfer-encoding'], undefined)
    }
    await c.until(3)
    assert.deepEqual(c.entries.map((e) => [e.status, e.error, e.bytesOut]), [[302, null, 0], [302, null, 0], [302, null, 0]])
  })
})

test('stats(): per-rule matches across requests and p50/p99 of upstream and total time', async () => {
  await withProxy({ proxy: up.url, port: 0, rewriteRules: [{ match: /hello/g, replace: 'bye' }, { match: /absent/, replace: 'x' }] }, async (server) => {
    const fresh = server.stats()
    assert.deepEqual(fresh.rules, [])
    assert.deepEqual(fresh.totalLatency, { count: 0, p50Ms: 0, p99Ms: 0 })
    for (let i = 0; i < 5; i++) await request(server.url + '/page', { headers: { accept: ACCEPT_HTML } })
    await request(server.url + '/slow')
    // The record of the last answer is finished as its body ends, which the client may see first.
    await until(() => server.stats().totalLatency.count >= 6, WAIT, 'six answers recorded', 5)
    const stats = server.stats()
    assert.deepEqual(stats.rules, [{ rule: '/hello/g', matches: 10 }])
    assert.equal(stats.totalLatency.count, 6)
    assert.equal(stats.upstreamLatency.count, 6)
    for (const l of [stats.totalLatency, stats.upstreamLatency]) assert.ok(l.p50Ms > 0 && l.p50Ms <= l.p99Ms, JSON.stringify(l))
    // The slow answer is the slowest: p99 of 6 samples is its time.
    assert.ok(stats.upstreamLatency.p99Ms * 1.01 >= slowHeld, `${stats.upstreamLatency.p99Ms} vs ${slowHeld}`)
    assert.equal(stats.droppedRecords, 0)
  })
})

/** The proxy's stderr in a child until a mark, after one request to `pathname`. */
async function logOf(options, pathname) {
  const child = spawnNode(path.join(__dirname, 'fixtures/proxy-child.js'))
  try {
    child.send({ type: 'start', options: { proxy: up.url, port: 0, ...options } })
    const { url } = await child.next('started')
    await request(url + pathname, { headers: { accept: ACCEPT_HTML } })
    child.send({ type: 'mark', id: 1 })
    await child.next('marked')
    await until(() => child.output().stderr.includes('@@mark 1'), WAIT, "the child's mark on stderr", 20)
    return child.output().stderr.split('@@mark 1')[0]
  } finally {
    await child.kill()
  }
}

test('request log: off at the default level, a text line with logRequests, the record as JSON with logFormat: json', async () => {
  assert.equal(await logOf({}, '/page'), '', 'Browsersync\'s proxy logs no line per request at its default level')
  const text = (await logOf({ logRequests: true, snippet: '<i>s</i>' }, '/page')).trim()
  assert.match(text, /^\[devproxy\] GET \/page -> 200 identity [1-9]\d*->[1-9]\d* B [\d.]+ ms \(upstream [\d.]+ ms\) rewritten \(rewrite [\d.]+ ms, encode [\d.]+ ms\) \[snippet x1\]$/)
  const json = (await logOf({ logRequests: true, logFormat: 'json' }, '/style.css')).trim()
  const record = JSON.parse(json)
  assert.equal(record.url, '/style.css')
  assert.equal(record.status, 200)
  assert.equal(record.rewritten, false)
  assert.equal(typeof record.upstreamMs, 'number')
  assert.equal(await logOf({ logRequests: true, logLevel: 'silent' }, '/page'), '')
  const { start } = require('..')
  await assert.rejects(stopIfStarted(start({ proxy: up.url, port: 0, logFormat: 'xml' })), /option `logFormat` must be 'text' or 'json', got 'xml'/)
})

let browser
before(async () => {
  browser = await launchChromium()
})
after(async () => {
  if (browser) await browser.close()
})

test('Chromium reads upstream;dur from the page\'s and a stylesheet\'s PerformanceServerTiming', async () => {
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const page = await browser.newPage()
    try {
      await page.goto(server.url + '/page', { waitUntil: 'load', timeout: WAIT })
      const seen = await page.evaluate(() => {
        const pick = (e) => ({ name: e.name, timing: e.serverTiming.map((t) => ({ name: t.name, duration: t.duration })), duration: e.duration })
        return {
          navigation: performance.getEntriesByType('navigation').map(pick),
          resources: performance.getEntriesByType('resource').map(pick),
        }
      })
      const nav = seen.navigation[0]
      const css = seen.resources.find((r) => r.name.endsWith('/style.css'))
      assert.ok(css, JSON.stringify(seen))
      for (const entry of [nav, css]) {
        const upstream = entry.timing.find((t) => t.name === 'upstream')
        assert.ok(upstream, JSON.stringify(entry))
        // Plausible: not negative, and not longer than the browser's own view of the whole fetch.
        assert.ok(upstream.duration >= 0 && upstream.duration <= entry.duration + 1, JSON.stringify(entry))
        assert.ok(entry.timing.some((t) => t.name === 'proxy'), JSON.stringify(entry))
      }
      assert.ok(css.timing.some((t) => t.name === 'app' && t.duration === 1), 'the target\'s entry is there too')
    } finally {
      await page.close()
    }
  })
})
