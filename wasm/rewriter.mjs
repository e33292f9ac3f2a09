// devproxy-native/wasm: the proxy's rewrite engine as WebAssembly, with web-standard streams. The
// entry points (node.mjs, edge.mjs) load the module their host's way; this file is the API over the
// generated bindings (pkg/, made by scripts/build-wasm.sh from src/wasm.rs).

import { Rules, Stream, rewriteText } from './pkg/devproxy_native.js'

/** What one pending match may hold back by default (the proxy's `maxMatchBytes` default). */
const DEFAULT_MAX_MATCH_BYTES = 64 * 1024
/** More chunks than this go through `rewrite()` as one piece, as in the native `rewrite()`. */
const MAX_CHUNKS_AS_GIVEN = 64
const RULE_KEYS = ['match', 'replace', 'fn', 'paths', 'id']
const OPTION_KEYS = ['from', 'to', 'snippet', 'maxMatchBytes', 'url', 'req', 'res']
const CONTEXT_KEYS = ['req', 'res']

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** What a bad value is, in the native binding's words ("a number", "an object", "another typed array"). */
function typeName(value) {
  if (value === null) return 'null'
  if (ArrayBuffer.isView(value) && !(value instanceof Uint8Array)) return 'another typed array'
  switch (typeof value) {
    case 'string':
      return 'a string'
    case 'number':
      return 'a number'
    case 'boolean':
      return 'a boolean'
    case 'object':
      return 'an object'
    case 'function':
      return 'a function'
    default:
      return 'another type'
  }
}

function checkKeys(object, known, what) {
  for (const key of Object.keys(object)) {
    if (!known.includes(key)) throw new TypeError(`${what}: unknown key \`${key}\` (known: ${known.join(', ')})`)
  }
}

/** Node's `req.headers` from a Fetch `Headers`, an object, or `[name, value]` pairs: lower-case names. */
function headerPairs(headers, what) {
  if (headers === undefined) return []
  if (typeof headers?.entries === 'function' && typeof headers.get === 'function') {
    return [...headers.entries()].map(([name, value]) => [name.toLowerCase(), String(value)])
  }
  if (headers !== null && typeof headers === 'object') {
    return Object.entries(headers).flatMap(([name, value]) =>
      (Array.isArray(value) ? value : [value]).map((v) => [name.toLowerCase(), String(v)]),
    )
  }
  throw new TypeError(`${what}.headers must be a Headers or an object, got ${typeName(headers)}`)
}

function foldHeaders(pairs) {
  const headers = Object.create(null)
  for (const [name, value] of pairs) {
    const seen = headers[name]
    if (seen === undefined) headers[name] = name === 'set-cookie' ? [value] : value
    else if (name === 'set-cookie') seen.push(value)
    else headers[name] = `${seen}${name === 'cookie' ? '; ' : ', '}${value}`
  }
  return headers
}

/**
 * Browsersync's `req` for rule functions: `url` (path and query; a full URL, as a Fetch `Request`
 * has, is cut to that), `method`, `headers`, `rawHeaders`. Default: `GET /` without headers, as the
 * native `rewrite()` gives.
 */
function shapeRequest(req = {}) {
  let url = req.url ?? '/'
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    const parsed = new URL(url)
    url = parsed.pathname + parsed.search
  }
  const pairs = headerPairs(req.headers, 'req')
  return { url, method: req.method ?? 'GET', headers: foldHeaders(pairs), rawHeaders: pairs.flat() }
}

/** Browsersync's `res` for rule functions: `statusCode` (or a Fetch `Response`'s `status`) and its headers. */
function shapeResponse(res = {}) {
  const headers = foldHeaders(headerPairs(res.headers, 'res'))
  return {
    statusCode: res.statusCode ?? res.status ?? 200,
    getHeader: (name) => headers[String(name).toLowerCase()],
    getHeaders: () => Object.assign(Object.create(null), headers),
    getHeaderNames: () => Object.keys(headers),
    hasHeader: (name) => String(name).toLowerCase() in headers,
  }
}

