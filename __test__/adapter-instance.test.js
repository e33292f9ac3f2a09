'use strict'
// Browsersync's instance API through the adapter (issue 29): what a plugin, a gulpfile or a test suite
// written against Browsersync does with `bs` (the instance `init` hands its callback) acts on the native
// proxy. The shared scenario runs against browser-sync 2 and 3 themselves (the reference: their proxy
// mode) and through the adapter on each; the adapter-only tests cover what Browsersync has no
// counterpart for (the server view's limits, refused rules, the certificate policy).

const { test } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const request = require('supertest')
const { ROOT, HOST, startUpstream, deadPort, occupyPort, connectRefused, withTimeout } = require('./helpers.js')
const { x509v1 } = require('./fixtures/x509-v1.js')

const adapter = require(`${ROOT}/browser-sync.js`)
const QUIET = { open: false, online: false, ui: false, logLevel: 'silent', notify: false, ghostMode: false }

function initBs(api, config) {
  return new Promise((resolve) => {
    const instance = api.create()
    instance.init(config, (err, bs) => resolve({ err, bs, instance }))
  })
}

/**
 * The site: a page with a link to its own origin, a form page, and what it was sent. Headers are set
 * one by one (as serve-static does): after `writeHead(status, headers)`, Browsersync's response
 * modifier answers pages with both Content-Length and Transfer-Encoding, which Node's client refuses.
 */
async function site() {
  const seen = []
  const send = (res, type, body, headers = {}) => {
    for (const [name, value] of Object.entries({ 'content-type': type, ...headers })) res.setHeader(name, value)
    res.end(body)
  }
  const up = await startUpstream({
    '/index.html': (req, res) => {
      seen.push({ url: req.url, headers: req.headers })
      send(res, 'text/html', `<html><body><a href="${up.url}/my-link">Browsersync</a></body></html>`, { 'cache-control': 'public, max-age=0' })
    },
    '/forms.html': (req, res) => send(res, 'text/html', '<html><body><form></form></body></html>'),
    '/api/x': (req, res) => send(res, 'text/plain', 'from the site'),
  })
  return { up, seen }
}

/**
 * Runs `fn({ up, bs, instance })` with the adapter started on the site (`config` added to a quiet one on
 * port 0); stops both after, whatever `fn` did.
 */
async function withAdapterSite(config, fn) {
  const { up } = await site()
  const { err, bs, instance } = await initBs(adapter, { ...QUIET, port: 0, proxy: up.url, ...config })
  try {
    assert.ifError(err)
    return await fn({ up, bs, instance })
  } finally {
    await instance.exit()
    await up.close()
  }
}

const page = (server) => request(server).get('/index.html').set('accept', 'text/html')

const contenders = {
  'browser-sync 3 (reference)': require('browser-sync'),
  'browser-sync 2 (reference)': require('browser-sync-2'),
  'adapter on browser-sync 3': adapter,
  'adapter on browser-sync 2': adapter.withBrowserSync('browser-sync-2'),
}

