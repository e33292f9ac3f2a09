'use strict'
// The `devproxy` command line, run as a user runs it: `node bin/devproxy.js ...` in a child process,
// against a real upstream on 127.0.0.1.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { ROOT, ACCEPT_HTML, deferred, withTimeout, request, occupyPort, fileUpstream } = require('./helpers.js')
const { parseCli, buildOptions } = require('../lib/cli.js')

const CLI = path.join(ROOT, 'bin', 'devproxy.js')
const VERSION = require('../package.json').version

// The in-flight request of the Ctrl-C tests: headers and a first chunk go out at once, the rest when
// the test releases it.
let release = deferred()
const upstream = fileUpstream({
  '/': (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(`<html><body><a href="http://${req.headers.host}/about">Hello world</a></body></html>`)
  },
  '/slow': async (req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('first half, ')
    await release.promise
    res.end('second half')
  },
})

/** Runs the CLI; `waitOut(re)`/`waitErr(re)` resolve with the first match in stdout/stderr. */
function runCli(args, { cwd = ROOT } = {}) {
  const child = spawn(process.execPath, [CLI, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
  const out = { stdout: '', stderr: '' }
  const waiters = []
  const check = () => {
    for (const w of waiters.slice()) {
      const m = w.re.exec(out[w.stream])
      if (m) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve(m)
      }
    }
  }
  child.stdout.on('data', (d) => {
    out.stdout += d
    check()
  })
  child.stderr.on('data', (d) => {
    out.stderr += d
    check()
  })
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  const wait = (stream, re) => {
    const d = deferred()
    waiters.push({ stream, re, resolve: d.resolve })
    check()
    const early = exited.then(({ code }) => {
      throw new Error(`devproxy exited (${code}) before printing ${re}\nstdout: ${out.stdout}\nstderr: ${out.stderr}`)
    })
    return withTimeout(Promise.race([d.promise, early]), 20000, `${re} from devproxy (stderr: ${out.stderr})`)
  }
  return {
    child,
    out,
    exited: () => withTimeout(exited, 20000, 'devproxy to exit'),
    waitOut: (re) => wait('stdout', re),
    waitErr: (re) => wait('stderr', re),
    /** The banner's Local URL, once the proxy listens. */
    url: async () => (await wait('stdout', /Local:\s+(\S+)/))[1],
    kill: () => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'),
  }
}

function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-cli-'))
}

test('--help prints the usage with examples; --version the package version', async () => {
  const help = runCli(['--help'])
  assert.deepEqual(await help.exited(), { code: 0, signal: null })
  assert.match(help.out.stdout, /^Usage:\n {2}devproxy <target> \[options\]/)
  assert.match(help.out.stdout, /Examples:\n {2}devproxy localhost:8000\n/)
  for (const flag of ['--port', '--host', '--https', '--serve-static', '--rule', '--snippet', '--config', '--log-level', '--strict-port']) {
    assert.ok(help.out.stdout.includes(flag), `help mentions ${flag}`)
  }
  const version = runCli(['--version'])
  assert.deepEqual(await version.exited(), { code: 0, signal: null })
  assert.equal(version.out.stdout, `${VERSION}\n`)
})

test('devproxy <target> proxies with --rule and --snippet, prints a banner, and stops on SIGINT', async () => {
  const cli = runCli([upstream.url, '--port', '0', '--rule', '/hello (\\w+)/gi=Bye $1', '--snippet', '<i id=s></i>'])
  try {
    const url = await cli.url()
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/)
    assert.match(cli.out.stdout, new RegExp(`proxying ${upstream.url.replace(/\./g, '\\.')}`))
    assert.match(cli.out.stdout, /Network: +not exposed/)
    const res = await request(url + '/', { headers: { accept: ACCEPT_HTML } })
    assert.equal(res.status, 200)
    const port = new URL(url).port
    assert.equal(res.body.toString(), `<html><body><i id=s></i><a href="//127.0.0.1:${port}/about">Bye world</a></body></html>`)
    cli.child.kill('SIGINT')
    assert.deepEqual(await cli.exited(), { code: 0, signal: null })
    assert.match(cli.out.stderr, /stopping \(SIGINT\)/)
  } finally {
    cli.kill()
  }
})

