// Issue 48: the snippet and server-rendered pages that hydrate. Browsersync puts its snippet right after
// the first `<body ...>` tag; on a page whose whole document React hydrates (Next.js's App Router:
// `hydrateRoot(document, <App/>)`), hydration fails there (`+ <div hidden> - <script id="__bs_script__">`).
// React 19 skips an extra element at the start of <body>, but not a text node: Browsersync's own snippet
// ends in a newline, and that text node is what breaks it. Real pages, in headless Chromium through
// start(): React 19 (`renderToPipeableStream` of a whole document, once complete and once streaming a
// Suspense boundary), Vue 3 (`createSSRApp(...).mount('#app')`) and Svelte 5 (`hydrate`, SvelteKit's
// `<div style="display: contents">` target), each with a counter that must work after hydration, bundled
// here with esbuild. Their packages are this test's own, pinned in fixtures/hydration/package.json
// (installed there with `npm ci` when missing), never the addon's.
//
// Held: with the default placement, every page hydrates without a console error or warning, with a plain
// snippet and with Browsersync 3's own; the snippet runs and the counter counts. An explicit
// `snippetOptions.rule` keeps Browsersync's meaning (after `<body>`, byte for byte).
// `HYDRATION_MATRIX=1 node --test __test__/hydration.test.js` also prints what each placement does to
// each page (console problems, when the snippet ran against when the page hydrated).

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const Module = require('node:module')
const { execFileSync } = require('node:child_process')
const { ACCEPT_HTML, insertSnippet, launchChromium, request, startUpstream, withProxy } = require('./helpers')

const FIXTURE = path.join(__dirname, 'fixtures', 'hydration')
const DEPS = ['esbuild', 'react', 'react-dom', 'vue', 'svelte']
const fixtureRequire = Module.createRequire(path.join(FIXTURE, 'package.json'))
const WAIT = 30000
/** How long the streaming React page holds its Suspense boundary open. */
const SLOW_MS = 1500

const SNIPPET = '<script id="__bs_script__">window.__snippetRan = true</script>'
// What browser-sync 3.0.4 injects (templates/script-tags.html, as `bs.getOption('snippet')` gives it).
const BS_CLIENT = '/browser-sync/browser-sync-client.js?v=3.0.4'
const BS_SNIPPET =
  '<script id="__bs_script__">//<![CDATA[\n  (function() {\n    try {\n      var script = document.createElement(\'script\');\n' +
  "      if ('async') {\n        script.async = true;\n      }\n" +
  `      script.src = '${BS_CLIENT}'.replace("HOST", location.hostname);\n` +
  '      if (document.body) {\n        document.body.appendChild(script);\n      } else if (document.head) {\n' +
  '        document.head.appendChild(script);\n      }\n    } catch (e) {\n' +
  '      console.error("Browsersync: could not append script tag", e);\n    }\n  })()\n//]]></script>\n'

// ---- the apps: one source each for the server render and the client bundle ----

