'use strict'
// Core proxying and body rewriting: snippet, user rules, link rewrite, passthrough rules, runtime rules, stats.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const zlib = require('node:zlib')
const {
  lib,
  deferred,
  withTimeout,
  startUpstream,
  deadPort,
  request,
  withProxy,
  browsersyncRewriteLinks,
  mulberry32,
  randomSplits,
  writeChunks,
  ACCEPT_HTML,
  insertSnippet,
  decodeBody,
  fileUpstream,
} = require('./helpers')

const SNIPPET = '<script async src="/__dev.js"></script>'
const html = { 'content-type': 'text/html; charset=utf-8' }

const routes = {}
const up = fileUpstream(routes)

/** Route serving a fixed body (one write) with the given headers. */
function serve(path, body, headers = html, status = 200) {
  routes[path] = (req, res) => {
    const buf = Buffer.isBuffer(body) ? body : Buffer.from(body)
    res.writeHead(status, { 'content-length': buf.length, ...headers })
    res.end(buf)
  }
}

test('injects the snippet right after the first <body...> tag (case-insensitive) and rewrites target links', async () => {
  const T = up.host
  const page =
    `<!DOCTYPE html>\n<html><head><link rel="stylesheet" href="http://${T}/css/a.css"></head>\n` +
    `<BODY class="main" data-x="1">\n<a href="http://${T}/next?x=1">next</a>\n<p>&lt;body&gt; <body>not this one</body></p>\n</BODY></html>\n`
  serve('/page', page)
  await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET }, async (server) => {
    const res = await request(server.url + '/page', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.status, 200)
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    assert.equal(res.headers['content-length'], undefined, 'Content-Length must be dropped on a rewritten body')
    const local = `127.0.0.1:${server.port}`
    const expected =
      `<!DOCTYPE html>\n<html><head><link rel="stylesheet" href="//${local}/css/a.css"></head>\n` +
      `<BODY class="main" data-x="1">${SNIPPET}\n<a href="//${local}/next?x=1">next</a>\n<p>&lt;body&gt; <body>not this one</body></p>\n</BODY></html>\n`
    assert.equal(res.body.toString(), expected)
  })
})

test('a page without a <body tag gets no snippet', async () => {
  serve('/nobody', '<html><head><title>t</title></head></html>')
  await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET }, async (server) => {
    const res = await request(server.url + '/nobody', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.status, 200)
    assert.equal(res.body.toString(), '<html><head><title>t</title></head></html>')
  })
})

/** The reference table's cases (with the real target 127.0.0.1:UP) plus common variants. */
function linkCorpus(T, otherPort) {
  return [
    `'http://${T}/css/styles'`,
    `"//${T}/file.js"`,
    `'${T}/sub/dir'`,
    `'/${T}/sub/dir'`,
    `<h1>${T}</h1>`,
    `https://${T}/ in text`,
    `assets.cdn.${T}:1234`,
    `http:\\/\\/${T}\\/x`,
    `{"api":"http:\\/\\/${T}\\/api\\/v1","n":1}`,
    `<a href="http://${T}">root</a>`,
    `<a href="http://${T}/">root/</a>`,
    `<a href="https://${T}/a/b?c=1&amp;d=2#frag">q</a>`,
    `<img srcset="http://${T}/a.png 1x, http://${T}/b.png 2x">`,
    `see http://${T}/docs here`,
    `<link href='//${T}/css/a.css'>`,
    `<a href="http://${T}/x?y=http://${T}/z">nested</a>`,
    `<div style="background:url(http://${T}/img.png)"></div>`,
    `<a href="http://127.0.0.1:${otherPort}/x">other port</a>`,
    `<script>var u = "https://${T}/p"; var v = '//${T}';</script>`,
    `"${T}"`,
    `plain ${T}/not/quoted`,
    `<a href="http://${T}/#top">hash after a lone slash</a>`,
    `<a href="http://${T}/#a/">hash ending in a slash</a>`,
    `<a href="http://${T}?q=1">query right after the host</a>`,
    `<a href="http://${T}#x">hash right after the host</a>`,
    `<a href="http://${T}/a?b=1&c=2#h?x">query and hash</a>`,
    `<a href="http://${T}/a?b\\c">backslash in the query</a>`,
    `<a href="http://${T}/a\\b">backslash in the path</a>`,
    `<a href="http://${T}/a|b^c">escaped by url.parse</a>`,
    `<a href='http://${T}/café/naïve-東京?q=é#ü'>non-ASCII path, query and hash</a>`,
    `{"a":"https:\\/\\/${T}","b":"\\/\\/${T}","c":'//${T}'}`,
  ].join('\n')
}

