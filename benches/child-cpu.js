'use strict'
// One devproxy-native child (benches/lib/devproxy-child.js) behind the bench upstream, under wrk from this
// process: its req/s and its CPU a request (from /proc/<pid>/stat), optionally with `perf record` on it.
// For before/after pairs of builds (swap the addon between runs) and for profiles of one workload's child.
//   node benches/child-cpu.js <variant|-> <path> <seconds> [perf.data [dwarf|none]]
//   e.g. node benches/child-cpu.js words /words.html 4          (workload 14's 120 rules)
//        node benches/child-cpu.js - /page.html 4 /tmp/w1.data   (workload 1's page, 0 rules, profiled)
// The page requests say `Accept: text/html` and `Accept-Encoding: gzip, deflate, br`, as the workloads do.
const { fork, spawn, execFileSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const [variant, urlPath, seconds, perfOut, callGraph] = process.argv.slice(2)
if (!variant || !urlPath || !seconds) {
  console.error('usage: node benches/child-cpu.js <variant|-> <path> <seconds> [perf.data [dwarf|none]]')
  process.exit(2)
}
const ROOT = path.join(__dirname, '..')

function forkChild (script, args) {
  const child = fork(script, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
  return new Promise((resolve, reject) => {
    child.on('message', (m) => (m.error ? reject(new Error(m.error)) : m.ready && resolve({ child, port: m.port })))
    child.on('exit', (code) => reject(new Error(`${script} exited (${code})`)))
  })
}

/** User plus system CPU of a process so far, in microseconds (fields 14 and 15 of /proc/<pid>/stat, in ticks). */
function cpuMicros (pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 1e6 / 100
}

function wrk (url, secs) {
  const headers = ['-H', 'Accept: text/html', '-H', 'Accept-Encoding: gzip, deflate, br']
  const out = execFileSync('wrk', ['-t1', '-c8', `-d${secs}s`, ...headers, url]).toString()
  const requests = /(\d+) requests in/.exec(out)
  if (!requests) throw new Error(`wrk gave no summary:\n${out}`)
  return Number(requests[1])
}

;(async () => {
  const up = await forkChild(path.join(__dirname, 'lib', 'upstream.js'), [])
  const proxy = await forkChild(path.join(__dirname, 'lib', 'devproxy-child.js'),
    [`http://127.0.0.1:${up.port}`, '<script>snip</script>', '', variant === '-' ? '' : variant])
  try {
    const url = `http://127.0.0.1:${proxy.port}${urlPath}`
    wrk(url, 1)
    const before = cpuMicros(proxy.child.pid)
    const graph = callGraph === 'dwarf' ? ['--call-graph', 'dwarf,16384'] : callGraph === 'none' ? [] : ['-g']
    const perf = perfOut && spawn('perf', ['record', ...graph, '-F', '2000', '-o', perfOut, '-p', String(proxy.child.pid)], { stdio: 'ignore' })
    const requests = wrk(url, seconds)
    const cpu = cpuMicros(proxy.child.pid) - before
    if (perf) {
      perf.kill('SIGINT')
      await new Promise((resolve) => perf.on('exit', resolve))
    }
    console.log(`${variant} ${urlPath}: ${(requests / Number(seconds)).toFixed(0)} req/s, CPU ${(cpu / requests).toFixed(0)} us a request`)
  } finally {
    proxy.child.kill()
    up.child.kill()
  }
})().catch((err) => {
  console.error(err)
  process.exit(1)
})
