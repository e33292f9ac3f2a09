'use strict'
// Streaming: SSE without buffering, incremental HTML, aborted upstream bodies, bounded memory on a 50 MiB page.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const zlib = require('node:zlib')
const http = require('node:http')
const { deferred, withTimeout, startUpstream, request, withProxy, spawnNode, ACCEPT_HTML, fileUpstream } = require('./helpers')

const SNIPPET = '<script async src="/__dev.js"></script>'

const routes = {}
const up = fileUpstream(routes)

/**
 * SSE upstream: writes event 1, then waits for `gotOne` (the test saw event 1 at the client) before writing event 2.
 * If the proxy buffers, the client never sees event 1 and the guard fails the test.
 */
function sseRoute(p, { gzip = false } = {}) {
  const ctl = { gotOne: deferred() }
  routes[p] = async (req, res) => {
    const headers = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }
    if (gzip) headers['content-encoding'] = 'gzip'
    res.writeHead(200, headers)
    let out = res
    let gz
    if (gzip) {
      gz = zlib.createGzip()
      gz.pipe(res)
      out = gz
    }
    const send = (s) => {
      out.write(s)
      if (gz) gz.flush(zlib.constants.Z_SYNC_FLUSH)
    }
    send(`data: 1 from http://${up.host}/x\n\n`)
    await Promise.race([ctl.gotOne.promise, new Promise((resolve) => res.on('close', resolve))])
    send('data: 2\n\n')
    out.end()
  }
  return ctl
}

/** Reads an SSE response incrementally (optionally gzip), resolving each event as it arrives. */
function readSse(url, accept, { gzip = false } = {}) {
  const events = []
  const waiters = []
  const done = deferred()
  const req = http.get(url, { agent: false, headers: { accept, ...(gzip ? { 'accept-encoding': 'gzip' } : {}) } }, (res) => {
    let stream = res
    if (res.headers['content-encoding'] === 'gzip') {
      stream = zlib.createGunzip()
      res.pipe(stream)
    }
    let buf = ''
    stream.on('data', (d) => {
      buf += d.toString()
      let i
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i)
        buf = buf.slice(i + 2)
        events.push(ev)
        while (waiters.length && waiters[0].n <= events.length) waiters.shift().resolve()
      }
    })
    stream.on('end', () => done.resolve({ status: res.statusCode, headers: res.headers, events }))
    stream.on('error', done.reject)
    res.on('aborted', () => done.reject(new Error('SSE response aborted')))
  })
  req.on('error', done.reject)
  done.promise.catch(() => {}) // destroyed in finally after a failure: not an unhandled rejection
  return {
    req,
    done: done.promise,
    events,
    nth(n) {
      if (events.length >= n) return Promise.resolve()
      const d = deferred()
      waiters.push({ n, resolve: d.resolve })
      return d.promise
    },
  }
}

for (const accept of ['text/event-stream', ACCEPT_HTML]) {
  test(`SSE events are delivered as they are written, not buffered (Accept: ${accept.slice(0, 20)})`, async () => {
    const p = `/sse-${accept === ACCEPT_HTML ? 'html' : 'es'}`
    const ctl = sseRoute(p)
    await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET }, async (server) => {
      const sse = readSse(server.url + p, accept)
      try {
        await withTimeout(sse.nth(1), 5000, 'SSE event 1 before event 2 is written (proxy buffers?)')
        ctl.gotOne.resolve()
        const res = await withTimeout(sse.done, 5000, 'SSE end')
        assert.equal(res.status, 200)
        assert.equal(res.headers['content-type'], 'text/event-stream')
        // passthrough: text/event-stream is not rewritten
        assert.deepEqual(res.events, [`data: 1 from http://${up.host}/x`, 'data: 2'])
      } finally {
        ctl.gotOne.resolve()
        sse.req.destroy()
      }
    })
  })
}

