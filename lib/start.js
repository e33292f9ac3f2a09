'use strict'
// `start(options)`: prepares what only JS can hold, then starts the native server.

const binding = require('./native.js')
const { inSlice } = require('./js-thread.js')
const { ProxyServer } = require('./server.js')
const { prepareOptions } = require('./rules.js')
const { prepareHooks, proxyOptionsWarnings } = require('./hooks.js')
const { prepareMiddleware } = require('./middleware.js')

/**
 * Browsersync's older `proxy.reqHeaders` form: a function, called once at start with the proxy
 * options (`seen`, as Browsersync holds them, where the adapter has them) and `this` as
 * Browsersync's instance (`self`, the adapter's), that returns the headers.
 */
function resolveReqHeaders(proxy, self, seen = proxy) {
  if (proxy === null || typeof proxy !== 'object' || typeof proxy.reqHeaders !== 'function') return proxy
  const headers = proxy.reqHeaders.call(self, { ...seen })
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) {
    const got = headers === null ? 'null' : Array.isArray(headers) ? 'an array' : typeof headers
    throw new TypeError(`option \`proxy.reqHeaders\` is a function, which must return an object of headers; it returned ${got}`)
  }
  return { ...proxy, reqHeaders: headers }
}

/** The options the native side reads: without the functions and middleware JS runs itself. */
function nativeOptions(options) {
  const { middleware, onRequest, ...rest } = prepareOptions(options)
  if (rest.proxy !== null && typeof rest.proxy === 'object') {
    const { proxyReq, proxyReqWs, proxyRes, middleware: proxyMiddleware, ...proxy } = resolveReqHeaders(rest.proxy)
    rest.proxy = proxy
  }
  return rest
}

/**
 * Warnings of the JS side about the options, on stderr like the native ones and with the same
 * prefix: whatever the log level, as a config the proxy does not follow is not chatter.
 */
function warn(options, lines) {
  const prefix = typeof options.logPrefix === 'string' ? options.logPrefix : 'devproxy'
  for (const line of lines) process.stderr.write(`[${prefix}] ${line}\n`)
}

/**
 * `onRequest`'s dispatcher: the native side hands over finished exchange records in batches, as a
 * JSON array (parsed here, on the JS thread, not on the proxy's). A throwing callback costs its own
 * record only: the error is logged like the native side's lines.
 */
function prepareOnRequest(options) {
  const onRequest = options.onRequest
  if (onRequest === undefined || onRequest === null) return undefined
  if (typeof onRequest !== 'function') {
    throw new TypeError(`option \`onRequest\` must be a function, got ${typeof onRequest}`)
  }
  const deliver = (entry) => {
    try {
      onRequest(entry)
    } catch (err) {
      warn(options, [`onRequest threw for ${entry.method} ${entry.url}: ${err && err.stack ? err.stack : err}`])
    }
  }
  // Each record in a slice of the JS thread (lib/js-thread.js); the batch is answered once all ran.
  return async (batch) => {
    await Promise.all(JSON.parse(batch).map((entry) => inSlice(() => deliver(entry))))
    return { value: undefined }
  }
}

/**
 * Starts a proxy; see index.d.ts. Resolves to a `ProxyServer`, rejects with an error naming the bad
 * option, rule or port.
 */
async function start(options) {
  if (options === null || typeof options !== 'object') return binding.start(options)
  const onRequest = prepareOnRequest(options)
  const hooks = prepareHooks(options.proxy)
  const { host, warnings } = await prepareMiddleware(options)
  const cleanups = [() => host.close()]
  let native
  try {
    const js = { ...hooks, onRequest, middleware: { port: host.port, token: host.token, routes: host.routes } }
    native = await binding.start(nativeOptions(options), js)
  } catch (e) {
    for (const cleanup of cleanups) await cleanup()
    throw e
  }
  host.setProxy(native.url, native.certificate)
  warn(options, [...proxyOptionsWarnings(options.proxy), ...warnings])
  return new ProxyServer(native, host, cleanups)
}

module.exports = { start, resolveReqHeaders }
