// Types of `require('devproxy-native/browser-sync')`: browser-sync's public API, with the site served
// by devproxy-native. The names are those of @types/browser-sync (code typed against it compiles after
// the one-line switch; modules.test.js checks it), with the options of devproxy-native's `start()`
// added, and types that say what the adapter does where @types/browser-sync is looser or wrong, as
// long as what compiles against @types/browser-sync still compiles (types.test.js checks it on
// TypeScript 5.9, 6 and 7): its callbacks written without parameter types get them from here, and
// values @types/browser-sync types as `any` (options read back) stay `any`.
/// <reference types="node" />

import type { EventEmitter } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type {
  Middleware,
  MiddlewareEntry,
  ProxyOptions as StartOptions,
  ProxyReqFn,
  ProxyResFn,
  ProxyServer,
  ProxyTargetOptions,
  RewriteRule,
  SnippetOptions as StartSnippetOptions,
} from './index'

/** Parameters compared both ways, as TypeScript compares methods: callbacks typed for @types/browser-sync fit. */
type Bivariant<F extends (...args: never[]) => unknown> = { bivarianceHack(...args: Parameters<F>): ReturnType<F> }['bivarianceHack']

declare namespace browserSync {
  type WatchEvents = 'add' | 'change' | 'unlink' | 'addDir' | 'unlinkDir'
  type LogLevel = 'info' | 'debug' | 'warn' | 'silent'
  type OpenOptions = 'local' | 'external' | 'ui' | 'ui-external' | 'tunnel'

  interface Hash<T> {
    [path: string]: T
  }

  interface UIOptions {
    port?: number
    /** Where the UI listens: 127.0.0.1 through the adapter unless set. */
    listen?: string
    weinre?: { port?: number }
  }

  interface FileCallback {
    match?: string | readonly string[]
    fn: (event: string, file: string) => unknown
    options?: object
  }

  /** `server` mode (without `proxy`: browser-sync runs as it would on its own). */
  interface ServerOptions {
    baseDir?: string | readonly string[]
    directory?: boolean
    index?: string
    routes?: Hash<string>
    middleware?: ReadonlyArray<MiddlewareHandler | PerRouteMiddleware>
    serveStaticOptions?: object
  }

  /** A connect middleware, run on Node's own `http` objects (by devproxy-native's middleware host). */
  type MiddlewareHandler = Middleware

  /** A middleware for one route; `id` names it for `bs.removeMiddleware(id)`. */
  interface PerRouteMiddleware extends MiddlewareEntry {
    id?: string
  }

  /**
   * A `proxyRes` function. The adapter calls each as Browsersync does, `(proxyRes, req)` (see
   * devproxy-native's `ProxyResFn`); @types/browser-sync's `(proxyRes, res, req)` has them in another
   * order. One signature, so that functions written without parameter types get these.
   */
  type ProxyResponseMiddleware = ProxyResFn

  /** `proxy` as an object: devproxy-native's settings of the target, in Browsersync's names. */
  interface ProxyOptions extends Omit<ProxyTargetOptions, 'target' | 'proxyRes' | 'proxyReq' | 'middleware'> {
    target?: string
    middleware?: MiddlewareHandler | PerRouteMiddleware | ReadonlyArray<MiddlewareHandler | PerRouteMiddleware>
    proxyReq?: ProxyReqFn | readonly ProxyReqFn[]
    proxyRes?: ProxyResponseMiddleware | readonly ProxyResponseMiddleware[]
    /** http-proxy's error handler in Browsersync; the proxy answers errors with its own 502 page. */
    error?: (err: NodeJS.ErrnoException, req: IncomingMessage, res: ServerResponse) => void
  }

  interface HttpsOptions {
    key?: string
    cert?: string
    ca?: string | readonly string[]
  }

  /** A `serveStatic` entry with a route. */
  interface StaticOptions {
    route?: string | readonly string[]
    dir: string | readonly string[]
  }

