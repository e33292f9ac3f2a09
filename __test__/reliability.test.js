'use strict'
// Reliability under load and over time (scaled-down versions of benches/soak.js, same code), stop() with
// responses in flight, the process ending without stop(), and a replace function that throws.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const {
  lib,
  deferred,
  withTimeout,
  startUpstream,
  connectRefused,
  occupyPort,
  request,
  spawnNode,
  writeChunks,
  ACCEPT_HTML,
} = require('./helpers')
const { runLoad, runCycles, runWebSocket, spawnProxyChild } = require('./fixtures/runners')

test('load: 64 keep-alive connections for 3 s on a rewritten page and a passthrough binary: zero errors, every body checked, RSS back near its baseline', async (t) => {
  const figures = await runLoad({ connections: 64, seconds: 3, log: (f) => t.diagnostic(JSON.stringify(f)) })
  assert.equal(figures.errors, 0)
})

test('100 start()/stop() cycles in one process (each serving a request): fds and threads back to their count, RSS within 24 MiB', async (t) => {
  const figures = await runCycles({ cycles: 100, log: (f) => t.diagnostic(JSON.stringify(f)) })
  // what the cycles prove (runCycles asserts them too; a failing cycle fails at once with the child's message)
  assert.equal(figures.served, 100, 'each cycle\'s fresh server answered its request')
  assert.ok(figures.fdsAfter <= figures.fdsBefore, `open fds ${figures.fdsBefore} -> ${figures.fdsAfter}`)
  assert.ok(figures.threadsAfter <= figures.threadsBefore, `threads ${figures.threadsBefore} -> ${figures.threadsAfter}`)
})

test('WebSocket: 2,000 messages through the tunnel arrive in order and intact, none lost, in both directions', async (t) => {
  const figures = await runWebSocket({ messages: 2000, log: (f) => t.diagnostic(JSON.stringify(f)) })
  assert.equal(figures.lost, 0)
})

test('stop() with 50 streaming responses in flight: those that can finish within gracePeriodMs finish, the rest are cut after it; the Promise resolves and the port is free right after', { timeout: 60000 }, async () => {
  const GRACE = 300
  const finish = deferred()
  const upstreamHas = []
  const routes = {}
  for (let i = 0; i < 50; i++) {
    upstreamHas.push(deferred())
    routes[`/s${i}`] = (req, res) => {
      res.writeHead(200, { 'content-type': i % 2 ? 'application/octet-stream' : 'text/html' })
      res.write(`<html><body>stream ${i} start|`)
      upstreamHas[i].resolve()
      if (i % 2 === 0) {
        // finishes as soon as stop() has been called: well within the grace period
        finish.promise.then(() => res.end('end</body></html>'))
      } else {
        // never finishes: must be cut when the grace period is over
        const timer = setInterval(() => res.write('more|'), 50)
        res.on('close', () => clearInterval(timer))
      }
    }
  }
  const up = await startUpstream(routes)
  const server = await lib().start({ proxy: up.url, port: 0, quiet: true, gracePeriodMs: GRACE })
  const port = server.port
  let stopped = false
  try {
    const firstBytes = []
    const outcomes = []
    for (let i = 0; i < 50; i++) {
      const got = deferred()
      firstBytes.push(got.promise)
      const accept = i % 2 ? '*/*' : ACCEPT_HTML
      outcomes.push(
        request(`${server.url}/s${i}`, { headers: { accept }, timeout: 50000, onData: () => got.resolve() }).then(
          (res) => ({ i, status: res.status, body: res.body.toString(), at: Date.now() }),
          (err) => ({ i, err, at: Date.now() }),
        ),
      )
    }
    await withTimeout(Promise.all(firstBytes), 30000, 'all 50 responses streaming')
    const t0 = Date.now()
    const stopping = server.stop()
    finish.resolve()
    // the ceiling is the test's timeout: only the lower bound (the grace period) is the promise
    await stopping
    stopped = true
    const stopMs = Date.now() - t0
    // the port is free right after
    assert.equal(await connectRefused(port), true, 'connections are refused once stop() resolved')
    const again = await occupyPort(port)
    await again.close()
    const results = await Promise.all(outcomes)
    for (const r of results) {
      if (r.i % 2 === 0) {
        assert.ok(!r.err, `/s${r.i} could finish within the grace period but failed: ${r.err && r.err.message}`)
        assert.equal(r.status, 200)
        assert.equal(r.body, `<html><body>stream ${r.i} start|end</body></html>`)
      } else {
        assert.ok(r.err, `/s${r.i} never ends upstream, yet completed`)
        assert.ok(r.err.aborted && !r.err.timeout, `/s${r.i}: cut, not hung: ${r.err.message}`)
        assert.ok(r.at - t0 >= GRACE - 30, `/s${r.i} was cut ${r.at - t0} ms after stop(), before the ${GRACE} ms grace period`)
      }
    }
    assert.ok(stopMs >= GRACE - 30, `stop() resolved after ${stopMs} ms, before the grace period was over`)
  } finally {
    finish.resolve()
    if (!stopped) await server.stop()
    await up.close()
  }
})

