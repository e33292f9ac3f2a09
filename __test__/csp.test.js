'use strict'
// Content-Security-Policy and the snippet (browser-sync issues 1395, 1241, 1499, 2062): a page whose
// policy would block the injected script, or its client's connection back, has its policy amended (header,
// report-only header and <meta http-equiv>): a fresh nonce on the snippet's <script>, listed in the
// script directive, and the proxy's own http and ws origins in connect-src; nothing else loosened. Checked
// on the wire through start(), then in headless Chromium through the adapter: a strict-CSP page gets a
// live-reload client that connects and reloads, with no violation but the page's own blocked script, where
// browser-sync 3's own proxy gets the snippet blocked.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const zlib = require('node:zlib')
const { once } = require('node:events')
const { ACCEPT_HTML, HOST, deadPort, insertSnippet, launchChromium, request, startUpstream, withProxy, withTimeout } = require('./helpers')

const SNIPPET = '<script async src="/reload.js"></script>'
const PAGE = '<!doctype html><html><head><title>t</title></head><body><p>hi</p></body></html>'

function site(routes) {
  const handlers = {}
  for (const [path, { csp = [], reportOnly = [], body = PAGE, gzip = false, handler }] of Object.entries(routes)) {
    handlers[path] = handler ?? ((req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8')
      if (csp.length) res.setHeader('content-security-policy', csp)
      if (reportOnly.length) res.setHeader('content-security-policy-report-only', reportOnly)
      if (gzip) {
        res.setHeader('content-encoding', 'gzip')
        res.end(zlib.gzipSync(body))
      } else {
        res.end(body)
      }
    })
  }
  return startUpstream(handlers)
}

const get = (url) => request(url, { headers: { accept: ACCEPT_HTML, 'accept-encoding': 'gzip' } })
const text = (res) => (res.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(res.body) : res.body).toString()
const nonceIn = (html) => /<script nonce="([^"]+)" async src="\/reload.js">/.exec(html)?.[1]

test("a blocking policy gets the snippet's nonce and the proxy's origins; the snippet carries the nonce", async () => {
  const upstream = await site({
    '/strict': {
      csp: [
        "script-src 'nonce-PAGE' 'strict-dynamic'; object-src 'none'; connect-src https://api.example.test",
        "default-src 'self'",
      ],
      reportOnly: ["script-src 'none'; report-uri /csp"],
    },
  })
  try {
    await withProxy({ proxy: upstream.url, port: 0, snippet: SNIPPET }, async (server) => {
      const local = new URL(server.url).host
      const res = await get(`${server.url}/strict`)
      const html = text(res)
      const nonce = nonceIn(html)
      assert.ok(nonce, html)
      assert.equal(Buffer.from(nonce, 'base64').length, 16, 'a 128-bit nonce')
      assert.equal(
        res.headers['content-security-policy'],
        [
          `script-src 'nonce-PAGE' 'strict-dynamic' 'nonce-${nonce}'; object-src 'none'; connect-src https://api.example.test http://${local} ws://${local}`,
          `default-src 'self'; script-src 'self' 'nonce-${nonce}'; connect-src 'self' http://${local} ws://${local}`,
        ].join(', '),
      )
      assert.equal(res.headers['content-security-policy-report-only'], `script-src 'nonce-${nonce}'; report-uri /csp`)
      assert.equal(html, insertSnippet(PAGE, SNIPPET.replace('<script', `<script nonce="${nonce}"`)))
      const again = nonceIn(text(await get(`${server.url}/strict`)))
      assert.notEqual(again, nonce, 'one nonce per response')
    })
  } finally {
    await upstream.close()
  }
})

test('a meta policy (gzip\'d page) is amended in the stream, and the snippet after it gets the nonce', async () => {
  const meta = `<meta http-equiv="Content-Security-Policy" content="script-src 'self' 'sha256-abc'; connect-src 'none'">`
  const body = `<!doctype html><html><head>${meta}<title>t</title></head><body><p>hi</p></body></html>`
  const upstream = await site({ '/meta': { body, gzip: true } })
  try {
    await withProxy({ proxy: upstream.url, port: 0, snippet: SNIPPET }, async (server) => {
      const local = new URL(server.url).host
      const res = await get(`${server.url}/meta`)
      assert.equal(res.headers['content-encoding'], 'gzip')
      const html = text(res)
      const nonce = nonceIn(html)
      assert.ok(nonce, html)
      const amended = `<meta http-equiv="Content-Security-Policy" content="script-src 'self' 'sha256-abc' 'nonce-${nonce}'; connect-src http://${local} ws://${local}">`
      assert.equal(html, insertSnippet(body.replace(meta, amended), SNIPPET.replace('<script', `<script nonce="${nonce}"`)))
    })
  } finally {
    await upstream.close()
  }
})

