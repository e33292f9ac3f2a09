#!/usr/bin/env node
'use strict'
// `devproxy <target> [options]`: see lib/cli.js, or `devproxy --help`.

const { main } = require('../lib/cli.js')

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== null) process.exitCode = code
  },
  (error) => {
    if (error && (error.code === 'ERR_DEVPROXY_NATIVE_MISSING' || error.code === 'ERR_DLOPEN_DISABLED')) {
      // Not a bug but an install without this platform's addon (lib/native.js): its one line says which.
      console.error(`devproxy: ${error.message}`)
    } else {
      // Not bad input (that is reported by main): a bug, so keep the stack.
      console.error(error)
    }
    process.exitCode = 1
  },
)
