'use strict'
// Shared helpers for the devproxy-native end-to-end tests.
// Everything binds to 127.0.0.1 only and never contacts any other address.

const assert = require('node:assert/strict')
const http = require('node:http')
const https = require('node:https')
const net = require('node:net')
const path = require('node:path')
const zlib = require('node:zlib')
const { spawn } = require('node:child_process')

const ROOT = path.resolve(__dirname, '..')
const HOST = '127.0.0.1'

let addon
/** The addon, loaded lazily so `node --check` works before it is built. */
function lib() {
  if (!addon) addon = require(ROOT)
  return addon
}

/**
 * Set by the release workflow's test jobs, which test the release builds: those have no test hooks
 * (docs/releasing.md). Tests that need a hook skip there with this reason.
 */
const RELEASE_BUILD = process.env.DEVPROXY_RELEASE_BUILD === '1'
const NO_HOOKS = RELEASE_BUILD && 'a release build has no test hooks (DEVPROXY_RELEASE_BUILD=1)'

/**
 * The package's API plus the addon's test hooks (`__panicProbe`, `__rewriteEach`), which only a build
 * with the `test-hooks` cargo feature has: scripts/prepare.js builds a clone's addon with it, the release
 * workflow without. On a release build `__rewriteEach` is `rewrite()` per input (the rules compiled for
 * each: slower, same results) and `__panicProbe` is missing.
 */
function hooks() {
  const native = require(path.join(ROOT, 'lib', 'native.js'))
  const { wrapRules } = require(path.join(ROOT, 'lib', 'rules.js'))
  if (typeof native.__panicProbe !== 'function') {
    if (!RELEASE_BUILD) throw new Error('the addon was built without the test-hooks feature: DEVPROXY_FORCE_BUILD=1 npm install (scripts/prepare.js) builds it with them')
    return { ...lib(), __rewriteEach: (inputs, rules, context) => inputs.map((input) => lib().rewrite(input, rules, context)) }
  }
  return {
    ...lib(),
    __panicProbe: native.__panicProbe,
    // As `rewrite()`: rule functions get the context's req/res, or the defaults.
    __rewriteEach: (inputs, rules, context) => native.__rewriteEach(inputs, wrapRules(rules, context)),
  }
}

module.exports = {
  hooks,
  RELEASE_BUILD,
  NO_HOOKS,
  rawExchange,
  dechunk,
  tapStderr,
  ROOT,
  fileUpstream,
  HOST,
  lib,
  deferred,
  withTimeout,
  until,
  stopIfStarted,
  tick,
  startUpstream,
  deadPort,
  occupyPort,
  connectRefused,
  request,
  withProxy,
  decodeBody,
  browsersyncRewriteLinks,
  mulberry32,
  randomSplits,
  writeChunks,
  spawnNode,
  CHROMIUM,
  launchChromium,
}

/** A browser-like Accept header for page navigations. */
module.exports.ACCEPT_HTML = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'
/** Browsersync's snippet insertion rule: right after the first <body...> tag. */
module.exports.insertSnippet = (body, snippet) => body.replace(/<body[^>]*>/i, (m) => m + snippet)
