// devproxy-native/wasm in Node (and Deno, Bun): the module read from the package, compiled once.
// No native code is loaded: this works under `node --no-addons`.

import { readFileSync } from 'node:fs'
import { initSync } from './pkg/devproxy_native.js'

initSync({ module: readFileSync(new URL('./pkg/devproxy_native_bg.wasm', import.meta.url)) })

// The same names as edge.mjs: the tests' hooks (__test__/fixtures/wasm-hooks.mjs) are not in the package.
export { compileRules, CompiledRules, createRewriter, rewrite, rewriteBody } from './rewriter.mjs'
