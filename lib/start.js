'use strict'
// `start(options)`: prepares what only JS can hold, then starts the native server.

const binding = require('../binding.js')
const { ProxyServer } = require('./server.js')
const { prepareOptions } = require('./rules.js')

/**
 * Starts a proxy; see index.d.ts. Resolves to a `ProxyServer`, rejects with an error naming the bad
 * option, rule or port.
 */
async function start(options) {
  const native = await binding.start(prepareOptions(options))
  return new ProxyServer(native, [])
}

module.exports = { start }
