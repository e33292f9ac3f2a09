'use strict'
// Browsersync's instance API for the site, acting on devproxy-native's proxy. Through the adapter,
// browser-sync's own server only serves its client script and socket; the site is the native proxy.
// So the parts of a `BrowserSync` instance that stand for the site are pointed at the proxy:
// - `bs.server`: a view of the proxy (`address()`, `listening`, `close()`), what supertest and
//   `server.address().port` users need;
// - `bs.options`: `proxy`, `startPath`, `rewriteRules` and `middleware` hold what Browsersync's proxy
//   mode holds (the user's rules and middleware, then one entry standing for the proxy);
// - `bs.resetMiddlewareStack()`, which every rule and middleware method of Browsersync's instance
//   ends with (`addRewriteRule`, `removeRewriteRule`, `setRewriteRules`, `addMiddleware`,
//   `removeMiddleware`), hands the options' rules and middleware to the running proxy.

const { EventEmitter } = require('node:events')
const url = require('node:url')

/** The id Browsersync gives the proxy's own entry at the end of `options.middleware`. */
const PROXY_ENTRY_ID = 'Browsersync Proxy'
/** The ids `bs.serveFile()` gives its entries on browser-sync's server (2.x and 3.x). */
const SERVE_FILE_ID = /^Browsersync - \d+$/

/**
 * `bs.server` through the adapter: the native proxy seen as far as a Node server can be. It is not an
 * `http.Server`: there are no `request` or `upgrade` events to attach handlers to (middleware and
 * rules do that job), and `listen()` cannot start it again.
 */
class ProxyServerView extends EventEmitter {
  #server
  #stop

  /** `server`: the running `ProxyServer`; `stop()`: stops it (and resolves once the port is free). */
  constructor(server, stop) {
    super()
    this.#server = server
    this.#stop = stop
  }

  /** devproxy-native's `ProxyServer`, or null once it stopped. */
  get proxy() {
    return this.#server
  }

  get listening() {
    return this.#server !== null
  }

