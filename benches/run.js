#!/usr/bin/env node
// `npm run bench`: devproxy-native against its peers, on loopback, in one run (issue 4).
// See benches/README.md. Not a test: CI does not run it.
//
// Environment knobs (defaults in brackets):
//   BENCH_CONTENDERS   comma list of direct,devproxy-native,adapter,browser-sync,nginx,http-proxy-middleware [all six]
//   BENCH_DURATION     seconds per wrk run [5]      BENCH_RUNS       wrk runs per contender [3]
//   BENCH_CONNECTIONS  wrk connections [32]         BENCH_THREADS    wrk threads [2]
//   BENCH_WARMUP       seconds of wrk warm-up per contender and workload [1]
//   BENCH_WORKLOADS    comma list of workload ids to run [all]: 1,2,3,6 (wrk), 4 (big page), 5 (SSE), 7 (hook), 8 or 16 (br, deflate upstream, with 9),
//                      10 (inspector), 11 (record), 12 (120 user rules), 13 (1,000 user rules; 12 and 13 measure
//                      a 0-rule devproxy-native in the same interleaved runs for their ratios), 14 (120 user
//                      rules on a page of 17 common words, ~10,000 replacements per page, with its own 0-rule
//                      devproxy-native on the same page), 15 (14 with the words as whole words replaced by
//                      other words)
//   BENCH_NO_INSTALL=1 never call apt-get (fail if wrk/nginx are missing)
//   BENCH_NO_WRITE=1   print only, leave benches/RESULTS.md alone
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const zlib = require('node:zlib');
const { fork, spawn, spawnSync } = require('node:child_process');
const { manyRules, manyRulesNginx, wordRules, wordRulesNginx } = require('./lib/many-rules');

const ROOT = path.join(__dirname, '..');
const WORK = path.join(__dirname, '.work');
const RESULTS = path.join(__dirname, 'RESULTS.md');
const ADDON = path.join(ROOT, 'devproxy-native.linux-x64-gnu.node');
const LUA = path.join(__dirname, 'lib', 'report.lua');
const HOST = '127.0.0.1';
const SNIPPET = '<script async id="__bs_script__" src="/browser-sync/browser-sync-client.js?v=3.0.4"></script>';

const ALL = ['direct', 'devproxy-native', 'adapter', 'browser-sync', 'nginx', 'http-proxy-middleware'];
const cfg = {
  contenders: (process.env.BENCH_CONTENDERS || ALL.join(',')).split(',').map((s) => s.trim()).filter(Boolean),
  duration: Number(process.env.BENCH_DURATION || 5),
  runs: Number(process.env.BENCH_RUNS || 3),
  connections: Number(process.env.BENCH_CONNECTIONS || 32),
  threads: Number(process.env.BENCH_THREADS || 2),
  warmup: Number(process.env.BENCH_WARMUP || 1),
  workloads: process.env.BENCH_WORKLOADS ? process.env.BENCH_WORKLOADS.split(',').map(Number) : null,
  install: process.env.BENCH_NO_INSTALL !== '1',
  write: process.env.BENCH_NO_WRITE !== '1',
};
const selected = (id) => !cfg.workloads || cfg.workloads.includes(id);
for (const c of cfg.contenders) if (!ALL.includes(c)) fail(`unknown contender ${c} (known: ${ALL.join(', ')})`);

const HTML_HEADERS = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'accept-encoding': 'gzip, deflate, br' };
const WORKLOADS = [
  { id: 1, name: '100 KB HTML, upstream gzip (pre-compressed)', path: '/page.html', headers: ['Accept: text/html', 'Accept-Encoding: gzip, deflate, br'] },
  { id: 2, name: '100 KB per-request-unique HTML (gzip on the fly)', path: '/unique.html', headers: ['Accept: text/html', 'Accept-Encoding: gzip, deflate, br'] },
  { id: 3, name: '50 KB binary (image/png) passthrough', path: '/image.png', headers: ['Accept: image/avif,image/webp,*/*', 'Accept-Encoding: gzip, deflate, br'] },
  // Served from a local dir by each contender's serveStatic ({ route: '/static', dir: STATIC_DIR }): only those two.
  { id: 6, name: '100 KB CSS from serveStatic (local file)', path: '/static/app.css', headers: ['Accept: text/css,*/*;q=0.1', 'Accept-Encoding: gzip, deflate, br'], only: ['devproxy-native', 'browser-sync'] },
];
/**
 * Workloads 8 and 16, through a devproxy-native with `upstreamCompression: 'always'` (what a remote target
 * gets; a loopback one is asked for identity): the upstream sends br quality 11 (8) or zlib deflate level 6
 * (16) and devproxy-native answers in the same coding (br quality 6; deflate following the upstream's own
 * matches), against the same child on the gzip -6 page (9) for the cost per page.
 */
const ALWAYS_WORKLOADS = [
  { id: 8, name: '100 KB HTML, upstream br quality 11 (pre-compressed), upstreamCompression: always', path: '/page-br.html', headers: ['Accept: text/html', 'Accept-Encoding: gzip, deflate, br'] },
  { id: 16, name: '100 KB HTML, upstream deflate (zlib) level 6 (pre-compressed), upstreamCompression: always', path: '/page-deflate.html', headers: ['Accept: text/html', 'Accept-Encoding: gzip, deflate, br'] },
  { id: 9, name: 'the same child on the gzip -6 page (workload 1 with upstreamCompression: always)', path: '/page.html', headers: ['Accept: text/html', 'Accept-Encoding: gzip, deflate, br'] },
];
/** Workloads 12 and 13's rules (`manyRules({ literals, regexes })`) on workload 1's page. */
function pageRules(literals, regexes) {
  return {
    path: '/page.html',
    variant: `rules:${literals}:${regexes}`,
    count: literals + regexes,
    rules: () => manyRules({ literals, regexes }),
    nginx: () => manyRulesNginx({ literals, regexes }),
    about:
      `Workload 1's page and load with ${literals} literal rules (\`/legacy-host-I\\.example\\.org/g\`, a handful of which are strings of the page instead)` +
      `${regexes ? ` and ${regexes} regex rules (\`/data-track-I="[^"]*"/g\` → '', two of which match the page instead)` : ''} from \`benches/lib/many-rules.js\`.`,
  };
}
/**
 * Workloads 12 and 13 (issue 32, many rules in one pass): workload 1's page through devproxy-native with
 * `rewriteRules` from benches/lib/many-rules.js (a handful of them match the page) and through nginx with the
 * same rules as subs_filter directives, runs interleaved with a 0-rule devproxy-native for the ratios.
 * Workload 14 (issue 51 item 2, a realistic list that matches often): the same on the upstream's words page
 * (`/words.html`) with `wordRules()` (83 hosts that never match, 17 common words each found ~610 times,
 * 20 removals, three of which match a few times), against a 0-rule devproxy-native on that page.
 * `path`: the page (the 0-rule side runs on each page selected); `variant`: benches/lib/devproxy-child.js's.
 */