test("link rewriting equals Browsersync's rewriteLinks on the reference corpus (default and custom Host header)", async () => {
  const other = await deadPort()
  const body = '<!DOCTYPE html>\n<html><head><title>links</title></head>\n' + linkCorpus(up.host, other) + '\n</html>\n'
  serve('/links', body)
  // dev.local: a name the user reaches the proxy by, so it is in allowedHosts
  await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET, allowedHosts: ['dev.local'] }, async (server) => {
    for (const host of [`127.0.0.1:${server.port}`, 'dev.local:9999']) {
      const res = await request(server.url + '/links', { headers: { accept: ACCEPT_HTML, host } })
      assert.equal(res.status, 200)
      const expected = browsersyncRewriteLinks(body, up.port, host)
      const got = res.body.toString()
      if (got !== expected) {
        const g = got.split('\n')
        const e = expected.split('\n')
        const src = body.split('\n')
        const diffs = []
        for (let i = 0; i < Math.max(g.length, e.length); i++) {
          if (g[i] !== e[i]) diffs.push(`  input:    ${src[i]}\n  expected: ${e[i]}\n  got:      ${g[i]}`)
        }
        assert.fail(`Host ${host}: ${diffs.length} line(s) differ from Browsersync:\n${diffs.join('\n')}`)
      }
      // sanity: the expectation really rewrote something
      assert.ok(expected.includes(`//${host}/css/styles`))
    }
  })
})

test('order on a rewritten body: snippet, then user rules, then link rewrite', async () => {
  const T = up.host
  serve('/order', `<html><body>LINKME <a href="http://${T}/special">s</a> <a href="http://${T}/plain">p</a></body></html>`)
  const rules = [
    // sees the snippet => snippet ran first
    { match: /__dev\.js/g, replace: '__user.js' },
    // produces a target URL => must be link-rewritten afterwards
    { match: /LINKME/g, replace: `"http://${T}/made-by-rule"` },
    // matches an original target URL => link rewrite has not run yet
    { match: new RegExp(`http://${T.replace(/\./g, '\\.')}/special`, 'g'), replace: '/rule-saw-original' },
  ]
  await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET, rewriteRules: rules }, async (server) => {
    const res = await request(server.url + '/order', { headers: { accept: ACCEPT_HTML } })
    const L = `127.0.0.1:${server.port}`
    assert.equal(
      res.body.toString(),
      `<html><body><script async src="/__user.js"></script>"//${L}/made-by-rule" <a href="/rule-saw-original">s</a> <a href="//${L}/plain">p</a></body></html>`,
    )
  })
})

test('user rule forms: string match (first occurrence, literal), function replace, $-patterns, non-global regex', async () => {
  serve('/forms', '<html><body>a.b a.b axb | k1=v1 k2=v2 | Tom Tim | $x $x</body></html>')
  const rules = [
    { match: 'a.b', replace: '[$&]' }, // string: literal dot, first occurrence only
    { match: /(?<key>k\d)=(v\d)/g, replace: '$2:$<key>' },
    { match: /T(\w)m/g, replace: (req, res, m, vowel) => `T${vowel.toUpperCase()}M` }, // Browsersync's (req, res, match, ...groups)
    { match: /\$x/, replace: '$$y' }, // non-global: first only; $$ is a literal $
  ]
  await withProxy({ proxy: up.url, port: 0, rewriteRules: rules }, async (server) => {
    const res = await request(server.url + '/forms', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.body.toString(), '<html><body>[a.b] a.b axb | v1:k1 v2:k2 | TOM TIM | $y $x</body></html>')
  })
})

