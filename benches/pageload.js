#!/usr/bin/env node
// Page load in Chromium: a page with 30 resources (10 CSS, 10 JS, 10 images, absolute links) from an
// origin that waits 20 ms before every response, loaded with a cold cache directly, through
// devproxy-native's `start()`, through `devproxy-native/browser-sync` and through browser-sync's own
// proxy, interleaved; median load time (navigation start to the load event) and bytes on the wire
// (Chromium's encodedDataLength of every response, Browsersync's client script included).
// Not a test: `node benches/pageload.js` (BENCH_PAGELOADS = loads per contender [9]).
'use strict'

const http = require('node:http')
const path = require('node:path')
const zlib = require('node:zlib')
const crypto = require('node:crypto')
const { chromium } = require('playwright-core')

const ROOT = path.join(__dirname, '..')
const HOST = '127.0.0.1'
const DELAY_MS = 20
const LOADS = Number(process.env.BENCH_PAGELOADS || 9)
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium'

/** Text that compresses like real CSS/JS/HTML: repeated structure, varying names. */
function text(kind, i, size) {
  const lines = []
  for (let n = 0; lines.join('\n').length < size; n++) {
    if (kind === 'css') lines.push(`.c${i}-${n} { margin: ${n % 7}px ${n % 5}px; color: #${(n * 2654435761 >>> 8).toString(16).padStart(6, '0').slice(0, 6)}; }`)
    else if (kind === 'js') lines.push(`window.m${i} = (window.m${i} || 0) + ${n}; function f${i}_${n}(x) { return x * ${n} + ${i}; }`)
    else lines.push(`<p class="c${i % 10}-${n}">Paragraph ${n} of the page, with a <a href="ORIGIN/p/${n}">link ${n}</a>.</p>`)
  }
  return lines.join('\n')
}

function startOrigin() {
  const files = new Map()
  const server = http.createServer((req, res) => {
    setTimeout(() => {
      const origin = `http://${HOST}:${server.address().port}`
      const name = req.url.split('?')[0]
      const file = files.get(name)
      if (!file) return res.writeHead(404).end()
      let body = Buffer.isBuffer(file.body) ? file.body : Buffer.from(file.body.replaceAll('ORIGIN', origin))
      const headers = { 'content-type': file.type, 'cache-control': 'no-store' }
      if (file.type !== 'image/png' && /\bgzip\b/.test(req.headers['accept-encoding'] || '')) {
        body = zlib.gzipSync(body)
        headers['content-encoding'] = 'gzip'
        headers.vary = 'Accept-Encoding'
      }
      res.writeHead(200, headers).end(body)
    }, DELAY_MS)
  })
  const head = []
  const tail = []
  for (let i = 0; i < 10; i++) {
    files.set(`/css/${i}.css`, { type: 'text/css', body: text('css', i, 8000) })
    files.set(`/js/${i}.js`, { type: 'text/javascript', body: text('js', i, 8000) })
    files.set(`/img/${i}.png`, { type: 'image/png', body: crypto.randomBytes(6000) })
    head.push(`<link rel="stylesheet" href="ORIGIN/css/${i}.css">`)
    tail.push(`<script src="ORIGIN/js/${i}.js"></script>`, `<img src="ORIGIN/img/${i}.png" alt="">`)
  }
  files.set('/', {
    type: 'text/html; charset=utf-8',
    body: `<!doctype html><html><head><title>pageload</title>${head.join('')}</head><body>${text('html', 0, 30000)}${tail.join('')}</body></html>`,
  })
  return new Promise((resolve) => server.listen(0, HOST, () => resolve(server)))
}

