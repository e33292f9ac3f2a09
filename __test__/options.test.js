'use strict'
// Browsersync's rule and snippet options as devproxy-native honours them: rule functions called with
// (req, res, match, ...), the `fn` form, `paths`, `snippetOptions`; compared with real browser-sync
// (the devDependency, run in a child process) where it is the reference. Then the option surface:
// warnings for options left to the adapter and unknown ones, logLevel/logPrefix, startPath, and rule
// changes after stop().

const { test } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const path = require('node:path')
const { lib, startUpstream, withProxy, request, spawnNode, withTimeout, ACCEPT_HTML, stopIfStarted } = require('./helpers')
const { build } = require('./fixtures/rule-spec.js')

const HTML = { 'content-type': 'text/html; charset=utf-8' }

/** An upstream with the pages of these tests; `x-up` shows response headers reach `res`. */
function site() {
  const page = (body, headers = HTML) => (req, res) => {
    res.writeHead(200, { ...headers, 'x-up': 'yes' })
    res.end(body)
  }
  return startUpstream({
    '/page': page('<html><body class="b"><p>hello world</p><a href="/x">x</a></body></html>'),
    '/api/data.json': page('{"n":"hello","m":"n"}', { 'content-type': 'application/json' }),
    '/api/v1/data.json': page('{"n":"hello"}', { 'content-type': 'application/json' }),
    '/css/site.css': page('a { color: red } /* hello */', { 'content-type': 'text/css' }),
    '/forced': page('plain hello, no tag first <body>', { 'content-type': 'text/plain' }),
    '/skip': page('<html><body>hello skip</body></html>'),
    '/ignored/x': page('<html><body>hello ignored</body></html>'),
  })
}

/** Starts real browser-sync with `spec` (see fixtures/rule-spec.js); resolves to { url, snippet, close }. */
async function browsersync(spec) {
  const child = spawnNode(path.join(__dirname, 'fixtures/browsersync-child.js'))
  child.send({ type: 'start', options: spec })
  const started = await child.next('started', 60000)
  return { url: `http://127.0.0.1:${started.port}`, snippet: started.snippet, close: () => child.kill() }
}

/** GET with Node's lenient parser: browser-sync answers a chunked upstream with Content-Length and Transfer-Encoding. */
function lenientGet(url, headers) {
  return withTimeout(
    new Promise((resolve, reject) => {
      const req = http.get(url, { headers, agent: false, insecureHTTPParser: true }, (res) => {
        const chunks = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }))
        res.on('error', reject)
      })
      req.on('error', reject)
    }),
    20000,
    `GET ${url}`,
  )
}

/** The body at `url + p` with `accept`, its proxy's host:port written as HOST. */
async function fetchNormalised(base, p, accept) {
  const res = await lenientGet(base + p, { accept })
  return { status: res.status, body: res.body.toString().split(new URL(base).host).join('HOST') }
}

test('rule functions get Browsersync\'s req (url, method, headers) and res (statusCode, getHeader), replace and fn alike', async () => {
  const up = await site()
  const seen = []
  try {
    const rules = [
      // The example: a Browsersync rule that used to give `UNDEFINED@string`.
      { match: /hello/g, replace: (req, res, m) => m.toUpperCase() + '@' + req.headers.host },
      {
        match: /world/,
        fn: (req, res, m, offset, string) => {
          seen.push({
            url: req.url,
            method: req.method,
            accept: req.headers.accept,
            custom: req.headers['x-custom'],
            status: res.statusCode,
            type: res.getHeader('Content-Type'),
            up: res.getHeader('x-up'),
            length: res.getHeader('content-length'),
            names: res.getHeaderNames().includes('x-up'),
            headers: res.getHeaders()['x-up'],
            offset,
            string,
          })
          return m + '!'
        },
      },
    ]
    await withProxy({ proxy: up.url, port: 0, rewriteRules: rules }, async (server) => {
      const res = await request(server.url + '/page?q=1', { headers: { accept: ACCEPT_HTML, 'X-Custom': 'a' } })
      const host = `127.0.0.1:${server.port}`
      assert.match(res.body.toString(), new RegExp(`<p>HELLO@${host.replace(/\./g, '\\.')} world!</p>`))
      assert.deepStrictEqual(seen, [
        {
          url: '/page?q=1',
          method: 'GET',
          accept: ACCEPT_HTML,
          custom: 'a',
          status: 200,
          type: 'text/html; charset=utf-8',
          up: 'yes',
          length: undefined, // the rewritten body has none
          names: true,
          headers: 'yes',
          offset: '<html><body class="b"><p>HELLO@ '.length + host.length,
          string: undefined,
        },
      ])
    })
  } finally {
    await up.close()
  }
})