test('passes through byte for byte (Content-Length kept) when Accept lacks html, the URL is an asset, or the body does not look like HTML', async () => {
  const T = up.host
  const pageLike = `<html><body><a href="http://${T}/x">x</a></body></html>`
  serve('/page-like', pageLike)
  serve('/app.js', pageLike, { 'content-type': 'application/javascript' })
  serve('/img/logo.png', pageLike, { 'content-type': 'image/png' })
  serve('/style.css', pageLike, { 'content-type': 'text/css' })
  serve('/notes', `Plain text first, then <b>http://${T}/x</b>`, html)
  const binary = Buffer.from([0x00, 0xff, 0xfe, 0x3c, 0x68, 0x74, 0x6d, 0x6c, 0x3e, 0xc3, 0x28, 0x80, 0x0a])
  serve('/blob', binary, { 'content-type': 'application/octet-stream' })
  const rules = [{ match: /x/g, replace: 'Y' }]
  await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET, rewriteRules: rules }, async (server) => {
    const cases = [
      ['/page-like', '*/*', Buffer.from(pageLike)],
      ['/page-like', 'application/json', Buffer.from(pageLike)],
      ['/app.js', ACCEPT_HTML, Buffer.from(pageLike)],
      ['/app.js?v=3', ACCEPT_HTML, Buffer.from(pageLike)],
      ['/img/logo.png', ACCEPT_HTML, Buffer.from(pageLike)],
      ['/style.css', ACCEPT_HTML, Buffer.from(pageLike)],
      ['/notes', ACCEPT_HTML, Buffer.from(`Plain text first, then <b>http://${T}/x</b>`)],
      ['/blob', ACCEPT_HTML, binary],
      ['/blob', '*/*', binary],
    ]
    for (const [path, accept, expected] of cases) {
      const res = await request(server.url + path, { headers: { accept } })
      assert.equal(res.status, 200, path)
      assert.deepEqual(res.body, expected, `${path} (Accept: ${accept}) must pass through unchanged`)
      assert.equal(res.headers['content-length'], String(expected.length), `${path} (Accept: ${accept}) keeps Content-Length`)
    }
  })
})

test('Content-Type is not consulted for pages: an HTML-looking body is rewritten even as text/plain; BOM and leading whitespace allowed', async () => {
  serve('/as-text', '<html><body>hi</body></html>', { 'content-type': 'text/plain' })
  serve('/bom', '\uFEFF \r\n\t<!doctype html><html><body>hi</body></html>')
  serve('/no-type', '  <div>fragment hi</div>', {})
  // U+FFFE is a noncharacter, but README's regex (/^(\uFEFF|\uFFFE)?\s*<[^>]+>/i) allows it: bytes EF BF BE
  serve('/bom-fffe', Buffer.concat([Buffer.from([0xef, 0xbf, 0xbe]), Buffer.from('<html><body>hi</body></html>')]))
  serve('/bom-feff', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('<html><body>hi</body></html>')]))
  const rules = [{ match: /hi/g, replace: 'HI' }]
  await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET, rewriteRules: rules }, async (server) => {
    let res = await request(server.url + '/as-text', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.body.toString(), `<html><body>${SNIPPET}HI</body></html>`)
    res = await request(server.url + '/bom', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.body.toString(), `\uFEFF \r\n\t<!doctype html><html><body>${SNIPPET}HI</body></html>`)
    for (const [p, bom] of [['/bom-fffe', [0xef, 0xbf, 0xbe]], ['/bom-feff', [0xef, 0xbb, 0xbf]]]) {
      res = await request(server.url + p, { headers: { accept: ACCEPT_HTML } })
      assert.deepEqual(res.body, Buffer.concat([Buffer.from(bom), Buffer.from(`<html><body>${SNIPPET}HI</body></html>`)]), `${p}: sniffed as HTML and rewritten`)
    }
    res = await request(server.url + '/no-type', { headers: { accept: 'text/html' } })
    assert.equal(res.body.toString(), '  <div>fragment HI</div>')
  })
})

