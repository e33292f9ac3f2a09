// A Cloudflare Worker that puts the dev proxy's rewrite rules in front of a site: each request goes to
// the origin, and HTML answers come back through `createRewriter`, streamed (never held whole). The
// origin is `ORIGIN` (an environment binding) or the config's `proxy`.

import { compileRules, rewriteBody } from 'devproxy-native/wasm'
import config from './devproxy.config.mjs'

// Compiled once per isolate, here at module scope: each request's rewriter shares them (compiling this
// config's rules took 8-28 ms a request; a request's setup is now about 0.04 ms).
const rules = compileRules(config.rewriteRules || [])

/** Headers that describe the origin's body, not the rewritten one. */
const BODY_HEADERS = ['content-length', 'etag', 'content-md5']

export default {
  async fetch(request, env) {
    const origin = new URL(env.ORIGIN || config.proxy)
    const url = new URL(request.url)
    const upstream = new URL(url.pathname + url.search, origin)
    const response = await fetch(upstream, {
      method: request.method,
      headers: request.headers,
      body: request.body,
      redirect: 'manual',
    })
    const headers = new Headers(response.headers)
    // Redirects to the origin lead back here, as the dev proxy's do.
    const location = headers.get('location')
    if (location) {
      const target = new URL(location, upstream)
      if (target.origin === origin.origin) headers.set('location', url.origin + target.pathname + target.search + target.hash)
    }
    const type = headers.get('content-type') || ''
    if (!response.body || !type.startsWith('text/html')) {
      return new Response(response.body, { status: response.status, statusText: response.statusText, headers })
    }
    // fetch() has decoded a gzip'd body; the runtime encodes the new one again for `Content-Encoding`.
    for (const name of BODY_HEADERS) headers.delete(name)
    return new Response(rewrittenBody(request, response, origin), {
      status: response.status,
      statusText: response.statusText,
      headers,
    })
  },
}

/**
 * One HTML answer's body rewritten: the shared rules, with this request's origins, URL and exchange.
 * `rewriteBody` reads the origin's body 64 KiB at a time; `body.pipeThrough(createRewriter(...))` does
 * the same work, but workerd hands a pipe's chunks to JavaScript 4 KiB at a time, at 3x the CPU.
 */
export function rewrittenBody(request, response, origin) {
  const url = new URL(request.url)
  return rewriteBody(response.body, rules, {
    from: origin.origin,
    to: url.origin,
    snippet: config.snippet,
    url: url.pathname + url.search,
    req: request,
    res: response,
  })
}
