'use strict'
// Compression: Accept-Encoding forwarding, decode -> rewrite -> re-encode, and compressed passthrough.
// Node 20 has no zstd codec, so zstd upstream bodies are covered by the Rust tests only.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const zlib = require('node:zlib')
const {
  startUpstream,
  request,
  withProxy,
  decodeBody,
  browsersyncRewriteLinks,
  ACCEPT_HTML,
  fileUpstream,
  lib,
  stopIfStarted,
} = require('./helpers')

const SNIPPET = '<script async src="/__dev.js"></script>'
const ENCODERS = { gzip: zlib.gzipSync, deflate: zlib.deflateSync, br: zlib.brotliCompressSync }
const OFFERABLE = new Set(['gzip', 'deflate', 'br', 'zstd'])

const routes = {}
const up = fileUpstream(routes)

function tokens(acceptEncoding) {
  return (acceptEncoding || '')
    .split(',')
    .map((t) => t.split(';')[0].trim().toLowerCase())
    .filter(Boolean)
}

/** Upstream route: encodes `body` with ?enc=<x> when the (proxied) request's Accept-Encoding offers it. */
function encodedRoute(path, body, type = 'text/html; charset=utf-8') {
  routes[path] = (req, res) => {
    const enc = new URL(req.url, 'http://x').searchParams.get('enc')
    const offered = tokens(req.headers['accept-encoding'])
    const headers = { 'content-type': type, vary: 'Accept-Encoding' }
    let buf = Buffer.from(body)
    if (enc && offered.includes(enc)) {
      buf = ENCODERS[enc](buf)
      headers['content-encoding'] = enc
    }
    headers['content-length'] = buf.length
    res.writeHead(200, headers)
    res.end(buf)
  }
}

function pageWithLinks(T, extra = '') {
  return `<!DOCTYPE html><html><head><link href="http://${T}/a.css" rel="stylesheet"></head><body class="p">` +
    `<p>héllo wörld €</p><a href="http://${T}/next">n</a>${extra}</body></html>`
}

function assertVaryAcceptEncoding(headers) {
  const vary = tokens(headers.vary)
  assert.ok(vary.includes('accept-encoding') || vary.includes('*'), `Vary must include Accept-Encoding, got ${headers.vary}`)
}

test("compressed HTML (gzip, deflate, br) is decoded, rewritten and re-encoded in the same coding when the client accepts them all (upstreamCompression 'always')", async () => {
  const page = pageWithLinks(up.host)
  encodedRoute('/c/page', page)
  const options = { proxy: up.url, port: 0, snippet: SNIPPET, upstreamCompression: 'always', rewriteRules: [{ match: /wörld/g, replace: 'world' }] }
  await withProxy(options, async (server) => {
    const host = `127.0.0.1:${server.port}`
    const expected = browsersyncRewriteLinks(page.replace('<body class="p">', '<body class="p">' + SNIPPET).replace('wörld', 'world'), up.port, host)
    for (const enc of Object.keys(ENCODERS)) {
      const offer = 'gzip, deflate, br'
      const n = up.requests.length
      const res = await request(`${server.url}/c/page?enc=${enc}`, { headers: { accept: ACCEPT_HTML, 'accept-encoding': offer } })
      assert.equal(res.status, 200)
      const seen = tokens(up.requests[n].headers['accept-encoding'])
      assert.ok(seen.includes(enc), `upstream must see the client's Accept-Encoding (saw ${up.requests[n].headers['accept-encoding']})`)
      const ce = res.headers['content-encoding']
      assert.equal(ce, enc, `upstream ${enc}: re-encoded in the same coding, since the client accepts it`)
      assert.equal(res.headers['content-length'], undefined, 'Content-Length dropped on a rewritten body')
      assertVaryAcceptEncoding(res.headers)
      assert.equal(decodeBody(res.body, ce).toString(), expected, `upstream ${enc}, client got ${ce}`)
    }
  })
})

