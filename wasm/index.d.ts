// devproxy-native/wasm: the proxy's rewrite engine as WebAssembly (no native code), for edge runtimes
// (Cloudflare Workers / workerd), Node, Deno and bundlers that import `.wasm` files as modules.

// The rule shapes are the proxy's own (`rewriteRules`): one declaration for both.
import type { ReplaceFunction, RewriteRule, RuleRequest, RuleResponse } from '../index.js'

export type { ReplaceFunction, RewriteRule, RuleRequest, RuleResponse }

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
 * Rules compiled once by `compileRules`, shared by any number of `createRewriter` streams and `rewrite`
 * calls (in a Worker: at module scope, once per isolate). Rule functions get each body's own `req` and
 * `res`. The memory is the WebAssembly module's: `free()` gives it back at once, and the garbage
 * collector does once the value is unreachable. Streams already made from it go on after `free()`;
 * passing a freed value to `createRewriter` or `rewrite` throws.
 */
export declare class CompiledRules {
  private constructor()
  /** Whether `free()` was called. */
  readonly freed: boolean
  /** Gives the compiled rules' memory back; using them afterwards throws. */
  free(): void
}

/** The rules, or `compileRules(rules)`'s value (compiled once instead of at each call). */
export type RulesLike = ReadonlyArray<RewriteRule> | CompiledRules

/** `rules` compiled once, for any number of rewriters. Throws naming a bad rule. */
export declare function compileRules(rules: ReadonlyArray<RewriteRule> | CompiledRules): CompiledRules

/**
 * A stream that rewrites a body with `rules`: `response.body.pipeThrough(createRewriter(rules, options))`.
 * Never holds the body whole: a chunk comes out as soon as no match can still span it. Throws naming a
 * bad rule or option. Its memory is given back when it ends, fails, or is cancelled or aborted.
 */
export declare function createRewriter(rules: RulesLike, options?: RewriterOptions): TransformStream<Uint8Array, Uint8Array>

/**
 * `body` (a byte stream: `response.body`) rewritten with `rules`, as a new stream: `createRewriter`'s work
 * without `pipeThrough`, reading `body` up to 64 KiB at a time where it is a byte stream (workerd's and
 * undici's bodies are; in workerd this costs a third of piping 4 KiB chunks through a `TransformStream`).
 * Reads as the result is read; cancelling the result cancels `body`. Throws naming a bad body, rule or
 * option; the stream fails with `body`'s error or a rule function's.
 */
export declare function rewriteBody(
  body: ReadableStream<Uint8Array | string>,
  rules: RulesLike,
  options?: RewriterOptions,
): ReadableStream<Uint8Array>

/**
 * `input` rewritten with `rules`, with the native `rewrite()`'s results: a string whole (functions get
 * it as `string`), an array of chunks streamed (`string` is `undefined`).
 */
export declare function rewrite(
  input: string | ReadonlyArray<string | Uint8Array>,
  rules: RulesLike,
  context?: { req?: RequestLike; res?: ResponseLike },
): string
