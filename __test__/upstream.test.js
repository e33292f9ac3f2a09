'use strict'
// The upstream side: connections are pooled and reused, and HTTP/2 is used when the upstream offers
// it through ALPN.

const test = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const http2 = require('node:http2')
const selfsigned = require('selfsigned')
const { startUpstream, request, withProxy, ACCEPT_HTML } = require('./helpers')

test('sequential requests reuse one pooled upstream connection', async () => {
  const up = await startUpstream({
    '/page': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end('<html><body>pooled</body></html>')
    },
  })
  let connections = 0
  up.server.on('connection', () => connections++)
  try {
    await withProxy({ proxy: up.url, port: 0 }, async (server) => {
      for (let i = 0; i < 10; i++) {
        const res = await request(server.url + '/page', { headers: { accept: ACCEPT_HTML } })
        assert.equal(res.body.toString(), '<html><body>pooled</body></html>')
      }
    })
    assert.equal(up.requests.length, 10)
    assert.equal(connections, 1, `10 requests used ${connections} upstream connections`)
  } finally {
    await up.close()
  }
})

test('an https upstream that offers h2 through ALPN is spoken to in HTTP/2, and bodies are still rewritten', async () => {
  const pems = await selfsigned.generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 24 * 3600 * 1000),
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  })
  const versions = []
  const server2 = http2.createSecureServer({ key: pems.private, cert: pems.cert, allowHTTP1: true }, (req, res) => {
    versions.push(req.httpVersion)
    const origin = `https://127.0.0.1:${server2.address().port}`
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end(`<html><body><a href="${origin}/next">next</a></body></html>`)
  })
  await new Promise((resolve) => server2.listen(0, '127.0.0.1', resolve))
  const target = `https://127.0.0.1:${server2.address().port}`
  try {
    await withProxy({ proxy: { target, secure: false }, port: 0 }, async (server) => {
      for (let i = 0; i < 3; i++) {
        // an https target: the proxy serves https too
        const res = await request(server.url + '/', { headers: { accept: ACCEPT_HTML }, ca: server.certificate })
        assert.equal(res.status, 200)
        assert.equal(res.body.toString(), `<html><body><a href="//127.0.0.1:${server.port}/next">next</a></body></html>`)
      }
    })
    assert.deepEqual(versions, ['2.0', '2.0', '2.0'])
  } finally {
    await new Promise((resolve) => server2.close(resolve))
  }
})

test('a plain-http upstream is spoken to in HTTP/1.1', async () => {
  const up = await startUpstream({
    '/v': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end(req.httpVersion)
    },
  })
  try {
    await withProxy({ proxy: up.url, port: 0 }, async (server) => {
      const res = await request(server.url + '/v')
      assert.equal(res.body.toString(), '1.1')
    })
  } finally {
    await up.close()
  }
})
