'use strict'
// What a new `Host` costs (issue 48, item 9): the proxy's CPU per form POST (the proxy's origin in its
// fields, so rewriteRequestBodies works on each) when every request names a new `*.localhost` Host,
// against the same Host each time; the proxy in a child process, its CPU read from outside
// (/proc/<pid>/stat utime+stime, 10 ms ticks: hence rounds of N requests). Linux only.
//   node benches/new-host.js [N=300]   (from the repo root, after the addon is built)
const { spawn } = require('node:child_process')
const http = require('node:http')
const fs = require('node:fs')
const n = Number(process.argv[2] || 300)
const ticks = (pid) => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return Number(f[11]) + Number(f[12]) }
const up = http.createServer((req, res) => { req.resume(); req.on('end', () => res.end('ok')) })
up.listen(0, '127.0.0.1', async () => {
  const child = spawn(process.execPath, ['-e', `require(${JSON.stringify(require('node:path').join(__dirname, '..'))}).start({ proxy: 'http://127.0.0.1:${up.address().port}', port: 0, quiet: true }).then(s => console.log(new URL(s.url).port))`], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = Number(await new Promise((r) => child.stdout.once('data', (d) => r(String(d).trim()))))
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const post = (host) => new Promise((resolve, reject) => {
    const body = `u=${encodeURIComponent(`http://${host}/a`)}&v=//${host}/b`
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/save', agent, headers: { host, 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } }, (res) => { res.resume(); res.on('end', resolve) })
    req.on('error', reject); req.end(body)
  })
  for (let i = 0; i < 20; i++) await post(`127.0.0.1:${port}`)
  const runs = { same: [], fresh: [] }
  for (let round = 0; round < 5; round++) {
    let t = ticks(child.pid)
    for (let i = 0; i < n; i++) await post(`127.0.0.1:${port}`)
    runs.same.push((ticks(child.pid) - t) * 10 / n)
    t = ticks(child.pid)
    for (let i = 0; i < n; i++) await post(`r${round}h${i}.localhost:${port}`)
    runs.fresh.push((ticks(child.pid) - t) * 10 / n)
  }
  const med = (a) => a.sort((x, y) => x - y)[2].toFixed(3)
  console.log(`CPU ms per request, median of 5 rounds of ${n}: same Host ${med(runs.same)}, a new Host each ${med(runs.fresh)}`)
  child.kill(); up.close(); agent.destroy()
})
