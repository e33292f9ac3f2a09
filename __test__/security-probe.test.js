'use strict'
// Issue 35: what an outside security probe found, each finding held by a test.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const diagnostics = require('node:diagnostics_channel')
const { withTimeout, startUpstream, request, withProxy, ACCEPT_HTML } = require('./helpers')

const OWN_HEADERS = ['x-devproxy-middleware', 'x-devproxy-return']

test('middleware: the tokens of the hops never show, and a leaked one skips nothing', async () => {
  const up = await startUpstream({
    '/admin': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end('<html><body>the admin page</body></html>')
    },
  })
  // Every value of the proxy's own headers that any HTTP server of this process received (the
  // middleware host gets them before it strips them): what a leak could expose at most.
  const leaked = new Set()
  const onRequestStart = ({ request: req }) => {
    for (const name of OWN_HEADERS) if (typeof req.headers[name] === 'string') leaked.add(req.headers[name])
  }
  diagnostics.subscribe('http.server.request.start', onRequestStart)
  const seenByMiddleware = []
  const records = []
  const auth = (req, res, next) => {
    seenByMiddleware.push(JSON.stringify({ headers: req.headers, rawHeaders: req.rawHeaders }))
    if (req.headers.authorization !== 'Bearer let-me-in') {
      res.statusCode = 401
      return res.end('who are you?')
    }
    next()
  }
  try {
    const options = { proxy: up.url, port: 0, middleware: [{ route: '/admin', handle: auth }], onRequest: (r) => records.push(r) }
    await withProxy(options, async (server) => {
      const allowed = await request(server.url + '/admin', { headers: { accept: ACCEPT_HTML, authorization: 'Bearer let-me-in' } })
      assert.equal(allowed.status, 200)
      assert.match(allowed.body.toString(), /the admin page/)
      assert.equal((await request(server.url + '/admin')).status, 401)
      assert.ok(leaked.size >= 2, `the host's token and a ticket were seen by the host: ${leaked.size}`)

      // Sent back by a local page or process, no value that ever crossed a hop opens the middleware.
      // (Each try is a new hand-off, with a new ticket: the values seen so far are tried.)
      const tried = [...leaked]
      for (const value of tried) {
        for (const name of OWN_HEADERS) {
          const res = await request(server.url + '/admin', { headers: { [name]: value } })
          assert.equal(res.status, 401, `${name}: a leaked value skipped the middleware`)
        }
      }

      await withTimeout(
        (async () => {
          while (records.length < 2 + tried.length * OWN_HEADERS.length) await new Promise((r) => setTimeout(r, 20))
        })(),
        10000,
        'onRequest records',
      )
      const inspector = (await request(server.url + '/__devproxy/api/exchanges')).body.toString()
      const observable = { inspector, onRequest: JSON.stringify(records), middleware: seenByMiddleware.join('\n') }
      for (const [where, text] of Object.entries(observable)) {
        for (const value of leaked) assert.ok(!text.includes(value), `${where} shows a token value`)
        for (const name of OWN_HEADERS) assert.ok(!text.toLowerCase().includes(name), `${where} shows ${name}`)
      }
      for (const req of up.requests) {
        for (const name of OWN_HEADERS) assert.equal(req.headers[name], undefined, `the target got ${name}`)
      }
    })
  } finally {
    diagnostics.unsubscribe('http.server.request.start', onRequestStart)
    await up.close()
  }
})