const EXIT_CHILD = path.join(__dirname, 'fixtures/exit-child.js')

test('a process that calls process.exit(0) without stop(), with a response in flight, exits promptly and cleanly', async () => {
  const up = await startUpstream({
    '/hello': (req, res) => res.end('<html><body>hello</body></html>'),
    '/endless': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.write('<html><body>')
      const timer = setInterval(() => res.write('<p>tick</p>'), 20)
      res.on('close', () => clearInterval(timer))
    },
  })
  const child = spawnNode(EXIT_CHILD, ['exit', up.url])
  try {
    const ready = await child.next('ready', 20000)
    assert.equal(ready.status, 200)
    assert.equal(ready.streaming, 200)
    // a generous guard: a process held up by the in-flight response would never exit
    const exit = await withTimeout(child.exited, 20000, 'the child to exit after process.exit(0)')
    const { stderr } = child.output()
    assert.deepEqual(exit, { code: 0, signal: null }, `exit status; stderr: ${stderr}`)
    assert.doesNotMatch(stderr, /panicked|FATAL|core dumped|Segmentation fault|SIGABRT|terminate called/i, `nothing alarming on stderr: ${stderr}`)
  } finally {
    await child.kill()
    await up.close()
  }
})

test('a process that unref()s its server and ends its work exits by itself promptly, without stop()', async () => {
  const up = await startUpstream({ '/hello': (req, res) => res.end('<html><body>hello</body></html>') })
  const child = spawnNode(EXIT_CHILD, ['unref', up.url])
  try {
    const ready = await child.next('ready', 20000)
    assert.equal(ready.status, 200)
    assert.equal(ready.body, '<html><body>hello</body></html>')
    const exit = await withTimeout(child.exited, 20000, 'the child to exit by itself after unref()')
    const { stderr } = child.output()
    assert.deepEqual(exit, { code: 0, signal: null }, `exit status; stderr: ${stderr}`)
    assert.doesNotMatch(stderr, /panicked|FATAL|core dumped|Segmentation fault|SIGABRT|terminate called/i, `nothing alarming on stderr: ${stderr}`)
    assert.equal(await connectRefused(ready.port), true, 'the port is released with the process')
  } finally {
    await child.kill()
    await up.close()
  }
})