  interface CallbacksOptions {
    /** Called once browser-sync and the proxy run (`bs` is browser-sync's own instance). */
    ready?: Bivariant<(err: Error | null, bs: BrowserSyncInternal) => void>
  }

  interface FormsOptions {
    inputs: boolean
    submit: boolean
    toggles: boolean
  }

  interface GhostOptions {
    clicks?: boolean
    scroll?: boolean
    location?: boolean
    forms?: FormsOptions | boolean
  }

  /** Browsersync's `snippetOptions`: where the snippet goes and which URLs get it. */
  type SnippetOptions = StartSnippetOptions

  interface SocketOptions {
    path?: string
    clientPath?: string
    namespace?: string
    domain?: string
    port?: number
    clients?: { heartbeatTimeout?: number }
  }

  interface ScriptOptions {
    domain?: string
  }

  interface TagNamesOptions {
    less?: string
    scss?: string
    css?: string
    jpg?: string
    jpeg?: string
    png?: string
    svg?: string
    gif?: string
    js?: string
  }

  /** A rewrite rule: `match` and one of `replace`/`fn` (see devproxy-native's `RewriteRule`). */
  type RewriteRules = RewriteRule

  /** What `stream()` and `reload({ stream: true })` pass on: micromatch globs, RegExps or tests of the path. */
  type StreamMatch = string | RegExp | ((path: string) => boolean)

  interface StreamOptions {
    once?: boolean
    match?: StreamMatch | readonly StreamMatch[]
  }

  /** Browsersync's options, as browser-sync reads them. */
  interface BrowserSyncOptions {
    ui?: UIOptions | boolean
    files?: string | ReadonlyArray<string | FileCallback>
    watchEvents?: WatchEvents | readonly WatchEvents[]
    watch?: boolean
    ignore?: string | readonly string[]
    single?: boolean
    watchOptions?: object
    /** Without `proxy` only: browser-sync's static server (its `server` and `proxy` exclude each other). */
    server?: string | boolean | readonly string[] | ServerOptions
    /** The site: devproxy-native's proxy serves it (see `ProxyOptions`). */
    proxy?: string | ProxyOptions
    port?: number
    middleware?: MiddlewareHandler | PerRouteMiddleware | ReadonlyArray<MiddlewareHandler | PerRouteMiddleware>
    serveStatic?: ReadonlyArray<string | StaticOptions>
    https?: boolean | HttpsOptions
    httpModule?: string
    cwd?: string
    callbacks?: CallbacksOptions
    ghostMode?: GhostOptions | boolean
    logLevel?: LogLevel
    logPrefix?: string
    logConnections?: boolean
    logFileChanges?: boolean
    logSnippet?: boolean
    snippet?: boolean
    snippetOptions?: SnippetOptions
    rewriteRules?: readonly RewriteRules[]
    /** Not supported through the adapter with `proxy` (it would tunnel browser-sync's internal port). */
    tunnel?: string | boolean
    online?: boolean
    open?: OpenOptions | boolean
    browser?: string | readonly string[]
    cors?: boolean
    xip?: boolean
    hostnameSuffix?: boolean
    reloadOnRestart?: boolean
    notify?: boolean
    scrollProportionally?: boolean
    scrollThrottle?: number
    scrollRestoreTechnique?: string
    scrollElements?: readonly string[]
    scrollElementMapping?: readonly string[]
    reloadDelay?: number
    reloadDebounce?: number
    reloadThrottle?: number
    plugins?: readonly unknown[]
    injectChanges?: boolean
    startPath?: string | null
    minify?: boolean
    host?: string | null
    listen?: string
    localOnly?: boolean
    codeSync?: boolean
    timestamps?: boolean
    clientEvents?: readonly string[]
    scriptPath?: (path: string) => string
    socket?: SocketOptions
    script?: ScriptOptions
    tagNames?: TagNamesOptions
    injectFileTypes?: readonly string[]
    injectNotification?: boolean
    excludeFileTypes?: readonly string[]
  }