test("a gzip page re-encoded as gzip keeps the upstream's weight: the proxy follows the upstream's own matches around what it rewrote", async () => {
  const words = ['proxy', 'stream', 'header', 'rewrite', 'domain', 'node', 'rust', 'client', 'server', 'cache']
  const T = up.host
  let page = `<!DOCTYPE html><html><head><link href="http://${T}/site.css" rel="stylesheet"></head><body class="docs">\n<ul>\n`
  for (let i = 0; i < 3000; i++) {
    const text = [0, 1, 2, 3].map((k) => words[(i * 7 + k * 3 + (i >> 3)) % words.length]).join(' ')
    page += `<li id="i${i}"><a href="http://${T}/docs/${words[i % 10]}/page-${i % 89}.html" class="item">${text} ${i}</a></li>\n`
  }
  page += '</ul></body></html>\n'
  encodedRoute('/c/weight', page)
  const upstreamBytes = zlib.gzipSync(Buffer.from(page)).length
  const sizes = {}
  for (const upstreamCompression of ['always', 'auto']) {
    await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET, upstreamCompression }, async (server) => {
      const host = `127.0.0.1:${server.port}`
      const expected = browsersyncRewriteLinks(page.replace('<body class="docs">', '<body class="docs">' + SNIPPET), up.port, host)
      const res = await request(`${server.url}/c/weight?enc=gzip`, { headers: { accept: ACCEPT_HTML, 'accept-encoding': 'gzip' } })
      assert.equal(res.headers['content-encoding'], 'gzip')
      assert.equal(decodeBody(res.body, 'gzip').toString(), expected, `${upstreamCompression}: the rewritten page`)
      sizes[upstreamCompression] = res.body.length
    })
  }
  const ratio = (n) => (n / upstreamBytes).toFixed(3)
  // 'always': the upstream sent gzip -6, whose matches are followed; 'auto' (a loopback target): it sent
  // the page uncompressed and our own, faster search compresses it.
  assert.ok(sizes.always <= upstreamBytes * 1.03, `from a gzip upstream: ${sizes.always} B, ${ratio(sizes.always)}x the upstream's ${upstreamBytes} B`)
  assert.ok(sizes.auto > sizes.always * 1.08, `uncompressed upstream: ${sizes.auto} B (${ratio(sizes.auto)}x) against ${sizes.always} B`)
})

test('Vary on a rewritten compressed page: Accept-Encoding added when the upstream sent no Vary, appended to Vary: Origin, not doubled', async () => {
  const page = pageWithLinks(up.host)
  const gz = zlib.gzipSync(Buffer.from(page))
  // compressed by the upstream (upstreamCompression 'always') or only here ('auto', loopback target: identity upstream)
  const route = (vary) => (req, res) => {
    const offered = tokens(req.headers['accept-encoding'])
    const headers = { 'content-type': 'text/html; charset=utf-8', ...(vary ? { vary } : {}) }
    if (offered.includes('gzip')) {
      headers['content-encoding'] = 'gzip'
      res.writeHead(200, headers)
      res.end(gz)
    } else {
      res.writeHead(200, headers)
      res.end(page)
    }
  }
  routes['/c/no-vary'] = route(null)
  routes['/c/vary-origin'] = route('Origin')
  routes['/c/vary-both'] = route('Origin, Accept-Encoding')
  for (const upstreamCompression of ['always', 'auto']) {
    await withProxy({ proxy: up.url, port: 0, upstreamCompression }, async (server) => {
      const expected = browsersyncRewriteLinks(page, up.port, `127.0.0.1:${server.port}`)
      const cases = [
        ['/c/no-vary', ['accept-encoding']],
        ['/c/vary-origin', ['origin', 'accept-encoding']],
        ['/c/vary-both', ['origin', 'accept-encoding']],
      ]
      for (const [p, want] of cases) {
        const n = up.requests.length
        const res = await request(server.url + p, { headers: { accept: ACCEPT_HTML, 'accept-encoding': 'gzip' } })
        const label = `${p} (${upstreamCompression}, upstream sent ${up.requests[n].headers['accept-encoding'] === 'identity' ? 'identity' : 'gzip'})`
        assert.equal(res.status, 200, label)
        assert.equal(res.headers['content-encoding'], 'gzip', label)
        assert.equal(decodeBody(res.body, 'gzip').toString(), expected, `${label}: rewritten`)
        assert.deepEqual(tokens(res.headers.vary).sort(), want.slice().sort(), `${label}: Vary is ${JSON.stringify(res.headers.vary)}`)
      }
    })
  }
})

