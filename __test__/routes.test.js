'use strict'
// routes: path prefixes sent to other targets (three loopback upstreams), HTTP and WebSocket.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const WebSocket = require('ws')
const { HOST, startUpstream, deadPort, withProxy, withTimeout, lib, ACCEPT_HTML, stopIfStarted } = require('./helpers')

let main // `proxy`
let api // routes['/api']
let v2 // routes['/api/v2'], the longer prefix
let wss

/** Each upstream answers any path with its name and the path, and pages that link to the others. */
function named(name) {
  return (req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end(`${name} ${req.url}`)
  }
}

before(async () => {
  wss = new WebSocket.WebSocketServer({ noServer: true })
  wss.on('connection', (ws, req) => {
    ws.send(`api ws ${req.url}`)
    ws.on('message', (data) => ws.send(`echo ${data}`))
  })
  const page = (name) => (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end(`<html><body>${name}: <a href="${main.url}/m">m</a> <a href="${api.url}/api/a">a</a> <script src="//${v2.host}/api/v2/s.js"></script></body></html>`)
  }
  main = await startUpstream({ '/': named('main'), '/apix': named('main'), '/page': page('main') })
  api = await startUpstream(
    {
      '/api': named('api'),
      '/api/x': named('api'),
      '/api/page': page('api'),
      '/api/login': (req, res) => {
        res.writeHead(302, {
          location: `${api.url}/api/welcome`,
          'set-cookie': 'sid=1; Domain=127.0.0.1; Path=/; HttpOnly',
        })
        res.end()
      },
    },
    { onUpgrade: (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)) },
  )
  v2 = await startUpstream({ '/api/v2/users': named('v2') })
})

after(async () => {
  for (const c of wss.clients) c.terminate()
  wss.close()
  await Promise.all([main.close(), api.close(), v2.close()])
})

function get(server, pathname, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: HOST, port: server.port, path: pathname, headers, agent: false })
    req.on('error', reject)
    req.on('response', (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }))
    })
    req.end()
  })
}

const options = () => ({
  proxy: main.url,
  port: 0,
  routes: {
    '/api': api.url,
    '/api/v2/': { target: v2.url, reqHeaders: { 'x-route': 'v2' } },
  },
})

test('a prefix goes to its target with the path unchanged, at a segment boundary; the longest prefix wins; the rest goes to proxy', async () => {
  await withProxy(options(), async (server) => {
    assert.equal((await get(server, '/api')).body, 'api /api')
    assert.equal((await get(server, '/api/x?q=1')).body, 'api /api/x?q=1')
    assert.equal((await get(server, '/api/v2/users')).body, 'v2 /api/v2/users')
    assert.equal((await get(server, '/apix')).body, 'main /apix')
    assert.equal((await get(server, '/')).body, 'main /')
    const toApi = api.requests.find((r) => r.url === '/api/x?q=1')
    assert.equal(toApi.headers.host, api.host, 'Host is the route target')
    const toV2 = v2.requests.find((r) => r.url === '/api/v2/users')
    assert.equal(toV2.headers['x-route'], 'v2', 'the route reqHeaders')
    assert.equal(toV2.headers.host, v2.host)
    assert.ok(main.requests.every((r) => r.headers['x-route'] === undefined), 'not on other targets')
  })
})

test('a route target\'s redirect, cookie and Origin are rewritten for that target', async () => {
  await withProxy(options(), async (server) => {
    const local = `127.0.0.1:${server.port}`
    const res = await get(server, '/api/login', { origin: `http://${local}` })
    assert.equal(res.status, 302)
    assert.equal(res.headers.location, `http://${local}/api/welcome`)
    assert.deepEqual(res.headers['set-cookie'], ['sid=1; Path=/; HttpOnly'])
    assert.equal(api.requests.find((r) => r.url === '/api/login').headers.origin, api.url)
  })
})

test('links to every target are rewritten to the proxy, in pages from any target', async () => {
  await withProxy(options(), async (server) => {
    const local = `127.0.0.1:${server.port}`
    for (const [pathname, name] of [['/page', 'main'], ['/api/page', 'api']]) {
      const { body } = await get(server, pathname, { accept: ACCEPT_HTML })
      assert.equal(
        body,
        `<html><body>${name}: <a href="//${local}/m">m</a> <a href="//${local}/api/a">a</a> <script src="//${local}/api/v2/s.js"></script></body></html>`,
      )
    }
  })
})

test('a WebSocket under a route is tunnelled to the route target; ws: false on a route refuses the upgrade there', async () => {
  await withProxy(options(), async (server) => {
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/api/socket?x=1`)
    const messages = []
    const got = (n) =>
      withTimeout(
        new Promise((resolve) => {
          const check = () => (messages.length >= n ? resolve() : ws.once('message', (m) => (messages.push(String(m)), check())))
          check()
        }),
        5000,
        'WebSocket messages',
      )
    await got(1)
    ws.send('ping')
    await got(2)
    assert.deepEqual(messages, ['api ws /api/socket?x=1', 'echo ping'])
    ws.close()
    const upgrade = api.requests.find((r) => r.upgrade)
    assert.equal(upgrade.headers.host, api.host)
  })
  const noWs = { ...options(), routes: { '/api': { target: api.url, ws: false } } }
  await withProxy(noWs, async (server) => {
    const before = api.requests.filter((r) => r.upgrade).length
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/api/socket`)
    const outcome = await withTimeout(
      new Promise((resolve) => {
        ws.once('open', () => resolve('open'))
        ws.once('unexpected-response', (req, res) => resolve(res.statusCode))
        ws.once('error', () => resolve('error'))
      }),
      5000,
      'the refused upgrade',
    )
    ws.terminate()
    assert.notEqual(outcome, 'open')
    assert.equal(api.requests.filter((r) => r.upgrade).length, before, 'no upgrade reached the route target')
  })
})

test('a route target that is down gives a 502 naming that target; the others still answer', async () => {
  const dead = `http://127.0.0.1:${await deadPort()}`
  await withProxy({ proxy: main.url, port: 0, routes: { '/down': dead } }, async (server) => {
    const res = await get(server, '/down/x')
    assert.equal(res.status, 502)
    assert.match(res.body, new RegExp(`from the target <b>${dead.replace(/\./g, '\\.')}</b>`))
    assert.equal((await get(server, '/')).body, 'main /')
  })
})

test('bad routes are refused, naming the route', async () => {
  const start = (routes) => lib().start({ proxy: main.url, port: 0, quiet: true, routes })
  await assert.rejects(stopIfStarted(start({ api: api.url })), /routes\['api'\].*path prefix/)
  await assert.rejects(stopIfStarted(start({ '/': api.url })), /routes\['\/'\].*every request/)
  await assert.rejects(stopIfStarted(start({ '/api': 5 })), /routes\['\/api'\]` must be a URL string/)
  await assert.rejects(stopIfStarted(start({ '/api': { ws: true } })), /routes\['\/api'\] has no `target`/)
  await assert.rejects(stopIfStarted(start({ '/api': 'ftp://127.0.0.1' })), /routes\['\/api'\].*unsupported scheme/)
  await assert.rejects(stopIfStarted(start({ '/api': { target: api.url, reqHeaders: { 'bad header': 'x' } } })), /routes\['\/api'\].*reqHeaders/)
  await assert.rejects(stopIfStarted(start({ '/api': api.url, '/api/': v2.url })), /routes\['\/api\/'\]` repeats the prefix '\/api'/)
})
