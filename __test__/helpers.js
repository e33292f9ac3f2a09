'use strict'
// Shared helpers for the devproxy-native end-to-end tests.
// Everything binds to 127.0.0.1 only and never contacts any other address.

const assert = require('node:assert/strict')
const http = require('node:http')
const https = require('node:https')
const net = require('node:net')
const path = require('node:path')
const zlib = require('node:zlib')
const { spawn } = require('node:child_process')

const ROOT = path.resolve(__dirname, '..')
const HOST = '127.0.0.1'

let addon
/** The addon, loaded lazily so `node --check` works before it is built. */
function lib() {
  if (!addon) addon = require(ROOT)
  return addon
}

/**
 * Set by the release workflow's test jobs, which test the release builds: those have no test hooks
 * (docs/releasing.md). Tests that need a hook skip there with this reason.
 */
const RELEASE_BUILD = process.env.DEVPROXY_RELEASE_BUILD === '1'
const NO_HOOKS = RELEASE_BUILD && 'a release build has no test hooks (DEVPROXY_RELEASE_BUILD=1)'

/**
 * The package's API plus the addon's test hooks (`__panicProbe`, `__rewriteEach`), which only a build
 * with the `test-hooks` cargo feature has: scripts/prepare.js builds a clone's addon with it, the release
 * workflow without. On a release build `__rewriteEach` is `rewrite()` per input (the rules compiled for
 * each: slower, same results) and `__panicProbe` is missing.
 */
function hooks() {
  const native = require(path.join(ROOT, 'lib', 'native.js'))
  const { wrapRules } = require(path.join(ROOT, 'lib', 'rules.js'))
  if (typeof native.__panicProbe !== 'function') {
    if (!RELEASE_BUILD) throw new Error('the addon was built without the test-hooks feature: DEVPROXY_FORCE_BUILD=1 npm install (scripts/prepare.js) builds it with them')
    return { ...lib(), __rewriteEach: (inputs, rules, context) => inputs.map((input) => lib().rewrite(input, rules, context)) }
  }
  return {
    ...lib(),
    __panicProbe: native.__panicProbe,
    // As `rewrite()`: rule functions get the context's req/res, or the defaults.
    __rewriteEach: (inputs, rules, context) => native.__rewriteEach(inputs, wrapRules(rules, context)),
  }
}

/** A promise with its resolve/reject exposed. */
function deferred() {
  let resolve
  let reject
  const promise = new Promise((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** Failure guard: rejects if `promise` does not settle within `ms`. Never used to make a test pass. */
/**
 * For `assert.rejects(stopIfStarted(start(options)), ...)`: a start() that resolves where it should
 * have refused stops again, so the assertion fails instead of the test file hanging on a running proxy.
 */
async function stopIfStarted(starting) {
  const server = await starting
  if (server && typeof server.stop === 'function') await server.stop()
  return server
}

/**
 * Copies what this process writes to stderr from now on (it is still written): `text()` is what came
 * so far, `restore()` ends the copy.
 */
function tapStderr() {
  const write = process.stderr.write
  let text = ''
  process.stderr.write = function (chunk, ...rest) {
    text += String(chunk)
    return write.call(this, chunk, ...rest)
  }
  return {
    text: () => text,
    restore: () => {
      process.stderr.write = write
    },
  }
}

function withTimeout(promise, ms, label = 'operation') {
  let timer
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => {
      const err = new Error(`timed out after ${ms} ms waiting for ${label}`)
      err.timeout = true
      reject(err)
    }, ms)
  })
  return Promise.race([Promise.resolve(promise), guard]).finally(() => clearTimeout(timer))
}

/**
 * Resolves once `condition()` (sync or async) holds, looked at every `everyMs`; fails after `ms`
 * naming `what` ("not <what> within N s"). For waits on another process or a record finished after
 * the answer: an event to wait on is better where there is one.
 */
