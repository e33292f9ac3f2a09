'use strict'
// start()/stop() lifecycle: url/port, freeing the port, graceful in-flight completion, process lifetime.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const {
  lib,
  deferred,
  withTimeout,
  startUpstream,
  occupyPort,
  connectRefused,
  request,
  withProxy,
  spawnNode,
  ACCEPT_HTML,
} = require('./helpers')

let up
const routes = {
  '/hello': (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end('<html><body>hello</body></html>')
  },
}
before(async () => {
  up = await startUpstream(routes)
})
after(async () => {
  await up.close()
})

const CHILD = path.join(__dirname, 'fixtures/lifecycle-child.js')

test('start() resolves a server with url and port on 127.0.0.1 (port 0 = any free port)', async () => {
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    assert.equal(typeof server.port, 'number')
    assert.ok(server.port > 0 && server.port < 65536)
    assert.equal(server.url, `http://127.0.0.1:${server.port}`)
    const res = await request(server.url + '/hello', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.status, 200)
  })
})

test('an explicit port and host are honoured', async () => {
  const free = await occupyPort(0)
  await free.close()
  await withProxy({ proxy: up.url, port: free.port, host: '127.0.0.1' }, async (server) => {
    assert.equal(server.port, free.port)
    assert.equal(server.url, `http://127.0.0.1:${free.port}`)
    assert.equal((await request(server.url + '/hello')).status, 200)
  })
})

test('stop() frees the port: the same port can be bound right after, and connections are refused', async () => {
  const server = await lib().start({ proxy: up.url, port: 0 })
  const port = server.port
  let stopped = false
  try {
    assert.equal((await request(server.url + '/hello')).status, 200)
    await withTimeout(server.stop(), 10000, 'stop()')
    stopped = true
    assert.equal(await connectRefused(port), true, 'connect after stop() must be refused')
    const again = await occupyPort(port)
    assert.equal(again.port, port)
    await again.close()
    // and a new proxy can take the port
    await withProxy({ proxy: up.url, port }, async (s2) => {
      assert.equal(s2.port, port)
      assert.equal((await request(s2.url + '/hello')).status, 200)
    })
  } finally {
    if (!stopped) await server.stop()
  }
})

test('stop() lets an in-flight request finish and refuses new connections meanwhile', async () => {
  const release = deferred()
  const upstreamHasIt = deferred()
  routes['/slow'] = async (req, res) => {
    upstreamHasIt.resolve()
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('part 1|')
    await release.promise
    res.end('part 2')
  }
  const server = await lib().start({ proxy: up.url, port: 0 })
  const port = server.port
  let stopPromise
  try {
    const inflight = request(server.url + '/slow', { timeout: 15000 })
    await withTimeout(upstreamHasIt.promise, 5000, 'upstream receiving the request')
    stopPromise = server.stop()
    let stopDone = false
    stopPromise.then(() => { stopDone = true }, () => { stopDone = true })
    // new connections are refused once stop() has been called (poll: the listener closes asynchronously; the
    // guard is generous, the in-flight request is held until the end of the test)
    await withTimeout(
      (async () => {
        while (!(await connectRefused(port))) await new Promise((resolve) => setTimeout(resolve, 25))
      })(),
      20000,
      'new connections to be refused after stop() was called',
    )
    assert.equal(stopDone, false, 'stop() must wait for the in-flight request')
    release.resolve()
    const res = await inflight
    assert.equal(res.status, 200)
    assert.equal(res.body.toString(), 'part 1|part 2')
    await withTimeout(stopPromise, 10000, 'stop() after the in-flight request finished')
  } finally {
    release.resolve()
    if (!stopPromise) await server.stop()
  }
})

test('several proxies run side by side, each to its own target', async () => {
  const up2 = await startUpstream({ '/hello': (req, res) => res.end('<html><body>second</body></html>') })
  try {
    await withProxy({ proxy: up.url, port: 0 }, async (a) => {
      await withProxy({ proxy: up2.url, port: 0, rewriteRules: [{ match: /second/g, replace: '2nd' }] }, async (b) => {
        assert.notEqual(a.port, b.port)
        const [ra, rb] = await Promise.all([
          request(a.url + '/hello', { headers: { accept: ACCEPT_HTML } }),
          request(b.url + '/hello', { headers: { accept: ACCEPT_HTML } }),
        ])
        assert.equal(ra.body.toString(), '<html><body>hello</body></html>')
        assert.equal(rb.body.toString(), '<html><body>2nd</body></html>')
      })
    })
  } finally {
    await up2.close()
  }
})

test('a process that stops its server exits by itself', async () => {
  const child = spawnNode(CHILD, ['stop', up.url])
  try {
    const msg = await child.next('stopped', 20000)
    assert.equal(msg.status, 200)
    assert.equal(msg.body, '<html><body>hello</body></html>')
    // a generous guard: a process held by a stopped server would never exit
    const exit = await withTimeout(child.exited, 20000, 'the child process to exit after stop()')
    assert.deepEqual(exit, { code: 0, signal: null }, child.output().stderr)
  } finally {
    await child.kill()
  }
})

test('a running server keeps its process alive (like http.Server)', async () => {
  const child = spawnNode(CHILD, ['nostop', up.url])
  try {
    const msg = await child.next('running', 20000)
    assert.equal(msg.status, 200)
    // With the IPC channel gone, only the server can hold the process: the child's unref()ed timer fires (and
    // prints `alive`) if it does; if it does not, the process exits first. Whichever happens first decides.
    const alive = new Promise((resolve) => {
      const check = () => {
        const line = /alive[^\n]*\n/.exec(child.output().stdout)
        if (line) resolve(line[0].trim())
        else child.child.stdout.once('data', check)
      }
      check()
    })
    const first = await withTimeout(
      Promise.race([alive, child.exited.then((e) => `exited (code ${e.code}, signal ${e.signal})`)]),
      20000,
      'the child to print alive or exit',
    )
    assert.equal(first, 'alive 200', `the server must keep the process alive: ${first}; stderr: ${child.output().stderr}`)
    const res = await request(`http://127.0.0.1:${msg.port}/hello`, { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.status, 200, 'the child is still serving')
  } finally {
    await child.kill()
  }
})