test('devproxy start --proxy <target> is browser-sync\'s spelling of the same', async () => {
  const cli = runCli(['start', '--proxy', upstream.url, '--port', '0'])
  try {
    const url = await cli.url()
    const res = await request(url + '/', { headers: { accept: ACCEPT_HTML } })
    assert.match(res.body.toString(), new RegExp(`href="//127\\.0\\.0\\.1:${new URL(url).port}/about"`))
    cli.child.kill('SIGTERM')
    assert.equal((await cli.exited()).code, 0)
  } finally {
    cli.kill()
  }
})

test('SIGINT lets a response in flight finish, then exits 0', async () => {
  release = deferred()
  const cli = runCli([upstream.url, '--port', '0'])
  try {
    const url = await cli.url()
    const firstChunk = deferred()
    const done = request(url + '/slow', { onData: () => firstChunk.resolve() })
    await withTimeout(firstChunk.promise, 20000, 'the first chunk')
    cli.child.kill('SIGINT')
    await cli.waitErr(/stopping \(SIGINT\)/)
    assert.equal(cli.child.exitCode, null, 'still running while the response is in flight')
    release.resolve()
    const res = await done
    assert.equal(res.body.toString(), 'first half, second half')
    assert.deepEqual(await cli.exited(), { code: 0, signal: null })
  } finally {
    release.resolve()
    cli.kill()
  }
})

test('a second SIGINT exits at once, without waiting for the response in flight', async () => {
  release = deferred()
  const cli = runCli([upstream.url, '--port', '0'])
  try {
    const url = await cli.url()
    const firstChunk = deferred()
    const done = request(url + '/slow', { onData: () => firstChunk.resolve() }).catch((e) => e)
    await withTimeout(firstChunk.promise, 20000, 'the first chunk')
    cli.child.kill('SIGINT')
    await cli.waitErr(/stopping \(SIGINT\)/)
    cli.child.kill('SIGINT')
    assert.deepEqual(await cli.exited(), { code: 130, signal: null })
    const cut = await done
    assert.ok(cut instanceof Error && cut.aborted, 'the unfinished response was cut')
  } finally {
    release.resolve()
    cli.kill()
  }
})

test('bad input: one line naming the problem, a non-zero exit, no stack trace', async () => {
  const taken = await occupyPort()
  try {
    const cases = [
      [['--bogus', upstream.url], 2, 'devproxy: unknown option --bogus (devproxy --help lists the options)'],
      [['--prot', '3000', upstream.url], 2, 'devproxy: unknown option --prot (did you mean --port?)'],
      [[upstream.url, '--log-request'], 2, 'devproxy: unknown option --log-request (did you mean --log-requests?)'],
      [['http://exa mple.test'], 2, 'devproxy: target "http://exa mple.test" is not a URL (try http://localhost:8000)'],
      [['ftp://127.0.0.1/'], 2, 'devproxy: target "ftp://127.0.0.1/": only http:// and https:// targets can be proxied'],
      [[upstream.url, '--rule', '/a(/g=b'], 2, 'devproxy: --rule "/a(/g=b": Invalid regular expression: /a(/g: Unterminated group'],
      [[upstream.url, '--rule', 'a=b'], 2, `devproxy: --rule "a=b": expected /regex/flags=replacement, as in '/foo/g=bar'`],
      [[upstream.url, '--port', '70000'], 2, 'devproxy: --port must be a whole number from 0 to 65535, got "70000"'],
      [[upstream.url, '--log-level', 'loud'], 2, 'devproxy: --log-level must be one of info, debug, warn, silent, got "loud"'],
      [[upstream.url, '--speed', '2'], 2, 'devproxy: --speed applies to --replay <file>, which is not given'],
      [[upstream.url, '--replay', 'c.jsonl', '--speed', 'fast'], 2, 'devproxy: --speed must be a number from 0 (at once) up, got "fast"'],
      [[upstream.url, '--replay', 'c.jsonl', '--on-miss', 'ignore'], 2, 'devproxy: --on-miss must be one of error, proxy, record, got "ignore"'],
      [[upstream.url, '--replay', 'c.jsonl', '--record', 'd.jsonl'], 2, 'devproxy: --record and --replay together: to record what the cassette lacks, use --replay <file> --on-miss record'],
      [[], 2, 'devproxy: no target: give one, as in `devproxy http://localhost:8000` (devproxy --help for more)'],
      [[upstream.url, '--config', 'nope.json'], 2, 'devproxy: --config nope.json: no such file'],
      [[upstream.url, '--port', String(taken.port), '--strict-port'], 1, `devproxy: port ${taken.port} is already in use on 127.0.0.1 (strictPort)`],
      // The engine's own check of a rule, named as the flag: a lookbehind form the streaming engine refuses.
      [[upstream.url, '--port', '0', '--rule', '/x(?<=[^y]*)b/g=c'], 2, 'devproxy: --rule "/x(?<=[^y]*)b/g=c": unsupported regex feature: lookbehind that can match more than 1024 bytes that may begin inside a character (without the u flag) at offset 1'],
    ]
    for (const [args, code, line] of cases) {
      const cli = runCli(args)
      const exit = await cli.exited()
      assert.equal(exit.code, code, `exit code of ${args.join(' ')} (stderr: ${cli.out.stderr})`)
      assert.ok(cli.out.stderr.startsWith(line), `${args.join(' ')}: ${JSON.stringify(cli.out.stderr)} starts with ${JSON.stringify(line)}`)
      assert.equal(cli.out.stderr.trimEnd().split('\n').length, 1, `one line for ${args.join(' ')}: ${cli.out.stderr}`)
      assert.doesNotMatch(cli.out.stderr, /\n\s+at /)
      assert.equal(cli.out.stdout, '')
    }
  } finally {
    await taken.close()
  }
})

