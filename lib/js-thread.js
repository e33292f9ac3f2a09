'use strict'
// The JS thread's share for the proxy's calls into JavaScript (rule functions, proxyReq/proxyRes hooks,
// onRequest, middleware): they run in slices of at most SLICE_MS, and between two slices Node's event
// loop gets a turn (its I/O, timers, other servers of the process).
//
// Why: a native call into JS is dispatched by Node in a loop that only returns to the event loop once
// the queue of calls is empty. Pages whose rule functions are busy keep that queue full (each page
// queues its next call as soon as the last one returns), so an upstream, a browser-sync server or a
// middleware in the same process waited seconds for its turn. Here every call is queued, the native
// side waits on a Promise, and `setImmediate` between slices lets the poll phase run.
//
// Results are never rejections: `{ value }` or `{ error }` (the thrown value as text), which the
// native side reads as a typed outcome (src/binding/outcome.rs).

const { performance } = require('node:perf_hooks')

/** Longest run of queued calls before the event loop gets its turn (one call longer than this runs whole). */
const SLICE_MS = 4

const queue = []
let scheduled = false

/** The thrown value as the text the native side puts in its error page and log. */
function describe(err) {
  if (err instanceof Error) return err.message
  try {
    return String(err)
  } catch {
    return Object.prototype.toString.call(err)
  }
}

function runSlice() {
  const until = performance.now() + SLICE_MS
  do {
    const { call, resolve } = queue.shift()
    try {
      resolve({ value: call() })
    } catch (err) {
      resolve({ error: describe(err) })
    }
  } while (queue.length > 0 && performance.now() < until)
  if (queue.length > 0) setImmediate(runSlice)
  else scheduled = false
}

/** Runs `call()` in the JS thread's next slice; resolves to `{ value }` or `{ error }`. */
function inSlice(call) {
  return new Promise((resolve) => {
    queue.push({ call, resolve })
    if (!scheduled) {
      scheduled = true
      setImmediate(runSlice)
    }
  })
}

/**
 * `fn` as the native side calls it: each call queued for a slice, answered as `{ value }` or
 * `{ error }`. `settle` maps the function's return value (a rule's text coercion, a hook's new head).
 */
function sliced(fn, settle = (value) => value) {
  return function (...args) {
    return inSlice(() => settle(fn.apply(this, args)))
  }
}

module.exports = { inSlice, sliced, SLICE_MS }
