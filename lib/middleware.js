'use strict'
// Connect-style middleware (`middleware`, `proxy.middleware`) on Node's own `http` objects. The native
// server hands requests whose path matches a middleware's route to this host, an `http.Server` on
// 127.0.0.1:<any port>, over loopback; the other requests never come here. The middleware run in
// connect (the router Browsersync uses, so routes, `next()` and errors behave as there). The final
// `next()` sends the request, as the middleware left it (url, method, headers) and with its body
// streamed, back to the native server, which proxies it and skips the middleware; its answer is
// piped back. The hop here carries a per-server random token (the host serves only the native server,
// and only the host can ask for the 500 page of a failed middleware) and a return ticket, good for
// this one request's way back through `next()` (see src/proxy/middleware.rs). Both are removed from the
// request (`headers` and `rawHeaders`) before any middleware sees it.

const http = require('node:http')
const https = require('node:https')
const { inSlice } = require('./js-thread.js')
const crypto = require('node:crypto')
const querystring = require('node:querystring')
const connect = require('connect')

const TOKEN_HEADER = 'x-devproxy-middleware'
const PASSED_HEADER = 'x-devproxy-passed'
const ERROR_HEADER = 'x-devproxy-error'
const RETURN_HEADER = 'x-devproxy-return'
/** Where a request keeps its return ticket, out of the middleware's sight. */
const RETURN_TICKET = Symbol('devproxy return ticket')

/** Removes the proxy's own headers from a request, in `headers` and `rawHeaders` alike. */
function stripOwnHeaders(req) {
  const own = new Set([TOKEN_HEADER, RETURN_HEADER])
  for (const name of own) delete req.headers[name]
  const raw = []
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    if (!own.has(req.rawHeaders[i].toLowerCase())) raw.push(req.rawHeaders[i], req.rawHeaders[i + 1])
  }
  req.rawHeaders = raw
}
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'te', 'trailer', 'upgrade'])

/**
 * Browsersync's list: functions, and `{ route, handle }` objects. Top-level `middleware` wins over
 * `proxy.middleware`, as in Browsersync (its options.js reads the first one given).
 */
function middlewareList(options) {
  const top = options.middleware
  const fromProxy = options.proxy !== null && typeof options.proxy === 'object' ? options.proxy.middleware : undefined
  const warnings = []
  let value = top
  let option = 'middleware'
  if (top === undefined || top === null) {
    value = fromProxy
    option = 'proxy.middleware'
  } else if (fromProxy !== undefined && fromProxy !== null) {
    warnings.push('proxy.middleware is ignored because middleware is given, as in Browsersync; put them all in middleware')
  }
  if (value === undefined || value === null) return { items: [], warnings }
  return { items: normalizeMiddleware(value, option, (where) => `option \`${where}\``), warnings }
}

/**
 * `value` (a function, `{ route, handle }`, or an array of them) as `{ route, handle }` items.
 * Errors name the entry: `name[i]`, put in context by `label` (`option \`middleware[1]\``).
 */
function normalizeMiddleware(value, name, label) {
  const list = Array.isArray(value) ? value : [value]
  return list.map((item, i) => {
    const where = Array.isArray(value) ? `${name}[${i}]` : name
    if (typeof item === 'function') return { route: '', handle: item }
    if (item !== null && typeof item === 'object' && typeof item.handle === 'function') {
      const route = item.route === undefined ? '' : item.route
      if (typeof route !== 'string') throw new TypeError(`${label(`${where}.route`)} must be a string, got ${typeof route}`)
      return { route, handle: item.handle }
    }
    throw new TypeError(`${label(where)} must be a function (req, res, next) or { route, handle }`)
  })
}

function sameToken(value, token) {
  if (typeof value !== 'string' || value.length !== token.length) return false
  return crypto.timingSafeEqual(Buffer.from(value), Buffer.from(token))
}

/** What the page of a failed middleware says. */
function describe(err) {
  if (err instanceof Error) return String(err)
  return `next() was called with ${typeof err === 'string' ? err : JSON.stringify(err) ?? String(err)}`
}

/**
 * The body to send on for a request whose stream a middleware has read: `req.body` as a Buffer or
 * string as is, an object encoded as its content type says (JSON or a form, what body-parser made of
 * it). Otherwise an Error naming the request: body bytes were read (Node sets `readableDidRead` on
 * 'data' only, so an empty body is never "read"), and nothing says what to send in their place.
 */
function readBodyReplacement(req) {
  const body = req.body
  if (typeof body === 'string' || body instanceof Uint8Array) return Buffer.from(body)
  if (body !== null && typeof body === 'object') {
    const type = String(req.headers['content-type'] ?? '').toLowerCase()
    if (/^application\/([\w.+-]*\+)?json\b/.test(type)) return Buffer.from(JSON.stringify(body))
    if (type.startsWith('application/x-www-form-urlencoded')) return Buffer.from(querystring.stringify(body))
  }
  const what = body === undefined ? 'no req.body' : `a req.body the proxy cannot send (${describeValue(body, req.headers['content-type'])})`
  return new Error(
    `a middleware read the body of ${req.method} ${req.url} and called next() with ${what}: set req.body to the ` +
      'body to send on (a Buffer, a string, or an object for a JSON or form content type)',
  )
}

function describeValue(value, contentType) {
  if (value === null) return 'null'
  if (typeof value !== 'object') return typeof value
  return `an object, content type ${contentType === undefined ? 'missing' : JSON.stringify(contentType)}`
}

/**
 * Where to reach a server listening at `url` from this machine: `{ host, port }` for http.request. A
 * wildcard listener (`0.0.0.0`, `::`) is dialled on loopback: Windows refuses them as a destination.
 */