test('a gzip SSE stream passes through compressed and unbuffered', async () => {
  const ctl = sseRoute('/sse-gz', { gzip: true })
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const sse = readSse(server.url + '/sse-gz', 'text/event-stream', { gzip: true })
    try {
      await withTimeout(sse.nth(1), 5000, 'gzip SSE event 1 before event 2 is written (proxy buffers?)')
      ctl.gotOne.resolve()
      const res = await withTimeout(sse.done, 5000, 'SSE end')
      assert.equal(res.headers['content-encoding'], 'gzip')
      assert.deepEqual(res.events, [`data: 1 from http://${up.host}/x`, 'data: 2'])
    } finally {
      ctl.gotOne.resolve()
      sse.req.destroy()
    }
  })
})

test('a rewritten HTML page streams: the shell reaches the client before the upstream sends the rest', async () => {
  const gotShell = deferred()
  const shell = `<!DOCTYPE html><html><head><title>t</title><link href="http://${up.host}/a.css" rel="stylesheet"></head><body><div id="root">Loading…</div>\n`
  routes['/ssr'] = async (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.write(shell)
    await Promise.race([gotShell.promise, new Promise((resolve) => res.on('close', resolve))])
    res.end(`<script>window.data = "http://${up.host}/api"</script></body></html>`)
  }
  await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET }, async (server) => {
    const L = `127.0.0.1:${server.port}`
    const expectedShell = `<!DOCTYPE html><html><head><title>t</title><link href="//${L}/a.css" rel="stylesheet"></head><body>${SNIPPET}<div id="root">Loading…</div>\n`
    let received = Buffer.alloc(0)
    const p = request(server.url + '/ssr', {
      headers: { accept: ACCEPT_HTML },
      onData: (c) => {
        received = Buffer.concat([received, c])
        if (received.toString().startsWith(expectedShell)) gotShell.resolve()
      },
    })
    p.catch(() => {})
    try {
      await withTimeout(gotShell.promise, 5000, 'the rewritten shell before the rest is sent (proxy buffers HTML?)')
    } finally {
      gotShell.resolve()
    }
    const res = await p
    assert.equal(res.body.toString(), expectedShell + `<script>window.data = "//${L}/api"</script></body></html>`)
  })
})

const DECODERS = { gzip: zlib.createGunzip, br: zlib.createBrotliDecompress, deflate: zlib.createInflate }

/**
 * A compressed rewritten page streams too: when the upstream pauses, the encoder flushes what is ready. The upstream
 * sends part 1 of a page, then waits until the test has received AND decoded part 1 (a streaming decoder on the
 * client side) before it sends part 2. An encoder that only emits at the end never lets part 1 through.
 */
