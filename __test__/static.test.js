'use strict'
// serveStatic: files under local directories answered before the proxy (real temp dirs, a real upstream).

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const http = require('node:http')
const os = require('node:os')
const path = require('node:path')
const { HOST, fileUpstream, withProxy, decodeBody, ACCEPT_HTML, lib, stopIfStarted } = require('./helpers')

const up = fileUpstream({
  '/page': (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end('<html><body>upstream page</body></html>')
  },
})

let tmp // holds `root` (served), `other` (served second) and `secret.txt` (outside both)
let root
let other
const CSS = Buffer.from('.a { color: red }\n'.repeat(6000)) // ~100 KB
const SECRET = 'TOP-SECRET-OUTSIDE-ROOT'

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-static-'))
  root = path.join(tmp, 'root')
  other = path.join(tmp, 'other')
  for (const dir of [root, other, path.join(root, 'sub'), path.join(root, 'empty'), path.join(root, '.git')]) {
    fs.mkdirSync(dir, { recursive: true })
  }
  fs.writeFileSync(path.join(tmp, 'secret.txt'), SECRET)
  fs.writeFileSync(path.join(root, 'app.css'), CSS)
  fs.writeFileSync(path.join(root, 'hello.txt'), 'hello from root')
  fs.writeFileSync(path.join(root, 'img.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]))
  fs.writeFileSync(path.join(root, '.env'), `API_KEY=${SECRET}`)
  fs.writeFileSync(path.join(root, '.git', 'config'), SECRET)
  fs.writeFileSync(path.join(root, 'about.html'), '<html><body>about</body></html>')
  // sub/index.html links to the upstream: written by its test, once the upstream runs.
  fs.writeFileSync(path.join(root, 'sub', 'index.html'), '')
  fs.writeFileSync(path.join(root, 'a b.txt'), 'with a space')
  fs.writeFileSync(path.join(other, 'hello.txt'), 'hello from other')
  fs.writeFileSync(path.join(other, 'only-other.txt'), 'only in other')
  fs.symlinkSync(path.join(tmp, 'secret.txt'), path.join(root, 'escape.txt'))
  fs.symlinkSync(path.join(root, 'hello.txt'), path.join(root, 'inside.txt'))
})

after(() => {
  fs.rmSync(tmp, { recursive: true, force: true })
})

/** A request with the path sent exactly as written (no URL normalisation). */
function raw(server, pathname, { method = 'GET', headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: HOST, port: server.port, path: pathname, method, headers, agent: false })
    req.on('error', reject)
    req.on('response', (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.end()
  })
}

const upstreamSaw = (pathname) => up.requests.some((r) => r.url === pathname)

test('a file under serveStatic is answered locally with its type, validators and length; the upstream never sees it', async () => {
  await withProxy({ proxy: up.url, port: 0, serveStatic: [root] }, async (server) => {
    const res = await raw(server, '/app.css')
    assert.equal(res.status, 200)
    assert.equal(res.headers['content-type'], 'text/css; charset=UTF-8')
    assert.equal(res.headers['content-length'], String(CSS.length))
    assert.match(res.headers.etag, /^W\/"[0-9a-f]+-[0-9a-f]+"$/)
    assert.equal(new Date(res.headers['last-modified']).getTime() > 0, true)
    assert.equal(res.headers['accept-ranges'], 'bytes')
    assert.deepEqual(res.body, CSS)
    const png = await raw(server, '/img.png')
    assert.equal(png.headers['content-type'], 'image/png')
    assert.equal((await raw(server, '/a%20b.txt')).body.toString(), 'with a space')
    assert.equal(upstreamSaw('/app.css') || upstreamSaw('/img.png'), false)
  })
})

test('HEAD gets the headers and the length, no body; POST and missing files go to the upstream', async () => {
  await withProxy({ proxy: up.url, port: 0, serveStatic: [root] }, async (server) => {
    const head = await raw(server, '/hello.txt', { method: 'HEAD' })
    assert.equal(head.status, 200)
    assert.equal(head.headers['content-length'], String('hello from root'.length))
    assert.equal(head.body.length, 0)
    const post = await raw(server, '/hello.txt', { method: 'POST' })
    assert.equal(post.status, 404)
    assert.equal(post.body.toString(), 'no route /hello.txt')
    const missing = await raw(server, '/page', { headers: { accept: ACCEPT_HTML } })
    assert.match(missing.body.toString(), /upstream page/)
    assert.ok(upstreamSaw('/page'))
  })
})

