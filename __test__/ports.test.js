'use strict'
// Ports as Browsersync takes them: the next free port when the one asked for is in use (said on stderr),
// `strictPort: true` to fail instead (code EADDRINUSE), `port: 0` for any, `listen` overriding `host`.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { lib, startUpstream, occupyPort, request, withProxy, spawnNode, ACCEPT_HTML, stopIfStarted } = require('./helpers')

let up
before(async () => {
  up = await startUpstream({
    '/ok': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end('<html><body>fine</body></html>')
    },
  })
})
after(async () => {
  await up.close()
})

test('a port in use: the proxy takes the next free one and says which on stderr', async () => {
  const busy = await occupyPort(0)
  const child = spawnNode(path.join(__dirname, 'fixtures/proxy-child.js'))
  try {
    child.child.send({ type: 'start', options: { proxy: up.url, port: busy.port, host: '127.0.0.1' } })
    const started = await child.next('started')
    assert.ok(started.port > busy.port, `took ${started.port} after ${busy.port}`)
    const res = await request(`${started.url}/ok`, { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.body.toString(), '<html><body>fine</body></html>')
    child.child.send({ type: 'stop' })
    await child.next('stopped')
    const { stderr } = child.output()
    assert.match(stderr, new RegExp(`port ${busy.port} is in use on 127\\.0\\.0\\.1; listening on port ${started.port} instead`))
  } finally {
    child.child.kill()
    await child.exited
    await busy.close()
  }
})

test('quiet: the port is still moved, without a log line', async () => {
  const busy = await occupyPort(0)
  const child = spawnNode(path.join(__dirname, 'fixtures/proxy-child.js'))
  try {
    child.child.send({ type: 'start', options: { proxy: up.url, port: busy.port, quiet: true } })
    const started = await child.next('started')
    assert.ok(started.port > busy.port)
    child.child.send({ type: 'stop' })
    await child.next('stopped')
    assert.doesNotMatch(child.output().stderr, /in use/)
  } finally {
    child.child.kill()
    await child.exited
    await busy.close()
  }
})

test('strictPort: true rejects a port in use with code EADDRINUSE and the port named', async () => {
  const busy = await occupyPort(0)
  try {
    const err = await lib().start({ proxy: up.url, port: busy.port, strictPort: true, quiet: true }).then(
      async (server) => {
        await server.stop()
        assert.fail('start() resolved on a port in use with strictPort')
      },
      (e) => e,
    )
    assert.ok(err instanceof Error)
    assert.equal(err.code, 'EADDRINUSE')
    assert.equal(err.port, busy.port)
    assert.match(err.message, new RegExp(`port ${busy.port} is already in use`))
    assert.match(err.message, /strictPort/)
    await assert.rejects(stopIfStarted(lib().start({ proxy: up.url, port: 1, strictPort: 'yes' })), /strictPort/)
  } finally {
    await busy.close()
  }
})

test('port 0 picks any free port; listen overrides host', async () => {
  await withProxy({ proxy: up.url, port: 0, host: 'not-an-address', listen: '127.0.0.1' }, async (server) => {
    assert.ok(server.port > 0)
    assert.equal(server.url, `http://127.0.0.1:${server.port}`)
    const res = await request(`${server.url}/ok`, { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.status, 200)
  })
  await withProxy({ proxy: up.url, port: 0, listen: '::1' }, async (server) => {
    assert.equal(server.url, `http://[::1]:${server.port}`)
    const res = await request(`${server.url}/ok`, { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.body.toString(), '<html><body>fine</body></html>')
  })
  await assert.rejects(stopIfStarted(lib().start({ proxy: up.url, port: 0, listen: 5 })), /listen/)
})