test('rewriteTextTypes: CSS, JavaScript, JSON, SVG and XML bodies get link rewrite and user rules; without it they pass through', async () => {
  const T = up.host
  const bodies = {
    '/s/site.css': ['text/css; charset=utf-8', `body{background:url(http://${T}/img/bg.png)} .COLOR{}`],
    '/s/app.js': ['application/javascript', `fetch("http://${T}/api/items"); // COLOR`],
    '/s/app2.mjs': ['text/javascript', `import x from '//${T}/m.js'; COLOR`],
    '/s/data.json': ['application/json', `{"self":"http:\\/\\/${T}\\/data.json","c":"COLOR"}`],
    '/s/icon.svg': ['image/svg+xml', `<svg xmlns="http://www.w3.org/2000/svg"><image href="http://${T}/i.png"/><!--COLOR--></svg>`],
    '/s/feed.xml': ['application/xml', `<feed><link href="http://${T}/feed"/><t>COLOR</t></feed>`],
  }
  for (const [p, [type, body]] of Object.entries(bodies)) serve(p, body, { 'content-type': type })
  serve('/s/plain.txt', `see http://${T}/x COLOR`, { 'content-type': 'text/plain' })
  const rules = [{ match: /COLOR/g, replace: 'colour' }]
  const accept = 'text/css,*/*;q=0.1'
  await withProxy({ proxy: up.url, port: 0, rewriteRules: rules, rewriteTextTypes: true }, async (server) => {
    const host = `127.0.0.1:${server.port}`
    for (const [p, [, body]] of Object.entries(bodies)) {
      const res = await request(server.url + p, { headers: { accept, host } })
      const expected = browsersyncRewriteLinks(body.replace(/COLOR/g, 'colour'), up.port, host)
      assert.notEqual(expected, body)
      assert.equal(res.body.toString(), expected, p)
      assert.equal(res.headers['content-length'], undefined, `${p}: Content-Length dropped on a rewritten body`)
    }
    // text/plain is not one of the text types
    const res = await request(server.url + '/s/plain.txt', { headers: { accept } })
    assert.equal(res.body.toString(), `see http://${T}/x COLOR`)
  })
  await withProxy({ proxy: up.url, port: 0, rewriteRules: rules }, async (server) => {
    for (const [p, [type, body]] of Object.entries(bodies)) {
      const res = await request(server.url + p, { headers: { accept } })
      if (type === 'application/json') {
        // JSON gets the target's exact origin only (rewriteJson, json.test.js): no rule, no Browsersync link rewrite.
        assert.equal(res.body.toString(), body.replace(`http:\\/\\/${T}`, `http:\\/\\/127.0.0.1:${server.port}`), p)
        continue
      }
      assert.equal(res.body.toString(), body, `${p} must pass through without rewriteTextTypes`)
      assert.equal(res.headers['content-length'], String(Buffer.byteLength(body)))
    }
  })
})

