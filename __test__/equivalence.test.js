'use strict'
// Equivalence with real browser-sync 3 (node_modules/browser-sync): the same fixture site behind both proxies, the
// same config and the same browser-like requests; status, the headers that matter and the decoded body must be
// equal once the snippet and the proxy's host:port are normalised. Where devproxy-native differs on purpose
// (compression kept, Secure kept on cookies, Origin/Referer rewritten, TLS verified, host dots literal), the test
// says so and checks both sides of the difference.

const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const https = require('node:https')
const path = require('node:path')
const selfsigned = require('selfsigned')
const { ROOT, HOST, lib, withTimeout, startUpstream, deadPort, decodeBody, writeChunks, ACCEPT_HTML } = require('./helpers')

const browserSync = require(path.join(ROOT, 'node_modules/browser-sync'))

/** devproxy-native's snippet: a marker that both snippets are normalised to. */
const MARK = '<script id="__devproxy_marker__"></script>'
const SNIPPET = '<!--SNIPPET-->'
const PROXY_HOST = '<PROXY-HOST>'
/** What a browser (Chromium) sends on a navigation. */
const BROWSER = {
  accept: ACCEPT_HTML,
  'accept-encoding': 'gzip, deflate, br, zstd',
  'accept-language': 'en-US,en;q=0.9',
  'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
}
/** Response headers compared verbatim (after host normalisation); vary and content-encoding are handled apart. */
const COMPARED = ['content-type', 'location', 'set-cookie', 'cache-control', 'expires', 'etag', 'last-modified', 'x-upstream']
/** Keeps browser-sync quiet and local: no browser, no UI, no sockets to other devices, no network lookups. */
const BS_QUIET = { open: false, ui: false, notify: false, logLevel: 'silent', ghostMode: false, online: false, files: false, watch: false }

// ---------------------------------------------------------------------------------------------------------------
// The fixture site

const html = { 'content-type': 'text/html; charset=utf-8' }
const routes = {}
let up
before(async () => {
  up = await startUpstream(routes)
})
after(async () => {
  await up.close()
})

/** A fixed body, sent with Content-Length (status and headers as given; HEAD gets no body from Node). */
function serve(pathname, body, headers = html, status = 200) {
  routes[pathname] = (req, res) => {
    const buf = Buffer.from(typeof body === 'function' ? body(req) : body)
    res.writeHead(status, { 'content-length': buf.length, ...headers })
    res.end(buf)
  }
}

/** Every link form Browsersync's rewriteLinks knows (reference table), plus variants around it. */
function linksPage(T, otherPort) {
  const P = up.port
  return [
    '<!DOCTYPE html>',
    '<html><head><title>links</title>',
    `<link rel="stylesheet" href="http://${T}/css/a.css">`,
    `<script src="//${T}/js/app.js"></script>`,
    `<script>var cfg = {"api":"http:\\/\\/${T}\\/api\\/v1","cdn":"https:\\/\\/${T}\\/x","n":1};</script>`,
    '</head>',
    '<body class="home" data-x="1">',
    `<a href='http://${T}/css/styles'>single-quoted absolute</a>`,
    `<a href="https://${T}/secure?x=1&amp;y=2#frag">https, query and hash</a>`,
    `<a href="http://${T}/">root with slash</a> <a href="http://${T}">root without slash</a>`,
    `<a href="http://${T}?q=1">query right after the host</a> <a href="http://${T}#top">hash right after the host</a>`,
    `<img srcset="http://${T}/a.png 1x, http://${T}/b.png 2x">`,
    `<p data-bare='${T}/sub/dir' data-slash='/${T}/sub/dir' data-only="${T}"></p>`,
    `<p>Visit https://${T}/ in text, or http://${T}/page, or see ${T}/not/quoted.</p>`,
    `<h1>${T}</h1>`,
    `<div style="background:url(http://${T}/img.png)"></div>`,
    `<a href="http://${T}/x?next=http://${T}/z">nested</a>`,
    `<a href="http://assets.cdn.${T}:1234/x">subdomain and port</a> <a href=".${T}/x">dot-prefixed</a>`,
    `<a href="http://sub.${T}/x">subdomain</a>`,
    `<a href="http://127.0.0.1:${otherPort}/other">other port</a> <a href="http://127.0.0.1/x">no port</a>`,
    `<a href="http://localhost:${P}/x">same port, other name</a>`,
    `<form action="http://${T}/submit" method="post"></form>`,
    `<script>var u = "https://${T}/p"; var v = '//${T}'; var w = "//${T}/w";</script>`,
    '</body></html>',
    '',
  ].join('\n')
}

