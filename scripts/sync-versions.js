#!/usr/bin/env node
'use strict'
// Keeps every version in step with the root package.json's, as `napi version` + `napi pre-publish` do:
// the npm/<platform>/ packages (one per `napi.targets` entry), the root's `optionalDependencies` on
// them, Cargo.toml/Cargo.lock, and the version binding.js (napi's loader) checks platform packages against. Runs as npm's `version` script (`npm version 0.2.0` bumps the root,
// then this). `--check` changes nothing and exits 1 naming what is out of step (prepublishOnly and
// __test__/package.test.js run it).

const fs = require('node:fs')
const path = require('node:path')
const { parseTriple } = require('@napi-rs/cli')

const ROOT = path.resolve(__dirname, '..')
const check = process.argv.includes('--check')
const problems = []

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'))
}

function writeJson(file, value) {
  fs.writeFileSync(file, JSON.stringify(value, null, 2) + '\n')
}

const rootFile = path.join(ROOT, 'package.json')
const root = readJson(rootFile)
const { version } = root
const binaryName = root.napi.binaryName

// Every target's package, named and laid out as `napi create-npm-dirs` makes them.
const wanted = {}
for (const triple of root.napi.targets) {
  const { platformArchABI } = parseTriple(triple)
  const dir = path.join(ROOT, 'npm', platformArchABI)
  const file = path.join(dir, 'package.json')
  if (!fs.existsSync(file)) {
    problems.push(`npm/${platformArchABI}/package.json is missing (run npx napi create-npm-dirs)`)
    continue
  }
  const pkg = readJson(file)
  if (pkg.name !== `${root.name}-${platformArchABI}`) problems.push(`npm/${platformArchABI}: name ${pkg.name}`)
  if (pkg.main !== `${binaryName}.${platformArchABI}.node`) problems.push(`npm/${platformArchABI}: main ${pkg.main}`)
  wanted[pkg.name] = version
  if (pkg.version !== version) {
    problems.push(`npm/${platformArchABI}: version ${pkg.version}, root ${version}`)
    pkg.version = version
    if (!check) writeJson(file, pkg)
  }
}
for (const dir of fs.readdirSync(path.join(ROOT, 'npm'))) {
  const known = root.napi.targets.some((t) => parseTriple(t).platformArchABI === dir)
  if (!known) problems.push(`npm/${dir} is not in package.json's napi.targets`)
}

// Sorted by name, as npm writes them.
const sorted = (deps) => JSON.stringify(Object.fromEntries(Object.entries(deps || {}).sort(([a], [b]) => (a < b ? -1 : 1))))
if (sorted(root.optionalDependencies) !== sorted(wanted)) {
  problems.push(`optionalDependencies ${sorted(root.optionalDependencies)}, wanted ${sorted(wanted)}`)
  root.optionalDependencies = JSON.parse(sorted(wanted))
  if (!check) writeJson(rootFile, root)
}

// Cargo.toml's [package] version and its Cargo.lock entry.
const cargoFile = path.join(ROOT, 'Cargo.toml')
const cargo = fs.readFileSync(cargoFile, 'utf8')
const cargoVersion = /^\[package\][^[]*?^version = "([^"]+)"/m.exec(cargo)
if (!cargoVersion) problems.push('Cargo.toml: no [package] version')
else if (cargoVersion[1] !== version) {
  problems.push(`Cargo.toml: version ${cargoVersion[1]}, root ${version}`)
  if (!check) {
    fs.writeFileSync(cargoFile, cargo.replace(/^(\[package\][^[]*?^version = )"[^"]+"/m, `$1"${version}"`))
    const lockFile = path.join(ROOT, 'Cargo.lock')
    const lock = fs.readFileSync(lockFile, 'utf8')
    const entry = new RegExp(`(\\[\\[package\\]\\]\\nname = "${root.name}"\\nversion = )"[^"]+"`)
    fs.writeFileSync(lockFile, lock.replace(entry, `$1"${version}"`))
  }
}

// binding.js compares each platform package's version with the one it was generated for.
const bindingFile = path.join(ROOT, 'binding.js')
const binding = fs.readFileSync(bindingFile, 'utf8')
const stale = new Set([...binding.matchAll(/bindingPackageVersion !== '([^']+)'/g)].map((m) => m[1]).filter((v) => v !== version))
if (stale.size > 0) {
  problems.push(`binding.js: checks for version ${[...stale].join(', ')}, root ${version}`)
  if (!check) {
    let updated = binding
    for (const old of stale) {
      updated = updated.split(`bindingPackageVersion !== '${old}'`).join(`bindingPackageVersion !== '${version}'`)
      updated = updated.split(`expected ${old} but got`).join(`expected ${version} but got`)
    }
    fs.writeFileSync(bindingFile, updated)
  }
}

if (problems.length > 0) {
  for (const p of problems) console.error(`${check ? 'out of step' : 'updated'}: ${p}`)
  if (check || problems.some((p) => p.includes('missing') || p.includes('not in'))) process.exit(1)
} else if (!check) {
  console.log(`every package is at ${version}`)
}