test('streaming rewrite equals String.prototype.replace for bodies split at random byte offsets (incl. inside UTF-8 characters)', async () => {
  const rnd = mulberry32(Number(process.env.REWRITE_SEED || 0xc0ffee))
  const T = up.host
  const ruleBank = [
    { match: /a+b/g, replace: 'X' },
    { match: /é+/g, replace: '[$&]' },
    { match: /(a)(b)?/, replace: '<$1$2>' },
    { match: /\bab\b/g, replace: 'W' },
    // m-mode anchors differ from V8 only between \r and \n (README, pinned in rewrite.test.js): here without m
    { match: /^a/g, replace: 'S' },
    { match: /b$/g, replace: 'E' },
    { match: /<(\w+)>/g, replace: '{$1}' },
    { match: 'ab', replace: 'Q' },
    { match: /a|ab/g, replace: '1' },
    // Plain texts in an alternation run as one literal set (src/rewrite/alternation.rs).
    { match: /\b(?:ab|b a|é)\b/g, replace: '<$&>' },
    { match: /(a b|"h)/g, replace: '[$1]' },
    { match: /€+/g, replace: 'EUR' },
    { match: /"[^"]*"/g, replace: (req, res, m) => m.toUpperCase() },
    { match: /b\s+a/g, replace: 'b_a' },
    { match: /$/g, replace: ';' },
    { match: /\r\n/g, replace: '\n' },
  ]
  const alphabet = ['a', 'b', 'é', '€', '\n', '\r\n', ' ', '<p>', '"', 'ab', `"http://${T}/z"`, '😀']
  const failures = []
  const CASES = 40
  await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET }, async (server) => {
    for (let i = 0; i < CASES; i++) {
      const nRules = 1 + Math.floor(rnd() * 3)
      const rules = []
      for (let k = 0; k < nRules; k++) rules.push(ruleBank[Math.floor(rnd() * ruleBank.length)])
      let text = ''
      const len = 20 + Math.floor(rnd() * 400)
      for (let k = 0; k < len; k++) text += alphabet[Math.floor(rnd() * alphabet.length)]
      const body = `<html><body>${text}</body></html>`
      const parts = randomSplits(Buffer.from(body), rnd, 8)
      const path = `/diff${i}`
      routes[path] = (req, res) => {
        res.writeHead(200, html)
        return writeChunks(res, parts)
      }
      const ids = rules.map((r) => server.addRule(r))
      try {
        const res = await request(server.url + path, { headers: { accept: ACCEPT_HTML } })
        const host = `127.0.0.1:${server.port}`
        const expected = browsersyncRewriteLinks(
          // resp-modifier's applyRules: a function gets (req, res, ...JS's replace arguments)
          rules.reduce(
            (s, r) => s.replace(r.match, typeof r.replace === 'function' ? (...a) => r.replace(null, null, ...a) : r.replace),
            insertSnippet(body, SNIPPET),
          ),
          up.port,
          host,
        )
        const got = res.body.toString()
        if (got !== expected) {
          let at = 0
          while (at < got.length && got[at] === expected[at]) at++
          const from = Math.max(0, at - 40)
          failures.push(
            `case ${i}: rules ${rules.map((r) => String(r.match)).join(', ')}; upstream chunks ${JSON.stringify(parts.map((p) => p.length))}; first difference at char ${at}\n` +
              `  expected …${JSON.stringify(expected.slice(from, at + 40))}…\n  got      …${JSON.stringify(got.slice(from, at + 40))}…`,
          )
        }
      } finally {
        for (const id of ids) server.removeRule(id)
      }
    }
  })
  assert.equal(failures.length, 0, `${failures.length}/${CASES} streamed bodies differ:\n${failures.slice(0, 5).join('\n')}`)
})

test('addRule / removeRule at runtime', async () => {
  serve('/rt', '<html><body>cat dog cat</body></html>')
  await withProxy({ proxy: up.url, port: 0, rewriteRules: [{ match: /dog/g, replace: 'wolf' }] }, async (server) => {
    const get = async () => (await request(server.url + '/rt', { headers: { accept: ACCEPT_HTML } })).body.toString()
    assert.equal(await get(), '<html><body>cat wolf cat</body></html>')
    const id = server.addRule({ match: /cat/g, replace: 'lion' })
    assert.equal(typeof id, 'number')
    assert.equal(await get(), '<html><body>lion wolf lion</body></html>')
    const id2 = server.addRule({ match: /lion/, replace: 'tiger' }) // runs after the first added rule
    assert.notEqual(id2, id)
    assert.equal(await get(), '<html><body>tiger wolf lion</body></html>')
    assert.equal(server.removeRule(id), true)
    assert.equal(await get(), '<html><body>cat wolf cat</body></html>')
    assert.equal(server.removeRule(id), false, 'removing twice returns false')
    assert.equal(server.removeRule(987654), false, 'unknown id returns false')
    assert.equal(server.removeRule(id2), true)
    assert.equal(await get(), '<html><body>cat wolf cat</body></html>')
  })
})