const MANY_RULES_WORKLOADS = [
  { id: 12, ...pageRules(100, 20), name: 'workload 1 with 120 user rules (100 literal, 20 regex)', vsNginx: 25, vsZero: 0.7 },
  { id: 13, ...pageRules(1000, 0), name: 'workload 1 with 1,000 literal user rules', vsNginx: null, vsZero: 0.5 },
  {
    id: 14,
    path: '/words.html',
    variant: 'words',
    count: 120,
    rules: wordRules,
    nginx: wordRulesNginx,
    name: '100 KB page of 17 common words with 120 user rules that match often (~10,000 replacements per page)',
    about:
      'The upstream\'s `/words.html` (~100 KB of mostly 17 common words, each ~610 times, a link to the upstream every 40 words, gzip -6 once), the load of workload 1, ' +
      'and 120 rules from `benches/lib/many-rules.js` (`wordRules()`, the shape of `benches/rules.rs`\'s `rules/words`): 83 literal hosts `/old-I\\.example\\.org/g` (never in the page), ' +
      'the 17 words each replaced by its uppercase form (`/header/g` → `HEADER`, ...), then 20 removals `/ data-tracking-I="[^"]*"/g` → \'\' (three match the page a few times). ' +
      'The snippet goes in before the user rules, so its `browser` and `client` come out uppercase (the snippet check ignores case).',
    vsNginx: 25,
    vsZero: 0.7,
  },
  {
    id: 15,
    path: '/words.html',
    variant: 'whole-synonyms',
    count: 120,
    // Its sides' labels (rows are keyed by label; workload 14's are `120 rules` on the same page).
    rulesLabel: '120 rules (whole-word synonyms)',
    rules: () => wordRules({ wholeSynonyms: true }),
    nginx: () => wordRulesNginx({ wholeSynonyms: true }),
    name: 'workload 14 with the words as whole words replaced by other words (`/\\bheader\\b/g` → `heading`)',
    about:
      'Workload 14\'s page and list, except that each of the 17 words is a whole word replaced by another word (`wordRules({ wholeSynonyms: true })`), ' +
      'as a real list\'s words are: `domain` → `realm`, `server` → `host`, .... Without word bounds such a list splits into sets that run one after another ' +
      '(`domain` ends where the hosts\' `new-...` begins, `server` where `realm` does); as whole words it is one set.',
    vsNginx: 25,
    vsZero: 0.7,
  },
];
const STATIC_DIR = path.join(WORK, 'static');
/** The local file of workload 6: ~100 KB of CSS rules (distinct lines, so it compresses like a real stylesheet). */
function writeStaticFile() {
  fs.mkdirSync(STATIC_DIR, { recursive: true });
  const lines = [];
  for (let i = 0; Buffer.byteLength(lines.join('\n')) < 100 * 1024; i++) {
    lines.push(`.c${i} > .item-${(i * 7919) % 1000} { margin: ${i % 17}px ${i % 5}px; color: #${((i * 2654435761) >>> 8).toString(16).padStart(6, '0').slice(0, 6)}; }`);
  }
  fs.writeFileSync(path.join(STATIC_DIR, 'app.css'), lines.join('\n'));
}
const CLK_TCK = Number(tryExec('getconf', ['CLK_TCK']) || 100);
const T0 = Date.now();

// ---------------------------------------------------------------------------------------------
// Processes: every child is tracked and killed on exit.

const children = new Set();
function track(child) {
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}
function killAll() {
  for (const child of children) {
    try {
      child.kill('SIGTERM');
    } catch {}
  }
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    killAll();
    process.exit(130);
  });
}
process.on('uncaughtException', (err) => {
  console.error(err);
  killAll();
  process.exit(1);
});
process.on('unhandledRejection', (err) => {
  console.error(err);
  killAll();
  process.exit(1);
});

function fail(message) {
  console.error(`bench: ${message}`);
  process.exit(1);
}
function log(message) {
  const s = ((Date.now() - T0) / 1000).toFixed(0).padStart(4);
  console.log(`[${s}s] ${message}`);
}
function tryExec(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error) return null;
  return (r.stdout || '').trim() || (r.stderr || '').trim() || null;
}
function which(cmd) {
  for (const dir of (process.env.PATH + ':/usr/sbin:/sbin').split(':')) {
    const p = path.join(dir, cmd);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {}
  }
  return null;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function median(xs) {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

/** A forked Node child that reports `{ready, port}` (or `{error}`) over IPC. */
function forkChild(script, args, label, env = process.env) {
  const child = track(fork(script, args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] }));
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label}: not ready after 60 s\n${stderr}`)), 60_000);
    child.on('message', (m) => {
      if (m.error) {
        clearTimeout(timer);
        reject(new Error(`${label}: ${m.error}`));
      } else if (m.ready) {
        clearTimeout(timer);
        resolve({ child, ...m });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited (${code})\n${stderr}`));
    });
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, HOST, () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitForPort(port, ms = 15_000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const ok = await new Promise((resolve) => {
      const sock = net.connect(port, HOST);
      sock.once('connect', () => {
        sock.destroy();
        resolve(true);
      });
      sock.once('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`nothing listens on ${HOST}:${port}`);
}

// ---------------------------------------------------------------------------------------------
// /proc: CPU time and memory of a contender's processes.

function procStat(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // f[0] is field 3 (state): utime = field 14, stime = 15, ppid = 4
    return { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / CLK_TCK };
  } catch {
    return null;
  }
}
function cpuSeconds(pids) {
  return pids.reduce((sum, pid) => sum + ((procStat(pid) || {}).cpu || 0), 0);
}
function childPids(parent) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const st = procStat(Number(d));
    if (st && st.ppid === parent) out.push(Number(d));
  }
  return out;
}
function memKb(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const get = (k) => Number((s.match(new RegExp(`^${k}:\\s+(\\d+)`, 'm')) || [])[1] || 0);
    return { rss: get('VmRSS'), hwm: get('VmHWM') };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}
function resetPeak(pid) {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'); // resets VmHWM (Linux >= 4.0)
    return true;
  } catch {
    return false;
  }
}

/** `napi build` without --release leaves DWARF in the addon (and makes it ~10x larger). */
function addonLooksDebug() {
  const sections = tryExec('readelf', ['-S', '-W', ADDON]);
  if (sections) return /\.debug_info/.test(sections);
  return fs.statSync(ADDON).size > 50e6;
}

// ---------------------------------------------------------------------------------------------
// Tools: wrk and nginx with subs_filter, installed with apt-get when missing.

let aptUpdated = false;
function aptInstall(pkgs) {
  if (!cfg.install) fail(`missing ${pkgs.join(' ')} and BENCH_NO_INSTALL=1`);
  const sudo = process.getuid && process.getuid() !== 0 ? ['sudo'] : [];
  const run = (args) => {
    log(`$ ${[...sudo, ...args].join(' ')}`);
    const r = spawnSync(sudo[0] || args[0], sudo.length ? args : args.slice(1), {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (r.status !== 0) fail(`${args.join(' ')} failed (${r.status})`);
  };
  // Never let a package's postinst start a service listening on 0.0.0.0:80.
  const policy = '/usr/sbin/policy-rc.d';
  const ownPolicy = !fs.existsSync(policy);
  if (ownPolicy) {
    try {
      fs.writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
    } catch {}
  }
  try {
    if (!aptUpdated) run(['apt-get', 'update', '-qq']);
    aptUpdated = true;
    run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...pkgs]);
  } finally {
    if (ownPolicy) fs.rmSync(policy, { force: true });
  }
}

function subsFilterModule() {
  for (const dir of ['/usr/lib/nginx/modules', '/usr/share/nginx/modules']) {
    const p = path.join(dir, 'ngx_http_subs_filter_module.so');
    if (fs.existsSync(p)) return p;
  }
  return null;
}

function ensureTools() {
  if (!which('wrk')) aptInstall(['wrk']);
  if (!which('wrk')) fail('wrk is not installed');
  if (cfg.contenders.includes('nginx')) {
    if (!which('nginx') || !subsFilterModule()) aptInstall(['nginx-light', 'libnginx-mod-http-subs-filter']);
    if (!which('nginx') || !subsFilterModule()) fail('nginx with ngx_http_subs_filter_module is not installed');
  }
}

// ---------------------------------------------------------------------------------------------
// Contenders.

async function startUpstream() {
  const up = await forkChild(path.join(__dirname, 'lib', 'upstream.js'), [], 'upstream');
  return { ...up, pid: up.child.pid, url: `http://${HOST}:${up.port}` };
}

