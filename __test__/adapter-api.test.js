'use strict'
// browser-sync's module API and an instance's life through the adapter, side by side with browser-sync 3
// itself where it has the same thing: create/get/has/reset, the module-level methods with and without an
// instance, plugins given to `use()`, `snippet: false`, the socket options (path, clientPath, namespace,
// domain), and what an instance says while it starts, runs, is paused and stops.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { PassThrough } = require('node:stream')
const { ROOT, HOST, startUpstream, deadPort, connectRefused, withTimeout, deferred } = require('./helpers.js')

const adapter = require(`${ROOT}/browser-sync.js`)
const browserSync3 = require('browser-sync')
const QUIET = { open: false, online: false, ui: false, logLevel: 'silent', notify: false, ghostMode: false }
const PAGE = '<html><head><title>t</title></head><body><p>page</p></body></html>'

function pageSite() {
  return startUpstream({
    '/': (req, res) => {
      res.setHeader('content-type', 'text/html')
      res.end(PAGE)
    },
  })
}

/** Starts `instance` (browser-sync's or the adapter's) on a free loopback port; resolves to its origin. */
async function started(instance, config) {
  const port = await deadPort()
  const err = await new Promise((resolve) => instance.init({ ...QUIET, listen: HOST, port, ...config }, resolve))
  assert.ifError(err)
  return `http://${HOST}:${instance.getOption('port')}`
}

const contenders = [
  ['browser-sync 3', () => browserSync3.create()],
  ['adapter', () => adapter.create()],
]

/**
 * What the client script served at `origin` + `clientPath` is told: its options, and the socket URL it
 * computes in a page of `origin`.
 */
async function clientScript(origin, clientPath) {
  const script = await (await fetch(`${origin}${clientPath}/browser-sync-client.js`)).text()
  const expression = script.match(/___browserSync___\.socketUrl = (.*);/)?.[1]
  assert.ok(expression, 'the client script sets its socket URL')
  return {
    socketUrl: new Function('location', `return ${expression}`)(new URL(`${origin}/`)),
    options: JSON.parse(script.match(/___browserSync___\.options = (.*);/)[1]),
  }
}

test("the module's API without a running instance is browser-sync 3's: names, emitters, get/has, stream() passing files through, reset()", () => {
  const api = adapter.withBrowserSync('browser-sync')
  for (const [name, module] of [['browser-sync 3', browserSync3], ['adapter', api]]) {
    const before = Date.now()
    const unnamed = module.create()
    const empty = module.create('')
    const after = Date.now()
    for (const instance of [unnamed, empty]) {
      assert.equal(typeof instance.name, 'number', `${name}: an instance without a name is named by the time`)
      assert.ok(instance.name >= before && instance.name <= after, name)
      assert.equal(instance.emitter.getMaxListeners(), 20, `${name}: the instance's emitter takes 20 listeners`)
    }
    assert.equal(module.emitter.getMaxListeners(), 20, name)
    assert.equal(module.emitter, module.emitter, `${name}: one module emitter`)
    assert.equal(module.create('named').name, 'named')
    assert.equal(module.has('named'), true)
    assert.equal(module.get('named').name, 'named')
    assert.equal(module.has('missing'), false)
    assert.throws(() => module.get('missing'), { message: 'An instance with the name `missing` was not found.' })
    assert.equal(module.active, false, name)
    assert.equal(module.paused, false, name)

    // Without the module-level instance, the methods do nothing; stream() passes files through.
    for (const [method, ...args] of [['stream'], ['stream', { once: true }], ['reload', { stream: true }]]) {
      const stream = module[method](...args)
      assert.ok(stream instanceof PassThrough, `${name}: ${method}(${JSON.stringify(args)})`)
      const file = { path: 'a.css' }
      stream.write(file)
      assert.equal(stream.read(), file, `${name}: objects pass through`)
    }
    for (const [method, ...args] of [['reload'], ['reload', 'a.css'], ['notify', 'hi'], ['exit'], ['pause'], ['resume']]) {
      assert.equal(module[method](...args), undefined, `${name}: ${method}()`)
    }

    const emitter = module.emitter
    module.reset()
    assert.equal(module.has('named'), false, `${name}: reset() forgets the instances`)
    if (module === api) {
      assert.deepEqual(api.instances, [], 'the instances list is emptied in place (browser-sync 3 replaces it)')
      assert.notEqual(api.emitter, emitter, 'a new module emitter after reset()')
    }
  }
})

test("plugins given to the module's use() are registered on the module-level instance; reset() forgets them; the plugin's exit() stops the proxy", { timeout: 60000 }, async () => {
  const api = adapter.withBrowserSync('browser-sync')
  const upstream = await pageSite()
  try {
    const calls = []
    api.use({ 'plugin:name': 'recorder', plugin: (options, bs) => calls.push({ options, bs }) }, { answer: 42 })
    const ready = deferred()
    api({ ...QUIET, proxy: upstream.url, port: 0 }, (err, bs) => (err ? ready.reject(err) : ready.resolve(bs)))
    const bs = await withTimeout(ready.promise, 20000, "the module-level init's callback")
    assert.equal(calls.length, 1, 'the plugin was registered and started once')
    assert.equal(calls[0].bs, bs)
    assert.equal(calls[0].options.answer, 42, "the plugin's options")
    const port = api.get('singleton').proxy.port
    // A plugin reaches the public API through `bs.publicInstance`: its exit() stops the proxy too.
    await bs.publicInstance.exit()
    assert.equal(await connectRefused(port), true, 'the proxy stopped')
    assert.equal(api.active, false)

    api.reset()
    assert.equal(api.has('singleton'), false)
    const again = deferred()
    api({ ...QUIET, proxy: upstream.url, port: 0 }, (err) => (err ? again.reject(err) : again.resolve()))
    await withTimeout(again.promise, 20000, 'the second module-level init')
    assert.equal(calls.length, 1, 'reset() forgot the plugin')
    assert.equal((await fetch(api.get('singleton').proxy.url + '/')).status, 200)
    await api.exit()
  } finally {
    await upstream.close()
  }
})

