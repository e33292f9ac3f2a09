#!/usr/bin/env node
// The crate's import graph, drawn from its own `crate::` and `super::` paths: which module uses which,
// the circles (modules that import each other, directly or round a loop) and the arrows that run back
// up the layers below. `node scripts/module-graph.js` prints a summary; `--json` the whole graph;
// `--arrows` every arrow. __test__/structure.test.js holds the limits.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

// Bottom to top: a module may import from its own layer and the ones below. A module belongs to the
// layer of the longest prefix listed (`observe::mask` is plain data though `observe` is a record).
const LAYERS = [
  ['plain data and the engine', ['error', 'globs', 'csp', 'warnings', 'rewrite', 'codec', 'skip', 'header_pairs', 'lifecycle', 'observe::mask', 'config::target', 'buffers']],
  ['counters and the log', ['stats']],
  ['body pipeline', ['body']],
  ['records: exchange records, inspector, cassettes', ['observe', 'cassette']],
  ['configuration', ['config']],
  ['request path', ['proxy']],
  ['listener', ['server']],
  ['faces: napi binding, WebAssembly', ['binding', 'wasm']],
];

function modulesOf(src) {
  const modules = new Map();
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.rs')) {
        const parts = path.relative(src, full).slice(0, -3).split(path.sep);
        if (['mod', 'lib'].includes(parts[parts.length - 1])) parts.pop();
        // Unit tests in a file of their own (`#[cfg(test)] mod tests;`) are not part of the code's shape.
        if (parts[parts.length - 1] !== 'tests') modules.set(parts.join('::'), full);
      }
    }
  };
  walk(src);
  return modules;
}

/// A file's text before its `#[cfg(test)] mod tests` (the whole file when it has none).
function beforeTests(file) {
  const text = fs.readFileSync(file, 'utf8');
  const tests = text.search(/^#\[cfg\(test\)\]\s*\nmod tests/m);
  return tests >= 0 ? text.slice(0, tests) : text;
}

/// The code before the file's unit tests, without comments.
function codeOf(file) {
  return beforeTests(file).replace(/\/\/[^\n]*/g, '');
}

function linesBeforeTests(file) {
  return beforeTests(file).split('\n').length - 1;
}

function graph(src) {
  const modules = modulesOf(src);
  const owner = (segments) => {
    for (let n = segments.length; n > 0; n--) {
      const name = segments.slice(0, n).join('::');
      if (modules.has(name)) return name;
    }
    return null;
  };
  const edges = new Map([...modules.keys()].map((m) => [m, new Set()]));
  for (const [module, file] of modules) {
    const code = codeOf(file);
    // `crate::a::b::{c, d::e}` and `super::x`: each name in a group is its own path.
    const re = /\b(crate|(?:super::)*super)::((?:\w+::)*)(\{[^;]*?\}|\w+)/g;
    for (const [, head, middle, tail] of code.matchAll(re)) {
      const names = tail.startsWith('{')
        ? tail.slice(1, -1).split(',').map((t) => t.trim().replace(/^\{/, '').split(/[\s{:]/)[0]).filter(Boolean)
        : [tail];
      for (const name of names) {
        const relative = `${middle}${name}`.split('::').filter(Boolean);
        let base = [];
        if (head !== 'crate') {
          base = module ? module.split('::') : [];
          if (!file.endsWith('mod.rs')) base = base.slice(0, -1); // a file module's `super` is its parent
          for (let ups = head.split('::').length - 1; ups > 0; ups--) base = base.slice(0, -1);
        }
        const target = owner([...base, ...relative]);
        if (!target || target === module || module.startsWith(`${target}::`)) continue;
        edges.get(module).add(target);
      }
    }
    // A parent reaches its own submodules by name (`security::request_filter`, `use exchange::Answered`).
    for (const [, child] of code.matchAll(/^\s*(?:pub(?:\([\w:]+\))? )?mod (\w+);/gm)) {
      const name = module ? `${module}::${child}` : child;
      const used = new RegExp(`(?<![\\w:])${child}::`).test(code.replace(/^.*\bmod \w+;.*$/gm, ''));
      if (modules.has(name) && used) edges.get(module).add(name);
    }
  }
  return { modules, edges };
}

function layerOf(module) {
  let best = null;
  LAYERS.forEach(([, prefixes], index) => {
    for (const prefix of prefixes) {
      if ((module === prefix || module.startsWith(`${prefix}::`)) && (!best || prefix.length > best.length)) {
        best = { index, length: prefix.length };
      }
    }
  });
  return best ? best.index : null;
}

/// Tarjan's strongly connected components with more than one module.
function circles(edges) {
  let counter = 0;
  const index = new Map(), low = new Map(), stack = [], onStack = new Set(), found = [];
  const visit = (v) => {
    index.set(v, counter); low.set(v, counter); counter++;
    stack.push(v); onStack.add(v);
    for (const w of edges.get(v)) {
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v), low.get(w))); }
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const component = [];
      let w;
      do { w = stack.pop(); onStack.delete(w); component.push(w); } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found;
}

function analyse(src = path.join(__dirname, '..', 'src')) {
  const { modules, edges } = graph(src);
  // lib.rs only declares the modules and re-exports the public face: its arrows are not the code's shape.
  const arrows = [...edges].filter(([from]) => from !== '').flatMap(([from, tos]) => [...tos].map((to) => [from, to]));
  const unplaced = [...modules.keys()].filter((m) => m !== '' && layerOf(m) === null);
  const upward = arrows.filter(([from, to]) => layerOf(to) > layerOf(from));
  const folderOf = (m) => m.split('::').slice(0, -1).join('::');
  const loops = circles(edges).map((members) => ({ members, folder: new Set(members.map(folderOf)).size === 1 ? folderOf(members[0]) : null }));
  const sizes = [...modules].map(([module, file]) => ({ module, file: path.relative(path.join(src, '..'), file), lines: linesBeforeTests(file) }));
  return { modules: [...modules.keys()], arrows, upward, circles: loops, unplaced, sizes, layers: LAYERS };
}

module.exports = { analyse };

if (require.main === module) {
  const result = analyse();
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(result, null, 2));
  } else {
    console.log(`${result.modules.length} modules, ${result.arrows.length} arrows`);
    for (const { members, folder } of result.circles) console.log(`circle (${folder === null ? 'across folders' : `in ${folder || 'src'}/`}): ${members.join(', ')}`);
    for (const [from, to] of result.upward) console.log(`up: ${from} -> ${to}`);
    for (const m of result.unplaced) console.log(`no layer: ${m}`);
    for (const { file, lines } of result.sizes.filter((s) => s.lines > 600)) console.log(`over 600 lines before its tests: ${file} (${lines})`);
    if (process.argv.includes('--arrows')) for (const [from, to] of result.arrows) console.log(`${from} -> ${to}`);
  }
}