/** `rules`: more subs_filter directives (workloads 12 and 13), after the snippet's and before the link rewrite's. */
function nginxConf(prefix, port, upPort, module, rules = []) {
  const esc = (s) => s.replace(/\\/g, '\\\\').replace(/'/g, "\\'");
  const upHost = `127.0.0.1:${upPort}`;
  const upHostRe = upHost.replace(/\./g, '\\.');
  const proxyHost = `127.0.0.1:${port}`;
  return `# generated by benches/run.js
load_module ${module};
daemon off;
master_process on;
worker_processes auto;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${prefix}/tmp/client;
  proxy_temp_path ${prefix}/tmp/proxy;
  fastcgi_temp_path ${prefix}/tmp/fastcgi;
  uwsgi_temp_path ${prefix}/tmp/uwsgi;
  scgi_temp_path ${prefix}/tmp/scgi;
  upstream bench_upstream { server ${upHost}; keepalive 64; }
  server {
    listen ${HOST}:${port};
    location / {
      proxy_pass http://bench_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      # subs_filter needs an uncompressed upstream body; nginx compresses for the client.
      proxy_set_header Accept-Encoding "";
      subs_filter_types text/html;
      # the snippet after the first <body ...>, then Browsersync's link rewrite
      subs_filter '(<body[^>]*>)' '$1${esc(SNIPPET)}' ior;
${rules.map((r) => `      ${r}\n`).join('')}      subs_filter 'https?://${upHostRe}' '//${proxyHost}' gr;
      subs_filter '${upHost}' '${proxyHost}' g;
      gzip on;
      gzip_types text/html;
      gzip_min_length 256;
      gzip_proxied any;
    }
  }
}
`;
}

/** nginx in `WORK/<dir>`; `rules` as nginxConf takes them. */
async function startNginx(upPort, { dir = 'nginx', rules = [] } = {}) {
  const prefix = path.join(WORK, dir);
  fs.rmSync(prefix, { recursive: true, force: true });
  fs.mkdirSync(path.join(prefix, 'tmp'), { recursive: true });
  const port = await freePort();
  const conf = path.join(prefix, 'nginx.conf');
  fs.writeFileSync(conf, nginxConf(prefix, port, upPort, subsFilterModule(), rules));
  const child = track(spawn(which('nginx'), ['-p', prefix, '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] }));
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  const exited = new Promise((_, reject) => child.on('exit', (code) => reject(new Error(`nginx exited (${code}): ${stderr}`))));
  exited.catch(() => {});
  await Promise.race([waitForPort(port), exited]);
  return { child, port, pid: child.pid, pids: () => [child.pid, ...childPids(child.pid)] };
}

async function startContender(name, upstream) {
  switch (name) {
    case 'direct':
      return { name, port: upstream.port, pids: () => [upstream.pid] };
    case 'devproxy-native': {
      // Load a private copy of the addon: a rebuild of the original during the run cannot touch it.
      const snapshot = path.join(WORK, 'devproxy-native.snapshot.node');
      fs.copyFileSync(ADDON, snapshot);
      const env = { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: snapshot };
      const c = await forkChild(path.join(__dirname, 'lib', 'devproxy-child.js'), [upstream.url, SNIPPET, STATIC_DIR], name, env);
      return { name, port: c.port, pids: () => [c.child.pid], child: c.child };
    }
    case 'adapter': {
      // devproxy-native/browser-sync: browser-sync 3 in snippet mode, start() serving the pages.
      const snapshot = path.join(WORK, 'devproxy-native.adapter-snapshot.node');
      fs.copyFileSync(ADDON, snapshot);
      const env = { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: snapshot };
      const c = await forkChild(path.join(__dirname, 'lib', 'adapter-child.js'), [upstream.url], name, env);
      return { name, port: c.port, pids: () => [c.child.pid], child: c.child };
    }
    case 'browser-sync': {
      const c = await forkChild(path.join(__dirname, 'lib', 'browser-sync-child.js'), [upstream.url, String(await freePort()), STATIC_DIR], name);
      return { name, port: c.port, pids: () => [c.child.pid], child: c.child };
    }
    case 'nginx': {
      const c = await startNginx(upstream.port);
      return { name, port: c.port, pids: c.pids, child: c.child };
    }
    case 'http-proxy-middleware': {
      const script = path.join(__dirname, 'lib', 'http-proxy-middleware-child.js');
      const c = await forkChild(script, [upstream.url, SNIPPET, String(await freePort())], name);
      return { name, port: c.port, pids: () => [c.child.pid], child: c.child };
    }
  }
  throw new Error(name);
}

// ---------------------------------------------------------------------------------------------
// Clients.

/** One GET; raw (undecoded) body bytes, timings in ms: headers, first body byte, end. */
function fetchRaw(port, pathname, headers, { keep = false, timeout = 120_000 } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const ms = () => Number(process.hrtime.bigint() - t0) / 1e6;
    // insecureHTTPParser: browser-sync answers a chunked upstream with Content-Length *and* Transfer-Encoding,
    // which Node's strict parser rejects and browsers tolerate.
    const req = http.get({ host: HOST, port, path: pathname, headers, agent: false, insecureHTTPParser: true }, (res) => {
      const tHeaders = ms();
      let tFirst = null;
      let bytes = 0;
      const chunks = [];
      res.on('data', (d) => {
        if (tFirst === null) tFirst = ms();
        bytes += d.length;
        if (keep) chunks.push(d);
      });
      res.on('end', () =>
        resolve({ status: res.statusCode, headers: res.headers, bytes, tHeaders, tFirst: tFirst ?? ms(), tEnd: ms(), body: keep ? Buffer.concat(chunks) : null })
      );
      res.on('error', reject);
    });
    req.setTimeout(timeout, () => req.destroy(new Error(`GET ${pathname} timed out`)));
    req.on('error', reject);
  });
}

function decode(buf, enc) {
  switch ((enc || 'identity').toLowerCase()) {
    case 'gzip':
      return zlib.gunzipSync(buf);
    case 'br':
      return zlib.brotliDecompressSync(buf);
    case 'deflate':
      return zlib.inflateSync(buf);
    default:
      return buf;
  }
}

/** What a contender sends for a route: encoding, bytes on the wire, and whether it rewrote the page. */
async function probe(contender, route, upstream) {
  const r = await fetchRaw(contender.port, route, HTML_HEADERS, { keep: true });
  const out = { status: r.status, encoding: r.headers['content-encoding'] || 'identity', wireBytes: r.bytes };
  if (/html/.test(r.headers['content-type'] || '')) {
    const text = decode(r.body, out.encoding).toString('utf8');
    out.decodedBytes = Buffer.byteLength(text);
    out.upstreamHostLeft = text.split(`127.0.0.1:${upstream.port}`).length - 1;
    out.proxyHostLinks = text.split(`127.0.0.1:${contender.port}`).length - 1;
    // Any case: workload 14's rules uppercase `browser` and `client`, in the snippet too (it goes in first);
    // workload 15's make them `navigator` and `customer`.
    out.snippet = /browser-sync-client|navigator-sync-customer/i.test(text);
  }
  return out;
}

function wrk(port, workload, duration) {
  const args = ['-t', String(cfg.threads), '-c', String(cfg.connections), '-d', `${duration}s`, '--latency', '-s', LUA];
  for (const h of workload.headers) args.push('-H', h);
  // wrk's default is 2 s: nginx with 1,000 subs_filter rules (workload 13) answers in about that.
  if (workload.timeout) args.push('--timeout', workload.timeout);
  args.push(`http://${HOST}:${port}${workload.path}`);
  return new Promise((resolve, reject) => {
    const child = track(spawn(which('wrk'), args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), (duration + 30) * 1000);
    child.on('exit', () => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith('WRKJSON '));
      if (!line) return reject(new Error(`wrk gave no summary:\n${out}`));
      const j = JSON.parse(line.slice(8));
      j.rps = j.requests / (j.duration_us / 1e6);
      j.bytesPerResponse = j.requests ? j.bytes / j.requests : NaN;
      resolve(j);
    });
  });
}

/** SSE through a contender: delay from the upstream's write to this process receiving the event. */
function sse(port, n = 50, every = 20) {
  return new Promise((resolve, reject) => {
    const delays = [];
    const req = http.get(
      { host: HOST, port, path: `/sse?n=${n}&every=${every}`, agent: false, insecureHTTPParser: true, headers: { accept: 'text/event-stream', 'accept-encoding': 'gzip, deflate, br', 'cache-control': 'no-cache' } },
      (res) => {
        const enc = (res.headers['content-encoding'] || 'identity').toLowerCase();
        let stream = res;
        if (enc === 'gzip') stream = res.pipe(zlib.createGunzip({ flush: zlib.constants.Z_SYNC_FLUSH }));
        else if (enc === 'br') stream = res.pipe(zlib.createBrotliDecompress());
        else if (enc === 'deflate') stream = res.pipe(zlib.createInflate({ flush: zlib.constants.Z_SYNC_FLUSH }));
        let buf = '';
        stream.on('data', (d) => {
          const now = process.hrtime.bigint();
          buf += d.toString('utf8');
          let at;
          while ((at = buf.indexOf('\n\n')) >= 0) {
            const event = buf.slice(0, at);
            buf = buf.slice(at + 2);
            const m = event.match(/^data: (\d+)$/m);
            if (m) delays.push(Number(now - BigInt(m[1])) / 1e6);
          }
        });
        stream.on('end', () => resolve({ encoding: enc, events: delays.length, delays }));
        stream.on('error', reject);
      }
    );
    req.setTimeout(30_000, () => req.destroy(new Error('SSE timed out')));
    req.on('error', reject);
  });
}

// ---------------------------------------------------------------------------------------------
// Workloads.

