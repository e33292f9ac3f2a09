// devproxy-native/wasm: the proxy's rewrite engine as WebAssembly (no native code), for edge runtimes
// (Cloudflare Workers / workerd), Node, Deno and bundlers that import `.wasm` files as modules.

/** What rule functions get as `req`: Browsersync's request, reduced to what a rule reads. */
export interface RuleRequest {
  /** Path and query. */
  url: string
  method: string
  /** Lower-case names; repeated headers folded as Node folds them. */
  headers: Record<string, string | string[]>
  rawHeaders: string[]
}

/** What rule functions get as `res`: the status and the headers. */
export interface RuleResponse {
  statusCode: number
  getHeader(name: string): string | string[] | undefined
  getHeaders(): Record<string, string | string[]>
  getHeaderNames(): string[]
  hasHeader(name: string): boolean
}

/** A replacement function: `(req, res, match, p1, ..., pn, offset, string, groups)`, called synchronously. */
export type ReplaceFunction = (req: RuleRequest, res: RuleResponse, match: string, ...args: any[]) => string

interface RuleCommon {
  /** A RegExp (JS syntax and flags; no lookaround, backreferences or `y`) or a string (its first occurrence). */
  match: RegExp | string
  /** Globs of request URLs (path and query) the rule is limited to (`createRewriter`'s `url`). */
  paths?: string | readonly string[]
  /** Browsersync's rule id; ignored. */
  id?: string | number
}

/** A rule in the shape of Browsersync's (and the dev proxy's) `rewriteRules`. */
export type RewriteRule =
  | (RuleCommon & { replace: string | ReplaceFunction; fn?: never })
  | (RuleCommon & { fn: string | ReplaceFunction; replace?: never })

/** The request rule functions see: a Fetch `Request`, or its parts. */
export type RequestLike = Request | { url?: string; method?: string; headers?: HeadersInit }
/** The response rule functions see: a Fetch `Response`, or its parts. */
export type ResponseLike = Response | { statusCode?: number; status?: number; headers?: HeadersInit }

export interface RewriterOptions {
  /** The origin pages come from (`https://example.com`): its links are rewritten to `to` (Browsersync's link rewrite). */
  from?: string | URL
  /** The origin the pages are served at (`http://localhost:8787`); given with `from`. */
  to?: string | URL
  /** HTML put right after the first `<body ...>` tag. */
  snippet?: string
  /** What one pending match may hold back, in bytes (default 65536); a longer candidate is given up. */
  maxMatchBytes?: number
  /** The request's path and query, for rules' `paths` (default: `req`'s, else `/`). */
  url?: string
  /** What rule functions get as `req` (default `GET /` without headers). */
  req?: RequestLike
  /** What rule functions get as `res` (default 200 without headers). */
  res?: ResponseLike
}

/**
 * A stream that rewrites a body with `rules`: `response.body.pipeThrough(createRewriter(rules, options))`.
 * Never holds the body whole: a chunk comes out as soon as no match can still span it. Throws naming a
 * bad rule or option.
 */
export declare function createRewriter(
  rules: ReadonlyArray<RewriteRule>,
  options?: RewriterOptions,
): TransformStream<Uint8Array, Uint8Array>

/**
 * `input` rewritten with `rules`, with the native `rewrite()`'s results: a string whole (functions get
 * it as `string`), an array of chunks streamed (`string` is `undefined`).
 */
export declare function rewrite(
  input: string | ReadonlyArray<string | Uint8Array>,
  rules: ReadonlyArray<RewriteRule>,
  context?: { req?: RequestLike; res?: ResponseLike },
): string
