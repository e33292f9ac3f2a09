'use strict'
// The `devproxy` command line (bin/devproxy.js): arguments and config file -> `start()` options, the
// startup banner, and Ctrl-C handling. Bad input is a `UsageError`: one line, no stack trace.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { parseArgs } = require('node:util')
const { pathToFileURL } = require('node:url')

const USAGE = `Usage:
  devproxy <target> [options]
  devproxy start --proxy <target> [options]     (browser-sync's spelling)
  devproxy har <cassette> [out.har]             a recorded cassette as HAR 1.2 (stdout without out.har)

Puts a local proxy in front of <target> (http://localhost:8000, https://example.test, localhost:8000):
pages come back with the target's links pointing at the proxy, your rewrite rules applied and your
snippet injected.

Options:
  -p, --port <n>           port to listen on (default 3000; the next free one when it is taken, 0 = any)
      --strict-port        fail when --port is taken instead of moving on
  -H, --host <address>     listen address (default 127.0.0.1; 0.0.0.0 or :: expose the proxy to your network)
      --https              serve HTTPS (and HTTP/2) with a self-signed certificate made at start
      --serve-static <dir> serve files from <dir> before the proxy (repeatable)
  -r, --rule <rule>        a rewrite rule, /regex/flags=replacement (repeatable, applied in order)
      --snippet <html>     HTML inserted right after the first <body ...> tag of pages
  -c, --config <file>      the options of start() from a file (.js, .mjs, .cjs, .json); without it,
                           devproxy.config.{js,mjs,cjs,json} in the current directory is read when there.
                           Flags win; rules and static dirs are added to the file's
      --record <file>      record every exchange to a cassette (JSON Lines; secrets redacted)
      --replay <file>      answer from a cassette instead of the target
      --speed <n>          replay timing: 1 as recorded (default), 4 four times faster, 0 at once
      --on-miss <mode>     a request the cassette lacks: error (404, default), proxy, or record
      --log-requests       one line per request on stderr (method, path, status, timings)
      --inspector          the request inspector at /__devproxy/ (loopback only)
      --log-level <level>  info (default), debug, warn or silent
  -v, --version            print the version
  -h, --help               print this help

Rules: --rule '/<regex>/<flags>=<replacement>'. The regex is written as a JavaScript regex literal
(slashes inside it escaped as \\/ unless inside [...]), flags are JavaScript's (g for every match,
i to ignore case...; without g only the first match is replaced), and everything after the first =
that follows the flags is the replacement, with $&, $1, $<name> and $$ as in String.prototype.replace.

Examples:
  devproxy localhost:8000
  devproxy http://localhost:8000 --port 4000 --host 0.0.0.0
  devproxy start --proxy https://shop.test --https --serve-static public
  devproxy localhost:8000 --rule '/Powered by \\w+/g=Powered by devproxy' --rule '/<title>/i=$&[dev] '
  devproxy localhost:8000 --snippet '<script async src="/reload.js"></script>'
  devproxy --config devproxy.config.js
  devproxy localhost:8000 --record session.jsonl --log-requests
  devproxy localhost:8000 --replay session.jsonl --speed 0 --on-miss proxy

Ctrl-C stops: requests in flight finish first (up to gracePeriodMs, 5 s); a second Ctrl-C quits at once.`

/** Bad input from the user: printed as one line, exit code 2. */
class UsageError extends Error {}

const OPTIONS = {
  port: { type: 'string', short: 'p' },
  'strict-port': { type: 'boolean' },
  host: { type: 'string', short: 'H' },
  https: { type: 'boolean' },
  'serve-static': { type: 'string', multiple: true },
  rule: { type: 'string', short: 'r', multiple: true },
  snippet: { type: 'string' },
  config: { type: 'string', short: 'c' },
  'log-level': { type: 'string' },
  record: { type: 'string' },
  replay: { type: 'string' },
  speed: { type: 'string' },
  'on-miss': { type: 'string' },
  'log-requests': { type: 'boolean' },
  inspector: { type: 'boolean' },
  proxy: { type: 'string' },
  version: { type: 'boolean', short: 'v' },
  help: { type: 'boolean', short: 'h' },
}

