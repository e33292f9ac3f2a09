'use strict'
// Long reliability runs (issue 5), the full-size versions of the CI tests in __test__/reliability.test.js and
// __test__/hostile.test.js, with the same code (__test__/fixtures/runners.js):
//   load       256 keep-alive connections x 20 s, rewritten HTML (gzip and identity) + passthrough binary,
//              every body checked, RSS of the proxy's process back near its baseline, fds back to it
//   cycles     1,000 start()/stop() cycles in one process, each serving a request: fds, threads, RSS
//   websocket  10,000 messages through the tunnel, in order, none lost
//   slowloris  a request head sent one byte per 100 ms is dropped by the 10 s header-read timeout (by 12 s)
//              while another client is served
//
//   node benches/soak.js [load|cycles|websocket|slowloris ...]
//
// Prints the figures of each run and exits non-zero if any run fails. Everything binds to and targets
// 127.0.0.1. Takes about a minute (debug addon, 2 cores).

const path = require('node:path')
const { runLoad, runCycles, runWebSocket, runSlowClient } = require(path.join(__dirname, '../__test__/fixtures/runners'))

const runs = {
  load: (log) => runLoad({ connections: 256, seconds: 20, warmupSeconds: 5, rssToleranceMiB: 64, log }),
  cycles: (log) => runCycles({ cycles: 1000, warmup: 100, rssToleranceMiB: 40, log }),
  websocket: (log) => runWebSocket({ messages: 10000, log }),
  slowloris: (log) => runSlowClient({ complete: false, byteMs: 100, closeWithinMs: 12000, log }),
}

;(async () => {
  const wanted = process.argv.slice(2)
  for (const name of wanted) {
    if (!runs[name]) {
      console.error(`unknown run '${name}'; runs: ${Object.keys(runs).join(', ')}`)
      process.exit(2)
    }
  }
  const names = wanted.length ? wanted : Object.keys(runs)
  const failures = []
  for (const name of names) {
    const t0 = Date.now()
    process.stdout.write(`\n== ${name}\n`)
    let figures
    const log = (f) => {
      figures = f
    }
    try {
      // each runner logs its figures before it asserts, so that they are printed on failure too
      figures = await runs[name](log)
      console.log(JSON.stringify(figures, null, 2))
      console.log(`${name}: ok (${((Date.now() - t0) / 1000).toFixed(1)} s)`)
    } catch (err) {
      if (figures) console.log(JSON.stringify(figures, null, 2))
      console.log(`${name}: FAILED (${((Date.now() - t0) / 1000).toFixed(1)} s)\n${err && err.stack}`)
      failures.push(name)
    }
  }
  console.log(`\n${names.length - failures.length}/${names.length} runs passed${failures.length ? `; failed: ${failures.join(', ')}` : ''}`)
  process.exit(failures.length ? 1 : 0)
})()
