// Types of the package's entry point (index.js). The native API's types are generated from the Rust
// binding into binding.d.ts; this file re-exports them and adds what the JS side (lib/) declares.
import type { RewriteRule, RuleRequest, RuleResponse } from './binding'

export * from './binding'

/**
 * Applies `rules` to a string (or streams an array of chunks) with the proxy's engine, for trying
 * rules; see binding.d.ts's `rewrite`. Rule functions are called as in the proxy,
 * `(req, res, match, ...groups, offset, string, groups)`, with `context.req`/`context.res` as given, or
 * by default a `GET /` request without headers and a 200 response without headers.
 */
export declare function rewrite(
  input: string | Array<string | Buffer | Uint8Array>,
  rules: RewriteRule[],
  context?: { req?: Partial<RuleRequest> | object; res?: Partial<RuleResponse> | object },
): string

import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ProxyOptions as NativeProxyOptions, ProxyTargetOptions as NativeProxyTargetOptions, ProxyServer } from './binding'

/**
 * Browsersync's `req` as hooks get it (an `IncomingMessage` there): the client's request as it
 * reached the proxy. `headers` has lower-case names; repeated headers are joined with `, ` (`cookie`
 * with `; `).
 */
export interface HookClientReq {
  url: string
  method: string
  headers: Record<string, string | string[]>
  rawHeaders: string[]
}

/**
 * The `proxyReq` object (Node's `ClientRequest` in Browsersync, before its headers are sent): the
 * request the target is about to get, after the proxy's own header rewrites (`Host` is the target's,
 * `X-Forwarded-*` with `proxyOptions.xfwd`). `path` may be assigned; `method` is read-only.
 */
export interface ProxyReq {
  readonly method: string
  path: string
  getHeader(name: string): string | string[] | undefined
  setHeader(name: string, value: string | number | string[]): this
  removeHeader(name: string): void
  hasHeader(name: string): boolean
  getHeaderNames(): string[]
  getHeaders(): Record<string, string | string[]>
}

/**
 * The `proxyRes` object (Node's `IncomingMessage` of the upstream response in Browsersync): the
 * target's status and headers before the proxy's own rewrites (cookie `Domain`, `Location`).
 * `statusCode` and `headers[name]` may be assigned; `setHeader`/`removeHeader`/`getHeader` are
 * conveniences Node's object does not have.
 */
export interface ProxyRes {
  statusCode: number
  headers: Record<string, string | string[]>
  readonly rawHeaders: string[]
  getHeader(name: string): string | string[] | undefined
  setHeader(name: string, value: string | number | string[]): this
  removeHeader(name: string): void
}

/** Called before the upstream request is sent; `res` and `options` are `undefined` here. */
export type ProxyReqFn = (proxyReq: ProxyReq, req: HookClientReq, res?: undefined, options?: undefined) => void
/** Called with the upstream response before it goes out; `res` is `undefined` here. */
export type ProxyResFn = (proxyRes: ProxyRes, req: HookClientReq, res?: undefined) => void

/** A connect middleware, run on Node's own `http` objects before the proxy. */
export type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void
/** Browsersync's object form: runs only for paths under `route` (connect's matching; stripped from `req.url`). */
export interface MiddlewareEntry {
  route?: string
  handle: Middleware
}

/** `proxy` as an object, with the options the JS side runs (lib/hooks.js, lib/middleware.js). */
export interface ProxyTargetOptions extends NativeProxyTargetOptions {
  /** Functions called before each upstream request (Browsersync's `proxy.proxyReq`). */
  proxyReq?: ProxyReqFn | ProxyReqFn[]
  /** Functions called before each WebSocket upgrade is sent (Browsersync's `proxy.proxyReqWs`). */
  proxyReqWs?: ProxyReqFn | ProxyReqFn[]
  /** Functions called on each upstream response (Browsersync's `proxy.proxyRes`). */
  proxyRes?: ProxyResFn | ProxyResFn[]
  /** Middleware run before the proxy; ignored (with a warning) when top-level `middleware` is given, as in Browsersync. */
  middleware?: Middleware | MiddlewareEntry | Array<Middleware | MiddlewareEntry>
}

/** How often one rule matched in one body. */
export interface RuleMatches {
  /** The rule's label: its pattern (`/x/g`, `"text"`), `snippet` or `link rewrite`. */
  rule: string
  matches: number
}

/** What the proxy did with one request: what `onRequest` gets and `logFormat: 'json'` writes. */
export interface RequestEntry {
  /** Increasing per server, from 1. */
  id: number
  /** Arrival, milliseconds since the Unix epoch. */
  startedAt: number
  method: string
  /** Path and query as the client asked. */
  url: string
  /** Status sent to the client. */
  status: number
  /** Who answered. */
  source: 'proxy' | 'local' | 'middleware' | 'replay' | 'error'
  /** `Content-Encoding` from the upstream and to the client (`identity` when none). */
  codingIn: string
  codingOut: string
  /** Body bytes from the upstream (as they came) and to the client (as they went). */
  bytesIn: number
  bytesOut: number
  /** Milliseconds to the upstream's response headers; null without an upstream exchange. */
  upstreamMs: number | null
  /** Milliseconds from arrival to the body's end. */
  totalMs: number
  /** Milliseconds in the rules and in the encoder; null when the body was passed through. */
  rewriteMs: number | null
  encodeMs: number | null
  /** Whether the body went through the rewrite rules. */
  rewritten: boolean
  /** Whether the exchange was recorded to a cassette. */
  recorded: boolean
  /** Rules that matched this body, with how many times. */
  rules: RuleMatches[]
  /** Headers as received and as sent, `[name, value]` pairs. */
  requestHeaders: Array<[string, string]>
  responseHeaders: Array<[string, string]>
  /** Why the exchange failed (an error page, a body cut off, a client gone), else null. */
  error: string | null
  /** The first KiB of a rewritten body before and after the rules; only while the inspector asks for it. */
  preview?: { before: string; after: string }
}

/** Options of `start()`. */
export interface ProxyOptions extends Omit<NativeProxyOptions, 'proxy'> {
  proxy: string | ProxyTargetOptions
  /** Middleware run before the proxy, on Node's own `http` objects (Browsersync's `middleware`). */
  middleware?: Middleware | MiddlewareEntry | Array<Middleware | MiddlewareEntry>
  /**
   * Called with each request's record once its answer has ended. Records are batched off the proxy's
   * threads; when the callback falls more than 4096 records behind, newer ones are dropped and counted
   * in `stats().droppedRecords` (the proxy never waits for JS). A throw is logged and costs that record only.
   */
  onRequest?: (entry: RequestEntry) => void
}

/** Starts a proxy. Resolves to a running `ProxyServer`; rejects with an error naming the bad option, rule or port. */
export declare function start(options: ProxyOptions): Promise<ProxyServer>
