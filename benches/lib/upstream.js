'use strict';
// The upstream for the peer benchmarks (a child of benches/run.js, IPC channel required).
// Routes (all on 127.0.0.1, port chosen by the OS and reported to the parent):
//   /page.html    ~100 KB HTML full of absolute links to this server, gzip level 6, compressed once
//   /unique.html  ~100 KB HTML whose every link carries a per-request token, gzipped on the fly (level 1);
//                 built by copying a template and writing the token into its slots (~25 µs, where
//                 joining strings and encoding them cost ~400 µs of the CPU the contenders share)
//   /page-br.html the same page, brotli quality 11 (lgwin 22, what CDNs send) to clients that accept br,
//                 compressed once; gzip -6 or identity to the others
//   /page-deflate.html the same page, zlib-wrapped deflate level 6 to clients that accept deflate,
//                 compressed once; gzip -6 or identity to the others
//   /words.html   ~100 KB HTML of mostly 17 common words (~10,000 matches of workload 14's rules), links
//                 to this server, gzip level 6, compressed once
//   /image.png    50 KB of random bytes, image/png, never compressed
//   /big.html     ~20 MB HTML, compressed once (level 6), streamed in 64 KiB writes without Content-Length
//   /sse?n=N&every=MS  N Server-Sent Events, each carrying process.hrtime.bigint() (CLOCK_MONOTONIC, the
//                 same clock in every process) taken just before the write
// Every HTML route honours Accept-Encoding: gzip (or br, deflate for /page-br.html, /page-deflate.html)
// only when the client asks for it, identity otherwise.
const http = require('node:http');
const zlib = require('node:zlib');
const crypto = require('node:crypto');
const { generateHtml, generateWordsHtml } = require('./html');

const PAGE_BYTES = 100 * 1024;
const BIG_BYTES = 20 * 1024 * 1024;
const IMAGE_BYTES = 50 * 1024;
const WRITE = 64 * 1024;

const server = http.createServer();
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;

