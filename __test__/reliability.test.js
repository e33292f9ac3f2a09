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
  ACCEPT_HTML,
} = require('./helpers')
const { runLoad, runCycles, runWebSocket, spawnProxyChild } = require('./fixtures/runners')

test('load: 64 keep-alive connections for 3 s on a rewritten page and a passthrough binary: zero errors, every body checked, RSS back near its baseline', async (t) => {
  const figures = await runLoad({ connections: 64, seconds: 3, log: (f) => t.diagnostic(JSON.stringify(f)) })
  assert.equal(figures.errors, 0)
})

test('100 start()/stop() cycles in one process (each serving a request): fds and threads back to their count, RSS within 24 MiB', async (t) => {
  const figures = await runCycles({ cycles: 100, log: (f) => t.diagnostic(JSON.stringify(f)) })
  assert.equal(figures.cycles, 100)
})

test('WebSocket: 2,000 messages through the tunnel arrive in order and intact, none lost, in both directions', async (t) => {
  const figures = await runWebSocket({ messages: 2000, log: (f) => t.diagnostic(JSON.stringify(f)) })
  assert.equal(figures.lost, 0)
})

test('stop() with 50 streaming responses in flight: those that can finish within gracePeriodMs finish, the rest are cut after it; the Promise resolves and the port is free right after', async () => {
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
        request(`${server.url}/s${i}`, { headers: { accept }, timeout: 10000, onData: () => got.resolve() }).then(
          (res) => ({ i, status: res.status, body: res.body.toString(), at: Date.now() }),
          (err) => ({ i, err, at: Date.now() }),
        ),
      )
    }
    await withTimeout(Promise.all(firstBytes), 10000, 'all 50 responses streaming')
    const t0 = Date.now()
    const stopping = server.stop()
    finish.resolve()
    await withTimeout(stopping, GRACE + 5000, 'stop() with responses in flight')
    stopped = true
    const stopMs = Date.now() - t0
    // the port is free right after
    assert.equal(await connectRefused(port), true, 'connections are refused once stop() resolved')
    const again = await occupyPort(port)
    await again.close()
    const results = await withTimeout(Promise.all(outcomes), 5000, 'every in-flight response to settle')
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
    assert.ok(stopMs < GRACE + 2000, `stop() resolved ${stopMs} ms after it was called (grace period ${GRACE} ms)`)
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
    const ready = await child.next('ready', 10000)
    assert.equal(ready.status, 200)
    assert.equal(ready.streaming, 200)
    const t0 = Date.now()
    const exit = await withTimeout(child.exited, 5000, 'the child to exit after process.exit(0)')
    const { stderr } = child.output()
    assert.deepEqual(exit, { code: 0, signal: null }, `exit status; stderr: ${stderr}`)
    assert.ok(Date.now() - t0 < 5000)
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
    const ready = await child.next('ready', 10000)
    assert.equal(ready.status, 200)
    assert.equal(ready.body, '<html><body>hello</body></html>')
    const exit = await withTimeout(child.exited, 5000, 'the child to exit by itself after unref()')
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