test('a replace function that throws on the start of a page: that response is a 500 naming the error, logged once with the URL, the process stays up and serves the next request', async () => {
  const up = await startUpstream({
    '/boom': (req, res) => res.end('<html><body>before boom after</body></html>'),
    '/calm': (req, res) => res.end('<html><body>calm</body></html>'),
  })
  const child = spawnProxyChild()
  try {
    child.send({
      type: 'start',
      options: { proxy: up.url, port: 0, quiet: false, rewriteRules: [{ source: 'boom', flags: 'g', throws: 'rule exploded' }] },
    })
    const { url } = await child.next('started')
    for (let round = 0; round < 2; round++) {
      const o = await request(url + '/boom', { headers: { accept: ACCEPT_HTML }, timeout: 10000 }).then(
        (res) => ({ status: res.status, body: res.body.toString() }),
        (err) => ({ err }),
      )
      // The rule fails on bytes read before the headers went out: nothing was sent, so a 500.
      assert.ok(!o.err, `the failing response must be a complete 500, got ${o.err && o.err.message}`)
      assert.equal(o.status, 500, `got ${o.status}: ${o.body}`)
      assert.match(o.body, /rule exploded/)
      const calm = await request(url + '/calm', { headers: { accept: ACCEPT_HTML } })
      assert.equal(calm.status, 200)
      assert.equal(calm.body.toString(), '<html><body>calm</body></html>')
    }
    // the child is alive and answering
    child.send({ type: 'stats' })
    const { stats } = await child.next('stats')
    assert.equal(stats.requests, 4)
    child.send({ type: 'mark', id: 'end' })
    await child.next('marked')
    await withTimeout(
      (async () => {
        while (!child.output().stderr.includes('@@mark end')) await new Promise((resolve) => child.child.stderr.once('data', resolve))
      })(),
      5000,
      'the marker on stderr',
    )
    const log = child.output().stderr
    const lines = log.split('\n').filter((l) => l.includes(`${up.url}/boom`))
    assert.equal(lines.length, 2, `one log line with the URL per failed response; stderr:\n${log}`)
    for (const l of lines) assert.match(l, /rule exploded/, 'the log line carries the thrown message')
    assert.doesNotMatch(log, /Uncaught|panick|FATAL/i, `no uncaught exception or panic; stderr:\n${log}`)
    child.send({ type: 'stop' })
    await child.next('stopped')
    assert.deepEqual(await withTimeout(child.exited, 10000, 'child exit'), { code: 0, signal: null })
  } finally {
    await child.kill()
    await up.close()
  }
})

/** Everything the child wrote to stderr up to a marker written now (its log lines are all in by then). */
async function stderrUpToMark(child, id) {
  child.send({ type: 'mark', id })
  await child.next('marked')
  await withTimeout(
    (async () => {
      while (!child.output().stderr.includes(`@@mark ${id}`)) await new Promise((resolve) => child.child.stderr.once('data', resolve))
    })(),
    10000,
    `the marker ${id} on the child's stderr`,
  )
  const log = child.output().stderr
  return log.slice(0, log.indexOf(`@@mark ${id}`))
}

