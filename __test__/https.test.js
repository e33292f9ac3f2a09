'use strict'
// The proxy serving HTTPS (`https` option; HTTP/2 and HTTP/1.1 by ALPN; WebSockets over TLS), and whom it
// trusts upstream (the OS store and NODE_EXTRA_CA_CERTS; the 502 page for a refused certificate).

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const http2 = require('node:http2')
const net = require('node:net')
const tls = require('node:tls')
const { once } = require('node:events')
const WebSocket = require('ws')
const selfsigned = require('selfsigned')
const { lib, startUpstream, request, withProxy, withTimeout, spawnNode, ACCEPT_HTML } = require('./helpers')
const { x509v1 } = require('./fixtures/x509-v1.js')

const PAGE = (host) => `<html><body><a href="http://${host}/next">next</a></body></html>`
const SNIPPET = '<script>/*snip*/</script>'

let up
let wss
let dir
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-https-'))
  wss = new WebSocket.WebSocketServer({ noServer: true })
  wss.on('connection', (ws, req) => {
    ws.on('message', (data) => ws.send(`echo ${data}`))
    ws.send(`hello ${req.url}`)
  })
  up = await startUpstream(
    {
      '/page': (req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end(PAGE(up.host))
      },
      '/redirect': (req, res) => {
        res.writeHead(302, { location: `${up.url}/next` })
        res.end()
      },
      '/host': (req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' })
        res.end(`${req.httpVersion} ${req.headers.host}`)
      },
      '/upload': (req, res) => {
        const chunks = []
        req.on('data', (c) => chunks.push(c))
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'text/plain' })
          res.end(`got ${Buffer.concat(chunks).length}`)
        })
      },
    },
    { onUpgrade: (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)) },
  )
})
after(async () => {
  for (const c of wss.clients) c.terminate()
  wss.close()
  await up.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

/** A certificate for 127.0.0.1 and localhost, self-signed or signed by `ca`. */
function certificate(ca) {
  return selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 24 * 3600 * 1000),
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] }],
    ...(ca ? { ca: { key: ca.private, cert: ca.cert } } : {}),
  })
}

/** A certificate authority (`basicConstraints` cA) named `name`, to sign leaves with `certificate(ca)`. */
function authority(name) {
  return selfsigned.generate([{ name: 'commonName', value: name }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 24 * 3600 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  })
}

/** The certificates of `pem`, as DER, in order. */
function ders(pem) {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]+?)-----END CERTIFICATE-----/g)].map((m) => Buffer.from(m[1].replace(/\s+/g, ''), 'base64'))
}

/** The chain the server at `port` sends in its TLS handshake, as DER, leaf first (linked by issuer). */
async function servedChain(port) {
  const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false })
  await withTimeout(once(socket, 'secureConnect'), 10000, 'TLS handshake')
  const chain = []
  for (let cert = socket.getPeerCertificate(true); cert && cert.raw && !chain.some((der) => der.equals(cert.raw)); cert = cert.issuerCertificate) {
    chain.push(cert.raw)
  }
  socket.destroy()
  return chain
}

/** `start()` must reject with a message matching every regex; returns the error. */
async function startRejects(options, res) {
  const err = await lib().start({ quiet: true, ...options }).then(
    async (server) => {
      await server.stop()
      assert.fail('start() resolved, expected a rejection')
    },
    (e) => e,
  )
  for (const re of res) assert.match(err.message, re)
  return err
}

test('https: true serves HTTPS with a generated certificate for localhost and 127.0.0.1; Node trusts it as `ca`', async () => {
  await withProxy({ proxy: up.url, port: 0, https: true, snippet: SNIPPET }, async (server) => {
    assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/)
    assert.match(server.certificate, /^-----BEGIN CERTIFICATE-----\r?\n[\s\S]+-----END CERTIFICATE-----\r?\n?$/)
    const expected = `<html><body>${SNIPPET}<a href="//127.0.0.1:${server.port}/next">next</a></body></html>`
    const res = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML }, ca: server.certificate })
    assert.equal(res.status, 200)
    assert.equal(res.body.toString(), expected)
    // the certificate names localhost too
    const byName = await request(`https://localhost:${server.port}/page`, { headers: { accept: ACCEPT_HTML }, ca: server.certificate })
    assert.equal(byName.body.toString(), `<html><body>${SNIPPET}<a href="//localhost:${server.port}/next">next</a></body></html>`)
    const unverified = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML }, rejectUnauthorized: false })
    assert.equal(unverified.body.toString(), expected)
    // without trusting it, Node refuses the self-signed certificate
    const refused = await request(`${server.url}/page`).then(
      () => assert.fail('a self-signed certificate must not be trusted by default'),
      (e) => e,
    )
    assert.match(refused.code, /SELF_SIGNED|UNABLE_TO_VERIFY/, refused.message)
    // the proxy's own URLs are https: redirects to the target come back to it
    const redirect = await request(`${server.url}/redirect`, { ca: server.certificate })
    assert.equal(redirect.status, 302)
    assert.equal(redirect.headers.location, `${server.url}/next`)
    // the upstream is spoken to as before (http, Host the target's)
    const host = await request(`${server.url}/host`, { ca: server.certificate })
    assert.equal(host.body.toString(), `1.1 ${up.host}`)
  })
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    assert.match(server.url, /^http:\/\//)
    assert.equal(server.certificate, null)
  })
})

