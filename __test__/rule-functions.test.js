'use strict'
// Rule functions as Browsersync calls them (lib/rules.js): `fn(req, res, match, ...)` with `req` and `res`
// shaped like Node's objects, in `rewrite()` and through a running proxy (`start()`'s `rewriteRules`,
// `addRule()`, `snippetOptions.rule.fn`). Written against the promises StrykerJS found unchecked.

const test = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const net = require('node:net')
const { lib, hooks, startUpstream, request, withProxy, ACCEPT_HTML, stopIfStarted } = require('./helpers')

const PAGE = '<html><body><p>hello</p></body></html>'

/** An upstream answering `/page` with PAGE and the given raw header pairs (`[name, value, ...]`). */
function pageUpstream(rawHeaders = [], status = 200) {
  return startUpstream({
    '/page': (req, res) => {
      res.writeHead(status, ['content-type', 'text/html; charset=utf-8', ...rawHeaders])
      res.end(PAGE)
    },
  })
}

/** What a rule function saw, through the proxy: its `req` and `res` for GET /page with these headers. */
async function seenThroughProxy({ requestHeaders = {}, responseHeaders = [], status = 200 } = {}) {
  const up = await pageUpstream(responseHeaders, status)
  let seen
  try {
    await withProxy({ proxy: up.url, rewriteRules: [{ match: /hello/, fn: (req, res, match) => {
      seen = { req, res, match, headers: res.getHeaders(), names: res.getHeaderNames() }
      return match.toUpperCase()
    } }] }, async (server) => {
      const r = await request(`${server.url}/page?q=1`, { headers: { accept: ACCEPT_HTML, ...requestHeaders } })
      assert.equal(r.status, status)
      assert.match(r.body.toString(), /HELLO/, 'the function ran and its result was used')
    })
  } finally {
    await up.close()
  }
  return seen
}

test("proxy: a rule function's req has the client's url, method and headers folded as Node folds them", async () => {
  const { req } = await seenThroughProxy({
    requestHeaders: { 'X-Many': ['a', 'b'], Cookie: ['c=1', 'd=2'], 'User-Agent': 'first', Referer: ['http://127.0.0.1/r1'] },
  })
  assert.equal(req.url, '/page?q=1')
  assert.equal(req.method, 'GET')
  assert.equal(req.headers['x-many'], 'a, b', 'repeated headers joined with ", "')
  assert.equal(req.headers.cookie, 'c=1; d=2', 'cookies joined with "; "')
  assert.equal(req.headers['user-agent'], 'first')
  assert.ok(Array.isArray(req.rawHeaders), 'rawHeaders kept')
  const names = req.rawHeaders.filter((_, i) => i % 2 === 0)
  assert.equal(names.filter((n) => n === 'x-many').length, 2, 'rawHeaders keeps each line')
})

test("proxy: a rule function's res has statusCode and Node's header getters, names in any case", async () => {
  const seen = await seenThroughProxy({
    status: 201,
    responseHeaders: ['X-Twice', 'one', 'X-Twice', 'two', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2', 'Content-Location', '/first', 'Location', '/l1', 'Location', '/l2'],
  })
  const { res } = seen
  assert.equal(seen.match, 'hello')
  assert.equal(res.statusCode, 201)
  assert.equal(res.getHeader('X-TWICE'), 'one, two', 'getHeader ignores case and folds repeats')
  assert.deepEqual(res.getHeader('set-cookie'), ['a=1', 'b=2'], 'set-cookie is an array')
  assert.equal(res.getHeader('location'), '/l1', 'a single-valued header keeps its first value')
  assert.equal(res.getHeader('x-absent'), undefined)
  assert.equal(res.hasHeader('X-Twice'), true)
  assert.equal(res.hasHeader('x-absent'), false)
  assert.equal(seen.headers['x-twice'], 'one, two')
  assert.equal(Object.getPrototypeOf(seen.headers), null, 'getHeaders() is a null-prototype object, like Node')
  assert.ok(seen.names.includes('x-twice') && seen.names.includes('content-type'), `names: ${seen.names}`)
  assert.deepEqual(seen.names, Object.keys(seen.headers), 'getHeaderNames() lists what getHeaders() holds')
  seen.headers['x-twice'] = 'changed'
  assert.equal(res.getHeader('x-twice'), 'one, two', 'getHeaders() is a copy')
})

test('proxy: addRule() functions get the same req and res, and a result that is not a string is coerced as replace() does', async () => {
  const up = await pageUpstream(['X-Up', 'yes'])
  try {
    await withProxy({ proxy: up.url }, async (server) => {
      let seen
      server.addRule({ match: /hello/, replace: (req, res, match) => {
        seen = { url: req.url, status: res.statusCode, up: res.getHeader('x-up') }
        return { toString: () => `<${match}>` }
      } })
      server.addRule({ match: /<p>/, replace: () => 42 })
      const r = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML } })
      assert.equal(r.body.toString(), '<html><body>42<hello></p></body></html>')
      assert.deepEqual(seen, { url: '/page', status: 200, up: 'yes' })
    })
  } finally {
    await up.close()
  }
})