test('a rule with both `replace` and `fn`, or neither, is refused naming it; addRule takes the fn form', async () => {
  const { start } = lib()
  const up = await site()
  try {
    await assert.rejects(
      start({ proxy: up.url, port: 0, quiet: true, rewriteRules: [{ match: /a/, replace: 'b' }, { match: /a/, replace: 'b', fn: () => 'c' }] }),
      /rewriteRules\[1\] has both `replace` and `fn`/,
    )
    await assert.rejects(stopIfStarted(start({ proxy: up.url, port: 0, quiet: true, rewriteRules: [{ match: /a/ }] })), /rewriteRules\[0\] has no `replace` or `fn`/)
    await assert.rejects(
      start({ proxy: up.url, port: 0, quiet: true, rewriteRules: [{ match: /a/, replace: 'b', paths: ['/[z-a]'] }] }),
      /rewriteRules\[0\].*paths\[0\].*not a valid glob/,
    )
    await withProxy({ proxy: up.url, port: 0 }, async (server) => {
      server.addRule({ match: /world/, fn: (req, res, m) => `${m}:${req.method}:${res.statusCode}` })
      const res = await request(server.url + '/page', { headers: { accept: ACCEPT_HTML } })
      assert.match(res.body.toString(), /<p>hello world:GET:200<\/p>/)
      assert.throws(() => server.addRule({ match: /x/, fn: 'y', replace: 'z' }), /rule has both/)
    })
  } finally {
    await up.close()
  }
})

// One config exercising `paths`, a snippet rule with `fn`, whitelist, blacklist and ignorePaths; every
// URL is fetched through real browser-sync and through devproxy-native, and the bodies must be equal.
const SPEC = {
  rewriteRules: [
    { source: '"n"', flags: 'g', fnSource: '(req, res, m) => m.toUpperCase() + req.method', paths: ['/api/*.json'] },
    { source: 'color', flags: 'g', replace: 'colour', paths: '/css/**' },
    { source: 'hello', flags: 'g', replaceSource: '(req, res, m, offset) => m + "#" + offset' },
  ],
  snippetOptions: {
    rule: { source: '</body>', flags: 'i', fnSource: '(snippet, match) => "[" + snippet.length + "]" + match' },
    whitelist: ['/forced'],
    blacklist: ['/skip'],
    ignorePaths: 'ignored/**',
  },
}
const CASES = [
  ['/page', ACCEPT_HTML], // snippet by its rule, the rule without paths, links
  ['/page', 'application/json'], // not a page request: untouched
  ['/api/data.json', 'application/json'], // paths rule only, forced on JSON
  ['/api/v1/data.json', ACCEPT_HTML], // `*` stops at `/`: untouched
  ['/api/data.json?v=1', ACCEPT_HTML], // the query is part of the URL globs see: untouched
  ['/css/site.css', 'text/css,*/*;q=0.1'], // paths rule forced on CSS; the rule without paths does not run
  ['/forced', '*/*'], // whitelisted: rewritten whatever Accept, extension and body say
  ['/skip', ACCEPT_HTML], // blacklisted
  ['/ignored/x', ACCEPT_HTML], // ignorePaths (a leading / added, as Browsersync does)
]

