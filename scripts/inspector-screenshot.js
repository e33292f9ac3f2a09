#!/usr/bin/env node
'use strict'
// Takes docs/inspector.png: a small site through the proxy, a few requests (a page, assets, an API
// call, a 404), the inspector open in headless Chromium with one exchange selected.
// Usage: node scripts/inspector-screenshot.js [out.png]   (CHROMIUM_PATH overrides /usr/bin/chromium)

const http = require('node:http')
const path = require('node:path')
const zlib = require('node:zlib')
const { chromium } = require('playwright-core')
const { start } = require('..')

const OUT = path.resolve(process.argv[2] || path.join(__dirname, '..', 'docs', 'inspector.png'))
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium'

function site() {
  const server = http.createServer((req, res) => {
    const url = req.url.split('?')[0]
    const origin = `http://${req.headers.host}`
    const send = (status, type, body) => {
      const gzip = /gzip/.test(req.headers['accept-encoding'] || '') && status === 200
      res.writeHead(status, { 'content-type': type, 'set-cookie': 'session=abc123; Path=/', ...(gzip ? { 'content-encoding': 'gzip' } : {}) })
      res.end(gzip ? zlib.gzipSync(body) : body)
    }
    if (url === '/') send(200, 'text/html', `<!doctype html><html><head><link rel="stylesheet" href="${origin}/style.css"></head><body><h1>Shop</h1><a href="${origin}/cart">cart</a></body></html>`)
    else if (url === '/style.css') send(200, 'text/css', 'body { font-family: sans-serif; }\n'.repeat(40))
    else if (url === '/api/cart') send(200, 'application/json', JSON.stringify({ items: [1, 2, 3] }))
    else send(404, 'text/plain', 'not found')
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

;(async () => {
  const upstream = await site()
  const target = `http://127.0.0.1:${upstream.address().port}`
  const server = await start({
    proxy: target,
    port: 0,
    logLevel: 'silent',
    snippet: '<script async src="/browser-sync/browser-sync-client.js"></script>',
    rewriteRules: [{ match: /Shop/g, replace: 'Shop (dev)' }],
  })
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] })
  try {
    const get = (p, headers = {}) => fetch(server.url + p, { headers: { 'accept-encoding': 'gzip', ...headers } }).then((r) => r.arrayBuffer())
    await get('/', { accept: 'text/html', cookie: 'session=abc123', authorization: 'Bearer sk-example' })
    await get('/style.css', { accept: 'text/css' })
    await get('/api/cart', { 'x-api-key': 'example-key' })
    await get('/favicon.ico')
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } })
    await page.goto(`${server.url}/__devproxy/`)
    await page.waitForFunction(() => document.querySelectorAll('#exchange-rows tr').length === 4)
    // A request while the page is open arrives over the event stream.
    await get('/?from=live', { accept: 'text/html', cookie: 'session=abc123', authorization: 'Bearer sk-example' })
    await page.waitForSelector('#exchange-rows tr[data-url="/?from=live"]')
    await page.click('#exchange-rows tr[data-url="/?from=live"]')
    await page.waitForSelector('#detail:not([hidden])')
    await page.screenshot({ path: OUT })
    console.log(`wrote ${path.relative(process.cwd(), OUT)}`)
  } finally {
    await browser.close()
    await server.stop()
    upstream.close()
  }
})().catch((err) => {
  console.error(err)
  process.exit(1)
})