const SOURCES = {
  'react-app.jsx': `
    import { Suspense, use, useEffect, useState } from 'react'
    function Counter() {
      const [n, setN] = useState(0)
      useEffect(() => {
        window.__hydrated = true
        window.__hydratedAt = performance.now()
      }, [])
      return <button id="count" onClick={() => setN((c) => c + 1)}>clicked {n}</button>
    }
    function Slow({ data }) {
      return <p id="slow">{use(data)}</p>
    }
    // The shape Next.js 16 renders: the whole document, a hidden div first in the body.
    export function App({ data }) {
      return (
        <html lang="en">
          <head>
            <meta charSet="utf-8" />
            <title>React hydration</title>
          </head>
          <body>
            <div hidden><Suspense fallback={null}>{null}</Suspense></div>
            <main>
              <h1>React</h1>
              <Counter />
              {data ? <Suspense fallback={<p id="slow">loading</p>}><Slow data={data} /></Suspense> : null}
            </main>
          </body>
        </html>
      )
    }`,
  'react-client.jsx': `
    import { hydrateRoot } from 'react-dom/client'
    import { App } from 'virtual:react-app.jsx'
    const data = location.pathname === '/react-stream' ? Promise.resolve('slow data') : null
    hydrateRoot(document, <App data={data} />)`,
  'vue-app.js': `
    import { createSSRApp, h, onMounted, ref } from 'vue'
    export function createApp() {
      return createSSRApp({
        setup() {
          const n = ref(0)
          onMounted(() => {
            window.__hydrated = true
            window.__hydratedAt = performance.now()
          })
          return () => h('main', [h('h1', 'Vue'), h('button', { id: 'count', onClick: () => n.value++ }, 'clicked ' + n.value)])
        },
      })
    }`,
  'vue-client.js': `
    import { createApp } from 'virtual:vue-app.js'
    createApp().mount('#app')`,
  'Counter.svelte': `
    <script>
      import { onMount } from 'svelte'
      let count = $state(0)
      onMount(() => {
        window.__hydrated = true
        window.__hydratedAt = performance.now()
      })
    </script>
    <main><h1>Svelte</h1><button id="count" onclick={() => count++}>clicked {count}</button></main>`,
  'svelte-client.js': `
    import { hydrate } from 'svelte'
    import Counter from 'virtual:Counter.svelte'
    hydrate(Counter, { target: document.getElementById('svelte') })`,
  'server.jsx': `
    import { renderToPipeableStream } from 'react-dom/server'
    import { renderToString } from 'vue/server-renderer'
    import { render } from 'svelte/server'
    import { App } from 'virtual:react-app.jsx'
    import { createApp } from 'virtual:vue-app.js'
    import Counter from 'virtual:Counter.svelte'
    export const renderReact = (data, options) => renderToPipeableStream(<App data={data} />, options)
    export const renderVue = () => renderToString(createApp())
    export const renderSvelte = () => render(Counter)`,
}

/** Installs the fixture's packages (`npm ci`, from its lock file) unless they are there. */
function installFixture() {
  const missing = DEPS.filter((name) => !fs.existsSync(path.join(FIXTURE, 'node_modules', name, 'package.json')))
  if (missing.length === 0) return
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], {
    cwd: FIXTURE,
    stdio: ['ignore', 'inherit', 'inherit'],
    timeout: 300000,
    shell: process.platform === 'win32',
  })
}

/** esbuild resolves `virtual:<name>` to SOURCES[name]; `.svelte` goes through Svelte's compiler first. */
function virtualModules(generate) {
  const { compile } = fixtureRequire('svelte/compiler')
  return {
    name: 'virtual',
    setup(build) {
      build.onResolve({ filter: /^virtual:/ }, (args) => ({ path: args.path.slice('virtual:'.length), namespace: 'virtual' }))
      build.onLoad({ filter: /.*/, namespace: 'virtual' }, (args) => {
        const source = SOURCES[args.path]
        if (args.path.endsWith('.svelte')) {
          const { js } = compile(source, { generate, dev: true, filename: args.path })
          return { contents: js.code, loader: 'js', resolveDir: FIXTURE }
        }
        return { contents: source, loader: path.extname(args.path).slice(1), resolveDir: FIXTURE }
      })
    },
  }
}

/** Development builds, as `next dev`, `vite` and `nuxi dev` serve them: their hydration messages in full. */
async function bundle(entry, platform) {
  const esbuild = fixtureRequire('esbuild')
  const result = await esbuild.build({
    entryPoints: [`virtual:${entry}`],
    bundle: true,
    write: false,
    platform,
    format: platform === 'node' ? 'cjs' : 'iife',
    conditions: ['development'],
    jsx: 'automatic',
    jsxDev: true,
    logLevel: 'silent',
    define: {
      'process.env.NODE_ENV': '"development"',
      __VUE_OPTIONS_API__: 'true',
      __VUE_PROD_DEVTOOLS__: 'false',
      __VUE_PROD_HYDRATION_MISMATCH_DETAILS__: 'true',
    },
    plugins: [virtualModules(platform === 'node' ? 'server' : 'client')],
  })
  return result.outputFiles[0].text
}

/** The server bundle, loaded as a module of the fixture directory. */
function loadServer(code) {
  const filename = path.join(FIXTURE, 'server.bundle.js')
  const m = new Module(filename)
  m.filename = filename
  m.paths = Module._nodeModulePaths(FIXTURE)
  m._compile(code, filename)
  return m.exports
}

const sendHtml = (res, html) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
  res.end(html)
}