/** A replacement as the engine calls it: `(match, ...)`, given `req` and `res` first, its result a string. */
function replacement(value, name, key, req, res) {
  if (typeof value === 'string') return value
  if (typeof value !== 'function') {
    throw new TypeError(`${name}.${key} must be a string or a function, got ${typeName(value)}`)
  }
  // A template literal coerces as `String.prototype.replace` does (a Symbol throws).
  return (...args) => `${value(req, res, ...args)}`
}

function globs(paths, name) {
  if (paths === undefined) return undefined
  const list = typeof paths === 'string' ? [paths] : paths
  if (!Array.isArray(list) || !list.every((p) => typeof p === 'string')) {
    throw new TypeError(`${name}.paths must be a glob or an array of globs (strings), got ${typeName(paths)}`)
  }
  return list.length > 0 ? list : undefined
}

/** `rules` (Browsersync's `rewriteRules` shape) compiled into a `Rules`, each error naming its rule. */
function compile(rules, req, res) {
  if (!Array.isArray(rules)) {
    throw new TypeError(`rules must be an array of { match, replace }, got ${typeName(rules)}`)
  }
  const compiled = new Rules()
  try {
    rules.forEach((rule, i) => {
      const name = `rules[${i}]`
      if (rule === null || typeof rule !== 'object' || Array.isArray(rule)) {
        throw new TypeError(`${name} must be an object { match, replace }, got ${typeName(rule)}`)
      }
      checkKeys(rule, RULE_KEYS, name)
      if (rule.replace !== undefined && rule.fn !== undefined) {
        throw new TypeError(`${name} has both \`replace\` and \`fn\`; give one (they mean the same)`)
      }
      const key = rule.replace !== undefined ? 'replace' : 'fn'
      if (rule[key] === undefined) throw new TypeError(`${name} has no \`replace\` or \`fn\` (a string or a function)`)
      const replace = replacement(rule[key], name, key, req, res)
      const paths = globs(rule.paths, name)
      if (typeof rule.match === 'string') compiled.literal(name, rule.match, replace, paths)
      else if (rule.match instanceof RegExp) compiled.regex(name, rule.match.source, rule.match.flags, replace, paths)
      else if (rule.match === undefined) throw new TypeError(`${name} has no \`match\` (a RegExp or a string)`)
      else throw new TypeError(`${name}.match must be a RegExp or a string, got ${typeName(rule.match)}`)
    })
    compiled.checkMemory()
  } catch (error) {
    compiled.free()
    throw error
  }
  return compiled
}

/** A chunk as bytes: a Uint8Array (a Buffer is one) as it is, a string as UTF-8. */
function bytesOf(chunk, what) {
  if (typeof chunk === 'string') return encoder.encode(chunk)
  if (chunk instanceof Uint8Array) return chunk
  throw new TypeError(`${what} must be a string, a Buffer or a Uint8Array, got ${typeName(chunk)}`)
}