test('HTTP/2 by ALPN: Node\'s http2 client gets h2 and a rewritten page; :authority passes the Host check; request bodies stream', async () => {
  await withProxy({ proxy: up.url, port: 0, https: true, snippet: SNIPPET }, async (server) => {
    const session = http2.connect(server.url, { ca: server.certificate })
    try {
      await withTimeout(new Promise((resolve, reject) => session.once('connect', resolve).once('error', reject)), 10000, 'h2 connect')
      assert.equal(session.alpnProtocol, 'h2')
      const get = (headers, body) =>
        withTimeout(
          new Promise((resolve, reject) => {
            const stream = session.request(headers)
            const chunks = []
            let head
            stream.on('response', (h) => { head = h })
            stream.on('data', (c) => chunks.push(c))
            stream.on('end', () => resolve({ head, body: Buffer.concat(chunks).toString() }))
            stream.on('error', reject)
            stream.end(body)
          }),
          10000,
          `h2 ${headers[':path']}`,
        )
      const page = await get({ ':path': '/page', accept: ACCEPT_HTML })
      assert.equal(page.head[':status'], 200)
      assert.equal(page.body, `<html><body>${SNIPPET}<a href="//127.0.0.1:${server.port}/next">next</a></body></html>`)
      const host = await get({ ':path': '/host' })
      assert.equal(host.body, `1.1 ${up.host}`)
      const upload = await get({ ':path': '/upload', ':method': 'POST' }, Buffer.alloc(100000, 'x'))
      assert.equal(upload.body, 'got 100000')
      // redirects come back to the origin :authority names
      const redirect = await get({ ':path': '/redirect', ':authority': `localhost:${server.port}` })
      assert.equal(redirect.head[':status'], 302)
      assert.equal(redirect.head.location, `https://localhost:${server.port}/next`)
      // DNS rebinding over h2: a foreign :authority gets the 403 a foreign Host gets
      const n = up.requests.length
      const foreign = await get({ ':path': '/page', ':authority': `evil.example:${server.port}` })
      assert.equal(foreign.head[':status'], 403)
      assert.match(foreign.body, /allowedHosts/)
      assert.equal(up.requests.length, n, 'nothing reached the target')
    } finally {
      session.close()
    }
  })
})

test('https: { key, cert } serves the given PEM files; server.certificate is the cert', async () => {
  const pems = await certificate()
  const key = path.join(dir, 'key.pem')
  const cert = path.join(dir, 'cert.pem')
  fs.writeFileSync(key, pems.private)
  fs.writeFileSync(cert, pems.cert)
  await withProxy({ proxy: up.url, port: 0, https: { key, cert } }, async (server) => {
    assert.match(server.url, /^https:/)
    assert.equal(server.certificate.trim(), pems.cert.trim())
    // What the handshake sends is that certificate.
    assert.deepEqual(await servedChain(server.port), ders(pems.cert))
    const res = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML }, ca: pems.cert })
    assert.equal(res.body.toString(), `<html><body><a href="//127.0.0.1:${server.port}/next">next</a></body></html>`)
  })
  // `ca` (Browsersync's): certificates sent after `cert`. Here the issuer of a leaf it signed: the
  // handshake must send the leaf, then it.
  const issuer = await authority('devproxy test intermediate')
  const leaf = await certificate(issuer)
  const leafKey = path.join(dir, 'leaf-key.pem')
  const leafCert = path.join(dir, 'leaf.pem')
  const ca = path.join(dir, 'issuer.pem')
  fs.writeFileSync(leafKey, leaf.private)
  fs.writeFileSync(leafCert, leaf.cert)
  fs.writeFileSync(ca, issuer.cert)
  await withProxy({ proxy: up.url, port: 0, https: { key: leafKey, cert: leafCert, ca: [ca] } }, async (server) => {
    assert.equal(server.certificate, leaf.cert + issuer.cert)
    const sent = await servedChain(server.port)
    assert.deepEqual(sent, [...ders(leaf.cert), ...ders(issuer.cert)], 'the handshake sends the leaf, then the `ca` certificate')
    const res = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML }, ca: issuer.cert })
    assert.equal(res.status, 200)
  })
})

