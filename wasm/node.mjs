// devproxy-native/wasm in Node (and Deno, Bun): the module read from the package, compiled once.
// No native code is loaded: this works under `node --no-addons`.

import { readFileSync } from 'node:fs'
import { initSync } from './pkg/devproxy_native.js'

const wasm = initSync({ module: readFileSync(new URL('./pkg/devproxy_native_bg.wasm', import.meta.url)) })

export { compileRules, CompiledRules, createRewriter, rewrite, __rewriteEach, __openBody } from './rewriter.mjs'
// Test hook, not part of the API: how many replacement functions live rules hold.
export { __liveFunctions } from './pkg/devproxy_native.js'

/** Test hook, not part of the API: the WebAssembly memory's size in bytes (it grows, never shrinks). */
export function __memoryBytes() {
  return wasm.memory.buffer.byteLength
}