async function until(condition, ms, what, everyMs = 50) {
  const deadline = Date.now() + ms
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`not ${what} within ${ms / 1000} s`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/** Yields to the event loop (lets queued writes go out as separate chunks; correctness never depends on it). */
function tick() {
  return new Promise((resolve) => setImmediate(resolve))
}

/**
 * Start an upstream http (or https, when `opts.tls`: https.createServer options such as {key, cert}) server on 127.0.0.1:0.
 * `routes` maps a pathname ('/x', query ignored) to `(req, res, upstream) => void`; anything else is a 404.
 * Every request is recorded in `requests` ({method, url, headers, rawHeaders}) before its handler runs.
 * `opts.onUpgrade(req, socket, head)` receives upgrade requests (also recorded).
 */
async function startUpstream(routes = {}, opts = {}) {
  const requests = []
  const handler = (req, res) => {
    requests.push({ method: req.method, url: req.url, headers: { ...req.headers }, rawHeaders: req.rawHeaders.slice() })
    const pathname = req.url.split('?')[0]
    const route = routes[pathname]
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' })
      res.end('no route ' + pathname)
      return
    }
    try {
      const r = route(req, res, upstream)
      if (r && typeof r.catch === 'function') r.catch((err) => { res.destroy(err) })
    } catch (err) {
      res.destroy(err)
    }
  }
  const server = opts.tls ? https.createServer({ ...opts.tls }, handler) : http.createServer(handler)
  server.keepAliveTimeout = 2000
  if (opts.onUpgrade) {
    server.on('upgrade', (req, socket, head) => {
      requests.push({ method: req.method, url: req.url, headers: { ...req.headers }, rawHeaders: req.rawHeaders.slice(), upgrade: true })
      opts.onUpgrade(req, socket, head)
    })
  }
  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, HOST, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const port = server.address().port
  const scheme = opts.tls ? 'https' : 'http'
  let closed = false
  const upstream = {
    server,
    port,
    host: `${HOST}:${port}`,
    url: `${scheme}://${HOST}:${port}`,
    requests,
    async close() {
      if (closed) return
      closed = true
      await new Promise((resolve) => {
        server.close(() => resolve())
        if (typeof server.closeAllConnections === 'function') server.closeAllConnections()
      })
    },
  }
  return upstream
}

/** A port on 127.0.0.1 that nothing listens on (bound then released). */
async function deadPort() {
  const srv = net.createServer()
  await new Promise((resolve, reject) => {
    srv.once('error', reject)
    srv.listen(0, HOST, resolve)
  })
  const { port } = srv.address()
  await new Promise((resolve) => srv.close(resolve))
  return port
}

/** Occupy a port on 127.0.0.1; returns {port, close}. */
async function occupyPort(port = 0) {
  const srv = net.createServer((s) => s.destroy())
  await new Promise((resolve, reject) => {
    srv.once('error', reject)
    srv.listen(port, HOST, resolve)
  })
  return {
    port: srv.address().port,
    close: () => new Promise((resolve) => srv.close(() => resolve())),
  }
}

/** Resolves true if a TCP connect to 127.0.0.1:port is refused. */
function connectRefused(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, HOST)
    s.once('connect', () => {
      s.destroy()
      resolve(false)
    })
    s.once('error', (err) => resolve(err.code === 'ECONNREFUSED'))
  })
}

/**
 * HTTP request helper. Resolves {status, headers, rawHeaders, body: Buffer} after a COMPLETE response.
 * Rejects with err.aborted = true when the response starts but does not complete (aborted / premature close),
 * and with the socket error when no response arrives at all.
 * opts: {method, headers, body (Buffer|string), timeout (failure guard, ms), onResponse(res), onData(chunk, res),
 *        collect (default true; false keeps no body), ca and rejectUnauthorized (https URLs: whom to trust)}.
 */
function request(url, opts = {}) {
  const { method = 'GET', headers = {}, body, timeout = 20000, onResponse, onData, collect = true, ca, rejectUnauthorized } = opts
  return new Promise((resolve, reject) => {
    let settled = false
    const done = (err, value) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      if (err) reject(err)
      else resolve(value)
    }
    const mod = url.startsWith('https:') ? https : http
    const tls = mod === https ? { ca, rejectUnauthorized } : {}
    const req = mod.request(url, { method, headers, agent: false, ...tls })
    const timer = setTimeout(() => {
      const err = new Error(`request ${method} ${url} timed out after ${timeout} ms`)
      err.timeout = true
      done(err)
      req.destroy()
    }, timeout)
    req.on('error', (err) => done(err))
    req.on('response', (res) => {
      const chunks = []
      let aborted = false
      const markAborted = (why) => {
        if (aborted) return
        aborted = true
        const err = new Error(`response aborted (${why}) after ${Buffer.concat(chunks).length} body bytes`)
        err.aborted = true
        err.status = res.statusCode
        err.headers = res.headers
        err.partialBody = Buffer.concat(chunks)
        done(err)
      }
      if (onResponse) {
        try {
          onResponse(res)
        } catch (err) {
          done(err)
        }
      }
      res.on('data', (c) => {
        if (collect) chunks.push(c)
        if (onData) onData(c, res)
      })
      res.on('aborted', () => markAborted('aborted event'))
      res.on('error', (err) => markAborted(err.code || err.message))
      res.on('end', () => {
        if (!res.complete) return markAborted('incomplete end')
        done(null, { status: res.statusCode, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) })
      })
      res.on('close', () => {
        if (!res.complete) markAborted('closed before complete')
      })
    })
    if (body !== undefined) req.end(body)
    else req.end()
  })
}