/** The upstream: /react (sent once complete), /react-stream (shell first), /vue, /svelte and their scripts. */
async function startSite() {
  const [server, reactClient, vueClient, svelteClient] = await Promise.all([
    bundle('server.jsx', 'node').then(loadServer),
    bundle('react-client.jsx', 'browser'),
    bundle('vue-client.js', 'browser'),
    bundle('svelte-client.js', 'browser'),
  ])
  const script = (code) => (req, res) => {
    res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' })
    res.end(code)
  }
  const react = (streaming) => (req, res) => {
    const data = streaming ? new Promise((resolve) => setTimeout(() => resolve('slow data'), SLOW_MS)) : null
    const stream = server.renderReact(data, {
      bootstrapScripts: ['/react-client.js'],
      [streaming ? 'onShellReady' : 'onAllReady']() {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        stream.pipe(res)
      },
      onShellError(err) {
        res.writeHead(500, { 'content-type': 'text/plain' })
        res.end(String(err))
      },
    })
  }
  return startUpstream({
    '/react': react(false),
    '/react-stream': react(true),
    // Vite's and Nuxt's shape: a module script in the head, the app in a div.
    '/vue': async (req, res) =>
      sendHtml(
        res,
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Vue hydration</title>' +
          `<script type="module" src="/vue-client.js"></script></head><body><div id="app">${await server.renderVue()}</div></body></html>`,
      ),
    // SvelteKit's app.html: the body in a `display: contents` div, hydrated in place.
    '/svelte': (req, res) => {
      const { head, body } = server.renderSvelte()
      sendHtml(
        res,
        `<!doctype html><html lang="en"><head><meta charset="utf-8">${head}<title>Svelte hydration</title></head>` +
          `<body data-sveltekit-preload-data="hover"><div id="svelte" style="display: contents">${body}` +
          '<script src="/svelte-client.js" defer></script></div></body></html>',
      )
    },
    '/react-client.js': script(reactClient),
    '/vue-client.js': script(vueClient),
    '/svelte-client.js': script(svelteClient),
    '/browser-sync/browser-sync-client.js': script('window.__bsClientRan = true; window.__snippetAt = performance.now()'),
    '/favicon.ico': (req, res) => {
      res.writeHead(204)
      res.end()
    },
  })
}

const PAGES = ['/react', '/react-stream', '/vue', '/svelte']

/**
 * Loads `url` in a fresh context, waits for hydration (the app's own mount effect), clicks the counter
 * and reads it back. `problems`: every console error and warning, and every uncaught error, in order.
 */
async function visit(url) {
  const context = await browser.newContext()
  const page = await context.newPage()
  const problems = []
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`console.${msg.type()}: ${msg.text()}`)
  })
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`))
  try {
    await page.goto(url, { waitUntil: 'load', timeout: WAIT })
    await page.waitForFunction(() => window.__hydrated === true, null, { timeout: WAIT })
    if (url.endsWith('/react-stream')) await page.waitForFunction(() => document.getElementById('slow')?.textContent === 'slow data', null, { timeout: WAIT })
    await page.click('#count')
    let counted = true
    await page.waitForFunction(() => document.getElementById('count').textContent === 'clicked 1', null, { timeout: 5000 }).catch(() => {
      counted = false
    })
    const state = await page.evaluate(() => ({
      snippetRan: window.__snippetRan === true,
      snippetAt: window.__snippetAt,
      hydratedAt: window.__hydratedAt,
      bsClientRan: window.__bsClientRan === true,
      snippetInDom: document.getElementById('__bs_script__') !== null,
      bsClientParent: document.querySelector('script[src*="browser-sync-client"]')?.parentNode.nodeName.toLowerCase() ?? null,
    }))
    return { ...state, counted, problems }
  } finally {
    await context.close()
  }
}

let browser
let site
before(async () => {
  installFixture()
  ;[browser, site] = await Promise.all([launchChromium(), startSite()])
})
after(async () => {
  if (browser) await browser.close()
  if (site) await site.close()
})

test('the default placement: React (whole document, complete and streamed), Vue and Svelte hydrate without a console error; the snippet runs; the counter counts', { timeout: 180000 }, async (t) => {
  // Browsersync's own snippet too, as the adapter passes it: it ends in a newline, a text node wherever
  // it lands, which React 19 does not skip in <body> as it skips an extra element.
  for (const [kind, snippet] of [['the plain snippet', SNIPPET], ["Browsersync's snippet", BS_SNIPPET]]) {
    await withProxy({ proxy: site.url, port: 0, snippet }, async (server) => {
      for (const page of PAGES) {
        await t.test(`${page} with ${kind}`, async () => {
          const seen = await visit(server.url + page)
          assert.deepEqual(seen.problems, [], 'hydration is clean')
          if (snippet === SNIPPET) assert.equal(seen.snippetRan, true, 'the snippet ran')
          else assert.equal(seen.bsClientRan, true, "the snippet loaded Browsersync's client")
          assert.equal(seen.counted, true, 'the counter counts after hydration')
        })
      }
    })
  }
})

test("an explicit snippetOptions.rule keeps Browsersync's meaning: right after <body>, byte for byte", { timeout: 60000 }, async () => {
  const rule = { match: /<body[^>]*>/i, fn: (s, m) => m + s }
  await withProxy({ proxy: site.url, port: 0, snippet: SNIPPET, snippetOptions: { rule } }, async (server) => {
    for (const page of ['/react', '/vue', '/svelte']) {
      const direct = (await request(site.url + page, { headers: { accept: ACCEPT_HTML } })).body.toString()
      const served = (await request(server.url + page, { headers: { accept: ACCEPT_HTML } })).body.toString()
      const body = /<body[^>]*>/i.exec(direct)
      assert.ok(body, `${page} has a <body> tag`)
      assert.equal(served.indexOf(SNIPPET), body.index + body[0].length, `${page}: the snippet is right after <body ...>`)
      assert.equal(served, insertSnippet(direct, SNIPPET), `${page}: Browsersync's placement, byte for byte`)
    }
    const seen = await visit(server.url + '/react')
    assert.equal(seen.snippetRan, true, 'the snippet ran')
  })
})