function defineSite(otherPort) {
  const T = () => up.host
  routes['/links'] = (req, res) => {
    const buf = Buffer.from(linksPage(T(), otherPort))
    res.writeHead(200, { 'content-length': buf.length, ...html })
    res.end(buf)
  }
  serve(
    '/upper',
    () => `<HTML><HEAD></HEAD><BODY class="Main" data-y='1' onload="go()">\n<A HREF="HTTP://${T()}/X">x</A> <a href="http://${T()}/Y">y</a>\n</BODY></HTML>`,
  )
  serve('/nobody', () => `<html><head><title>no body</title><link href="http://${T()}/a.css"></head></html>`)
  serve(
    '/form',
    () => `<html><body><form><input type="url" name="u" value="http://${T()}/a"><input name=v value=http://${T()}/b>` +
      `<a href="http://${T()}/c">c</a><textarea>http://${T()}/d</textarea></form></body></html>`,
  )
  serve('/fragment', () => `<div class="partial"><a href="http://${T()}/p">partial</a></div>`)
  const assetBody = () => `<html><body><a href="http://${T()}/x">an asset that looks like a page</a></body></html>`
  serve('/static/app.js', assetBody, { 'content-type': 'application/javascript' })
  serve('/static/site.css', assetBody, { 'content-type': 'text/css' })
  serve('/static/logo.png', assetBody, { 'content-type': 'image/png' })
  serve('/data.json', assetBody, { 'content-type': 'application/json' })
  serve('/feed.xml', assetBody, { 'content-type': 'application/xml' })
  serve('/plain', () => `Plain text first, then <b>http://${T()}/x</b>`, { 'content-type': 'text/plain' })
  serve('/api/users', () => `{"self":"http://${T()}/api/users","n":2}`, { 'content-type': 'application/json' })
  serve('/cached', () => `<html><body><a href="http://${T()}/c">c</a></body></html>`, {
    ...html,
    'cache-control': 'public, max-age=600',
    expires: 'Wed, 21 Oct 2037 07:28:00 GMT',
    etag: '"v1-abc"',
    'last-modified': 'Tue, 01 Sep 2026 10:00:00 GMT',
    vary: 'Cookie',
    'x-upstream': 'kept',
  })
  serve('/missing', () => `<html><body><h1>Not found</h1><a href="http://${T()}/">home</a></body></html>`, html, 404)
  serve('/boom', () => `<!doctype html><html><body class="err"><pre>Error at http://${T()}/boom</pre></body></html>`, html, 500)
  routes['/redirect'] = (req, res) => {
    const q = new URL(req.url, 'http://x').searchParams
    res.writeHead(Number(q.get('status')), { location: q.get('to'), 'content-length': 0 })
    res.end()
  }
  routes['/echo'] = (req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      const got = Buffer.concat(chunks).toString()
      const buf = Buffer.from(
        `<html><body><p>${req.method} ${req.url} ${req.headers['content-type']}</p><pre>${got}</pre><a href="http://${T()}/done">done</a></body></html>`,
      )
      res.writeHead(201, { 'content-length': buf.length, ...html })
      res.end(buf)
    })
  }
  routes['/cookies'] = (req, res) => {
    res.writeHead(200, {
      ...html,
      'set-cookie': [
        'sid=abc123; Domain=127.0.0.1; Path=/; Secure; HttpOnly; SameSite=None',
        'theme=dark; Domain=.127.0.0.1; Path=/; Max-Age=3600; SameSite=Lax',
        'plain=1; Path=/app',
      ],
      'content-length': 27,
    })
    res.end('<html><body>c</body></html>')
  }
  routes['/headers'] = (req, res) => {
    const buf = Buffer.from('<html><body>seen</body></html>')
    res.writeHead(200, { ...html, 'content-length': buf.length })
    res.end(buf)
  }
  // The page in many small writes (chunked): matches of the rules and of the link rewrite straddle writes. The
  // first write holds the doctype (resp-modifier decides from the first write alone whether the page is HTML).
  routes['/chunked'] = async (req, res) => {
    const page = Buffer.from(chunkedPage(T()))
    res.writeHead(200, html)
    const first = page.indexOf('<html>') + '<html>'.length
    const pieces = [page.subarray(0, first)]
    for (let i = first; i < page.length; i += 3) pieces.push(page.subarray(i, i + 3))
    await writeChunks(res, pieces)
  }
  // The same page, its first write shorter than one tag.
  routes['/chunked-tiny-first'] = async (req, res) => {
    const page = Buffer.from(chunkedPage(T()))
    res.writeHead(200, html)
    const pieces = []
    for (let i = 0; i < page.length; i += 3) pieces.push(page.subarray(i, i + 3))
    await writeChunks(res, pieces)
  }
  // Rewrite-rule fixture (pages and, for `paths` rules, JSON).
  serve(
    '/rules',
    () =>
      '<html><body data-n="7">Hello Hello hello-world k1=v1 k2=v2 $x price: 10 EUR, 20 EUR ' +
      `<a href="http://${T()}/r">r</a> shout REPLACEME</body></html>`,
  )
  serve('/api/data.json', () => `{"count": 3, "next": "http://${T()}/api/data.json?page=2", "tag": "REPLACEME"}`, {
    'content-type': 'application/json',
  })
  // Snippet filters: the same page under several paths.
  const filterPage = () => `<html><body><a href="http://${T()}/f">f</a></body></html>`
  for (const p of ['/skip/page', '/skip/deep/page', '/ignored/page.html', '/forced/page', '/kept/page']) serve(p, filterPage)
  serve('/forced/data.json', () => `{"u":"http://${T()}/f"}`, { 'content-type': 'application/json' })
  // serveStatic: the upstream has these too; the local ones must win.
  serve('/override.html', '<html><body>from upstream</body></html>')
  serve('/override.js', 'console.log("from upstream")', { 'content-type': 'application/javascript' })
  serve('/not-overridden.html', () => `<html><body>upstream only <a href="http://${T()}/u">u</a></body></html>`)
  serve('/mw', '<html><body>upstream, not middleware</body></html>')
  serve('/mw-next', () => `<html><body>passed on by middleware <a href="http://${T()}/n">n</a></body></html>`)
  serve('/', () => `<html><body>root <a href="http://${T()}/r">r</a></body></html>`)
  serve('/start/here', '<html><body>start page</body></html>')
  serve('/start/here/links', '<html><body>wrongly prefixed</body></html>')
}

function chunkedPage(T) {
  const filler = 'lorem ipsum dolor sit amet '.repeat(20)
  return (
    `<!DOCTYPE html><html><head><title>chunked</title></head><body class="streamed" id="b">` +
    `<p>${filler}</p><a href="http://${T}/one">one</a> <p>${filler}</p> SPLITTOKEN-alpha SPLITTOKEN-beta ` +
    `<img srcset="http://${T}/a.png 1x, http://${T}/b.png 2x"> <p>${filler}</p> {"u":"http:\\/\\/${T}\\/j"} </body></html>`
  )
}

/** An https upstream with a self-signed certificate for 127.0.0.1, serving /page. */
async function startSelfSignedUpstream() {
  const pems = await selfsigned.generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 24 * 3600 * 1000),
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  })
  const tup = await startUpstream(
    { '/page': (req, res) => res.writeHead(200, html).end(`<html><body><a href="https://${tup.host}/x">x</a></body></html>`) },
    { tls: { key: pems.private, cert: pems.cert } },
  )
  return tup
}

// ---------------------------------------------------------------------------------------------------------------
// The two proxies

let instances = 0

/** Real browser-sync (proxy mode) on a free port; stop() exits it and waits until its server has closed. */
async function startBrowserSync(config) {
  const bs = browserSync.create(`equivalence-${process.pid}-${++instances}`)
  const port = await deadPort() // browser-sync scans upward from here if it is taken meanwhile
  const server = await withTimeout(
    new Promise((resolve, reject) => {
      bs.init({ ...config, ...BS_QUIET, port, listen: HOST }, (err) => (err ? reject(err) : resolve(bs.instance.server)))
    }).then((srv) => (srv.listening ? srv : new Promise((resolve) => srv.once('listening', () => resolve(srv))))),
    30000,
    'browser-sync init',
  ).catch((err) => {
    bs.exit() // whatever it started, closed
    throw err
  })
  const actual = server.address().port
  const closed = new Promise((resolve) => server.once('close', resolve))
  return {
    bs,
    port: actual,
    url: `${bs.getOption('scheme')}://${HOST}:${actual}`,
    snippet: bs.getOption('snippet'),
    async stop() {
      bs.exit()
      await withTimeout(closed, 15000, 'browser-sync server close')
    },
  }
}

/**
 * Runs fn with both proxies started from one config. `config()` is called once per proxy so neither sees objects
 * the other mutated (browser-sync turns options into Immutable maps and sets `rule.fn`). devproxy-native gets the
 * shared config only, plus its marker snippet; browser-sync also gets its quiet settings.
 */
/** Both sides on `config()`; `dpOnly`: options of devproxy-native's alone (a deliberate difference set aside). */
async function withBoth(config, fn, dpOnly = {}) {
  const bsSide = await startBrowserSync(config())
  let dp
  try {
    dp = await lib().start({ ...config(), port: 0, quiet: true, snippet: MARK, ...dpOnly })
    await fn({ bs: bsSide, dp })
  } finally {
    try {
      if (dp) await withTimeout(dp.stop(), 15000, 'devproxy stop()')
    } finally {
      await bsSide.stop()
    }
  }
}

/**
 * One request. browser-sync answers a chunked upstream response with both Transfer-Encoding and Content-Length
 * (resp-modifier sets the length after http-proxy copied the upstream's Transfer-Encoding), which Node's strict
 * parser refuses and browsers accept: `lenient` parses that side as a browser does. devproxy-native's side is
 * always parsed strictly.
 */
