'use strict'
// Every fenced ```js block of README.md and docs/*.md runs as pasted: each is saved to a project of its
// own with the package installed (linked) and the `public/` and `static/` folders a site has (the docs'
// `serveStatic` examples name them), run with Node (as an ES module when it imports, else CommonJS), and
// must exit 0 with nothing on stderr. Where a line reads `console.log(...) // text`, the text must be
// printed.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFile } = require('node:child_process')
const { ROOT } = require('./helpers')

const jsBlocks = (file) => [...fs.readFileSync(path.join(ROOT, file), 'utf8').matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1])
const DOCS = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
const blocks = jsBlocks('README.md')
const docBlocks = DOCS.flatMap((file) => jsBlocks(file).map((block, i) => ({ file, i, block })))

test('README.md has runnable blocks: the adapter switch, start() in ES modules and CommonJS, rewrite()', () => {
  assert.ok(blocks.length >= 4, `found ${blocks.length} js blocks`)
  assert.ok(blocks.some((b) => b.includes("from 'devproxy-native/browser-sync'")))
  assert.ok(blocks.some((b) => b.includes("import { start } from 'devproxy-native'")))
  assert.ok(blocks.some((b) => b.includes("require('devproxy-native')")))
})

test('docs/ has runnable blocks too: the options reference (start(), the server, rewrite()) and the edge import', () => {
  const inDocs = docBlocks.filter(({ file }) => file.startsWith('docs/'))
  assert.ok(inDocs.some(({ file, block }) => file === 'docs/options.md' && block.includes('await start(') && block.includes('rewrite(')))
  assert.ok(inDocs.some(({ file, block }) => file === 'docs/edge.md' && block.includes("from 'devproxy-native/wasm'")))
})

for (const { file: doc, i, block } of docBlocks) {
  const firstLine = block.split('\n').find((line) => line.trim() && !line.startsWith('//')) || ''
  test(`${doc} block ${i + 1} runs as pasted: ${firstLine.trim()}`, { timeout: 90000 }, async () => {
    const project = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-readme-'))
    try {
      for (const dir of ['node_modules', 'public', 'static']) fs.mkdirSync(path.join(project, dir))
      fs.symlinkSync(ROOT, path.join(project, 'node_modules', 'devproxy-native'), 'dir')
      fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'readme-user', private: true }))
      const file = /^import /m.test(block) ? 'block.mjs' : 'block.cjs'
      fs.writeFileSync(path.join(project, file), block)
      const { code, stdout, stderr } = await new Promise((resolve) => {
        execFile(process.execPath, [file], { cwd: project, timeout: 60000 }, (err, stdout, stderr) =>
          resolve({ code: err ? (err.code ?? err.signal) : 0, stdout, stderr }),
        )
      })
      assert.equal(code, 0, `exit code; stderr: ${stderr}`)
      assert.equal(stderr, '', 'nothing on stderr')
      for (const [, expected] of block.matchAll(/console\.log\(.*\) \/\/ (.+)$/gm)) {
        assert.ok(stdout.includes(expected.trim()), `${JSON.stringify(expected.trim())} printed; stdout: ${stdout}`)
      }
    } finally {
      fs.rmSync(project, { recursive: true, force: true })
    }
  })
}