test('removeRule() also removes rewriteRules by their position id, and addRule ids do not collide with them', async () => {
  // index.d.ts: "the n-th of rewriteRules, id n". Accept ids starting at 0 or at 1, but consistently.
  serve('/rt2', '<html><body>one two three</body></html>')
  const rules = [
    { match: /one/g, replace: '1' },
    { match: /two/g, replace: '2' },
  ]
  await withProxy({ proxy: up.url, port: 0, rewriteRules: rules }, async (server) => {
    const get = async () => (await request(server.url + '/rt2', { headers: { accept: ACCEPT_HTML } })).body.toString()
    assert.equal(await get(), '<html><body>1 2 three</body></html>')
    const id = server.addRule({ match: /three/g, replace: '3' })
    assert.equal(await get(), '<html><body>1 2 3</body></html>')
    const base = server.removeRule(0) ? 0 : 1
    if (base === 1) assert.equal(server.removeRule(1), true, 'neither id 0 nor id 1 named the first of rewriteRules')
    assert.notEqual(id, base)
    assert.notEqual(id, base + 1)
    assert.equal(await get(), '<html><body>one 2 3</body></html>', `removeRule(${base}) must remove the first of rewriteRules`)
    assert.equal(server.removeRule(base + 1), true)
    assert.equal(await get(), '<html><body>one two 3</body></html>')
    assert.equal(server.removeRule(id), true)
    assert.equal(await get(), '<html><body>one two three</body></html>')
  })
})

test('addRule applies to requests that start after the call, not to one in flight', async () => {
  const gotFirst = deferred()
  const sendRest = deferred()
  routes['/inflight'] = async (req, res) => {
    res.writeHead(200, html)
    res.write('<html><body>first part\n')
    await sendRest.promise
    res.end('second part mentions first again</body></html>')
  }
  serve('/after', '<html><body>first</body></html>')
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const inflight = request(server.url + '/inflight', {
      headers: { accept: ACCEPT_HTML },
      onData: (c) => {
        if (c.toString().includes('first part')) gotFirst.resolve()
      },
    })
    try {
      await withTimeout(gotFirst.promise, 5000, 'the first part of the in-flight body (proxy buffers HTML?)')
    } catch (err) {
      sendRest.resolve()
      await inflight.catch(() => {})
      throw err
    }
    const id = server.addRule({ match: /first/g, replace: 'FIRST' })
    sendRest.resolve()
    const res = await inflight
    assert.equal(res.body.toString(), '<html><body>first part\nsecond part mentions first again</body></html>')
    const res2 = await request(server.url + '/after', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res2.body.toString(), '<html><body>FIRST</body></html>')
    assert.equal(server.removeRule(id), true)
  })
})

test('HEAD of a page and a 206 answer to a Range request pass through byte for byte, Content-Length (and Content-Range) kept', async () => {
  const page = `<!DOCTYPE html><html><head></head><body><a href="http://${up.host}/x">x</a> word</body></html>`
  const gz = zlib.gzipSync(Buffer.from(page))
  routes['/hp'] = (req, res) => {
    const gzip = /gzip/.test(req.headers['accept-encoding'] || '')
    const body = gzip ? gz : Buffer.from(page)
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range || '')
    const headers = { 'content-type': 'text/html; charset=utf-8', 'accept-ranges': 'bytes', ...(gzip ? { 'content-encoding': 'gzip' } : {}) }
    if (range) {
      const [from, to] = [Number(range[1]), Math.min(Number(range[2]), body.length - 1)]
      const part = body.subarray(from, to + 1)
      res.writeHead(206, { ...headers, 'content-range': `bytes ${from}-${to}/${body.length}`, 'content-length': part.length })
      res.end(part)
    } else {
      res.writeHead(200, { ...headers, 'content-length': body.length })
      res.end(body) // Node sends no body for HEAD
    }
  }
  const rules = [{ match: /word/g, replace: 'WORD' }]
  for (const upstreamCompression of ['auto', 'always']) {
    await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET, rewriteRules: rules, upstreamCompression }, async (server) => {
      // what the upstream serves to the proxy in this mode ('auto': a loopback target is asked for pages uncompressed)
      const served = upstreamCompression === 'always' ? gz : Buffer.from(page)
      const enc = upstreamCompression === 'always' ? 'gzip' : undefined
      const headers = { accept: ACCEPT_HTML, 'accept-encoding': 'gzip' }
      // the same page by GET is rewritten: the cases below are exempt only for being HEAD/206
      const get = await request(server.url + '/hp', { headers })
      assert.match(decodeBody(get.body, get.headers['content-encoding']).toString(), /WORD/, `${upstreamCompression}: GET is rewritten`)
      const head = await request(server.url + '/hp', { method: 'HEAD', headers })
      assert.equal(head.status, 200)
      assert.equal(head.headers['content-length'], String(served.length), `${upstreamCompression}: HEAD keeps the upstream's Content-Length`)
      assert.equal(head.headers['content-encoding'], enc, `${upstreamCompression}: HEAD keeps the upstream's coding`)
      assert.equal(head.body.length, 0)
      const from = 10
      const to = served.length - 20
      const part = await request(server.url + '/hp', { headers: { ...headers, range: `bytes=${from}-${to}` } })
      assert.equal(part.status, 206)
      assert.equal(part.headers['content-range'], `bytes ${from}-${to}/${served.length}`, `${upstreamCompression}: Content-Range kept`)
      assert.equal(part.headers['content-length'], String(to - from + 1), `${upstreamCompression}: Content-Length kept`)
      assert.equal(part.headers['content-encoding'], enc, `${upstreamCompression}: the 206 keeps the upstream's coding`)
      assert.deepEqual(part.body, served.subarray(from, to + 1), `${upstreamCompression}: the range passes byte for byte`)
    })
  }
})