async function loadWorkload(workload, contenders, upstream) {
  log(`workload ${workload.id}: ${workload.name}`);
  const rows = {};
  for (const c of contenders) {
    rows[c.name] = { runs: [], probe: await probe(c, workload.path, upstream) };
    if (cfg.warmup > 0) await wrk(c.port, workload, cfg.warmup);
  }
  for (let run = 1; run <= cfg.runs; run++) {
    for (const c of contenders) {
      const pids = c.pids();
      const cpu0 = cpuSeconds(pids);
      const up0 = cpuSeconds([upstream.pid]);
      const r = await wrk(c.port, workload, cfg.duration);
      r.cpu = cpuSeconds(pids) - cpu0;
      r.upstreamCpu = cpuSeconds([upstream.pid]) - up0;
      if (c.name === 'direct') r.upstreamCpu = 0;
      rows[c.name].runs.push(r);
      const errs = Object.values(r.errors).reduce((a, b) => a + b, 0);
      log(
        `  run ${run} ${c.name.padEnd(16)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${(r.p50_us / 1000).toFixed(2)} ms  p99 ${(r.p99_us / 1000).toFixed(2)} ms  ` +
          `${(r.bytesPerResponse / 1024).toFixed(1)} KiB/resp  cpu ${r.cpu.toFixed(2)} s${errs ? `  errors ${JSON.stringify(r.errors)}` : ''}`
      );
    }
  }
  for (const c of contenders) {
    const row = rows[c.name];
    const runs = row.runs;
    row.rps = median(runs.map((r) => r.rps));
    row.p50_ms = median(runs.map((r) => r.p50_us / 1000));
    row.p99_ms = median(runs.map((r) => r.p99_us / 1000));
    row.wireBytesPerResponse = median(runs.map((r) => r.bytesPerResponse));
    row.cpuPerRun = median(runs.map((r) => r.cpu));
    row.rpsPerCpuSecond = median(runs.map((r) => (r.cpu > 0 ? r.requests / r.cpu : NaN)));
    row.cpuUsPerRequest = median(runs.map((r) => (r.requests > 0 ? (r.cpu / r.requests) * 1e6 : NaN)));
    row.upstreamCpuPerRun = median(runs.map((r) => r.upstreamCpu));
    row.errors = runs.reduce((a, r) => a + Object.values(r.errors).reduce((x, y) => x + y, 0), 0);
  }
  return rows;
}

/** A devproxy-native child for a variant of workload 1 (`variant` as benches/lib/devproxy-child.js reads it). */
async function forkVariant(upstream, variant, name, label = name) {
  const env = { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: path.join(WORK, 'devproxy-native.snapshot.node') };
  const c = await forkChild(path.join(__dirname, 'lib', 'devproxy-child.js'), [upstream.url, SNIPPET, '', variant], label, env);
  return { name, port: c.port, pids: () => [c.child.pid], child: c.child };
}

/** Asks a child of devproxy-child.js for `what` ('hookCalls', 'recording') and waits for its answer. */
function askChild(child, what) {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve(m[what]));
    child.send(what);
  });
}

/**
 * Workload 1 on each contender of `sides` ({ key: contender }), runs interleaved so that all see the
 * same machine load; `warm` lists the keys warmed up first, `alternate` reverses the order every other
 * run (so none always runs right after another). Medians per key.
 */
async function interleavedW1(sides, { warm = Object.keys(sides), alternate = false } = {}) {
  const w1 = WORKLOADS.find((w) => w.id === 1);
  const keys = Object.keys(sides);
  const pad = Math.max(...keys.map((k) => sides[k].name.length));
  const rows = Object.fromEntries(keys.map((k) => [k, []]));
  if (cfg.warmup > 0) for (const k of warm) await wrk(sides[k].port, w1, cfg.warmup);
  for (let run = 1; run <= cfg.runs; run++) {
    const order = alternate && run % 2 === 0 ? [...keys].reverse() : keys;
    for (const key of order) {
      const x = sides[key];
      const cpu0 = x.pids ? cpuSeconds(x.pids()) : 0;
      const r = await wrk(x.port, w1, cfg.duration);
      // The contender's own CPU per request (all its threads): steadier than req/s on a shared machine.
      if (x.pids && r.requests > 0) r.cpu_us = ((cpuSeconds(x.pids()) - cpu0) * 1e6) / r.requests;
      rows[key].push(r);
      log(`  run ${run} ${x.name.padEnd(pad)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${(r.p50_us / 1000).toFixed(2)} ms  p99 ${(r.p99_us / 1000).toFixed(2)} ms`);
    }
  }
  const summary = (runs) => ({
    rps: median(runs.map((r) => r.rps)),
    p50_ms: median(runs.map((r) => r.p50_us / 1000)),
    p99_ms: median(runs.map((r) => r.p99_us / 1000)),
    cpu_us: runs.every((r) => r.cpu_us != null) ? median(runs.map((r) => r.cpu_us)) : null,
    requests: runs.reduce((a, r) => a + r.requests, 0),
  });
  return Object.fromEntries(keys.map((k) => [k, summary(rows[k])]));
}

/**
 * The hook workload: workload 1 through a second devproxy-native whose `proxy.proxyReq` sets a header
 * on every request, runs interleaved with the plain one so both see the same machine load.
 */
async function hookWorkload(contenders, upstream) {
  const plain = contenders.find((c) => c.name === 'devproxy-native');
  if (!plain) return null;
  const w1 = WORKLOADS.find((w) => w.id === 1);
  log(`workload 7: ${w1.name} through a proxyReq hook that sets a header`);
  const hooked = await forkVariant(upstream, 'hook', 'devproxy-native + proxyReq', 'devproxy-native+hook');
  const probeRow = await probe(hooked, w1.path, upstream);
  const rows = await interleavedW1({ plain, hooked }, { warm: ['hooked'] });
  const hookCalls = await askChild(hooked.child, 'hookCalls');
  hooked.child.disconnect();
  return { plain: rows.plain, hooked: { ...rows.hooked, probe: probeRow }, hookCalls };
}

/**
 * The record workload: workload 1 through a fresh devproxy-native with `record` on (to /dev/null) and
 * one without, runs interleaved so both see the same machine load.
 */
async function recordWorkload(contenders, upstream) {
  if (!contenders.some((c) => c.name === 'devproxy-native')) return null;
  log(`workload 11: ${WORKLOADS.find((w) => w.id === 1).name} with record on`);
  // Two fresh processes, the same but for `record`, runs alternating (as workload 10): the main
  // contender has served the other workloads, and always running first biased the ratio.
  const fresh = await forkVariant(upstream, 'plain', 'devproxy-native', 'devproxy-native+plain');
  const recording = await forkVariant(upstream, 'record', 'devproxy-native + record', 'devproxy-native+record');
  const rows = await interleavedW1({ plain: fresh, recording }, { alternate: true });
  const status = await askChild(recording.child, 'recording');
  fresh.child.disconnect();
  recording.child.disconnect();
  return { ...rows, written: status ? status.written : null };
}

/**
 * The inspector workload: workload 1 through devproxy-native with the inspector on (the default,
 * nobody viewing it) and through a second one with `inspector: false`, runs interleaved so both see
 * the same machine load.
 */
async function inspectorWorkload(contenders, upstream) {
  if (!contenders.some((c) => c.name === 'devproxy-native')) return null;
  log(`workload 10: ${WORKLOADS.find((w) => w.id === 1).name} with the inspector on (default, no viewer) and off`);
  // Two fresh processes, the same but for `inspector`: the main contender has served the other
  // workloads (a 20 MB body among them), which would bias the comparison.
  const on = await forkVariant(upstream, 'inspector-on', 'devproxy-native, inspector on');
  const off = await forkVariant(upstream, 'inspector-off', 'devproxy-native, inspector: false');
  const rows = await interleavedW1({ on, off }, { alternate: true });
  on.child.disconnect();
  off.child.disconnect();
  return rows;
}

/** Workloads 8, 16 and 9 through a devproxy-native child with `upstreamCompression: 'always'` (see ALWAYS_WORKLOADS). */
async function alwaysWorkload(contenders, upstream) {
  if (!contenders.some((c) => c.name === 'devproxy-native')) return null;
  const child = await forkVariant(upstream, 'always', 'devproxy-native', 'devproxy-native+always');
  const rows = {};
  for (const w of ALWAYS_WORKLOADS) rows[w.id] = await loadWorkload(w, [child], upstream);
  child.child.disconnect();
  return rows;
}

