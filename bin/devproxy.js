#!/usr/bin/env node
'use strict'
// `devproxy <target> [options]`: see lib/cli.js, or `devproxy --help`.

const { main } = require('../lib/cli.js')

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== null) process.exitCode = code
  },
  (error) => {
    // Not bad input (that is reported by main): a bug, so keep the stack.
    console.error(error)
    process.exitCode = 1
  },
)