test('bad https files reject naming the option, the path and what is wrong; pfx and passphrase say how to convert', async () => {
  const pems = await certificate()
  const key = path.join(dir, 'k.pem')
  const cert = path.join(dir, 'c.pem')
  const junk = path.join(dir, 'junk.pem')
  fs.writeFileSync(key, pems.private)
  fs.writeFileSync(cert, pems.cert)
  fs.writeFileSync(junk, 'not a certificate\n')
  const missing = path.join(dir, 'nope', 'key.pem')
  const quote = (p) => new RegExp(p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  await startRejects({ proxy: up.url, port: 0, https: { key: missing, cert } }, [/https\.key/, quote(missing), /does not exist/])
  await startRejects({ proxy: up.url, port: 0, https: { key, cert: junk } }, [/https\.cert/, quote(junk), /no PEM certificate/])
  await startRejects({ proxy: up.url, port: 0, https: { key: cert, cert: key } }, [/https\.cert/, /swapped/])
  await startRejects({ proxy: up.url, port: 0, https: { key: junk, cert } }, [/https\.key/, quote(junk), /no PEM private key/])
  await startRejects({ proxy: up.url, port: 0, https: { cert } }, [/https\.key/, /required/])
  await startRejects({ proxy: up.url, port: 0, https: { pfx: '/x/site.pfx' } }, [/https\.pfx/, /openssl pkcs12 -in '\/x\/site\.pfx'/, /key\.pem/])
  await startRejects({ proxy: up.url, port: 0, https: { key, cert, passphrase: 'secret' } }, [/passphrase/, /openssl pkey/])
  await startRejects({ proxy: up.url, port: 0, https: 'yes' }, [/`https`/, /object|boolean/])
  // another key than the certificate's
  const other = await certificate()
  const otherKey = path.join(dir, 'other-key.pem')
  fs.writeFileSync(otherKey, other.private)
  await startRejects({ proxy: up.url, port: 0, https: { key: otherKey, cert } }, [/https/, /key and certificate/])
})

test('an https target makes the proxy serve https (as Browsersync does); https: false keeps http', async () => {
  const pems = await certificate()
  const tup = await startUpstream(
    {
      '/page': (req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end(`<html><body><a href="https://${tup.host}/x">x</a></body></html>`)
      },
    },
    { tls: { key: pems.private, cert: pems.cert } },
  )
  try {
    await withProxy({ proxy: { target: tup.url, secure: false }, port: 0 }, async (server) => {
      assert.match(server.url, /^https:/)
      const res = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML }, ca: server.certificate })
      assert.equal(res.body.toString(), `<html><body><a href="//127.0.0.1:${server.port}/x">x</a></body></html>`)
    })
    await withProxy({ proxy: { target: tup.url, secure: false }, port: 0, https: false }, async (server) => {
      assert.match(server.url, /^http:/)
      assert.equal(server.certificate, null)
      const res = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML } })
      assert.equal(res.status, 200)
    })
  } finally {
    await tup.close()
  }
})

test('a target on this machine: its certificate is not checked unless secure: true, X.509 v1 ones included (Browsersync never checks)', async () => {
  for (const [type, maxVersion] of [['ec', 'TLSv1.3'], ['rsa', 'TLSv1.3'], ['rsa', 'TLSv1.2']]) {
    const kind = `${type} v1 certificate over ${maxVersion}`
    const tup = await startUpstream(
      {
        '/page': (req, res) => {
          res.writeHead(200, { 'content-type': 'text/plain' })
          res.end(`served over ${req.socket.getProtocol()}`)
        },
      },
      { tls: { ...x509v1('localhost', type), maxVersion } },
    )
    try {
      const { port } = new URL(tup.url)
      for (const target of [tup.url, `https://localhost:${port}`, { target: tup.url, secure: false }]) {
        await withProxy({ proxy: target, port: 0, https: false, quiet: true }, async (server) => {
          const res = await request(`${server.url}/page`)
          assert.equal(res.status, 200, `${kind}, ${JSON.stringify(target)}: ${res.body}`)
          assert.equal(res.body.toString(), `served over ${maxVersion}`)
        })
      }
      const seen = tup.requests.length
      await withProxy({ proxy: { target: `https://localhost:${port}`, secure: true }, port: 0, https: false }, async (server) => {
        const res = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML } })
        assert.equal(res.status, 502, kind)
        assert.match(res.body.toString(), /certificate/i)
        assert.equal(tup.requests.length, seen, 'nothing reached the target')
      })
    } finally {
      await tup.close()
    }
  }
})