/**
 * Workloads 12, 13 and 14 on one page (`pagePath`): the page through devproxy-native children with many
 * `rewriteRules` and through nginx instances with the same rules as subs_filter directives, runs interleaved
 * with a fresh 0-rule devproxy-native on the same page so that the ratios compare runs under the same machine
 * load. A side that fails to start (too many rules for a build, say) becomes a row with its error.
 */
async function manyRulesWorkload(contenders, upstream, pagePath) {
  const D = 'devproxy-native';
  const who = [D, 'nginx'].filter((n) => contenders.some((c) => c.name === n));
  const picked = MANY_RULES_WORKLOADS.filter((m) => selected(m.id) && m.path === pagePath);
  if (!who.length || !picked.length) return [];
  const w1 = WORKLOADS.find((w) => w.id === 1);
  const workload = { ...w1, path: pagePath, id: picked.map((m) => m.id).join('+'), name: `${pagePath}, with many user rules`, timeout: '20s' };
  log(`workload ${workload.id}: starting devproxy-native/nginx on ${pagePath} with 0, ${picked.map((m) => m.count).join(' and ')} user rules`);
  const sides = [];
  const add = async (side, start) => {
    try {
      side.contender = await start();
      log(`  ${side.label} on ${HOST}:${side.contender.port}`);
    } catch (err) {
      // The first line of the child's error, without forkChild's label and the `Error: `.
      const first = String((err && err.message) || err).split('\n').find((l) => l.trim() && !/^\s*at /.test(l)) || 'failed';
      side.error = first.replace(`${side.label}: `, '').replace(/^(\w*Error): /, '');
      log(`  ${side.label} did not start: ${side.error}`);
    }
    sides.push(side);
  };
  if (who.includes(D)) {
    const label = `${D}, 0 rules`;
    await add({ zero: true, path: pagePath, who: D, label, count: 0 }, () => forkVariant(upstream, 'plain', label));
  }
  for (const m of picked) {
    if (who.includes(D)) {
      const label = `${D}, ${m.rulesLabel || `${m.count} rules`}`;
      await add({ id: m.id, path: pagePath, who: D, label, count: m.count }, () => forkVariant(upstream, m.variant, label));
    }
    if (who.includes('nginx')) {
      const label = `nginx, ${m.rulesLabel || `${m.count} rules`}`;
      await add({ id: m.id, path: pagePath, who: 'nginx', label, count: m.count }, async () => {
        const c = await startNginx(upstream.port, { dir: `nginx-rules-${m.id}`, rules: m.nginx() });
        return { name: label, port: c.port, pids: c.pids, child: c.child };
      });
    }
  }
  const running = sides.filter((s) => s.contender);
  const rows = running.length ? await loadWorkload(workload, running.map((s) => s.contender), upstream) : {};
  // The rules' effect: how many match the upstream's page, how many still match the answer (0 when all
  // were applied), how many replacements they make on the page applied in order, and, for devproxy-native,
  // whether the answer is the 0-rule child's answer with the rules applied by String.prototype.replace in
  // order (no rule touches the links, so the order between them and the rules does not matter; the snippet
  // is in the 0-rule answer, so rules that match it apply to it as devproxy-native applies them, after it).
  const page = (await fetchRaw(upstream.port, pagePath, {}, { keep: true })).body.toString('utf8');
  const text = async (c) => {
    const r = await fetchRaw(c.port, pagePath, HTML_HEADERS, { keep: true });
    return decode(r.body, r.headers['content-encoding']).toString('utf8');
  };
  const zero = sides.find((s) => s.zero && s.contender);
  const zeroText = zero ? await text(zero.contender) : null;
  for (const side of running) {
    const row = (side.row = rows[side.label]);
    if (side.zero) continue;
    const rules = MANY_RULES_WORKLOADS.find((m) => m.id === side.id).rules();
    const hits = (s) => rules.filter((r) => new RegExp(r.match.source, r.match.flags.replace('g', '')).test(s)).length;
    const out = await text(side.contender);
    row.rulesMatching = hits(page);
    row.rulesLeft = hits(out);
    let replaced = page;
    row.replacements = 0;
    for (const r of rules) {
      row.replacements += (replaced.match(r.match) || []).length;
      replaced = replaced.replace(r.match, r.replace);
    }
    if (side.who === D && zeroText !== null) {
      let expected = zeroText.split(`${HOST}:${zero.contender.port}`).join(`${HOST}:${side.contender.port}`);
      for (const r of rules) expected = expected.replace(r.match, r.replace);
      row.sameAsJs = out === expected;
    }
    log(
      `  check ${side.label}: ${row.rulesMatching} rules match the page (${row.replacements} replacements in order), ${row.rulesLeft} still match the answer` +
        `${row.sameAsJs === undefined ? '' : `; answer ${row.sameAsJs ? '=' : '!='} the 0-rule answer + the rules in JS`}`
    );
  }
  for (const side of running) {
    if (side.who === 'nginx') side.contender.child.kill('SIGTERM');
    else side.contender.child.disconnect();
  }
  return sides.map(({ contender, ...side }) => side);
}

async function bigWorkload(contenders) {
  log('workload 4: 20 MB HTML, TTFB + total (3 single requests), then peak RSS during 4 concurrent downloads');
  const rows = {};
  for (const c of contenders) {
    const singles = [];
    // Three single requests (median), or one when a single one takes over 5 s (bounded runtime).
    for (let i = 0; i < 3 && !(i > 0 && singles[0].tEnd > 5000); i++) singles.push(await fetchRaw(c.port, '/big.html', HTML_HEADERS));
    const pids = c.pids();
    const peakReset = pids.map(resetPeak).every(Boolean);
    const baseline = pids.reduce((s, p) => s + memKb(p).rss, 0);
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, c.pids().reduce((s, p) => s + memKb(p).rss, 0));
    }, 10);
    const cpu0 = cpuSeconds(pids);
    const t0 = Date.now();
    const four = await Promise.all([0, 1, 2, 3].map(() => fetchRaw(c.port, '/big.html', HTML_HEADERS)));
    const wall = Date.now() - t0;
    clearInterval(sampler);
    const hwm = c.pids().reduce((s, p) => s + memKb(p).hwm, 0);
    const row = {
      singles: singles.length,
      ttfb_ms: median(singles.map((r) => r.tFirst)),
      headers_ms: median(singles.map((r) => r.tHeaders)),
      total_ms: median(singles.map((r) => r.tEnd)),
      wireBytes: singles[0].bytes,
      encoding: singles[0].headers['content-encoding'] || 'identity',
      status: singles[0].status,
      concurrentWall_ms: wall,
      concurrentCpu_s: cpuSeconds(pids) - cpu0,
      baselineRssMb: baseline / 1024,
      peakRssMb: Math.max(peak, peakReset ? hwm : 0) / 1024,
      peakRssSampledMb: peak / 1024,
      hwmMb: hwm / 1024,
      hwmReset: peakReset,
    };
    rows[c.name] = row;
    log(
      `  ${c.name.padEnd(16)} TTFB ${row.ttfb_ms.toFixed(1)} ms (headers ${row.headers_ms.toFixed(1)} ms)  total ${row.total_ms.toFixed(0)} ms  ` +
        `${(row.wireBytes / 1e6).toFixed(2)} MB ${row.encoding}  4x: ${wall} ms, peak RSS ${row.peakRssMb.toFixed(1)} MB (baseline ${row.baselineRssMb.toFixed(1)} MB)`
    );
  }
  return rows;
}

