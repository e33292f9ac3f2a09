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

// Issue 28: a server lives until stop() whether or not anything references it (as Node's http.Server).
const GC_CHILD = path.join(__dirname, 'fixtures/gc-child.js')
const GC_OFTEN = path.join(__dirname, 'fixtures/gc-often.js')

/** GETs `url` every 250 ms for `ms`: resolves to the statuses (a refused connection fails the test). */
async function keepAsking(url, ms) {
  const statuses = []
  const until = Date.now() + ms
  while (Date.now() < until) {
    statuses.push((await request(url)).status)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return statuses
}

test('a started server nobody keeps a reference to survives garbage collection, keeps the process up, and unref() lets it exit (status 0)', async () => {
  const child = spawnNode(GC_CHILD, ['start', up.url], {}, ['--expose-gc'])
  try {
    const { url } = await child.next('started')
    const serving = await child.next('serving')
    assert.equal(serving.alive, true, 'the ProxyServer object itself is kept until stop(): the WeakRef still holds it')
    const statuses = await keepAsking(url + '/hello', 5000)
    assert.ok(statuses.length >= 10 && statuses.every((s) => s === 200), `statuses over 5 s: ${statuses}`)
    assert.equal(child.child.exitCode, null, 'the process is still alive after 5 s')
    child.send({ type: 'unref' })
    const { code, signal } = await withTimeout(child.exited, 10000, 'the process to exit after unref()')
    assert.deepEqual({ code, signal }, { code: 0, signal: null })
  } finally {
    await child.kill()
  }
})

test('stop() after garbage collection (through a WeakRef) stops the server and the process exits', async () => {
  const child = spawnNode(GC_CHILD, ['start', up.url], {}, ['--expose-gc'])
  try {
    const { url } = await child.next('started')
    await child.next('serving')
    assert.equal((await request(url + '/hello')).status, 200)
    child.send({ type: 'stop' })
    await child.next('stopped')
    assert.equal(await connectRefused(Number(new URL(url).port)), true, 'connections are refused after stop()')
    const { code } = await withTimeout(child.exited, 10000, 'the process to exit after stop()')
    assert.equal(code, 0)
  } finally {
    await child.kill()
  }
})

test('the browser-sync adapter: an instance nobody keeps survives garbage collection until exit()', async () => {
  const child = spawnNode(GC_CHILD, ['adapter', up.url], {}, ['--expose-gc'])
  try {
    const { url } = await child.next('started', 30000)
    await child.next('serving')
    const statuses = await keepAsking(url + '/hello', 5000)
    assert.ok(statuses.length >= 10 && statuses.every((s) => s === 200), `statuses over 5 s: ${statuses}`)
    child.send({ type: 'exit' })
    const { code } = await withTimeout(child.exited, 15000, 'the process to exit after exit()')
    assert.equal(code, 0)
  } finally {
    await child.kill()
  }
})

test('the CLI keeps serving while garbage is collected every 50 ms', async () => {
  const cli = path.join(__dirname, '..', 'bin', 'devproxy.js')
  const { spawn } = require('node:child_process')
  const child = spawn(process.execPath, ['--expose-gc', '-r', GC_OFTEN, cli, up.url, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  const local = deferred()
  child.stdout.on('data', (d) => {
    stdout += d
    const m = /Local:\s+(\S+)/.exec(stdout)
    if (m) local.resolve(m[1])
  })
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
  try {
    const url = await withTimeout(Promise.race([local.promise, exited.then((c) => Promise.reject(new Error(`exited ${c}`)))]), 20000, 'the CLI banner')
    const statuses = await keepAsking(url.replace('localhost', '127.0.0.1') + '/hello', 5000)
    assert.ok(statuses.length >= 10 && statuses.every((s) => s === 200), `statuses over 5 s: ${statuses}`)
    assert.equal(child.exitCode, null, 'the CLI is still running')
  } finally {
    child.kill('SIGKILL')
    await exited
  }
})

test('rewrite() with function rules gives the same result across garbage collections', async () => {
  const child = spawnNode(GC_CHILD, ['rewrite'], {}, ['--expose-gc'])
  try {
    const { results } = await child.next('rewritten')
    assert.deepEqual(results, ['<p>b0</p>'])
  } finally {
    await child.kill()
  }
})