test('proxy: snippetOptions.rule.fn is called as fn(snippet, match), and its result placed', async () => {
  const up = await pageUpstream()
  try {
    const calls = []
    const snippet = '<script>s</script>'
    await withProxy({ proxy: up.url, snippet, snippetOptions: { rule: { match: /<\/body>/i, fn: (...args) => {
      calls.push(args)
      return args[0] + args[1]
    } } } }, async (server) => {
      const r = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML } })
      assert.equal(r.body.toString(), '<html><body><p>hello</p><script>s</script></body></html>')
    })
    assert.deepEqual(calls, [[snippet, '</body>']])
  } finally {
    await up.close()
  }
})

test("rewrite(): functions get the default req and res (GET /, 200, no headers), or the given ones as they are", () => {
  const { rewrite } = lib()
  let seen
  const rule = { match: /a/, fn: (req, res, match) => {
    seen = { req, res }
    return match + '!'
  } }
  assert.equal(rewrite('a', [rule]), 'a!')
  assert.equal(seen.req.url, '/')
  assert.equal(seen.req.method, 'GET')
  assert.deepEqual({ ...seen.req.headers }, {})
  assert.deepEqual(seen.req.rawHeaders, [])
  assert.equal(seen.res.statusCode, 200)
  assert.equal(seen.res.getHeader('content-type'), undefined)
  assert.equal(seen.res.hasHeader('content-type'), false)
  assert.deepEqual(seen.res.getHeaderNames(), [])

  const req = { url: '/given', custom: true }
  const res = { statusCode: 404 }
  assert.equal(rewrite('a', [rule], { req, res }), 'a!')
  assert.equal(seen.req, req, 'the given req itself')
  assert.equal(seen.res, res, 'the given res itself')
  assert.equal(rewrite('a', [rule], { req }), 'a!')
  assert.equal(seen.req, req)
  assert.equal(seen.res.statusCode, 200, 'a default res beside a given req')

  const replaceRule = { match: /a/g, replace: (rq, rs, match, offset) => `${rq.url}${rs.statusCode}${match}${offset}` }
  assert.equal(rewrite('aa', [replaceRule], { req, res }), '/given404a0/given404a1', 'replace functions are wrapped too')
})

test('rewrite(): `this` in a rule function is what String.prototype.replace gives; bad rules are refused naming them', () => {
  const { rewrite } = lib()
  let self = 'unset'
  rewrite('a', [{ match: /a/, fn: function () {
    self = this
    return 'b'
  } }])
  // 'a'.replace(/a/, function () { return this }) calls it with `this` undefined (strict mode).
  assert.equal(self, undefined)
  assert.throws(() => rewrite('a', [null]), /rule/i)
  assert.throws(() => rewrite('a', ['a']), /rule/i)
  assert.throws(() => rewrite('a', null), /rules|array/i)
})

test('__rewriteEach: the rules compiled once give each input its own result, functions with the given req', () => {
  const { __rewriteEach } = hooks()
  const urls = []
  const out = __rewriteEach(['a1', 'b2', 'a3'], [{ match: /a(\d)/, fn: (req, res, match, digit) => {
    urls.push(req.url)
    return `A${digit}${res.statusCode}`
  } }], { req: { url: '/each' } })
  assert.deepEqual(out, ['A1200', 'b2', 'A3200'])
  assert.deepEqual(urls, ['/each', '/each'])
})

// Headers Node's IncomingMessage keeps the first of when they come twice, and the ones it joins (cookie
// with "; "), each sent twice: a rule function must see what a Node server sees for the same lines.
// (Not `host` and `content-length`: twice, the proxy refuses the request as ambiguous.)
const TWICE = [
  'age', 'authorization', 'content-type', 'etag', 'expires', 'from', 'if-modified-since', 'if-unmodified-since',
  'last-modified', 'location', 'max-forwards', 'proxy-authorization', 'referer', 'retry-after', 'server',
  'user-agent', 'cookie', 'x-many',
]
const twiceLines = (prefix = '') => TWICE.flatMap((name) => [`${name}: ${prefix}first-${name}`, `${name}: ${prefix}second-${name}`])

/** `GET /page` with `lines` as its header lines over a raw socket (Node's client would merge them). */
function rawGet(port, lines) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write([`GET /page HTTP/1.1`, `host: 127.0.0.1:${port}`, `accept: ${ACCEPT_HTML}`, 'connection: close', ...lines, '', ''].join('\r\n'))
    })
    const chunks = []
    socket.on('data', (c) => chunks.push(c))
    socket.on('end', () => resolve(Buffer.concat(chunks).toString()))
    socket.on('error', reject)
  })
}

