'use strict'
// The adapter hands every option of `start()` to the native server (issue 31: `record`, `onRequest`...
// went to browser-sync and were dropped in silence).

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { ROOT, startUpstream, request, withTimeout, ACCEPT_HTML } = require('./helpers')
const { PROXY_OPTIONS, SHARED_OPTIONS } = require('../lib/browser-sync-options.js')

test("every option start() reads reaches it through the adapter (only `snippet` is browser-sync's to decide)", () => {
  // start()'s own list of top-level options (src/binding/option_names.rs), plus the one only the JS side reads.
  const source = fs.readFileSync(path.join(ROOT, 'src', 'binding', 'option_names.rs'), 'utf8')
  const list = /pub\(super\) const PROXY: &\[&str\] = &\[([^\]]*)\]/.exec(source)
  assert.ok(list, 'the option list is in src/binding/option_names.rs')
  const native = [...list[1].matchAll(/"([A-Za-z]+)"/g)].map((m) => m[1])
  assert.ok(native.length > 20, `read ${native.length} names`)
  const routed = new Set([...PROXY_OPTIONS, ...SHARED_OPTIONS])
  const missing = [...native, 'onRequest', 'middleware'].filter((name) => !routed.has(name) && name !== 'snippet')
  assert.deepEqual(missing, [])
})

test('record and onRequest given to the adapter\'s init() are used: a cassette is written, onRequest is called', async () => {
  const up = await startUpstream({
    '/page': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end('<html><body>page</body></html>')
    },
  })
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-adapter-'))
  const cassette = path.join(dir, 'c.jsonl')
  const records = []
  const bs = require(path.join(ROOT, 'browser-sync.js')).create()
  try {
    const { err } = await new Promise((resolve) =>
      bs.init(
        {
          proxy: up.url,
          port: 0,
          open: false,
          online: false,
          ui: false,
          notify: false,
          logLevel: 'silent',
          record: { path: cassette },
          onRequest: (entry) => records.push(entry),
        },
        (e) => resolve({ err: e }),
      ),
    )
    assert.equal(err, null)
    const url = bs.getOption('urls').get('local').replace('localhost', '127.0.0.1')
    assert.equal((await request(url + '/page', { headers: { accept: ACCEPT_HTML } })).status, 200)
    await withTimeout(
      (async () => {
        while (!records.some((r) => r.url === '/page') || bs.proxy.recording().written < 1) await new Promise((r) => setTimeout(r, 20))
      })(),
      10000,
      'the record and the cassette line',
    )
    assert.match(fs.readFileSync(cassette, 'utf8'), /"url":"\/page"/)
  } finally {
    await bs.exit()
    await up.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('a misspelt option is warned about with the closest name, whatever the entry point and even with every log off', { timeout: 60000 }, async () => {
  const { spawnNode } = require('./helpers')
  const run = async (mode) => {
    const child = spawnNode(path.join(__dirname, 'fixtures', 'typo-child.js'), [mode])
    const { code } = await withTimeout(child.exited, 50000, `the ${mode} child`)
    const { stderr } = child.output()
    assert.equal(code, 0, stderr)
    return stderr
  }
  // start() with quiet: true: the native side's warnings (top-level and nested keys).
  const viaStart = await run('start')
  assert.match(viaStart, /\[devproxy\] unknown option `rewriteRule`; did you mean `rewriteRules`\?/)
  assert.match(viaStart, /\[devproxy\] unknown option `proxy\.reqHeader`; did you mean `proxy\.reqHeaders`\?/)
  // The adapter with logLevel: 'silent': keys that neither browser-sync nor start() reads.
  const viaAdapter = await run('adapter')
  assert.match(viaAdapter, /\[Browsersync\] unknown option `rewriteRule`; did you mean `rewriteRules`\?/)
  assert.match(viaAdapter, /\[Browsersync\] unknown option `ghostmode`; did you mean `ghostMode`\?/)
  assert.doesNotMatch(viaAdapter, /unknown option `(proxy|port|open|online|ui|logLevel)`/, 'known options are not reported')
})