test('compressible files go out in the coding the client accepts; images and ranges stay as they are', async () => {
  await withProxy({ proxy: up.url, port: 0, serveStatic: [root] }, async (server) => {
    for (const coding of ['gzip', 'br', 'deflate']) {
      const res = await raw(server, '/app.css', { headers: { 'accept-encoding': coding } })
      assert.equal(res.headers['content-encoding'], coding)
      assert.equal(res.headers['content-length'], undefined)
      assert.match(res.headers.vary, /Accept-Encoding/i)
      assert.ok(res.body.length < CSS.length / 10, `${coding}: ${res.body.length} bytes`)
      assert.deepEqual(decodeBody(res.body, coding), CSS)
    }
    const png = await raw(server, '/img.png', { headers: { 'accept-encoding': 'gzip' } })
    assert.equal(png.headers['content-encoding'], undefined)
    const range = await raw(server, '/app.css', { headers: { 'accept-encoding': 'gzip', range: 'bytes=0-9' } })
    assert.equal(range.status, 206)
    assert.equal(range.headers['content-encoding'], undefined)
  })
})

test('a compressed file is compressed once per version: the same bytes again, the new content once the file changes', async () => {
  const file = path.join(root, 'changing.js')
  fs.writeFileSync(file, 'console.log("first version");\n'.repeat(2000))
  await withProxy({ proxy: up.url, port: 0, serveStatic: [root] }, async (server) => {
    const get = () => raw(server, '/changing.js', { headers: { 'accept-encoding': 'gzip' } })
    const first = await get()
    const second = await get()
    assert.equal(first.headers['content-encoding'], 'gzip')
    assert.equal(first.headers['content-type'], 'text/javascript; charset=UTF-8') // RFC 9239's type; serve-static's mime 1 says application/javascript
    assert.deepEqual(second.body, first.body)
    assert.equal(second.headers['content-length'], String(second.body.length), 'a kept copy has its length')
    assert.equal(second.headers['content-encoding'], 'gzip')
    assert.equal(second.headers.etag, first.headers.etag)
    fs.writeFileSync(file, 'console.log("second version, longer");\n'.repeat(2000))
    const changed = await get()
    assert.notEqual(changed.headers.etag, first.headers.etag)
    assert.match(decodeBody(changed.body, 'gzip').toString(), /^console\.log\("second version, longer"\);\n/)
    const br = await raw(server, '/changing.js', { headers: { 'accept-encoding': 'br' } })
    assert.equal(decodeBody(br.body, 'br').toString(), 'console.log("second version, longer");\n'.repeat(2000))
  })
})