async function sseWorkload(contenders) {
  log('workload 5: SSE, 50 events 20 ms apart, upstream write -> client receive');
  const rows = {};
  for (const c of contenders) {
    const r = await sse(c.port);
    rows[c.name] = {
      events: r.events,
      encoding: r.encoding,
      median_ms: median(r.delays),
      p90_ms: r.delays.length ? percentile(r.delays, 90) : NaN,
      max_ms: r.delays.length ? Math.max(...r.delays) : NaN,
    };
    const row = rows[c.name];
    log(`  ${c.name.padEnd(16)} ${row.events} events  median ${row.median_ms.toFixed(2)} ms  p90 ${row.p90_ms.toFixed(2)} ms  max ${row.max_ms.toFixed(2)} ms`);
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Report.

function versions() {
  const pkg = (p) => {
    try {
      return JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', p, 'package.json'), 'utf8')).version;
    } catch {
      return null;
    }
  };
  const git = tryExec('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD']);
  const dirty = tryExec('git', ['-C', ROOT, 'status', '--porcelain', 'src']);
  let addonMtime = ADDON_INFO;
  if (!addonMtime) try {
    const st = fs.statSync(ADDON);
    addonMtime = `${st.mtime.toISOString()}, ${(st.size / 1e6).toFixed(1)} MB${addonLooksDebug() ? ', LOOKS LIKE A DEBUG BUILD' : ''}`;
  } catch {}
  return {
    date: new Date().toISOString(),
    cpu: (os.cpus()[0] || {}).model,
    nproc: os.cpus().length,
    kernel: os.release(),
    node: process.version,
    rustc: tryExec('rustc', ['-V']),
    devproxy: `${JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version} (git ${git}${dirty ? ', src/ modified' : ''}; addon built ${addonMtime})`,
    browserSync: pkg('browser-sync'),
    httpProxyMiddleware: pkg('http-proxy-middleware'),
    nginx: which('nginx') ? tryExec('nginx', ['-v']) : null,
    subsFilter: tryExec('dpkg-query', ['-W', '-f=${Version}', 'libnginx-mod-http-subs-filter']),
    wrk: (tryExec('wrk', ['-v']) || '').split('\n')[0],
    loadavg: os.loadavg().map((x) => x.toFixed(2)).join(' '),
  };
}

const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : NaN);

/** A markdown table: `columns` as [title, right-aligned], then one row of cells each. */
function table(L, columns, rows) {
  L.push(`| ${columns.map(([title]) => title).join(' | ')} |`);
  L.push(`|${columns.map(([, right]) => (right ? '---:' : '---')).join('|')}|`);
  for (const cells of rows) L.push(`| ${cells.join(' | ')} |`);
}

function markdown(res) {
  const { meta, upstream, load, big, sse: sseRows, names } = res;
  const L = [];
  L.push('<!-- peers:begin (written by `npm run bench`; everything between the markers is replaced) -->');
  L.push('## Peers: `npm run bench` (issue 4)');
  L.push('');
  L.push(`Run ${meta.date}. Machine: ${meta.nproc} cores, ${meta.cpu}, Linux ${meta.kernel}, load average at the end ${meta.loadavg}.`);
  L.push(`Versions: devproxy-native ${meta.devproxy}; Node ${meta.node}; ${meta.rustc}; browser-sync ${meta.browserSync}; http-proxy-middleware ${meta.httpProxyMiddleware}; ${meta.nginx || 'nginx n/a'} with subs_filter ${meta.subsFilter || 'n/a'}; ${meta.wrk}.`);
  L.push(
    `Load: \`wrk -t${cfg.threads} -c${cfg.connections} -d${cfg.duration}s --latency\`, ${cfg.runs} runs per contender interleaved (after a ${cfg.warmup} s warm-up), medians shown. ` +
      `Everything (upstream, contender, wrk) shares the same ${meta.nproc} cores.`
  );
  L.push(
    `Upstream: 100 KB page ${upstream.sizes.page} B (${upstream.sizes.pageGz} B gzip -6, ${upstream.sizes.pageBr} B br quality 11), unique page ~${upstream.sizes.unique} B (~${upstream.sizes.uniqueGz} B gzip -1, per request), words page ${upstream.sizes.words} B (${upstream.sizes.wordsGz} B gzip -6), image ${upstream.sizes.image} B, big page ${upstream.sizes.big} B (${upstream.sizes.bigGz} B gzip -6).`
  );
  L.push('');
  for (const w of [...WORKLOADS, ...ALWAYS_WORKLOADS]) {
    const rows = load[w.id];
    if (!rows) continue;
    L.push(`### Workload ${w.id}: ${w.name}`);
    L.push('');
    if (w.only) L.push(`Served by ${w.only.join(' and ')} from a local directory with their \`serveStatic\` (\`{ route: '/static', dir }\`); the others have no such option.`, '');
    const columns = [['contender'], ['req/s', 1], ['p50 ms', 1], ['p99 ms', 1], ['body bytes (encoding)'], ['wire bytes/resp', 1], ['links left / snippet'], ['CPU s per run', 1], ['req per CPU-s', 1], ['CPU µs per req', 1], ['upstream CPU s', 1], ['errors', 1]];
    table(L, columns, names.filter((n) => rows[n]).map((n) => {
      const r = rows[n];
      const p = r.probe;
      const rew = p.upstreamHostLeft === undefined ? '-' : `${p.upstreamHostLeft} / ${p.snippet ? 'yes' : 'no'}`;
      return [n, f(r.rps), f(r.p50_ms, 2), f(r.p99_ms, 2), `${p.wireBytes} (${p.encoding})`, f(r.wireBytesPerResponse), rew, f(r.cpuPerRun, 2), f(r.rpsPerCpuSecond), f(r.cpuUsPerRequest), f(r.upstreamCpuPerRun, 2), r.errors];
    }));
    L.push('');
  }
  if (big) {
  L.push('### Workload 4: 20 MB HTML page');
  L.push('');
  const bigColumns = [['contender'], ['TTFB ms (first body byte)', 1], ['headers ms', 1], ['total ms (1 request; median of n)', 1], ['bytes (encoding)'], ['4 concurrent: wall ms', 1], ['CPU s', 1], ['peak RSS MB', 1], ['baseline RSS MB', 1]];
  table(L, bigColumns, names.map((n) => {
    const r = big[n];
    return [n, f(r.ttfb_ms, 1), f(r.headers_ms, 1), `${f(r.total_ms)} (n=${r.singles})`, `${r.wireBytes} (${r.encoding})`, r.concurrentWall_ms, f(r.concurrentCpu_s, 2), f(r.peakRssMb, 1), f(r.baselineRssMb, 1)];
  }));
  L.push('');
  L.push('Peak RSS: VmHWM after resetting it (`/proc/PID/clear_refs` = 5) and VmRSS sampled every 10 ms, whichever is higher, summed over the contender\'s processes (nginx: master + workers; direct: the upstream).');
  L.push('');
  }
  if (sseRows) {
  L.push('### Workload 5: SSE event delay (upstream write → client receive, 50 events)');
  L.push('');
  const sseColumns = [['contender'], ['events', 1], ['median ms', 1], ['p90 ms', 1], ['max ms', 1], ['encoding']];
  table(L, sseColumns, names.map((n) => {
    const r = sseRows[n];
    return [n, r.events, f(r.median_ms, 2), f(r.p90_ms, 2), f(r.max_ms, 2), r.encoding];
  }));
  L.push('');
  }
  if (res.hook) {
    const h = res.hook;
    L.push('### Workload 7: workload 1 through a `proxy.proxyReq` hook that sets a header');
    L.push('');
    table(L, [['devproxy-native'], ['req/s', 1], ['p50 ms', 1], ['p99 ms', 1]], [
      ['plain', f(h.plain.rps), f(h.plain.p50_ms, 2), f(h.plain.p99_ms, 2)],
      ['with proxyReq', f(h.hooked.rps), f(h.hooked.p50_ms, 2), f(h.hooked.p99_ms, 2)],
    ]);
    L.push('');
    L.push(`The hook ran ${h.hookCalls} times for ${h.hooked.requests} requests measured (plus warm-up and probe).`);
    L.push('');
  }
  if (res.record) {
    const r = res.record;
    L.push('### Workload 11: workload 1 with `record` on (cassette written to /dev/null)');
    L.push('');
    table(L, [['devproxy-native'], ['req/s', 1], ['p50 ms', 1], ['p99 ms', 1], ['CPU µs per req', 1]], [
      ['plain', f(r.plain.rps), f(r.plain.p50_ms, 2), f(r.plain.p99_ms, 2), f(r.plain.cpu_us)],
      ['recording', f(r.recording.rps), f(r.recording.p50_ms, 2), f(r.recording.p99_ms, 2), f(r.recording.cpu_us)],
    ]);
    L.push('');
    L.push(`${r.written} exchanges recorded for ${r.recording.requests} requests measured (plus warm-up).`);
    L.push('');
  }
  if (res.inspector) {
    const x = res.inspector;
    L.push('### Workload 10: workload 1 with the inspector on (default, nobody viewing it) and off');
    L.push('');
    table(L, [['devproxy-native'], ['req/s', 1], ['p50 ms', 1], ['p99 ms', 1]], [
      ['inspector on', f(x.on.rps), f(x.on.p50_ms, 2), f(x.on.p99_ms, 2)],
      ['inspector: false', f(x.off.rps), f(x.off.p50_ms, 2), f(x.off.p99_ms, 2)],
    ]);
    L.push('');
  }
  if (res.manyRules) {
    const sides = res.manyRules;
    for (const m of MANY_RULES_WORKLOADS) {
      const mine = sides.filter((s) => s.id === m.id);
      if (!mine.length) continue;
      const zero = sides.find((s) => s.zero && s.path === m.path);
      L.push(`### Workload ${m.id}: ${m.name}`);
      L.push('');
      L.push(
        `${m.about} ` +
          'devproxy-native with them as `rewriteRules` (after the snippet, before the link rewrite), nginx with them as subs_filter directives in the same place (literals as fixed strings, regexes with `r`). ' +
          `A 0-rule devproxy-native on the same page (\`${m.path}\`) runs interleaved with them. Rules: how many match the upstream's page / how many still match the answer (0: all applied); ` +
          'replacements: how many matches the rules make on the upstream\'s page applied in order (in JS); ' +
          '= JS: the answer equals the 0-rule answer with the rules applied by `String.prototype.replace` in order.'
      );
      L.push('');
      const columns = [['contender'], ['req/s', 1], ['p50 ms', 1], ['p99 ms', 1], ['body bytes (encoding)'], ['links left / snippet'], ['rules matching / left'], ['replacements', 1], ['= JS'], ['CPU s per run', 1], ['CPU µs per req', 1], ['errors', 1]];
      table(L, columns, [zero, ...mine].filter(Boolean).map((s) => {
        if (s.error) return [s.label, `did not start: ${s.error.replace(/\|/g, '\\|')}`, ...columns.slice(2).map(() => '-')];
        const r = s.row;
        const p = r.probe;
        const rew = p.upstreamHostLeft === undefined ? '-' : `${p.upstreamHostLeft} / ${p.snippet ? 'yes' : 'no'}`;
        const rules = r.rulesMatching === undefined ? '-' : `${r.rulesMatching} / ${r.rulesLeft}`;
        const js = r.sameAsJs === undefined ? '-' : r.sameAsJs ? 'yes' : '**no**';
        const replacements = r.replacements === undefined ? '-' : r.replacements;
        return [s.label, f(r.rps), f(r.p50_ms, 2), f(r.p99_ms, 2), `${p.wireBytes} (${p.encoding})`, rew, rules, replacements, js, f(r.cpuPerRun, 2), f(r.cpuUsPerRequest), r.errors];
      }));
      L.push('');
    }
  }
  L.push('### Targets (ratios from this run)');
  L.push('');
  for (const t of res.targets) L.push(`- ${t.ok === null ? 'n/a ' : t.ok ? 'met: ' : '**MISSED**: '}${t.text}`);
  L.push('');
  L.push('<!-- peers:end -->');
  return L.join('\n');
}

