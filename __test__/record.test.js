'use strict'
// Recording (issue 15, the recording half): streams teed to a cassette with their timing, secrets kept
// out of it, and the cassette exported as HAR. Real upstreams on 127.0.0.1, real files in a temp dir.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const http = require('node:http')
const os = require('node:os')
const path = require('node:path')
const zlib = require('node:zlib')
const { execFile, spawnSync } = require('node:child_process')
const { performance } = require('node:perf_hooks')
const { ROOT, lib, startUpstream, request, withProxy, withTimeout, mulberry32, decodeBody, deferred, stopIfStarted } = require('./helpers.js')

const OPENAI_KEY = 'sk-proj-TESTKEYabcdefghijklmnopqrstuvwxyz0123'
const ANTHROPIC_KEY = 'sk-ant-api03-TESTKEYabcdefghijklmnopqrstuvwxyz'

function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-record-'))
}

/** The cassette's lines, parsed. */
/** The cassette's complete lines: a line the writer is still appending (no newline yet) is not one. */
function lines(file) {
  return fs.readFileSync(file, 'utf8').split('\n').slice(0, -1).filter(Boolean).map((l) => JSON.parse(l))
}

/** Waits until the recording has written `n` exchanges (the writer runs off the request path). */
async function written(server, n, label = 'recording') {
  await withTimeout(
    (async () => {
      while (server.recording().written + server.recording().refused < n) await new Promise((r) => setTimeout(r, 10))
    })(),
    20000,
    label,
  )
}

/**
 * An SSE upstream route: `events` written one `res.write` each, `gaps[i]` ms apart; records send times.
 * `before(i)`, when given, is awaited before event i is written (a test's gate).
 */
function sseRoute(events, gaps, sent, { gzip = false, before } = {}) {
  return (req, res) => {
    const t0 = performance.now()
    req.resume()
    req.on('end', async () => {
      const headers = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }
      let out = res
      if (gzip) {
        headers['content-encoding'] = 'gzip'
        out = zlib.createGzip()
        out.pipe(res)
      }
      res.writeHead(200, headers)
      for (let i = 0; i < events.length; i++) {
        if (before) await before(i)
        await new Promise((r) => setTimeout(r, gaps[i]))
        sent.push({ at: performance.now() - t0, abs: performance.now() })
        out.write(events[i])
        if (gzip) out.flush(zlib.constants.Z_SYNC_FLUSH)
      }
      out.end()
    })
  }
}

function openaiEvents(n) {
  const events = []
  for (let i = 0; i < n; i++) {
    const chunk = { id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: `tok${i} ` } }] }
    events.push(`data: ${JSON.stringify(chunk)}\n\n`)
  }
  events.push('data: [DONE]\n\n')
  return events
}

function anthropicEvents(n) {
  const events = ['event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1"}}\n\n']
  for (let i = 0; i < n; i++) {
    const delta = { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: `word${i} ` } }
    events.push(`event: content_block_delta\ndata: ${JSON.stringify(delta)}\n\n`)
  }
  events.push('event: message_stop\ndata: {"type":"message_stop"}\n\n')
  return events
}

test('an OpenAI-style stream is teed: the client gets each event at once, the cassette holds each with its offset', async () => {
  const dir = tempDir()
  const cassette = path.join(dir, 'openai.jsonl')
  const rnd = mulberry32(15)
  const events = openaiEvents(40)
  const gaps = events.map(() => 15 + Math.floor(rnd() * 46))
  const sent = []
  // Lockstep: the upstream writes an event only once the client has the one before, so a proxy (or a
  // recording tee) that held an event back would stall the stream; each wait is guarded, and noted.
  const got = events.map(() => deferred())
  const stalls = []
  const before = async (i) => {
    if (i === 0) return
    await withTimeout(got[i - 1].promise, 10000, `event ${i - 1}`).catch(() => stalls.push(i - 1))
  }
  const upstream = await startUpstream({ '/v1/chat/completions': sseRoute(events, gaps, sent, { before }) })
  try {
    await withProxy({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (server) => {
      const arrivals = []
      let received = ''
      const body = JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] })
      const res = await request(`${server.url}/v1/chat/completions?api_key=${OPENAI_KEY}&q=1`, {
        method: 'POST',
        headers: { authorization: `Bearer ${OPENAI_KEY}`, 'content-type': 'application/json', 'x-api-key': OPENAI_KEY },
        body,
        onData: (c) => {
          received += c.toString()
          // Count whole events received so far; note when each one completed.
          while (arrivals.length < events.length && received.length >= events.slice(0, arrivals.length + 1).join('').length) {
            arrivals.push(performance.now())
            got[arrivals.length - 1].resolve()
          }
        },
      })
      assert.equal(res.status, 200)
      assert.equal(res.body.toString(), events.join(''), 'the client got every event unchanged')
      // Not held back: each event reached the client before the upstream wrote the next.
      assert.deepEqual(stalls, [], 'events held back by the proxy until the upstream wrote more')
      await written(server, 1)
      assert.equal(server.recording().written, 1)
    })
    const text = fs.readFileSync(cassette, 'utf8')
    assert.ok(!text.includes('TESTKEY'), 'the API key appears nowhere in the cassette')
    const [head, req, res, ...rest] = lines(cassette)
    assert.equal(head.type, 'cassette')
    assert.equal(req.type, 'request')
    assert.equal(req.method, 'POST')
    assert.equal(req.url, '/v1/chat/completions?api_key=[redacted]&q=1')
    assert.deepEqual(req.headers.find(([n]) => n === 'authorization'), ['authorization', '[redacted]'])
    assert.deepEqual(req.headers.find(([n]) => n === 'x-api-key'), ['x-api-key', '[redacted]'])
    assert.equal(JSON.parse(req.body.text).model, 'gpt-4o')
    assert.equal(res.type, 'response')
    assert.equal(res.status, 200)
    assert.equal(res.encoding, 'identity')
    const bodies = rest.filter((l) => l.type === 'body')
    assert.deepEqual(bodies.map((b) => b.text), events, 'one line per event, byte for byte')
    for (let i = 1; i < bodies.length; i++) {
      assert.ok(bodies[i].at >= bodies[i - 1].at, 'offsets never go back')
      assert.ok(bodies[i].chunk >= bodies[i - 1].chunk)
    }
    assert.ok(bodies[0].at >= res.at)
    // The upstream wrote each event alone: the cassette's chunks follow those writes (an event is
    // never split across chunks; a chunk holding two means TCP joined two writes).
    const chunks = new Set(bodies.map((b) => b.chunk))
    assert.ok(chunks.size >= events.length * 0.75, `${chunks.size} chunks for ${events.length} writes`)
    // The recorded schedule follows the upstream's: the spread of offsets is the upstream's spread.
    const recorded = bodies[bodies.length - 1].at - bodies[0].at
    const upstreamSpread = sent[sent.length - 1].at - sent[0].at
    assert.ok(Math.abs(recorded - upstreamSpread) < upstreamSpread * 0.25, `recorded ${recorded} ms, upstream ${upstreamSpread} ms`)
    const end = rest[rest.length - 1]
    assert.equal(end.type, 'end')
    assert.equal(end.error, undefined)
  } finally {
    await upstream.close()
  }
})