function dialAddress(url) {
  const { hostname, port } = new URL(url)
  const host = hostname.replace(/[[\]]/g, '') // an IPv6 address comes in brackets
  return { host: host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host, port: Number(port) }
}

class MiddlewareHost {
  #server
  #agent = new http.Agent({ keepAlive: true })
  #request = http.request
  #proxy = null // where the native server listens: { host, port }

  #app

  constructor(items) {
    this.token = crypto.randomBytes(24).toString('hex')
    this.setItems(items)
    this.#server = http.createServer((req, res) => {
      if (!sameToken(req.headers[TOKEN_HEADER], this.token)) {
        res.writeHead(403, { 'content-type': 'text/plain' }).end('not for you\n')
        return
      }
      req[RETURN_TICKET] = req.headers[RETURN_HEADER]
      stripOwnHeaders(req)
      // In a slice of the JS thread, as every call the proxy makes into JS (lib/js-thread.js): busy
      // middleware take turns with the rest of the process instead of running back to back.
      const app = this.#app
      inSlice(() => app(req, res, (err) => (err ? this.#fail(res, err) : this.#sendOn(req, res))))
    })
    // The native server's keep-alive handle alone decides whether the process stays up (`unref()`):
    // neither this listener nor the native server's connections to it hold the event loop.
    this.#server.unref()
    this.#server.on('connection', (socket) => socket.unref())
    // Longer than the native client's pool idle timeout (30 s), so it is the one that closes idle connections.
    this.#server.keepAliveTimeout = 60_000
    // Its only client is the native server, which applies its own limits: a long upload through
    // `next()` must not be cut by Node's default 5-minute request timeout.
    this.#server.requestTimeout = 0
  }

  /**
   * The middleware for requests that reach the host from now on; `routes` is what the native server
   * hands over (the caller tells it). A request already in a middleware finishes with the old ones.
   */
  setItems(items) {
    const app = connect()
    for (const item of items) app.use(item.route, item.handle)
    this.#app = app
    this.routes = items.map((item) => item.route)
  }

  async listen() {
    await new Promise((resolve, reject) => {
      this.#server.once('error', reject)
      this.#server.listen(0, '127.0.0.1', () => {
        this.#server.off('error', reject)
        resolve()
      })
    })
    this.port = this.#server.address().port
  }

  /**
   * The native server's URL (`http://` or `https://host:port`) once it has started, and the
   * certificate it serves over HTTPS (`server.certificate`).
   */
  setProxy(url, certificate) {
    this.#proxy = dialAddress(url)
    if (url.startsWith('https:')) {
      // The hop back is to our own server over loopback: trust exactly the certificate it serves,
      // whatever names that certificate was made for (given `https: { key, cert }` files may name
      // only the site's host).
      this.#agent.destroy()
      this.#agent = new https.Agent({ keepAlive: true, ca: certificate, checkServerIdentity: () => undefined })
      this.#request = https.request
    }
  }

  /** The 500 page is the native side's: it gets the error, marked with the token. */
  #fail(res, err) {
    if (res.headersSent) {
      res.destroy(err instanceof Error ? err : undefined)
      return
    }
    res.writeHead(500, { [ERROR_HEADER]: this.token, 'content-type': 'text/plain; charset=utf-8' })
    res.end(describe(err))
  }

  /** The final `next()`: the request as the middleware left it goes to the native proxy, its answer back. */
  #sendOn(req, res) {
    if (this.#proxy === null) return this.#fail(res, new Error('the proxy is not running'))
    const headers = { ...req.headers, [TOKEN_HEADER]: req[RETURN_TICKET] }
    for (const name of HOP_BY_HOP) delete headers[name]
    // A middleware that read the body (a body parser) leaves nothing to stream: what it put in
    // `req.body` goes on instead, or the request fails naming why (piping the drained stream would
    // announce a body that never comes, and the request would hang, as it does with http-proxy).
    let replacement = null
    if (req.readableDidRead) {
      replacement = readBodyReplacement(req)
      if (replacement instanceof Error) return this.#fail(res, replacement)
      headers['content-length'] = String(replacement.length)
    }
    const upstream = this.#request({
      ...this.#proxy,
      method: req.method,
      path: req.url,
      headers,
      agent: this.#agent,
    })
    upstream.on('response', (answer) => {
      const raw = []
      for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2) {
        if (!HOP_BY_HOP.has(answer.rawHeaders[i].toLowerCase())) raw.push(answer.rawHeaders[i], answer.rawHeaders[i + 1])
      }
      raw.push(PASSED_HEADER, this.token)
      res.writeHead(answer.statusCode, answer.statusMessage, raw)
      answer.pipe(res)
      // A cut answer emits 'error' (Node 16+; 'aborted' is its deprecated twin): cut the client's too.
      answer.on('error', () => res.destroy())
    })
    upstream.on('error', (err) => this.#fail(res, err))
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy()
    })
    if (replacement !== null) upstream.end(replacement)
    else req.pipe(upstream)
  }

  async close() {
    this.#agent.destroy()
    await new Promise((resolve) => {
      this.#server.close(() => resolve())
      this.#server.closeAllConnections()
    })
  }
}

/**
 * Starts the host, with the options' middleware (none is fine: `server.setMiddleware()` can add
 * some later, and until then no request goes to the host).
 */
async function prepareMiddleware(options) {
  const { items, warnings } = middlewareList(options)
  const host = new MiddlewareHost(items)
  await host.listen()
  return { host, warnings }
}

module.exports = { prepareMiddleware, normalizeMiddleware, dialAddress, TOKEN_HEADER }
