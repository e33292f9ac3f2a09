'use strict'
// Rule functions as Browsersync (resp-modifier) calls them: `fn(req, res, match, ...groups, offset,
// string)`. The native side calls every rule function with plain `req`/`res` data (RuleRequest,
// RuleResponse in binding.d.ts); the wrappers here give them the shape of Node's objects.

const binding = require('./native.js')
const { sliced } = require('./js-thread.js')

// Node's IncomingMessage keeps the first of these when a header comes twice (lib/_http_incoming.js).
const SINGLE = new Set([
  'age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host',
  'if-modified-since', 'if-unmodified-since', 'last-modified', 'location', 'max-forwards',
  'proxy-authorization', 'referer', 'retry-after', 'server', 'user-agent',
])

/** Folds `[name, value, ...]` (lower-case names) into an object as Node does for `req.headers`. */
function foldHeaders(raw) {
  const headers = Object.create(null)
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]
    const value = raw[i + 1]
    const seen = headers[name]
    if (seen === undefined) headers[name] = name === 'set-cookie' ? [value] : value
    else if (name === 'set-cookie') seen.push(value)
    else if (SINGLE.has(name)) continue
    else headers[name] = seen + (name === 'cookie' ? '; ' : ', ') + value
  }
  return headers
}

/** Browsersync's `req`: `url` (as the client sent it), `method`, `headers` (lower-case names). */
function shapeRequest(plain) {
  return { url: plain.url, method: plain.method, headers: foldHeaders(plain.rawHeaders), rawHeaders: plain.rawHeaders }
}

/** Browsersync's `res`: `statusCode`, and its headers as they go to the client through `getHeader`. */
function shapeResponse(plain) {
  const headers = foldHeaders(plain.rawHeaders)
  return {
    statusCode: plain.statusCode,
    getHeader: (name) => headers[String(name).toLowerCase()],
    getHeaders: () => Object.assign(Object.create(null), headers),
    getHeaderNames: () => Object.keys(headers),
    hasHeader: (name) => String(name).toLowerCase() in headers,
  }
}

/** `rewrite()`'s `req` and `res` when none are given. */
const DEFAULT_REQUEST = Object.freeze({ url: '/', method: 'GET', rawHeaders: [] })
const DEFAULT_RESPONSE = Object.freeze({ statusCode: 200, rawHeaders: [] })

/** The rule with its function(s) called as `f(req, res, match, ...)`; `shape` makes `req`, `res`. */
function wrapRule(rule, shape) {
  if (rule === null || typeof rule !== 'object') return rule
  const wrapped = { ...rule, match: rule.match }
  for (const key of ['replace', 'fn']) {
    const f = rule[key]
    if (typeof f === 'function') {
      wrapped[key] = function (req, res, ...args) {
        const [shapedReq, shapedRes] = shape(req, res)
        return f.call(this, shapedReq, shapedRes, ...args)
      }
    }
  }
  return wrapped
}

const fromNative = (req, res) => [shapeRequest(req), shapeResponse(res)]

/** The result of a replacement function as `String.prototype.replace` coerces it (ToString; a Symbol throws). */
const asReplacement = (value) => `${value}`

/** A rule's functions as the proxy calls them: in a slice of the JS thread (lib/js-thread.js). */
function sliceRule(rule) {
  if (rule === null || typeof rule !== 'object') return rule
  const wrapped = { ...rule, match: rule.match }
  for (const key of ['replace', 'fn']) {
    if (typeof rule[key] === 'function') wrapped[key] = sliced(rule[key], asReplacement)
  }
  return wrapped
}

/** Rules given to `start()` or `addRule()`, called by the proxy. */
function wrapProxyRule(rule) {
  return sliceRule(wrapRule(rule, fromNative))
}

/**
 * `start()`'s options with their rule functions wrapped: `rewriteRules`, and `snippetOptions.rule.fn`
 * called as Browsersync calls it, `fn(snippet, match)`.
 */
function prepareOptions(options) {
  // `options` is an object: start() hands anything else to the native side, which names the problem.
  const prepared = { ...options }
  if (Array.isArray(options.rewriteRules)) prepared.rewriteRules = options.rewriteRules.map(wrapProxyRule)
  const snippetOptions = options.snippetOptions
  const rule = snippetOptions && snippetOptions.rule
  if (rule && typeof rule === 'object' && typeof rule.fn === 'function') {
    const fn = rule.fn
    const snippet = options.snippet
    prepared.snippetOptions = {
      ...snippetOptions,
      rule: { ...rule, match: rule.match, fn: sliced((req, res, match) => fn(snippet, match), asReplacement) },
    }
  }
  return prepared
}

/**
 * `rewrite(input, rules[, { req, res }])`: rule functions get `req` and `res` as in the proxy — the
 * given ones, as they are, or `{ url: '/', method: 'GET', headers: {} }` and a 200 response without
 * headers.
 */
function rewrite(input, rules, context) {
  return binding.rewrite(input, wrapRules(rules, context))
}

/** `rules` with their functions called as `rewrite()` calls them (`context`'s `req`/`res`, or defaults). */
function wrapRules(rules, context) {
  const { req, res } = context || {}
  const given = [req || shapeRequest(DEFAULT_REQUEST), res || shapeResponse(DEFAULT_RESPONSE)]
  return Array.isArray(rules) ? rules.map((rule) => wrapRule(rule, () => given)) : rules
}

module.exports = { rewrite, wrapRules, prepareOptions, wrapProxyRule, foldHeaders }