  /**
   * A Browsersync config. With `proxy`, the site's options (proxy, port, host, listen, https,
   * serveStatic, snippetOptions, rewriteRules, middleware...) and devproxy-native's own (record,
   * replay, inspector, onRequest...) go to `start()`, every other one to browser-sync (files,
   * watchOptions, ghostMode, ui, notify, reloadDelay, open...). Without `proxy`, the whole config goes
   * to browser-sync, which runs as it would on its own.
   */
  type Options = BrowserSyncOptions & Omit<Partial<StartOptions>, keyof BrowserSyncOptions>

  /** @deprecated the adapter's earlier name for `Options`. */
  type BrowserSyncConfig = Options

  /**
   * An Immutable.js map, as browser-sync keeps its options (`bs.options`). Its values are `any`, as
   * @types/browser-sync's `getOption` is: `bs.getOption('urls').get('local')` is used as a string.
   */
  interface ImmutableMap {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    get(key: string): any
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    getIn(path: readonly string[]): any
    set(key: string, value: unknown): ImmutableMap
    update(key: string, updater: (value: unknown) => unknown): ImmutableMap
    toJS(): Record<string, unknown>
  }

  /**
   * browser-sync's own instance (`bs` of `init`'s callback, `instance.instance`). Through the adapter,
   * its site methods act on the proxy: `server` is a view of it, and rules and middleware changed here
   * reach it (see the README's table).
   */
  interface BrowserSyncInternal {
    options: ImmutableMap
    events: EventEmitter
    /** The proxy, as far as a Node server can stand for it: `address()`, `listening`, `close(cb)`. */
    server: ProxyServerView
    /** An option's value as browser-sync holds it (objects and arrays as Immutable.js values); `any` as in @types/browser-sync. */
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    getOption(name: string): any
    getOptionIn(path: readonly string[]): unknown
    setOption(name: string, value: unknown, opts?: { silent?: boolean }): ImmutableMap
    addRewriteRule(rule: RewriteRule & { id?: string }): void
    removeRewriteRule(id: string): void
    setRewriteRules(rules: readonly RewriteRule[]): void
    addMiddleware(route: string, handle: Middleware, opts?: { id?: string; override?: boolean }): void
    removeMiddleware(id: string): void
    resetMiddlewareStack(): void
    serveFile(path: string, props: { type: string; content: string | Buffer }): void
    cleanup(cb?: Bivariant<(err: Error | null, bs: BrowserSyncInternal) => void>): void
    readonly active: boolean
    readonly paused: boolean
    publicInstance: BrowserSyncInstance
  }

  /** `bs.server` through the adapter: a view of devproxy-native's proxy (not an `http.Server`). */
  interface ProxyServerView extends EventEmitter {
    readonly listening: boolean
    /** The running `ProxyServer`; null once it stopped. */
    readonly proxy: ProxyServer | null
    address(): { address: string; family: 'IPv4' | 'IPv6'; port: number } | null
    /** Stops the proxy; `cb` and the `close` event follow once its port is free. */
    close(cb?: (err?: Error) => void): this
    /** Throws: the proxy is started by `init()` only. */
    listen(...args: unknown[]): never
  }

  type InitCallback = Bivariant<(err: Error | null, bs: BrowserSyncInternal) => void>

  /**
   * `init`'s callback as @types/browser-sync declares it, `bs` the public instance. It is browser-sync's
   * own instance (`BrowserSyncInternal`), with browser-sync as through the adapter; accepted so that
   * code typed against @types/browser-sync compiles.
   */
  type PublicInitCallback = (err: Error, bs: BrowserSyncInstance) => unknown