server.listen(0, '127.0.0.1', () => {
  const host = `127.0.0.1:${server.address().port}`;
  const page = Buffer.from(generateHtml(host, PAGE_BYTES));
  const pageGz = zlib.gzipSync(page, { level: 6 });
  const pageBr = zlib.brotliCompressSync(page, {
    params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_LGWIN]: 22, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: page.length },
  });
  const pageDeflate = zlib.deflateSync(page, { level: 6 });
  const words = Buffer.from(generateWordsHtml(host, PAGE_BYTES));
  const wordsGz = zlib.gzipSync(words, { level: 6 });
  const uniqueParts = generateHtml(host, PAGE_BYTES, '\u0000').split('\u0000');
  // Tokens have a fixed length (pid, zero-padded counter, random hex), so every page has the same
  // layout: the template's slots are where each token goes.
  const pid36 = process.pid.toString(36);
  const makeToken = (n) => `${pid36}-${n.toString(36).padStart(7, '0')}-${crypto.randomBytes(4).toString('hex')}`;
  const TOKEN_BYTES = makeToken(0).length;
  const uniqueTemplate = Buffer.from(uniqueParts.join('x'.repeat(TOKEN_BYTES)));
  const uniqueSlots = [];
  for (let i = 1, at = Buffer.byteLength(uniqueParts[0]); i < uniqueParts.length; i++) {
    uniqueSlots.push(at);
    at += TOKEN_BYTES + Buffer.byteLength(uniqueParts[i]);
  }
  const uniquePage = (token) => {
    const body = Buffer.allocUnsafe(uniqueTemplate.length);
    body.set(uniqueTemplate);
    const bytes = Buffer.from(token, 'latin1');
    for (const at of uniqueSlots) body.set(bytes, at);
    return body;
  };
  const big = Buffer.from(generateHtml(host, BIG_BYTES));
  const bigGz = zlib.gzipSync(big, { level: 6 });
  const image = crypto.randomBytes(IMAGE_BYTES);
  let counter = 0;

  const html = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' };
  const wantsGzip = (req) => /\bgzip\b/i.test(req.headers['accept-encoding'] || '');
  const wantsBr = (req) => /\bbr\b/i.test(req.headers['accept-encoding'] || '');
  const wantsDeflate = (req) => /\bdeflate\b/i.test(req.headers['accept-encoding'] || '');

  function stream(res, buf) {
    let at = 0;
    const more = () => {
      while (at < buf.length) {
        const piece = buf.subarray(at, at + WRITE);
        at += piece.length;
        if (!res.write(piece)) return res.once('drain', more);
      }
      res.end();
    };
    more();
  }

  server.on('request', (req, res) => {
    const url = new URL(req.url, 'http://x');
    switch (url.pathname) {
      case '/page.html': {
        const gz = wantsGzip(req);
        const body = gz ? pageGz : page;
        res.writeHead(200, { ...html, ...(gz && { 'content-encoding': 'gzip' }), vary: 'Accept-Encoding', 'content-length': body.length });
        return res.end(body);
      }
      case '/words.html': {
        const gz = wantsGzip(req);
        const body = gz ? wordsGz : words;
        res.writeHead(200, { ...html, ...(gz && { 'content-encoding': 'gzip' }), vary: 'Accept-Encoding', 'content-length': body.length });
        return res.end(body);
      }
      case '/page-br.html': {
        const encoding = wantsBr(req) ? 'br' : wantsGzip(req) ? 'gzip' : null;
        const body = encoding === 'br' ? pageBr : encoding === 'gzip' ? pageGz : page;
        res.writeHead(200, { ...html, ...(encoding && { 'content-encoding': encoding }), vary: 'Accept-Encoding', 'content-length': body.length });
        return res.end(body);
      }
      case '/page-deflate.html': {
        const encoding = wantsDeflate(req) ? 'deflate' : wantsGzip(req) ? 'gzip' : null;
        const body = encoding === 'deflate' ? pageDeflate : encoding === 'gzip' ? pageGz : page;
        res.writeHead(200, { ...html, ...(encoding && { 'content-encoding': encoding }), vary: 'Accept-Encoding', 'content-length': body.length });
        return res.end(body);
      }
      case '/unique.html': {
        const body = uniquePage(makeToken(++counter));
        if (!wantsGzip(req)) {
          res.writeHead(200, { ...html, vary: 'Accept-Encoding', 'content-length': body.length });
          return res.end(body);
        }
        return zlib.gzip(body, { level: 1 }, (err, gz) => {
          if (err) return res.destroy(err);
          res.writeHead(200, { ...html, 'content-encoding': 'gzip', vary: 'Accept-Encoding', 'content-length': gz.length });
          res.end(gz);
        });
      }
      case '/image.png':
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': image.length, 'cache-control': 'no-cache' });
        return res.end(image);
      case '/big.html': {
        const gz = wantsGzip(req);
        res.writeHead(200, { ...html, ...(gz && { 'content-encoding': 'gzip' }), vary: 'Accept-Encoding' });
        return stream(res, gz ? bigGz : big);
      }
      case '/sse': {
        const n = Math.min(1000, Number(url.searchParams.get('n')) || 50);
        const every = Math.max(1, Number(url.searchParams.get('every')) || 20);
        res.writeHead(200, {
          'content-type': 'text/event-stream',
          'cache-control': 'no-cache',
          'x-accel-buffering': 'no', // what SSE apps send so that nginx does not buffer
        });
        res.write(': open\n\n');
        let i = 0;
        const timer = setInterval(() => {
          i++;
          res.write(`id: ${i}\ndata: ${process.hrtime.bigint()}\n\n`);
          if (i >= n) {
            clearInterval(timer);
            res.end();
          }
        }, every);
        res.on('close', () => clearInterval(timer));
        return;
      }
      default:
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
    }
  });

  process.send({
    ready: true,
    port: server.address().port,
    sizes: {
      page: page.length,
      pageGz: pageGz.length,
      pageBr: pageBr.length,
      pageDeflate: pageDeflate.length,
      words: words.length,
      wordsGz: wordsGz.length,
      unique: uniqueTemplate.length,
      // What one unique page costs on the wire from the upstream.
      uniqueGz: zlib.gzipSync(uniquePage(makeToken(0)), { level: 1 }).length,
      big: big.length,
      bigGz: bigGz.length,
      image: image.length,
    },
  });
});

process.on('disconnect', () => process.exit(0));