test('an Anthropic-style gzip stream is stored decoded, one named event per line, keys nowhere', async () => {
  const dir = tempDir()
  const cassette = path.join(dir, 'anthropic.jsonl')
  const events = anthropicEvents(12)
  const sent = []
  const upstream = await startUpstream({ '/v1/messages': sseRoute(events, events.map(() => 15), sent, { gzip: true }) })
  try {
    await withProxy({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (server) => {
      const res = await request(`${server.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': ANTHROPIC_KEY, 'anthropic-version': '2023-06-01', 'accept-encoding': 'gzip', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude', stream: true, messages: [{ role: 'user', content: 'hello' }] }),
      })
      assert.equal(res.headers['content-encoding'], 'gzip', 'the client still gets the upstream gzip')
      assert.equal(zlib.gunzipSync(res.body).toString(), events.join(''))
      await written(server, 1)
    })
    assert.ok(!fs.readFileSync(cassette, 'utf8').includes('TESTKEY'))
    const all = lines(cassette)
    const response = all.find((l) => l.type === 'response')
    assert.equal(response.encoding, 'gzip')
    assert.ok(!response.headers.some(([n]) => n === 'content-encoding' || n === 'content-length'))
    const bodies = all.filter((l) => l.type === 'body')
    assert.deepEqual(bodies.map((b) => b.text), events)
    assert.ok(bodies.filter((b) => b.text.startsWith('event: content_block_delta\n')).length === 12)
  } finally {
    await upstream.close()
  }
})

test('a body holding a key-shaped string is refused, named; the client still gets its answer; redact.allow lets it through', async () => {
  const upstream = await startUpstream({
    '/v1/chat/completions': (req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{"ok":true}')
      })
    },
  })
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `here is my key ${OPENAI_KEY}` }] })
  const post = (server) =>
    request(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  try {
    const dir = tempDir()
    const refused = path.join(dir, 'refused.jsonl')
    await withProxy({ proxy: upstream.url, port: 0, record: { path: refused } }, async (server) => {
      const res = await post(server)
      assert.equal(res.status, 200)
      assert.equal(res.body.toString(), '{"ok":true}')
      await written(server, 1)
      const status = server.recording()
      assert.equal(status.refused, 1)
      assert.equal(status.written, 0)
      assert.match(status.lastRefusal, /request body field `messages\[0\]\.content` holds a string shaped like an OpenAI key \(sk-\.\.\.\)/)
    })
    assert.ok(!fs.readFileSync(refused, 'utf8').includes('TESTKEY'))
    assert.deepEqual(lines(refused).map((l) => l.type), ['cassette'])

    const allowed = path.join(dir, 'allowed.jsonl')
    const record = { path: allowed, redact: { allow: ['messages[0].content'] } }
    await withProxy({ proxy: upstream.url, port: 0, record }, async (server) => {
      await post(server)
      await written(server, 1)
      assert.equal(server.recording().written, 1)
    })
    assert.equal(JSON.parse(lines(allowed)[1].body.text).messages[0].content, `here is my key ${OPENAI_KEY}`)
  } finally {
    await upstream.close()
  }
})

test('record.match limits what is recorded; redact.headers and redact.json redact more', async () => {
  const upstream = await startUpstream({
    '/v1/echo': (req, res) => {
      const chunks = []
      req.on('data', (c) => chunks.push(c))
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(Buffer.concat(chunks))
      })
    },
    '/other': (req, res) => res.end('other'),
  })
  try {
    const cassette = path.join(tempDir(), 'match.jsonl')
    const record = { path: cassette, match: '/v1/**', redact: { headers: ['X-Session'], json: ['$.user', 'metadata.email'] } }
    await withProxy({ proxy: upstream.url, port: 0, record }, async (server) => {
      assert.equal((await request(`${server.url}/other`)).body.toString(), 'other')
      const body = JSON.stringify({ user: 'alice', metadata: { email: 'a@example.com', plan: 'pro' } })
      const res = await request(`${server.url}/v1/echo`, { method: 'POST', headers: { 'x-session': 's3cr3t' }, body })
      assert.equal(res.body.toString(), body, 'the client gets the unredacted answer')
      await written(server, 1)
    })
    const all = lines(cassette)
    assert.deepEqual(all.filter((l) => l.type === 'request').map((l) => l.url), ['/v1/echo'])
    const text = fs.readFileSync(cassette, 'utf8')
    assert.ok(!text.includes('alice') && !text.includes('a@example.com') && !text.includes('s3cr3t'), text)
    assert.deepEqual(JSON.parse(all[1].body.text), { user: '[redacted]', metadata: { email: '[redacted]', plan: 'pro' } })
  } finally {
    await upstream.close()
  }
})

test('secrets in the target\'s response headers are redacted in the cassette (Set-Cookie, x-auth-token, redact.headers), while the client gets them', async () => {
  const upstream = await startUpstream({
    '/login': (req, res) => {
      res.writeHead(200, {
        'content-type': 'text/plain',
        'set-cookie': 'session=c00kieS3cret; Path=/; HttpOnly',
        'x-auth-token': 'T0kenS3cret',
        'x-upstream-session': 'Sess10nS3cret',
        'x-plain': 'kept as it is',
      })
      res.end('logged in')
    },
  })
  try {
    const cassette = path.join(tempDir(), 'response-headers.jsonl')
    await withProxy({ proxy: upstream.url, port: 0, quiet: true, record: { path: cassette, redact: { headers: ['X-Upstream-Session'] } } }, async (server) => {
      const res = await request(`${server.url}/login`)
      assert.equal(res.headers['x-auth-token'], 'T0kenS3cret', 'the client gets the header')
      assert.match(String(res.headers['set-cookie']), /c00kieS3cret/)
      await written(server, 1)
    })
    const text = fs.readFileSync(cassette, 'utf8')
    for (const secret of ['c00kieS3cret', 'T0kenS3cret', 'Sess10nS3cret']) assert.ok(!text.includes(secret), `${secret} in ${text}`)
    const response = lines(cassette).find((l) => l.type === 'response')
    const header = (name) => response.headers.find(([n]) => n === name)
    assert.deepEqual(header('x-auth-token'), ['x-auth-token', '[redacted]'])
    assert.deepEqual(header('x-upstream-session'), ['x-upstream-session', '[redacted]'])
    assert.deepEqual(header('x-plain'), ['x-plain', 'kept as it is'])
  } finally {
    await upstream.close()
  }
})

test('a request body over 1 MiB is recorded as its length and CRC-32, and reaches the target whole', async () => {
  const got = []
  const upstream = await startUpstream({
    '/upload': (req, res) => {
      const chunks = []
      req.on('data', (c) => chunks.push(c))
      req.on('end', () => {
        got.push(Buffer.concat(chunks))
        res.end('stored')
      })
    },
  })
  try {
    const cassette = path.join(tempDir(), 'big-request.jsonl')
    const body = Buffer.alloc(3 * 1024 * 1024 + 17)
    for (let i = 0; i < body.length; i++) body[i] = (i * 31 + (i >> 11)) & 0xff
    await withProxy({ proxy: upstream.url, port: 0, quiet: true, record: { path: cassette } }, async (server) => {
      const res = await request(`${server.url}/upload`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body })
      assert.equal(res.body.toString(), 'stored')
      await written(server, 1)
    })
    assert.ok(got[0].equals(body), 'the target got every byte')
    const requestLine = lines(cassette).find((l) => l.type === 'request')
    const crc = zlib.crc32(body).toString(16).padStart(8, '0')
    assert.equal(requestLine.body.text, `[request body not kept: ${body.length} bytes, crc32 ${crc}, over 1 MiB]`)
  } finally {
    await upstream.close()
  }
})

test('toHar and `devproxy har`: a recorded cassette becomes HAR 1.2; a corrupt one is an error naming the line', async () => {
  const dir = tempDir()
  const cassette = path.join(dir, 'har.jsonl')
  const events = openaiEvents(5)
  const upstream = await startUpstream({ '/v1/chat/completions': sseRoute(events, events.map(() => 15), []) })
  try {
    await withProxy({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (server) => {
      await request(`${server.url}/v1/chat/completions`, { method: 'POST', body: '{"stream":true}' })
      await written(server, 1)
    })
  } finally {
    await upstream.close()
  }
  const { toHar } = lib()
  const har = JSON.parse(await toHar(cassette))
  assert.equal(har.log.version, '1.2')
  const [entry] = har.log.entries
  assert.equal(entry.request.method, 'POST')
  assert.match(entry.request.url, /^http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions$/)
  assert.equal(entry.request.postData.text, '{"stream":true}')
  assert.equal(entry.response.status, 200)
  assert.equal(entry.response.content.text, events.join(''))
  assert.ok(entry.timings.wait >= 0 && entry.timings.receive > 0, JSON.stringify(entry.timings))
  assert.ok(entry.time >= entry.timings.wait + entry.timings.receive - 0.01)

  // Cut in the middle of its fourth line: the error names line 4.
  const good = fs.readFileSync(cassette, 'utf8').split('\n')
  const corrupt = path.join(dir, 'corrupt.jsonl')
  fs.writeFileSync(corrupt, good.slice(0, 3).join('\n') + '\n' + good[3].slice(0, 20))
  await assert.rejects(toHar(corrupt), /corrupt\.jsonl, line 4: not a cassette line/)
  const edited = path.join(dir, 'edited.jsonl')
  fs.writeFileSync(edited, good.filter((_, i) => i !== 1).join('\n'))
  await assert.rejects(toHar(edited), /line 2: response line for exchange 1, whose request line does not come before it/)
  await assert.rejects(toHar(path.join(dir, 'missing.jsonl')), /cannot read cassette .*missing\.jsonl/)

  const cli = (args) =>
    new Promise((resolve) => {
      execFile(process.execPath, [path.join(ROOT, 'bin/devproxy.js'), 'har', ...args], (error, stdout, stderr) =>
        resolve({ code: error ? error.code : 0, stdout, stderr }),
      )
    })
  const out = path.join(dir, 'out.har')
  assert.equal((await cli([cassette, out])).code, 0)
  assert.equal(JSON.parse(fs.readFileSync(out, 'utf8')).log.entries.length, 1)
  const bad = await cli([corrupt])
  assert.equal(bad.code, 1)
  assert.match(bad.stderr, /line 4/)
})

test('recording a 50 MiB download keeps memory bounded and writes it whole', async () => {
  const MiB = 1024 * 1024
  const piece = Buffer.alloc(64 * 1024, 'abcdefghijklmnopqrstuvwxyz0123456789\n')
  const upstream = await startUpstream({
    '/big': async (req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': 50 * MiB })
      for (let sent = 0; sent < 50 * MiB; sent += piece.length) {
        if (!res.write(piece)) await new Promise((r) => res.once('drain', r))
      }
      res.end()
    },
  })
  const cassette = path.join(tempDir(), 'big.jsonl')
  try {
    await withProxy({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (server) => {
      global.gc && global.gc()
      const before = process.memoryUsage().rss
      let peak = before
      let bytes = 0
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().rss)
      }, 20)
      try {
        await request(`${server.url}/big`, { collect: false, timeout: 120000, onData: (c) => (bytes += c.length) })
        await written(server, 1, '50 MiB recording')
      } finally {
        clearInterval(sampler)
      }
      peak = Math.max(peak, process.memoryUsage().rss)
      assert.equal(bytes, 50 * MiB)
      assert.ok(peak - before < 64 * MiB, `RSS grew ${((peak - before) / MiB).toFixed(1)} MiB`)
    })
    // Every byte is in the cassette, and no spill file is left behind.
    let stored = 0
    for (const l of lines(cassette)) if (l.type === 'body') stored += l.text.length
    assert.equal(stored, 50 * MiB)
    assert.deepEqual(fs.readdirSync(path.dirname(cassette)), ['big.jsonl'])
  } finally {
    await upstream.close()
  }
})

test('a cassette writer slower than the proxy: the download waits for it, and every chunk is recorded once, in order', { skip: process.platform === 'win32' }, async () => {
  const KiB = 1024
  // Each 64 KiB piece of the second download is different: a chunk lost or written twice shows.
  const piece = (i) => Buffer.from(`<${String(i).padStart(6, '0')}>`.padEnd(64 * KiB, String.fromCharCode(97 + (i % 26))))
  const PIECES = 256 // 16 MiB, far more than the recording's channel holds (32 chunks)
  const upstream = await startUpstream({
    '/first': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end('x'.repeat(512 * KiB))
    },
    '/second': async (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      for (let i = 0; i < PIECES; i++) {
        if (!res.write(piece(i))) await new Promise((r) => res.once('drain', r))
      }
      res.end()
    },
  })
  // The cassette is a pipe this test reads only when it chooses: until then the writer thread is stuck
  // in write() (the first exchange's lines are far more than a pipe holds).
  const dir = tempDir()
  const fifo = path.join(dir, 'slow.jsonl')
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo')
  const fd = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK)
  const read = []
  const drain = () => {
    const buffer = Buffer.alloc(256 * KiB)
    for (;;) {
      let n
      try {
        n = fs.readSync(fd, buffer)
      } catch (err) {
        if (err.code === 'EAGAIN') return
        throw err
      }
      if (n === 0) return
      read.push(Buffer.from(buffer.subarray(0, n)))
    }
  }
  const ends = () => Buffer.concat(read).toString().split('\n').filter((l) => l.includes('"type":"end"')).length
  try {
    await withProxy({ proxy: upstream.url, port: 0, record: { path: fifo } }, async (server) => {
      assert.equal((await request(`${server.url}/first`)).body.length, 512 * KiB)
      let received = 0
      const second = request(`${server.url}/second`, { collect: false, timeout: 120000, onData: (c) => (received += c.length) })
      // Until the pipe is read, the download stops short: the proxy waits for the writer.
      let last = -1
      await withTimeout(
        (async () => {
          while (received !== last || received === 0) {
            last = received
            await new Promise((r) => setTimeout(r, 300))
          }
        })(),
        30000,
        'the download to stall behind the writer',
      )
      assert.ok(received < PIECES * 64 * KiB, `the whole download (${received} bytes) went through while the writer was stuck`)
      // Read the pipe, a little at a time, until both exchanges have ended in it.
      await withTimeout(
        (async () => {
          while (ends() < 2) {
            drain()
            await new Promise((r) => setTimeout(r, 5))
          }
        })(),
        60000,
        'both exchanges written',
      )
      await second
      assert.equal(received, PIECES * 64 * KiB)
    })
  } finally {
    drain()
    fs.closeSync(fd)
    await upstream.close()
  }
  const all = Buffer.concat(read).toString().split('\n').filter(Boolean).map((l) => JSON.parse(l))
  const id = all.find((l) => l.type === 'request' && l.url === '/second').id
  const bodyLines = all.filter((l) => l.type === 'body' && l.id === id)
  assert.deepEqual(bodyLines.map((l) => l.chunk), bodyLines.map((_, i) => i), 'each upstream chunk once, in order')
  const text = bodyLines.map((l) => l.text).join('')
  const expected = Array.from({ length: PIECES }, (_, i) => piece(i).toString()).join('')
  assert.equal(text.length, expected.length, 'the recorded body has every byte')
  assert.ok(text === expected, 'the recorded body is the download, chunk for chunk')
})

test('a client that goes away before the response head still ends its exchange in the cassette', async () => {
  const waiting = []
  const upstream = await startUpstream({ '/slow': (req, res) => waiting.push(res) }) // answers when told
  const cassette = path.join(tempDir(), 'gone.jsonl')
  try {
    await withProxy({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (server) => {
      const req = http.request(`${server.url}/slow`, { agent: false })
      req.on('error', () => {})
      req.end()
      await withTimeout((async () => { while (!waiting.length) await new Promise((r) => setTimeout(r, 5)) })(), 10000, 'upstream request')
      req.destroy() // the proxy is waiting for the upstream's head
      await written(server, 1, 'the abandoned exchange')
      waiting[0].end('late')
    })
    const all = lines(cassette)
    assert.deepEqual(all.map((l) => l.type), ['cassette', 'request', 'end'])
    assert.match(all[2].error, /client went away before the response head/)
  } finally {
    await upstream.close()
  }
})

test('what is recorded replays: the same events, byte for byte, with the upstream gone', async () => {
  const cassette = path.join(tempDir(), 'roundtrip.jsonl')
  const events = anthropicEvents(6)
  const upstream = await startUpstream({ '/v1/messages': sseRoute(events, events.map(() => 15), [], { gzip: true }) })
  const body = JSON.stringify({ model: 'claude', stream: true, messages: [{ role: 'user', content: 'hello' }] })
  const post = (server) =>
    request(`${server.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip' }, body })
  try {
    await withProxy({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (server) => {
      const res = await post(server)
      assert.equal(decodeBody(res.body, res.headers['content-encoding']).toString(), events.join(''))
      await written(server, 1)
    })
  } finally {
    await upstream.close()
  }
  await withProxy({ proxy: upstream.url, port: 0, replay: { path: cassette, speed: 0 } }, async (server) => {
    const res = await post(server)
    assert.equal(res.status, 200)
    assert.equal(decodeBody(res.body, res.headers['content-encoding']).toString(), events.join(''), 'the replayed stream is the recorded one')
  })
})

test('server.record() starts a recording at run time; passthrough() ends it', async () => {
  const upstream = await startUpstream({ '/v1/a': (req, res) => res.end('a') })
  const cassette = path.join(tempDir(), 'runtime.jsonl')
  try {
    await withProxy({ proxy: upstream.url, port: 0 }, async (server) => {
      assert.equal(server.recording(), null)
      await request(`${server.url}/v1/a?n=0`)
      await server.record({ path: cassette })
      assert.equal(server.recording().path, cassette)
      await request(`${server.url}/v1/a?n=1`)
      await written(server, 1)
      server.passthrough()
      assert.equal(server.recording(), null)
      await request(`${server.url}/v1/a?n=2`)
      await assert.rejects(server.record({ path: '/nonexistent-dir-xyz/c.jsonl' }), /record\.path/)
    })
    assert.deepEqual(lines(cassette).filter((l) => l.type === 'request').map((l) => l.url), ['/v1/a?n=1'])
  } finally {
    await upstream.close()
  }
})

test('a bad record option is refused naming it', async () => {
  await assert.rejects(stopIfStarted(lib().start({ proxy: 'http://127.0.0.1:9', port: 0, record: {} })), /record\.path/)
  await assert.rejects(
    lib().start({ proxy: 'http://127.0.0.1:9', port: 0, record: { path: '/nonexistent-dir-xyz/c.jsonl' } }),
    /record\.path.*does not exist/,
  )
  await assert.rejects(
    lib().start({ proxy: 'http://127.0.0.1:9', port: 0, record: { path: path.join(tempDir(), 'c.jsonl'), redact: { json: ['a[x]'] } } }),
    /record\.redact\.json\[0\]/,
  )
  if (process.platform === 'linux') {
    // A cassette that cannot be written (every write to /dev/full fails) is refused at start.
    await assert.rejects(stopIfStarted(lib().start({ proxy: 'http://127.0.0.1:9', port: 0, record: { path: '/dev/full' } })), /record\.path.*cannot write '\/dev\/full'/)
  }
})

/** Waits until the cassette holds `n` ended exchanges (a recorder with no `server.recording()`). */
async function ended(file, n, label) {
  await withTimeout(
    (async () => {
      while (!fs.existsSync(file) || lines(file).filter((l) => l.type === 'end').length < n) {
        await new Promise((r) => setTimeout(r, 10))
      }
    })(),
    20000,
    label,
  )
}

/**
 * An upstream whose `/v1/echo` answers `answer(body, hit)` as JSON: the request's JSON body and the
 * count of requests so far, kept in `upstream.hits` (which a test may reset).
 */
async function echoUpstream(answer) {
  const upstream = await startUpstream({
    '/v1/echo': (req, res) => {
      const chunks = []
      req.on('data', (c) => chunks.push(c))
      req.on('end', () => {
        upstream.hits++
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify(answer(JSON.parse(Buffer.concat(chunks).toString()), upstream.hits)))
      })
    },
  })
  upstream.hits = 0
  return upstream
}

test("replay onMiss 'record': a miss goes to the target and is appended with a new id, secrets redacted; it replays from then on", async () => {
  const upstream = await echoUpstream((got, hit) => ({ hit, got }))
  const cassette = path.join(tempDir(), 'update.jsonl')
  const post = (server, q, headers = {}) =>
    request(`${server.url}/v1/echo`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ q }) })
  const secrets = { authorization: `Bearer ${OPENAI_KEY}`, 'x-session': 'sess-s3cr3t-value' }
  let answers
  try {
    // One exchange recorded the ordinary way: id 1.
    await withProxy({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (server) => {
      assert.equal(JSON.parse((await post(server, 1)).body).hit, 1)
      await written(server, 1)
    })
    const replay = { path: cassette, speed: 0, onMiss: 'record', redact: { headers: ['X-Session'] } }
    await withProxy({ proxy: upstream.url, port: 0, replay }, async (server) => {
      const first = JSON.parse((await post(server, 1)).body)
      assert.deepEqual(first, { hit: 1, got: { q: 1 } }, 'a hit is answered from the cassette')
      const missed = JSON.parse((await post(server, 2, secrets)).body)
      assert.deepEqual(missed, { hit: 2, got: { q: 2 } }, 'a miss goes to the target, its body as sent')
      assert.equal(upstream.hits, 2)
      await ended(cassette, 2, 'the miss appended')
      const again = JSON.parse((await post(server, 2, secrets)).body)
      assert.deepEqual(again, missed, 'the recorded miss is replayed for an identical request')
      assert.equal(upstream.hits, 2, 'the identical request did not reach the target')
      server.passthrough()
      assert.equal(JSON.parse((await post(server, 3)).body).hit, 3, 'passthrough proxies again')
      answers = [first, missed]
    })
  } finally {
    await upstream.close()
  }
  const all = lines(cassette)
  assert.equal(all.filter((l) => l.type === 'cassette').length, 1, 'one header: appended, not rewritten')
  const requests = all.filter((l) => l.type === 'request')
  assert.deepEqual(requests.map((l) => l.id), [1, 2], 'unique ids, the new one after the highest')
  assert.deepEqual(requests.map((l) => JSON.parse(l.body.text)), [{ q: 1 }, { q: 2 }])
  const headers = Object.fromEntries(requests[1].headers)
  assert.equal(headers.authorization, '[redacted]')
  assert.equal(headers['x-session'], '[redacted]', 'replay.redact.headers applies')
  const text = fs.readFileSync(cassette, 'utf8')
  assert.ok(!text.includes(OPENAI_KEY) && !text.includes('sess-s3cr3t-value'), text)
  // A new start, the upstream gone, strict: both are answered from the file.
  await withProxy({ proxy: upstream.url, port: 0, replay: { path: cassette, speed: 0 } }, async (server) => {
    assert.deepEqual(JSON.parse((await post(server, 1)).body), answers[0])
    assert.deepEqual(JSON.parse((await post(server, 2)).body), answers[1])
    assert.equal((await post(server, 3)).status, 404, 'anything else still misses')
  })
  assert.equal(upstream.hits, 3)
})

test("replay onMiss 'record': a miss refused for a key-shaped string is not written, so it reaches the target each time", async () => {
  const upstream = await echoUpstream((got) => ({ got }))
  const cassette = path.join(tempDir(), 'refused-miss.jsonl')
  const post = (server, body) => request(`${server.url}/v1/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  try {
    // A cassette of one exchange, recorded the ordinary way.
    await withProxy({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (server) => {
      await post(server, { q: 'seed' })
      await written(server, 1)
    })
    upstream.hits = 0
    await withProxy({ proxy: upstream.url, port: 0, replay: { path: cassette, speed: 0, onMiss: 'record' } }, async (server) => {
      const secret = { q: 'mine', key: OPENAI_KEY }
      assert.equal((await post(server, secret)).status, 200)
      assert.equal(upstream.hits, 1)
      // A plain miss after it: once it is in the file, the writer has settled the first one too (in order).
      assert.equal((await post(server, { q: 'plain' })).status, 200)
      await ended(cassette, 2, 'the plain miss appended')
      assert.deepEqual(JSON.parse((await post(server, secret)).body), { got: secret }, 'the refused miss is answered')
      assert.equal(upstream.hits, 3, 'the refused miss reached the target again')
      assert.deepEqual(JSON.parse((await post(server, { q: 'plain' })).body), { got: { q: 'plain' } })
      assert.equal(upstream.hits, 3, 'the plain miss, written, is replayed')
    })
  } finally {
    await upstream.close()
  }
  const text = fs.readFileSync(cassette, 'utf8')
  assert.ok(!text.includes('TESTKEY'), 'the key is nowhere in the cassette')
  assert.deepEqual(lines(cassette).filter((l) => l.type === 'request').map((l) => JSON.parse(l.body.text)), [{ q: 'seed' }, { q: 'plain' }])
})

test('routes[prefix].record records only that route, to its own cassette; a bad one is refused naming it', async () => {
  const upstream = await startUpstream({ '/v1/a': (req, res) => res.end('a'), '/other': (req, res) => res.end('other') })
  const dir = tempDir()
  const routeCassette = path.join(dir, 'route.jsonl')
  const mainCassette = path.join(dir, 'main.jsonl')
  try {
    const options = {
      proxy: upstream.url,
      port: 0,
      record: { path: mainCassette },
      routes: { '/v1': { target: upstream.url, record: { path: routeCassette, redact: { headers: ['x-session'] } } } },
    }
    await withProxy(options, async (server) => {
      assert.equal((await request(`${server.url}/other`)).body.toString(), 'other')
      await written(server, 1)
      assert.equal((await request(`${server.url}/v1/a`, { headers: { 'x-session': 'route-s3cr3t' } })).body.toString(), 'a')
      await ended(routeCassette, 1, 'the route recording')
      assert.equal(server.recording().written, 1, 'the route exchange is not in the main recording')
      // recordings(): the server's, then the route's, named by its prefix.
      assert.deepEqual(server.recordings().map((r) => [r.route, r.path]), [[undefined, mainCassette], ['/v1', routeCassette]])
    })
  } finally {
    await upstream.close()
  }
  const urls = (file) => lines(file).filter((l) => l.type === 'request').map((l) => l.url)
  assert.deepEqual(urls(routeCassette), ['/v1/a'])
  assert.deepEqual(urls(mainCassette), ['/other'])
  assert.ok(!fs.readFileSync(routeCassette, 'utf8').includes('route-s3cr3t'))
  await assert.rejects(
    lib().start({ proxy: 'http://127.0.0.1:9', port: 0, routes: { '/v1': { target: 'http://127.0.0.1:9', record: {} } } }),
    /routes\['\/v1'\]\.record\.path/,
  )
})

test('replay.redact is checked, and refused without onMiss: record', async () => {
  const cassette = path.join(tempDir(), 'empty.jsonl')
  fs.writeFileSync(cassette, JSON.stringify({ type: 'cassette', version: 1, createdAt: '2026-11-30T16:00:00Z' }) + '\n')
  const start = (replay) => lib().start({ proxy: 'http://127.0.0.1:9', port: 0, replay })
  await assert.rejects(stopIfStarted(start({ path: cassette, onMiss: 'record', redact: { json: ['a[x]'] } })), /replay\.redact\.json\[0\]/)
  await assert.rejects(stopIfStarted(start({ path: cassette, onMiss: 'proxy', redact: { headers: ['x'] } })), /replay\.redact.*onMiss: 'record'/)
})

// WebSocket recording: a session through the proxy, then the same client against the cassette.

const WebSocket = require('ws')

/** What the upstream sends after the client's first message, with a pause between each group. */
const SERVER_PUSHES = [
  [{ binary: Buffer.from([0, 1, 2, 255]) }],
  // Binary although valid UTF-8 (it must replay as binary); then a text message in two fragments
  // with a ping between them.
  [{ binary: Buffer.from('bin-utf8') }, { fragments: ['frag-', 'ment'] }],
  // A 16-bit length (300 bytes) and a 64-bit one (70 000 bytes).
  [{ text: 'x'.repeat(300) }, { binary: Buffer.alloc(70000, 7).map((b, i) => (b * i) & 0xff) }],
]

/** A WebSocket upstream: `hello` at once; echoes `echo:<text>` / binary as is; pushes SERVER_PUSHES. */
async function wsUpstream(wssOptions = {}) {
  const wss = new WebSocket.WebSocketServer({ noServer: true, ...wssOptions })
  wss.on('connection', (ws) => {
    ws.send('hello')
    ws.on('message', async (data, isBinary) => {
      if (isBinary) {
        ws.send(data, { binary: true })
        ws.send('bye')
        return
      }
      ws.send(`echo:${data}`)
      if (data.toString() !== 'one') return
      for (const group of SERVER_PUSHES) {
        await new Promise((r) => setTimeout(r, 30))
        for (const m of group) {
          if (m.binary) ws.send(m.binary, { binary: true })
          else if (m.text) ws.send(m.text)
          else {
            ws.send(m.fragments[0], { fin: false })
            ws.ping('between fragments')
            ws.send(m.fragments[1], { fin: true })
          }
        }
      }
    })
  })
  const upstream = await startUpstream({}, { onUpgrade: (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)) })
  const close = upstream.close.bind(upstream)
  upstream.close = async () => {
    for (const c of wss.clients) c.terminate()
    await close()
  }
  return upstream
}

/**
 * The client's side, driven by what it receives: `one` after `hello`, [9,8,7] once the pushes are in,
 * a close 4001 after `bye`. Resolves with the messages received and the close code.
 */
function wsSession(url, options = {}) {
  const client = new WebSocket(url, options)
  const got = []
  const pushed = SERVER_PUSHES.flat().length
  return withTimeout(
    new Promise((resolve, reject) => {
      client.on('error', reject)
      client.on('message', (data, isBinary) => {
        got.push({ binary: isBinary, bytes: Buffer.from(data) })
        const text = isBinary ? null : data.toString()
        if (text === 'hello') client.send('one')
        // hello, echo:one, then the pushes.
        if (got.length === 2 + pushed) client.send(Buffer.from([9, 8, 7]))
        if (text === 'bye') client.close(4001, 'done')
      })
      client.on('close', (code) => resolve({ got, code, extensions: client.extensions }))
    }),
    20000,
    `the WebSocket session with ${url}`,
  )
}

/** What the session above must receive, in order. */
function expectedFromServer() {
  const pushes = SERVER_PUSHES.flat().map((m) =>
    m.binary ? { binary: true, bytes: m.binary } : { binary: false, bytes: Buffer.from(m.text ?? m.fragments.join('')) },
  )
  const text = (s) => ({ binary: false, bytes: Buffer.from(s) })
  return [text('hello'), text('echo:one'), ...pushes, { binary: true, bytes: Buffer.from([9, 8, 7]) }, text('bye')]
}

/** A `ws` line's bytes and kind. */
function wsMessage(line) {
  return line.text !== undefined ? { binary: false, bytes: Buffer.from(line.text) } : { binary: true, bytes: Buffer.from(line.base64, 'base64') }
}

test('a WebSocket session is recorded message by message (fragments joined, pings left out, masks removed) and replays byte-identical', async () => {
  const dir = tempDir()
  const cassette = path.join(dir, 'ws.jsonl')
  const upstream = await wsUpstream()
  const headers = { authorization: `Bearer ${OPENAI_KEY}` }
  try {
    await withProxy({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (server) => {
      const live = await wsSession(`ws://127.0.0.1:${server.port}/socket?room=1`, { headers, perMessageDeflate: false })
      assert.equal(live.code, 4001)
      assert.deepEqual(live.got, expectedFromServer(), 'the tunnel passes every message on unchanged')
      await written(server, 1, 'the WebSocket exchange')
      assert.equal(server.recording().written, 1)
    })
  } finally {
    await upstream.close()
  }
  assert.ok(!fs.readFileSync(cassette, 'utf8').includes('TESTKEY'), 'the key in Authorization appears nowhere')
  const [, req, res, ...rest] = lines(cassette)
  assert.equal(req.type, 'request')
  assert.equal(req.url, '/socket?room=1')
  assert.deepEqual(req.headers.find(([n]) => n === 'authorization'), ['authorization', '[redacted]'])
  assert.equal(res.type, 'response')
  assert.equal(res.status, 101)
  const ws = rest.filter((l) => l.type === 'ws')
  const fromServer = expectedFromServer()
  const expected = [
    ['server', fromServer[0]],
    ['client', { binary: false, bytes: Buffer.from('one') }],
    ...fromServer.slice(1, -2).map((m) => ['server', m]),
    ['client', { binary: true, bytes: Buffer.from([9, 8, 7]) }],
    ['server', fromServer[fromServer.length - 2]],
    ['server', fromServer[fromServer.length - 1]],
  ]
  assert.deepEqual(ws.map((l) => [l.from, wsMessage(l)]), expected, 'every message each way, in order, byte for byte, binary as base64')
  assert.ok(ws[0].at >= res.at, 'the first message after the 101')
  for (let i = 1; i < ws.length; i++) assert.ok(ws[i].at >= ws[i - 1].at, `offsets never go back (${ws[i - 1].at} then ${ws[i].at})`)
  // The pushes were 30 ms apart at the upstream: the offsets show the gaps (not all at one instant).
  assert.ok(ws[4].at - ws[2].at >= 25, `pushes recorded ${ws[4].at - ws[2].at} ms apart`)
  const end = rest[rest.length - 1]
  assert.deepEqual([end.type, end.close, end.error], ['end', 4001, undefined])
  assert.ok(end.at >= ws[ws.length - 1].at)

  // The upstream is gone: the cassette answers, the client's messages are matched in order.
  await withProxy({ proxy: upstream.url, port: 0, replay: { path: cassette, speed: 0 } }, async (server) => {
    const replayed = await wsSession(`ws://127.0.0.1:${server.port}/socket?room=1`, { perMessageDeflate: false })
    assert.deepEqual(replayed.got, expectedFromServer(), 'the same server messages, in order, byte-identical, same kinds')
    assert.equal(replayed.code, 4001, 'the recorded close code')
  })
})

test('recording strips permessage-deflate from the offer: the recording is plain and the session works; without recording it is negotiated', async () => {
  const dir = tempDir()
  const cassette = path.join(dir, 'deflate.jsonl')
  // The upstream compresses every message it can.
  const upstream = await wsUpstream({ perMessageDeflate: { threshold: 0 } })
  try {
    await withProxy({ proxy: upstream.url, port: 0 }, async (server) => {
      const plain = await wsSession(`ws://127.0.0.1:${server.port}/socket`)
      assert.match(plain.extensions, /permessage-deflate/, 'not recording: the client and the upstream agree on it')
      assert.deepEqual(plain.got, expectedFromServer())
    })
    await withProxy({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (server) => {
      // `ws` offers permessage-deflate by default.
      const recorded = await wsSession(`ws://127.0.0.1:${server.port}/socket`)
      assert.equal(recorded.extensions, '', 'recording: nothing negotiated')
      assert.deepEqual(recorded.got, expectedFromServer())
      await written(server, 1, 'the WebSocket exchange')
    })
    const upgrades = upstream.requests.filter((r) => r.upgrade)
    assert.match(upgrades[0].headers['sec-websocket-extensions'], /permessage-deflate/)
    assert.equal(upgrades[1].headers['sec-websocket-extensions'], undefined, 'the recorded upgrade went without the offer')
  } finally {
    await upstream.close()
  }
  const all = lines(cassette)
  const req = all.find((l) => l.type === 'request')
  assert.ok(!req.headers.some(([n]) => n === 'sec-websocket-extensions'), 'the request line is what went upstream')
  const ws = all.filter((l) => l.type === 'ws')
  assert.deepEqual(ws.filter((l) => l.from === 'server').map(wsMessage), expectedFromServer(), 'plain messages, not compressed bytes')
})

test('a WebSocket message holding a key-shaped string refuses the exchange, named; the session goes on', async () => {
  const dir = tempDir()
  const cassette = path.join(dir, 'ws-key.jsonl')
  const wss = new WebSocket.WebSocketServer({ noServer: true })
  wss.on('connection', (ws) => ws.on('message', (data) => ws.send(`got ${data}`)))
  const upstream = await startUpstream({}, { onUpgrade: (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)) })
  try {
    await withProxy({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (server) => {
      const client = new WebSocket(`ws://127.0.0.1:${server.port}/chat`)
      const got = []
      const closed = new Promise((resolve) => client.on('close', resolve))
      client.on('open', () => client.send(JSON.stringify({ apiKey: OPENAI_KEY })))
      client.on('message', (data) => {
        got.push(data.toString())
        if (got.length === 1) client.send('after')
        else client.close(1000)
      })
      await withTimeout(closed, 10000, 'the session')
      assert.deepEqual(got, [`got {"apiKey":"${OPENAI_KEY}"}`, 'got after'], 'the client is not held back by the refusal')
      await written(server, 1, 'the refused exchange')
      assert.equal(server.recording().refused, 1)
      assert.match(server.recording().lastRefusal, /GET \/chat not written.*client message 1 field `apiKey` holds a string shaped like/)
    })
  } finally {
    for (const c of wss.clients) c.terminate()
    await upstream.close()
  }
  const text = fs.readFileSync(cassette, 'utf8')
  assert.ok(!text.includes('TESTKEY'))
  assert.deepEqual(lines(cassette).map((l) => l.type), ['cassette'], 'nothing of the exchange is written')
})

test("replay onMiss 'record': a WebSocket miss is tunnelled and recorded, then replayed for the same upgrade", async () => {
  const cassette = path.join(tempDir(), 'ws-update.jsonl')
  fs.writeFileSync(cassette, JSON.stringify({ type: 'cassette', version: 1, createdAt: '2026-11-30T16:00:00Z' }) + '\n')
  const upstream = await wsUpstream()
  try {
    await withProxy({ proxy: upstream.url, port: 0, replay: { path: cassette, speed: 0, onMiss: 'record' } }, async (server) => {
      const url = `ws://127.0.0.1:${server.port}/socket`
      const live = await wsSession(url, { perMessageDeflate: false })
      assert.deepEqual([live.code, live.got], [4001, expectedFromServer()])
      await ended(cassette, 1, 'the WebSocket miss appended')
      await upstream.close()
      const replayed = await wsSession(url, { perMessageDeflate: false })
      assert.deepEqual([replayed.code, replayed.got], [4001, expectedFromServer()], 'answered from what was just recorded')
    })
  } finally {
    await upstream.close()
  }
  assert.equal(upstream.requests.filter((r) => r.upgrade).length, 1, 'only the miss reached the target')
  const ws = lines(cassette).filter((l) => l.type === 'ws')
  assert.equal(ws.length, expectedFromServer().length + 2, 'every message each way')
})

test('a WebSocket message over 16 MiB passes through whole, and ends its recording with the reason', async () => {
  const cassette = path.join(tempDir(), 'ws-big.jsonl')
  const big = Buffer.alloc(17 * 1024 * 1024, 0x5a)
  const wss = new WebSocket.WebSocketServer({ noServer: true })
  wss.on('connection', (ws) => {
    ws.send('small')
    ws.send(big, { binary: true })
    ws.send('after')
  })
  const upstream = await startUpstream({}, { onUpgrade: (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)) })
  try {
    await withProxy({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (server) => {
      const client = new WebSocket(`ws://127.0.0.1:${server.port}/big`, { perMessageDeflate: false, maxPayload: 0 })
      const got = []
      const closed = new Promise((resolve) => client.on('close', resolve))
      client.on('message', (data) => {
        got.push(Buffer.from(data))
        if (got.length === 3) client.close(1000)
      })
      await withTimeout(closed, 20000, 'the session')
      assert.deepEqual(got.map((b) => b.length), [5, big.length, 5])
      assert.ok(got[1].equals(big), 'the big message arrived whole')
      assert.equal(got[2].toString(), 'after', 'the tunnel went on')
      await written(server, 1, 'the WebSocket exchange')
    })
  } finally {
    for (const c of wss.clients) c.terminate()
    await upstream.close()
  }
  const all = lines(cassette)
  assert.deepEqual(all.filter((l) => l.type === 'ws').map((l) => l.text), ['small'])
  const end = all.find((l) => l.type === 'end')
  assert.match(end.error, /server message 2 is 17825792 bytes, over the 16 MiB a recording keeps: the rest of this WebSocket is not recorded/)
})

test('a text message that is not UTF-8 is recorded as base64 with kind text and replays as text; a close between two fragments is recorded with its time and code, the message as unfinished, and replayed at its offset', async () => {
  const cassette = path.join(tempDir(), 'ws-gaps.jsonl')
  const fromServer = Buffer.from([0xff, 0xfe, 0x61])
  const fromClient = Buffer.from([0xc3, 0x28])
  const CLOSE_AFTER = 150
  // The upstream relays what it gets without checking UTF-8, as the proxy must.
  const wss = new WebSocket.WebSocketServer({ noServer: true, perMessageDeflate: false, skipUTF8Validation: true })
  wss.on('connection', (ws) => {
    ws.send(fromServer, { binary: false })
    ws.on('message', () => {
      // The first fragment of a text message, then the close before its last (RFC 6455 5.4).
      ws.send('hel', { fin: false })
      setTimeout(() => ws.close(1001, 'going away'), CLOSE_AFTER)
    })
  })
  const upstream = await startUpstream({}, { onUpgrade: (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)) })
  /** Answers the server's first message with `fromClient`; resolves with what it got and when the close came. */
  const session = (port) => {
    const started = performance.now()
    const client = new WebSocket(`ws://127.0.0.1:${port}/gaps`, { perMessageDeflate: false, skipUTF8Validation: true })
    const got = []
    return withTimeout(
      new Promise((resolve, reject) => {
        client.on('error', reject)
        client.on('message', (data, isBinary) => {
          got.push({ binary: isBinary, bytes: Buffer.from(data) })
          if (got.length === 1) client.send(fromClient, { binary: false })
        })
        client.on('close', (code) => resolve({ got, code, closedAfter: performance.now() - started }))
      }),
      20000,
      'the WebSocket session',
    )
  }
  try {
    await withProxy({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (server) => {
      const live = await session(server.port)
      assert.deepEqual(live.got, [{ binary: false, bytes: fromServer }], 'the tunnel passes the text frame on as it came')
      assert.equal(live.code, 1001)
      await written(server, 1, 'the WebSocket exchange')
    })
  } finally {
    for (const c of wss.clients) c.terminate()
    await upstream.close()
  }
  const all = lines(cassette)
  const ws = all.filter((l) => l.type === 'ws').map(({ at, ...rest }) => rest)
  assert.deepEqual(ws, [
    { type: 'ws', id: 1, from: 'server', kind: 'text', base64: fromServer.toString('base64') },
    { type: 'ws', id: 1, from: 'client', kind: 'text', base64: fromClient.toString('base64') },
    { type: 'ws', id: 1, from: 'server', text: 'hel', unfinished: true },
  ])
  const [first, , unfinished] = all.filter((l) => l.type === 'ws')
  const end = all[all.length - 1]
  assert.deepEqual([end.type, end.close, end.error], ['end', 1001, undefined], 'the close with its code')
  assert.equal(unfinished.at, end.at, 'the unfinished message at the time of the close that ended it')
  assert.ok(end.at - first.at >= CLOSE_AFTER / 2, `the close at its time (${end.at} ms, first message at ${first.at})`)

  // Replayed at speed 1: the same frames and kinds (the client's text matches as text), the close at its offset.
  await withProxy({ proxy: upstream.url, port: 0, replay: { path: cassette, speed: 1 } }, async (server) => {
    const replayed = await session(server.port)
    assert.deepEqual(replayed.got, [{ binary: false, bytes: fromServer }], 'a text frame, byte-identical; the unfinished message is no message')
    assert.equal(replayed.code, 1001, 'the recorded close code (not 1008: the client message matched)')
    assert.ok(replayed.closedAfter >= end.at - 1, `the close not before its recorded offset (${replayed.closedAfter} ms, recorded ${end.at})`)
  })
})
