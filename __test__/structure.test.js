// The code's shape, held: imports run one way (scripts/module-graph.js draws them from the crate's own
// paths), no file a reader must scroll for long, and the module map in docs/how-it-works.md names the
// files that exist.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { analyse } = require('../scripts/module-graph.js');

const root = path.join(__dirname, '..');
const shape = analyse(path.join(root, 'src'));

test('the graph is drawn from the crate: known arrows are found', () => {
  // If the reader of paths broke, every check below would pass on an empty graph.
  assert.ok(shape.modules.length > 60, `${shape.modules.length} modules`);
  const arrows = new Set(shape.arrows.map(([from, to]) => `${from} -> ${to}`));
  for (const arrow of ['proxy -> proxy::security', 'server -> proxy', 'body::pipeline -> rewrite', 'config -> error']) {
    assert.ok(arrows.has(arrow), `${arrow} missing from ${shape.arrows.length} arrows`);
  }
});

test('every module has a layer', () => {
  assert.deepStrictEqual(shape.unplaced, []);
});

test('import circles stay inside one folder, at most two of them', () => {
  const across = shape.circles.filter((circle) => circle.folder === null);
  assert.deepStrictEqual(across.map((c) => c.members), [], 'a circle across folders');
  assert.ok(shape.circles.length <= 2, `circles: ${JSON.stringify(shape.circles.map((c) => c.members))}`);
});

test('at most five arrows run back up the layers', () => {
  const up = shape.upward.map(([from, to]) => `${from} -> ${to}`);
  assert.ok(up.length <= 5, `arrows up:\n${up.join('\n')}`);
});

test('no source file is over 600 lines before its tests', () => {
  const long = shape.sizes.filter((s) => s.lines > 600).map((s) => `${s.file}: ${s.lines}`);
  assert.deepStrictEqual(long, []);
});

test('the module map in docs/how-it-works.md names every source file, and only files that exist', () => {
  const map = fs.readFileSync(path.join(root, 'docs', 'how-it-works.md'), 'utf8');
  const named = new Set([...map.matchAll(/`(src\/[\w/.-]+)`/g)].map((m) => m[1]));
  for (const name of named) {
    assert.ok(fs.existsSync(path.join(root, name)), `the map names ${name}, which does not exist`);
  }
  // A file is named by its own path, or its folder (`src/codec/`) is named and the file is named
  // inside that folder's row by its file name.
  const rows = map.split('\n').filter((line) => line.startsWith('| `src/'));
  for (const { file } of shape.sizes) {
    if (named.has(file)) continue;
    const rel = file.split('/');
    const folderRow = rows.find((row) => {
      const folders = [...row.matchAll(/`(src\/[\w/]+\/)`/g)].map((m) => m[1]);
      return folders.some((folder) => file.startsWith(folder));
    });
    const inside = file.slice(file.indexOf('/', 4) + 1); // path below `src/<folder>/`
    const mentioned = folderRow && (folderRow.includes(`\`${inside}\``) || folderRow.includes(`\`${rel[rel.length - 1]}\``));
    assert.ok(mentioned, `${file} is not in the module map`);
  }
});
