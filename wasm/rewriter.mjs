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

/**
 * The `req` and `res` of the body being rewritten: compiled rules serve many bodies, and the engine
 * calls their functions synchronously from inside `withContext`, which sets these around each call
 * into it.
 */
let context = { req: undefined, res: undefined }

function withContext(bodyContext, run) {
  const outer = context
  context = bodyContext
  try {
    return run()
  } finally {
    context = outer
  }
}

/** A replacement as the engine calls it: `(match, ...)`, given the body's `req` and `res` first, its result a string. */
function replacement(value, name, key) {
  if (typeof value === 'string') return value
  if (typeof value !== 'function') {
    throw new TypeError(`${name}.${key} must be a string or a function, got ${typeName(value)}`)
  }
  // A template literal coerces as `String.prototype.replace` does (a Symbol throws).
  return (...args) => `${value(context.req, context.res, ...args)}`
}

function globs(paths, name) {
  if (paths === undefined) return undefined
  const list = typeof paths === 'string' ? [paths] : paths
  if (!Array.isArray(list) || !list.every((p) => typeof p === 'string')) {
    throw new TypeError(`${name}.paths must be a glob or an array of globs (strings), got ${typeName(paths)}`)
  }
  return list.length > 0 ? list : undefined
}

/** The wasm `Rules` of a `CompiledRules` (set by the class, which alone can read it). */
let rulesOf

/**
 * Rules compiled once (`compileRules(rules)`), for any number of rewriters and `rewrite()` calls: what
 * `createRewriter` and `rewrite` would otherwise compile at every call. Their memory is the WebAssembly
 * module's: `free()` gives it back at once (streams already made from them go on), and so does the
 * garbage collector once the value is unreachable.
 */
export class CompiledRules {
  #rules

  /** @param {Rules} rules */
  constructor(rules, key) {
    if (key !== MADE_BY_COMPILE) throw new TypeError('CompiledRules are made by compileRules(rules)')
    this.#rules = rules
  }

  /** Whether `free()` was called: such a value can no longer be used. */
  get freed() {
    return this.#rules === undefined
  }

  /** Gives the compiled rules' memory back; using them afterwards throws. Streams made from them go on. */
  free() {
    const rules = this.#rules
    this.#rules = undefined
    if (rules) rules.free()
  }

  static {
    rulesOf = (compiled) => {
      const rules = compiled.#rules
      if (rules === undefined) {
        throw new TypeError('rules: these compiled rules were freed (compiled.free() was called); compile them again with compileRules(rules)')
      }
      return rules
    }
  }
}

const MADE_BY_COMPILE = Symbol('compileRules')

/**
 * `rules` (Browsersync's `rewriteRules` shape) compiled once, for any number of rewriters: pass the
 * result to `createRewriter` and `rewrite` in place of the array. Throws naming a bad rule.
 */
export function compileRules(rules) {
  if (rules instanceof CompiledRules) return rules
  return new CompiledRules(compile(rules), MADE_BY_COMPILE)
}