for (const [coding, upstreamCompression] of [['gzip', 'auto'], ['br', 'auto'], ['deflate', 'auto'], ['gzip', 'always'], ['br', 'always']]) {
  const label = upstreamCompression === 'auto' ? 'identity from the upstream' : `${coding} from the upstream too`
  test(`a rewritten page the client gets as ${coding} (${label}) is flushed through the encoder when the upstream pauses`, async () => {
    const p = `/flush-${coding}-${upstreamCompression}`
    const decodedPart1 = deferred()
    const part1 = `<!DOCTYPE html><html><head><title>t</title><link href="http://${up.host}/a.css" rel="stylesheet"></head><body><div id="root">Loading…</div>\n`
    const part2 = `<script>window.data = "http://${up.host}/api"</script></body></html>`
    routes[p] = async (req, res) => {
      const compressed = /\b(gzip|br|deflate)\b/.test(req.headers['accept-encoding'] || '')
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...(compressed ? { 'content-encoding': coding } : {}) })
      let out = res
      if (compressed) {
        out = { gzip: zlib.createGzip, br: zlib.createBrotliCompress, deflate: zlib.createDeflate }[coding]()
        out.pipe(res)
      }
      out.write(part1)
      if (compressed) out.flush()
      await Promise.race([decodedPart1.promise, new Promise((resolve) => res.on('close', resolve))])
      out.end(part2)
    }
    await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET, upstreamCompression }, async (server) => {
      const n = up.requests.length
      const L = `127.0.0.1:${server.port}`
      const expected1 = `<!DOCTYPE html><html><head><title>t</title><link href="//${L}/a.css" rel="stylesheet"></head><body>${SNIPPET}<div id="root">Loading…</div>\n`
      const expected2 = `<script>window.data = "//${L}/api"</script></body></html>`
      const done = deferred()
      let decoded = ''
      let contentEncoding
      const req = http.get(server.url + p, { agent: false, headers: { accept: ACCEPT_HTML, 'accept-encoding': coding } }, (res) => {
        contentEncoding = res.headers['content-encoding']
        if (!DECODERS[contentEncoding]) return done.reject(new Error(`expected a ${coding} response, got Content-Encoding ${contentEncoding}`))
        const decoder = DECODERS[contentEncoding]()
        res.pipe(decoder)
        decoder.on('data', (d) => {
          decoded += d.toString()
          if (decoded.startsWith(expected1)) decodedPart1.resolve()
        })
        decoder.on('end', () => (res.complete ? done.resolve() : done.reject(new Error('response cut'))))
        decoder.on('error', done.reject)
        res.on('aborted', () => done.reject(new Error('response aborted')))
      })
      req.on('error', done.reject)
      done.promise.catch(() => {})
      try {
        await withTimeout(
          Promise.race([decodedPart1.promise, done.promise]),
          10000,
          `part 1 decoded by the client before part 2 is sent (encoder buffers?); decoded so far ${JSON.stringify(decoded)}`,
        )
        assert.equal(decoded, expected1, 'part 1 arrived alone, rewritten, before the upstream sent the rest')
      } finally {
        decodedPart1.resolve()
      }
      await withTimeout(done.promise, 10000, 'the end of the response')
      req.destroy()
      assert.equal(contentEncoding, coding)
      assert.equal(decoded, expected1 + expected2)
      const asked = up.requests[n].headers['accept-encoding']
      assert.equal(asked, upstreamCompression === 'auto' ? 'identity' : coding, 'what the upstream was asked for')
    })
  })
}

/** Upstream writes headers + part of the body, waits until the client has the response headers, then dies. */
function dyingRoute(p, { headers, first }) {
  const ctl = { clientHasHeaders: deferred() }
  routes[p] = async (req, res) => {
    res.writeHead(200, headers)
    res.write(first)
    await Promise.race([ctl.clientHasHeaders.promise, new Promise((resolve) => res.on('close', resolve))])
    res.socket.destroy()
  }
  return ctl
}

const dyingCases = [
  ['passthrough with Content-Length', '*/*', {}, { 'content-type': 'application/octet-stream', 'content-length': 100000 }, Buffer.alloc(1000, 'x')],
  ['passthrough chunked', '*/*', {}, { 'content-type': 'text/plain' }, Buffer.alloc(1000, 'y')],
  ['rewritten HTML chunked', ACCEPT_HTML, {}, { 'content-type': 'text/html' }, Buffer.from(`<html><body>${'z'.repeat(1000)}\n`)],
  ['rewritten HTML with Content-Length', ACCEPT_HTML, {}, { 'content-type': 'text/html', 'content-length': 50000 }, Buffer.from(`<html><body>${'w'.repeat(1000)}\n`)],
  [
    'rewritten gzip HTML',
    ACCEPT_HTML,
    { 'accept-encoding': 'gzip' },
    { 'content-type': 'text/html', 'content-encoding': 'gzip' },
    zlib.gzipSync(Buffer.from(`<html><body>${'v'.repeat(5000)}\n`), { finishFlush: zlib.constants.Z_SYNC_FLUSH }).subarray(0, 200),
  ],
]