  /** As `net.Server#address()`: where the proxy listens, null once it stopped. */
  address() {
    if (this.#server === null) return null
    const { hostname } = new URL(this.#server.url)
    const address = hostname.replace(/^\[|\]$/g, '')
    return { address, family: address.includes(':') ? 'IPv6' : 'IPv4', port: this.#server.port }
  }

  listen() {
    throw new Error(
      'bs.server stands for devproxy-native\'s proxy, which browser-sync\'s init() starts; it cannot be started again with listen()',
    )
  }

  /** Stops the proxy; `cb` and the `close` event follow once its port is free. */
  close(cb) {
    const stopping = this.#stop()
    stopping.then(
      () => typeof cb === 'function' && cb(),
      (err) => typeof cb === 'function' && cb(err),
    )
    return this
  }

  /** Called by the adapter when the proxy has stopped, whoever stopped it. */
  stopped() {
    if (this.#server === null) return
    this.#server = null
    this.emit('close')
  }
}

/**
 * The target as Browsersync keeps it in `options.proxy.url`: Node's legacy `url.parse()` (what its
 * handleProxyOption calls), with the port set to '80' when the URL has none. `url.parse` itself, not
 * a WHATWG port of it: the two differ on explicit default ports, IPv6 hostnames, an empty `?` or
 * `#`, non-ASCII paths. (Node 24 warns about `url.parse` only for code outside node_modules.)
 */
function legacyUrl(target) {
  const parsed = { ...url.parse(target) }
  if (!parsed.port) parsed.port = '80'
  return parsed
}

/**
 * The `proxy` option as Browsersync holds it (plain JS): the user's object, `target` cut to the
 * origin, and `url` as `url.parse` gave it.
 */
function proxyOption(config) {
  const given = typeof config.proxy === 'string' ? {} : config.proxy
  const target = typeof config.proxy === 'string' ? config.proxy : config.proxy.target
  const parsed = legacyUrl(/^[a-z]+:\/\//i.test(target) ? target : `http://${target}`)
  return { ...given, target: `${parsed.protocol}//${parsed.host}`, url: parsed }
}

/** A rule or middleware entry of `bs.options` as plain JS: Browsersync keeps objects as Immutable maps. */
const plain = (Immutable, item) => (Immutable.Map.isMap(item) ? item.toJS() : item)

/**
 * Points `bs`'s site API at the running proxy `server`; see the top of this file. `config` is the
 * user's Browsersync config, `middleware` the list the proxy started with (the user's, then the
 * plugins'). Returns the `bs.server` view.
 */
function attachSite(bs, { Immutable }, server, config, middleware, stop) {
  const view = new ProxyServerView(server, stop)
  const proxyEntry = {
    id: PROXY_ENTRY_ID,
    route: '',
    handle(req, res) {
      // Only reached by someone mounting `options.middleware` elsewhere: the proxy is its own server.
      res.statusCode = 501
      res.end(`devproxy-native serves this site on ${server.url}; this entry stands for it in options.middleware\n`)
    },
  }
  const { url: targetUrl, ...proxy } = proxyOption(config)
  bs.setMany((options) => {
    options.set('proxy', Immutable.fromJS(proxy).set('url', Immutable.Map(targetUrl)))
    if (!config.startPath && server.startPath) options.set('startPath', server.startPath)
    options.set('rewriteRules', Immutable.fromJS(config.rewriteRules ?? []))
    options.set('middleware', Immutable.List([...middleware, proxyEntry]))
  })
  // What the proxy runs now, as option values: a reset that changes neither hands nothing over.
  let applied = { rules: bs.options.get('rewriteRules'), middleware: bs.options.get('middleware') }
  // `serveFile()` entries: not in `options.middleware` (as in Browsersync), kept across resets here.
  // Those a plugin made while browser-sync started are on its own server's stack already.
  const files = bs.app.stack.filter((entry) => SERVE_FILE_ID.test(entry.id))
  let filesChanged = files.length > 0

  function handOver() {
    const rules = bs.options.get('rewriteRules')
    if (rules !== applied.rules) {
      try {
        server.setRules(listOf(rules).map((rule) => plain(Immutable, rule)))
      } catch (err) {
        // The running rules stay; so do the options that describe them.
        bs.options = bs.options.set('rewriteRules', applied.rules)
        throw err
      }
      applied = { ...applied, rules }
    }
    const entries = bs.options.get('middleware')
    if (entries !== applied.middleware || filesChanged) {
      const list = listOf(entries)
        .filter((entry) => entry !== proxyEntry)
        .map((entry) => plain(Immutable, entry))
      // Browsersync runs `override` entries before its own middleware, the others after.
      const ordered = [...list.filter((entry) => entry && entry.override), ...list.filter((entry) => !entry || !entry.override)]
      try {
        server.setMiddleware([...ordered, ...files])
      } catch (err) {
        bs.options = bs.options.set('middleware', applied.middleware)
        throw err
      }
      applied = { ...applied, middleware: entries }
      filesChanged = false
    }
  }

  // Own properties shadow the prototype's for this instance only; `bs.cleanup()` ends them with it.
  bs.server = view
  bs.resetMiddlewareStack = handOver
  const addToStack = bs._addMiddlewareToStack
  bs._addMiddlewareToStack = function (entry) {
    // `serveFile()`: on browser-sync's own server (for its paths) and on the site.
    addToStack.call(this, entry)
    files.push(entry)
    filesChanged = true
    handOver()
  }
  if (filesChanged) handOver()
  bs.events.on('options:set', (event) => {
    if (event && (event.path === 'proxy' || (Array.isArray(event.path) && event.path[0] === 'proxy'))) {
      bs.logger.warn('The proxy target cannot change while it runs (devproxy-native); restart with the new one')
    }
  })
  return view
}

/** An option that takes one item or a list (array or Immutable list), as an array. */
function listOf(value) {
  if (value === undefined || value === null) return []
  if (Array.isArray(value)) return value
  if (typeof value.toArray === 'function') return value.toArray()
  return [value]
}

module.exports = { attachSite, proxyOption, listOf, ProxyServerView, PROXY_ENTRY_ID }