for (const [name, api] of Object.entries(contenders)) {
  test(`the instance API acts on the site: ${name}`, { timeout: 60000 }, async () => {
    const { up, seen } = await site()
    const called = { reqHeaders: [], middleware: [] }
    const port = await deadPort()
    const { err, bs, instance } = await initBs(api, {
      ...QUIET,
      port,
      proxy: {
        target: `${up.url}/forms.html`,
        reqHeaders(config) {
          called.reqHeaders.push({ self: this, target: config.target })
          return { 'x-from-function': 'yes' }
        },
        proxyRes: [
          (res) => {
            res.headers['cache-control'] = 'private'
          },
        ],
      },
      rewriteRules: [{ match: />Browsersync</g, fn: () => '>BROWSERSYNC<' }],
      middleware: [
        (req, res, next) => {
          called.middleware.push(req.url)
          next()
        },
      ],
    })
    try {
      assert.ifError(err)
      // The proxy URL's path is the start path; the user's middleware and one entry for the proxy.
      assert.equal(bs.options.get('startPath'), '/forms.html')
      assert.equal(bs.options.get('middleware').size, 2)
      assert.equal(bs.options.getIn(['proxy', 'target']), up.url)
      assert.equal(bs.options.getIn(['proxy', 'url', 'path']), '/forms.html')
      // `reqHeaders` as a function: called once, with the proxy options, `this` the instance.
      assert.equal(called.reqHeaders.length, 1)
      assert.equal(called.reqHeaders[0].self, bs)
      assert.equal(called.reqHeaders[0].target, up.url)

      // `bs.server` is the site: supertest reaches the page through it, rewritten and with the snippet. It
      // listens on the port asked for or, where that was taken in the meantime (a released port can become
      // another connection's source port), on the next free one, as browser-sync picks it: where the instance says.
      assert.equal(bs.server.address().port, bs.options.get('port'))
      assert.ok(bs.options.get('port') >= port, `${bs.options.get('port')} < ${port}`)
      let res = await page(bs.server)
      assert.equal(res.status, 200)
      assert.ok(res.text.includes(bs.options.get('snippet').trim()), res.text)
      assert.ok(res.text.includes(`<a href="//127.0.0.1:${port}/my-link">BROWSERSYNC</a>`), res.text)
      assert.equal(res.headers['cache-control'], 'private', 'proxyRes functions edit the answer')
      assert.equal(seen.at(-1).headers['x-from-function'], 'yes')
      assert.deepEqual(called.middleware, ['/index.html'])

      // Rules at run time: added after the others, removed by id, replaced whole.
      bs.addRewriteRule({ match: />BROWSERSYNC</, replace: '>shane<', id: 'my-rule' })
      assert.ok((await page(bs.server)).text.includes('>shane</a>'))
      bs.removeRewriteRule('my-rule')
      assert.ok((await page(bs.server)).text.includes('>BROWSERSYNC</a>'))
      bs.setRewriteRules([{ match: '>Browsersync<', replace: '>replaced<' }])
      assert.ok((await page(bs.server)).text.includes('>replaced</a>'))
      // As browser-sync's own spec does it: options edited, then the stack reset (an empty Immutable list).
      bs.options = bs.options.set('rewriteRules', bs.options.get('middleware').clear())
      bs.resetMiddlewareStack()
      assert.ok((await page(bs.server)).text.includes('>Browsersync</a>'))

      // Middleware at run time: on its route only, until removed.
      bs.addMiddleware('/api', (req, res) => res.end('from middleware'), { id: 'api' })
      assert.equal(bs.options.get('middleware').size, 3)
      assert.equal((await request(bs.server).get('/api/x')).text, 'from middleware')
      assert.equal((await request(bs.server).get('/forms.html')).status, 200)
      bs.removeMiddleware('api')
      assert.equal((await request(bs.server).get('/api/x')).text, 'from the site')

      // serveFile: a file of the plugin's on the site.
      bs.serveFile('/plugin.js', { type: 'text/javascript', content: 'window.plugin = 1' })
      res = await request(bs.server).get('/plugin.js')
      assert.equal(res.text, 'window.plugin = 1')
      assert.match(res.headers['content-type'], /^text\/javascript/)
    } finally {
      await instance.exit()
      await up.close()
    }
  })
}

