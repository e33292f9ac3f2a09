'use strict'
// A target whose name the hosts file maps to 127.0.0.1 (`wp.test`, as Valet, Local or a hand-edited
// /etc/hosts have it) is on this machine, as `localhost` is: its self-signed certificate is not
// checked unless `secure: true`, and `upstreamCompression: 'auto'` fetches its pages uncompressed.
// The proxy runs in a child process with its own mount namespace whose /etc/hosts names wp.test
// (`unshare -m`, as root: CI is). The upstream runs here, on 127.0.0.1.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { startUpstream, spawnNode, request, ACCEPT_HTML } = require('./helpers')
const { x509v1 } = require('./fixtures/x509-v1.js')

test('a target named in the hosts file (wp.test -> 127.0.0.1) is local: certificate unchecked unless secure: true, pages fetched uncompressed', { timeout: 120000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-hosts-'))
  const hosts = path.join(dir, 'hosts')
  fs.writeFileSync(hosts, '127.0.0.1 localhost\n::1 localhost\n127.0.0.1 wp.test\n')
  const codings = []
  const up = await startUpstream(
    {
      '/page': (req, res) => {
        codings.push(req.headers['accept-encoding'] ?? '(none)')
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end(`<html><body><a href="https://wp.test:${up.port}/x">x</a></body></html>`)
      },
    },
    { tls: x509v1('wp.test', 'rsa') },
  )
  // The child's /etc/hosts names wp.test; nothing else about the machine changes.
  const launcher = ['unshare', '-m', 'sh', '-c', 'mount --bind "$0" /etc/hosts && exec "$@"', hosts]
  const proxyFor = async (options) => {
    const child = spawnNode(path.join(__dirname, 'fixtures', 'proxy-child.js'), [], {}, [], launcher)
    child.send({ type: 'start', options: { port: 0, https: false, quiet: true, ...options } })
    const { url } = await child.next('started', 30000)
    return { url, stop: () => child.kill() }
  }
  const page = (url) => request(`${url}/page`, { headers: { accept: ACCEPT_HTML, 'accept-encoding': 'gzip' } })
  const target = `https://wp.test:${up.port}`
  try {
    const local = await proxyFor({ proxy: target })
    try {
      const res = await page(local.url)
      assert.equal(res.status, 200, res.body.toString())
      assert.match(res.headers['content-encoding'] ?? '', /gzip/, 'the client still gets it compressed')
      assert.deepEqual(codings, ['identity'], 'asked uncompressed, as from localhost')
    } finally {
      await local.stop()
    }
    // The same name with upstreamCompression: 'always' is asked compressed: the difference above is the name's.
    const always = await proxyFor({ proxy: target, upstreamCompression: 'always' })
    try {
      assert.equal((await page(always.url)).status, 200)
      assert.match(codings.at(-1), /gzip/)
    } finally {
      await always.stop()
    }
    const checked = await proxyFor({ proxy: { target, secure: true } })
    try {
      const res = await page(checked.url)
      assert.equal(res.status, 502)
      assert.match(res.body.toString(), /certificate/i)
    } finally {
      await checked.stop()
    }
  } finally {
    await up.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