test('a TLS client that never finishes its handshake is dropped (like a slow request head); others are served meanwhile', async () => {
  await withProxy({ proxy: up.url, port: 0, https: true }, async (server) => {
    const silent = net.connect(server.port, '127.0.0.1')
    const closed = new Promise((resolve) => silent.once('close', resolve))
    silent.on('error', () => {})
    await new Promise((resolve) => silent.once('connect', resolve))
    const res = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML }, ca: server.certificate })
    assert.equal(res.status, 200)
    await withTimeout(closed, 30000, 'the proxy to close a connection without a handshake')
  })
})

test('WebSockets through an https proxy (wss:// on an HTTP/1.1 TLS connection)', async () => {
  await withProxy({ proxy: up.url, port: 0, https: true }, async (server) => {
    const ws = new WebSocket(`wss://127.0.0.1:${server.port}/sock?q=1`, { ca: server.certificate, origin: server.url })
    const messages = []
    const next = () =>
      withTimeout(
        new Promise((resolve, reject) => {
          if (messages.length) return resolve(messages.shift())
          ws.once('message', () => resolve(messages.shift()))
          ws.once('error', reject)
        }),
        10000,
        'a WebSocket message',
      )
    ws.on('message', (data) => messages.push(data.toString()))
    try {
      await withTimeout(new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject)), 10000, 'wss open')
      assert.equal(await next(), 'hello /sock?q=1')
      ws.send('over tls')
      assert.equal(await next(), 'echo over tls')
      assert.equal(server.stats().websockets, 1)
      const seen = up.requests.filter((r) => r.upgrade).at(-1)
      assert.equal(seen.headers.origin, up.url, 'Origin names the target')
    } finally {
      ws.terminate()
    }
  })
})

test('upstream certificates from a local CA: 502 naming proxy.secure: false and NODE_EXTRA_CA_CERTS, trusted through NODE_EXTRA_CA_CERTS', async () => {
  const ca = await authority('devproxy test local CA')
  const leaf = await certificate(ca)
  const caFile = path.join(dir, 'local-ca.pem')
  fs.writeFileSync(caFile, ca.cert)
  const tup = await startUpstream(
    {
      '/page': (req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end('<html><body>signed by the local CA</body></html>')
      },
    },
    { tls: { key: leaf.private, cert: leaf.cert } },
  )
  try {
    // The target is on this machine, where certificates are checked only with `secure: true`.
    const checked = { target: tup.url, secure: true }
    // this process has no NODE_EXTRA_CA_CERTS: the certificate is refused, and the page says what to do
    await withProxy({ proxy: checked, port: 0, https: false }, async (server) => {
      const res = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML } })
      assert.equal(res.status, 502)
      const body = res.body.toString()
      assert.match(body, /UnknownIssuer/)
      assert.match(body, /proxy\.secure: false \(proxy: \{ target, secure: false \}\)/)
      assert.match(body, /NODE_EXTRA_CA_CERTS/)
      assert.match(body, /mkcert/)
    })
    // a child process started with NODE_EXTRA_CA_CERTS trusts it, verification still on
    const child = spawnNode(path.join(__dirname, 'fixtures/proxy-child.js'), [], { NODE_EXTRA_CA_CERTS: caFile })
    try {
      child.child.send({ type: 'start', options: { proxy: checked, port: 0, https: false, quiet: true } })
      const started = await child.next('started')
      const res = await request(`${started.url}/page`, { headers: { accept: ACCEPT_HTML } })
      assert.equal(res.status, 200, res.body.toString())
      assert.equal(res.body.toString(), '<html><body>signed by the local CA</body></html>')
      child.child.send({ type: 'stop' })
      await child.next('stopped')
    } finally {
      child.child.kill()
      await child.exited
    }
    // NODE_EXTRA_CA_CERTS naming a file that is not there: said once on stderr, and nothing more is trusted
    const missing = path.join(dir, 'no-such-ca.pem')
    const warned = spawnNode(path.join(__dirname, 'fixtures/proxy-child.js'), [], { NODE_EXTRA_CA_CERTS: missing })
    try {
      warned.child.send({ type: 'start', options: { proxy: checked, port: 0, https: false } })
      const started = await warned.next('started')
      const res = await request(`${started.url}/page`, { headers: { accept: ACCEPT_HTML } })
      assert.equal(res.status, 502)
      warned.child.send({ type: 'stop' })
      await warned.next('stopped')
      const { stderr } = warned.output()
      assert.match(stderr, /\[devproxy\] NODE_EXTRA_CA_CERTS: '[^']*no-such-ca\.pem' cannot be read/)
    } finally {
      warned.child.kill()
      await warned.exited
    }
  } finally {
    await tup.close()
  }
})