function fetchOnce(url, { method = 'GET', headers = {}, body, lenient = false } = {}) {
  let req
  const run = new Promise((resolve, reject) => {
    const mod = url.startsWith('https:') ? https : http
    req = mod.request(url, { method, headers, agent: false, insecureHTTPParser: lenient, rejectUnauthorized: false }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('error', reject)
      res.on('end', () => {
        if (!res.complete) return reject(new Error(`${method} ${url}: response ended before it was complete`))
        resolve({ status: res.statusCode, headers: res.headers, raw: Buffer.concat(chunks) })
      })
    })
    req.on('error', reject)
    req.end(body)
  })
  return withTimeout(run, 20000, `${method} ${url}`).catch((err) => {
    req.destroy()
    throw err
  })
}

function escapeRe(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** The proxy's own host:port (as the client names it) becomes one placeholder; so does the snippet. */
function normaliser(port, snippet) {
  const hostRe = new RegExp(`${escapeRe(HOST)}:${port}(?!\\d)`, 'g')
  return (s) => (s === undefined ? undefined : s.split(snippet).join(SNIPPET).replace(hostRe, PROXY_HOST))
}

function normaliseHeader(norm, v) {
  if (v === undefined) return undefined
  return Array.isArray(v) ? v.map(norm) : norm(v)
}

/**
 * The same request through browser-sync, then devproxy-native (one after the other, so the upstream's request log
 * says which proxy sent what). Returns both sides normalised: {status, headers, encoding, body, upstream}.
 */
async function both(pair, pathname, opts = {}) {
  const sides = {}
  for (const [name, side] of [
    ['bs', { url: pair.bs.url, port: pair.bs.port, snippet: pair.bs.snippet, lenient: true }],
    ['dp', { url: pair.dp.url, port: pair.dp.port, snippet: MARK, lenient: false }],
  ]) {
    const seen = up.requests.length
    const res = await fetchOnce(side.url + pathname, { ...opts, lenient: side.lenient })
    const norm = normaliser(side.port, side.snippet)
    const encoding = res.headers['content-encoding']
    const headers = {}
    for (const [k, v] of Object.entries(res.headers)) headers[k] = normaliseHeader(norm, v)
    sides[name] = {
      status: res.status,
      headers,
      encoding,
      rawLength: res.raw.length,
      body: norm(decodeBody(res.raw, encoding).toString()),
      upstream: up.requests.slice(seen),
    }
  }
  return sides
}

/** Vary's tokens, lower-cased, minus the one the proxy adds when it compresses. */
function varyTokens(v, dropAcceptEncoding) {
  return (v || '')
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t && !(dropAcceptEncoding && t === 'accept-encoding'))
}

/**
 * Asserts equivalence. `compressed`: the coding devproxy-native must send where browser-sync sends the upstream's
 * identity body (the deliberate difference: pages stay compressed); false: both send the same coding. `skip`: header
 * names not compared ('content-encoding': the coding is not asserted, the bodies are compared decoded); the caller
 * states why. `anyCase`: headers compared case-insensitively (charset names are).
 */
function assertEquivalent(r, label, { compressed = false, skip = [], anyCase = [] } = {}) {
  assert.equal(r.dp.status, r.bs.status, `${label}: status`)
  for (const name of COMPARED) {
    if (skip.includes(name)) continue
    const fold = (v) => (anyCase.includes(name) && typeof v === 'string' ? v.toLowerCase() : v)
    assert.deepEqual(fold(r.dp.headers[name]), fold(r.bs.headers[name]), `${label}: header ${name}`)
  }
  if (skip.includes('content-encoding')) {
    // not asserted here
  } else if (compressed) {
    assert.equal(r.bs.encoding, undefined, `${label}: browser-sync sends the page uncompressed`)
    assert.equal(r.dp.encoding, compressed, `${label}: devproxy-native keeps the page compressed (${compressed})`)
  } else {
    assert.equal(r.dp.encoding, r.bs.encoding, `${label}: content-encoding`)
  }
  // compressing where browser-sync does not requires Vary: Accept-Encoding, which browser-sync then lacks
  const compressedAlone = r.dp.encoding !== undefined && r.bs.encoding === undefined
  if (compressedAlone) {
    assert.ok(varyTokens(r.dp.headers.vary).includes('accept-encoding'), `${label}: a compressed page varies on Accept-Encoding`)
  }
  if (!skip.includes('vary')) {
    assert.deepEqual(varyTokens(r.dp.headers.vary, compressedAlone), varyTokens(r.bs.headers.vary), `${label}: vary`)
  }
  assert.equal(r.dp.body, r.bs.body, `${label}: body`)
}

// ---------------------------------------------------------------------------------------------------------------

