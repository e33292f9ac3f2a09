'use strict'
// `require('devproxy-native/browser-sync')`: a drop-in for `require('browser-sync')` whose site is
// served by devproxy-native; see lib/browser-sync.js and README.md.

module.exports = require('./lib/browser-sync.js').createAdapter('browser-sync')