for (const [name, accept, extra, headers, first] of dyingCases) {
  test(`upstream dying mid-body gives the client an aborted response, never a clean end (${name})`, async () => {
    const p = '/die-' + name.replace(/\W+/g, '-')
    const ctl = dyingRoute(p, { headers, first })
    await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET }, async (server) => {
      const gotHeaders = deferred()
      const pending = request(server.url + p, {
        headers: { accept, ...extra },
        onResponse: () => {
          gotHeaders.resolve()
          ctl.clientHasHeaders.resolve()
        },
        timeout: 10000,
      })
      pending.catch(() => {})
      try {
        await withTimeout(
          Promise.race([gotHeaders.promise, pending]),
          5000,
          'response headers while the upstream body is still open (proxy holds the response until the body ends?)',
        )
        const err = await pending.then(
          (res) => assert.fail(`expected an aborted response, got a clean end: status ${res.status}, ${res.body.length} bytes`),
          (e) => e,
        )
        assert.equal(err.aborted, true, `expected an aborted response, got: ${err.message}`)
        assert.equal(err.status, 200)
      } finally {
        ctl.clientHasHeaders.resolve()
      }
      // the proxy is still healthy
      routes['/after-die'] = (req, res) => res.end('<html><body>ok</body></html>')
      const ok = await request(server.url + '/after-die', { headers: { accept: ACCEPT_HTML } })
      assert.equal(ok.status, 200)
    })
  })
}

test('a 50 MiB HTML page full of target links streams through with RSS growth < 64 MiB (proxy in a child process)', async (t) => {
  const T = up.host
  const line = `<a href="http://${T}/page">link</a>\n`
  const perChunk = Math.floor(65536 / line.length)
  const chunk = Buffer.from(line.repeat(perChunk))
  const total = 50 * 1024 * 1024
  const chunks = Math.ceil(total / chunk.length)
  const head = Buffer.from('<!DOCTYPE html><html><head></head><body>\n')
  const tail = Buffer.from('</body></html>\n')
  const links = chunks * perChunk
  routes['/huge'] = async (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.write(head)
    for (let i = 0; i < chunks; i++) {
      if (res.destroyed) return
      if (!res.write(chunk)) {
        await new Promise((resolve) => {
          const done = () => {
            res.off('drain', done)
            res.off('close', done)
            resolve()
          }
          res.on('drain', done)
          res.on('close', done)
        })
      }
    }
    res.end(tail)
  }
  routes['/warm'] = (req, res) => res.end(`<html><body><a href="http://${T}/x">x</a></body></html>`)

  const child = spawnNode(path.join(__dirname, 'fixtures/memory-child.js'))
  try {
    child.send({ type: 'start', options: { proxy: up.url, port: 0 } })
    const started = await child.next('started')
    const url = `http://127.0.0.1:${started.port}`
    // warm up allocators and connection pools
    for (let i = 0; i < 3; i++) await request(url + '/warm', { headers: { accept: ACCEPT_HTML } })
    child.send({ type: 'baseline' })
    const { rss: baseline } = await child.next('baseline')
    child.send({ type: 'sample-start' })
    await child.next('sampling')

    const L = `127.0.0.1:${started.port}`
    const rewritten = Buffer.from(`<a href="//${L}/page">link</a>`)
    const original = Buffer.from(`http://${T}`)
    let bytes = 0
    let found = 0
    let leftovers = 0
    let carry = Buffer.alloc(0)
    const count = (buf, needle) => {
      let n = 0
      let i = 0
      while ((i = buf.indexOf(needle, i)) >= 0) {
        n++
        i += needle.length
      }
      return n
    }
    const keep = Math.max(rewritten.length, original.length) - 1
    const res = await request(url + '/huge', {
      headers: { accept: ACCEPT_HTML },
      timeout: 60000,
      onData: (c) => {
        bytes += c.length
        const b = Buffer.concat([carry, c])
        found += count(b, rewritten) - count(carry, rewritten)
        leftovers += count(b, original) - count(carry, original)
        carry = b.subarray(Math.max(0, b.length - keep))
      },
      collect: false,
    })

    child.send({ type: 'sample-stop' })
    const sampled = await child.next('sampled')
    const growth = sampled.maxRss - baseline
    const expectedBytes = head.length + tail.length + links * (line.length + (`//${L}`.length - `http://${T}`.length))
    t.diagnostic(`RSS baseline ${(baseline / 1048576).toFixed(1)} MiB, peak growth ${(growth / 1048576).toFixed(1)} MiB, ${bytes} bytes, ${found} links`)
    assert.equal(res.status, 200)
    assert.equal(found, links, 'every link rewritten exactly once')
    assert.equal(leftovers, 0, 'no target link left unrewritten')
    assert.equal(bytes, expectedBytes, 'received byte count')
    assert.ok(growth < 64 * 1024 * 1024, `RSS grew by ${(growth / 1048576).toFixed(1)} MiB (baseline ${(baseline / 1048576).toFixed(1)} MiB)`)

    child.send({ type: 'stop' })
    await child.next('stopped')
  } finally {
    await child.kill()
  }
})

