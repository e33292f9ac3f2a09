#!/usr/bin/env node
// `npm run demo`: a small bundled site served on loopback, and the `devproxy` command line in front of
// it (a child process, as a user would run it), on port 3000 or $PORT (the next free one when taken).
// Open the printed URL: links point back at the proxy,
// the snippet shows a badge, and pages stay gzip-compressed end to end. `node demo/demo.js --check`
// fetches one page through the proxy, prints what the proxy did, and exits (used to check the demo).
'use strict'

const http = require('node:http')
const zlib = require('node:zlib')
const path = require('node:path')
const { spawn } = require('node:child_process')

function page(origin, title, body) {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${title}</title>
<link rel="stylesheet" href="${origin}/style.css"></head>
<body class="demo">
<nav><a href="${origin}/">Home</a> · <a href="${origin}/about">About</a> · <a href="//${origin.slice(7)}/news">News</a></nav>
<h1>${title}</h1>${body}
<script>window.config = { api: "${origin.replace(/\//g, '\\/')}\\/api" }</script>
</body></html>`
}

function startSite() {
  return new Promise((resolve) => {
    const server = http.createServer((req, res) => {
      const origin = `http://127.0.0.1:${server.address().port}`
      const routes = {
        '/': page(origin, 'devproxy-native demo', `<p>Every link on this page names <code>${origin}</code>; through the proxy they point at the proxy.</p>`),
        '/about': page(origin, 'About', '<p>A Rust reverse proxy in a Node addon: streaming rewrites, compression kept on both ends.</p>'),
        '/news': page(origin, 'News', `<p>Absolute: <a href="${origin}/about">${origin}/about</a></p>`),
      }
      if (req.url === '/style.css') {
        res.writeHead(200, { 'content-type': 'text/css' })
        return res.end('body{font-family:system-ui;margin:2rem} #devproxy-badge{position:fixed;right:1rem;bottom:1rem;background:#222;color:#fff;padding:.5rem 1rem;border-radius:.5rem}')
      }
      const html = routes[req.url]
      if (!html) {
        res.writeHead(404, { 'content-type': 'text/plain' })
        return res.end('not found\n')
      }
      const gzip = /gzip/.test(req.headers['accept-encoding'] || '')
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...(gzip ? { 'content-encoding': 'gzip' } : {}), vary: 'Accept-Encoding' })
      res.end(gzip ? zlib.gzipSync(html) : html)
    })
    server.listen(0, '127.0.0.1', () => resolve(server))
  })
}

async function main() {
  const check = process.argv.includes('--check')
  const site = await startSite()
  const target = `http://127.0.0.1:${site.address().port}`
  console.log(`upstream site: ${target}`)
  const args = [
    path.join(__dirname, '..', 'bin', 'devproxy.js'),
    target,
    '--port', check ? '0' : String(process.env.PORT || 3000),
    '--snippet', '<div id="devproxy-badge">served through devproxy-native</div>',
  ]
  console.log(`$ devproxy ${args.slice(1).map((a) => (/[\s<>"]/.test(a) ? `'${a}'` : a)).join(' ')}`)
  // Ctrl-C in the terminal reaches both processes: the CLI stops gracefully, then the site closes.
  const cli = spawn(process.execPath, args, { stdio: ['ignore', check ? 'pipe' : 'inherit', 'inherit'] })
  const exited = new Promise((resolve) => cli.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))))
  process.on('SIGINT', () => {})
  if (check) {
    const url = await new Promise((resolve, reject) => {
      let out = ''
      cli.stdout.on('data', (d) => {
        out += d
        process.stdout.write(d)
        const m = /Local:\s+(\S+)/.exec(out)
        if (m) resolve(m[1])
      })
      exited.then((code) => reject(new Error(`devproxy exited with code ${code} before it was ready`)))
    })
    const res = await fetch(url + '/', { headers: { accept: 'text/html', 'accept-encoding': 'gzip' } })
    const body = await res.text()
    const port = new URL(url).port
    const ok = res.status === 200 && body.includes('devproxy-badge') && !body.includes(target) && body.includes(`//127.0.0.1:${port}/about`)
    console.log(`GET / -> ${res.status}, content-encoding ${res.headers.get('content-encoding')}, snippet ${body.includes('devproxy-badge') ? 'injected' : 'MISSING'}, target links left: ${body.split(target).length - 1}`)
    cli.kill('SIGINT')
    const code = await exited
    site.close()
    process.exitCode = ok && code === 0 ? 0 : 1
    return
  }
  process.exitCode = await exited
  site.close()
}

main().catch((error) => {
  console.error(error.message)
  process.exit(1)
})