test('policies that let the snippet run, pages without one, and proxies without a snippet stay byte for byte', async () => {
  const inline = "script-src 'self' 'unsafe-inline'; img-src *"
  const upstream = await site({ '/inline': { csp: [inline] }, '/none': {} })
  try {
    await withProxy({ proxy: upstream.url, port: 0, snippet: SNIPPET }, async (server) => {
      // A nonce would switch 'unsafe-inline' off for the page's own scripts.
      const res = await get(`${server.url}/inline`)
      assert.equal(res.headers['content-security-policy'], inline)
      assert.equal(text(res), insertSnippet(PAGE, SNIPPET))
      assert.equal(text(await get(`${server.url}/none`)), insertSnippet(PAGE, SNIPPET), "Browsersync's snippet, byte for byte")
    })
    await withProxy({ proxy: upstream.url, port: 0 }, async (server) => {
      const res = await get(`${server.url}/inline`)
      assert.equal(res.headers['content-security-policy'], inline, 'no snippet, nothing to amend')
    })
  } finally {
    await upstream.close()
  }
})

// ---- in Chromium, through the adapter ----

let browser
before(async () => {
  browser = await launchChromium(['--disable-quic', '--disable-features=HttpsUpgrades'])
})
after(async () => {
  if (browser) await browser.close()
})

const OWN = 'window.pageRan = true'
const SHA = crypto.createHash('sha256').update(OWN).digest('base64')
// Each page runs its own allowed script and has one that its policy blocks: that one must stay blocked.
const pageWith = (head = '') =>
  `<!doctype html><html><head>${head}<title>csp</title></head><body><h1>csp</h1>` +
  `<script nonce="PAGE">${OWN}</script><script>window.sneaky = true</script></body></html>`
const strictSite = () =>
  site({
    // web.dev's "strict CSP", with a connect-src that names only another site.
    '/header': {
      csp: ["script-src 'nonce-PAGE' 'strict-dynamic'; object-src 'none'; base-uri 'none'; connect-src https://api.example.test"],
      body: pageWith(),
    },
    // A hash-based policy in a meta tag, connect-src 'none'.
    '/meta': {
      body: pageWith(`<meta http-equiv="Content-Security-Policy" content="default-src 'self'; script-src 'self' 'sha256-${SHA}'; connect-src 'none'">`),
    },
  })

async function newWatchedPage(context) {
  const page = await context.newPage()
  await page.addInitScript(() => {
    window.__violations = []
    document.addEventListener('securitypolicyviolation', (e) =>
      window.__violations.push({ directive: e.effectiveDirective, blocked: e.blockedURI, sample: e.sample }),
    )
  })
  return page
}

const violations = (page) => page.evaluate(() => window.__violations)