test('a v-flag rule the engine refuses (a character subtracted with `i`) is rejected by addRule, naming it, and the running rules are unchanged', async () => {
  serve('/vflag', '<html><body>pq</body></html>')
  await withProxy({ proxy: up.url, port: 0, rewriteRules: [{ match: /p/g, replace: 'P' }] }, async (server) => {
    const get = async () => (await request(server.url + '/vflag', { headers: { accept: ACCEPT_HTML } })).body.toString()
    assert.equal(await get(), '<html><body>Pq</body></html>')
    assert.throws(() => server.addRule({ match: /q|[[a-c]--a]/giv, replace: 'Q' }), (err) => {
      assert.match(err.message, /a single character or \\q\{…\} subtracted with the `i` flag/, `the message names the feature: ${err.message}`)
      return true
    })
    assert.equal(await get(), '<html><body>Pq</body></html>', 'the failed addRule added nothing and removed nothing')
  })
})

test('a bad rule in addRule throws and the running rules stay intact', async () => {
  serve('/bad', '<html><body>pq</body></html>')
  await withProxy({ proxy: up.url, port: 0, rewriteRules: [{ match: /p/g, replace: 'P' }] }, async (server) => {
    const id = server.addRule({ match: /q/g, replace: 'Q' })
    assert.throws(() => server.addRule({ match: /x(?<=[^y]*)b/g, replace: 'x' }), /lookbehind/i)
    assert.throws(() => server.addRule({ match: /(a)\1/g, replace: 'x' }))
    assert.throws(() => server.addRule({ replace: 'x' }), /match/)
    assert.throws(() => server.addRule({ match: /[[a-c]--a]/iv, replace: 'x' }), /subtracted with the `i` flag/)
    const res = await request(server.url + '/bad', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.body.toString(), '<html><body>PQ</body></html>')
    assert.equal(server.removeRule(id), true)
  })
})

test('stats() counts requests, rewritten and passed-through bodies and upstream errors', async () => {
  serve('/st-page', '<html><body>x</body></html>')
  serve('/st-data', 'plain', { 'content-type': 'text/plain' })
  routes['/st-die'] = (req) => req.socket.destroy()
  await withProxy({ proxy: up.url, port: 0 }, async (server) => {
    const s0 = server.stats()
    for (const k of ['requests', 'rewritten', 'passedThrough', 'upstreamErrors', 'abandonedMatches']) assert.equal(s0[k], 0, `initial stats().${k}`)
    await request(server.url + '/st-page', { headers: { accept: ACCEPT_HTML } })
    await request(server.url + '/st-page', { headers: { accept: ACCEPT_HTML } })
    await request(server.url + '/st-data', { headers: { accept: '*/*' } })
    const r = await request(server.url + '/st-die', { headers: { accept: ACCEPT_HTML } })
    assert.equal(r.status, 502)
    const s = server.stats()
    assert.equal(s.requests, 4)
    assert.equal(s.rewritten, 2)
    assert.equal(s.passedThrough, 1)
    assert.equal(s.upstreamErrors, 1)
    assert.equal(s.abandonedMatches, 0)
  })
})