test('through the adapter, bs.server is a view of the proxy: close() stops it, listen() says why it cannot', { timeout: 60000 }, () =>
  withAdapterSite({}, async ({ bs, instance }) => {
    const view = bs.server
    assert.equal(view.listening, true)
    assert.deepEqual(view.address(), { address: HOST, family: 'IPv4', port: instance.proxy.port })
    assert.equal(view.proxy, instance.proxy)
    assert.equal(bs.publicInstance, instance, "plugins' public API is the adapter's")
    assert.throws(() => view.listen(0), /bs\.server stands for devproxy-native's proxy/)
    const port = view.address().port
    const closed = new Promise((resolve) => view.once('close', resolve))
    await new Promise((resolve, reject) => view.close((e) => (e ? reject(e) : resolve())))
    await withTimeout(closed, 5000, 'the close event')
    assert.equal(view.listening, false)
    assert.equal(view.address(), null)
    assert.equal(instance.proxy, null)
    assert.equal(instance.active, false, 'not active once the site is not served')
    assert.equal(await connectRefused(port), true)
  })
)

test('through the adapter, a refused rule or middleware throws naming it and changes nothing', { timeout: 60000 }, () =>
  withAdapterSite({ rewriteRules: [{ match: '>Browsersync<', replace: '>one<' }] }, async ({ bs }) => {
    const rules = bs.options.get('rewriteRules')
    assert.throws(() => bs.addRewriteRule({ match: /x(?<=[^y]*)b/, replace: 'x' }), /rules\[1\].*lookbehind/)
    assert.equal(bs.options.get('rewriteRules'), rules, 'the options still describe the running rules')
    assert.ok((await page(bs.server)).text.includes('>one</a>'), 'the running rules are unchanged')
    const middleware = bs.options.get('middleware')
    assert.throws(() => bs.addMiddleware('/x', 'not a function'), /setMiddleware\(\): middleware\[0\] must be a function/)
    assert.equal(bs.options.get('middleware'), middleware)
    // The proxy target cannot change while it runs: said, not dropped in silence.
    const warnings = []
    bs.logger.warn = (...args) => warnings.push(args.join(' '))
    bs.setOption('proxy', bs.options.get('proxy').set('target', 'http://127.0.0.1:1'))
    assert.match(warnings.join('\n'), /proxy target cannot change while it runs/)
  })
)

test("through the adapter, the instance's cleanup() stops the proxy, and the next init gets its port", { timeout: 60000 }, async () => {
  const { up } = await site()
  const free = await occupyPort()
  const port = free.port
  await free.close()
  try {
    for (let round = 0; round < 4; round++) {
      // strictPort: the port must be free by the time the next instance starts, or init fails. The
      // last round without: the placeholder holding the site's port must not find the last proxy on
      // it (it would move on to the next port).
      const strictPort = round < 3
      const { err, bs } = await initBs(adapter, { ...QUIET, port, strictPort, proxy: up.url })
      assert.ifError(err)
      assert.equal(bs.options.get('port'), port, `round ${round}`)
      assert.equal((await page(bs.server)).status, 200)
      bs.cleanup()
    }
  } finally {
    adapter.reset()
    await up.close()
  }
})

test('through the adapter, an https target on this machine with a self-signed X.509 v1 certificate: proxied with X-Forwarded-*', { timeout: 60000 }, async () => {
  let headers = null
  const up = await startUpstream(
    {
      '/index.html': (req, res) => {
        headers = req.headers
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end('<html><body>BS</body></html>')
      },
    },
    { tls: x509v1('localhost', 'rsa') },
  )
  const { err, bs, instance } = await initBs(adapter, {
    ...QUIET,
    port: 0,
    proxy: { target: `https://localhost:${new URL(up.url).port}`, proxyOptions: { xfwd: true }, reqHeaders: { 'is-dev': 'true' } },
  })
  try {
    assert.ifError(err)
    const local = bs.options.getIn(['urls', 'local'])
    assert.match(local, /^https:/, 'an https target is proxied over https, as Browsersync does')
    const res = await new Promise((resolve, reject) => {
      const req = require('node:https').get(`${local}/index.html`, { ca: instance.proxy.certificate, headers: { accept: 'text/html' } }, (r) => {
        let body = ''
        r.on('data', (c) => (body += c))
        r.on('end', () => resolve({ status: r.statusCode, body }))
      })
      req.on('error', reject)
    })
    assert.equal(res.status, 200, res.body)
    assert.equal(res.body, `<html><body>${bs.options.get('snippet').trim()}BS</body></html>`)
    assert.equal(headers['is-dev'], 'true')
    assert.ok(headers['x-forwarded-for'] && headers['x-forwarded-port'] && headers['x-forwarded-proto'])
  } finally {
    await instance.exit()
    await up.close()
  }
})

test('start(): proxy.reqHeaders as a function is called once with the proxy options; a bad result is refused naming it', async () => {
  const { start } = require(ROOT)
  const { up, seen } = await site()
  try {
    const calls = []
    const server = await start({
      proxy: { target: up.url, reqHeaders: (config) => (calls.push(config.target), { 'x-dev': '1' }) },
      port: 0,
      quiet: true,
    })
    try {
      await new Promise((resolve, reject) => http.get(`${server.url}/index.html`, (r) => r.resume().on('end', resolve)).on('error', reject))
      assert.deepEqual(calls, [up.url])
      assert.equal(seen.at(-1).headers['x-dev'], '1')
    } finally {
      await server.stop()
    }
    await assert.rejects(
      start({ proxy: { target: up.url, reqHeaders: () => 'nope' }, port: 0, quiet: true }),
      /option `proxy\.reqHeaders` is a function, which must return an object of headers; it returned string/,
    )
  } finally {
    await up.close()
  }
})

test('through the adapter, as with browser-sync: a second init() of a running instance is refused naming it; the first keeps serving', { timeout: 60000 }, async () => {
  const { up } = await site()
  try {
    for (const [name, api] of [['browser-sync 3 (reference)', require('browser-sync')], ['adapter', adapter]]) {
      const instance = api.create(`twice-${name}`)
      const first = await new Promise((resolve) => instance.init({ ...QUIET, port: 0, proxy: up.url }, (err, bs) => resolve({ err, bs })))
      try {
        assert.ifError(first.err)
        const second = await withTimeout(new Promise((resolve) => instance.init({ ...QUIET, port: 0, proxy: up.url }, (err) => resolve(err))), 10000, `${name}: the second init's callback`)
        assert.ok(second instanceof Error, `${name}: ${second}`)
        assert.equal(second.message, `Instance: twice-${name} is already running!`, name)
        assert.equal((await page(first.bs.server)).status, 200, `${name}: the first still serves`)
      } finally {
        await instance.exit()
      }
    }
  } finally {
    await up.close()
  }
})

test("through the adapter, the entry standing for the proxy in options.middleware answers 501 naming the proxy's URL where mounted elsewhere; the banner says the native proxy serves", { timeout: 60000 }, async () => {
  const { up } = await site()
  const out = []
  const write = process.stdout.write
  process.stdout.write = function (chunk, ...rest) {
    out.push(String(chunk))
    return write.call(this, chunk, ...rest)
  }
  let started
  try {
    started = await initBs(adapter, { ...QUIET, logLevel: 'info', port: 0, proxy: up.url })
  } finally {
    process.stdout.write = write
  }
  const { err, bs, instance } = started
  try {
    assert.ifError(err)
    const { version } = require(`${ROOT}/package.json`)
    assert.match(out.join(''), new RegExp(`Native proxy on: devproxy-native ${version.replace(/\./g, '\\.')} serves the site`))
    const entries = bs.options.get('middleware').toArray()
    const entry = entries[entries.length - 1]
    assert.equal(entry.id, 'Browsersync Proxy')
    assert.equal(entry.route, '', "mounted at the root, as browser-sync's own entry")
    const elsewhere = http.createServer((req, res) => entry.handle(req, res))
    await new Promise((resolve) => elsewhere.listen(0, HOST, resolve))
    try {
      const res = await request(elsewhere).get('/')
      assert.equal(res.status, 501)
      assert.equal(res.text, `devproxy-native serves this site on ${instance.proxy.url}; this entry stands for it in options.middleware\n`)
    } finally {
      elsewhere.close()
    }
  } finally {
    await instance.exit()
    await up.close()
  }
})

test("options.proxy.url is what Browsersync's url.parse() makes of the target (port '80' when none); target cut to the origin, the other keys kept", () => {
  const url = require('node:url')
  const { proxyOption } = require(`${ROOT}/lib/browser-sync-site.js`)
  const targets = [
    'http://127.0.0.1:8000',
    'http://user:p%40ss@LocalHost:8000/a/b?x=1&y=%20#h',
    'https://example.test/path/',
    'http://only-user@example.test',
    'localhost:3000/start',
    'http://[::1]:9000/x?',
    'https://example.test:443/',
    'http://localhost:80',
    'http://127.0.0.1:8000/a?b=1#',
    'http://a.test/é?x=é',
    'localhost:3000/login?next=http://127.0.0.1/x',
  ]
  for (const target of targets) {
    const withScheme = /^https?:\/\//.test(target) ? target : `http://${target}`
    const parsed = { ...url.parse(withScheme) }
    if (!parsed.port) parsed.port = '80'
    const option = proxyOption({ proxy: target })
    assert.deepEqual(option.url, parsed, target)
    assert.equal(option.target, `${parsed.protocol}//${parsed.host}`, target)
    assert.deepEqual(Object.keys(option).sort(), ['target', 'url'], target)
  }
  const reqHeaders = { 'x-a': '1' }
  const given = proxyOption({ proxy: { target: 'http://127.0.0.1:8000/x', ws: true, reqHeaders } })
  assert.equal(given.target, 'http://127.0.0.1:8000')
  assert.equal(given.ws, true)
  assert.equal(given.reqHeaders, reqHeaders)
  assert.equal(given.url.path, '/x')
})

test('listOf: an option of one item or a list (array, Immutable list) as an array', () => {
  const { listOf } = require(`${ROOT}/lib/browser-sync-site.js`)
  const Immutable = require('immutable')
  const fn = () => {}
  assert.deepEqual(listOf(undefined), [])
  assert.deepEqual(listOf(null), [])
  const array = [fn, { route: '/a' }]
  assert.equal(listOf(array), array)
  assert.deepEqual(listOf(Immutable.List([fn, 2])), [fn, 2])
  assert.deepEqual(listOf(fn), [fn])
  assert.deepEqual(listOf({ match: 'a' }), [{ match: 'a' }])
})

test("bs.server's view of a proxy on ::1: an IPv6 address; close(cb) hands stop()'s failure to cb; close and stopped() emit 'close' once", async () => {
  const { start } = require(ROOT)
  const { ProxyServerView } = require(`${ROOT}/lib/browser-sync-site.js`)
  const { up } = await site()
  const server = await start({ proxy: up.url, port: 0, listen: '::1', quiet: true })
  try {
    let stops = 0
    const view = new ProxyServerView(server, () => (stops++, Promise.reject(new Error('cannot stop'))))
    assert.deepEqual(view.address(), { address: '::1', family: 'IPv6', port: server.port })
    const failure = await new Promise((resolve) => assert.equal(view.close(resolve), view))
    assert.match(String(failure), /cannot stop/)
    const unhandled = []
    const onUnhandled = (reason) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      assert.equal(view.close(), view, 'without a callback: nothing to tell, nothing thrown')
      const stoppable = new ProxyServerView(server, () => Promise.resolve())
      assert.equal(stoppable.close(), stoppable, 'a stop that succeeds, without a callback: the same')
      // a rejection nobody handles is reported after the microtasks of this turn
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
    assert.deepEqual(unhandled, [])
    assert.equal(stops, 2)
    let closes = 0
    view.on('close', () => closes++)
    view.stopped()
    view.stopped()
    assert.equal(closes, 1)
    assert.equal(view.proxy, null)
    assert.equal(view.listening, false)
  } finally {
    await server.stop()
    await up.close()
  }
})

test("'init' and 'service:running' (what plugins wait for) come once the site answers, before init's callback; 'service:running' carries what browser-sync 3's proxy mode sends", { timeout: 60000 }, async () => {
  const { up } = await site()
  const seen = {}
  try {
    for (const [name, api] of [['browser-sync 3', require('browser-sync')], ['adapter', adapter]]) {
      const port = await deadPort()
      const instance = api.create()
      const order = []
      // A wrapper of the emitter's emit put in place before init (browser-sync's own specs spy on it
      // with sinon) stays in place and sees every event, the held ones included.
      const emitted = []
      const emit = instance.emitter.emit
      const spy = function (event, ...args) {
        emitted.push(event)
        return emit.call(this, event, ...args)
      }
      instance.emitter.emit = spy
      // Only those two are held: browser-sync's others come as they happen (options set while it starts).
      instance.emitter.once('options:set', () => order.push(`options:set, active ${instance.active}`))
      // `init` (deprecated, still emitted; browser-sync's docs show `emitter.on('init', ...)`): after the
      // site answers too, with browser-sync's instance.
      instance.emitter.on('init', (bs) => {
        order.push('init')
        assert.equal(bs, instance.instance)
        seen[`${name} init`] = request(`http://127.0.0.1:${port}`).get('/index.html').then((res) => res.status)
      })
      instance.emitter.on('service:running', (data) => {
        order.push('service:running')
        // The site answers by now: a plugin may fetch it.
        data.answered = request(`http://127.0.0.1:${port}`).get('/index.html').set('accept', 'text/html').then((res) => res.status)
        seen[name] = data
      })
      const { err } = await new Promise((resolve) => instance.init({ ...QUIET, port, proxy: up.url, startPath: '/forms.html' }, (e) => (order.push('callback'), resolve({ err: e }))))
      try {
        assert.ifError(err)
        assert.deepEqual(order, ['options:set, active false', 'init', 'service:running', 'callback'], name)
        assert.equal(instance.emitter.emit, spy, name)
        instance.notify('spied')
        const watched = ['init', 'service:running', 'browser:notify']
        assert.deepEqual(emitted.filter((event) => watched.includes(event)), watched, name)
        assert.equal(await seen[`${name} init`], 200, `${name}: the site answers at init`)
        const { options, answered, ...data } = seen[name]
        assert.equal(await answered, 200, name)
        assert.equal(options.get('mode'), 'proxy', name)
        assert.equal(data.port, port, name)
        seen[name] = JSON.parse(JSON.stringify({ ...data, port: 'PORT' }).replaceAll(`:${port}`, ':PORT'))
      } finally {
        await instance.exit()
      }
    }
    assert.deepEqual(seen.adapter, seen['browser-sync 3'])
    assert.deepEqual(seen.adapter, { type: 'proxy', port: 'PORT', url: 'http://localhost:PORT/forms.html', urls: { local: 'http://localhost:PORT/forms.html' } })
  } finally {
    await up.close()
  }
})

test('through the adapter, a reset that changes nothing hands nothing to the proxy; each change hands over only what changed; override middleware run first, as in Browsersync', { timeout: 60000 }, () =>
  withAdapterSite({}, async ({ bs, instance }) => {
    assert.equal(bs.options.get('rewriteRules').size, 0, 'no rules: an empty list, as Browsersync')
    const handed = { rules: 0, middleware: 0 }
    const server = instance.proxy
    for (const [method, key] of [['setRules', 'rules'], ['setMiddleware', 'middleware']]) {
      const original = server[method].bind(server)
      server[method] = (...args) => {
        handed[key]++
        return original(...args)
      }
    }
    bs.resetMiddlewareStack()
    assert.deepEqual(handed, { rules: 0, middleware: 0 }, 'nothing changed')
    bs.addRewriteRule({ match: '>Browsersync<', replace: '>one<' })
    assert.deepEqual(handed, { rules: 1, middleware: 0 }, 'a rule')
    bs.resetMiddlewareStack()
    assert.deepEqual(handed, { rules: 1, middleware: 0 }, 'nothing changed since')
    const calls = []
    bs.addMiddleware('', (req, res, next) => (calls.push('plain'), next()))
    assert.deepEqual(handed, { rules: 1, middleware: 1 }, 'a middleware')
    bs.addMiddleware('', (req, res, next) => (calls.push('override'), next()), { override: true })
    assert.deepEqual(handed, { rules: 1, middleware: 2 }, 'another')
    bs.resetMiddlewareStack()
    assert.deepEqual(handed, { rules: 1, middleware: 2 }, 'nothing changed since')
    bs.serveFile('/plugin.js', { type: 'text/javascript', content: 'window.plugin = 1' })
    assert.deepEqual(handed, { rules: 1, middleware: 3 }, 'a served file')
    bs.resetMiddlewareStack()
    assert.deepEqual(handed, { rules: 1, middleware: 3 }, 'nothing changed since')
    const res = await page(bs.server)
    assert.ok(res.text.includes('>one</a>'), res.text)
    assert.deepEqual(calls, ['override', 'plain'], 'the override entry first, each once')
    assert.equal((await request(bs.server).get('/plugin.js')).text, 'window.plugin = 1')
  })
)

test("through the adapter, only a change of the proxy option is warned about (setOption('proxy'), setOptionIn(['proxy', ...])); other options are not", { timeout: 60000 }, () =>
  withAdapterSite({}, async ({ bs }) => {
    const warnings = []
    bs.logger.warn = (...args) => warnings.push(args.join(' '))
    bs.setOption('reloadDelay', 10)
    bs.setOptionIn(['ghostMode', 'clicks'], false)
    assert.deepEqual(warnings, [])
    bs.setOptionIn(['proxy', 'target'], 'http://127.0.0.1:1')
    assert.equal(warnings.length, 1)
    assert.match(warnings[0], /proxy target cannot change while it runs/)
    bs.setOption('proxy', bs.options.get('proxy'))
    assert.equal(warnings.length, 2)
  })
)