const LOG_LEVELS = ['info', 'debug', 'warn', 'silent']
const ON_MISS = ['error', 'proxy', 'record']
/** Config files read from the working directory when `--config` is not given, in this order. */
const CONFIG_NAMES = ['devproxy.config.js', 'devproxy.config.mjs', 'devproxy.config.cjs', 'devproxy.config.json']
const TS_CONFIG_NAMES = ['devproxy.config.ts', 'devproxy.config.mts', 'devproxy.config.cts']

/** The flag closest to a misspelt one (`--prot` -> `--port`), chosen as option warnings choose. */
function closestFlag(flag) {
  const { __closestName } = require('./native.js')
  const long = Object.keys(OPTIONS).map((name) => `--${name}`)
  return flag.startsWith('--') ? __closestName(flag, long) : null
}

/** parseArgs's errors say what went wrong at length; this says it in one line. */
function parseError(error) {
  const unknown = /^Unknown option '([^']+)'/.exec(error.message)
  if (unknown) {
    const near = closestFlag(unknown[1])
    const hint = near ? `did you mean ${near}?` : 'devproxy --help lists the options'
    return new UsageError(`unknown option ${unknown[1]} (${hint})`)
  }
  const missing = /^Option '(?:-\w, )?(--[\w-]+) <value>' argument missing/.exec(error.message)
  if (missing) return new UsageError(`${missing[1]} needs a value`)
  const bool = /^Option '(?:-\w, )?(--[\w-]+)' does not take an argument/.exec(error.message)
  if (bool) return new UsageError(`${bool[1]} takes no value`)
  return new UsageError(error.message.split('\n')[0])
}

/**
 * Parses `--rule '/regex/flags=replacement'`: the regex literal ends at the first `/` that is neither
 * escaped nor inside a character class, as in JavaScript source.
 */
function parseRule(text) {
  const shape = `--rule ${JSON.stringify(text)}: expected /regex/flags=replacement, as in '/foo/g=bar'`
  if (!text.startsWith('/')) throw new UsageError(shape)
  let i = 1
  let inClass = false
  for (; i < text.length; i++) {
    const c = text[i]
    if (c === '\\') i++
    else if (c === '[') inClass = true
    else if (c === ']') inClass = false
    else if (c === '/' && !inClass) break
  }
  if (i >= text.length) throw new UsageError(shape)
  const source = text.slice(1, i)
  const rest = text.slice(i + 1)
  const eq = rest.indexOf('=')
  if (eq < 0) throw new UsageError(shape)
  const flags = rest.slice(0, eq)
  if (source === '') throw new UsageError(`--rule ${JSON.stringify(text)}: the regex is empty`)
  let match
  try {
    match = new RegExp(source, flags)
  } catch (e) {
    throw new UsageError(`--rule ${JSON.stringify(text)}: ${e.message}`)
  }
  return { match, replace: rest.slice(eq + 1) }
}

function parsePort(text) {
  if (!/^\d+$/.test(text) || Number(text) > 65535) {
    throw new UsageError(`--port must be a whole number from 0 to 65535, got ${JSON.stringify(text)}`)
  }
  return Number(text)
}

/** A target as the user typed it, checked here so a typo is reported as the flag they used. */
function checkTarget(target, flag) {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(target) ? target : `http://${target}`
  let url
  try {
    url = new URL(withScheme)
  } catch {
    throw new UsageError(`${flag} ${JSON.stringify(target)} is not a URL (try http://localhost:8000)`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`${flag} ${JSON.stringify(target)}: only http:// and https:// targets can be proxied`)
  }
  return target
}

/**
 * The command line as data: `{ help }`, `{ version }`, or `{ config, options }` where `options` holds
 * what the flags set (merged over the config file's by `buildOptions`).
 */