test("proxy: a rule function's req.headers are what a Node server's req.headers are for the same header lines", async () => {
  let nodeSaw
  const plain = http.createServer((req, res) => {
    nodeSaw = req.headers
    res.end()
  })
  await new Promise((resolve) => plain.listen(0, '127.0.0.1', resolve))
  const up = await pageUpstream()
  let ruleSaw
  try {
    await rawGet(plain.address().port, twiceLines())
    await withProxy({ proxy: up.url, rewriteRules: [{ match: /hello/, fn: (req) => {
      ruleSaw = req.headers
      return 'HELLO'
    } }] }, async (server) => {
      const answer = await rawGet(server.port, twiceLines())
      assert.match(answer, /HELLO/)
    })
  } finally {
    await up.close()
    plain.close()
  }
  const pick = (headers) => Object.fromEntries(TWICE.map((name) => [name, headers[name]]))
  assert.deepEqual(pick(ruleSaw), pick(nodeSaw))
  assert.equal(ruleSaw.cookie, 'first-cookie; second-cookie', 'cookies joined with "; "')
  assert.equal(ruleSaw['user-agent'], 'first-user-agent')
})

test("proxy: a rule function's res headers are what a Node client gets from the proxy for headers sent twice", async () => {
  const up = await startUpstream({
    '/page': (req, res) => {
      const raw = ['content-type', 'text/html; charset=utf-8']
      for (const line of twiceLines('up-')) {
        const [name, value] = line.split(': ')
        if (name !== 'content-type') raw.push(name, value)
      }
      res.writeHead(200, raw)
      res.end(PAGE)
    },
  })
  let ruleSaw
  try {
    await withProxy({ proxy: up.url, rewriteRules: [{ match: /hello/, fn: (req, res) => {
      ruleSaw = res.getHeaders()
      return 'HELLO'
    } }] }, async (server) => {
      const r = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML } })
      assert.match(r.body.toString(), /HELLO/)
      const sent = TWICE.filter((name) => name !== 'content-type')
      const pick = (headers) => Object.fromEntries(sent.map((name) => [name, headers[name]]))
      assert.deepEqual(pick(ruleSaw), pick(r.headers), 'as Node folds what the client gets')
      assert.equal(ruleSaw.server, 'up-first-server')
      assert.equal(ruleSaw['x-many'], 'up-first-x-many, up-second-x-many')
    })
  } finally {
    await up.close()
  }
})

test('bad rules and snippet rules are refused by start() and addRule() naming them, not by a TypeError on the way', async () => {
  const { start } = lib()
  const up = await pageUpstream()
  try {
    const refused = async (options, pattern) => {
      await assert.rejects(stopIfStarted(start({ proxy: up.url, quiet: true, ...options })), (err) => {
        assert.match(err.message, pattern)
        return true
      })
    }
    await refused({ rewriteRules: [null] }, /^rewriteRules\[0\] must be an object \{ match, replace \}, got null/)
    await refused({ rewriteRules: ['x'] }, /^rewriteRules\[0\] must be an object \{ match, replace \}, got a string/)
    await refused({ snippet: '<s>', snippetOptions: { rule: { match: /x/, fn: 'no' } } }, /snippetOptions\.rule\.fn must be a function, got a string/)
    await refused({ snippet: '<s>', snippetOptions: { rule: Object.assign(() => '', { match: /x/, fn: () => '' }) } }, /snippetOptions\.rule` must be an object, got a function/)
    // A null rule is no rule: the snippet goes where it goes by default.
    await withProxy({ proxy: up.url, snippet: '<s>', snippetOptions: { rule: null } }, async (server) => {
      const r = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML } })
      assert.equal(r.body.toString(), '<html><body><s><p>hello</p></body></html>')
      assert.throws(() => server.addRule(null), /^Error: rule must be an object \{ match, replace \}, got null/)
      assert.throws(() => server.addRule('x'), /rule must be an object \{ match, replace \}, got a string/)
      assert.throws(() => lib().rewrite('a', ['x']), /rules\[0\] must be an object \{ match, replace \}, got a string/)
    })
  } finally {
    await up.close()
  }
})

// start() runs a sample page through the page rules to have their code in memory for the first request
// (src/proxy/state.rs, `warm_page_code`): never where a rule calls a function, which would see a page that
// no browser asked for. The sample's words (`sample`, `text`, `</body>`, links to the target) are matched here.
test('proxy: start() calls no rule function before a page is asked for', async () => {
  const up = await pageUpstream()
  try {
    const calls = { rule: 0, snippet: 0 }
    const options = {
      proxy: up.url,
      snippet: '<script>s</script>',
      rewriteRules: [{ match: /sample|text|hello/g, fn: (req, res, match) => { calls.rule++; return match.toUpperCase() } }],
      snippetOptions: { rule: { match: /<\/body>/i, fn: (snippet, match) => { calls.snippet++; return snippet + match } } },
    }
    await withProxy(options, async (server) => {
      assert.deepEqual(calls, { rule: 0, snippet: 0 }, 'nothing was called at start')
      const r = await request(`${server.url}/page`, { headers: { accept: ACCEPT_HTML } })
      assert.match(r.body.toString(), /HELLO/)
      assert.deepEqual(calls, { rule: 1, snippet: 1 }, 'each called once, for the page')
    })
  } finally {
    await up.close()
  }
})
