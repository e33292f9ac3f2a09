#!/usr/bin/env node
// A Browsersync script, switched to devproxy-native by changing one line:
//
//   - const browserSync = require('browser-sync').create()
//   + const browserSync = require('devproxy-native/browser-sync').create()
//
// The config, file watching, CSS injection, reload()/notify() and the printed URLs stay as they were;
// the site is now served by devproxy-native (streamed, compressed) instead of Browsersync's proxy.
// Run: `node examples/plain-node.js`, open the Local URL, edit examples/site/*.
'use strict'

const http = require('node:http')
const fs = require('node:fs')
const path = require('node:path')

// In your project this is `require('devproxy-native/browser-sync')`; here, the checkout's copy.
const browserSync = require('../browser-sync').create()

// Stands in for your app's server: serves examples/site on a loopback port.
const site = path.join(__dirname, 'site')
const app = http.createServer((req, res) => {
  const name = req.url === '/' ? 'index.html' : path.basename(req.url.split('?')[0])
  fs.readFile(path.join(site, name), (err, body) => {
    if (err) return res.writeHead(404).end('not found\n')
    res.writeHead(200, { 'content-type': name.endsWith('.css') ? 'text/css' : 'text/html; charset=utf-8' })
    res.end(body)
  })
})

app.listen(0, '127.0.0.1', () => {
  browserSync.init(
    {
      proxy: `http://127.0.0.1:${app.address().port}`,
      port: 3000,
      files: [path.join(site, '*.css'), path.join(site, '*.html')],
      open: false,
    },
    (err, bs) => {
      if (err) {
        console.error(err.message)
        app.close()
        return
      }
      browserSync.notify(`Serving through devproxy-native on port ${bs.getOption('port')}`)
    },
  )
})

process.on('SIGINT', () => {
  browserSync.exit().then(() => app.close())
})
