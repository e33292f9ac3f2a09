'use strict';
// devproxy-native behind its browser-sync adapter (`devproxy-native/browser-sync` on browser-sync 3), in
// its own process (a child of benches/run.js): the page path is the same `start()`, plus browser-sync's
// snippet and routes.
const path = require('node:path');

const [target] = process.argv.slice(2);

const browserSync = require(path.join(__dirname, '..', '..', 'browser-sync.js')).create('bench');
browserSync.init(
  { proxy: target, port: 0, open: false, online: false, ui: false, notify: false, logLevel: 'silent', quiet: true },
  (err) => {
    if (err) {
      process.send({ error: String(err.stack || err) });
      process.exit(1);
    }
    process.send({ ready: true, port: browserSync.proxy.port });
  }
);
process.on('disconnect', async () => {
  try {
    await Promise.race([browserSync.exit(), new Promise((r) => setTimeout(r, 2000))]);
  } finally {
    process.exit(0);
  }
});
