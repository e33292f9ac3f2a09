'use strict';
// browser-sync@3's proxy through its own API, in its own process (a child of benches/run.js).
// Browsersync injects its own snippet (its client script tag) after <body ...> and rewrites links.
const [target, port, staticDir] = process.argv.slice(2);

const bs = require('browser-sync').create('bench');
bs.init(
  {
    proxy: target,
    port: Number(port),
    // Workload 6's local files, under /static only, as devproxy-native's.
    serveStatic: staticDir ? [{ route: '/static', dir: staticDir }] : [],
    listen: '127.0.0.1',
    open: false,
    notify: false,
    ui: false,
    ghostMode: false,
    online: false,
    logLevel: 'silent',
    files: false,
    watch: false,
  },
  (err, instance) => {
    if (err) {
      process.send({ error: String((err && err.stack) || err) });
      return process.exit(1);
    }
    process.send({ ready: true, port: instance.options.get('port') });
  }
);
process.on('disconnect', () => process.exit(0));