function parseCli(argv) {
  let parsed
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true })
  } catch (e) {
    throw parseError(e)
  }
  const { values, positionals } = parsed
  if (values.help) return { help: true }
  if (values.version) return { version: true }
  const args = positionals[0] === 'start' ? positionals.slice(1) : positionals
  if (args.length > 1) throw new UsageError(`one target only, got ${args.map((a) => JSON.stringify(a)).join(' and ')}`)
  if (args.length === 1 && values.proxy !== undefined) {
    throw new UsageError(`two targets: ${JSON.stringify(args[0])} and --proxy ${JSON.stringify(values.proxy)}`)
  }
  const options = {}
  if (args.length === 1) options.proxy = checkTarget(args[0], 'target')
  if (values.proxy !== undefined) options.proxy = checkTarget(values.proxy, '--proxy')
  if (values.port !== undefined) options.port = parsePort(values.port)
  if (values['strict-port']) options.strictPort = true
  if (values.host !== undefined) options.host = values.host
  if (values.https) options.https = true
  if (values['serve-static']) options.serveStatic = values['serve-static']
  if (values.rule) options.rewriteRules = values.rule.map((text) => checkRule(text, parseRule(text)))
  if (values.snippet !== undefined) options.snippet = values.snippet
  if (values['log-level'] !== undefined) {
    if (!LOG_LEVELS.includes(values['log-level'])) {
      throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(values['log-level'])}`)
    }
    options.logLevel = values['log-level']
  }
  if (values.record !== undefined && values.replay !== undefined) {
    throw new UsageError('--record and --replay together: to record what the cassette lacks, use --replay <file> --on-miss record')
  }
  if (values.record !== undefined) options.record = { path: values.record }
  const replayOnly = ['speed', 'on-miss'].filter((name) => values[name] !== undefined)
  if (values.replay === undefined && replayOnly.length > 0) {
    throw new UsageError(`--${replayOnly[0]} applies to --replay <file>, which is not given`)
  }
  if (values.replay !== undefined) {
    options.replay = { path: values.replay }
    if (values.speed !== undefined) {
      const speed = Number(values.speed)
      if (values.speed.trim() === '' || !Number.isFinite(speed) || speed < 0) {
        throw new UsageError(`--speed must be a number from 0 (at once) up, got ${JSON.stringify(values.speed)}`)
      }
      options.replay.speed = speed
    }
    if (values['on-miss'] !== undefined) {
      if (!ON_MISS.includes(values['on-miss'])) {
        throw new UsageError(`--on-miss must be one of ${ON_MISS.join(', ')}, got ${JSON.stringify(values['on-miss'])}`)
      }
      options.replay.onMiss = values['on-miss']
    }
  }
  if (values['log-requests']) options.logRequests = true
  if (values.inspector) options.inspector = true
  return { config: values.config, options }
}

/**
 * A `--rule` the engine cannot run is reported as the flag the user typed (start() would name it
 * `rewriteRules[i]`, counting the config file's rules too).
 */
function checkRule(text, rule) {
  const { rewrite } = require('../index.js')
  try {
    rewrite('', [rule])
  } catch (e) {
    throw new UsageError(`--rule ${JSON.stringify(text)}: ${String(e && e.message).replace(/^rules\[0\]: /, '')}`)
  }
  return rule
}

/**
 * The config file to read: `--config`'s, or the one of `CONFIG_NAMES` in `cwd` (a TypeScript one
 * too, so that it is refused with a reason rather than ignored); undefined when there is none.
 */
function findConfig(given, cwd) {
  if (given !== undefined) return { file: given, flag: '--config' }
  const found = [...CONFIG_NAMES, ...TS_CONFIG_NAMES].filter((name) => fs.existsSync(path.join(cwd, name)))
  if (found.length > 1) {
    throw new UsageError(`found ${found.join(' and ')} in ${cwd}: keep one, or pass the one to use with --config`)
  }
  return found.length === 1 ? { file: found[0], flag: found[0] } : undefined
}

/** Whether this Node runs TypeScript files itself (type stripping: Node 22.18+, 23.6+). */
const stripsTypes = () => Boolean(process.features && process.features.typescript)

/** `label:line:column: message` for JSON.parse's error (Node 20 gives a position, 22+ also line and column). */
function jsonErrorLine(label, text, message) {
  const at = /\s*(?:in JSON )?at position (\d+)(?: \(line \d+ column \d+\))?$/.exec(message)
  const position = at ? Number(at[1]) : /end of JSON input/.test(message) ? text.length : null
  if (position === null) return `${label}: ${message}`
  const before = text.slice(0, position)
  const line = before.split('\n').length
  const column = position - (before.lastIndexOf('\n') + 1) + 1
  return `${label}:${line}:${column}: ${at ? message.slice(0, at.index) : message}`
}

/**
 * Where a SyntaxError is: `{ file, line, column }` from the head Node puts on its stack (`file:line`,
 * the line, a caret under the column), or, when there is none (an ES module's, on Node 20), from
 * `node --check` on the file. Null when neither says.
 */
function syntaxErrorPlace(error, full) {
  const fromHead = (text) => {
    const m = /^(.+):(\d+)\n.*\n([ \t]*)\^/.exec(String(text || ''))
    if (!m) return null
    const file = m[1].startsWith('file://') ? require('node:url').fileURLToPath(m[1]) : m[1]
    return { file, line: Number(m[2]), column: m[3].length + 1 }
  }
  const place = fromHead(error.stack)
  if (place) return place
  const check = require('node:child_process').spawnSync(process.execPath, ['--check', full], { encoding: 'utf8', timeout: 10000 })
  return fromHead(check.stderr)
}

/** Reads a config file: JSON, or a JS module exporting the options (or a function returning them). */
async function loadConfig({ file, flag }, cwd) {
  const full = path.resolve(cwd, file)
  if (!fs.existsSync(full)) throw new UsageError(`--config ${file}: no such file`)
  const label = flag === '--config' ? `--config ${file}` : file
  if (/\.[mc]?ts$/.test(full) && !stripsTypes()) {
    throw new UsageError(
      `${label}: a TypeScript config needs a Node that runs TypeScript (22.18 or later); this is Node ` +
        `${process.versions.node}. Rename it to devproxy.config.mjs (plain JS), or run devproxy through a loader such as tsx`,
    )
  }
  let value
  if (full.endsWith('.json')) {
    const text = fs.readFileSync(full, 'utf8')
    try {
      value = JSON.parse(text)
    } catch (e) {
      throw new UsageError(jsonErrorLine(label, text, e.message))
    }
  } else {
    try {
      const mod = await import(pathToFileURL(full).href)
      value = mod.default !== undefined ? mod.default : mod
      if (typeof value === 'function') value = await value()
    } catch (e) {
      const place = e && e.name === 'SyntaxError' ? syntaxErrorPlace(e, full) : null
      const where = !place ? label : place.file === full ? `${label}:${place.line}:${place.column}` : `${label}: in ${place.file}:${place.line}:${place.column}`
      throw new UsageError(`${where}: ${e && e.name ? `${e.name}: ` : ''}${e && e.message ? e.message : e}`)
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new UsageError(`${label}: expected an object of start() options`)
  }
  return value
}

/** The config file's options with the flags' on top; rules and static dirs add up, file's first. */
function mergeOptions(file, flags) {
  const merged = { ...file, ...flags }
  if (flags.proxy !== undefined && file.proxy !== null && typeof file.proxy === 'object') {
    merged.proxy = { ...file.proxy, target: flags.proxy }
  }
  if (flags.rewriteRules && Array.isArray(file.rewriteRules)) merged.rewriteRules = [...file.rewriteRules, ...flags.rewriteRules]
  if (flags.serveStatic && file.serveStatic !== undefined) {
    merged.serveStatic = [...[].concat(file.serveStatic), ...flags.serveStatic]
  }
  return merged
}

/** `start()`'s options from the command line (and the config file it names). */
async function buildOptions(argv, cwd = process.cwd()) {
  const cli = parseCli(argv)
  if (cli.help || cli.version) return cli
  const found = findConfig(cli.config, cwd)
  const file = found ? await loadConfig(found, cwd) : {}
  const options = mergeOptions(file, cli.options)
  if (options.proxy === undefined) {
    throw new UsageError('no target: give one, as in `devproxy http://localhost:8000` (devproxy --help for more)')
  }
  // The banner names the file: one read without a flag must not change the proxy in silence.
  return { options, configFile: found ? path.resolve(cwd, found.file) : undefined }
}

