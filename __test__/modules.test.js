'use strict'
// The package as other code imports it: by name, from a project of its own, through package.json's
// `exports`: CommonJS, ES modules (default and named, both adapter specifiers, package.json), and
// TypeScript against the public types with nodenext, node16 and bundler resolution.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFile } = require('node:child_process')
const { ROOT } = require('./helpers')

let project
before(() => {
  // A project with the package installed as a link, as `npm link` or a workspace would have it.
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-modules-'))
  fs.mkdirSync(path.join(project, 'node_modules'))
  fs.symlinkSync(ROOT, path.join(project, 'node_modules', 'devproxy-native'), 'dir')
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'user-project', private: true }))
})
after(() => fs.rmSync(project, { recursive: true, force: true }))

function run(file, source) {
  fs.writeFileSync(path.join(project, file), source)
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [file], { cwd: project, timeout: 30000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${file}: ${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
    )
  })
}

test('CommonJS: require by name, the adapter and package.json', async () => {
  const got = await run(
    'use.cjs',
    `const devproxy = require('devproxy-native')
     const bs = require('devproxy-native/browser-sync')
     process.stdout.write(JSON.stringify({
       start: typeof devproxy.start, rewrite: devproxy.rewrite('ab', [{ match: /a/g, replace: 'x' }]),
       create: typeof bs.create, init: typeof bs.init, name: require('devproxy-native/package.json').name,
     }))`,
  )
  assert.deepEqual(got, { start: 'function', rewrite: 'xb', create: 'function', init: 'function', name: 'devproxy-native' })
})

test('ES modules: default and named imports of the package and the adapter, as real browser-sync offers them', async () => {
  const got = await run(
    'use.mjs',
    `import devproxy, { start, rewrite, ProxyServer, toHar } from 'devproxy-native'
     import browserSync, * as named from 'devproxy-native/browser-sync'
     import { create } from 'devproxy-native/browser-sync.js'
     import cjs from 'devproxy-native/browser-sync.js'
     import pkg from 'devproxy-native/package.json' with { type: 'json' }
     process.stdout.write(JSON.stringify({
       same: devproxy.start === start && named.create === create && browserSync === cjs,
       kinds: [typeof start, typeof ProxyServer, typeof toHar, rewrite('ab', [{ match: /a/g, replace: 'x' }])],
       names: Object.keys(named).sort(),
       pkg: pkg.name,
     }))`,
  )
  // browser-sync 3's own named exports under \`import\`, as Node gives them.
  const real = ['create', 'default', 'exit', 'get', 'has', 'init', 'instances', 'notify', 'pause', 'reload', 'reset', 'resume', 'stream', 'use', 'watch']
  assert.deepEqual(got, { same: true, kinds: ['function', 'function', 'function', 'xb'], names: real, pkg: 'devproxy-native' })
})

for (const [module, resolution, files] of [
  ['nodenext', 'nodenext', ['esm.mts', 'cjs.cts']],
  ['node16', 'node16', ['esm.mts', 'cjs.cts']],
  ['esnext', 'bundler', ['esm.mts']],
]) {
  test(`TypeScript, moduleResolution ${resolution}: the public types resolve and check (and what must not compile does not)`, async () => {
    for (const file of files) fs.copyFileSync(path.join(__dirname, 'fixtures/modules', file), path.join(project, file))
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
    const args = ['--noEmit', '--strict', '--target', 'es2022', '--module', module, '--moduleResolution', resolution]
    args.push('--typeRoots', path.join(ROOT, 'node_modules', '@types'), '--types', 'node', ...files)
    const result = await new Promise((resolve) => {
      execFile(process.execPath, [tsc, ...args], { cwd: project, timeout: 120000 }, (err, stdout) => resolve({ code: err ? err.code : 0, stdout }))
    })
    assert.equal(result.code, 0, result.stdout)
  })
}