describe('equivalence with browser-sync 3: proxying a site', () => {
  let otherPort
  before(async () => {
    otherPort = await deadPort()
    defineSite(otherPort)
  })
  const proxyOnly = () => ({ proxy: up.url })

  test('links in every form Browsersync rewrites; snippet after <body ...>', async () => {
    await withBoth(proxyOnly, async (pair) => {
      const r = await both(pair, '/links', { headers: BROWSER })
      assertEquivalent(r, '/links', { compressed: 'gzip' })
      // the comparison is not vacuous: both rewrote links and placed a snippet
      assert.ok(r.bs.body.includes(`<body class="home" data-x="1">${SNIPPET}\n`), r.bs.body)
      assert.ok(r.bs.body.includes(`href='//${PROXY_HOST}/css/styles'`), r.bs.body)
      assert.ok(r.bs.body.includes(`http:\\/\\/${PROXY_HOST}\\/api\\/v1`), r.bs.body)
      assert.ok(r.bs.body.includes(`http://assets.cdn.${up.host}:1234/x`), 'subdomain left alone')
      assert.ok(r.bs.body.includes(`http://127.0.0.1:${otherPort}/other`), 'other port left alone')
      assert.equal(r.dp.upstream[0].headers.host, up.host, 'Host is the target')
      assert.equal(r.bs.upstream[0].headers.host, up.host, 'Host is the target')
    })
  })

  test('<BODY> in upper case with attributes, a page without <body>, an HTML fragment', async () => {
    await withBoth(proxyOnly, async (pair) => {
      const upper = await both(pair, '/upper', { headers: BROWSER })
      assertEquivalent(upper, '/upper', { compressed: 'gzip' })
      assert.ok(upper.bs.body.includes(`onload="go()">${SNIPPET}\n`), upper.bs.body)
      const nobody = await both(pair, '/nobody', { headers: BROWSER })
      assertEquivalent(nobody, '/nobody', { compressed: 'gzip' })
      assert.ok(!nobody.bs.body.includes(SNIPPET) && nobody.bs.body.includes(`//${PROXY_HOST}/a.css`), nobody.bs.body)
      const fragment = await both(pair, '/fragment', { headers: BROWSER })
      assertEquivalent(fragment, '/fragment', { compressed: 'gzip' })
      assert.ok(fragment.bs.body.includes(`//${PROXY_HOST}/p`), fragment.bs.body)
    })
  })

  test('asset URLs (.js, .css, .png, .json, .xml, with and without ?query) pass through unrewritten', async () => {
    // JSON's origins are a deliberate difference (rewriteJson), checked with the others.
    await withBoth(proxyOnly, async (pair) => {
      const assets = ['/static/app.js', '/static/site.css', '/static/app.js?v=1', '/static/site.css?x=y&z=1', '/static/logo.png']
      for (const p of [...assets, '/data.json', '/feed.xml?a=b']) {
        const r = await both(pair, p, { headers: BROWSER })
        assertEquivalent(r, p)
        assert.ok(r.bs.body.includes(`http://${up.host}/x`) && !r.bs.body.includes(SNIPPET), `${p} untouched`)
        assert.equal(r.dp.headers['content-length'], r.bs.headers['content-length'], `${p}: Content-Length kept`)
      }
    }, { rewriteJson: false })
  })

  test('Accept without html: the page passes through unrewritten', async () => {
    await withBoth(proxyOnly, async (pair) => {
      for (const accept of ['*/*', 'application/json', 'text/plain']) {
        const r = await both(pair, '/links', { headers: { ...BROWSER, accept } })
        assertEquivalent(r, `/links (Accept: ${accept})`)
        assert.ok(!r.bs.body.includes(SNIPPET) && r.bs.body.includes(`'http://${up.host}/css/styles'`), `Accept ${accept}: untouched`)
      }
    })
  })

  test('a body that does not look like HTML, asked for with Accept html, is not rewritten (devproxy-native compresses it)', async () => {
    // JSON's origins are a deliberate difference (rewriteJson), checked with the others.
    await withBoth(proxyOnly, async (pair) => {
      for (const p of ['/plain', '/api/users']) {
        const r = await both(pair, p, { headers: BROWSER })
        assertEquivalent(r, p, { compressed: 'gzip' })
        assert.ok(r.bs.body.includes(`http://${up.host}/`), `${p} untouched`)
      }
    }, { rewriteJson: false })
  })

  test('redirects: Location on 301/302/307/308 to the target comes back to the proxy, elsewhere stays', async () => {
    await withBoth(proxyOnly, async (pair) => {
      const targets = [
        `${up.url}/next?x=1#h`,
        `${up.url}/`,
        '/relative/path?y=2',
        'https://elsewhere.example/login?return=1',
        `http://127.0.0.1:${otherPort}/other-port`,
      ]
      for (const status of [301, 302, 307, 308]) {
        for (const to of targets) {
          const p = `/redirect?status=${status}&to=${encodeURIComponent(to)}`
          const r = await both(pair, p, { headers: BROWSER })
          assertEquivalent(r, `${status} -> ${to}`, { skip: ['content-encoding'] })
        }
      }
      const r = await both(pair, `/redirect?status=302&to=${encodeURIComponent(up.url + '/n')}`, { headers: BROWSER })
      assert.equal(r.bs.headers.location, `http://${PROXY_HOST}/n`)
    })
  })

  test('404 and 500 pages from the upstream are rewritten like any page', async () => {
    await withBoth(proxyOnly, async (pair) => {
      for (const p of ['/missing', '/boom', '/no-such-route']) {
        const r = await both(pair, p, { headers: BROWSER })
        // /no-such-route is the fixture's text/plain 404 ("no route ..."): not HTML, so compressed, not rewritten
        assertEquivalent(r, p, { compressed: 'gzip' })
      }
      const boom = await both(pair, '/boom', { headers: BROWSER })
      assert.equal(boom.bs.status, 500)
      assert.ok(boom.bs.body.includes(`<body class="err">${SNIPPET}<pre>Error at //${PROXY_HOST}/boom`), boom.bs.body)
    })
  })

  test('HEAD: same status and headers, no body', async () => {
    await withBoth(proxyOnly, async (pair) => {
      for (const p of ['/links', '/cached', '/static/app.js']) {
        const r = await both(pair, p, { method: 'HEAD', headers: BROWSER })
        assertEquivalent(r, `HEAD ${p}`)
        assert.equal(r.bs.body, '')
        assert.equal(r.dp.upstream[0].method, 'HEAD')
      }
    })
  })

  test('POST with a body: forwarded whole, the HTML answer rewritten', async () => {
    await withBoth(proxyOnly, async (pair) => {
      const body = 'name=caf%C3%A9&list=' + 'x'.repeat(5000)
      const r = await both(pair, '/echo?via=form', {
        method: 'POST',
        headers: { ...BROWSER, 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) },
        body,
      })
      assertEquivalent(r, 'POST /echo', { compressed: 'gzip' })
      assert.equal(r.bs.status, 201)
      assert.ok(r.bs.body.includes(`<pre>${body}</pre>`) && r.bs.body.includes(`//${PROXY_HOST}/done`), 'the upstream got the whole body')
    })
  })

  test('cache headers, ETag, Last-Modified, Vary and custom headers pass through on a rewritten page', async () => {
    await withBoth(proxyOnly, async (pair) => {
      const r = await both(pair, '/cached', { headers: BROWSER })
      assertEquivalent(r, '/cached', { compressed: 'gzip' })
      assert.equal(r.bs.headers['cache-control'], 'public, max-age=600')
      assert.equal(r.bs.headers.etag, '"v1-abc"')
    })
  })

  test('rewriteRules: string match (first occurrence) and RegExp rules with $1, $&, $$, applied after the snippet, before links', async () => {
    const config = () => ({
      proxy: up.url,
      rewriteRules: [
        { match: 'Hello', replace: 'Bye' },
        { match: /(k\d)=(v\d)/g, replace: '$2:$1' },
        { match: /(\d+) EUR/g, replace: '€$1 ($&)' },
        { match: /\$x/, replace: '$$y' },
        { match: /data-n="(\d)"/, replace: 'data-n="$1$1"' },
        { match: /REPLACEME/g, replace: `"http://${up.host}/made-by-rule"` },
      ],
    })
    await withBoth(config, async (pair) => {
      const r = await both(pair, '/rules', { headers: BROWSER })
      assertEquivalent(r, '/rules', { compressed: 'gzip' })
      assert.ok(r.bs.body.includes(`<body data-n="77">${SNIPPET}Bye Hello hello-world v1:k1 v2:k2 $y price: €10 (10 EUR)`), r.bs.body)
      assert.ok(r.bs.body.includes(`"//${PROXY_HOST}/made-by-rule"`), 'a URL made by a rule is link-rewritten after it')
    })
  })

  test('a page written in 3-byte pieces after its first tag: snippet, rules and links that straddle writes give the same page', async () => {
    const config = () => ({
      proxy: up.url,
      rewriteRules: [
        { match: /SPLITTOKEN-(\w+)/g, replace: '[split:$1]' },
        { match: 'lorem ipsum', replace: 'LOREM IPSUM' },
      ],
    })
    await withBoth(config, async (pair) => {
      const r = await both(pair, '/chunked', { headers: BROWSER })
      assertEquivalent(r, '/chunked', { compressed: 'gzip' })
      assert.ok(r.bs.body.includes(`<body class="streamed" id="b">${SNIPPET}<p>LOREM IPSUM`), r.bs.body)
      assert.ok(r.bs.body.includes('[split:alpha] [split:beta]') && r.bs.body.includes(`http:\\/\\/${PROXY_HOST}\\/j`), r.bs.body)
    })
  })
})