test('paths, snippetOptions rule fn, whitelist, blacklist and ignorePaths give browser-sync\'s bodies', async () => {
  const up = await site()
  const bs = await browsersync({ proxy: up.url, ...SPEC })
  try {
    const options = { proxy: up.url, port: 0, snippet: bs.snippet, ...build(SPEC) }
    await withProxy(options, async (server) => {
      const differences = []
      for (const [p, accept] of CASES) {
        const theirs = await fetchNormalised(bs.url, p, accept)
        const ours = await fetchNormalised(server.url, p, accept)
        assert.equal(theirs.status, 200, `browser-sync ${p}`)
        if (ours.body !== theirs.body) differences.push(`${p} (${accept}):\n  browser-sync ${JSON.stringify(theirs.body)}\n  ours         ${JSON.stringify(ours.body)}`)
      }
      // The one deliberate difference: browser-sync drops `blacklist` when `ignorePaths` is given
      // (options.js fixSnippetIgnorePaths overwrites it); devproxy-native honours both.
      assert.equal(differences.length, 1, differences.join('\n'))
      assert.ok(differences[0].startsWith('/skip '), differences[0])
      assert.equal((await fetchNormalised(server.url, '/skip', ACCEPT_HTML)).body, '<html><body>hello skip</body></html>')
      // The comparison means something: the cases differ from the upstream's bodies where rules ran.
      const json = await fetchNormalised(server.url, '/api/data.json', 'application/json')
      assert.equal(json.body, '{"N"GET:"hello","m":"N"GET}')
      const css = await fetchNormalised(server.url, '/css/site.css', 'text/css')
      assert.equal(css.body, 'a { colour: red } /* hello */')
      const page = await fetchNormalised(server.url, '/page', ACCEPT_HTML)
      assert.ok(page.body.includes(`[${bs.snippet.length}]</body>`), page.body)
      const forced = await fetchNormalised(server.url, '/forced', '*/*')
      assert.equal(forced.body, 'plain hello#6, no tag first <body>')
    })
  } finally {
    await bs.close()
    await up.close()
  }
})

test('snippetOptions.rule.match without fn places the snippet after the match; snippet: true/false', async () => {
  const up = await site()
  try {
    const snippetOptions = { rule: { match: /<p>/ }, async: true }
    await withProxy({ proxy: up.url, port: 0, snippet: '<i>S</i>', snippetOptions }, async (server) => {
      const res = await request(server.url + '/page', { headers: { accept: ACCEPT_HTML } })
      assert.match(res.body.toString(), /<body class="b"><p><i>S<\/i>hello/)
    })
    for (const snippet of [true, false]) {
      await withProxy({ proxy: up.url, port: 0, snippet, snippetOptions: { rule: { match: /<p>/, fn: () => 'never' } } }, async (server) => {
        const res = await request(server.url + '/page', { headers: { accept: ACCEPT_HTML } })
        assert.match(res.body.toString(), /<body class="b"><p>hello world<\/p>/, `snippet: ${snippet}`)
      })
    }
  } finally {
    await up.close()
  }
})

test('rewrite(input, rules, { req, res }) calls functions as the proxy does, with documented defaults', () => {
  const { rewrite } = lib()
  const rules = [{ match: /x/g, fn: (req, res, m, offset, string) => `${req.method}${req.url}${res.statusCode}${offset}${string}` }]
  assert.equal(rewrite('ax', rules), 'aGET/2001ax')
  const req = { url: '/p', method: 'POST', headers: { host: 'h' } }
  const res = { statusCode: 404, getHeader: () => 'text/html' }
  assert.equal(rewrite('x', [{ match: /x/, replace: (q, s) => q.headers.host + s.getHeader('content-type') + s.statusCode }], { req, res }), 'htext/html404')
})

/** The child's stderr once everything it wrote before the mark is in. */
async function stderrUpTo(child, id) {
  child.send({ type: 'mark', id })
  await child.next('marked')
  const mark = `@@mark ${id}`
  const deadline = withTimeout(new Promise(() => {}), 15000, 'stderr mark').catch((e) => e)
  while (!child.output().stderr.includes(mark)) {
    const r = await Promise.race([new Promise((resolve) => setTimeout(resolve, 20)), deadline])
    if (r instanceof Error) throw r
  }
  return child.output().stderr.split(mark)[0]
}

