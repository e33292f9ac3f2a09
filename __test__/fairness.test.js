'use strict'
// Issue 28: JS the proxy calls (rule functions, proxyRes hooks, middleware, onRequest) takes turns with
// the rest of its process. The proxy, its busy JS and the user's own app server run in a child process
// (as a gulpfile would have them); this process is the client, so its timings are not held up by the
// thread being kept busy. README: "Busy JavaScript never holds up other requests".

const { test } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const path = require('node:path')
const { spawnNode, withTimeout } = require('./helpers')

const CHILD = path.join(__dirname, 'fixtures/busy-js-child.js')
const CONTROL = path.join(__dirname, 'fixtures/control-server.js')
// p99 of 100 samples is the second largest: one outlier on a shared machine is allowed, two are not.
const PROBES = 100
// A busy call (fixtures/busy-js-child.js) keeps Node's thread for 20 ms. Taking turns, a probe waits for at
// most the call running when it arrives and the one or two whose turn comes before its I/O is read (the
// probe through the proxy needs the app server's turn too), beyond what the machine's load makes any request
// take: measured at the same time on a control server in a process of its own (fixtures/control-server.js),
// so a loaded machine raises the bound with the probes. In a queue behind the pages' calls a probe would
// wait for many (64 pages: over a second).
const BUSY_MS = 20
const TURNS = 3
const SLACK_MS = 10

/** GET `url` to its end; resolves to the milliseconds it took and the status. */
function timedGet(url, agent) {
  const t0 = process.hrtime.bigint()
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent, headers: { accept: 'image/png' } }, (res) => {
        res.resume()
        res.on('end', () => resolve({ status: res.statusCode, ms: Number(process.hrtime.bigint() - t0) / 1e6 }))
        res.on('error', reject)
      })
      .on('error', reject)
  })
}

/** Keeps `n` page requests in flight (a new one as soon as one ends) until `stop()`. */
function keepPagesInFlight(base, n) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity })
  let stopped = false
  const loop = (i) => {
    if (stopped) return
    const req = http.get(`${base}/page/${i}`, { agent, headers: { accept: 'text/html' } }, (res) => {
      res.resume()
      res.on('end', () => loop(i))
      res.on('error', () => {})
    })
    req.on('error', () => {})
  }
  for (let i = 0; i < n; i++) loop(i)
  return () => {
    stopped = true
    agent.destroy()
  }
}

async function busyCalls(child) {
  child.send({ type: 'calls' })
  return (await child.next('calls')).n
}

const p99 = (samples) => [...samples].sort((a, b) => a - b)[Math.ceil(samples.length * 0.99) - 1]

/**
 * With `pages` pages waiting on busy JS of kind `mode`, times unrelated requests from this process:
 * images through the proxy (when `throughProxy`) and straight to the app server of the same process.
 */
async function measure(mode, pages, { throughProxy }) {
  const child = spawnNode(CHILD, [mode])
  const control = spawnNode(CONTROL)
  try {
    const { url: controlUrl } = await control.next('ready')
    const { proxy, app } = await child.next('ready')
    const stop = keepPagesInFlight(proxy, pages)
    try {
      // The JS thread is busy before the first probe, past the start's burst of new connections
      // (Node accepts one connection per event-loop turn, so every page's connection to the app or
      // the middleware host takes a turn, that is one busy call, to be accepted).
      await withTimeout(
        (async () => {
          while ((await busyCalls(child)) < pages + 5);
        })(),
        20000,
        'busy calls to start',
      )
      // The probes' own connections, opened before timing starts (for the same reason).
      const agent = new http.Agent({ keepAlive: true })
      for (const base of throughProxy ? [proxy, app, controlUrl] : [app, controlUrl]) await timedGet(`${base}/img`, agent)
      const before = await busyCalls(child)
      const started = Date.now()
      const samples = { proxy: [], app: [], control: [] }
      const urls = { proxy, app, control: controlUrl }
      for (let i = 0; i < PROBES; i++) {
        const targets = throughProxy ? ['proxy', 'app', 'control'] : ['app', 'control']
        for (const name of targets) {
          const res = await timedGet(`${urls[name]}/img${i}`, agent)
          assert.equal(res.status, 200)
          samples[name].push(res.ms)
        }
      }
      agent.destroy()
      if (process.env.FAIR_DEBUG) console.error(mode, pages, JSON.stringify(samples.app.map(Math.round)), JSON.stringify(samples.proxy.map(Math.round)))
      const window = Date.now() - started
      const during = (await busyCalls(child)) - before
      // The JS thread stayed busy for at least half the window: the probes did compete with it.
      assert.ok(
        during * 20 >= window / 2,
        `${mode}: only ${during} busy calls (${during * 20} ms) ran during the ${window} ms the probes took`,
      )
      return {
        proxy: samples.proxy.length ? p99(samples.proxy) : null,
        app: p99(samples.app),
        control: p99(samples.control),
        during,
        window,
      }
    } finally {
      stop()
    }
  } finally {
    child.kill()
    control.kill()
  }
}

const cases = [
  { mode: 'rule', throughProxy: true },
  { mode: 'middleware', throughProxy: true },
  { mode: 'onRequest', throughProxy: true },
  // proxyRes runs for every proxied request, the images' too: they wait their turn behind the busy
  // calls; the app server of the same process must not.
  { mode: 'hooks', throughProxy: false },
]

for (const { mode, throughProxy } of cases) {
  for (const pages of [4, 16, 64]) {
    test(`${mode}: with ${pages} pages on busy JS, other requests wait at most ${TURNS} busy calls at p99`, async () => {
      const r = await measure(mode, pages, { throughProxy })
      const label = `${mode}, ${pages} pages (${r.during} busy calls in ${r.window} ms)`
      const bound = r.control + TURNS * BUSY_MS + SLACK_MS
      const why = `bound ${bound.toFixed(1)} ms: the control server's p99 ${r.control.toFixed(1)} ms + ${TURNS} busy calls + ${SLACK_MS} ms`
      if (throughProxy) assert.ok(r.proxy < bound, `${label}: images through the proxy p99 ${r.proxy.toFixed(1)} ms, ${why}`)
      assert.ok(r.app < bound, `${label}: the same process's app server p99 ${r.app.toFixed(1)} ms, ${why}`)
    })
  }
}
