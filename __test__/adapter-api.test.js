'use strict'
// browser-sync's module API and an instance's life through the adapter, side by side with browser-sync 3
// itself where it has the same thing: create/get/has/reset, the module-level methods with and without an
// instance, plugins given to `use()`, `snippet: false`, the socket options (path, clientPath, namespace,
// domain), and what an instance says while it starts, runs, is paused and stops.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { PassThrough } = require('node:stream')
const { ROOT, HOST, startUpstream, deadPort, connectRefused, withTimeout, until, deferred, tapStderr } = require('./helpers.js')

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

/**
 * Starts `instance` (browser-sync's or the adapter's) on a free loopback port; resolves to its origin.
 * A key of `config` set to undefined is left out (browser-sync's default then).
 */
async function started(instance, config) {
  const port = await deadPort()
  const given = Object.fromEntries(Object.entries({ ...QUIET, listen: HOST, port, ...config }).filter(([, value]) => value !== undefined))
  const err = await new Promise((resolve) => instance.init(given, resolve))
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
async function clientScript(origin, clientPath, pageOrigin = origin) {
  const script = await (await fetch(`${origin}${clientPath}/browser-sync-client.js`)).text()
  const expression = script.match(/___browserSync___\.socketUrl = (.*);/)?.[1]
  assert.ok(expression, 'the client script sets its socket URL')
  return {
    socketUrl: new Function('location', `return ${expression}`)(new URL(`${pageOrigin}/`)),
    options: JSON.parse(script.match(/___browserSync___\.options = (.*);/)[1]),
  }
}

test("the module's API without a running instance is browser-sync 3's: names, emitters, get/has, stream() passing files through, reset()", () => {
  const api = adapter.withBrowserSync('browser-sync')
  // The same members as browser-sync 3's module and instances, and one more each.
  const members = (object) => Object.getOwnPropertyNames(object).filter((key) => !['length', 'name', 'prototype'].includes(key)).sort()
  assert.deepEqual(members(api), [...members(browserSync3), 'withBrowserSync'].sort())
  assert.deepEqual(members(api.create('members')), [...members(browserSync3.create('members')), 'proxy'].sort())
  api.reset()
  browserSync3.reset()
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
    // Module-level notify() and watch() act on the module-level instance.
    const notified = new Promise((resolve) => bs.events.once('browser:notify', resolve))
    api.notify('from the module')
    assert.equal((await withTimeout(notified, 5000, 'browser:notify')).message, 'from the module')
    const watcher = api.watch('no-such-dir-*/*.css')
    assert.equal(typeof watcher.close, 'function', 'a chokidar watcher')
    await watcher.close()
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

test("an instance's life: init returns browser-sync's instance; a second init() while the first starts is refused naming it; active once the site answers; paused, sockets; browser-sync's own cleanup stops the proxy; init again after exit", { timeout: 60000 }, async () => {
  const upstream = await pageSite()
  const bs = adapter.create('life')
  try {
    const first = deferred()
    const second = deferred()
    let startDone = false
    const returned = bs.init({ ...QUIET, proxy: upstream.url, port: 0 }, (err) => {
      startDone = true
      return err ? first.reject(err) : first.resolve()
    })
    assert.equal(returned, bs.instance, "init returns browser-sync's instance, as browser-sync's does")
    assert.equal(bs.init({ ...QUIET, proxy: upstream.url, port: 0 }, second.resolve), undefined)
    assert.equal((await withTimeout(second.promise, 20000, "the second init's callback")).message, 'Instance: life is already running!')
    // Looked at on every turn of the event loop while it starts (browser-sync is up before the proxy):
    // never active before the site answers.
    let looks = 0
    while (!startDone) {
      assert.ok(!bs.active || bs.proxy !== null, 'active while the site is not served yet')
      looks++
      await new Promise((resolve) => setImmediate(resolve))
    }
    assert.ok(looks > 1)
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

    // The same instance starts again; exit() makes it inactive at once, as browser-sync's.
    const third = deferred()
    bs.init({ ...QUIET, proxy: upstream.url, port: 0 }, (err) => (err ? third.reject(err) : third.resolve()))
    await withTimeout(third.promise, 20000, "the third init's callback")
    port = bs.proxy.port
    assert.equal((await fetch(`http://${HOST}:${port}/`)).status, 200)
    let stopped = false
    bs.instance.server.once('close', () => {
      stopped = true
    })
    const exiting = bs.exit()
    assert.equal(bs.active, false)
    await exiting
    assert.equal(stopped, true, "exit() resolves once the proxy has stopped (bs.server's close event)")
    assert.equal(await connectRefused(port), true)
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

  test(`a config without proxy is browser-sync's own snippet mode; ui: false starts no UI; exit() ends it at once: ${name}`, { timeout: 60000 }, async () => {
    const bs = create()
    try {
      const origin = await started(bs, {})
      assert.equal(bs.getOption('mode'), 'snippet')
      assert.equal(bs.active, true)
      assert.equal(bs.instance.ui, undefined, 'no UI')
      assert.equal((await fetch(`${origin}/browser-sync/browser-sync-client.js`)).status, 200, "browser-sync's own server")
      if (name === 'adapter') assert.equal(bs.proxy, null, 'no native proxy')
      const exiting = bs.exit()
      assert.equal(bs.active, false, 'not active once exit() returns')
      await exiting
    } finally {
      await bs.exit()
    }
  })

  test(`middleware: proxy.middleware runs once a request; a top-level middleware wins over it: ${name}`, { timeout: 60000 }, async () => {
    const upstream = await pageSite()
    const calls = []
    const tagged = (tag) => (req, res, next) => {
      calls.push(tag)
      res.setHeader('x-tag', tag)
      next()
    }
    const onlyProxy = create()
    const both = create()
    const stderr = tapStderr()
    const ignored = /proxy\.middleware is ignored because middleware is given/g
    try {
      let origin = await started(onlyProxy, { proxy: { target: upstream.url, middleware: [tagged('proxy')] } })
      let answer = await fetch(`${origin}/`)
      assert.equal(answer.headers.get('x-tag'), 'proxy')
      assert.deepEqual(calls.splice(0), ['proxy'], 'once')
      assert.doesNotMatch(stderr.text(), ignored, 'nothing is said about proxy.middleware given alone')
      origin = await started(both, { proxy: { target: upstream.url, middleware: [tagged('proxy')] }, middleware: [tagged('top')] })
      answer = await fetch(`${origin}/`)
      assert.equal(answer.headers.get('x-tag'), 'top')
      assert.deepEqual(calls.splice(0), ['top'])
      // browser-sync ignores proxy.middleware in silence; the adapter says so (start()'s warning), once.
      assert.equal(stderr.text().match(ignored)?.length ?? 0, name === 'adapter' ? 1 : 0, stderr.text())
    } finally {
      stderr.restore()
      await onlyProxy.exit()
      await both.exit()
      await upstream.close()
    }
  })

  test(`browser-sync's HTTP protocol (/__browser_sync__?method=reload) answers on the site's origin: ${name}`, { timeout: 60000 }, async () => {
    const upstream = await pageSite()
    const bs = create()
    try {
      const origin = await started(bs, { proxy: upstream.url })
      const reloaded = new Promise((resolve) => bs.emitter.once('browser:reload', resolve))
      const answer = await fetch(`${origin}/__browser_sync__?method=reload`)
      assert.equal(answer.status, 200)
      assert.equal(await answer.text(), "Called public API method `.reload()`\nWith args: undefined")
      await withTimeout(reloaded, 10000, 'the browser:reload event')
    } finally {
      await bs.exit()
      await upstream.close()
    }
  })

  test(`open (not given: 'local') opens the site's Local URL with its startPath, in the browser named (an app and its arguments): ${name}`, { timeout: 60000 }, async () => {
    const upstream = await pageSite()
    const log = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'opened-')), 'opened.log')
    process.env.OPENED_LOG = log
    const bs = create()
    try {
      const origin = await started(bs, { proxy: upstream.url, startPath: '/from-start', open: undefined, browser: { app: [process.execPath, path.join(__dirname, 'fixtures', 'record-open.js')] } })
      // The browser is a process of its own: its line is waited for.
      await until(() => fs.existsSync(log) && fs.readFileSync(log, 'utf8').endsWith('\n'), 20000, 'a browser opened')
      assert.equal(fs.readFileSync(log, 'utf8'), `${origin}/from-start\n`, 'the Local URL: listen given, its address')
    } finally {
      await bs.exit()
      await upstream.close()
      fs.rmSync(path.dirname(log), { recursive: true, force: true })
    }
  })

  test(`a file a plugin serves with serveFile() while browser-sync starts is on the site; bs.server at that time: ${name}`, { timeout: 60000 }, async () => {
    const upstream = await pageSite()
    const bs = create()
    try {
      let serverAtStart = null
      bs.use({
        'plugin:name': 'serves-a-file',
        plugin: (options, instance) => {
          serverAtStart = instance.server
          instance.serveFile('/from-plugin.css', { type: 'text/css', content: 'body{}' })
        },
      })
      const origin = await started(bs, { proxy: upstream.url })
      // The README's difference: a plugin starts before the proxy listens, on browser-sync's own server.
      if (name === 'adapter') assert.notEqual(serverAtStart.address().port, Number(new URL(origin).port))
      else assert.equal(serverAtStart, bs.instance.server)
      const answer = await fetch(`${origin}/from-plugin.css`)
      assert.equal(answer.status, 200)
      assert.equal(answer.headers.get('content-type'), 'text/css')
      assert.equal(await answer.text(), 'body{}')
      assert.equal(await (await fetch(`${origin}/`, { headers: { accept: 'text/html' } })).text(), PAGE.replace('<body>', `<body>${name === 'adapter' ? bs.getOption('snippet').trim() : bs.getOption('snippet')}`), 'the site still proxied (the adapter injects the snippet without its newline)')
    } finally {
      await bs.exit()
      await upstream.close()
    }
  })

  test(`a plugin's server:middleware runs on the site; a target's path is the start path in the URLs: ${name}`, { timeout: 60000 }, async () => {
    const upstream = await pageSite()
    const bs = create()
    try {
      bs.use({
        'plugin:name': 'gives-middleware',
        plugin() {},
        hooks: {
          'server:middleware': () => (req, res, next) => {
            res.setHeader('x-from-plugin', 'yes')
            next()
          },
        },
      })
      const origin = await started(bs, { proxy: `${upstream.url}/start.html` })
      assert.equal((await fetch(`${origin}/`)).headers.get('x-from-plugin'), 'yes')
      assert.equal(bs.getOption('urls').get('local'), `${origin}/start.html`)
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
      // The page as another machine opens it (by name, not 127.0.0.1): the socket is on its origin too.
      const pageOrigin = `http://localhost:${new URL(origin).port}`
      const client = await clientScript(origin, '/bs-client', pageOrigin)
      const socketUrl = new URL(client.socketUrl, `${pageOrigin}/`)
      assert.equal(socketUrl.origin, pageOrigin, "the client's socket is on the page's origin")
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

test('reset() stops the running instances and forgets the module-level one: its methods do nothing after', { timeout: 60000 }, async () => {
  const api = adapter.withBrowserSync('browser-sync')
  const upstream = await pageSite()
  try {
    const ready = deferred()
    api({ ...QUIET, proxy: upstream.url, port: 0 }, (err) => (err ? ready.reject(err) : ready.resolve()))
    await withTimeout(ready.promise, 20000, "the module-level init's callback")
    const other = api.create()
    await started(other, { proxy: upstream.url })
    const ports = [api.get('singleton').proxy.port, other.proxy.port]
    api.reset()
    // The stops reset() starts cannot be awaited: looked at until the ports are free.
    for (const port of ports) await until(() => connectRefused(port), 10000, `port ${port} freed`)
    assert.equal(api.active, false)
    assert.equal(api.exit(), undefined, 'no module-level instance to exit')
  } finally {
    await upstream.close()
  }
})

test("init without a callback prints nothing when it succeeds; a failed start frees the site's port it held", { timeout: 60000 }, async () => {
  const upstream = await pageSite()
  const printed = []
  const consoleError = console.error
  console.error = (...args) => printed.push(args.join(' '))
  const quiet = adapter.create()
  const failing = adapter.create()
  try {
    const ready = deferred()
    quiet.init({ ...QUIET, proxy: upstream.url, port: 0, callbacks: { ready: () => ready.resolve() } })
    await withTimeout(ready.promise, 20000, 'callbacks.ready')
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(quiet.active, true)
    assert.deepEqual(printed, [])

    // Refused by browser-sync (its init's callback), then by start().
    for (const [bad, message] of [
      [{ watchOptions: 5 }, /invalid keyPath/],
      [{ rewriteRules: [{ match: /x(?<=[^y]*)b/, replace: 'x' }] }, /rewriteRules\[0\]/],
    ]) {
      const port = await deadPort()
      const err = await new Promise((resolve) => failing.init({ ...QUIET, proxy: upstream.url, port, ...bad }, resolve))
      assert.match(err.message, message)
      assert.equal(await connectRefused(port), true, 'the port held while browser-sync started is free again')
    }
  } finally {
    console.error = consoleError
    await quiet.exit()
    await failing.exit()
    await upstream.close()
  }
})

test("the client script's options are browser-sync 3's for the same config (ports aside)", { timeout: 60000 }, async () => {
  const upstream = await pageSite()
  const told = {}
  try {
    for (const [name, create] of contenders) {
      const bs = create()
      try {
        const origin = await started(bs, { proxy: upstream.url, ghostMode: { clicks: false }, reloadDelay: 5, injectChanges: false })
        const { options } = await clientScript(origin, '/browser-sync')
        assert.equal(options.port, Number(new URL(origin).port), name)
        assert.deepEqual(options.urls, { local: origin }, name)
        // `callbacks` and `userPlugins`: the adapter's own config for browser-sync, given to it.
        const { port, urls, callbacks, userPlugins, ...rest } = options
        told[name] = rest
      } finally {
        await bs.exit()
      }
    }
    assert.deepEqual(told.adapter, told['browser-sync 3'])
  } finally {
    await upstream.close()
  }
})

test("a plugin browser-sync cannot load: init's callback gets browser-sync's error, then the process ends with 1, as on browser-sync 3", { timeout: 60000 }, async () => {
  const { execFile } = require('node:child_process')
  // browser-sync calls back with the error and ends the process itself (its `utils.fail`), so the
  // callback is the only place a user sees it: in a child process.
  // Each run its own port: two runs on one port saw each other's listener come and go (ECONNRESET).
  const script = (port) => `
    process.on('exit', (code) => console.log('exit ' + code))
    require(process.argv[1]).create().init(${JSON.stringify({ ...QUIET, proxy: `http://${HOST}:9`, listen: HOST, port, plugins: ['devproxy-no-such-plugin'] })},
      (err, value) => console.log('callback: ' + (err && err.message.split('\\n')[0]) + ', ' + typeof value))`
  const run = async (moduleId) => {
    const code = script(await deadPort())
    return new Promise((resolve) => execFile(process.execPath, ['-e', code, moduleId], { cwd: ROOT, timeout: 30000 }, (err, stdout) => resolve({ code: err?.code ?? 0, stdout })))
  }
  const [adapterRun, browserSyncRun] = await Promise.all([run(`${ROOT}/browser-sync.js`), run('browser-sync')])
  assert.deepEqual(browserSyncRun, { code: 1, stdout: "callback: Cannot find module 'devproxy-no-such-plugin', undefined\nexit 1\n" })
  assert.deepEqual(adapterRun, browserSyncRun)
})

test("browser-sync is the project's: resolved from the working directory first (a project with browser-sync 2 gets it); an installed but broken one gets Node's own error, not 'not installed'", { timeout: 60000 }, async () => {
  const { execFile } = require('node:child_process')
  const projects = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-projects-'))
  try {
    const withOwn = path.join(projects, 'own')
    fs.mkdirSync(path.join(withOwn, 'node_modules'), { recursive: true })
    fs.symlinkSync(path.join(ROOT, 'node_modules/browser-sync-2'), path.join(withOwn, 'node_modules/browser-sync'))
    const broken = path.join(projects, 'broken')
    fs.mkdirSync(path.join(broken, 'node_modules/browser-sync'), { recursive: true })
    fs.writeFileSync(path.join(broken, 'node_modules/browser-sync/package.json'), JSON.stringify({ name: 'browser-sync', exports: { './package.json': './package.json' } }))
    const script = `
      try {
        const bs = require(${JSON.stringify(`${ROOT}/browser-sync.js`)}).create()
        bs.init(${JSON.stringify({ ...QUIET, listen: HOST, port: await deadPort() })}, (err, inner) => {
          console.log(err ? err.message : 'version ' + inner.options.get('version'))
          process.exit(0)
        })
      } catch (err) {
        console.log(err.code)
      }`
    const run = (cwd) =>
      new Promise((resolve, reject) => execFile(process.execPath, ['-e', script], { cwd, timeout: 30000 }, (err, stdout) => (err ? reject(err) : resolve(stdout.trim()))))
    // This package's own browser-sync (3) is also installed where the adapter is: the project's comes first.
    assert.equal(await run(withOwn), `version ${require('browser-sync-2/package.json').version}`)
    assert.equal(await run(broken), 'ERR_PACKAGE_PATH_NOT_EXPORTED')
  } finally {
    fs.rmSync(projects, { recursive: true, force: true })
  }
})