/** `rules` compiled into a wasm `Rules`, each error naming its rule. */
function compile(rules) {
  if (!Array.isArray(rules)) {
    throw new TypeError(`rules must be an array of { match, replace } or compileRules(rules)'s value, got ${typeName(rules)}`)
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
      const replace = replacement(rule[key], name, key)
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
 * A `TransformStream` that rewrites a body with `rules` (an array of rules, or `compileRules(rules)`'s
 * value, which skips compiling them again): `response.body.pipeThrough(createRewriter(rules, options))`.
 * The body is never held whole: each chunk comes out as soon as no match can still span it.
 *
 * Options: `from` and `to` (origins: links to `from` lead to `to`, Browsersync's link rewrite), `snippet`
 * (HTML put after the first `<body>` tag), `maxMatchBytes` (what one pending match may hold back,
 * default 64 KiB), `url` (the request's path, for rules' `paths`), `req` and `res` (what rule functions
 * get first: `{ url, method, headers }` or a Fetch `Request`, `{ statusCode, headers }` or a `Response`).
 *
 * The stream's memory is given back when it ends, fails, or is cancelled (the reader cancels, the
 * writer aborts: a client that went away).
 */
export function createRewriter(rules, options = {}) {
  const body = openBody(rules, options)
  // Chunks gathered are pushed when the source pauses: once this turn of the event loop is over.
  let pause
  const stop = () => {
    clearTimeout(pause)
    body.free()
  }
  return new TransformStream({
    transform(chunk, controller) {
      try {
        const out = body.push(bytesOf(chunk, 'a chunk'))
        if (out.length > 0) controller.enqueue(out)
      } catch (error) {
        stop()
        throw error
      }
      if (body.gathering && pause === undefined) {
        pause = setTimeout(() => {
          pause = undefined
          try {
            const out = body.pause()
            if (out.length > 0) controller.enqueue(out)
          } catch (error) {
            stop()
            controller.error(error)
          }
        }, 0)
      }
    },
    flush(controller) {
      try {
        const out = body.finish()
        if (out.length > 0) controller.enqueue(out)
      } finally {
        stop()
      }
    },
    // The reader cancelled, or the writer aborted: the rest of the body will not come.
    cancel() {
      stop()
    },
  })
}

/**
 * What one read of `rewriteBody` asks its source for. In workerd a read that reaches JavaScript costs
 * about 50 µs of CPU whatever its size, and a network body comes in 4 KiB chunks: a 100 KB page piped
 * through a `TransformStream` spent 1.7 ms in reads alone (measured from outside, see docs/edge.md).
 */
const READ_BYTES = 64 * 1024

/**
 * `source` (a `ReadableStream` of bytes: `response.body`) rewritten with `rules`, as a new
 * `ReadableStream`: what `createRewriter` does through `pipeThrough`, but reading the source itself, up to
 * 64 KiB at a time where it is a byte stream (workerd's and undici's bodies are), else chunk by chunk.
 * Reads only as the result is read; cancelling the result cancels `source` and frees the memory, as do
 * the end and any error.
 */
export function rewriteBody(source, rules, options = {}) {
  if (!(source instanceof ReadableStream)) {
    throw new TypeError(`body must be a ReadableStream (such as response.body), got ${typeName(source)}`)
  }
  if (source.locked) throw new TypeError('body is locked: another reader is reading it (or it was read already)')
  const body = openBody(rules, options)
  let reader
  let byob = true
  try {
    reader = source.getReader({ mode: 'byob' })
  } catch {
    reader = source.getReader() // not a byte stream
    byob = false
  }
  let view = byob ? new Uint8Array(READ_BYTES) : null
  let pending = null
  let cancelled = false
  const read = () => {
    if (!byob) return reader.read()
    const buffer = view ?? new Uint8Array(READ_BYTES)
    view = null
    return reader.read(buffer)
  }
  const fail = (error) => {
    body.free()
    reader.cancel(error).catch(() => {})
    throw error
  }
  return new ReadableStream({
    async pull(controller) {
      try {
        for (;;) {
          pending ??= read()
          // Gathered bytes go through when the source pauses, as in createRewriter.
          if (body.gathering && !(await settlesThisTurn(pending))) {
            if (cancelled) return
            const out = body.pause()
            if (out.length > 0) return controller.enqueue(out)
          }
          const { done, value } = await pending
          pending = null
          // Cancelling settles the pending read as done: the body's rest is not rewritten.
          if (cancelled) return
          if (done) {
            const out = body.finish()
            body.free()
            if (out.length > 0) controller.enqueue(out)
            return controller.close()
          }
          const out = body.push(bytesOf(value, 'a chunk'))
          // The engine copied the bytes: the buffer serves the next read.
          if (byob) view = new Uint8Array(value.buffer)
          if (out.length > 0) return controller.enqueue(out)
        }
      } catch (error) {
        fail(error)
      }
    },
    cancel(reason) {
      cancelled = true
      body.free()
      return reader.cancel(reason)
    },
  })
}

/** Whether `promise` settles before this turn of the event loop is over. */
function settlesThisTurn(promise) {
  let timer
  return Promise.race([
    promise.then(() => true, () => true),
    new Promise((resolve) => (timer = setTimeout(resolve, 0, false))),
  ]).finally(() => clearTimeout(timer))
}

/**
 * `createRewriter`'s options checked and its engine stream made, for one body. Exported for the tests'
 * hooks (__test__/fixtures/wasm-hooks.mjs), which drive a body by hand; this file is not in the
 * package's `exports`, so users cannot reach it.
 */
export function openBody(rules, options = {}) {
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
  const bodyContext = {
    req: shapeRequest(options.req ?? (url !== undefined ? { url } : undefined)),
    res: shapeResponse(options.res),
  }
  const compiled = compileRules(rules)
  let stream
  try {
    let links = [undefined, undefined, undefined]
    if (from !== undefined) {
      const local = origin(to, 'to')
      links = [origin(from, 'from').host, local.protocol.slice(0, -1), local.host]
    }
    const [fromHost, localScheme, localHost = ''] = links
    const path = url === undefined ? bodyContext.req.url : String(url)
    stream = new Stream(rulesOf(compiled), path, localHost, maxMatchBytes, snippet, fromHost, localScheme)
  } finally {
    if (compiled !== rules) compiled.free()
  }
  return new Body(stream, bodyContext)
}

/**
 * Chunks that come back to back are gathered up to this many bytes before they go through the engine,
 * as the native proxy gathers an upstream's: a call into the engine costs more than a tiny chunk's
 * bytes. A pause of the source pushes what was gathered at once (see `createRewriter`).
 */
const GATHER = 16 * 1024
const NOTHING = new Uint8Array(0)

/**
 * One body through the engine's `Stream`: the chunks gathered, the body's `req` and `res` set around each
 * call (rule functions run inside them), and the stream's memory given back by `free()`, even when a rule
 * function frees it during a call (then once the call is over).
 */
class Body {
  #stream
  #context
  #gathered = null
  #length = 0
  #busy = false
  #freeAfterCall = false

  constructor(stream, context) {
    this.#stream = stream
    this.#context = context
  }

  /** Whether bytes are gathered, waiting for more or for a pause. */
  get gathering() {
    return this.#length > 0
  }

  /** The next chunk: what is final now (nothing while the chunk waits, gathered, for the next ones). */
  push(bytes) {
    if (this.#length + bytes.length < GATHER) {
      this.#gather(bytes)
      return NOTHING
    }
    if (this.#length === 0) return this.#call((stream) => stream.push(bytes))
    this.#gather(bytes)
    return this.pause()
  }

  /** The source paused: what was gathered goes through; returns what is final. */
  pause() {
    if (this.#length === 0) return NOTHING
    const gathered = this.#gathered.subarray(0, this.#length)
    this.#length = 0
    // A buffer grown past the usual size is not kept.
    if (this.#gathered.length > GATHER) this.#gathered = null
    return this.#call((stream) => stream.push(gathered))
  }

  /** The end of the body: everything still gathered or held back, rewritten. */
  finish() {
    const last = this.pause()
    const rest = this.#call((stream) => stream.finish())
    return last.length === 0 ? rest : concat([last, rest])
  }

  /** Gives the engine's memory back (at the end, on an error, when cancelled). */
  free() {
    this.#gathered = null
    this.#length = 0
    if (this.#busy) {
      this.#freeAfterCall = true
      return
    }
    const stream = this.#stream
    this.#stream = undefined
    if (stream) stream.free()
  }

  #gather(bytes) {
    const needed = this.#length + bytes.length
    if (this.#gathered === null || this.#gathered.length < needed) {
      const grown = new Uint8Array(Math.max(GATHER, needed))
      if (this.#length > 0) grown.set(this.#gathered.subarray(0, this.#length))
      this.#gathered = grown
    }
    this.#gathered.set(bytes, this.#length)
    this.#length = needed
  }

  #call(step) {
    if (this.#stream === undefined) throw new TypeError('the rewriter was cancelled, or its body ended')
    this.#busy = true
    try {
      return withContext(this.#context, () => step(this.#stream))
    } catch (error) {
      this.#busy = false
      this.free()
      throw error
    } finally {
      this.#busy = false
      if (this.#freeAfterCall) this.free()
    }
  }
}

/**
 * `input` rewritten with `rules` (an array, or `compileRules(rules)`'s value), with the results of the
 * native `rewrite()`: a string is rewritten whole (rule functions get it as `string`), an array of
 * chunks (strings, Uint8Arrays) is streamed (`string` is `undefined`). `context.req`/`context.res` are
 * what rule functions get first.
 */
export function rewrite(input, rules, context = {}) {
  return rewriteEach([input], rules, context, 'input')[0]
}

/**
 * `rewrite()` of each input, the rules compiled once (`name`: how an error names the input; `null`:
 * by its index). Exported for the tests' hooks (__test__/fixtures/wasm-hooks.mjs).
 */
export function rewriteEach(inputs, rules, context = {}, name = null) {
  if (context === null || typeof context !== 'object') {
    throw new TypeError(`context must be an object, got ${typeName(context)}`)
  }
  checkKeys(context, CONTEXT_KEYS, 'context')
  const bodyContext = { req: shapeRequest(context.req), res: shapeResponse(context.res) }
  inputs.forEach((input, i) => {
    if (typeof input !== 'string' && !Array.isArray(input)) {
      const what = name ?? `inputs[${i}]`
      throw new TypeError(`${what} must be a string or an array of strings and Buffers, got ${typeName(input)}`)
    }
  })
  const compiled = compileRules(rules)
  try {
    const wasmRules = rulesOf(compiled)
    return withContext(bodyContext, () =>
      inputs.map((input) => {
        if (typeof input === 'string') return rewriteText(wasmRules, input, input)
        let chunks = input.map((chunk, i) => bytesOf(chunk, `input[${i}]`))
        // Many chunks go through as one, as in the native `rewrite()`: they are all in hand, and a call
        // into the engine for each tiny one would cost more than its bytes.
        if (chunks.length > MAX_CHUNKS_AS_GIVEN) chunks = [concat(chunks)]
        // No URL: every rule applies; uncapped: every chunk is in hand.
        const stream = new Stream(wasmRules, undefined, '', 2 ** 31)
        try {
          const parts = chunks.map((chunk) => stream.push(chunk))
          parts.push(stream.finish())
          return decoder.decode(concat(parts))
        } finally {
          stream.free()
        }
      }),
    )
  } finally {
    if (compiled !== rules) compiled.free()
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