/** The URLs at which the proxy can be reached: this machine's, and the network's when exposed. */
function bannerUrls(server, host) {
  const url = new URL(server.url)
  const scheme = url.protocol
  const port = server.port
  const wildcard = host === '0.0.0.0' || host === '::' || host === '[::]'
  const local = wildcard ? `${scheme}//localhost:${port}` : server.url
  const network = []
  if (wildcard) {
    for (const addresses of Object.values(os.networkInterfaces())) {
      for (const a of addresses || []) {
        if (a.internal) continue
        if (a.family === 'IPv4' || a.family === 4) network.push(`${scheme}//${a.address}:${port}`)
        else if (host !== '0.0.0.0' && !a.address.startsWith('fe80')) network.push(`${scheme}//[${a.address}]:${port}`)
      }
    }
  } else if (!/^(localhost|127\.|\[?::1\]?$)/.test(url.hostname)) {
    network.push(server.url)
  }
  return { local, network }
}

function banner(server, options, version, configFile) {
  const target = typeof options.proxy === 'object' && options.proxy !== null ? options.proxy.target : options.proxy
  const { local, network } = bannerUrls(server, options.listen || options.host || '127.0.0.1')
  const lines = [`devproxy ${version}: proxying ${target}`]
  if (configFile) lines.push(`  Config:   ${configFile}`)
  lines.push(`  Local:    ${local}`)
  if (network.length === 0) lines.push('  Network:  not exposed (use --host 0.0.0.0 to reach it from other devices)')
  for (const [i, u] of network.entries()) lines.push(`  ${i === 0 ? 'Network: ' : '         '} ${u}`)
  if (server.startPath) lines.push(`  Start at: ${local}${server.startPath}`)
  lines.push('Ctrl-C to stop')
  return lines.join('\n') + '\n'
}