test('maxMatchBytes: a match candidate longer than the limit is abandoned, counted, and the body arrives intact', async () => {
  // '<!--' opens a potential match of /<!--[\s\S]*?-->/ that never closes within maxMatchBytes.
  const filler = 'z'.repeat(20000)
  const body = `<html><body><!-- open ${filler} ${filler} and never closed. x</body></html>`
  routes['/abandon'] = (req, res) => {
    res.writeHead(200, html)
    const buf = Buffer.from(body)
    return writeChunks(res, [buf.subarray(0, 1000), buf.subarray(1000, 30000), buf.subarray(30000)])
  }
  const rules = [{ match: /<!--[\s\S]*?-->/g, replace: '' }]
  await withProxy({ proxy: up.url, port: 0, rewriteRules: rules, maxMatchBytes: 1024 }, async (server) => {
    const res = await request(server.url + '/abandon', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.status, 200)
    assert.equal(res.body.toString(), body)
    assert.ok(server.stats().abandonedMatches >= 1, `abandonedMatches = ${server.stats().abandonedMatches}`)
  })
})

test('keep-alive connections are reused across rewritten, passed-through, 404 and 502 responses', async () => {
  serve('/ka-page', '<html><body>page</body></html>')
  serve('/ka-data', 'data', { 'content-type': 'text/plain' })
  routes['/ka-die'] = (req) => req.socket.destroy()
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const get = (url) =>
    new Promise((resolve, reject) => {
      http
        .get(url, { agent, headers: { accept: ACCEPT_HTML } }, (res) => {
          const c = []
          res.on('data', (d) => c.push(d))
          res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(c).toString(), reused: res.req.reusedSocket }))
          res.on('error', reject)
        })
        .on('error', reject)
    })
  try {
    await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET, quiet: true }, async (server) => {
      const seq = ['/ka-page', '/ka-data', '/ka-missing', '/ka-die', '/ka-page']
      const out = []
      for (const p of seq) out.push(await withTimeout(get(server.url + p), 5000, `keep-alive GET ${p}`))
      assert.deepEqual(out.map((r) => r.status), [200, 200, 404, 502, 200])
      assert.equal(out[1].body, 'data')
      assert.equal(out[0].body, `<html><body>${SNIPPET}page</body></html>`)
      assert.equal(out[4].body, `<html><body>${SNIPPET}page</body></html>`)
      assert.deepEqual(out.map((r) => r.reused), [false, true, true, true, true], 'one client connection, reused by every request after the first')
    })
  } finally {
    agent.destroy()
  }
})

test('30 concurrent rewritten requests each get their own body', async () => {
  routes['/conc'] = (req, res) => {
    const i = new URL(req.url, 'http://x').searchParams.get('i')
    res.writeHead(200, html)
    const body = Buffer.from(`<html><body>request ${i} ${'pad '.repeat(2000)} end ${i} <a href="http://${up.host}/r/${i}">r</a></body></html>`)
    return writeChunks(res, [body.subarray(0, 100), body.subarray(100, 5000), body.subarray(5000)])
  }
  await withProxy({ proxy: up.url, port: 0, rewriteRules: [{ match: /request (\d+)/g, replace: 'req#$1' }] }, async (server) => {
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => request(`${server.url}/conc?i=${i}`, { headers: { accept: ACCEPT_HTML } })),
    )
    results.forEach((res, i) => {
      assert.equal(
        res.body.toString(),
        `<html><body>req#${i} ${'pad '.repeat(2000)} end ${i} <a href="//127.0.0.1:${server.port}/r/${i}">r</a></body></html>`,
        `response ${i}`,
      )
    })
  })
})

test('rewrite() is exported and agrees with the proxy on a simple page', async () => {
  const { rewrite } = lib()
  const rules = [{ match: /o+/g, replace: '0' }, { match: 'bar', replace: 'BAR' }]
  serve('/same', '<html><body>foo bar boo</body></html>')
  assert.equal(rewrite('<html><body>foo bar boo</body></html>', rules), '<html><b0dy>f0 BAR b0</b0dy></html>')
  await withProxy({ proxy: up.url, port: 0, rewriteRules: rules }, async (server) => {
    const res = await request(server.url + '/same', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.body.toString(), '<html><b0dy>f0 BAR b0</b0dy></html>')
  })
})
