// devproxy-native/wasm in browsers, pages and Service Workers alike, through any bundler or none: the
// module's bytes come inlined as base64 (pkg/devproxy_native_bg_inline.mjs), so there is no `.wasm`
// import for a bundler to need a loader for, no file to copy, and no MIME type for a server to get
// right. They are compiled synchronously: a Service Worker may not use top-level await, and the API is
// usable at once as elsewhere (Chromium allows a synchronous compile this size on the main thread).

import base64 from './pkg/devproxy_native_bg_inline.mjs'
import { initSync } from './pkg/devproxy_native.js'

function decode(text) {
  if (typeof Uint8Array.fromBase64 === 'function') return Uint8Array.fromBase64(text)
  const binary = atob(text)
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}

initSync({ module: decode(base64) })

export { compileRules, CompiledRules, createRewriter, rewrite, rewriteBody } from './rewriter.mjs'