test('a replace function that throws late in a page (after the headers went out): that response is aborted, logged once; the process, a response in flight and later requests carry on', async () => {
  // part 1 has no match and is large; part 2, sent once the client has part 1, holds the match that throws
  const part1 = '<html><body>\n' + '<p>quiet line of text</p>\n'.repeat(2000)
  const clientHasPart1 = deferred()
  const releaseHeld = deferred()
  const up = await startUpstream({
    '/late': async (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.write(part1)
      await Promise.race([clientHasPart1.promise, new Promise((resolve) => res.on('close', resolve))])
      res.end('<p>here comes boom</p></body></html>')
    },
    '/held': async (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.write('<html><body><p>held start</p>')
      await Promise.race([releaseHeld.promise, new Promise((resolve) => res.on('close', resolve))])
      res.end('<p>held end</p></body></html>')
    },
    '/calm': (req, res) => res.end('<html><body>calm</body></html>'),
  })
  const child = spawnProxyChild()
  try {
    child.send({
      type: 'start',
      options: { proxy: up.url, port: 0, quiet: false, rewriteRules: [{ source: 'boom', flags: 'g', throws: 'late rule exploded' }] },
    })
    const { url } = await child.next('started')
    // a response in flight on another connection while the failing one dies
    const heldStarted = deferred()
    const held = request(url + '/held', { headers: { accept: ACCEPT_HTML }, timeout: 30000, onData: () => heldStarted.resolve() })
    held.catch(() => {})
    await withTimeout(heldStarted.promise, 20000, '/held streaming')
    const o = await request(url + '/late', {
      headers: { accept: ACCEPT_HTML },
      timeout: 30000,
      onData: (c, res) => {
        if (res.statusCode === 200) clientHasPart1.resolve()
      },
    }).then(
      (res) => ({ status: res.status, body: res.body }),
      (err) => ({ err }),
    )
    clientHasPart1.resolve()
    assert.ok(o.err, `the late failure must abort the response, got a clean ${o.status} of ${o.body && o.body.length} bytes`)
    assert.ok(o.err.aborted && !o.err.timeout, `aborted, not hung: ${o.err.message}`)
    assert.equal(o.err.status, 200, 'the headers had gone out before the failure')
    assert.ok(o.err.partialBody.length > 0 && part1.startsWith(o.err.partialBody.toString()), 'part 1 arrived, unchanged, before the cut')
    releaseHeld.resolve()
    const heldRes = await held
    assert.equal(heldRes.body.toString(), '<html><body><p>held start</p><p>held end</p></body></html>', 'the response in flight completed')
    const calm = await request(url + '/calm', { headers: { accept: ACCEPT_HTML } })
    assert.equal(calm.status, 200)
    assert.equal(calm.body.toString(), '<html><body>calm</body></html>')
    const log = await stderrUpToMark(child, 'late')
    const lines = log.split('\n').filter((l) => l.includes(`${up.url}/late`))
    assert.equal(lines.length, 1, `one log line with the URL; stderr:\n${log}`)
    assert.match(lines[0], /late rule exploded/, 'the log line carries the thrown message')
    assert.doesNotMatch(log, /Uncaught|panick|FATAL/i, `no uncaught exception or panic; stderr:\n${log}`)
    child.send({ type: 'stop' })
    await child.next('stopped')
    assert.deepEqual(await withTimeout(child.exited, 20000, 'child exit'), { code: 0, signal: null })
  } finally {
    clientHasPart1.resolve()
    releaseHeld.resolve()
    await child.kill()
    await up.close()
  }
})

test('abandoned match candidates: stats().abandonedMatches counts every one, the log has exactly one line per response (child process, quiet: false)', async () => {
  // Every '<x' opens a candidate of /<x[^>]*>/ that runs past maxMatchBytes before any '>': all are abandoned.
  const CANDIDATES = 40
  const MAX = 64
  const body = '<html><body>' + `<x ${'a'.repeat(3 * MAX)} `.repeat(CANDIDATES) + '</body></html>'
  const up = await startUpstream({
    '/many': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      const buf = Buffer.from(body)
      return writeChunks(res, [buf.subarray(0, 500), buf.subarray(500, 3000), buf.subarray(3000)])
    },
  })
  const child = spawnProxyChild()
  try {
    child.send({
      type: 'start',
      options: { proxy: up.url, port: 0, quiet: false, maxMatchBytes: MAX, rewriteRules: [{ source: '<x[^>]*>', flags: 'g', replace: 'X' }] },
    })
    const { url } = await child.next('started')
    const RESPONSES = 3
    for (let i = 0; i < RESPONSES; i++) {
      const res = await request(`${url}/many?r=${i}`, { headers: { accept: ACCEPT_HTML } })
      assert.equal(res.status, 200)
      assert.equal(res.body.toString(), body, 'abandoned candidates go out unchanged')
    }
    child.send({ type: 'stats' })
    const { stats } = await child.next('stats')
    assert.equal(stats.abandonedMatches, RESPONSES * CANDIDATES, 'every abandoned candidate counted')
    const log = await stderrUpToMark(child, 'abandoned')
    const lines = log.split('\n').filter((l) => /maxMatchBytes/.test(l))
    assert.equal(lines.length, RESPONSES, `one line per response about abandoned matches; stderr:\n${log.slice(0, 3000)}`)
    for (let i = 0; i < RESPONSES; i++) {
      const mine = lines.filter((l) => l.includes(`${up.url}/many?r=${i}`))
      assert.equal(mine.length, 1, `response ${i}: one line naming its URL`)
      assert.match(mine[0], new RegExp(`\\b${CANDIDATES}\\b`), `response ${i}: the line gives the count`)
    }
  } finally {
    await child.kill()
    await up.close()
  }
})
