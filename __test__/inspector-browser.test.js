'use strict'
// The inspector page in headless Chromium (Debian's, through playwright-core): it loads without a
// console error, a request made through the proxy appears while the page is open (over its event
// stream, with no reload or polling), the path and status filters work, the detail view shows the
// exchange. Fails, never skips, when Chromium cannot start. Every wait is on the DOM or an event.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { HOST, startUpstream, request, withProxy, launchChromium } = require('./helpers.js')

const WAIT = 30000

let browser
before(async () => {
  browser = await launchChromium()
})
after(async () => {
  if (browser) await browser.close()
})

const routes = {
  '/': (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end('<html><body><h1>home</h1></body></html>')
  },
  '/api/items': (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('[1,2,3]')
  },
}

test('the inspector page: loads clean, shows new requests live, filters by path and status, shows details', { timeout: 120000 }, async (t) => {
  const upstream = await startUpstream(routes)
  try {
    await withProxy({ proxy: upstream.url, port: 0, rewriteRules: [{ match: /home/g, replace: 'HOME' }] }, async (server) => {
      const base = `http://${HOST}:${server.port}`
      await request(`${base}/`, { headers: { accept: 'text/html', authorization: 'Bearer page-secret' } })
      await request(`${base}/api/items`)
      await request(`${base}/missing`)

      const page = await browser.newPage()
      const problems = []
      page.on('console', (msg) => {
        if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`console.${msg.type()}: ${msg.text()}`)
      })
      page.on('pageerror', (err) => problems.push(`page error: ${err.message}`))
      const requested = []
      page.on('request', (req) => requested.push(req.url()))
      try {
        const loaded = await page.goto(`${base}/__devproxy/`, { timeout: WAIT })
        assert.equal(loaded.status(), 200)
        const rows = page.locator('#exchange-rows tr')
        await page.waitForFunction(() => document.querySelectorAll('#exchange-rows tr').length === 3, null, { timeout: WAIT })
        await page.waitForSelector('#status.live', { timeout: WAIT })
        assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.url)), ['/missing', '/api/items', '/'], 'newest first')

        // Live: a request through the proxy appears without a reload or a poll.
        const before = requested.length
        const url = '/api/items?live=1'
        const sent = Date.now()
        await request(`${base}${url}`)
        await page.waitForSelector(`#exchange-rows tr[data-url="${url}"]`, { timeout: WAIT })
        const appeared = Date.now() - sent
        t.diagnostic(`the new request appeared ${appeared} ms after it was sent`)
        // What makes it live is the push (nothing fetched, no poll timer to wait for): that is asserted.
        // The time is shown, not bounded tightly (issue 16 promised 1 s; it takes tens of ms): a bound
        // fails on a loaded machine, not on a broken push. The guard only catches a poll in disguise.
        assert.deepEqual(requested.slice(before), [], 'the row came over the open event stream, nothing was fetched')
        assert.ok(appeared < 5000, `the new request appeared after ${appeared} ms`)
        assert.equal(await rows.first().getAttribute('data-url'), url, 'the newest row is on top')

        // Path filter.
        await page.fill('#filter-path', '/api/')
        await page.waitForFunction(() => document.querySelectorAll('#exchange-rows tr').length === 2, null, { timeout: WAIT })
        assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.url)), [url, '/api/items'])
        await page.fill('#filter-path', 'nothing-matches-this')
        await page.waitForSelector('#empty:not([hidden])', { timeout: WAIT })
        assert.equal(await rows.count(), 0)
        await page.fill('#filter-path', '')
        // Status class filter.
        await page.selectOption('#filter-status', '4')
        await page.waitForFunction(() => document.querySelectorAll('#exchange-rows tr').length === 1, null, { timeout: WAIT })
        assert.equal(await rows.first().getAttribute('data-url'), '/missing')
        assert.equal(await rows.first().locator('td').nth(3).textContent(), '404')
        await page.selectOption('#filter-status', '')
        await page.waitForFunction(() => document.querySelectorAll('#exchange-rows tr').length === 4, null, { timeout: WAIT })

        // Detail view of a page rewritten while the inspector is open: timings, headers with secrets
        // masked, the diff.
        await request(`${base}/?open=1`, { headers: { accept: 'text/html', authorization: 'Bearer page-secret' } })
        await page.click('#exchange-rows tr[data-url="/?open=1"]', { timeout: WAIT })
        await page.waitForSelector('#detail:not([hidden])', { timeout: WAIT })
        assert.match(await page.textContent('#detail-title'), /^GET \/\?open=1 → 200$/)
        const requestHeaders = await page.textContent('#detail-request-headers')
        assert.match(requestHeaders, /accepttext\/html/)
        assert.match(requestHeaders, /authorization\[redacted\]/)
        assert.doesNotMatch(await page.content(), /page-secret/)
        assert.match(await page.textContent('#detail-timings'), /total\d+(\.\d+)? ms/)
        // The diff of the first KiB before and after the rule.
        assert.equal(await page.textContent('#detail-diff del'), 'home')
        assert.equal(await page.textContent('#detail-diff ins'), 'HOME')

        // The diff view's algorithm, on a snippet insertion.
        const ops = await page.evaluate(() => window.devproxyInspector.diff('<body><h1>home</h1>', '<body><script></script><h1>home</h1>'))
        const side = (keep) => ops.filter(([op]) => op === '=' || op === keep).map(([, text]) => text).join('')
        assert.equal(side('-'), '<body><h1>home</h1>', 'kept + removed = before')
        assert.equal(side('+'), '<body><script></script><h1>home</h1>', 'kept + inserted = after')
        assert.deepEqual(ops.filter(([op]) => op !== '=').map(([op, text]) => [op, text.length]), [['+', 17]], 'only the snippet is new')

        // The rules tab loads its table.
        const rulesLoaded = page.waitForResponse((res) => res.url().endsWith('/__devproxy/api/rules'), { timeout: WAIT })
        await page.click('#tab-rules')
        assert.equal((await rulesLoaded).status(), 200)
        await page.waitForSelector('#rules:not([hidden])', { timeout: WAIT })
        assert.equal(await page.isHidden('#exchanges'), true)
        await page.waitForSelector('#rule-rows tr', { timeout: WAIT })
        assert.deepEqual(await page.locator('#rule-rows tr td').evaluateAll((tds) => tds.slice(1, 3).map((td) => td.textContent)), ['2', '2'])
        assert.deepEqual(problems, [], 'no console errors or warnings')
      } finally {
        await page.close()
      }
    })
  } finally {
    await upstream.close()
  }
})