test('a client offering a single encoding gets exactly that encoding back on a rewritten body', async () => {
  const page = pageWithLinks(up.host)
  encodedRoute('/c/single', page)
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const host = `127.0.0.1:${server.port}`
    const expected = browsersyncRewriteLinks(page, up.port, host)
    for (const enc of Object.keys(ENCODERS)) {
      const res = await request(`${server.url}/c/single?enc=${enc}`, { headers: { accept: ACCEPT_HTML, 'accept-encoding': enc } })
      assert.equal(res.headers['content-encoding'], enc)
      assert.equal(decodeBody(res.body, enc).toString(), expected)
    }
  })
})

test('without Accept-Encoding from the client, the upstream is not offered compression and the body is plain', async () => {
  const page = pageWithLinks(up.host)
  encodedRoute('/c/none', page)
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const n = up.requests.length
    const res = await request(`${server.url}/c/none?enc=gzip`, { headers: { accept: ACCEPT_HTML } })
    const seen = tokens(up.requests[n].headers['accept-encoding']).filter((t) => t !== 'identity')
    assert.deepEqual(seen, [], `upstream was offered ${up.requests[n].headers['accept-encoding']}`)
    assert.equal(res.headers['content-encoding'], undefined)
    assert.equal(res.body.toString(), browsersyncRewriteLinks(page, up.port, `127.0.0.1:${server.port}`))
  })
})

test('only gzip, deflate, br and zstd are forwarded upstream in Accept-Encoding', async () => {
  encodedRoute('/c/filter', '<html><body>x</body></html>')
  await withProxy({ proxy: up.url, port: 0, upstreamCompression: 'always' }, async (server) => {
    const n = up.requests.length
    await request(`${server.url}/c/filter`, { headers: { accept: ACCEPT_HTML, 'accept-encoding': 'sdch, gzip;q=1.0, compress, deflate, br, zstd, x-custom' } })
    const seen = tokens(up.requests[n].headers['accept-encoding'])
    for (const t of seen) assert.ok(OFFERABLE.has(t) || t === 'identity', `upstream must not be offered '${t}' (got ${up.requests[n].headers['accept-encoding']})`)
    for (const t of ['gzip', 'deflate', 'br']) assert.ok(seen.includes(t), `'${t}' should be forwarded (got ${up.requests[n].headers['accept-encoding']})`)
  })
})

test("a loopback target is asked for pages uncompressed ('auto'); the client still gets them compressed, and other responses keep the target's coding", async () => {
  const page = pageWithLinks(up.host)
  encodedRoute('/c/auto', page)
  encodedRoute('/c/auto.js', 'var x = 1;'.repeat(100), 'application/javascript')
  const offer = 'gzip, deflate, br'
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    let n = up.requests.length
    const res = await request(`${server.url}/c/auto?enc=gzip`, { headers: { accept: ACCEPT_HTML, 'accept-encoding': offer } })
    assert.equal(up.requests[n].headers['accept-encoding'], 'identity', 'a page request offers the target only identity')
    assert.equal(res.headers['content-encoding'], 'gzip', 'compressed here, in the cheapest coding the client offered')
    assertVaryAcceptEncoding(res.headers)
    assert.equal(decodeBody(res.body, 'gzip').toString(), browsersyncRewriteLinks(page, up.port, `127.0.0.1:${server.port}`))
    // Not a page request: the client's codings go upstream and the compressed bytes come back untouched.
    n = up.requests.length
    const js = await request(`${server.url}/c/auto.js?enc=br`, { headers: { accept: '*/*', 'accept-encoding': offer } })
    assert.deepEqual(tokens(up.requests[n].headers['accept-encoding']), ['gzip', 'deflate', 'br'])
    assert.equal(js.headers['content-encoding'], 'br')
    assert.deepEqual(js.body, zlib.brotliCompressSync(Buffer.from('var x = 1;'.repeat(100))))
  })
  // 'never' asks for identity too (even a remote target would be); 'always' offers the client's codings.
  for (const [mode, expected] of [['never', ['identity']], ['always', ['gzip', 'deflate', 'br']]]) {
    await withProxy({ proxy: up.url, port: 0, upstreamCompression: mode }, async (server) => {
      const n = up.requests.length
      const res = await request(`${server.url}/c/auto?enc=br`, { headers: { accept: ACCEPT_HTML, 'accept-encoding': offer } })
      assert.deepEqual(tokens(up.requests[n].headers['accept-encoding']), expected, mode)
      assert.ok(tokens(offer).includes(res.headers['content-encoding']), `${mode}: compressed for the client`)
    })
  }
})

