#!/usr/bin/env node
'use strict'
// A built addon's smoke test, in one process (so it runs under qemu-user for another CPU): a page from
// a loopback upstream through the proxy, links rewritten and snippet injected. Exits 0 on success.
// binding.js loads the .node of the running platform (process.arch/libc), or the one
// NAPI_RS_NATIVE_LIBRARY_PATH names: scripts/release-dry-run.sh runs it so on each Linux build, the arm64
// one as `NAPI_RS_NATIVE_LIBRARY_PATH=<.node> QEMU_LD_PREFIX=/usr/aarch64-linux-gnu qemu-aarch64 <arm64 node>
// scripts/smoke.js`.

const http = require('node:http')
const { start } = require('..')

const site = http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' })
  res.end(`<html><body><a href="http://${req.headers.host}/x">x</a></body></html>`)
})
site.listen(0, '127.0.0.1', async () => {
  let ok = false
  try {
    const server = await start({ proxy: `http://127.0.0.1:${site.address().port}`, port: 0, snippet: '<i>s</i>', logLevel: 'silent' })
    const res = await fetch(server.url + '/', { headers: { accept: 'text/html', 'accept-encoding': 'gzip' } })
    const body = await res.text()
    ok = body === `<html><body><i>s</i><a href="//127.0.0.1:${server.port}/x">x</a></body></html>`
    console.log(`${process.platform}-${process.arch} ${process.version}: ${res.status} ${res.headers.get('content-encoding')} ${ok ? 'rewritten' : `WRONG: ${body}`}`)
    await server.stop()
  } catch (e) {
    console.error(e)
  }
  site.close()
  process.exitCode = ok ? 0 : 1
})
