'use strict'
// `require('devproxy-native/browser-sync')`: browser-sync's API, with devproxy-native serving the site.
//
// The real browser-sync package (the user's, resolved from their project) runs without `proxy`, in
// its snippet mode, on a loopback port of its own: it watches files, serves its client script and
// socket.io, runs the UI and ghost mode. devproxy-native's `start()` serves the site, injects
// browser-sync's own snippet with a same-origin script path, and routes browser-sync's paths (HTTP and
// WebSocket) to browser-sync's server, so the page, the client script and the socket share one origin
// as with Browsersync's proxy mode. Once the proxy listens, browser-sync's options are set to what its
// proxy mode would hold (mode, proxy, port, urls), so its banner, `open`, `getOption` and its client
// script say the truth, and the events it announced its start with (`init`, `service:running`) follow.

const net = require('node:net')
const { createRequire } = require('node:module')
const { PassThrough } = require('node:stream')
const { EventEmitter } = require('node:events')
const { start, resolveReqHeaders } = require('./start.js')
const { splitOptions, unknownOptions, applyHttpModule } = require('./browser-sync-options.js')
const binding = require('./native.js')
const { attachSite, proxyOption, listOf } = require('./browser-sync-site.js')
const { version } = require('../package.json')

const LOOPBACK = '127.0.0.1'

/**
 * Proxies stopping and not stopped yet, of every instance: a new instance waits for them, so that
 * `bs.cleanup(); browserSync.init(...)` gets the port the last one freed (as with Browsersync, whose
 * servers close synchronously enough for that).
 */
const stopping = new Set()

/**
 * Loads browser-sync `id` as the user's project sees it (their cwd first, then where this package
 * is installed), with the internals the adapter reuses so that it behaves as that version does.
 */
function loadBrowserSync(id) {
  let entry
  try {
    entry = require.resolve(id, { paths: [process.cwd(), __dirname] })
  } catch (err) {
    if (err.code !== 'MODULE_NOT_FOUND') throw err
    const missing = new Error(
      `devproxy-native/browser-sync needs the browser-sync package (\`${id}\`), which is not installed in ` +
        `${process.cwd()}: run \`npm i -D browser-sync\``,
    )
    missing.code = 'MODULE_NOT_FOUND'
    throw missing
  }
  const from = createRequire(entry)
  return {
    browserSync: from(entry),
    parseArgs: from('./args'),
    isStreamArg: from('./public/public-utils').isStreamArg,
    defaults: from('./default-config'),
    Immutable: from('immutable'),
    devIp: from('dev-ip'),
    chalk: from('chalk'),
    // browser-sync's module-level logger (its index.js makes the same one).
    logger: from('eazy-logger').Logger({ useLevelPrefixes: true }),
  }
}

/** Warnings about the config, said whatever the log level, with browser-sync's prefix. */
function warn(config, lines) {
  const prefix = typeof config.logPrefix === 'string' ? config.logPrefix : 'Browsersync'
  for (const line of lines) process.stderr.write(`[${prefix}] ${line}\n`)
}

/** A free port on the loopback address, for browser-sync's own server (it scans upwards from it). */
function freeLoopbackPort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer()
    probe.once('error', reject)
    probe.listen(0, LOOPBACK, () => {
      const { port } = probe.address()
      probe.close(() => resolve(port))
    })
  })
}

/**
 * Browsersync takes the site's port before its UI's, so the UI moves on when they collide (3000 in
 * use: the site on 3001, the UI on 3002). The proxy listens only once browser-sync runs, so the
 * site's port is held meanwhile by a placeholder listener: the first free port from `port` (3000 by
 * default) on the proxy's address. `release()` frees it just before the proxy takes it. Null when
 * there is nothing to hold (`port: 0`, `strictPort`, a port start() will refuse anyway).
 */