test('a page request answered with non-HTML text by a loopback target still gets it compressed, unchanged', async () => {
  const text = `plain text, not a page: http://${up.host}/stays\n`.repeat(50)
  encodedRoute('/c/auto-text', text, 'text/plain; charset=utf-8')
  await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET }, async (server) => {
    const before = server.stats()
    const n = up.requests.length
    const res = await request(`${server.url}/c/auto-text?enc=gzip`, { headers: { accept: ACCEPT_HTML, 'accept-encoding': 'gzip, br' } })
    assert.equal(up.requests[n].headers['accept-encoding'], 'identity')
    assert.equal(res.headers['content-encoding'], 'gzip')
    assert.equal(decodeBody(res.body, 'gzip').toString(), text, 'not rewritten: links and snippet untouched')
    const after = server.stats()
    assert.equal(after.passedThrough - before.passedThrough, 1)
    assert.equal(after.rewritten - before.rewritten, 0)
  })
})

test('upstreamCompression rejects anything but auto, always and never, naming the option', async () => {
  const { start } = lib()
  for (const bad of ['sometimes', true, 1]) {
    await assert.rejects(stopIfStarted(start({ proxy: up.url, port: 0, upstreamCompression: bad })), (err) => {
      assert.match(err.message, /upstreamCompression/)
      return true
    })
  }
})

test('compressed bodies that are not rewritten pass through byte for byte, still compressed, Content-Length kept', async () => {
  const page = pageWithLinks(up.host)
  const text = `just text, not html: http://${up.host}/x`
  const encodedPage = zlib.gzipSync(Buffer.from(page))
  const encodedText = zlib.brotliCompressSync(Buffer.from(text))
  routes['/c/raw-page'] = (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip', 'content-length': encodedPage.length })
    res.end(encodedPage)
  }
  routes['/c/raw-text'] = (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'br', 'content-length': encodedText.length })
    res.end(encodedText)
  }
  routes['/c/raw.js'] = routes['/c/raw-page']
  await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET }, async (server) => {
    const cases = [
      ['/c/raw-page', '*/*', 'gzip', encodedPage], // Accept without html
      ['/c/raw.js', ACCEPT_HTML, 'gzip', encodedPage], // asset extension
      ['/c/raw-text', ACCEPT_HTML, 'br', encodedText], // decoded start is not HTML
    ]
    for (const [p, accept, enc, bytes] of cases) {
      const res = await request(server.url + p, { headers: { accept, 'accept-encoding': 'gzip, deflate, br' } })
      assert.equal(res.headers['content-encoding'], enc, p)
      assert.equal(res.headers['content-length'], String(bytes.length), `${p}: Content-Length kept`)
      assert.deepEqual(res.body, bytes, `${p}: compressed bytes must pass through unchanged`)
    }
  })
})

