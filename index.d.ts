// Types of the package's entry point (index.js): the public API. The native binding's types are
// generated into binding.d.ts, which also declares what only lib/ calls; this file re-exports the public
// ones and declares what the JS side (lib/) adds. Option types accept readonly (`as const`) arrays.
// Node's types (Buffer, http's objects) come from @types/node, referenced here as @types/* packages do,
// so a project compiles without listing "node" in its `types` (TypeScript 6's default is none).
/// <reference types="node" />
import type {
  ProxyOptions as NativeProxyOptions,
  ProxyTargetOptions as NativeProxyTargetOptions,
  ProxyStats,
  RecordingStatus,
  RecordOptions,
  ReplayOptions,
  RuleRequest,
  RuleResponse,
} from './binding'

export type {
  CookieOptions,
  HttpProxyOptions,
  HttpsOptions,
  InspectorOptions,
  LatencyStats,
  ProxyStats,
  RecordingStatus,
  RecordOptions,
  RedactOptions,
  ReplayFault,
  ReplayMatch,
  ReplayOptions,
  RouteOptions,
  RuleRequest,
  RuleResponse,
  RuleStats,
  SnippetOptions,
  SnippetRule,
  StaticDir,
  StaticOptions,
} from './binding'

/**
 * A replacement function, called for each match as Browsersync calls it:
 * `(req, res, match, p1, ..., pn, offset, string, groups)`. `req` and `res` are the request and
 * response of the body; then `String.prototype.replace`'s arguments: the captures (a string, or
 * `undefined` when a group did not take part), `offset` (the match's UTF-16 index in the rule's input),
 * `string` (that input for `rewrite()` of a string; `undefined` on streamed bodies, which are never
 * held whole) and `groups` (only when the pattern has named groups). The arguments after `match` are
 * typed as TypeScript types `String.prototype.replace`'s, since their number and kinds depend on the
 * pattern. Function rules run in JS and are slower than string replacements.
 */
export type ReplaceFunction = (req: RuleRequest, res: RuleResponse, match: string, ...args: any[]) => string

interface RuleCommon {
  /**
   * A RegExp (JS syntax and flags; no lookaround, backreferences or `y`) or a literal string
   * (replaces its first occurrence, like `String.prototype.replace`).
   */
  match: RegExp | string
  /**
   * Globs (minimatch syntax, matched against the request URL: path and query) limiting the rule to
   * those URLs; there it runs on any response type, and the rules without `paths`, the snippet and
   * the link rewrite do not (Browsersync's behaviour).
   */
  paths?: string | readonly string[]
  /** Browsersync's rule id (its `removeRewriteRule(id)` through the adapter); the proxy ignores it. */
  id?: string | number
}

/**
 * A rewrite rule, as in Browsersync's `rewriteRules`: `match`, and the replacement as `replace` or
 * (Browsersync's other name for it) `fn`, never both: a string (`$&`, `$1`..`$99`, `$<name>`, `$$`)
 * or a function (see `ReplaceFunction`).
 */
export type RewriteRule =
  | (RuleCommon & { replace: string | ReplaceFunction; fn?: never })
  | (RuleCommon & { fn: string | ReplaceFunction; replace?: never })

/** `T` as an input: readonly arrays (and `as const` literals) accepted wherever arrays are. */
export type Input<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends RegExp
    ? T
    : T extends ReadonlyArray<infer U>
      ? ReadonlyArray<Input<U>>
      : T extends object
        ? { [K in keyof T]: Input<T[K]> }
        : T

/**
 * Applies `rules` to a string (or streams an array of chunks) with the proxy's engine, for trying
 * rules. Rule functions are called as in the proxy, `(req, res, match, ...groups, offset, string,
 * groups)`, with `context.req`/`context.res` as given, or by default a `GET /` request without
 * headers and a 200 response without headers. Bytes that are not UTF-8 come out as U+FFFD.
 */
export declare function rewrite(
  input: string | ReadonlyArray<string | Buffer | Uint8Array>,
  rules: ReadonlyArray<RewriteRule>,
  context?: { req?: Partial<RuleRequest>; res?: Partial<RuleResponse> },
): string

/** Converts a cassette to HAR 1.2 (a JSON string); rejects naming the line of a bad cassette. */
export declare function toHar(path: string): Promise<string>

