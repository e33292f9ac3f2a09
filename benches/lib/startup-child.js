'use strict'
// benches/startup.js's child: a process that starts proxies and reports its own CPU when asked.
// DEVPROXY_MODULE: another build's folder, to compare builds in one run; OPTS: more start() options as JSON
// (`OPTS='{"inspector":false}'`), to see what a feature costs.
const { start } = require(process.env.DEVPROXY_MODULE || '../..')
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000 }
let server
process.on('message', async (m) => {
  if (m.op === 'cycles') {
    const each = []
    for (let i = 0; i < m.n; i++) {
      const t = cpu()
      const s = await start({ proxy: m.target, port: 0, logLevel: 'silent', ...JSON.parse(process.env.OPTS || '{}') })
      each.push(cpu() - t)
      await s.stop()
    }
    process.send({ each })
  } else if (m.op === 'start') {
    server = await start({ proxy: m.target, port: 0, logLevel: 'silent', ...JSON.parse(process.env.OPTS || '{}') })
    process.send({ port: new URL(server.url).port })
  } else if (m.op === 'cpu') process.send({ cpu: cpu() })
})