test('a large gzip HTML stream (~2 MB, many chunks, multi-byte text) is rewritten correctly', async () => {
  const T = up.host
  const line = (i) => `<li><a href="http://${T}/item/${i}">élément ${i} — ✓</a></li>\n`
  let body = '<!DOCTYPE html><html><head></head><body><ul>\n'
  for (let i = 0; i < 25000; i++) body += line(i)
  body += '</ul></body></html>\n'
  routes['/c/big'] = (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'gzip' })
    const gz = zlib.createGzip({ chunkSize: 16 * 1024 })
    gz.pipe(res)
    const buf = Buffer.from(body)
    for (let off = 0; off < buf.length; off += 7777) gz.write(buf.subarray(off, off + 7777))
    gz.end()
  }
  await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET, rewriteRules: [{ match: /élément (\d+)/g, replace: 'item #$1' }] }, async (server) => {
    const res = await request(server.url + '/c/big', { headers: { accept: ACCEPT_HTML, 'accept-encoding': 'gzip' }, timeout: 30000 })
    assert.equal(res.headers['content-encoding'], 'gzip')
    const got = decodeBody(res.body, 'gzip').toString()
    const expected = browsersyncRewriteLinks(
      body.replace(/<body[^>]*>/i, (m) => m + SNIPPET).replace(/élément (\d+)/g, 'item #$1'),
      up.port,
      `127.0.0.1:${server.port}`,
    )
    assert.equal(got.length, expected.length, 'decoded length')
    assert.ok(got === expected, 'decoded body differs from the expected rewrite')
  })
})

test('rewriteTextTypes also decodes, rewrites and re-encodes compressed CSS', async () => {
  const css = `.a{background:url(http://${up.host}/bg.png)}\n.b{color:red}`
  encodedRoute('/c/site.css', css, 'text/css')
  await withProxy({ proxy: up.url, port: 0, rewriteTextTypes: true, rewriteRules: [{ match: /red/g, replace: 'blue' }] }, async (server) => {
    const res = await request(`${server.url}/c/site.css?enc=br`, { headers: { accept: 'text/css,*/*;q=0.1', 'accept-encoding': 'br, gzip' } })
    const ce = res.headers['content-encoding']
    assert.ok(['br', 'gzip'].includes(ce), `Content-Encoding ${ce}`)
    assertVaryAcceptEncoding(res.headers)
    assert.equal(decodeBody(res.body, ce).toString(), `.a{background:url(//127.0.0.1:${server.port}/bg.png)}\n.b{color:blue}`)
  })
})

test('a corrupt or truncated compressed page that is being rewritten never ends cleanly', async () => {
  let page = '<html><body>\n'
  for (let i = 0; i < 20000; i++) page += `line ${i} ${(i * 7919) % 10007}\n`
  page += '</body></html>'
  const gz = zlib.gzipSync(page)
  const corrupt = Buffer.from(gz)
  for (let i = 20000; i < 20100; i++) corrupt[i] ^= 0x55
  const truncated = gz.subarray(0, gz.length - 100)
  routes['/c/corrupt'] = (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' })
    res.end(corrupt)
  }
  routes['/c/truncated'] = (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' })
    res.end(truncated)
  }
  routes['/c/truncated-cl'] = (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip', 'content-length': truncated.length })
    res.end(truncated)
  }
  await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET, quiet: true }, async (server) => {
    for (const p of ['/c/corrupt', '/c/truncated', '/c/truncated-cl']) {
      const outcome = await request(server.url + p, { headers: { accept: ACCEPT_HTML, 'accept-encoding': 'gzip' } }).then(
        (res) => res,
        (err) => ({ err }),
      )
      if (outcome.err) {
        // aborted response or connection closed without a response: the client knows it is broken
        assert.ok(!outcome.err.timeout, `${p}: ${outcome.err.message}`)
        continue
      }
      // a clean end is only acceptable as the 502 page naming the coding (README), never as a 200 with a cut page
      assert.equal(outcome.status, 502, `${p}: clean end with status ${outcome.status} and ${outcome.body.length} bytes`)
      assert.match(outcome.body.toString(), /gzip/i, `${p}: the 502 page names the coding`)
    }
  })
})