/** A running proxy server (what `start()` resolves to). It serves until `stop()`, whether or not it is referenced. */
export declare class ProxyServer {
  private constructor()
  /** `http://host:port` of the proxy (`https://` when it serves HTTPS). */
  get url(): string
  /** The port the proxy listens on. */
  get port(): number
  /** The path to open first: `startPath`, or the path of the `proxy` URL; `null` when neither. */
  get startPath(): string | null
  /** The certificate the proxy serves, as PEM, over HTTPS (`null` over HTTP): a client's `ca` to trust the proxy. */
  get certificate(): string | null
  /**
   * Adds a rule after the others, for requests that start from now on; returns its id. Throws on a
   * bad rule (the running rules stay as they were) and after `stop()`. Compiles on the JS thread.
   */
  addRule(rule: RewriteRule): number
  /** Like `addRule`, compiled off the JS thread; resolves to the id, rejects on a bad rule and after `stop()`. */
  addRuleAsync(rule: RewriteRule): Promise<number>
  /** Removes a rule by its id (the rules of `rewriteRules` have ids 0, 1, 2...); false if there is none. */
  removeRule(id: number): boolean
  /**
   * Replaces every rule at once, for requests that start from now on (a request sees the old rules or
   * the new ones, never a mix); returns the new ids. Throws naming the bad rule, changing nothing.
   */
  setRules(rules: ReadonlyArray<RewriteRule>): number[]
  /**
   * Replaces the middleware (the `middleware` option's forms) for requests that start from now on;
   * throws naming a bad entry, changing nothing.
   */
  setMiddleware(middleware: Middleware | MiddlewareEntry | ReadonlyArray<Middleware | MiddlewareEntry>): void
  /** The counters so far (requests, rewritten bodies, upstream errors, matches per rule, latencies). */
  stats(): ProxyStats
  /** Where the `record` option's recording stands; `null` when not recording. */
  recording(): RecordingStatus | null
  /** Every recording running: the server's, then each route's (with `route`). */
  recordings(): RecordingStatus[]
  /** Answers requests from a cassette from now on; resolves once it is read, rejects naming a bad line. */
  replay(options: Input<ReplayOptions>): Promise<void>
  /** Proxies requests to the target again (after `replay()`). */
  passthrough(): void
  /** Records exchanges to a new cassette from now on; rejects naming `record.path` when it cannot be written. */
  record(options: Input<RecordOptions>): Promise<void>
  /** Lets the Node process exit while the server still serves (like `net.Server#unref`). */
  unref(): void
  /** Stops accepting (the port is free when it resolves), lets in-flight responses finish, then closes the rest. */
  stop(): Promise<void>
}

import type { IncomingMessage, ServerResponse } from 'node:http'

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
export interface ProxyTargetOptions extends Omit<NativeProxyTargetOptions, 'reqHeaders'> {
  /**
   * Headers set on every upstream request; or (Browsersync's older form) a function, called once at
   * start with the proxy options, that returns them.
   */
  reqHeaders?: Record<string, string> | ((proxy: ProxyTargetOptions) => Record<string, string>)
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

interface StartOptions extends Omit<NativeProxyOptions, 'proxy' | 'rewriteRules'> {
  /**
   * The site to proxy: its URL (`http`/`https`; no scheme means `http://`; only scheme, host and port
   * are used, a path is the start path), or `{ target, ... }` with the target's settings.
   */
  proxy: string | ProxyTargetOptions
  /** Rules applied to each rewritten body, in order, after the snippet and before the link rewrite. */
  rewriteRules?: RewriteRule[]
  /** Middleware run before the proxy, on Node's own `http` objects (Browsersync's `middleware`). */
  middleware?: Middleware | MiddlewareEntry | Array<Middleware | MiddlewareEntry>
  /**
   * Called with each request's record once its answer has ended. Records are batched off the proxy's
   * threads; when the callback falls more than 4096 records behind, newer ones are dropped and counted
   * in `stats().droppedRecords` (the proxy never waits for JS). A throw is logged and costs that record only.
   */
  onRequest?: (entry: RequestEntry) => void
}

/** Options of `start()` (names and meanings follow Browsersync's where it has them). */
export type ProxyOptions = Input<StartOptions>

/** Starts a proxy. Resolves to a running `ProxyServer`; rejects with an error naming the bad option, rule or port. */
export declare function start(options: ProxyOptions): Promise<ProxyServer>
