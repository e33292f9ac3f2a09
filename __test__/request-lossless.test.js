'use strict'
// Issue 48, nothing lost on the way in: rewriteRequestBodies turns the proxy's own origin back into the
// target's in what clients send, and must lose nothing doing it. Checked from outside, at a raw upstream
// that keeps every byte it was sent (head, body, and whether it came chunked), with requests written on
// raw sockets where framing matters; memory and time are measured on a proxy in a child process
// (/proc/<pid>/status, VmRSS and VmHWM), never in this one.
//   4  a gzip body of two members: as it came when nothing changes (same bytes, same framing); both
//      members rewritten otherwise, with an exact Content-Length
//   5  multipart: file parts go byte for byte whatever their type; form fields are rewritten
//   6  a Host without a port; protocol-relative origins get the target's scheme; look-alikes of the
//      origin (another host, userinfo, a longer port), plain or percent-encoded, stay untouched
//   7  a brotli body that decodes to 512 MiB goes as it came, RSS bounded, one warning line
//   8  slow bodies are dropped after 10 s idle while others are served
//   9  long Host names are refused at once; many distinct Hosts are each rewritten for their own origin
//   10 a body labelled gzip that is not gzip: the same 400 with Content-Length or chunked, nothing sent on

const { describe, it, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const net = require('node:net')
const path = require('node:path')
const zlib = require('node:zlib')
const { HOST, lib, withTimeout, request, spawnNode, rawExchange: exchange } = require('./helpers')

const PROXY_CHILD = path.join(__dirname, 'fixtures/proxy-child.js')
const MiB = 1024 * 1024
const mib = (n) => (n / MiB).toFixed(1)

/**
 * A raw HTTP/1.1 upstream on 127.0.0.1 that keeps what it receives: every request as
 * {method, url, head, headers (lower-case names, repeated ones joined), chunked, raw (its wire bytes),
 * body (the payload, de-chunked), complete}, pushed as soon as its head is in; `received()` counts every
 * byte on every connection. Each complete request is answered 200 `ok <body length>`, keep-alive.
 */
async function recordingUpstream() {
  const requests = []
  let received = 0
  const sockets = new Set()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let buf = Buffer.alloc(0)
    let cur = null
    socket.on('data', (d) => {
      received += d.length
      buf = Buffer.concat([buf, d])
      for (;;) {
        if (!cur) {
          const end = buf.indexOf('\r\n\r\n')
          if (end < 0) return
          const head = buf.subarray(0, end).toString('latin1')
          const rawHead = buf.subarray(0, end + 4)
          buf = buf.subarray(end + 4)
          const [line, ...fields] = head.split('\r\n')
          const [method, url] = line.split(' ')
          const headers = {}
          for (const f of fields) {
            const i = f.indexOf(':')
            const name = f.slice(0, i).trim().toLowerCase()
            const value = f.slice(i + 1).trim()
            headers[name] = name in headers ? `${headers[name]}, ${value}` : value
          }
          const chunked = /\bchunked\b/i.test(headers['transfer-encoding'] || '')
          cur = { method, url, head, headers, chunked, wire: [rawHead], payload: [], complete: false }
          cur.remaining = chunked ? 0 : Number(headers['content-length'] || 0)
          requests.push(cur)
        }
        if (!cur.chunked) {
          const take = Math.min(cur.remaining, buf.length)
          cur.wire.push(buf.subarray(0, take))
          cur.payload.push(buf.subarray(0, take))
          buf = buf.subarray(take)
          cur.remaining -= take
          if (cur.remaining > 0) return
        } else {
          // chunk by chunk: size line, data, CRLF; after the last chunk, trailers up to an empty line
          let done = false
          for (;;) {
            const eol = buf.indexOf('\r\n')
            if (eol < 0) return
            const size = parseInt(buf.subarray(0, eol).toString('latin1').split(';')[0], 16)
            if (size === 0) {
              const end = buf.subarray(eol).indexOf('\r\n\r\n')
              if (end < 0) return
              cur.wire.push(buf.subarray(0, eol + end + 4))
              buf = buf.subarray(eol + end + 4)
              done = true
              break
            }
            if (!(size > 0)) {
              cur.error = `bad chunk size line ${JSON.stringify(buf.subarray(0, eol).toString('latin1'))}`
              socket.destroy()
              return
            }
            if (buf.length < eol + 2 + size + 2) return
            cur.wire.push(buf.subarray(0, eol + 2 + size + 2))
            cur.payload.push(buf.subarray(eol + 2, eol + 2 + size))
            buf = buf.subarray(eol + 2 + size + 2)
          }
          if (!done) return
        }
        cur.raw = Buffer.concat(cur.wire)
        cur.body = Buffer.concat(cur.payload)
        cur.complete = true
        const answer = `ok ${cur.body.length}`
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: ${answer.length}\r\n\r\n${answer}`)
        cur = null
      }
    })
  })
  await new Promise((resolve) => server.listen(0, HOST, resolve))
  const port = server.address().port
  return {
    port,
    host: `${HOST}:${port}`,
    url: `http://${HOST}:${port}`,
    requests,
    received: () => received,
    /** The requests received for this path (query ignored). */
    at: (p) => requests.filter((r) => r.url.split('?')[0] === p),
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}


/** `body` as a chunked payload, cut at `cuts` (offsets), ended by the last chunk. */
function chunked(body, cuts = []) {
  const parts = []
  let last = 0
  for (const c of [...cuts, body.length]) {
    if (c > last) parts.push(body.subarray(last, c))
    last = c
  }
  return Buffer.concat([...parts.flatMap((p) => [Buffer.from(`${p.length.toString(16)}\r\n`), p, Buffer.from('\r\n')]), Buffer.from('0\r\n\r\n')])
}

/**
 * A raw POST: `framing` 'length' (Content-Length) or 'chunked' (Transfer-Encoding: chunked, no length,
 * the body cut in three), `Connection: close`.
 */
function post(pathname, host, headers, body, framing = 'length') {
  body = Buffer.from(body)
  const lines = [`POST ${pathname} HTTP/1.1`, `Host: ${host}`]
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`)
  if (framing === 'chunked') lines.push('Transfer-Encoding: chunked')
  else lines.push(`Content-Length: ${body.length}`)
  lines.push('Connection: close', '', '')
  const payload = framing === 'chunked' ? chunked(body, [Math.floor(body.length / 3), Math.floor((2 * body.length) / 3)]) : body
  return Buffer.concat([Buffer.from(lines.join('\r\n'), 'latin1'), payload])
}

/** VmRSS and VmHWM of a process, in bytes (Linux /proc). */
function memoryOf(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  const field = (name) => Number((status.match(new RegExp(`^${name}:\\s+(\\d+)`, 'm')) || [])[1]) * 1024
  return { rss: field('VmRSS'), hwm: field('VmHWM') }
}

/** The proxy in a child process (fixtures/proxy-child.js): {url, port, pid, stderr(), kill()}. */
async function proxyChild(options) {
  const child = spawnNode(PROXY_CHILD)
  child.send({ type: 'start', options })
  const { url, port } = await child.next('started', 20000)
  return { url, port, pid: child.child.pid, stderr: () => child.output().stderr, kill: () => child.kill() }
}

/** The one exchange recorded at `p`, complete; fails naming `item` when there is not exactly one. */
function onlyOne(up, p, item) {
  const seen = up.at(p)
  assert.equal(seen.length, 1, `${item}: the target should receive exactly one request at ${p}, got ${seen.length}`)
  assert.ok(seen[0].complete, `${item}: the request at ${p} should reach the target complete (${seen[0].error || 'body cut short'})`)
  return seen[0]
}

/** The same JSON document as two concatenated gzip members, and its whole text. */
function twoMembers(first, second) {
  return { gz: Buffer.concat([zlib.gzipSync(first), zlib.gzipSync(second)]), text: first + second }
}

describe('issue 48: nothing lost on the way in (rewriteRequestBodies)', { concurrency: true }, () => {
  // Runs ~16 s, mostly waiting: alongside everything else.
  it('8: 100 stalled bodies (1 MiB announced, all but the last byte sent) are closed 10-15 s after their last byte, while others are served; RSS bounded (child process)', { timeout: 60000 }, async (t) => {
    const COUNT = 100
    const LENGTH = 1048576
    const up = await recordingUpstream()
    const sockets = []
    let proxy
    let sampler
    try {
      proxy = await proxyChild({ proxy: up.url, port: 0, quiet: true })
      const warm = await request(`${proxy.url}/slow-warm`)
      assert.equal(warm.status, 200, 'item 8: a request before the stall is served')
      const baseline = memoryOf(proxy.pid)
      let peak = baseline.rss
      sampler = setInterval(() => {
        try {
          peak = Math.max(peak, memoryOf(proxy.pid).rss)
        } catch {}
      }, 100)
      const body = Buffer.alloc(LENGTH, 'x')
      body.write('{"v":"', 0)
      body.write('"}', LENGTH - 2)
      const partial = body.subarray(0, LENGTH - 1)
      for (let i = 0; i < COUNT; i++) {
        const s = { i, socket: net.connect(proxy.port, HOST), answer: '', closedAt: null, flushedAt: null, issuedAt: null, error: null }
        s.socket.on('data', (d) => (s.answer += d.toString('latin1')))
        s.socket.on('error', (e) => (s.error = e.code || e.message))
        s.socket.on('close', () => (s.closedAt = Date.now()))
        s.socket.on('connect', () => {
          const head = `POST /slow/${i} HTTP/1.1\r\nHost: ${HOST}:${proxy.port}\r\nContent-Type: application/json\r\nContent-Length: ${LENGTH}\r\n\r\n`
          s.socket.write(head)
          s.issuedAt = Date.now()
          s.socket.write(partial, () => (s.flushedAt = Date.now()))
        })
        sockets.push(s)
      }
      const lastByte = (s) => s.flushedAt || s.issuedAt
      // The stall begins once every last byte is out (or its socket already gone).
      const outBy = Date.now() + 30000
      while (!sockets.every((s) => s.flushedAt || s.closedAt)) {
        assert.ok(Date.now() < outBy, `item 8: the 100 partial bodies should be written within 30 s (${sockets.filter((s) => s.flushedAt).length} were)`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const stallAt = Date.now()
      const atStall = memoryOf(proxy.pid)
      const openNow = () => sockets.filter((s) => !s.closedAt).length
      const served = []
      const normal = async (label) => {
        const open = openNow()
        const t0 = Date.now()
        const res = await request(`${proxy.url}/slow-normal?${label}`, { timeout: 5000 }).catch((e) => ({ status: `no answer (${e.message})` }))
        served.push({ label, status: res.status, open, ms: Date.now() - t0 })
      }
      await normal('at-stall')
      // the second one 5 s into the stall, while the 100 should all still be open
      while (Date.now() < stallAt + 5000) await new Promise((resolve) => setTimeout(resolve, 100))
      await normal('5s-into-stall')
      const deadline = Math.max(...sockets.map(lastByte)) + 16000
      while (openNow() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
      clearInterval(sampler)
      const end = memoryOf(proxy.pid)
      peak = Math.max(peak, end.rss)

      const after = sockets.map((s) => (s.closedAt ? s.closedAt - lastByte(s) : null))
      const closed = after.filter((ms) => ms !== null)
      const statuses = {}
      for (const s of sockets) {
        const m = /^HTTP\/1\.[01] (\d{3})/.exec(s.answer)
        const k = m ? m[1] : s.answer ? 'garbage' : 'none'
        statuses[k] = (statuses[k] || 0) + 1
      }
      const summary = {
        closed: closed.length,
        closedAfterLastByteMs: closed.length ? { min: Math.min(...closed), max: Math.max(...closed) } : null,
        answers: statuses,
        errors: [...new Set(sockets.map((s) => s.error).filter(Boolean))],
        rssMiB: { baseline: mib(baseline.rss), atStall: mib(atStall.rss), peak: mib(peak), end: mib(end.rss), growth: mib(peak - baseline.rss) },
        hwmMiB: { before: mib(baseline.hwm), end: mib(end.hwm) },
        normalRequests: served,
        stallToLastCloseMs: closed.length ? Math.max(...sockets.filter((s) => s.closedAt).map((s) => s.closedAt)) - stallAt : null,
      }
      t.diagnostic(`item 8: ${JSON.stringify(summary)}`)

      for (const n of served) {
        assert.equal(n.status, 200, `item 8: a normal request during the stall (${n.label}, ${n.open} stalled sockets open) should be answered 200, got ${n.status}`)
      }
      assert.ok(served.every((n) => n.open > 0), `item 8: the normal requests should be made while stalled bodies are open (${JSON.stringify(served)})`)
      assert.equal(closed.length, COUNT, `item 8: all ${COUNT} stalled sockets should be closed by the proxy within 16 s of their last byte; ${COUNT - closed.length} still open (${JSON.stringify(summary)})`)
      const late = after.filter((ms) => ms > 16000).length
      const early = after.filter((ms) => ms < 9000).length
      assert.equal(late, 0, `item 8: the stalled sockets should close within 10-15 s of their last byte; ${late} took longer (${JSON.stringify(summary.closedAfterLastByteMs)})`)
      assert.equal(early, 0, `item 8: the body read timeout is 10 s idle: none should close before ~10 s after its last byte; ${early} did (${JSON.stringify(summary.closedAfterLastByteMs)})`)
      const others = Object.keys(statuses).filter((k) => k !== '408' && k !== 'none')
      assert.deepEqual(others, [], `item 8: a stalled body gets a 408 answer or just a closed socket, got ${JSON.stringify(statuses)}`)
      assert.ok(peak - baseline.rss < 200 * MiB, `item 8: RSS should grow < 200 MiB while 100 bodies stall, grew ${mib(peak - baseline.rss)} MiB`)
      assert.equal(up.at('/slow/0').filter((r) => r.complete).length, 0, 'item 8: an incomplete body never reaches the target as a complete request')
    } finally {
      clearInterval(sampler)
      for (const s of sockets) s.socket.destroy()
      if (proxy) await proxy.kill()
      await up.close()
    }
  })

  // Sequential (concurrency is inherited otherwise): item 9's timings must not share the CPU with item 7.
  describe('the rest, one after another', { concurrency: 1 }, () => {
    let up
    let proxy
    let local
    let target
    before(async () => {
      up = await recordingUpstream()
      proxy = await lib().start({ proxy: up.url, port: 0, quiet: true })
      local = `${HOST}:${proxy.port}`
      target = up.url
    })
    after(async () => {
      if (proxy) await withTimeout(proxy.stop(), 15000, 'proxy.stop()')
      if (up) await up.close()
    })

    const JSON_GZ = { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }

    for (const framing of ['length', 'chunked']) {
      const label = framing === 'length' ? 'Content-Length' : 'chunked'
      it(`4a: a two-member gzip body with nothing to rewrite reaches the target byte for byte, ${label} as it was sent`, async () => {
        const item = `item 4a (${label})`
        const { gz } = twoMembers('{"items":["http://example.test/one",', '"http://example.test/two"]}')
        const p = `/4a/${framing}`
        const res = await exchange(proxy.port, post(p, local, JSON_GZ, gz, framing))
        assert.equal(res.status, 200, `${item}: answered by the target, got ${res.status} ${res.body.toString().slice(0, 300)}`)
        const seen = onlyOne(up, p, item)
        assert.equal(seen.headers['content-encoding'], 'gzip', `${item}: Content-Encoding gzip kept`)
        assert.ok(seen.body.equals(gz), `${item}: the target should receive the ${gz.length} bytes sent, byte for byte; got ${seen.body.length} bytes ${seen.body.equals(gz) ? '' : '(different)'}`)
        if (framing === 'length') {
          assert.equal(seen.chunked, false, `${item}: sent with Content-Length, it should not arrive chunked`)
          assert.equal(seen.headers['content-length'], String(gz.length), `${item}: the same Content-Length`)
        } else {
          assert.equal(seen.chunked, true, `${item}: sent chunked, it should arrive chunked (headers ${JSON.stringify(seen.headers)})`)
          assert.equal(seen.headers['content-length'], undefined, `${item}: sent chunked, it should arrive without Content-Length`)
        }
      })

      it(`4b: a two-member gzip body with the proxy's origin in both members arrives whole and rewritten, exact Content-Length (${label})`, async () => {
        const item = `item 4b (${label})`
        const { gz } = twoMembers(`{"a":"http://${local}/one",`, `"b":"http://${local}/two"}`)
        const wanted = `{"a":"${target}/one","b":"${target}/two"}`
        const p = `/4b/${framing}`
        const res = await exchange(proxy.port, post(p, local, JSON_GZ, gz, framing))
        assert.equal(res.status, 200, `${item}: answered by the target, got ${res.status} ${res.body.toString().slice(0, 300)}`)
        const seen = onlyOne(up, p, item)
        assert.equal(seen.headers['content-encoding'], 'gzip', `${item}: Content-Encoding gzip kept`)
        let text
        try {
          text = zlib.gunzipSync(seen.body).toString()
        } catch (err) {
          assert.fail(`${item}: the target's body should gunzip, ${err.message}`)
        }
        assert.equal(text, wanted, `${item}: the body should gunzip (all members) to both members' text with the origin turned into the target's`)
        assert.equal(seen.chunked, false, `${item}: it should arrive with an exact Content-Length, not chunked`)
        assert.equal(seen.headers['content-length'], String(seen.body.length), `${item}: an exact Content-Length`)
      })
    }

    it('5: multipart file parts (.txt, .csv, .html, .json) go byte for byte; a form field in the same body is rewritten', async () => {
      const item = 'item 5'
      const B = '----lossless48'
      const part = (head, content) => Buffer.from(`--${B}\r\n${head}\r\n\r\n${content}\r\n`)
      const file = (name, type, content) => part(`Content-Disposition: form-data; name="${name}"; filename="${name}"\r\nContent-Type: ${type}`, content)
      const build = (origin) =>
        Buffer.concat([
          file('a.txt', 'text/plain', `see http://${local}/x\n`),
          file('b.csv', 'text/csv', `url\nhttp://${local}/x\n`),
          part('Content-Disposition: form-data; name="content"', `see ${origin}/x`),
          file('c.html', 'text/html', `<a href="http://${local}/x">x</a>`),
          file('d.json', 'application/json', `{"u":"http://${local}/x"}`),
          Buffer.from(`--${B}--\r\n`),
        ])
      const sent = build(`http://${local}`)
      const wanted = build(target)
      const res = await exchange(proxy.port, post('/5/upload', local, { 'Content-Type': `multipart/form-data; boundary=${B}` }, sent))
      assert.equal(res.status, 200, `${item}: answered by the target, got ${res.status} ${res.body.toString().slice(0, 300)}`)
      const seen = onlyOne(up, '/5/upload', item)
      assert.equal(
        seen.body.toString('latin1'),
        wanted.toString('latin1'),
        `${item}: file parts (with a filename) byte for byte whatever their type, and the form field "content" turned into http://<target host>/x`,
      )
      assert.equal(seen.headers['content-length'], String(seen.body.length), `${item}: an exact Content-Length`)
    })

    it('6: Host without a port (Host: localhost): its origin, plain and protocol-relative, becomes the target origin once, with a scheme', async () => {
      const enc = encodeURIComponent
      const cases = [
        ['http://localhost/about', `${target}/about`],
        ['//localhost/about', `${target}/about`],
        // percent-encoded, the form the README documents too
        [enc('http://localhost/about'), enc(`${target}/about`)],
      ]
      const failures = []
      for (const [i, [value, want]] of cases.entries()) {
        const p = `/6/portless/${i}`
        const res = await exchange(proxy.port, post(p, 'localhost', { 'Content-Type': 'application/x-www-form-urlencoded' }, `u=${value}`))
        const seen = up.at(p)
        if (res.status !== 200 || seen.length !== 1) {
          failures.push(`${value}: answered ${res.status}, ${seen.length} requests at the target`)
          continue
        }
        const got = seen[0].body.toString()
        if (got !== `u=${want}`) failures.push(`u=${value} should reach the target as u=${want}, got ${got}`)
        else if (seen[0].headers['content-length'] !== String(seen[0].body.length)) failures.push(`${value}: Content-Length ${seen[0].headers['content-length']} for ${seen[0].body.length} bytes`)
      }
      assert.deepEqual(failures, [], `item 6 (Host: localhost, target ${target}): each origin becomes the target's origin exactly once`)
    })

    it('6: look-alikes of the origin stay untouched, plain and percent-encoded; %2F%2F-encoded protocol-relative gets the scheme; ftp:// stays', async () => {
      const pp = proxy.port
      const tp = up.port
      const cases = [
        // control: the origin itself
        [`http://${HOST}:${pp}/x`, `http://${HOST}:${tp}/x`],
        [`http://${HOST}:${pp}.evil.test/`, null],
        [`http://${HOST}:${pp}@evil.test/`, null],
        [`http://${HOST}:${pp}-x/`, null],
        [`http://${HOST}:${pp}0/`, null],
        [`http%3A%2F%2F${HOST}%3A${pp}%40evil.test`, null],
        [`http%3A%2F%2F${HOST}%3A${pp}%3A1`, null],
        [`%2F%2F${HOST}%3A${pp}%2Fx`, `http%3A%2F%2F${HOST}%3A${tp}%2Fx`],
        [`ftp://${HOST}:${pp}/x`, null],
      ]
      const failures = []
      for (const [i, [value, rewritten]] of cases.entries()) {
        const want = rewritten === null ? value : rewritten
        const p = `/6/lookalike/${i}`
        const res = await exchange(proxy.port, post(p, local, { 'Content-Type': 'application/x-www-form-urlencoded' }, `u=${value}`))
        const seen = up.at(p)
        if (res.status !== 200 || seen.length !== 1) {
          failures.push(`${value}: answered ${res.status}, ${seen.length} requests at the target`)
          continue
        }
        const got = seen[0].body.toString()
        if (got !== `u=${want}`) failures.push(`u=${value} should reach the target ${rewritten === null ? 'untouched' : `as u=${want}`}, got ${got}`)
      }
      assert.deepEqual(failures, [], `item 6 (Host: ${local}, target port ${tp}): look-alikes untouched, the origin and its encoded protocol-relative form rewritten`)
    })

    it('10: a body labelled Content-Encoding: gzip that is plain JSON gets the same 400 Bad request body with Content-Length or chunked; the target receives nothing', async () => {
      const own = await recordingUpstream()
      let server
      try {
        server = await lib().start({ proxy: own.url, port: 0, quiet: true })
        const host = `${HOST}:${server.port}`
        const json = JSON.stringify({ u: `http://${host}/x`, v: 'plain, not gzip' })
        const answers = {}
        for (const framing of ['length', 'chunked']) {
          answers[framing] = await exchange(server.port, post('/10/mislabelled', host, JSON_GZ, json, framing))
        }
        // what the target had received by the time both were answered (whatever the proxy forwarded came before its answer)
        const bytesBefore = own.received()
        // a control request afterwards: the target is reachable
        const control = await exchange(server.port, `GET /10/control HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
        assert.equal(control.status, 200, 'item 10: control GET answered by the target')
        const failures = []
        for (const [framing, res] of Object.entries(answers)) {
          const label = framing === 'length' ? 'Content-Length' : 'chunked'
          if (res.status !== 400) failures.push(`${label}: should get 400, got ${res.status} ${JSON.stringify(res.body.toString().slice(0, 160))}`)
          else if (!/400 Bad request body/.test(res.body.toString())) failures.push(`${label}: the 400 should be the proxy's "400 Bad request body" page, got ${JSON.stringify(res.body.toString().slice(0, 160))}`)
        }
        const reached = own.requests.filter((r) => r.url.startsWith('/10/mislabelled'))
        if (bytesBefore !== 0) failures.push(`the target should receive no byte before the control request, received ${bytesBefore}`)
        if (reached.length) {
          const what = reached.map((r) => `${r.url} (${r.chunked ? 'chunked' : `length ${r.headers['content-length']}`}, ${r.complete ? 'complete' : 'cut short'}, ${r.payload.reduce((n, b) => n + b.length, 0)} body bytes)`)
          failures.push(`the target should receive nothing of the mislabelled bodies, got ${what.join('; ')}`)
        }
        assert.deepEqual(failures, [], 'item 10: a body labelled Content-Encoding: gzip that is not gzip gets the 400 Bad request body page with either framing, and nothing reaches the target')
      } finally {
        if (server) await withTimeout(server.stop(), 15000, 'server.stop()')
        await own.close()
      }
    })

    it('7: a brotli JSON body of a few hundred bytes that decodes to 512 MiB goes on as it came; RSS grows < 64 MiB; one "not rewritten" warning (child process)', { timeout: 120000 }, async (t) => {
      const item = 'item 7'
      const own = await recordingUpstream()
      let child
      try {
        child = await proxyChild({ proxy: own.url, port: 0 }) // not quiet: the warning is on stderr
        const host = `${HOST}:${child.port}`
        const br = { 'content-type': 'application/json', 'content-encoding': 'br' }
        // warm up the request path (a small brotli JSON body, rewritten) before the baseline
        const small = zlib.brotliCompressSync(JSON.stringify({ u: `http://${host}/x` }))
        const warm = await request(`${child.url}/7/warm`, { method: 'POST', headers: br, body: small })
        assert.equal(warm.status, 200, `${item}: the warm-up is answered`)
        const t0 = Date.now()
        const bomb = await brotliBomb(512)
        const buildMs = Date.now() - t0
        const before = memoryOf(child.pid)
        const t1 = Date.now()
        const res = await request(`${child.url}/7/bomb`, { method: 'POST', headers: br, body: bomb, timeout: 90000 }).catch((e) => ({ status: `no answer (${e.message})`, body: Buffer.alloc(0) }))
        const ms = Date.now() - t1
        const afterIt = memoryOf(child.pid)
        const growth = afterIt.hwm - before.hwm
        t.diagnostic(`item 7: bomb ${bomb.length} B (built in ${buildMs} ms), answered ${res.status} in ${ms} ms; VmHWM ${mib(before.hwm)} -> ${mib(afterIt.hwm)} MiB (+${mib(growth)}), VmRSS ${mib(before.rss)} -> ${mib(afterIt.rss)} MiB`)
        const failures = []
        if (res.status !== 200) failures.push(`the proxy should pass the body on and the target answer 200, got ${res.status} ${JSON.stringify(res.body.toString().slice(0, 200))}`)
        const seen = own.at('/7/bomb')
        if (seen.length !== 1 || !seen[0].complete) failures.push(`the target should receive one complete request, got ${seen.length} (${seen.map((r) => (r.complete ? 'complete' : 'cut short')).join(', ')})`)
        else {
          if (seen[0].headers['content-encoding'] !== 'br') failures.push(`Content-Encoding br should be kept, got ${seen[0].headers['content-encoding']}`)
          if (!seen[0].body.equals(bomb)) failures.push(`the target should receive the ${bomb.length} compressed bytes as they came, got ${seen[0].body.length} different bytes`)
        }
        if (!(growth < 64 * MiB)) failures.push(`the proxy's VmHWM should grow < 64 MiB (decoded cap 8 MiB), grew ${mib(growth)} MiB`)
        const warned = () => child.stderr().split('\n').filter((line) => line.includes('/7/bomb') && /not rewritten/.test(line))
        const by = Date.now() + 5000
        while (warned().length === 0 && Date.now() < by) await new Promise((resolve) => setTimeout(resolve, 50))
        if (warned().length !== 1) failures.push(`stderr should have one warning line naming /7/bomb and "not rewritten", has ${warned().length}; stderr: ${JSON.stringify(child.stderr().slice(-1000))}`)
        assert.deepEqual(failures, [], `${item}: a brotli body decoding to 512 MiB goes on byte for byte, the proxy's memory bounded, one warning`)
      } finally {
        if (child) await child.kill()
        await own.close()
      }
    })

    it('9: Host names: 1.2 KiB and 4 KiB *.localhost Hosts get a 400 naming the length within 1 s; 240 bytes is served; 50 new Hosts each rewritten for their own origin (child process)', { timeout: 90000 }, async (t) => {
      const form = { 'Content-Type': 'application/x-www-form-urlencoded' }
      const own = await recordingUpstream()
      try {
        // Long Hosts first, on a proxy of their own: one that spends a minute on them is killed after.
        const longs = await proxyChild({ proxy: own.url, port: 0, quiet: true })
        const longFindings = []
        try {
          for (const length of [1229, 4096]) {
            const suffix = `.localhost:${longs.port}`
            const host = 'a'.repeat(length - suffix.length) + suffix
            const p = `/9/long/${length}`
            const t0 = Date.now()
            const res = await exchange(longs.port, post(p, host, form, `u=http://${host}/x`), { timeout: 3000 }).catch((e) => ({ status: `no answer (${e.message.slice(0, 40)})`, body: Buffer.alloc(0), ms: Date.now() - t0 }))
            longFindings.push({ length: host.length, status: res.status, ms: res.ms, body: res.body.toString().slice(0, 400), atTarget: own.at(p).length })
          }
        } finally {
          await longs.kill()
        }
        t.diagnostic(`item 9 long Hosts: ${JSON.stringify(longFindings.map(({ body, ...f }) => f))}`)

        const proxy = await proxyChild({ proxy: own.url, port: 0, quiet: true })
        let mid
        const shorts = []
        try {
          // 240 bytes: labels of at most 63 characters, a valid name
          const suffix = `.localhost:${proxy.port}`
          let name = ''
          while (name.length < 240 - suffix.length) name += (name ? '.' : '') + 'b'.repeat(Math.min(60, 240 - suffix.length - name.length - (name ? 1 : 0)))
          const host240 = name + suffix
          assert.equal(host240.length, 240, 'precondition: a 240-byte Host')
          const t0 = Date.now()
          const res = await exchange(proxy.port, post('/9/mid', host240, form, `u=http://${host240}/x`), { timeout: 15000 }).catch((e) => ({ status: `no answer (${e.message.slice(0, 40)})`, ms: Date.now() - t0 }))
          mid = { status: res.status, ms: res.ms, seen: own.at('/9/mid').map((r) => r.body.toString()) }

          // 50 new Hosts at once; each body also names the next Host's origin, which is not this request's
          const hosts = Array.from({ length: 50 }, (_, i) => `h${i + 1}.localhost:${proxy.port}`)
          const t1 = Date.now()
          const results = await Promise.all(
            hosts.map((h, i) => {
              const next = hosts[(i + 1) % hosts.length]
              return exchange(proxy.port, post(`/9/short/${i + 1}`, h, form, `u=http://${h}/x&o=http://${next}/y`), { timeout: 20000 }).catch((e) => ({ status: `no answer (${e.message.slice(0, 40)})` }))
            }),
          )
          const allMs = Date.now() - t1
          for (const [i, h] of hosts.entries()) {
            const next = hosts[(i + 1) % hosts.length]
            const want = `u=${own.url}/x&o=http://${next}/y`
            const seen = own.at(`/9/short/${i + 1}`)
            const got = seen.length === 1 ? seen[0].body.toString() : `${seen.length} requests`
            if (results[i].status !== 200 || got !== want) shorts.push(`${h}: answered ${results[i].status}, target got ${got}, want ${want}`)
          }
          t.diagnostic(`item 9: 240-byte Host answered ${mid.status} in ${mid.ms} ms; 50 new Hosts answered in ${allMs} ms`)
        } finally {
          await proxy.kill()
        }

        const failures = []
        for (const f of longFindings) {
          if (f.status !== 400) failures.push(`a ${f.length}-byte Host should get 400, got ${f.status} after ${f.ms} ms`)
          else if (!(f.ms < 1000)) failures.push(`a ${f.length}-byte Host should be answered within 1 s, took ${f.ms} ms`)
          if (f.status === 400 && !(/host/i.test(f.body) && f.body.includes(String(f.length)))) failures.push(`the 400 for a ${f.length}-byte Host should name the Host and its length (${f.length}): ${JSON.stringify(f.body)}`)
          if (f.atTarget) failures.push(`a ${f.length}-byte Host reached the target`)
        }
        if (mid.status !== 200) failures.push(`a 240-byte *.localhost Host should be served (200), got ${mid.status} after ${mid.ms} ms`)
        else if (mid.seen.length !== 1 || mid.seen[0] !== `u=${own.url}/x`) failures.push(`a 240-byte Host's form should reach the target as u=${own.url}/x, got ${JSON.stringify(mid.seen)}`)
        failures.push(...shorts.slice(0, 5))
        if (shorts.length > 5) failures.push(`... and ${shorts.length - 5} more of the 50 short Hosts`)
        assert.deepEqual(failures, [], 'item 9: long Hosts refused at once with 400, a 240-byte Host served and rewritten, 50 new Hosts each rewritten for their own origin')
      } finally {
        await own.close()
      }
    })
  })
})

/** A brotli JSON document `{"x":"aaa..."}` whose string holds `mib` MiB, compressed by streaming (quality 5). */
async function brotliBomb(mibs) {
  const br = zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5, [zlib.constants.BROTLI_PARAM_LGWIN]: 24 } })
  const out = []
  br.on('data', (d) => out.push(d))
  const done = new Promise((resolve, reject) => {
    br.on('end', resolve)
    br.on('error', reject)
  })
  const a = Buffer.alloc(MiB, 'a')
  br.write('{"x":"')
  for (let i = 0; i < mibs; i++) if (!br.write(a)) await new Promise((resolve) => br.once('drain', resolve))
  br.end('"}')
  await done
  return Buffer.concat(out)
}