// A small compressed body may decode to a GiB. A client that takes it uncompressed gets it whole, and the proxy
// holds a bounded part of it at a time. Before the fix, each upstream chunk went out decoded at once: 500 MiB of
// peak RSS for a 1 MiB gzip body of 1 GiB, 1.6 GiB for an 833-byte br body of 512 MiB (a brotli decoder takes
// the whole body at once and gives out from it).
test('small gzip and br pages that decode to 256-512 MiB go to an uncompressed client whole, with RSS growth < 64 MiB (child process)', { timeout: 180000 }, async (t) => {
  const mib = 1024 * 1024
  const head = Buffer.from('<!doctype html><html><head><title>big</title></head><p>')
  // 512 gzip members of 1 MiB of `a` each (a gzip body may hold several members; Node and browsers read them all).
  const member = zlib.gzipSync(Buffer.alloc(mib, 'a'), { level: 9 })
  const bodies = {
    gzip: { body: Buffer.concat([zlib.gzipSync(head), ...Array(512).fill(member)]), decoded: 512 * mib },
    br: {
      body: zlib.brotliCompressSync(Buffer.concat([head, Buffer.alloc(256 * mib, 'a')]), { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } }),
      decoded: 256 * mib,
    },
  }
  for (const [coding, { body }] of Object.entries(bodies)) {
    routes[`/expands-${coding}`] = (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': coding, 'content-length': body.length })
      res.end(body)
    }
  }
  const child = spawnNode(path.join(__dirname, 'fixtures/memory-child.js'))
  try {
    child.send({ type: 'start', options: { proxy: up.url, port: 0 } })
    const { port } = await child.next('started')
    for (const [coding, { body, decoded }] of Object.entries(bodies)) {
      child.send({ type: 'baseline' })
      const { rss: baseline } = await child.next('baseline')
      child.send({ type: 'sample-start' })
      await child.next('sampling')
      let bytes = 0
      let notA = 0
      const res = await request(`http://127.0.0.1:${port}/expands-${coding}`, {
        headers: { accept: ACCEPT_HTML, 'accept-encoding': 'identity' },
        timeout: 100000,
        collect: false,
        onData: (c) => {
          const from = Math.max(0, head.length - bytes)
          for (let i = from; i < c.length; i++) if (c[i] !== 97) notA++
          bytes += c.length
        },
      })
      child.send({ type: 'sample-stop' })
      const sampled = await child.next('sampled')
      const growth = sampled.maxRss - baseline
      t.diagnostic(`${coding}: ${body.length} B, ${bytes} B out; RSS baseline ${(baseline / mib).toFixed(1)} MiB, peak growth ${(growth / mib).toFixed(1)} MiB`)
      assert.equal(res.status, 200, coding)
      assert.equal(res.headers['content-encoding'], undefined, `${coding}: sent uncompressed, as asked`)
      assert.equal(bytes, head.length + decoded, `${coding}: every decoded byte arrives`)
      assert.equal(notA, 0, `${coding}: after the head, the bytes are the upstream's`)
      assert.ok(growth < 64 * mib, `${coding}: RSS grew by ${(growth / mib).toFixed(1)} MiB`)
    }
    child.send({ type: 'stop' })
    await child.next('stopped')
  } finally {
    await child.kill()
  }
})