test('--config json: the file\'s options, with the flags on top', async () => {
  const dir = tempDir()
  fs.writeFileSync(path.join(dir, 'devproxy.config.json'), JSON.stringify({
    proxy: upstream.url,
    port: 1,
    snippet: '<b>from json</b>',
    rewriteRules: [{ match: 'Hello', replace: 'Hallo' }],
  }))
  const cli = runCli(['--config', 'devproxy.config.json', '--port', '0', '--rule', '/world/=Welt'], { cwd: dir })
  try {
    const url = await cli.url()
    const res = await request(url + '/', { headers: { accept: ACCEPT_HTML } })
    assert.match(res.body.toString(), /<body><b>from json<\/b><a href="\/\/127\.0\.0\.1:\d+\/about">Hallo Welt<\/a>/)
    cli.child.kill('SIGINT')
    assert.equal((await cli.exited()).code, 0)
  } finally {
    cli.kill()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('--config js: a module exporting options (here an async function), RegExp rules and all', async () => {
  const dir = tempDir()
  fs.writeFileSync(path.join(dir, 'devproxy.config.js'), `module.exports = async () => ({
    proxy: { target: 'http://127.0.0.1:1' },
    port: 0,
    rewriteRules: [{ match: /hello/gi, replace: (req, res, m) => m.toUpperCase() + '@' + req.url }],
  })\n`)
  // The target on the command line replaces the file's, keeping its other proxy options.
  const cli = runCli([upstream.url, '-c', 'devproxy.config.js'], { cwd: dir })
  try {
    const url = await cli.url()
    const res = await request(url + '/', { headers: { accept: ACCEPT_HTML } })
    assert.match(res.body.toString(), />HELLO@\/ world</)
    cli.child.kill('SIGINT')
    assert.equal((await cli.exited()).code, 0)
  } finally {
    cli.kill()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('a config module that throws is reported in one line', async () => {
  const dir = tempDir()
  fs.writeFileSync(path.join(dir, 'bad.config.js'), 'throw new TypeError("no proxy here")\n')
  try {
    const cli = runCli(['--config', 'bad.config.js'], { cwd: dir })
    assert.equal((await cli.exited()).code, 2)
    assert.equal(cli.out.stderr, 'devproxy: --config bad.config.js: TypeError: no proxy here\n')
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('a config file with a syntax error is reported in one line with its line and column: JSON, CommonJS, ES module, found without --config', async () => {
  const dir = tempDir()
  const files = {
    'broken.json': ['{\n  "proxy": "http://localhost:8000",\n  "port": 0,,\n}\n', 'broken.json:3:13: Expected double-quoted property name'],
    'cut.json': ['{ "proxy": "http://localhost:8000"', 'cut.json:1:35: '],
    'broken.cjs': ['module.exports = {\n  proxy: "http://localhost:8000",\n  port: 0 0,\n}\n', 'broken.cjs:3:11: SyntaxError: Unexpected number'],
    'broken.mjs': ['export default {\n\tproxy: "http://localhost:8000"\n\tport: 0,\n}\n', "broken.mjs:3:2: SyntaxError: Unexpected identifier"],
  }
  try {
    for (const [name, [text, expected]] of Object.entries(files)) {
      fs.writeFileSync(path.join(dir, name), text)
      const cli = runCli(['--config', name], { cwd: dir })
      assert.equal((await cli.exited()).code, 2, name)
      assert.ok(cli.out.stderr.startsWith(`devproxy: --config ${expected}`), `${name}: ${cli.out.stderr}`)
      assert.equal(cli.out.stderr.split('\n').length, 2, `one line: ${cli.out.stderr}`)
    }
    // Found in the working directory: named as it is, with the place.
    fs.copyFileSync(path.join(dir, 'broken.cjs'), path.join(dir, 'devproxy.config.js'))
    const found = runCli([], { cwd: dir })
    assert.equal((await found.exited()).code, 2)
    assert.equal(found.out.stderr, 'devproxy: devproxy.config.js:3:11: SyntaxError: Unexpected number\n')
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('options from flags: repeatable --serve-static and --rule, in order, added to the file\'s', async () => {
  const parsed = parseCli(['start', '--proxy', 'localhost:8000', '--serve-static', 'public', '--serve-static', 'dist', '-r', '/a/g=b', '-r', '/[/]x/i=$&y', '--https', '-H', '0.0.0.0', '--log-level', 'debug'])
  assert.equal(parsed.options.proxy, 'localhost:8000')
  assert.deepEqual(parsed.options.serveStatic, ['public', 'dist'])
  assert.deepEqual(parsed.options.rewriteRules.map((r) => [String(r.match), r.replace]), [['/a/g', 'b'], ['/[/]x/i', '$&y']])
  assert.equal(parsed.options.https, true)
  assert.equal(parsed.options.host, '0.0.0.0')
  assert.equal(parsed.options.logLevel, 'debug')

  const dir = tempDir()
  try {
    fs.writeFileSync(path.join(dir, 'c.json'), JSON.stringify({ proxy: 'http://127.0.0.1:9', serveStatic: 'assets', rewriteRules: [{ match: 'x', replace: 'y' }], https: false }))
    const { options } = await buildOptions(['--config', 'c.json', '--serve-static', 'public', '--rule', '/q/=r', '--https'], dir)
    assert.equal(options.proxy, 'http://127.0.0.1:9')
    assert.deepEqual(options.serveStatic, ['assets', 'public'])
    assert.deepEqual(options.rewriteRules.map((r) => String(r.match)), ['x', '/q/'])
    assert.equal(options.https, true)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('a config file read without a flag is named in the banner, and options that turn a protection off are warned about', async () => {
  const dir = tempDir()
  try {
    const config = { snippet: '<script src="/x.js"></script>', allowedHosts: 'all', inspector: { remote: true } }
    fs.writeFileSync(path.join(dir, 'devproxy.config.json'), JSON.stringify(config))
    const cli = runCli([upstream.url, '--port', '0'], { cwd: dir })
    try {
      await cli.url()
      assert.match(cli.out.stdout, new RegExp(`\n {2}Config: {3}${path.join(dir, 'devproxy.config.json').replace(/[.\\]/g, '\\$&')}\n`))
      await cli.waitErr(/inspector\.remote/)
      const warned = cli.out.stderr.split('\n').filter(Boolean)
      assert.deepEqual(warned, [
        "[devproxy] allowedHosts: 'all' answers any Host: a page of any site whose name resolves to this machine can read the proxied site (DNS rebinding)",
        '[devproxy] inspector.remote: the inspector at /__devproxy/ (URLs, headers, body previews) answers other machines too',
      ])
      cli.child.kill('SIGINT')
      assert.equal((await cli.exited()).code, 0)
    } finally {
      cli.kill()
    }
    // Without a config file: no Config line.
    fs.rmSync(path.join(dir, 'devproxy.config.json'))
    const plain = runCli([upstream.url, '--port', '0'], { cwd: dir })
    try {
      await plain.url()
      assert.doesNotMatch(plain.out.stdout, /Config:/)
    } finally {
      plain.kill()
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('devproxy.config.{js,mjs,cjs,json} in the working directory is read without --config; two of them, or a TypeScript one on this Node, are refused naming them', async () => {
  const dir = tempDir()
  try {
    fs.writeFileSync(path.join(dir, 'devproxy.config.mjs'), `export default { proxy: '${upstream.url}', port: 0, snippet: '<b>found</b>' }\n`)
    const cli = runCli([], { cwd: dir })
    try {
      const url = await cli.url()
      const res = await request(url + '/', { headers: { accept: ACCEPT_HTML } })
      assert.match(res.body.toString(), /<body><b>found<\/b>/)
      cli.child.kill('SIGINT')
      assert.equal((await cli.exited()).code, 0)
    } finally {
      cli.kill()
    }
    fs.writeFileSync(path.join(dir, 'devproxy.config.json'), JSON.stringify({ proxy: upstream.url }))
    const two = runCli([], { cwd: dir })
    assert.equal((await two.exited()).code, 2)
    assert.equal(two.out.stderr, `devproxy: found devproxy.config.mjs and devproxy.config.json in ${dir}: keep one, or pass the one to use with --config\n`)
    fs.rmSync(path.join(dir, 'devproxy.config.mjs'))
    fs.rmSync(path.join(dir, 'devproxy.config.json'))
    fs.writeFileSync(path.join(dir, 'devproxy.config.ts'), `export default { proxy: '${upstream.url}' as string }\n`)
    const ts = runCli([], { cwd: dir })
    assert.equal((await ts.exited()).code, 2)
    if (process.features.typescript) {
      assert.doesNotMatch(ts.out.stderr, /needs a Node that runs TypeScript/)
    } else {
      assert.equal(
        ts.out.stderr,
        `devproxy: devproxy.config.ts: a TypeScript config needs a Node that runs TypeScript (22.18 or later); this is Node ${process.versions.node}. Rename it to devproxy.config.mjs (plain JS), or run devproxy through a loader such as tsx\n`,
      )
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('--record writes a cassette (with --log-requests lines); --replay --speed 0 answers from it with the target gone; --inspector serves the inspector', async () => {
  const dir = tempDir()
  const cassette = path.join(dir, 'session.jsonl')
  const { startUpstream } = require('./helpers.js')
  const site = await startUpstream({ '/': (req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('recorded answer') })
  try {
    const recording = runCli([site.url, '--port', '0', '--record', cassette, '--log-requests', '--inspector'], { cwd: dir })
    try {
      const url = await recording.url()
      const res = await request(url + '/')
      assert.equal(res.body.toString(), 'recorded answer')
      await recording.waitErr(/GET \/ -> 200/)
      const inspector = await request(url + '/__devproxy/')
      assert.equal(inspector.status, 200)
      assert.match(inspector.headers['content-type'], /^text\/html/)
      recording.child.kill('SIGINT')
      assert.equal((await recording.exited()).code, 0)
    } finally {
      recording.kill()
    }
    const lines = fs.readFileSync(cassette, 'utf8').trim().split('\n').map((line) => JSON.parse(line))
    assert.ok(lines.some((line) => JSON.stringify(line).includes('recorded answer')), 'the answer is in the cassette')
    await site.close()
    const replaying = runCli([site.url, '--port', '0', '--replay', cassette, '--speed', '0', '--on-miss', 'error'], { cwd: dir })
    try {
      const url = await replaying.url()
      const res = await request(url + '/')
      assert.equal(res.status, 200)
      assert.equal(res.body.toString(), 'recorded answer')
      const miss = await request(url + '/never-recorded')
      assert.equal(miss.status, 404)
      replaying.child.kill('SIGINT')
      assert.equal((await replaying.exited()).code, 0)
    } finally {
      replaying.kill()
    }
  } finally {
    await site.close().catch(() => {})
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('npm run demo\'s check mode runs the CLI in front of the demo site', async () => {
  const child = spawn(process.execPath, [path.join(ROOT, 'demo', 'demo.js'), '--check'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  const code = await withTimeout(new Promise((resolve) => child.on('exit', resolve)), 30000, 'the demo')
  assert.equal(code, 0, out)
  assert.match(out, /GET \/ -> 200, content-encoding gzip, snippet injected, target links left: 0/)
})
