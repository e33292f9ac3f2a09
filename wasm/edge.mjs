// devproxy-native/wasm in an edge runtime (Cloudflare Workers / workerd, and bundlers that import
// `.wasm` files as compiled modules): the module comes in as an import, no fetch and no file system.

import module from './pkg/devproxy_native_bg.wasm'
import { initSync } from './pkg/devproxy_native.js'

initSync({ module })

export { compileRules, CompiledRules, createRewriter, rewrite, rewriteBody } from './rewriter.mjs'