function targets(res) {
  const { load, big, sse: sseRows, upstream } = res;
  const out = [];
  const D = 'devproxy-native';
  const has = (n) => res.names.includes(n);
  if (!has(D)) return [{ ok: null, text: 'devproxy-native was not run' }];
  for (const id of [1, 2]) {
    const rows = load[id];
    if (!rows) continue;
    if (has('browser-sync')) {
      const x = ratio(rows[D].rps, rows['browser-sync'].rps);
      out.push({ ok: x >= 5, text: `workload ${id}: devproxy-native ${f(rows[D].rps)} req/s = ${f(x, 2)}x browser-sync (target ≥ 5x)` });
    }
    if (has('nginx')) {
      const x = ratio(rows[D].rps, rows.nginx.rps);
      out.push({ ok: x >= 2, text: `workload ${id}: ${f(x, 2)}x nginx subs_filter (target ≥ 2x)` });
      // Issue 18: page weight at zlib level 1's bytes (nginx's gzip) or less, at 3x nginx's speed.
      out.push({ ok: x >= 3, text: `workload ${id}: issue 18's speed target: ${f(x, 2)}x nginx subs_filter (target ≥ 3x)` });
      const [ours, theirs] = [rows[D].probe.wireBytes, rows.nginx.probe.wireBytes];
      out.push({ ok: ours <= theirs, text: `workload ${id}: body ${ours} B against nginx's (zlib level 1) ${theirs} B (target ≤)` });
    }
    if (id === 1) {
      const x = ratio(rows[D].probe.wireBytes, upstream.sizes.pageGz);
      out.push({ ok: x <= 1.25, text: `workload 1: body ${f(x, 3)}x the upstream's gzip -6 ${upstream.sizes.pageGz} B (issue 18's target ≤ 1.25x)` });
    }
    const upBytes = has('direct') ? rows.direct.probe.wireBytes : id === 1 ? upstream.sizes.pageGz : upstream.sizes.uniqueGz;
    const x = ratio(rows[D].probe.wireBytes, upBytes);
    out.push({
      ok: x <= 1.5,
      text: `workload ${id}: response ${rows[D].probe.wireBytes} B ${rows[D].probe.encoding} = ${f(x, 2)}x the upstream's compressed ${upBytes} B (target ≤ 1.5x)`,
    });
  }
  // A compressed upstream's page through the `upstreamCompression: 'always'` child: its coding kept, its weight
  // within `limit` of the upstream's bytes.
  const keepsCoding = (id, coding, upBytes, about, limit, target) => {
    const p = load[id] && load[id][D] && load[id][D].probe;
    if (!p) return;
    const x = ratio(p.wireBytes, upBytes);
    out.push({
      ok: p.encoding === coding && x <= limit,
      text: `workload ${id}: a ${about} upstream's page (${upBytes} B) goes out as ${p.wireBytes} B ${p.encoding} = ${f(x, 3)}x (${target})`,
    });
  };
  keepsCoding(8, 'br', upstream.sizes.pageBr, 'br (quality 11)', 1.15, 'target: br within 1.15x');
  keepsCoding(16, 'deflate', upstream.sizes.pageDeflate, 'deflate (zlib, level 6)', 1.1, "issue 51 item 4's target: ≤ 1.10x");
  const w8 = load[8];
  if (w8 && w8[D]) {
    const w9 = load[9];
    if (w9 && w9[D]) {
      const [br, gz] = [w8[D].cpuUsPerRequest, w9[D].cpuUsPerRequest];
      out.push({ ok: null, text: `workload 8: cost per page ${f(br)} µs of devproxy-native CPU (decode br, rewrite, br quality 6) against ${f(gz)} µs for the gzip -6 page through the same child (decode gzip, rewrite, our DEFLATE): ${br >= gz ? '+' : ''}${f(br - gz)} µs; ${f(w8[D].rps)} req/s against ${f(w9[D].rps)}` });
    }
  }
  const w6 = load[6];
  if (w6 && w6[D] && w6['browser-sync']) {
    const x = ratio(w6[D].rps, w6['browser-sync'].rps);
    out.push({ ok: x >= 5, text: `workload 6: serveStatic file at ${f(w6[D].rps)} req/s = ${f(x, 2)}x browser-sync (target ≥ 5x)` });
  }
  if (has('adapter')) {
    for (const id of [1, 2, 3].filter((id) => load[id])) {
      const x = ratio(load[id].adapter.rps, load[id][D].rps);
      out.push({ ok: x >= 0.95, text: `workload ${id}: the adapter ${f(load[id].adapter.rps)} req/s = ${f(x, 3)}x start() (target ≥ 0.95x)` });
    }
  }
  const w3 = load[3];
  if (w3 && has('browser-sync')) {
    const x = ratio(w3[D].rps, w3['browser-sync'].rps);
    out.push({ ok: x >= 5, text: `workload 3: ${f(x, 2)}x browser-sync (target ≥ 5x)` });
  }
  if (w3 && has('nginx')) {
    const x = ratio(w3[D].rps, w3.nginx.rps);
    out.push({ ok: x >= 1, text: `workload 3: ${f(x, 2)}x nginx (target ≥ 1x)` });
  }
  if (big) out.push({ ok: big[D].ttfb_ms < 20, text: `workload 4: TTFB ${f(big[D].ttfb_ms, 1)} ms${has('browser-sync') ? ` (browser-sync ${f(big['browser-sync'].ttfb_ms, 0)} ms)` : ''} (target < 20 ms)` });
  if (big) out.push({ ok: big[D].peakRssMb < 100, text: `workload 4: peak RSS ${f(big[D].peakRssMb, 1)} MB during 4 concurrent downloads, of which ${f(big[D].baselineRssMb, 1)} MB is the idle Node process (target < 100 MB)` });
  if (res.hook) {
    const x = ratio(res.hook.hooked.rps, res.hook.plain.rps);
    out.push({ ok: x >= 0.8, text: `workload 7: a proxyReq hook keeps ${f(x * 100, 0)}% of workload 1's req/s (${f(res.hook.hooked.rps)} vs ${f(res.hook.plain.rps)}; target ≥ 80%)` });
  }
  if (res.record) {
    const x = ratio(res.record.recording.rps, res.record.plain.rps);
    const { plain, recording } = res.record;
    const cpu = plain.cpu_us && recording.cpu_us ? `; the proxy's CPU per request ${f(recording.cpu_us)} vs ${f(plain.cpu_us)} µs, ${f(recording.cpu_us / plain.cpu_us, 2)}x` : '';
    out.push({ ok: x >= 0.9, text: `workload 11: recording keeps ${f(x * 100, 0)}% of workload 1's req/s (${f(recording.rps)} vs ${f(plain.rps)}; target ≥ 90%)${cpu}` });
  }
  if (res.inspector) {
    const x = ratio(res.inspector.on.rps, res.inspector.off.rps);
    out.push({ ok: x >= 0.97, text: `workload 10: with the inspector on (no viewer) workload 1 keeps ${f(x * 100, 1)}% of its req/s with \`inspector: false\` (${f(res.inspector.on.rps)} vs ${f(res.inspector.off.rps)}; target ≥ 97%)` });
  }
  if (res.manyRules) {
    const sides = res.manyRules;
    const why = (s) => (!s ? 'not run' : s.error ? `did not start (${s.error})` : null);
    for (const m of MANY_RULES_WORKLOADS) {
      const mine = sides.filter((s) => s.id === m.id);
      if (!mine.length) continue;
      const zero = sides.find((s) => s.zero && s.path === m.path);
      const ours = mine.find((s) => s.who === D);
      const nginx = mine.find((s) => s.who === 'nginx');
      const rps = ours && ours.row ? ours.row.rps : NaN;
      if (nginx) {
        const x = ratio(rps, nginx.row ? nginx.row.rps : NaN);
        const failed = why(ours) || why(nginx);
        const goal = m.vsNginx ? `target ≥ ${m.vsNginx}x` : 'no target';
        out.push({
          ok: m.vsNginx ? (failed ? false : x >= m.vsNginx) : null,
          text: failed && why(ours)
            ? `workload ${m.id}: devproxy-native with ${ours.count} rules ${why(ours)} (${goal} against nginx subs_filter)`
            : failed
              ? `workload ${m.id}: nginx subs_filter with ${nginx.count} rules ${why(nginx)} (${goal})`
              : `workload ${m.id}: devproxy-native ${f(rps)} req/s = ${f(x, 2)}x nginx subs_filter's ${f(nginx.row.rps)} with the same ${ours.count} rules (${goal})`,
        });
      }
      const failed = why(ours) || why(zero);
      const x = ratio(rps, zero && zero.row ? zero.row.rps : NaN);
      out.push({
        ok: failed ? false : x >= m.vsZero,
        text: failed
          ? `workload ${m.id}: devproxy-native ${why(ours) ? `with ${m.count} rules ${why(ours)}` : `with 0 rules ${why(zero)}`} (target ≥ ${m.vsZero}x of the 0-rule throughput)`
          : `workload ${m.id}: devproxy-native with ${ours.count} rules ${f(rps)} req/s = ${f(x, 2)}x of its 0-rule throughput ${f(zero.row.rps)} req/s (on ${m.path}, same runs; target ≥ ${m.vsZero}x)`,
      });
      for (const s of mine.filter((s) => s.row && (s.row.rulesLeft > 0 || s.row.sameAsJs === false))) {
        out.push({ ok: false, text: `workload ${m.id}: ${s.label}: ${s.row.rulesLeft} rules still match the answer${s.row.sameAsJs === false ? ', and the answer is not the 0-rule answer with the rules applied in JS' : ''}` });
      }
    }
  }
  const s = sseRows && sseRows[D];
  if (s) out.push({ ok: s.events === 50 && s.max_ms <= 5, text: `workload 5: ${s.events}/50 events, median ${f(s.median_ms, 2)} ms, max ${f(s.max_ms, 2)} ms (target: each within 5 ms)` });
  return out;
}