/** Start the proxy, run fn(server), always stop it. */
async function withProxy(options, fn) {
  // quiet: the proxy's per-request log lines would clutter the test output
  const server = await lib().start({ quiet: true, ...options })
  try {
    return await fn(server)
  } finally {
    await withTimeout(server.stop(), 15000, 'server.stop()')
  }
}

/** Decode a body according to a Content-Encoding header (gzip, deflate, br, identity). */
function decodeBody(buf, encoding) {
  const enc = (encoding || 'identity').trim().toLowerCase()
  switch (enc) {
    case 'identity':
    case '':
      return buf
    case 'gzip':
    case 'x-gzip':
      return zlib.gunzipSync(buf)
    case 'deflate':
      // RFC 9110: 'deflate' is the zlib format (RFC 1950), not raw deflate
      return zlib.inflateSync(buf)
    case 'br':
      return zlib.brotliDecompressSync(buf)
    default:
      throw new Error(`cannot decode Content-Encoding ${enc} in Node 20`)
  }
}

/** Browsersync's own link rewrite (browser-sync 3, dist/server/proxy-utils.js), applied as resp-modifier does. */
function browsersyncRewriteLinks(input, targetPort, requestHost) {
  const { rewriteLinks } = require(path.join(ROOT, 'node_modules/browser-sync/dist/server/proxy-utils.js'))
  const rule = rewriteLinks({ hostname: HOST, port: targetPort })
  const req = { headers: { host: requestHost } }
  return input.replace(rule.match, (...a) => rule.fn(req, {}, ...a))
}

