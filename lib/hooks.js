'use strict'
// Browsersync's `proxy.proxyReq`, `proxy.proxyReqWs` and `proxy.proxyRes`. The native server calls one
// dispatcher per kind with a plain snapshot of the head (method, path, rawHeaders / statusCode,
// rawHeaders) and the client's request; the dispatcher builds the objects Browsersync's functions get,
// runs them in order, and answers the changed head. A function that throws fails that one request
// (the native side renders a 500 naming the error). Each call runs in a slice of the JS thread
// (lib/js-thread.js).

const { sliced } = require('./js-thread.js')

/** Node's joining of repeated request headers, enough for hooks: cookies with '; ', others with ', '. */
function headersObject(raw) {
  const headers = {}
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i].toLowerCase()
    const value = raw[i + 1]
    if (name === 'set-cookie') (headers[name] ??= []).push(value)
    else if (headers[name] === undefined) headers[name] = value
    else headers[name] += (name === 'cookie' ? '; ' : ', ') + value
  }
  return headers
}

/** `{ name: value | value[] }` back to `[name, value, ...]`; undefined and null values are dropped. */
function rawHeaders(entries) {
  const raw = []
  for (const [name, value] of entries) {
    if (value === undefined || value === null) continue
    for (const one of Array.isArray(value) ? value : [value]) raw.push(name, String(one))
  }
  return raw
}

/** Browsersync's `req` (an IncomingMessage there): `url`, `method`, `headers`, `rawHeaders`. */
function clientRequest(req) {
  return { url: req.url, method: req.method, headers: headersObject(req.rawHeaders), rawHeaders: req.rawHeaders }
}

/**
 * The `proxyReq` object: http-proxy hands Browsersync's functions Node's `ClientRequest` before its
 * headers are sent; this one has the part of its API that matters then.
 */
class ProxyRequest {
  #headers = new Map() // lower-case name -> [name as set, value]

  constructor(head) {
    this.method = head.method
    this.path = head.path
    const raw = head.rawHeaders
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const key = raw[i].toLowerCase()
      const prior = this.#headers.get(key)
      if (prior) prior[1] = [].concat(prior[1], raw[i + 1])
      else this.#headers.set(key, [raw[i], raw[i + 1]])
    }
  }

  getHeader(name) {
    return this.#headers.get(String(name).toLowerCase())?.[1]
  }

  setHeader(name, value) {
    if (value === undefined) throw new TypeError(`proxyReq.setHeader('${name}'): value is undefined`)
    this.#headers.set(String(name).toLowerCase(), [String(name), value])
    return this
  }

  removeHeader(name) {
    this.#headers.delete(String(name).toLowerCase())
  }

  hasHeader(name) {
    return this.#headers.has(String(name).toLowerCase())
  }

  getHeaderNames() {
    return [...this.#headers.keys()]
  }

  getHeaders() {
    const headers = Object.create(null)
    for (const [key, [, value]] of this.#headers) headers[key] = value
    return headers
  }

  /** The head the native side sends. */
  toHead() {
    return { method: this.method, path: String(this.path), rawHeaders: rawHeaders(this.#headers.values()) }
  }
}

/**
 * The `proxyRes` object: Node's `IncomingMessage` of the upstream response in Browsersync; here its
 * `statusCode`, `statusMessage`, `headers` (lower-case names; `set-cookie` an array) and `rawHeaders`,
 * plus `setHeader`/`removeHeader`/`getHeader` for convenience. Functions may also assign to
 * `headers[name]` directly, as Browsersync's own cookie rewrite does.
 */
class ProxyResponse {
  constructor(head) {
    this.statusCode = head.statusCode
    this.rawHeaders = head.rawHeaders
    this.headers = headersObject(head.rawHeaders)
  }

  getHeader(name) {
    return this.headers[String(name).toLowerCase()]
  }

  setHeader(name, value) {
    this.headers[String(name).toLowerCase()] = value
    return this
  }

  removeHeader(name) {
    delete this.headers[String(name).toLowerCase()]
  }

  toHead() {
    const status = Number(this.statusCode)
    if (!Number.isInteger(status)) throw new TypeError(`proxyRes.statusCode must be a number, got ${this.statusCode}`)
    return { statusCode: status, rawHeaders: rawHeaders(Object.entries(this.headers)) }
  }
}

/** `value` as a list of functions (Browsersync takes one function or an array); names the bad one. */
function functionList(value, option) {
  if (value === undefined || value === null) return []
  const list = Array.isArray(value) ? value : [value]
  list.forEach((fn, i) => {
    if (typeof fn !== 'function') {
      const where = Array.isArray(value) ? `${option}[${i}]` : option
      throw new TypeError(`option \`${where}\` must be a function, got ${fn === null ? 'null' : typeof fn}`)
    }
  })
  return list
}

/**
 * The dispatchers for the native side, one per kind given; `undefined` for a kind without functions,
 * so requests pay nothing for it. Browsersync calls `proxyReq` functions as `(proxyReq, req, res,
 * options)` and `proxyRes` ones as `(proxyRes, req, res)`; `res` and `options` are `undefined` here.
 */
function prepareHooks(proxy) {
  if (proxy === null || typeof proxy !== 'object') return {}
  const request = (fns) =>
    fns.length === 0
      ? undefined
      : sliced(({ head, req }) => {
          const proxyReq = new ProxyRequest(head)
          const request = clientRequest(req)
          for (const fn of fns) fn(proxyReq, request, undefined, undefined)
          return proxyReq.toHead()
        })
  const resFns = functionList(proxy.proxyRes, 'proxy.proxyRes')
  return {
    proxyReq: request(functionList(proxy.proxyReq, 'proxy.proxyReq')),
    proxyReqWs: request(functionList(proxy.proxyReqWs, 'proxy.proxyReqWs')),
    proxyRes:
      resFns.length === 0
        ? undefined
        : sliced(({ head, req }) => {
            const proxyRes = new ProxyResponse(head)
            const request = clientRequest(req)
            for (const fn of resFns) fn(proxyRes, request, undefined)
            return proxyRes.toHead()
          }),
  }
}

/** http-proxy options Browsersync passes through that mean something here (the native side reads them). */
const SUPPORTED_PROXY_OPTIONS = new Set(['xfwd', 'secure', 'changeOrigin'])

/** One warning per `proxy.proxyOptions` key that has no effect here. */
function proxyOptionsWarnings(proxy) {
  const options = proxy !== null && typeof proxy === 'object' ? proxy.proxyOptions : undefined
  if (options === null || typeof options !== 'object') return []
  return Object.keys(options)
    .filter((key) => !SUPPORTED_PROXY_OPTIONS.has(key))
    // `autoRewrite: true` and `target` describe what the proxy does anyway.
    .filter((key) => !(key === 'autoRewrite' && options[key] === true) && key !== 'target')
    .map((key) =>
      key === 'autoRewrite'
        ? 'proxy.proxyOptions.autoRewrite: false is not supported: redirects to the target always come back to the proxy'
        : key === 'ws'
          ? 'proxy.proxyOptions.ws is ignored: WebSocket tunnelling is `proxy.ws` (default true)'
          : `proxy.proxyOptions.${key} is not supported by devproxy-native and is ignored (supported: xfwd, secure, changeOrigin)`,
    )
}

module.exports = { prepareHooks, proxyOptionsWarnings, ProxyRequest, ProxyResponse, headersObject }