// ---------------------------------------------------------------------------------------------------------------

describe('deliberate differences from browser-sync 3 (stated and checked)', () => {
  let otherPort
  before(async () => {
    otherPort = await deadPort()
    defineSite(otherPort)
  })
  const proxyOnly = () => ({ proxy: up.url })

  test('compression kept: pages come back in the coding the client accepts; browser-sync drops to identity', async () => {
    await withBoth(proxyOnly, async (pair) => {
      for (const [ae, coding] of [['gzip, deflate, br, zstd', 'gzip'], ['br', 'br'], ['deflate', 'deflate']]) {
        const r = await both(pair, '/links', { headers: { ...BROWSER, 'accept-encoding': ae } })
        assertEquivalent(r, `/links (Accept-Encoding: ${ae})`, { compressed: coding })
        assert.ok(r.dp.rawLength < Buffer.byteLength(r.dp.body), 'the compressed body is smaller')
      }
      // without Accept-Encoding both send identity
      const plain = await both(pair, '/links', { headers: { accept: ACCEPT_HTML } })
      assertEquivalent(plain, '/links (no Accept-Encoding)')
    })
  })

  test("JSON answers: devproxy-native turns the target's exact origin into the proxy's (rewriteJson); browser-sync passes them as they are", async () => {
    await withBoth(proxyOnly, async (pair) => {
      for (const [p, accept] of [['/api/users', ACCEPT_HTML], ['/data.json', 'application/json'], ['/api/data.json?page=2', '*/*']]) {
        const r = await both(pair, p, { headers: { ...BROWSER, accept } })
        assertEquivalent({ ...r, dp: { ...r.dp, body: r.bs.body } }, p, { skip: ['content-encoding', 'content-length', 'vary'] })
        assert.ok(r.bs.body.includes(`http://${up.host}/`), `${p}: browser-sync leaves the origin`)
        assert.equal(r.dp.body, r.bs.body.replaceAll(`http://${up.host}`, 'http://<PROXY-HOST>'), `${p}: the origin, and only it, is the proxy's`)
      }
    })
  })

  test("a form field's value keeps a scheme (the proxy's); browser-sync writes //proxy there too, which <input type=url> refuses", async () => {
    await withBoth(proxyOnly, async (pair) => {
      const r = await both(pair, '/form', { headers: BROWSER })
      assertEquivalent({ ...r, dp: { ...r.dp, body: r.bs.body } }, '/form', { compressed: 'gzip' })
      assert.ok(r.bs.body.includes('value="//<PROXY-HOST>/a"'), 'browser-sync: //proxy in the value')
      const wanted = r.bs.body.replace('value="//', 'value="http://').replace('value=//', 'value=http://')
      assert.equal(r.dp.body, wanted, 'only the values differ: href and text stay //proxy as in browser-sync')
    })
  })

  test('Set-Cookie: both drop Domain; devproxy-native keeps Secure and the attribute order, browser-sync drops Secure', async () => {
    await withBoth(proxyOnly, async (pair) => {
      const r = await both(pair, '/cookies', { headers: BROWSER })
      assertEquivalent(r, '/cookies', { compressed: 'gzip', skip: ['set-cookie'] })
      const upstream = [
        'sid=abc123; Domain=127.0.0.1; Path=/; Secure; HttpOnly; SameSite=None',
        'theme=dark; Domain=.127.0.0.1; Path=/; Max-Age=3600; SameSite=Lax',
        'plain=1; Path=/app',
      ]
      const withoutDomain = (c) => c.split('; ').filter((a) => !/^domain=/i.test(a)).join('; ')
      assert.deepEqual(r.dp.headers['set-cookie'], upstream.map(withoutDomain), 'devproxy-native: only Domain removed')
      // browser-sync (proxy-utils.js rewriteCookies): flag attributes are lost, HttpOnly re-added at the end
      assert.deepEqual(r.bs.headers['set-cookie'], [
        'sid=abc123; Path=/; SameSite=None; HttpOnly',
        'theme=dark; Path=/; Max-Age=3600; SameSite=Lax',
        'plain=1; Path=/app',
      ])
      // the same attributes once Secure is set aside
      const attrs = (c) => c.split('; ').map((a) => a.toLowerCase()).filter((a) => a !== 'secure').sort()
      assert.deepEqual(r.dp.headers['set-cookie'].map(attrs), r.bs.headers['set-cookie'].map(attrs))
      assert.ok(r.dp.headers['set-cookie'][0].split('; ').includes('Secure'), 'Secure kept (SameSite=None needs it)')
    })
  })

  test('Origin and Referer naming the proxy reach the target rewritten to it; browser-sync forwards them as they are', async () => {
    await withBoth(proxyOnly, async (pair) => {
      const r = { bs: null, dp: null }
      for (const [name, side] of [['bs', pair.bs], ['dp', pair.dp]]) {
        const seen = up.requests.length
        const origin = `http://${HOST}:${side.port}`
        const res = await fetchOnce(`${side.url}/headers`, {
          method: 'POST',
          headers: { ...BROWSER, origin, referer: `${origin}/links?a=1`, 'content-type': 'text/plain' },
          body: 'x',
          lenient: name === 'bs',
        })
        assert.equal(res.status, 200)
        r[name] = { origin, seen: up.requests.slice(seen) }
      }
      assert.equal(r.bs.seen.length, 1)
      assert.equal(r.dp.seen.length, 1)
      assert.equal(r.bs.seen[0].headers.origin, r.bs.origin, 'browser-sync: Origin untouched')
      assert.equal(r.bs.seen[0].headers.referer, `${r.bs.origin}/links?a=1`, 'browser-sync: Referer untouched')
      assert.equal(r.dp.seen[0].headers.origin, up.url, 'devproxy-native: Origin is the target')
      assert.equal(r.dp.seen[0].headers.referer, `${up.url}/links?a=1`, 'devproxy-native: Referer names the target')
      assert.equal(r.dp.seen[0].headers.host, r.bs.seen[0].headers.host, 'Host: both the target')
    })
  })

  test("a self-signed target on this machine: both proxy it (browser-sync never checks certificates, devproxy-native not on loopback); secure: true refuses it", async () => {
    const tup = await startSelfSignedUpstream()
    try {
      await withBoth(
        () => ({ proxy: tup.url }),
        async (pair) => {
          const bsRes = await fetchOnce(pair.bs.url + '/page', { headers: BROWSER, lenient: true })
          assert.equal(bsRes.status, 200, 'browser-sync proxies a self-signed target')
          assert.equal(tup.requests.length, 1)
          const dpRes = await fetchOnce(pair.dp.url + '/page', { headers: BROWSER })
          assert.equal(dpRes.status, 200, 'devproxy-native proxies a self-signed target on this machine')
          assert.ok(decodeBody(dpRes.raw, dpRes.headers['content-encoding']).toString().includes(`href="//${HOST}:${pair.dp.port}/x"`))
          assert.equal(tup.requests.length, 2)
        },
      )
      // devproxy-native alone: browser-sync throws on an unknown proxy key ("Cannot set unknown key "secure" on
      // Record"); its own switch is proxy.proxyOptions.secure, false by default
      const dp = await lib().start({ proxy: { target: tup.url, secure: true }, port: 0, quiet: true, snippet: MARK })
      try {
        const dpRes = await fetchOnce(dp.url + '/page', { headers: BROWSER })
        assert.equal(dpRes.status, 502, 'proxy.secure: true checks the certificate, and refuses it')
        assert.equal(tup.requests.length, 2, 'no request reached the target')
      } finally {
        await withTimeout(dp.stop(), 15000, 'devproxy stop()')
      }
    } finally {
      await tup.close()
    }
  })

  test('Location of a 303 naming the target comes back to the proxy; browser-sync (http-proxy) rewrites 201/301/302/307/308 only', async () => {
    await withBoth(
      () => ({ proxy: up.url }),
      async (pair) => {
        const r = await both(pair, `/redirect?status=303&to=${encodeURIComponent(up.url + '/after-post')}`, { headers: BROWSER })
        assert.equal(r.bs.status, 303)
        assert.equal(r.dp.status, 303)
        assert.equal(r.bs.headers.location, `${up.url}/after-post`, 'browser-sync: the target leaks to the browser')
        assert.equal(r.dp.headers.location, `http://${PROXY_HOST}/after-post`, 'devproxy-native: back to the proxy')
      },
    )
  })

  test('a page whose first write is shorter than one tag: browser-sync passes it through unrewritten, devproxy-native rewrites it', async () => {
    // resp-modifier tests each write alone for /^\s*<[^>]+>/ until one matches; devproxy-native sniffs the body's start
    await withBoth(
      () => ({ proxy: up.url }),
      async (pair) => {
        const tiny = await both(pair, '/chunked-tiny-first', { headers: BROWSER })
        assert.equal(tiny.bs.body, chunkedPage(up.host), 'browser-sync: the page as the upstream wrote it')
        const whole = await both(pair, '/chunked', { headers: BROWSER })
        assert.equal(tiny.dp.body, whole.dp.body, 'devproxy-native: rewritten as when the first write is a whole tag')
        assert.equal(whole.dp.body, whole.bs.body)
      },
    )
  })

  test('a body parser before next(): devproxy-native sends on what it left in req.body; browser-sync announces the drained body and never sends it', async () => {
    const bodyParser = require('body-parser')
    const config = () => ({ proxy: up.url, middleware: [bodyParser.json(), (req, res, next) => { req.body.seen = true; next() }] })
    const received = []
    routes['/body-count'] = (req, res) => {
      const entry = { length: req.headers['content-length'], bytes: 0, ended: false }
      received.push(entry)
      req.on('data', (c) => { entry.bytes += c.length })
      req.on('end', () => {
        entry.ended = true
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(entry))
      })
    }
    try {
      await withBoth(config, async (pair) => {
        const headers = { 'content-type': 'application/json' }
        const dp = await fetchOnce(pair.dp.url + '/body-count', { method: 'POST', headers, body: '{"a":1}' })
        assert.equal(dp.status, 200)
        const sent = JSON.stringify({ a: 1, seen: true })
        assert.deepEqual(JSON.parse(dp.raw), { length: String(sent.length), bytes: sent.length, ended: true })
        // browser-sync (http-proxy pipes the drained request): the head reaches the target, the body never does.
        const answered = fetchOnce(pair.bs.url + '/body-count', { method: 'POST', headers, body: '{"a":1}' }).then(() => true, () => false)
        await withTimeout((async () => { while (received.length < 2) await new Promise((r) => setTimeout(r, 20)) })(), 10000, 'the head through browser-sync')
        const waited = await Promise.race([answered, new Promise((r) => setTimeout(() => r('still waiting'), 2000))])
        assert.equal(waited, 'still waiting')
        assert.deepEqual(received[1], { length: '7', bytes: 0, ended: false })
      })
    } finally {
      delete routes['/body-count']
    }
  })

  test("the target host is matched literally: browser-sync's unescaped dots also rewrite look-alike hosts", async () => {
    const lookAlike = () => `http://127a0b0c1:${up.port}/x`
    serve('/lookalike', () => `<html><body><a href="${lookAlike()}">look-alike</a> <a href="http://${up.host}/real">real</a></body></html>`)
    await withBoth(proxyOnly, async (pair) => {
      const r = await both(pair, '/lookalike', { headers: BROWSER })
      assert.ok(r.bs.body.includes(`href="//${PROXY_HOST}/x"`), `browser-sync rewrites the look-alike: ${r.bs.body}`)
      assert.ok(r.dp.body.includes(`href="${lookAlike()}"`), `devproxy-native leaves it: ${r.dp.body}`)
      assert.equal(r.dp.body.replace(lookAlike(), `//${PROXY_HOST}/x`), r.bs.body, 'otherwise equal')
    })
  })
})