  interface BrowserSyncInstance {
    name: string | number
    /** browser-sync's own instance. */
    instance: BrowserSyncInternal
    /**
     * Starts browser-sync, then the proxy. The callback gets `(err, bs)` once both run; a port in use
     * or a bad option reaches it as an error (without a callback, the error is logged). Returns what
     * browser-sync's does: its instance (`bs`), undefined for a config refused at once.
     */
    init(config?: Options, cb?: InitCallback): BrowserSyncInternal | undefined
    init(config: Options | undefined, cb: PublicInitCallback): BrowserSyncInternal | undefined
    init(cb: InitCallback): BrowserSyncInternal | undefined
    /** Reloads the browsers. */
    reload(): void
    /** Injects the given files where it can (CSS, images), or reloads. */
    reload(files: string | readonly string[]): void
    /** A transform stream for gulp that reloads or injects what passes through. */
    reload(options: { stream: boolean; once?: boolean; match?: StreamMatch | readonly StreamMatch[] }): NodeJS.ReadWriteStream
    /** Shows `message` in every connected browser for `timeout` ms. */
    notify(message: string, timeout?: number): void
    /** Stops file watching, browser-sync's servers and the proxy; resolves when the proxy's port is free. */
    exit(): Promise<void>
    /** A chokidar watcher for `patterns`, as browser-sync's `watch`. */
    watch(
      patterns: string | readonly string[],
      opts?: object | ((event: string, file: string) => unknown),
      fn?: (event: string, file: string) => unknown,
    ): EventEmitter
    /** A transform stream for gulp: files that pass through are injected or reloaded. */
    stream(opts?: StreamOptions): NodeJS.ReadWriteStream
    pause(): void
    resume(): void
    /** Stops browser-sync and the proxy. */
    cleanup(cb?: Bivariant<(err: Error | null, bs: BrowserSyncInternal) => void>): void
    use(plugin: object, opts?: object, cb?: (err?: Error) => void): void
    /** An option's value as browser-sync holds it (objects and arrays as Immutable.js values). */
    getOption(name: 'port'): number
    getOption(name: 'mode'): 'proxy' | 'server' | 'snippet'
    getOption(name: 'scheme'): 'http' | 'https'
    getOption(name: 'startPath'): string | null
    getOption(name: 'snippet'): string
    getOption(name: 'logLevel'): LogLevel
    getOption(name: 'urls'): ImmutableMap
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    getOption(name: string): any
    emitter: EventEmitter
    readonly active: boolean
    readonly paused: boolean
    readonly sockets: { emit(event: string, data?: unknown): void; on(event: string, fn: (...args: unknown[]) => void): void }
    /** devproxy-native's server for the site: null before `init`'s callback and after `exit()`. */
    readonly proxy: ProxyServer | null
  }

  interface BrowserSyncStatic {
    /** The module-level instance: `require('devproxy-native/browser-sync')(config, cb)`. */
    (config?: Options, cb?: InitCallback): BrowserSyncInstance
    (config: Options | undefined, cb: PublicInitCallback): BrowserSyncInstance
    init(config?: Options, cb?: InitCallback): BrowserSyncInstance
    init(config: Options | undefined, cb: PublicInitCallback): BrowserSyncInstance
    create(name?: string, emitter?: EventEmitter): BrowserSyncInstance
    get(name: string): BrowserSyncInstance
    has(name: string): boolean
    use(plugin: object, opts?: object, cb?: (err?: Error) => void): void
    reload: BrowserSyncInstance['reload']
    stream: BrowserSyncInstance['stream']
    notify: BrowserSyncInstance['notify']
    /** Stops the module-level instance; undefined when there is none. */
    exit(): Promise<void> | undefined
    watch: BrowserSyncInstance['watch']
    pause(): void
    resume(): void
    readonly emitter: EventEmitter
    readonly active: boolean
    readonly paused: boolean
    readonly instances: BrowserSyncInstance[]
    /** Stops and forgets every instance (for tests). */
    reset(): void
    /**
     * The same API backed by another browser-sync module, resolved from the project as `require` would
     * (e.g. an npm alias `'browser-sync-2'`); the default is `'browser-sync'`.
     */
    withBrowserSync(moduleId: string): BrowserSyncStatic
  }

  /** @deprecated the adapter's earlier name for `BrowserSyncStatic`. */
  type BrowserSyncApi = BrowserSyncStatic
}

declare const browserSync: browserSync.BrowserSyncStatic
export = browserSync