function writeResults(md) {
  const begin = '<!-- peers:begin';
  const end = '<!-- peers:end -->';
  let text = fs.existsSync(RESULTS) ? fs.readFileSync(RESULTS, 'utf8') : '# Benchmark results\n';
  const a = text.indexOf(begin);
  const b = text.indexOf(end);
  if (a >= 0 && b > a) text = text.slice(0, a) + md + text.slice(b + end.length);
  else text = text.replace(/\s*$/, '\n\n') + md + '\n';
  fs.writeFileSync(RESULTS, text);
}

// ---------------------------------------------------------------------------------------------

let ADDON_INFO = null;

async function main() {
  fs.mkdirSync(WORK, { recursive: true });
  if (fs.existsSync(ADDON)) {
    const st = fs.statSync(ADDON);
    ADDON_INFO = `${st.mtime.toISOString()}, ${(st.size / 1e6).toFixed(1)} MB${addonLooksDebug() ? ', LOOKS LIKE A DEBUG BUILD' : ''}`;
  }
  if (cfg.contenders.includes('devproxy-native') && !(fs.existsSync(ADDON) && fs.existsSync(path.join(ROOT, 'index.js')))) {
    fail(`the addon is not built (${path.relative(ROOT, ADDON)} / index.js missing): run \`npm run build\` first, or set BENCH_CONTENDERS=direct,browser-sync,nginx`);
  }
  if (cfg.contenders.includes('devproxy-native') && addonLooksDebug()) {
    console.warn(`bench: WARNING ${path.relative(ROOT, ADDON)} looks like a debug build (debug info, ${(fs.statSync(ADDON).size / 1e6).toFixed(0)} MB): run \`npm run build\` (release) for meaningful numbers`);
  }
  ensureTools();
  log(`contenders: ${cfg.contenders.join(', ')}; wrk -t${cfg.threads} -c${cfg.connections} -d${cfg.duration}s x ${cfg.runs} runs`);
  writeStaticFile();
  const upstream = await startUpstream();
  log(`upstream on ${upstream.url}: ${JSON.stringify(upstream.sizes)}`);
  const contenders = [];
  for (const name of cfg.contenders) {
    const c = await startContender(name, upstream);
    contenders.push(c);
    log(`${name} on ${HOST}:${c.port} (pids ${c.pids().join(',')})`);
  }
  const names = contenders.map((c) => c.name);
  for (const c of contenders) {
    const p = await probe(c, '/page.html', upstream);
    log(`  check ${c.name}: ${JSON.stringify(p)}`);
  }
  const load = {};
  for (const w of WORKLOADS.filter((w) => selected(w.id))) {
    const some = w.only ? contenders.filter((c) => w.only.includes(c.name)) : contenders;
    if (some.length) load[w.id] = await loadWorkload(w, some, upstream);
  }
  const big = selected(4) ? await bigWorkload(contenders) : null;
  const sseRows = selected(5) ? await sseWorkload(contenders) : null;
  const hook = selected(7) ? await hookWorkload(contenders, upstream) : null;
  if ([8, 16].some(selected)) Object.assign(load, await alwaysWorkload(contenders, upstream));
  const inspector = selected(10) ? await inspectorWorkload(contenders, upstream) : null;
  const record = selected(11) ? await recordWorkload(contenders, upstream) : null;
  // Workloads 12 and 13 share one 0-rule side on /page.html, 14 and 15 theirs on /words.html.
  const manyRulesSides = [];
  for (const page of new Set(MANY_RULES_WORKLOADS.map((m) => m.path))) manyRulesSides.push(...(await manyRulesWorkload(contenders, upstream, page)));
  const res = { meta: versions(), upstream, load, big, sse: sseRows, names, hook, record, inspector, manyRules: manyRulesSides.length ? manyRulesSides : null };
  res.targets = targets(res);
  const md = markdown(res);
  fs.writeFileSync(path.join(WORK, 'peers-latest.json'), JSON.stringify({ cfg, ...res, upstream: { port: upstream.port, sizes: upstream.sizes } }, (k, v) => (k === 'child' ? undefined : v), 2));
  console.log('\n' + md);
  if (cfg.write) {
    writeResults(md);
    log(`wrote ${path.relative(ROOT, RESULTS)} (raw: benches/.work/peers-latest.json)`);
  }
  killAll();
  await sleep(300);
  process.exit(0);
}

main();