test('ETag and Last-Modified give 304; a changed validator gives the file', async () => {
  await withProxy({ proxy: up.url, port: 0, serveStatic: [root] }, async (server) => {
    const first = await raw(server, '/hello.txt')
    const byTag = await raw(server, '/hello.txt', { headers: { 'if-none-match': first.headers.etag } })
    assert.equal(byTag.status, 304)
    assert.equal(byTag.body.length, 0)
    assert.equal(byTag.headers.etag, first.headers.etag)
    const strong = first.headers.etag.replace(/^W\//, '')
    assert.equal((await raw(server, '/hello.txt', { headers: { 'if-none-match': `"x", ${strong}` } })).status, 304)
    const byDate = await raw(server, '/hello.txt', { headers: { 'if-modified-since': first.headers['last-modified'] } })
    assert.equal(byDate.status, 304)
    const stale = await raw(server, '/hello.txt', { headers: { 'if-none-match': '"other"' } })
    assert.equal(stale.status, 200)
    assert.equal(stale.body.toString(), 'hello from root')
    const old = await raw(server, '/hello.txt', { headers: { 'if-modified-since': new Date(0).toUTCString() } })
    assert.equal(old.status, 200)
  })
})

test('a single Range gives 206 with Content-Range; an unsatisfiable one 416; several ranges the whole file', async () => {
  await withProxy({ proxy: up.url, port: 0, serveStatic: [root] }, async (server) => {
    const mid = await raw(server, '/app.css', { headers: { range: 'bytes=10-19' } })
    assert.equal(mid.status, 206)
    assert.equal(mid.headers['content-range'], `bytes 10-19/${CSS.length}`)
    assert.equal(mid.headers['content-length'], '10')
    assert.deepEqual(mid.body, CSS.subarray(10, 20))
    const tail = await raw(server, '/app.css', { headers: { range: 'bytes=-5' } })
    assert.deepEqual(tail.body, CSS.subarray(CSS.length - 5))
    const open = await raw(server, '/app.css', { headers: { range: `bytes=${CSS.length - 3}-` } })
    assert.deepEqual(open.body, CSS.subarray(CSS.length - 3))
    const beyond = await raw(server, '/app.css', { headers: { range: `bytes=${CSS.length}-` } })
    assert.equal(beyond.status, 416)
    assert.equal(beyond.headers['content-range'], `bytes */${CSS.length}`)
    const several = await raw(server, '/app.css', { headers: { range: 'bytes=0-1,5-6' } })
    assert.equal(several.status, 200)
    assert.equal(several.body.length, CSS.length)
    const ifRange = await raw(server, '/app.css', { headers: { range: 'bytes=0-1', 'if-range': '"stale"' } })
    assert.equal(ifRange.status, 200)
  })
})

test('a directory serves its index.html with the snippet, the rules and the link rewrite; without its slash it redirects', async () => {
  const options = {
    proxy: up.url,
    port: 0,
    serveStatic: [root],
    snippet: '<script id="snip"></script>',
    rewriteRules: [{ match: /find-me/g, replace: 'found' }],
  }
  fs.writeFileSync(
    path.join(root, 'sub', 'index.html'),
    `<!doctype html><html><head></head><body><a href="${up.url}/x">x</a> find-me</body></html>`,
  )
  await withProxy(options, async (server) => {
    const page = await raw(server, '/sub/', { headers: { accept: ACCEPT_HTML, 'accept-encoding': 'gzip' } })
    assert.equal(page.status, 200)
    assert.equal(page.headers['content-encoding'], 'gzip')
    const html = decodeBody(page.body, 'gzip').toString()
    assert.match(html, /<body><script id="snip"><\/script>/)
    assert.match(html, / found<\/body>/)
    assert.match(html, new RegExp(`href="//127\\.0\\.0\\.1:${server.port}/x"`))
    const redirect = await raw(server, '/sub?a=1')
    assert.equal(redirect.status, 301)
    assert.equal(redirect.headers.location, '/sub/?a=1')
    // Leading slashes are collapsed: no redirect to another host.
    const twice = await raw(server, '//sub')
    assert.equal(twice.headers.location, '/sub/')
    // A directory without an index falls through to the upstream.
    assert.equal((await raw(server, '/empty/')).body.toString(), 'no route /empty/')
  })
})

test('dotfiles are as if absent: .env and .git/config go to the upstream, never read from disk', async () => {
  await withProxy({ proxy: up.url, port: 0, serveStatic: [root] }, async (server) => {
    for (const pathname of ['/.env', '/.git/config', '/%2eenv']) {
      const res = await raw(server, pathname)
      assert.equal(res.status, 404, pathname)
      assert.doesNotMatch(res.body.toString(), new RegExp(SECRET), pathname)
      assert.match(res.body.toString(), /^no route /, `${pathname} went to the upstream`)
    }
  })
})

for (const [name, pathname] of [
  ['`..`', '/../secret.txt'],
  ['`..` after a directory', '/sub/../../secret.txt'],
  ['percent-encoded `%2e%2e`', '/%2e%2e/secret.txt'],
  ['percent-encoded `%2f`', '/..%2fsecret.txt'],
  ['`%2f` and `%2e%2e` after a directory', '/sub%2f%2e%2e%2f%2e%2e%2fsecret.txt'],
  ['a backslash', '/..%5csecret.txt'],
  ['a NUL byte', '/hello.txt%00.png'],
  ['a symlink out of the root', '/escape.txt'],
  // A file that exists nowhere: only the `..` check itself stops it (the canonical-path check has no
  // file to resolve), so it must not reach the target either.
  ['`..` to a file that does not exist', '/../no-such-file-anywhere.txt'],
  ['`%2e%2e` to a file that does not exist', '/sub/%2e%2e/%2e%2e/no-such-file-anywhere.txt'],
]) {
  test(`path escape by ${name} gets 404, is not forwarded and reads nothing outside the root`, async () => {
    await withProxy({ proxy: up.url, port: 0, serveStatic: [root] }, async (server) => {
      const before = up.requests.length
      const res = await raw(server, pathname)
      assert.equal(res.status, 404)
      assert.doesNotMatch(res.body.toString(), new RegExp(SECRET))
      assert.equal(up.requests.length, before, 'not forwarded')
    })
  })
}

test('a symlink inside the root is served; a root given through a symlink serves its files and still refuses escapes', async () => {
  await withProxy({ proxy: up.url, port: 0, serveStatic: [root] }, async (server) => {
    assert.equal((await raw(server, '/inside.txt')).body.toString(), 'hello from root')
  })
  const link = path.join(tmp, 'root-link')
  fs.symlinkSync(root, link)
  await withProxy({ proxy: up.url, port: 0, serveStatic: [link] }, async (server) => {
    assert.equal((await raw(server, '/hello.txt')).body.toString(), 'hello from root')
    assert.equal((await raw(server, '/inside.txt')).body.toString(), 'hello from root')
    const escape = await raw(server, '/escape.txt')
    assert.equal(escape.status, 404)
    assert.doesNotMatch(escape.body.toString(), new RegExp(SECRET))
  })
})

test('{ route, dir }: a route (string or array) mounts dirs (tried in order) at a path boundary; serveStaticOptions for strings', async () => {
  const serveStatic = [{ route: ['/assets', 'static/'], dir: [root, other] }]
  await withProxy({ proxy: up.url, port: 0, serveStatic }, async (server) => {
    assert.equal((await raw(server, '/assets/hello.txt')).body.toString(), 'hello from root')
    assert.equal((await raw(server, '/static/hello.txt')).body.toString(), 'hello from root')
    assert.equal((await raw(server, '/assets/only-other.txt')).body.toString(), 'only in other')
    assert.equal((await raw(server, '/hello.txt')).body.toString(), 'no route /hello.txt')
    assert.equal((await raw(server, '/assetsx/hello.txt')).body.toString(), 'no route /assetsx/hello.txt')
  })
  const relative = path.relative(process.cwd(), other)
  const options = { proxy: up.url, port: 0, serveStatic: [relative, root], serveStaticOptions: { extensions: ['html'], index: false, dotfiles: 'ignore' } }
  await withProxy(options, async (server) => {
    assert.equal((await raw(server, '/hello.txt')).body.toString(), 'hello from other', 'relative to the working directory, first dir first')
    assert.match((await raw(server, '/about')).body.toString(), /about/)
    assert.equal((await raw(server, '/sub/')).body.toString(), 'no route /sub/', 'index: false')
  })
})

test('bad serveStatic options are refused, naming the entry or the key', async () => {
  const start = (extra) => lib().start({ proxy: up.url, port: 0, quiet: true, ...extra })
  await assert.rejects(stopIfStarted(start({ serveStatic: 'public' })), /`serveStatic` must be an array/)
  await assert.rejects(stopIfStarted(start({ serveStatic: [root, 5] })), /serveStatic\[1\] must be a directory/)
  await assert.rejects(stopIfStarted(start({ serveStatic: [{ route: '/a' }] })), /serveStatic\[0\] has no `dir`/)
  await assert.rejects(stopIfStarted(start({ serveStatic: [root], serveStaticOptions: { maxAge: 1000 } })), /serveStaticOptions\.maxAge` is not supported/)
  await assert.rejects(stopIfStarted(start({ serveStatic: [root], serveStaticOptions: { dotfiles: 'allow' } })), /serveStaticOptions\.dotfiles` is not supported: .*'ignore'/)
  await assert.rejects(stopIfStarted(start({ serveStatic: [{ dir: root, options: { setHeaders: () => {} } }] })), /serveStatic\[0\]\.options\.setHeaders/)
})

test('a large file streams through whole and unchanged', async () => {
  const big = Buffer.alloc(6 * 1024 * 1024)
  for (let i = 0; i < big.length; i += 4) big.writeUInt32LE((i * 2654435761) >>> 0, i)
  fs.writeFileSync(path.join(root, 'big.bin'), big)
  await withProxy({ proxy: up.url, port: 0, serveStatic: [root] }, async (server) => {
    const res = await raw(server, '/big.bin', { headers: { 'accept-encoding': 'gzip' } })
    assert.equal(res.headers['content-type'], 'application/octet-stream')
    assert.equal(res.headers['content-length'], String(big.length))
    assert.ok(res.body.equals(big))
  })
})