test('options of Browsersync\'s other features and unknown ones: one warning line each, with the prefix; known ones none', async () => {
  const up = await site()
  const child = spawnNode(path.join(__dirname, 'fixtures/proxy-child.js'))
  try {
    const options = {
      proxy: { target: up.url, route: '/x', taget: 'x', proxyReq: [] },
      port: 0,
      logPrefix: 'bs-test',
      files: ['*.html'],
      notify: false,
      rewriteRule: [],
      https: false,
      serveStatic: [],
      middleware: [],
      snippetOptions: { async: true, blacklst: [] },
    }
    child.send({ type: 'start', options })
    await child.next('started')
    const lines = (await stderrUpTo(child, 1)).trim().split('\n')
    assert.deepStrictEqual(lines, [
      "[bs-test] option `files` belongs to Browsersync's other features, not its proxy: the `devproxy-native/browser-sync` adapter handles it; start() ignores it",
      "[bs-test] option `notify` belongs to Browsersync's other features, not its proxy: the `devproxy-native/browser-sync` adapter handles it; start() ignores it",
      '[bs-test] unknown option `rewriteRule`; did you mean `rewriteRules`?',
      '[bs-test] option `proxy.route` is not supported by devproxy-native and is ignored',
      '[bs-test] unknown option `proxy.taget`; did you mean `proxy.target`?',
      '[bs-test] unknown option `snippetOptions.blacklst`; did you mean `snippetOptions.blacklist`?',
    ])
  } finally {
    await child.kill()
    await up.close()
  }
})

test('serveStatic naming no directory is warned about with its path (a build may make it later, as Browsersync allows)', async () => {
  const up = await site()
  const child = spawnNode(path.join(__dirname, 'fixtures/proxy-child.js'))
  try {
    child.send({ type: 'start', options: { proxy: up.url, port: 0, serveStatic: ['no-such-dir', __dirname, __filename] } })
    await child.next('started')
    const lines = (await stderrUpTo(child, 1)).trim().split('\n')
    assert.deepStrictEqual(lines, [
      `[devproxy] serveStatic: '${path.resolve('no-such-dir')}' does not exist (yet): nothing is served from it until it is a directory`,
      `[devproxy] serveStatic: '${__filename}' is not a directory: nothing is served from it until it is a directory`,
    ])
  } finally {
    await child.kill()
    await up.close()
  }
})

test('logLevel: silent writes nothing but warnings about the options, debug a line per request; quiet stays an alias of silent', async () => {
  const up = await site()
  try {
    // The warning about `open` shows at every level: a config the proxy does not follow is not chatter.
    for (const [extra, expectWarning, expectRequest] of [
      [{ logLevel: 'silent' }, true, false],
      [{ quiet: true, logLevel: 'debug' }, true, false],
      [{ logLevel: 'debug' }, true, true],
      [{}, true, false],
    ]) {
      const child = spawnNode(path.join(__dirname, 'fixtures/proxy-child.js'))
      try {
        child.send({ type: 'start', options: { proxy: up.url, port: 0, open: false, ...extra } })
        const { url } = await child.next('started')
        await request(url + '/page', { headers: { accept: ACCEPT_HTML } })
        const err = await stderrUpTo(child, 2)
        const label = JSON.stringify(extra)
        assert.equal(err.includes('option `open`'), expectWarning, `${label}: ${err}`)
        assert.equal(err.includes(`[devproxy] GET /page -> 200`), expectRequest, `${label}: ${err}`)
      } finally {
        await child.kill()
      }
    }
  } finally {
    await up.close()
  }
  const { start } = lib()
  await assert.rejects(stopIfStarted(start({ proxy: up.url, port: 0, logLevel: 'loud' })), /option `logLevel` must be 'silent', 'warn', 'info' or 'debug', got 'loud'/)
})

test('startPath: the proxy URL\'s path, or the option; null without either', async () => {
  const up = await site()
  try {
    await withProxy({ proxy: `${up.url}/app/start?x=1`, port: 0 }, async (server) => assert.equal(server.startPath, '/app/start?x=1'))
    await withProxy({ proxy: { target: `${up.url}/a` }, port: 0, startPath: '/b' }, async (server) => assert.equal(server.startPath, '/b'))
    await withProxy({ proxy: up.url, port: 0 }, async (server) => assert.equal(server.startPath, null))
  } finally {
    await up.close()
  }
})

test('addRule, addRuleAsync and removeRule after stop() fail saying the server is stopped', async () => {
  const { start } = lib()
  const up = await site()
  try {
    const server = await start({ proxy: up.url, port: 0, quiet: true })
    const id = server.addRule({ match: /a/, replace: 'b' })
    await server.stop()
    assert.throws(() => server.addRule({ match: /a/, replace: 'b' }), /addRule: the server is stopped/)
    assert.throws(() => server.removeRule(id), /removeRule: the server is stopped/)
    await assert.rejects(server.addRuleAsync({ match: /a/, replace: 'b' }), /addRuleAsync: the server is stopped/)
  } finally {
    await up.close()
  }
})
