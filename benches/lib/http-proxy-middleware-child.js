'use strict';
// http-proxy-middleware@3 with `responseInterceptor`, on a plain Node http server, in its own process
// (a child of benches/run.js): the way webpack-dev-server and Express setups rewrite proxied pages.
// The interceptor buffers every response, decompresses it, and sends it back uncompressed; HTML gets
// the same rewrites as the nginx config (snippet after <body ...>, the target's origin, then its bare
// host, become the proxy's).
const http = require('node:http');
const { createProxyMiddleware, responseInterceptor } = require('http-proxy-middleware');

const [target, snippet, port] = process.argv.slice(2);
const upstreamHost = new URL(target).host;
const escaped = upstreamHost.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const origin = new RegExp(`https?://${escaped}`, 'g');
const bare = new RegExp(escaped, 'g');

const proxy = createProxyMiddleware({
  target,
  selfHandleResponse: true,
  on: {
    proxyRes: responseInterceptor(async (body, proxyRes, req) => {
      if (!/text\/html/i.test(proxyRes.headers['content-type'] || '')) return body;
      const host = req.headers.host;
      return body
        .toString('utf8')
        .replace(/<body[^>]*>/i, (tag) => tag + snippet)
        .replace(origin, `//${host}`)
        .replace(bare, host);
    }),
  },
});

const server = http.createServer((req, res) => proxy(req, res, (err) => res.destroy(err)));
server.keepAliveTimeout = 65_000;
server.listen(Number(port), '127.0.0.1', () => process.send({ ready: true, port: server.address().port }));
process.on('disconnect', () => process.exit(0));
