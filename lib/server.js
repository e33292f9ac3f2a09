'use strict'
// The `ProxyServer` that `start()` resolves to: the native server, plus what the JS side started
// for it (closed by `stop()`).

const { wrapProxyRule } = require('./rules.js')
const { normalizeMiddleware } = require('./middleware.js')

/**
 * Every started server until its `stop()`: like Node's `http.Server`, a server lives until it is
 * closed whether or not the caller kept a reference to it (`start().then(s => log(s.url))` must not
 * stop serving at the next garbage collection). The native side's keep-alive handle, held by the
 * object, keeps the process up until `stop()` or `unref()`.
 */
const running = new Set()

class ProxyServer {
  #native
  #middlewareHost
  #cleanups

  /**
   * @param native the `ProxyServer` of binding.js
   * @param middlewareHost the host running connect-style middleware (lib/middleware.js)
   * @param cleanups async functions run once by `stop()`, after the native server has stopped
   */
  constructor(native, middlewareHost, cleanups) {
    this.#native = native
    this.#middlewareHost = middlewareHost
    this.#cleanups = cleanups
    running.add(this)
  }

  get url() {
    return this.#native.url
  }

  get port() {
    return this.#native.port
  }

  get startPath() {
    return this.#native.startPath
  }

  /** The served certificate as PEM when serving HTTPS, else null: a client's `ca` to trust the proxy. */
  get certificate() {
    return this.#native.certificate
  }

  addRule(rule) {
    return this.#native.addRule(wrapProxyRule(rule))
  }

  addRuleAsync(rule) {
    return this.#native.addRuleAsync(wrapProxyRule(rule))
  }

  removeRule(id) {
    return this.#native.removeRule(id)
  }

  /** Replaces every rule at once (see index.d.ts); returns the new rules' ids. */
  setRules(rules) {
    if (!Array.isArray(rules)) {
      throw new TypeError(`setRules(rules): rules must be an array of { match, replace }, got ${rules === null ? 'null' : typeof rules}`)
    }
    return this.#native.setRules(rules.map(wrapProxyRule))
  }

  /**
   * Replaces the middleware (the `middleware` option's forms) for requests that start from now on;
   * throws naming a bad entry, leaving the running middleware as they were.
   */
  setMiddleware(middleware) {
    const items = normalizeMiddleware(middleware ?? [], 'middleware', (where) => `setMiddleware(): ${where}`)
    this.#native.setMiddlewareRoutes(items.map((item) => item.route))
    this.#middlewareHost.setItems(items)
  }

  stats() {
    return this.#native.stats()
  }

  /** Where the `record` option's recording stands, or null (see binding.d.ts). */
  recording() {
    return this.#native.recording()
  }

  /** Every recording running: the server's, then each route's (with `route`); see binding.d.ts. */
  recordings() {
    return this.#native.recordings()
  }

  /** Answers requests from a cassette from now on; resolves once it is read (rejects on a bad one). */
  replay(options) {
    return this.#native.replay(options)
  }

  /** Proxies requests to the target again. */
  passthrough() {
    this.#native.passthrough()
  }

  /** Records exchanges to a cassette from now on. */
  record(options) {
    return this.#native.record(options)
  }

  /** Lets the process exit while the server still serves (like `net.Server#unref`); it still lives until `stop()`. */
  unref() {
    this.#native.unref()
  }

  async stop() {
    running.delete(this)
    try {
      await this.#native.stop()
    } finally {
      const cleanups = this.#cleanups.splice(0)
      for (const cleanup of cleanups) await cleanup()
    }
  }
}

module.exports = { ProxyServer }
