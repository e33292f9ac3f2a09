'use strict'
// Issue 32: how long start() takes with 1,000 and 10,000 literal rules (string and regex forms), whether the
// event loop keeps ticking meanwhile (rules compile off the JS thread), the first page's time (rules are
// grouped before it) and the RSS the rules add. Run: node --expose-gc benches/many-rules-start.js
const { start } = require('..')
const http = require('http')
async function main() {
  const up = http.createServer((q, s) => { s.setHeader('content-type', 'text/html'); s.end('<html><body>x</body></html>') })
  await new Promise((r) => up.listen(0, '127.0.0.1', r))
  for (const n of [1000, 10000]) {
    for (const kind of ['regex literal', 'string']) {
      const rules = Array.from({ length: n }, (_, i) => ({ match: kind === 'string' ? `legacy-host-${i}.example.org` : new RegExp(`legacy-host-${i}\\.example\\.org`, 'g'), replace: `new-host-${i}.example.net` }))
      global.gc && global.gc()
      const rss0 = process.memoryUsage().rss
      const t0 = process.hrtime.bigint()
      let ticks = 0
      const timer = setInterval(() => ticks++, 10)
      const server = await start({ proxy: `http://127.0.0.1:${up.address().port}`, port: 0, quiet: true, rewriteRules: rules })
      const ms = Number(process.hrtime.bigint() - t0) / 1e6
      clearInterval(timer)
      // First request groups the rules.
      const t1 = process.hrtime.bigint()
      await new Promise((r) => http.get(server.url + '/', { headers: { accept: 'text/html' } }, (res) => { res.resume(); res.on('end', r) }))
      const first = Number(process.hrtime.bigint() - t1) / 1e6
      global.gc && global.gc()
      const rss1 = process.memoryUsage().rss
      console.log(`${n} ${kind} rules: start() ${ms.toFixed(0)} ms (event loop ticked ${ticks}x), first page ${first.toFixed(1)} ms, RSS +${((rss1 - rss0) / 1048576).toFixed(1)} MiB`)
      await server.stop()
    }
  }
  up.close()
}
main()