test("an instance's life: a second init() while the first starts is refused naming it; active once the site answers; paused, sockets; browser-sync's own cleanup stops the proxy; init again after exit", { timeout: 60000 }, async () => {
  const upstream = await pageSite()
  const bs = adapter.create('life')
  try {
    const first = deferred()
    const second = deferred()
    bs.init({ ...QUIET, proxy: upstream.url, port: 0 }, (err) => (err ? first.reject(err) : first.resolve()))
    assert.equal(bs.active, false, 'not active while starting')
    bs.init({ ...QUIET, proxy: upstream.url, port: 0 }, second.resolve)
    assert.equal((await withTimeout(second.promise, 20000, "the second init's callback")).message, 'Instance: life is already running!')
    await withTimeout(first.promise, 20000, "the first init's callback")
    assert.equal(bs.active, true)
    assert.equal(bs.sockets, bs.instance.io.sockets, "a running instance's sockets are browser-sync's")
    bs.pause()
    assert.equal(bs.paused, true)
    bs.resume()
    assert.equal(bs.paused, false)
    assert.equal(bs.getOption('open'), false, 'the open option given is kept')

    // browser-sync's own cleanup (its process-exit handler, plugins) stops the proxy too.
    let port = bs.proxy.port
    const closed = new Promise((resolve) => bs.instance.server.once('close', resolve))
    bs.instance.cleanup()
    await withTimeout(closed, 10000, "bs.server's close event")
    assert.equal(bs.proxy, null)
    assert.equal(await connectRefused(port), true)
    await bs.exit()
    assert.equal(bs.active, false)
    assert.equal(typeof bs.sockets.emit, 'function', 'a stopped instance still has sockets to call (no-ops)')

    // The same instance starts again.
    const third = deferred()
    bs.init({ ...QUIET, proxy: upstream.url, port: 0 }, (err) => (err ? third.reject(err) : third.resolve()))
    await withTimeout(third.promise, 20000, "the third init's callback")
    port = bs.proxy.port
    assert.equal((await fetch(`http://${HOST}:${port}/`)).status, 200)
    const exited = new Promise((resolve) => bs.instance.server.once('close', resolve))
    await bs.exit()
    await withTimeout(exited, 10000, "bs.server's close event on exit()")
  } finally {
    await bs.exit()
    await upstream.close()
  }
})

for (const [name, create] of contenders) {
  test(`snippet: false serves pages as the site sends them: ${name}`, { timeout: 60000 }, async () => {
    const upstream = await pageSite()
    const bs = create()
    try {
      const origin = await started(bs, { proxy: upstream.url, snippet: false })
      const answer = await fetch(`${origin}/`, { headers: { accept: 'text/html' } })
      assert.equal(await answer.text(), PAGE)
    } finally {
      await bs.exit()
      await upstream.close()
    }
  })

  test(`socket options: custom path, clientPath and namespace reach browser-sync through the site's origin; a domain given is used: ${name}`, { timeout: 60000 }, async () => {
    const upstream = await pageSite()
    const socket = { path: '/bs-io/socket.io', clientPath: '/bs-client', namespace: '/bs-ns' }
    const custom = create()
    const withDomain = create()
    try {
      const origin = await started(custom, { proxy: upstream.url, socket })
      const page = await (await fetch(`${origin}/`, { headers: { accept: 'text/html' } })).text()
      assert.match(page, /script\.src = '\/bs-client\/browser-sync-client\.js\?v=/, 'the snippet loads the client from clientPath')
      const client = await clientScript(origin, '/bs-client')
      const socketUrl = new URL(client.socketUrl, `${origin}/`)
      assert.equal(socketUrl.origin, origin, "the client's socket is on the page's origin")
      assert.equal(socketUrl.pathname, '/bs-ns')
      assert.equal(client.options.mode, 'proxy', "the client's options are proxy mode's")
      assert.equal(client.options.port, Number(new URL(origin).port), "the client's options hold the site's port")
      const handshake = await fetch(`${origin}/bs-io/socket.io/?EIO=4&transport=polling`)
      assert.equal(handshake.status, 200)
      assert.match(await handshake.text(), /^0\{"sid":/, "socket.io's handshake on the custom path")

      const domainOrigin = await started(withDomain, { proxy: upstream.url, socket: { domain: 'localhost:{port}' } })
      const { socketUrl: url } = await clientScript(domainOrigin, '/browser-sync')
      assert.equal(url, `localhost:${new URL(domainOrigin).port}/browser-sync`, 'the domain given, {port} the site port')
    } finally {
      await custom.exit()
      await withDomain.exit()
      await upstream.close()
    }
  })
}
