'use strict'
// Which options of a Browsersync config go to devproxy-native's `start()` and which to browser-sync:
// the one place that decides it. Anything not listed here goes to browser-sync (which ignores what it
// does not know), so file watching, ghost mode, UI, notify and reload options keep working unchanged.

/** Options of the site, its rewriting and its listening socket: `start()` gets them as they are. */
const PROXY_OPTIONS = [
  'proxy',
  'port',
  'host',
  'listen',
  'strictPort',
  'https',
  'httpModule',
  'serveStatic',
  'serveStaticOptions',
  'rewriteRules',
  'middleware',
  'routes',
  'ws',
  'allowedHosts',
  'allowedOrigins',
  'rewriteTextTypes',
  'rewriteJson',
  'rewriteRequestBodies',
  'maxMatchBytes',
  'upstreamTimeoutMs',
  'gracePeriodMs',
  'maxConnections',
  'upstreamCompression',
  'quiet',
  'inspector',
  'serverTiming',
  'logRequests',
  'logFormat',
  'replay',
  'record',
  'onRequest',
]

/**
 * Options both read: browser-sync for its logger and script tag, `start()` for its own logging,
 * snippet placement and start URL.
 */
const SHARED_OPTIONS = ['logLevel', 'logPrefix', 'startPath', 'snippetOptions']

const PROXY_SET = new Set(PROXY_OPTIONS)
const SHARED_SET = new Set(SHARED_OPTIONS)

/**
 * Options browser-sync reads that its default config (`dist/default-config.js`, read from the
 * installed version) does not list, less those in PROXY_OPTIONS (`https`, `httpModule`, `listen`,
 * `serveStaticOptions`).
 */
const BROWSERSYNC_UNLISTED = ['snippet', 'cwd', 'callbacks', 'online', 'tunnel', 'scriptPath', 'script', 'uiPort', 'ports']

/**
 * Warnings for the top-level keys of `config` that neither browser-sync nor `start()` reads (both
 * would drop them in silence), each with the closest known name when one is close. `defaults` is
 * browser-sync's default config; `closest(name, candidates)` picks a suggestion.
 */
function unknownOptions(config, defaults, closest) {
  const known = new Set([...Object.keys(defaults), ...BROWSERSYNC_UNLISTED, ...PROXY_OPTIONS, ...SHARED_OPTIONS])
  return Object.keys(config)
    .filter((key) => !known.has(key))
    .map((key) => {
      const near = closest(key, [...known])
      return near ? `unknown option \`${key}\`; did you mean \`${near}\`?` : `unknown option \`${key}\`; it is ignored`
    })
}

/**
 * Splits a Browsersync config into `{ proxyOptions, bsOptions }` (shallow: values are not copied).
 * `snippet` stays with browser-sync: it decides whether there is a snippet at all.
 */
function splitOptions(config) {
  const proxyOptions = {}
  const bsOptions = {}
  for (const [key, value] of Object.entries(config)) {
    if (PROXY_SET.has(key)) {
      proxyOptions[key] = value
    } else if (SHARED_SET.has(key)) {
      proxyOptions[key] = value
      bsOptions[key] = value
    } else {
      bsOptions[key] = value
    }
  }
  return { proxyOptions, bsOptions }
}

/**
 * Browsersync's `httpModule` is the Node module its server is made with; the proxy's server is
 * native. `'http2'`, what the option is for, makes Browsersync serve HTTPS: here that is `https`
 * (whose server offers HTTP/2 by ALPN). `'http'` is the default; any other module is not used, and
 * a warning says so.
 */
function applyHttpModule(proxyOptions) {
  const { httpModule, ...options } = proxyOptions
  if (httpModule === undefined || httpModule === null || httpModule === 'http') return { options, warnings: [] }
  if (httpModule === 'http2') return { options: { ...options, https: options.https || true }, warnings: [] }
  const given = typeof httpModule === 'string' ? `'${httpModule}'` : typeof httpModule
  return {
    options,
    warnings: [
      `option \`httpModule\` (${given}) is not used: the proxy's server is native (HTTP/1.1, and HTTP/2 over ` +
        "https); 'http2' means https: true",
    ],
  }
}

module.exports = { PROXY_OPTIONS, SHARED_OPTIONS, splitOptions, unknownOptions, applyHttpModule }