// ---------------------------------------------------------------------------------------------------------------

describe('equivalence with browser-sync 3: options of issue 12 (serveStatic, snippetOptions, paths, fn rules, hooks, middleware, https)', () => {
  let otherPort
  before(async () => {
    otherPort = await deadPort()
    defineSite(otherPort)
  })
  const STATIC_DIR = path.join(__dirname, 'fixtures', 'equivalence-static')

  test('rewriteRules: fn and a function replace are called as (req, res, match, ...groups)', async () => {
    const config = () => ({
      proxy: up.url,
      rewriteRules: [
        { match: /shout/g, replace: (req, res, m) => m.toUpperCase() + '@' + req.headers.host },
        { match: /hello-(\w+)/g, fn: (req, res, m, g1) => `${g1}|${req.method}|${req.url}|${res.statusCode}` },
      ],
    })
    await withBoth(config, async (pair) => {
      const r = await both(pair, '/rules?q=1', { headers: BROWSER })
      assertEquivalent(r, '/rules', { compressed: 'gzip' })
      assert.ok(r.bs.body.includes(`SHOUT@${PROXY_HOST}`) && r.bs.body.includes('world|GET|/rules?q=1|200'), r.bs.body)
    })
  })

  test('rewriteRules: a rule with paths applies to a JSON URL (and only that rule runs there)', async () => {
    const config = () => ({
      proxy: up.url,
      rewriteRules: [{ match: /REPLACEME/g, replace: 'json-rule', paths: ['/api/*.json'] }],
    })
    await withBoth(config, async (pair) => {
      const json = await both(pair, '/api/data.json', { headers: { ...BROWSER, accept: 'application/json' } })
      assertEquivalent(json, '/api/data.json', { skip: ['content-encoding'] })
      assert.ok(json.bs.body.includes('"tag": "json-rule"'), json.bs.body)
      // resp-modifier runs only the matching paths rules there: no link rewrite, no snippet
      assert.ok(json.bs.body.includes(`"next": "http://${up.host}/api/data.json?page=2"`), json.bs.body)
      // an HTML page not in paths: the rule does not run, the page is rewritten as usual
      const page = await both(pair, '/rules', { headers: BROWSER })
      assertEquivalent(page, '/rules', { compressed: 'gzip' })
      assert.ok(page.bs.body.includes('REPLACEME') && page.bs.body.includes(SNIPPET), page.bs.body)
    })
  })

  test('rewriteRules: paths globs see the URL with its query (minimatch on req.url): /api/*.json misses ?page=2', async () => {
    const config = () => ({
      proxy: up.url,
      rewriteRules: [{ match: /REPLACEME/g, replace: 'json-rule', paths: ['/api/*.json'] }],
    })
    await withBoth(config, async (pair) => {
      const r = await both(pair, '/api/data.json?page=2', { headers: { ...BROWSER, accept: 'application/json' } })
      assertEquivalent(r, '/api/data.json?page=2', { skip: ['content-encoding'] })
      assert.ok(r.bs.body.includes('"tag": "REPLACEME"'), r.bs.body)
    }, { rewriteJson: false }) // JSON's origins: a deliberate difference, checked with the others
  })

  test('snippetOptions.rule: match and fn(snippet, match) place the snippet', async () => {
    const config = () => ({
      proxy: up.url,
      snippetOptions: { rule: { match: /<\/body>/i, fn: (snippet, match) => snippet + match } },
    })
    await withBoth(config, async (pair) => {
      const r = await both(pair, '/upper', { headers: BROWSER })
      assertEquivalent(r, '/upper', { compressed: 'gzip' })
      assert.ok(r.bs.body.includes(`${SNIPPET}</BODY>`) && !r.bs.body.includes(`go()">${SNIPPET}`), r.bs.body)
    })
  })

  test('snippetOptions.blacklist and ignorePaths skip pages; whitelist forces rewriting whatever Accept says', async () => {
    const configs = [
      () => ({ proxy: up.url, snippetOptions: { blacklist: ['/skip/**', '/kept/page?x=1'] } }),
      () => ({ proxy: up.url, snippetOptions: { ignorePaths: 'ignored/*.html' } }),
      () => ({ proxy: up.url, snippetOptions: { whitelist: ['/forced/*'] } }),
    ]
    // 'content-encoding' skipped: whether devproxy-native compresses a page it leaves alone is its own choice
    await withBoth(configs[0], async (pair) => {
      for (const p of ['/skip/page', '/skip/deep/page', '/kept/page?x=1', '/kept/page', '/kept/page?x=2']) {
        const r = await both(pair, p, { headers: BROWSER })
        assertEquivalent(r, `blacklist ${p}`, { skip: ['content-encoding'] })
      }
      const skipped = await both(pair, '/skip/page', { headers: BROWSER })
      assert.ok(!skipped.bs.body.includes(SNIPPET) && skipped.bs.body.includes(`http://${up.host}/f`), skipped.bs.body)
      const kept = await both(pair, '/kept/page', { headers: BROWSER })
      assert.ok(kept.bs.body.includes(SNIPPET), kept.bs.body)
    })
    await withBoth(configs[1], async (pair) => {
      for (const p of ['/ignored/page.html', '/kept/page']) {
        const r = await both(pair, p, { headers: BROWSER })
        assertEquivalent(r, `ignorePaths ${p}`, { skip: ['content-encoding'] })
      }
      const ignored = await both(pair, '/ignored/page.html', { headers: BROWSER })
      assert.ok(!ignored.bs.body.includes(SNIPPET), ignored.bs.body)
    })
    await withBoth(configs[2], async (pair) => {
      const paths = ['/forced/page', '/forced/page?x=1', '/forced/page?next=/a', '/forced/data.json', '/kept/page']
      for (const [p, accept] of paths.map((p) => [p, 'application/json'])) {
        const r = await both(pair, p, { headers: { ...BROWSER, accept } })
        assertEquivalent(r, `whitelist ${p} (Accept: ${accept})`, { skip: ['content-encoding'] })
      }
      const forced = await both(pair, '/forced/data.json', { headers: { ...BROWSER, accept: 'application/json' } })
      assert.equal(forced.bs.body, `{"u":"//${PROXY_HOST}/f"}`, 'whitelisted JSON: links rewritten')
    })
  })

  test('serveStatic: a local file overrides the upstream one (and local HTML gets the snippet and rules)', async () => {
    const config = () => ({ proxy: up.url, serveStatic: [STATIC_DIR], rewriteRules: [{ match: /LOCAL/g, replace: 'local' }] })
    await withBoth(config, async (pair) => {
      const page = await both(pair, '/override.html', { headers: BROWSER })
      // ETag's and Cache-Control's values are each server's own (serve-static: W/"size-mtime", public, max-age=0):
      // both must send an ETag; Last-Modified (the file's mtime) must be equal
      assertEquivalent(page, '/override.html', { compressed: 'gzip', skip: ['etag', 'cache-control'], anyCase: ['content-type'] })
      assert.ok(page.dp.headers.etag && page.bs.headers.etag, 'both send an ETag')
      assert.ok(page.bs.body.includes(`<body>${SNIPPET}from the local local directory`), page.bs.body)
      assert.equal(page.dp.upstream.length, 0, 'the upstream was not asked')
      const js = await both(pair, '/override.js', { headers: { ...BROWSER, accept: '*/*' } })
      // Content-Type: serve-static's mime 1.x says application/javascript, RFC 9239 text/javascript: either
      assertEquivalent(js, '/override.js', { skip: ['etag', 'cache-control', 'content-encoding', 'content-type', 'vary'] })
      assert.match(js.dp.headers['content-type'] || '', /^(text|application)\/javascript(;\s*charset=utf-8)?$/i)
      assert.ok(js.bs.body.includes('from the local directory'), js.bs.body)
      assert.equal(js.dp.upstream.length, 0, 'the upstream was not asked')
      const other = await both(pair, '/not-overridden.html', { headers: BROWSER })
      assertEquivalent(other, '/not-overridden.html', { compressed: 'gzip' })
      assert.ok(other.bs.body.includes('upstream only'), other.bs.body)
    })
  })

  test('proxy.proxyReq: a header set by the hook reaches the upstream', async () => {
    const config = () => ({
      proxy: {
        target: up.url,
        proxyReq: [(proxyReq) => proxyReq.setHeader('x-from-hook', `${proxyReq.method} ${proxyReq.path}`)],
      },
    })
    await withBoth(config, async (pair) => {
      const r = await both(pair, '/headers?a=1', { headers: BROWSER })
      assertEquivalent(r, '/headers', { compressed: 'gzip' })
      assert.equal(r.bs.upstream[0].headers['x-from-hook'], 'GET /headers?a=1', 'browser-sync: the hook ran')
      assert.equal(r.dp.upstream[0].headers['x-from-hook'], 'GET /headers?a=1', "devproxy-native: the hook's header reached the upstream")
    })
  })

  test('proxy.proxyRes: a header set on proxyRes.headers goes out to the client', async () => {
    const config = () => ({
      proxy: {
        target: up.url,
        proxyRes: [
          (proxyRes) => {
            proxyRes.headers['x-upstream'] = `hooked ${proxyRes.statusCode}`
          },
        ],
      },
    })
    await withBoth(config, async (pair) => {
      const r = await both(pair, '/cached', { headers: BROWSER })
      assertEquivalent(r, '/cached', { compressed: 'gzip' })
      assert.equal(r.bs.headers['x-upstream'], 'hooked 200')
    })
  })

  test('proxy.proxyRes: a header deleted from proxyRes.headers does not go out', async () => {
    const config = () => ({
      proxy: {
        target: up.url,
        proxyRes: [
          (proxyRes) => {
            delete proxyRes.headers.etag
          },
        ],
      },
    })
    await withBoth(config, async (pair) => {
      const r = await both(pair, '/cached', { headers: BROWSER })
      assertEquivalent(r, '/cached', { compressed: 'gzip' })
      assert.equal(r.bs.headers.etag, undefined)
    })
  })

  test('middleware (top-level and proxy.middleware) answers one path; next() goes on to the proxy', async () => {
    const mw = (req, res, next) => {
      if (!req.url.startsWith('/mw?') && req.url !== '/mw') return next()
      res.setHeader('content-type', 'text/html; charset=utf-8')
      res.setHeader('x-upstream', 'middleware')
      res.end(`<html><body class="mw">answered by middleware: ${req.method} ${req.url}</body></html>`)
    }
    const routeMw = { route: '/routed', handle: (req, res) => res.end(`routed ${req.url}`) }
    for (const config of [() => ({ proxy: up.url, middleware: [mw, routeMw] }), () => ({ proxy: { target: up.url, middleware: [mw, routeMw] } })]) {
      await withBoth(config, async (pair) => {
        const r = await both(pair, '/mw?x=1', { headers: BROWSER })
        assertEquivalent(r, '/mw', { skip: ['content-encoding', 'vary'] })
        assert.ok(r.bs.body.includes('answered by middleware: GET /mw?x=1'), r.bs.body)
        assert.equal(r.dp.upstream.length, 0, 'the upstream was not asked')
        const routed = await both(pair, '/routed/a?b=1', { headers: { ...BROWSER, accept: '*/*' } })
        assertEquivalent(routed, '/routed', { skip: ['content-encoding', 'vary'] })
        assert.equal(routed.bs.body, 'routed /a?b=1')
        const passed = await both(pair, '/mw-next', { headers: BROWSER })
        assertEquivalent(passed, '/mw-next', { compressed: 'gzip' })
        assert.equal(passed.dp.upstream.length, 1)
      })
    }
  })

  test('an https target: both serve https', async () => {
    const tup = await startSelfSignedUpstream()
    try {
      await withBoth(
        () => ({ proxy: tup.url }),
        async (pair) => {
          assert.equal(new URL(pair.bs.url).protocol, 'https:', 'browser-sync serves https for an https target')
          assert.equal(new URL(pair.dp.url).protocol, 'https:', 'devproxy-native serves https for an https target')
          const dpRes = await fetchOnce(pair.dp.url + '/page', { headers: BROWSER })
          assert.equal(dpRes.status, 200)
        },
      )
    } finally {
      await tup.close()
    }
  })

  test('a path in proxy is the start path, not a prefix: requests go to the target as they are', async () => {
    await withBoth(
      () => ({ proxy: `${up.url}/start/here` }),
      async (pair) => {
        assert.equal(pair.bs.bs.getOption('startPath'), '/start/here')
        const r = await both(pair, '/links', { headers: BROWSER })
        assertEquivalent(r, '/links', { compressed: 'gzip' })
        assert.equal(r.dp.upstream[0].url, '/links')
        assert.equal(r.bs.upstream[0].url, '/links')
      },
    )
  })
})

