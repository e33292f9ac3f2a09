'use strict'
// What starting costs (issue 51, item 1), read from inside a child process that does nothing else:
// `start()` + `stop()` cycles (CPU of the whole process, all threads, by process.cpuUsage), then one
// proxy's first page request against its second and against a page for a Host it has not seen.
// The client is this process; the child reports its CPU before and after each step over IPC.
// A page request says `Accept: text/html`, as a browser's does: without it the proxy passes the page on
// untouched (Browsersync's rule), which is all this script measured before 2026-12-07.
//   ROUNDS=5 node benches/startup.js [cycles=21]   (from the repo root, after the addon is built)
const { fork } = require('node:child_process')
const http = require('node:http')
const zlib = require('node:zlib')
const path = require('node:path')

const cycles = Number(process.argv[2] || 21)
const rounds = Number(process.env.ROUNDS || 5)
const page = Buffer.from(`<!doctype html><html><head><meta charset=utf-8><title>t</title></head><body>${'<p><a href="http://HOST/x">x</a> text</p>\n'.repeat(2000)}</body></html>`)

const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1]
const ask = (child, msg) => new Promise((resolve) => { child.once('message', resolve); child.send(msg) })

const up = http.createServer((req, res) => {
  const body = zlib.gzipSync(Buffer.from(String(page).replaceAll('HOST', req.headers.host)))
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'gzip', 'content-length': body.length })
  res.end(body)
})
up.listen(0, '127.0.0.1', async () => {
  const target = `http://127.0.0.1:${up.address().port}`
  const get = (port, host) => new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/', headers: { host, accept: 'text/html', 'accept-encoding': 'gzip' }, agent: false }, (res) => {
      res.resume(); res.on('end', resolve)
    }).on('error', reject)
  })
  const starts = []
  const requests = { first: [], second: [], newHost: [], ipc: [] }
  // A fresh process each round: the first start() of a process is what a CLI or a gulp run pays.
  for (let round = 0; round < rounds; round++) {
    const child = fork(path.join(__dirname, 'lib', 'startup-child.js'), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    const { each } = await ask(child, { op: 'cycles', target, n: cycles })
    starts.push(...each.map((ms, i) => ({ ms, first: i === 0 })))
    const { port } = await ask(child, { op: 'start', target })
    // `host` null: the two CPU reads alone, whose cost is taken off each request's.
    const step = async (host) => {
      const before = (await ask(child, { op: 'cpu' })).cpu
      if (host) await get(port, host)
      return (await ask(child, { op: 'cpu' })).cpu - before
    }
    requests.ipc.push(await step(null))
    requests.first.push(await step(`127.0.0.1:${port}`))
    requests.second.push(await step(`127.0.0.1:${port}`))
    for (let i = 0; i < 5; i++) await step(`127.0.0.1:${port}`)
    requests.newHost.push(await step(`new${round}.localhost:${port}`))
    child.kill()
  }
  const f = (x) => x.toFixed(2)
  const firsts = starts.filter((s) => s.first).map((s) => s.ms)
  const rest = starts.filter((s) => !s.first).map((s) => s.ms)
  console.log(`start() CPU ms: first of a process, median of ${firsts.length}: ${f(median(firsts))}; later ones, median of ${rest.length}: ${f(median(rest))}`)
  const ipc = median(requests.ipc)
  const net = (a) => f(median(a) - ipc)
  console.log(`page request CPU ms (median of ${rounds} processes, 100 KB gzip page rewritten and gzipped again, less the two CPU reads' ${f(ipc)} ms): first ${net(requests.first)}, second ${net(requests.second)}, new Host ${net(requests.newHost)}`)
  up.close()
})