/** `devproxy har <cassette> [out]`: resolves to the exit code. */
async function har(args, { stdout, stderr, cwd }) {
  if (args.length < 1 || args.length > 2 || args[0].startsWith('-')) {
    stderr.write('devproxy: usage: devproxy har <cassette> [out.har]\n')
    return 2
  }
  const { toHar } = require('../index.js')
  let text
  try {
    text = await toHar(path.resolve(cwd, args[0]))
  } catch (e) {
    stderr.write(`devproxy: ${e && e.message ? e.message : e}\n`)
    return 1
  }
  if (args[1] === undefined) {
    stdout.write(text + '\n')
  } else {
    fs.writeFileSync(path.resolve(cwd, args[1]), text + '\n')
  }
  return 0
}

/**
 * Runs the command line; resolves to the exit code for `--help`/`--version`/bad input, or, once the
 * proxy runs, stays until Ctrl-C (and exits the process itself).
 */
async function main(argv, { stdout = process.stdout, stderr = process.stderr, cwd = process.cwd() } = {}) {
  const version = require('../package.json').version
  if (argv[0] === 'har') return har(argv.slice(1), { stdout, stderr, cwd })
  let built
  try {
    built = await buildOptions(argv, cwd)
  } catch (e) {
    if (!(e instanceof UsageError)) throw e
    stderr.write(`devproxy: ${e.message}\n`)
    return 2
  }
  if (built.help) {
    stdout.write(USAGE + '\n')
    return 0
  }
  if (built.version) {
    stdout.write(version + '\n')
    return 0
  }
  const { start } = require('../index.js')
  const { options } = built
  let server
  try {
    server = await start(options)
  } catch (e) {
    // The library's errors name the option, rule or port: that line is the message.
    stderr.write(`devproxy: ${e && e.message ? e.message.split('\n')[0] : e}\n`)
    return 1
  }
  const silent = options.logLevel === 'silent' || options.quiet === true
  let stopping = false
  const onSignal = (signal) => {
    if (stopping) {
      stderr.write('devproxy: stopped at once\n')
      process.exit(130)
    }
    stopping = true
    if (!silent) stderr.write(`devproxy: stopping (${signal}): requests in flight finish; Ctrl-C again to quit now\n`)
    server.stop().then(
      () => process.exit(0),
      (e) => {
        stderr.write(`devproxy: ${e && e.message ? e.message : e}\n`)
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  // Only now: whoever reads the banner may signal at once, and the proxy (native threads) answers
  // requests while this thread has not run a line more.
  if (!silent) stdout.write(banner(server, options, version, built.configFile))
  return null
}

module.exports = { main, parseCli, parseRule, buildOptions, bannerUrls, UsageError, USAGE }