async function reserveSitePort({ port = 3000, strictPort, listen, host }) {
  if (strictPort || !Number.isInteger(port) || port < 1 || port > 65535) return null
  const address = listen || host || LOOPBACK
  for (let candidate = port; candidate <= Math.min(port + 100, 65535); candidate++) {
    const placeholder = net.createServer()
    const outcome = await new Promise((resolve) => {
      placeholder.once('error', (err) => resolve(err.code))
      placeholder.listen(candidate, address, () => resolve('listening'))
    })
    if (outcome === 'listening') {
      placeholder.unref()
      return { port: candidate, release: () => new Promise((resolve) => placeholder.close(() => resolve())) }
    }
    if (outcome !== 'EADDRINUSE') return null
  }
  return null
}

/**
 * Holds `events` on `emitter` until `release()`: browser-sync announces `init` and `service:running`
 * (its banner, `open`; plugins and users start work on them) before the proxy listens. They are
 * emitted once it does, in the order they came, with `replaced[event]` as their arguments if given.
 */
function holdEvents(emitter, events) {
  const hadOwn = Object.hasOwn(emitter, 'emit')
  const original = emitter.emit
  const held = []
  emitter.emit = function (name, ...args) {
    if (!events.includes(name)) return original.call(this, name, ...args)
    held.push({ name, args })
    return true
  }
  const restore = () => {
    if (hadOwn) emitter.emit = original
    else delete emitter.emit
  }
  return {
    release(replaced) {
      restore()
      for (const { name, args } of held) emitter.emit(name, ...(replaced[name] ?? args))
    },
    drop: restore,
  }
}

/**
 * The site's URLs as Browsersync's getUrlOptions() makes them: `listen` given, that address alone;
 * otherwise Local on `localhost`, and (online) External on the `host` given. Better than it where it
 * prints what cannot be opened: an IPv6 address in brackets, a wildcard listener's External the
 * machine's first IP (not `0.0.0.0`), none when `detect: false` (not `http://false:3000`). Without a
 * `host` the proxy listens on loopback only, so there is no External (Browsersync listens on all
 * interfaces).
 */
function siteUrls(server, proxyOptions, bsOptions, devIp) {
  const scheme = server.url.startsWith('https:') ? 'https' : 'http'
  const { listen, host } = proxyOptions
  const isWildcard = (address) => address === '0.0.0.0' || address === '::'
  const startPath = proxyOptions.startPath ? String(proxyOptions.startPath).replace(/^\/?/, '/') : ''
  const url = (name) => `${scheme}://${name.includes(':') ? `[${name}]` : name}:${server.port}${startPath}`
  if (listen && !isWildcard(listen)) return { scheme, urls: { local: url(listen) } }
  const urls = { local: url('localhost') }
  const exposed = listen || host
  if (bsOptions.get('online') === false && !listen) return { scheme, urls }
  if (exposed && isWildcard(exposed)) {
    const ips = bsOptions.get('detect') === false ? [] : devIp()
    if (ips.length) urls.external = url(ips[0])
  } else if (exposed && exposed !== 'localhost') {
    urls.external = url(exposed)
  }
  return { scheme, urls }
}

/** The path prefixes browser-sync answers on: client script, socket.io, and its HTTP protocol. */
function browserSyncRoutes(bsOptions, bsPort) {
  const target = `http://${LOOPBACK}:${bsPort}`
  const prefixes = new Set([
    bsOptions.getIn(['socket', 'clientPath']),
    bsOptions.getIn(['socket', 'path']),
    '/__browser_sync__',
  ])
  const routes = {}
  for (const prefix of prefixes) routes[prefix] = target
  return routes
}

/**
 * Where the clients of browser-sync `bs` connect. `''` makes the page's socket URL relative (same
 * origin as the page, through the proxy). A connector made for another namespace (the UI's, on the
 * UI's own port) keeps connecting to browser-sync's server directly.
 */
function socketDomain(bs) {
  return (options) =>
    options.getIn(['socket', 'namespace']) === bs.options.getIn(['socket', 'namespace']) ? '' : `http://${LOOPBACK}:{port}`
}