function origin(value, option) {
  let url
  try {
    url = new URL(String(value))
  } catch {
    throw new TypeError(`options.${option} must be an http: or https: URL, got ${typeof value === 'string' ? JSON.stringify(value) : typeName(value)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`options.${option} must be an http: or https: URL, got ${url.protocol}`)
  }
  return url
}

/**
 * A `TransformStream` that rewrites a body with `rules`: `response.body.pipeThrough(createRewriter(rules,
 * options))`. The body is never held whole: each chunk comes out as soon as no match can still span it.
 *
 * Options: `from` and `to` (origins: links to `from` lead to `to`, Browsersync's link rewrite), `snippet`
 * (HTML put after the first `<body>` tag), `maxMatchBytes` (what one pending match may hold back,
 * default 64 KiB), `url` (the request's path, for rules' `paths`), `req` and `res` (what rule functions
 * get first: `{ url, method, headers }` or a Fetch `Request`, `{ statusCode, headers }` or a `Response`).
 */
export function createRewriter(rules, options = {}) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`options must be an object, got ${typeName(options)}`)
  }
  checkKeys(options, OPTION_KEYS, 'options')
  const { from, to, snippet, maxMatchBytes = DEFAULT_MAX_MATCH_BYTES, url } = options
  if (!Number.isSafeInteger(maxMatchBytes) || maxMatchBytes < 1 || maxMatchBytes > 2 ** 31) {
    throw new TypeError(`options.maxMatchBytes must be a whole number from 1 to 2147483648, got ${typeName(maxMatchBytes)}`)
  }
  if ((from === undefined) !== (to === undefined)) {
    throw new TypeError('options.from and options.to go together: links to `from` are rewritten to `to`')
  }
  if (snippet !== undefined && typeof snippet !== 'string') {
    throw new TypeError(`options.snippet must be a string, got ${typeName(snippet)}`)
  }
  const req = shapeRequest(options.req ?? (url !== undefined ? { url } : undefined))
  const res = shapeResponse(options.res)
  const compiled = compile(rules, req, res)
  let stream
  try {
    let localHost = ''
    if (from !== undefined) {
      const local = origin(to, 'to')
      compiled.linkRewrite(origin(from, 'from').host, local.protocol.slice(0, -1))
      localHost = local.host
    }
    if (snippet !== undefined) compiled.snippet(snippet)
    stream = new Stream(compiled, url === undefined ? req.url : String(url), localHost, maxMatchBytes)
  } finally {
    compiled.free()
  }
  const done = () => {
    if (stream) stream.free()
    stream = undefined
  }
  return new TransformStream({
    transform(chunk, controller) {
      try {
        const out = stream.push(bytesOf(chunk, 'a chunk'))
        if (out.length > 0) controller.enqueue(out)
      } catch (error) {
        done()
        throw error
      }
    },
    flush(controller) {
      try {
        const out = stream.finish()
        if (out.length > 0) controller.enqueue(out)
      } finally {
        done()
      }
    },
  })
}

/**
 * `input` rewritten with `rules`, with the results of the native `rewrite()`: a string is rewritten
 * whole (rule functions get it as `string`), an array of chunks (strings, Uint8Arrays) is streamed
 * (`string` is `undefined`). `context.req`/`context.res` are what rule functions get first.
 */
export function rewrite(input, rules, context = {}) {
  return rewriteEach([input], rules, context, 'input')[0]
}

/** Test hook, not part of the API (the native binding has it too): `rewrite()` of each input, the rules compiled once. */
export function __rewriteEach(inputs, rules, context = {}) {
  if (!Array.isArray(inputs)) throw new TypeError(`inputs must be an array, got ${typeName(inputs)}`)
  return rewriteEach(inputs, rules, context, null)
}

function rewriteEach(inputs, rules, context, name) {
  if (context === null || typeof context !== 'object') {
    throw new TypeError(`context must be an object, got ${typeName(context)}`)
  }
  checkKeys(context, CONTEXT_KEYS, 'context')
  const req = shapeRequest(context.req)
  const res = shapeResponse(context.res)
  inputs.forEach((input, i) => {
    if (typeof input !== 'string' && !Array.isArray(input)) {
      const what = name ?? `inputs[${i}]`
      throw new TypeError(`${what} must be a string or an array of strings and Buffers, got ${typeName(input)}`)
    }
  })
  const compiled = compile(rules, req, res)
  try {
    return inputs.map((input) => {
      if (typeof input === 'string') return rewriteText(compiled, input, input)
      let chunks = input.map((chunk, i) => bytesOf(chunk, `input[${i}]`))
      // Many chunks go through as one, as in the native `rewrite()` (each push rescans what a pending
      // match holds back: many tiny ones would be quadratic).
      if (chunks.length > MAX_CHUNKS_AS_GIVEN) chunks = [concat(chunks)]
      // No URL: every rule applies; uncapped: every chunk is in hand.
      const stream = new Stream(compiled, undefined, '', 2 ** 31)
      try {
        const parts = chunks.map((chunk) => stream.push(chunk))
        parts.push(stream.finish())
        return decoder.decode(concat(parts))
      } finally {
        stream.free()
      }
    })
  } finally {
    compiled.free()
  }
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  return out
}