/** Deterministic PRNG (mulberry32). */
function mulberry32(seed) {
  let a = seed >>> 0
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Split a buffer into random pieces (for chunked upstream writes). */
function randomSplits(buf, rnd, maxPieces = 6) {
  const n = 1 + Math.floor(rnd() * maxPieces)
  const cuts = new Set()
  for (let i = 0; i < n - 1 && buf.length > 1; i++) cuts.add(1 + Math.floor(rnd() * (buf.length - 1)))
  const sorted = [...cuts].sort((x, y) => x - y)
  const parts = []
  let last = 0
  for (const c of sorted) {
    parts.push(buf.subarray(last, c))
    last = c
  }
  parts.push(buf.subarray(last))
  return parts
}

/** Write chunks one by one, yielding between them, then end. */
async function writeChunks(res, chunks) {
  for (const c of chunks) {
    if (!res.write(c)) await new Promise((resolve) => res.once('drain', resolve))
    await tick()
  }
  res.end()
}

/**
 * Spawn `node <script>` with an IPC channel. Returns {child, messages: async iterator-ish next(type)}.
 */
function spawnNode(script, args = [], env = {}, nodeArgs = [], launcher = []) {
  // `launcher`: a command that runs Node (`['unshare', '-m', ...]`), given Node's command line last.
  const command = [...launcher, process.execPath, ...nodeArgs, script, ...args]
  const child = spawn(command[0], command.slice(1), {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: { ...process.env, ...env },
  })
  let stderr = ''
  let stdout = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  const queue = []
  const waiters = []
  // A child reports a failure as {type:'error', message}: every wait for another message fails at once with it,
  // rather than when its guard runs out with the message lost.
  let failure = null
  const failed = () => new Error(`child reported an error: ${failure.message}\nstderr: ${stderr}`)
  child.on('message', (m) => {
    if (m && m.type === 'error' && !waiters.some((w) => w.type === 'error')) {
      failure = m
      for (const w of waiters.splice(0)) w.reject(failed())
      return
    }
    const i = waiters.findIndex((w) => w.type === m.type)
    if (i >= 0) waiters.splice(i, 1)[0].resolve(m)
    else queue.push(m)
  })
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  return {
    child,
    exited,
    output: () => ({ stdout, stderr }),
    /** Next IPC message of this type (failure guard ms). */
    next(type, ms = 15000) {
      const i = queue.findIndex((m) => m.type === type)
      if (i >= 0) return Promise.resolve(queue.splice(i, 1)[0])
      if (failure && type !== 'error') return Promise.reject(failed())
      const d = deferred()
      waiters.push({ type, resolve: d.resolve, reject: d.reject })
      const onExit = exited.then(({ code, signal }) => {
        throw new Error(`child exited (code ${code}, signal ${signal}) before sending '${type}'. stderr: ${stderr}`)
      })
      return withTimeout(Promise.race([d.promise, onExit]), ms, `child message '${type}' (stderr: ${stderr})`)
    },
    send(m) {
      child.send(m)
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      return exited
    },
  }
}

/**
 * One upstream shared by the tests of a file: started before them, closed after them. Tests add handlers
 * to `routes`. Returns a stand-in whose properties (url, host, port, requests...) are the running upstream's.
 */
function fileUpstream(routes) {
  const { before, after } = require('node:test')
  let running
  before(async () => {
    running = await startUpstream(routes)
  })
  after(async () => {
    await running.close()
  })
  return new Proxy({}, { get: (_, key) => running[key] })
}

/** Debian's Chromium, or the one `CHROMIUM_PATH` names. */
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium'

/**
 * Headless Chromium through playwright-core, for the tests whose user is a browser. Throws, naming
 * what is missing, when it cannot start: those tests fail, never skip.
 */
async function launchChromium(extraArgs = []) {
  let chromium
  try {
    ;({ chromium } = require('playwright-core'))
  } catch (err) {
    throw new Error(`playwright-core is missing (npm install): ${err.message}`)
  }
  const args = ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', ...extraArgs]
  try {
    return await chromium.launch({ executablePath: CHROMIUM, headless: true, args, timeout: 60000 })
  } catch (err) {
    throw new Error(`Chromium could not be launched from ${CHROMIUM} (install it with the README's set-up command): ${err.message}`)
  }
}

/** The payload of a complete chunked body. */
function dechunk(buf) {
  const out = []
  let i = 0
  for (;;) {
    const eol = buf.indexOf('\r\n', i)
    if (eol < 0) return Buffer.concat(out)
    const size = parseInt(buf.subarray(i, eol).toString('latin1'), 16)
    if (!size) return Buffer.concat(out)
    out.push(buf.subarray(eol + 2, eol + 2 + size))
    i = eol + 2 + size + 2
  }
}

/**
 * Writes `bytes` on a new connection to `port` and reads one response: {status, head, headers, body
 * (a Buffer, de-chunked), closed, ms}, once it is complete (Content-Length or chunked) or the connection
 * closes. Rejects after `timeout` ms (a failure guard; the socket is destroyed; `err.timeout` is set).
 */
function rawExchange(port, bytes, { timeout = 10000 } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now()
    const socket = net.connect(port, HOST)
    let buf = Buffer.alloc(0)
    let settled = false
    const finish = (closed) => {
      if (settled) return
      const end = buf.indexOf('\r\n\r\n')
      const head = end < 0 ? buf.toString('latin1') : buf.subarray(0, end).toString('latin1')
      const body = end < 0 ? Buffer.alloc(0) : buf.subarray(end + 4)
      const len = /\r\ncontent-length:\s*(\d+)/i.exec(head)
      const chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head)
      const complete = end >= 0 && (len ? body.length >= Number(len[1]) : chunked ? body.includes('0\r\n\r\n') : false)
      if (!closed && !complete) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head)
      const headers = {}
      for (const line of head.split('\r\n').slice(1)) {
        const i = line.indexOf(':')
        if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
      }
      resolve({ status: m ? Number(m[1]) : null, head, headers, body: chunked ? dechunk(body) : body, closed, ms: Date.now() - t0 })
    }
    const timer = setTimeout(() => {
      settled = true
      socket.destroy()
      const err = new Error(`no complete response within ${timeout} ms; got ${JSON.stringify(buf.toString('latin1').slice(0, 200))}`)
      err.timeout = true
      reject(err)
    }, timeout)
    socket.on('data', (d) => {
      buf = Buffer.concat([buf, d])
      finish(false)
    })
    socket.on('close', () => finish(true))
    socket.on('error', () => {})
    socket.on('connect', () => socket.write(bytes))
  })
}

module.exports = {
  hooks,
  RELEASE_BUILD,
  NO_HOOKS,
  rawExchange,
  dechunk,
  tapStderr,
  ROOT,
  fileUpstream,
  HOST,
  lib,
  deferred,
  withTimeout,
  until,
  stopIfStarted,
  tick,
  startUpstream,
  deadPort,
  occupyPort,
  connectRefused,
  request,
  withProxy,
  decodeBody,
  browsersyncRewriteLinks,
  mulberry32,
  randomSplits,
  writeChunks,
  spawnNode,
  CHROMIUM,
  launchChromium,
}

/** A browser-like Accept header for page navigations. */
module.exports.ACCEPT_HTML = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'
/** Browsersync's snippet insertion rule: right after the first <body...> tag. */
module.exports.insertSnippet = (body, snippet) => body.replace(/<body[^>]*>/i, (m) => m + snippet)
