// Types of `require('devproxy-native/browser-sync')`: browser-sync's public API, with the site served
// by devproxy-native. The browser-sync package itself (a peer dependency) has no bundled types; these
// cover what the adapter exposes and leave browser-sync's own objects loosely typed.

import type { EventEmitter } from 'node:events'
import type { ProxyOptions, ProxyServer } from './index'

declare namespace browserSync {
  /**
   * A Browsersync config. With `proxy`, the options of devproxy-native's `start()` (proxy, port, host,
   * listen, https, serveStatic, snippetOptions, rewriteRules, middleware, routes...) go to `start()`,
   * every other one to browser-sync (files, watchOptions, ghostMode, ui, notify, reloadDelay, open...).
   * Without `proxy`, the whole config goes to browser-sync, which runs as it would on its own.
   */
  export type BrowserSyncConfig = Partial<ProxyOptions> & {
    proxy?: ProxyOptions['proxy']
    files?: string | Array<string | { match: string | string[]; fn?: (event: string, file: string) => void; options?: object }>
    open?: boolean | 'local' | 'external' | 'ui' | 'ui-external' | 'tunnel'
    startPath?: string
    logLevel?: 'silent' | 'info' | 'debug'
    logPrefix?: string
    callbacks?: { ready?: (err: Error | null, bs: BrowserSyncInternal) => void; [name: string]: unknown }
    [option: string]: unknown
  }

  /** browser-sync's own instance (the `bs` of `init`'s callback): options are an Immutable Map. */
  export interface BrowserSyncInternal {
    options: { get(name: string): any; getIn(path: string[]): any; toJS(): Record<string, any> }
    getOption(name: string): any
    events: EventEmitter
    [key: string]: any
  }

  export type InitCallback = (err: Error | null, bs: BrowserSyncInternal) => void

  export interface BrowserSyncInstance {
    name: string | number
    /** browser-sync's own instance. */
    instance: BrowserSyncInternal
    /**
     * Starts browser-sync, then the proxy. The callback gets `(err, bs)` once both run; a port in use
     * or a bad option reaches it as an error (without a callback, the error is logged).
     */
    init(config?: BrowserSyncConfig, cb?: InitCallback): BrowserSyncInstance
    init(cb: InitCallback): BrowserSyncInstance
    /** Reloads the browsers, or injects the given files (CSS, images) where it can. */
    reload(arg?: string | string[] | { stream?: boolean; [key: string]: unknown }): any
    /** Shows `message` in every connected browser for `timeout` ms. */
    notify(message: string, timeout?: number): void
    /** Stops file watching, browser-sync's servers and the proxy; resolves when the proxy's port is free. */
    exit(): Promise<void>
    /** chokidar watcher for `patterns`, as browser-sync's `watch`. */
    watch(patterns: string | string[], opts?: object | ((event: string, file: string) => void), fn?: (event: string, file: string) => void): any
    /** A transform stream for gulp: files that pass through are injected or reloaded. */
    stream(opts?: { match?: string | string[]; once?: boolean }): NodeJS.ReadWriteStream
    pause(): void
    resume(): void
    cleanup(cb?: () => void): void
    use(plugin: object, opts?: object, cb?: (err?: Error) => void): void
    getOption(name: string): any
    emitter: EventEmitter
    readonly active: boolean
    readonly paused: boolean
    readonly sockets: { emit(event: string, data?: unknown): void; on(event: string, fn: (...args: any[]) => void): void }
    /** devproxy-native's server for the site: null before `init`'s callback and after `exit()`. */
    readonly proxy: ProxyServer | null
  }

  export interface BrowserSyncApi {
    /** The module-level instance: `require('devproxy-native/browser-sync')(config, cb)`. */
    (config?: BrowserSyncConfig, cb?: InitCallback): BrowserSyncInstance
    init(config?: BrowserSyncConfig, cb?: InitCallback): BrowserSyncInstance
    create(name?: string): BrowserSyncInstance
    get(name: string): BrowserSyncInstance
    has(name: string): boolean
    use(plugin: object, opts?: object, cb?: (err?: Error) => void): void
    reload: BrowserSyncInstance['reload']
    stream: BrowserSyncInstance['stream']
    notify: BrowserSyncInstance['notify']
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
    withBrowserSync(moduleId: string): BrowserSyncApi
  }
}

declare const browserSync: browserSync.BrowserSyncApi
export = browserSync