// ---------------------------------------------------------------------------------------------------------------

describe('browser-sync 3 reference facts the options above follow (browser-sync alone)', () => {
  before(async () => {
    defineSite(await deadPort())
  })

  /** browser-sync alone: GET each path with a browser's headers; resolves to {path: rewritten?}. */
  async function rewrittenBy(config, paths, headers = BROWSER) {
    const side = await startBrowserSync(config)
    try {
      const out = {}
      for (const p of paths) {
        const res = await fetchOnce(side.url + p, { headers, lenient: true })
        const body = decodeBody(res.raw, res.headers['content-encoding']).toString()
        out[p] = body.includes(side.snippet) || body.includes(`${HOST}:${side.port}`)
      }
      return out
    } finally {
      await side.stop()
    }
  }

  test('rewriteRules[].paths: minimatch against req.url with its query (resp-modifier lib/utils.js isWhitelisted)', async () => {
    const seen = []
    const rule = { match: /REPLACEME/g, fn: (req, res, m) => (seen.push(req.url), m), paths: ['/api/*.json', '/api/data.json?exact=1'] }
    const side = await startBrowserSync({ proxy: up.url, rewriteRules: [rule] })
    try {
      for (const p of ['/api/data.json', '/api/data.json?page=2', '/api/data.json?exact=1']) {
        await fetchOnce(side.url + p, { headers: { ...BROWSER, accept: 'application/json' }, lenient: true })
      }
    } finally {
      await side.stop()
    }
    // '?page=2' misses '/api/*.json'; an exact string (query included) matches through indexOf
    assert.deepEqual(seen, ['/api/data.json', '/api/data.json?exact=1'])
  })

  test('snippetOptions: blacklist globs and exact strings see the query; a glob never blacklists "/"; whitelist globs see the query', async () => {
    const blacklist = ['/skip/*', '/kept/page?x=1', '/**/deep/**']
    const tried = ['/skip/page', '/skip/page?a=1', '/skip/page?next=/b', '/kept/page?x=1', '/kept/page?x=2', '/skip/deep/page']
    assert.deepEqual(await rewrittenBy({ proxy: up.url, snippetOptions: { blacklist } }, tried), {
      '/skip/page': false,
      '/skip/page?a=1': false,
      '/skip/page?next=/b': true, // the query's "/" defeats '*'
      '/kept/page?x=1': false,
      '/kept/page?x=2': true,
      '/skip/deep/page': false,
    })
    assert.deepEqual(await rewrittenBy({ proxy: up.url, snippetOptions: { blacklist: ['/**'] } }, ['/', '/kept/page']), { '/': true, '/kept/page': false })
    const json = { ...BROWSER, accept: 'application/json' }
    const forced = ['/forced/page', '/forced/page?x=1', '/forced/page?next=/a', '/kept/page']
    assert.deepEqual(await rewrittenBy({ proxy: up.url, snippetOptions: { whitelist: ['forced/*'] } }, forced, json), {
      '/forced/page': true, // 'forced/*' got its leading slash (options.js ensureSlash)
      '/forced/page?x=1': true,
      '/forced/page?next=/a': false,
      '/kept/page': false,
    })
  })

  test('snippetOptions.ignorePaths replaces blacklist (options.js fixSnippetIgnorePaths), with a leading slash added', async () => {
    const config = { proxy: up.url, snippetOptions: { blacklist: ['/skip/**'], ignorePaths: 'ignored/*.html' } }
    assert.deepEqual(await rewrittenBy(config, ['/ignored/page.html', '/skip/page']), {
      '/ignored/page.html': false,
      '/skip/page': true,
    })
  })
})