/**
 * browser-sync builds its client script once, when its server starts, from the options of then: its
 * own port and snippet mode. Rebuilt (as its `getMiddlewares` does) once the options say proxy mode and
 * the site's port, so that the script's options and a `socket.domain` with `{port}` are Browsersync's.
 */
function refreshClientScript(bs) {
  const clientJs = bs.pluginManager.hook('client:js', { port: bs.options.get('port'), options: bs.options })
  const scripts = bs.pluginManager.get('client:script')(bs.options.toJS(), clientJs, 'middleware')
  for (const entry of bs.app.stack) {
    if (entry.id === 'Browsersync Client' || entry.id === 'Browsersync Client - versioned') entry.handle = scripts
  }
}

/**
 * The browser-sync API backed by browser-sync module `moduleId` (resolved from the user's project).
 * The package exports one for `'browser-sync'`; `withBrowserSync(id)` makes others (tests use it for
 * browser-sync 2 and 3 side by side).
 */
function createAdapter(moduleId) {
  let loaded = null
  const load = () => (loaded ??= loadBrowserSync(moduleId))
  const instances = []
  const singletonPlugins = []
  let singleton = null
  let singletonEmitter = null

  /** Create an instance, as `browserSync.create(name)`. Throws when browser-sync is not installed. */
  function create(name, emitter) {
    const lib = load()
    // browser-sync names it (by the time when none is given) and makes its emitter when none is given.
    const inner = lib.browserSync.create(name, emitter)
    name = inner.name
    const bs = inner.instance
    let server = null
    let view = null
    let starting = false

    /** Stops the proxy if it runs; resolves once its port is free. */
    function stopProxy() {
      const running = server
      server = null
      if (!running) return Promise.resolve()
      const stopped = running.stop().finally(() => {
        stopping.delete(stopped)
        view?.stopped()
      })
      stopping.add(stopped)
      return stopped
    }

    /** Returns what browser-sync's init returns: its instance (`bs`), or nothing for a refused config. */
    function init(...args) {
      const { config, cb } = lib.parseArgs(args)
      let called = false
      const done = (err, value) => {
        if (called) return
        called = true
        if (typeof cb === 'function') cb(err, value)
        else if (err) console.error(`[Browsersync] ${err.message}`)
      }
      if (starting || inner.active) {
        done(new Error(`Instance: ${name} is already running!`))
        return undefined
      }
      // Keys nobody reads: browser-sync would drop them in silence. Said whatever the log level.
      if (config && typeof config === 'object') warn(config, unknownOptions(config, lib.defaults, binding.__closestName))
      if (!config || !config.proxy) {
        // Nothing to proxy (server or snippet mode): browser-sync as it is.
        return inner.init(config, cb)
      }
      if (config.server) {
        // As browser-sync's own check says (its proxy and server modes exclude each other).
        done(new Error('Invalid config. You cannot specify both server & proxy options.'))
        return undefined
      }
      starting = true
      let reservation = null
      const fail = (err, stopBrowserSync) => {
        starting = false
        reservation?.release()
        if (stopBrowserSync) inner.exit()
        done(err)
      }
      const { proxyOptions, bsOptions } = splitOptions(config)
      const { listen: uiListen, ...uiWithoutListen } = bsOptions.ui ?? {}
      if (uiListen !== undefined) {
        warn(config, [
          "option `ui.listen` is not used: browser-sync's UI listens where its own server does, on 127.0.0.1 " +
            'through the adapter (browser-sync replaces `ui.listen` with `listen`)',
        ])
      }
      const { ready, ...callbacks } = bsOptions.callbacks ?? {}
      // The site's port is held once the proxies still stopping have freed theirs (an init right after
      // cleanup() gets the same port).
      const bsPortFound = Promise.allSettled([...stopping]).then(async () => {
        reservation = await reserveSitePort(proxyOptions)
        return freeLoopbackPort()
      })
      bsPortFound.then((bsPort) => {
        const bsConfig = {
          ...bsOptions,
          callbacks,
          port: bsPort,
          listen: LOOPBACK,
          open: false,
          // The snippet browser-sync's proxy mode injects: a same-origin path to its client script.
          scriptPath: (path) => path,
          socket: { ...bsOptions.socket, domain: bsOptions.socket?.domain ?? socketDomain(bs) },
          // Its UI listens where its server does (browser-sync sets `ui.listen` to `listen`): loopback.
          ui: bsOptions.ui === false ? false : uiWithoutListen,
        }
        const running = holdEvents(bs.events, ['init', 'service:running'])
        try {
          inner.init(bsConfig, (err) => {
            if (err) {
              running.drop()
              return fail(err, inner.active)
            }
            // The user's callbacks run outside this chain: an exception in them is theirs, not a
            // failed start that would stop what runs.
            startProxy(proxyOptions, config, running, reservation).then(
              () => {
                if (typeof ready === 'function') ready.call(instance, null, bs)
                done(null, bs)
              },
              (err) => {
                running.drop()
                stopProxy().catch(() => {})
                fail(err, true)
              },
            )
          })
        } catch (err) {
          running.drop()
          fail(err, inner.active)
        }
      }, fail)
      return bs
    }

    async function startProxy(split, config, running, reservation) {
      const { options: proxyOptions, warnings } = applyHttpModule(split)
      if (reservation) {
        await reservation.release()
        proxyOptions.port = reservation.port
      }
      warn(config, warnings)
      const routes = { ...proxyOptions.routes, ...browserSyncRoutes(bs.options, bs.options.get('port')) }
      const proxyConfig = { ...proxyOptions, routes, proxy: resolveReqHeaders(proxyOptions.proxy, bs, proxyOption(config)) }
      // browser-sync's snippet for its options, or false (`snippet: false`: none).
      proxyConfig.snippet = bs.options.get('snippet')
      // The user's middleware (top-level `middleware` wins over `proxy.middleware`, as in
      // Browsersync), then those plugins gave through the `server:middleware` hook.
      const fromProxy = config.proxy.middleware // undefined for a URL string
      const given = listOf(config.middleware ?? fromProxy)
      const middleware = [...given, ...listOf(bs.options.get('middleware'))]
      if (config.middleware == null && fromProxy != null) {
        const { middleware: _, ...proxy } = proxyConfig.proxy
        proxyConfig.proxy = proxy
      }
      proxyConfig.middleware = middleware
      server = await start(proxyConfig)
      starting = false
      const { scheme, urls } = siteUrls(server, { ...proxyOptions, startPath: proxyOptions.startPath ?? server.startPath }, bs.options, lib.devIp)
      view = attachSite(bs, lib, server, config, middleware, stopProxy)
      bs.registerCleanupTask(() => {
        stopProxy().catch(() => {})
      })
      bs.setMany((options) => {
        // The UI's Local URL on `localhost`, as Browsersync prints it (it listens on loopback here).
        const uiUrls = options
          .get('urls')
          .filter((_, key) => key.startsWith('ui'))
          .map((value, key) => (key === 'ui' ? value.replace(`//${LOOPBACK}:`, '//localhost:') : value))
        options.set('mode', 'proxy')
        options.set('port', server.port)
        options.set('scheme', scheme)
        options.set('urls', lib.Immutable.fromJS(urls).merge(uiUrls))
        options.set('open', config.open === undefined ? 'local' : config.open)
      })
      refreshClientScript(bs)
      running.release({
        'service:running': [
          {
            options: bs.options,
            type: 'proxy',
            port: server.port,
            url: urls.local,
            urls: bs.options.get('urls').toJS(),
          },
        ],
      })
      bs.logger.info('Native proxy on: devproxy-native %s serves the site (streamed, compression kept)', version)
    }

    /** Stops browser-sync (watchers, sockets, UI) and the proxy; resolves when the port is free. */
    function exit() {
      // Without a proxy, browser-sync stops at once, as its exit() does (`active` is false after it).
      if (server === null) {
        inner.exit()
        return Promise.resolve()
      }
      // The proxy first, so that no request reaches browser-sync's server after it has closed.
      return stopProxy().finally(() => inner.exit())
    }

    const instance = {
      name,
      instance: bs,
      init,
      exit,
      notify: inner.notify,
      pause: inner.pause,
      resume: inner.resume,
      reload: inner.reload,
      stream: inner.stream,
      cleanup: (cb) => {
        stopProxy().catch(() => {})
        return inner.cleanup(cb)
      },
      use: inner.use,
      getOption: inner.getOption,
      emitter: inner.emitter,
      watch: inner.watch,
    }
    Object.defineProperties(instance, {
      // Not while the proxy starts (browser-sync, in its snippet mode then, is up before it).
      active: { get: () => inner.active && !starting && (server !== null || !inner.getOption('proxy')) },
      paused: { get: () => inner.paused },
      sockets: { get: () => inner.sockets },
      /** devproxy-native's `ProxyServer` serving the site (null before init's callback and after exit). */
      proxy: { get: () => server },
    })
    // Plugins reach the public API through `bs.publicInstance`: this one, so that its `exit()` and
    // `cleanup()` stop the proxy too.
    bs.publicInstance = instance
    instances.push(instance)
    return instance
  }

  function getSingle(name) {
    return instances.find((item) => item.name === name) || false
  }

  function getSingletonEmitter() {
    if (!singletonEmitter) {
      singletonEmitter = new EventEmitter()
      singletonEmitter.setMaxListeners(20) // as browser-sync's
    }
    return singletonEmitter
  }

  /** `require('devproxy-native/browser-sync')(config, cb)`: the module-level instance. */
  function initSingleton(...args) {
    const existing = getSingle('singleton')
    if (existing) {
      const { logger, chalk } = load()
      logger.error(chalk.yellow('You tried to start Browsersync twice!'), 'To create multiple instances, use', chalk.cyan('browserSync.create().init()'))
      return existing
    }
    singleton = create('singleton', getSingletonEmitter())
    for (const plugin of singletonPlugins) singleton.instance.registerPlugin(...plugin)
    singleton.init(...args)
    return singleton
  }

  /** Module-level methods act on the singleton, and do nothing (stream: pass through) without one. */
  function delegate(name) {
    return (...args) => {
      if (singleton) return singleton[name](...args)
      if (load().isStreamArg(name, args)) return new PassThrough({ objectMode: true })
      return undefined
    }
  }

  const api = initSingleton
  Object.assign(api, {
    init: initSingleton,
    create,
    get(name) {
      const instance = getSingle(name)
      if (instance) return instance
      throw new Error(`An instance with the name \`${name}\` was not found.`)
    },
    has: (name) => Boolean(getSingle(name)),
    use: (...args) => {
      singletonPlugins.push(args)
    },
    reload: delegate('reload'),
    stream: delegate('stream'),
    notify: delegate('notify'),
    exit: delegate('exit'),
    watch: delegate('watch'),
    pause: delegate('pause'),
    resume: delegate('resume'),
    instances,
    /** Stops every instance and forgets them (for tests, as browser-sync's `reset`). */
    reset() {
      for (const instance of instances.splice(0)) instance.cleanup()
      singletonPlugins.length = 0
      singletonEmitter = null
      singleton = null
    },
    withBrowserSync: createAdapter,
  })
  Object.defineProperties(api, {
    emitter: { get: getSingletonEmitter },
    active: { get: () => (getSingle('singleton') ? getSingle('singleton').active : false) },
    paused: { get: () => (getSingle('singleton') ? getSingle('singleton').paused : false) },
  })
  return api
}

module.exports = { createAdapter }