test('a policy is amended when, and only when, the snippet is written: a page without <body>, or whose <body> comes past the look-ahead, keeps its policy (header and meta) and gets no snippet', async () => {
  const strict = ["default-src 'self'; connect-src 'none'"]
  const meta = `<meta http-equiv="Content-Security-Policy" content="connect-src 'none'">`
  const bigHead = `<!doctype html><html><head>${meta}<style>${'x'.repeat(300 * 1024)}</style></head><body><p>late</p></body></html>`
  const up = await site({
    '/nobody': { csp: strict, body: '<!doctype html><html><head><title>no body</title></head></html>' },
    '/nobody-meta': { body: `<!doctype html><html><head>${meta}<title>t</title></head></html>` },
    '/with-body': { csp: strict, body: `<!doctype html><html><head>${meta}</head><body><p>hi</p></body></html>` },
    // A head longer than the look-ahead, then (once the proxy had to decide) the <body>.
    '/late-body': {
      handler: (req, res) => {
        res.setHeader('content-type', 'text/html; charset=utf-8')
        res.setHeader('content-security-policy', strict)
        const cut = bigHead.indexOf('<body>')
        res.write(bigHead.slice(0, cut))
        setTimeout(() => res.end(bigHead.slice(cut)), 300)
      },
    },
  })
  try {
    await withProxy({ proxy: up.url, port: 0, snippet: SNIPPET, quiet: true }, async (server) => {
      for (const path of ['/nobody', '/nobody-meta', '/late-body']) {
        const res = await get(server.url + path)
        const html = text(res)
        const sent = path === '/nobody' ? strict[0] : undefined
        assert.equal(res.headers['content-security-policy'], path === '/late-body' ? strict[0] : sent, `${path}: the header as the site sent it`)
        assert.ok(!html.includes('reload.js'), `${path}: no snippet`)
        assert.ok(!html.includes('nonce-'), `${path}: no nonce anywhere`)
        if (path !== '/nobody') assert.ok(html.includes(meta), `${path}: the meta policy as the site wrote it`)
      }
      // The same policies where the snippet is written: both amended, the snippet with the nonce.
      const res = await get(server.url + '/with-body')
      const html = text(res)
      const nonce = nonceIn(html)
      assert.ok(nonce, 'the snippet carries a nonce')
      assert.match(res.headers['content-security-policy'], new RegExp(`'nonce-${nonce.replace(/[+/=]/g, '\\$&')}'`))
      assert.ok(!html.includes(meta), 'the meta policy amended too')
    })
  } finally {
    await up.close()
  }
})

test('a strict-CSP page gets a working live-reload client through the adapter; browser-sync 3 alone gets it blocked', { timeout: 180000 }, async () => {
  const upstream = await strictSite()
  const adapter = require('../browser-sync.js').create()
  const context = await browser.newContext()
  try {
    await new Promise((resolve, reject) =>
      adapter.init({ proxy: upstream.url, port: 0, open: false, online: false, ui: false, logLevel: 'silent' }, (err) => (err ? reject(err) : resolve())),
    )
    for (const path of ['/header', '/meta']) {
      const page = await newWatchedPage(context)
      let connected = once(adapter.emitter, 'client:connected')
      await page.goto(adapter.proxy.url + path, { waitUntil: 'load' })
      await withTimeout(connected, 30000, `the live-reload client connecting on ${path}`)
      assert.equal(await page.evaluate(() => window.pageRan), true, `${path}: the page's own script ran`)
      assert.equal(await page.evaluate(() => window.sneaky), undefined, `${path}: the page's blocked script is still blocked`)
      // Its one violation is the page's own inline script; nothing of the snippet or its socket.
      await page.waitForFunction(() => window.__violations.length >= 1, null, { timeout: 30000 })
      assert.deepEqual(await violations(page), [{ directive: 'script-src-elem', blocked: 'inline', sample: '' }], path)
      // And it works: a reload from browser-sync reloads the page, whose client connects again.
      connected = once(adapter.emitter, 'client:connected')
      const reloaded = page.waitForEvent('load', { timeout: 30000 })
      adapter.reload()
      await reloaded
      await withTimeout(connected, 30000, `the client connecting again after the reload of ${path}`)
      assert.equal((await violations(page)).length, 1, `${path} after the reload: ${JSON.stringify(await violations(page))}`)
      await page.close()
    }
  } finally {
    await context.close()
    await adapter.exit()
  }

  // The control: browser-sync 3's own proxy serves the same page with its snippet blocked.
  const bs = require('browser-sync').create()
  const port = await deadPort()
  const control = await browser.newContext()
  try {
    await new Promise((resolve, reject) =>
      bs.init({ proxy: upstream.url, port, listen: HOST, open: false, online: false, ui: false, logLevel: 'silent' }, (err) => (err ? reject(err) : resolve())),
    )
    const page = await newWatchedPage(control)
    await page.goto(`http://${HOST}:${port}/header`, { waitUntil: 'load' })
    // The page's own blocked script and browser-sync's snippet.
    await page.waitForFunction(() => window.__violations.length >= 2, null, { timeout: 30000 })
    const seen = await violations(page)
    assert.ok(seen.every((v) => v.directive === 'script-src-elem' && v.blocked === 'inline'), JSON.stringify(seen))
  } finally {
    await control.close()
    bs.exit()
    await upstream.close()
  }
})