// ---- the evidence for the choice, on demand ----

const PLACEMENTS = {
  default: undefined,
  'after <body>': { match: /<body[^>]*>/i, fn: (s, m) => m + s },
  'before </body>': { match: /<\/body>/i, fn: (s, m) => s + m },
  'before </head>': { match: /<\/head>/i, fn: (s, m) => s + m },
  'after <head>': { match: /<head(?:\s[^>]*)?>/i, fn: (s, m) => m + s },
  // `<\/head>` where there is one (it comes first), else Browsersync's place: one rule, first match.
  'before </head>, else after <body>': { match: /<\/head>|<body[^>]*>/i, fn: (s, m) => (m[1] === '/' ? s + m : m + s) },
}

// Timed for the matrix: when the snippet ran, against when the page hydrated (the streamed page's
// boundary arrives SLOW_MS after its shell).
const TIMED = '<script id="__bs_script__">window.__snippetRan = true; window.__snippetAt = performance.now()</script>'
const SNIPPETS = {
  plain: TIMED,
  'plain + newline': TIMED + '\n',
  'browser-sync': BS_SNIPPET,
  'browser-sync trimmed': BS_SNIPPET.trimEnd(),
}

test('matrix: each placement, page and snippet (HYDRATION_MATRIX=1)', { skip: !process.env.HYDRATION_MATRIX, timeout: 600000 }, async (t) => {
  const lines = []
  for (const [name, rule] of Object.entries(PLACEMENTS)) {
    for (const [kind, snippet] of Object.entries(SNIPPETS)) {
      const options = { proxy: site.url, port: 0, snippet, ...(rule ? { snippetOptions: { rule } } : {}) }
      await withProxy(options, async (server) => {
        for (const page of PAGES) {
          const seen = await visit(server.url + page)
          const ran = kind.startsWith('plain') ? `${seen.snippetRan}` : `${seen.bsClientRan} (client script in ${seen.bsClientParent})`
          const at = (ms) => (ms === undefined ? '-' : `${Math.round(ms)} ms`)
          lines.push(
            `${name} | ${kind} | ${page} | problems: ${seen.problems.length} | ran: ${ran} at ${at(seen.snippetAt)} | ` +
              `hydrated at ${at(seen.hydratedAt)} | counter: ${seen.counted} | snippet in DOM after: ${seen.snippetInDom}` +
              (seen.problems.length ? ` | first: ${seen.problems[0].replace(/\n+/g, ' ').slice(0, 700)}` : ''),
          )
        }
      })
    }
  }
  for (const line of lines) t.diagnostic(line)
})