const contenders = {
  async direct(target) {
    return { url: target, stop: async () => {} }
  },
  async 'devproxy-native'(target) {
    const { start } = require(ROOT)
    const server = await start({ proxy: target, port: 0, quiet: true })
    return { url: server.url, stop: () => server.stop() }
  },
  async adapter(target) {
    const bs = require(path.join(ROOT, 'browser-sync.js')).create()
    await new Promise((resolve, reject) =>
      bs.init({ proxy: target, port: 0, open: false, online: false, ui: false, notify: false, logLevel: 'silent', quiet: true }, (err) => (err ? reject(err) : resolve()))
    )
    return { url: bs.proxy.url, stop: () => bs.exit() }
  },
  async 'browser-sync'(target) {
    const bs = require('browser-sync').create()
    // browser-sync's proxy mode needs a real port (its client script names it): a free one.
    const port = await new Promise((resolve) => {
      const probe = http.createServer()
      probe.listen(0, HOST, () => {
        const free = probe.address().port
        probe.close(() => resolve(free))
      })
    })
    await new Promise((resolve, reject) =>
      bs.init({ proxy: target, port, listen: HOST, open: false, online: false, ui: false, notify: false, logLevel: 'silent' }, (err) => (err ? reject(err) : resolve()))
    )
    return { url: `http://${HOST}:${port}`, stop: async () => bs.exit() }
  },
}

/** One cold load: ms from navigation start to the load event, and bytes on the wire. */
async function load(browser, url) {
  const context = await browser.newContext()
  try {
    const page = await context.newPage()
    const cdp = await context.newCDPSession(page)
    await cdp.send('Network.enable')
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true })
    let bytes = 0
    let liveReloadBytes = 0
    const urls = new Map()
    cdp.on('Network.requestWillBeSent', (e) => urls.set(e.requestId, e.request.url))
    cdp.on('Network.loadingFinished', (e) => {
      bytes += e.encodedDataLength
      if (new URL(urls.get(e.requestId) || 'about:blank').pathname.startsWith('/browser-sync/')) liveReloadBytes += e.encodedDataLength
    })
    await page.goto(url + '/', { waitUntil: 'load' })
    const ms = await page.evaluate(() => performance.getEntriesByType('navigation')[0].loadEventStart)
    const resources = await page.evaluate(() => performance.getEntriesByType('resource').length)
    return { ms, bytes, siteBytes: bytes - liveReloadBytes, resources }
  } finally {
    await context.close()
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[s.length >> 1]
}

;(async () => {
  const origin = await startOrigin()
  const target = `http://${HOST}:${origin.address().port}`
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-quic'] })
  const running = {}
  for (const [name, start] of Object.entries(contenders)) running[name] = await start(target)
  const results = Object.fromEntries(Object.keys(running).map((n) => [n, []]))
  try {
    for (const name of Object.keys(running)) await load(browser, running[name].url) // warm-up
    for (let i = 0; i < LOADS; i++) {
      for (const name of Object.keys(running)) results[name].push(await load(browser, running[name].url))
    }
  } finally {
    for (const c of Object.values(running)) await c.stop()
    await browser.close()
    origin.close()
  }
  const direct = { ms: median(results.direct.map((r) => r.ms)), bytes: median(results.direct.map((r) => r.bytes)) }
  // Bytes without Browsersync's own requests (client script, socket.io polling): the site's weight.
  console.log(`Page load, ${LOADS} cold loads each (interleaved), 30 resources, ${DELAY_MS} ms origin delay per response:\n`)
  console.log('| contender | median load ms | x direct | median bytes on the wire | x direct | of which the site (not /browser-sync/) | x direct | resources |')
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|')
  for (const [name, rs] of Object.entries(results)) {
    const ms = median(rs.map((r) => r.ms))
    const bytes = median(rs.map((r) => r.bytes))
    const site = median(rs.map((r) => r.siteBytes))
    console.log(
      `| ${name} | ${ms.toFixed(1)} | ${(ms / direct.ms).toFixed(3)} | ${bytes} | ${(bytes / direct.bytes).toFixed(3)} | ${site} | ${(site / direct.bytes).toFixed(3)} | ${median(rs.map((r) => r.resources))} |`
    )
  }
})().catch((err) => {
  console.error(err)
  process.exit(1)
})
