'use strict'
// rewriteRequestBodies (on by default): the proxy's own origin, which the link rewrite put into pages,
// goes back to the target's in what the browser sends, so that saving a page (a CMS editor posting its
// content) does not write the proxy's URLs into the site. Checked byte for byte at a real upstream:
// form POST, JSON PUT, a gzip'd body, a multipart upload (its file part untouched), the query string,
// a long body streamed, and what is left alone.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const zlib = require('node:zlib')
const { request, withProxy } = require('./helpers')

/** An upstream that keeps what it was sent (any path): method, URL, headers and the raw body bytes. */
async function echoSite() {
  const got = []
  const server = http.createServer((req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      got.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks) })
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end('ok')
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const site = {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  }
  return { site, got }
}

test('form, JSON, gzip\'d JSON and multipart bodies, and the query, carry the target\'s origin upstream, byte for byte', async () => {
  const { site, got } = await echoSite()
  try {
    await withProxy({ proxy: site.url, port: 0, quiet: true }, async (server) => {
      const local = new URL(server.url).host
      const target = site.url // http://127.0.0.1:PORT
      const enc = encodeURIComponent
      const send = async (method, path, headers, body) => {
        const res = await request(`${server.url}${path}`, { method, headers, body })
        assert.equal(res.status, 200, res.body.toString())
        return got.at(-1)
      }

      // A form POST: plain and percent-encoded forms in the fields.
      const form = `content=${enc(`<a href="http://${local}/x">x</a>`)}&redirect_to=${enc(`http://${local}/wp-admin/`)}`
      let seen = await send('POST', '/save', { 'content-type': 'application/x-www-form-urlencoded' }, form)
      const formWanted = `content=${enc(`<a href="${target}/x">x</a>`)}&redirect_to=${enc(`${target}/wp-admin/`)}`
      assert.equal(seen.body.toString(), formWanted)
      assert.equal(seen.headers['content-length'], String(Buffer.byteLength(formWanted)), 'its new, exact length')

      // A JSON PUT as the block editor sends it: slash-escaped and protocol-relative forms.
      const json = JSON.stringify({ content: `<img src="http://${local}/a.png">`, link: `//${local}/p` }).replace(/\//g, '\\/')
      seen = await send('PUT', '/wp-json/wp/v2/posts/1', { 'content-type': 'application/json' }, json)
      const jsonWanted = JSON.stringify({ content: `<img src="${target}/a.png">`, link: `${target}/p` }).replace(/\//g, '\\/')
      assert.equal(seen.body.toString(), jsonWanted)

      // The same JSON gzip'd: decoded, rewritten, gzip'd again.
      seen = await send('POST', '/gz', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, zlib.gzipSync(json))
      assert.equal(seen.headers['content-encoding'], 'gzip')
      assert.equal(zlib.gunzipSync(seen.body).toString(), jsonWanted)
      assert.equal(seen.headers['content-length'], String(seen.body.length))

      // A multipart upload: the text field is rewritten, the file's bytes are not (even where they spell the origin).
      const file = Buffer.concat([Buffer.from([0, 255, 1]), Buffer.from(`http://${local}/inside-the-file`), Buffer.from([254])])
      const part = (head, content) => Buffer.concat([Buffer.from(`--B0undary\r\n${head}\r\n\r\n`), Buffer.from(content), Buffer.from('\r\n')])
      const multipart = Buffer.concat([
        part('Content-Disposition: form-data; name="content"', `see http://${local}/page`),
        part('Content-Disposition: form-data; name="file"; filename="a.bin"\r\nContent-Type: application/octet-stream', file),
        Buffer.from('--B0undary--\r\n'),
      ])
      seen = await send('POST', '/upload', { 'content-type': 'multipart/form-data; boundary=B0undary' }, multipart)
      const multipartWanted = Buffer.concat([
        part('Content-Disposition: form-data; name="content"', `see ${target}/page`),
        part('Content-Disposition: form-data; name="file"; filename="a.bin"\r\nContent-Type: application/octet-stream', file),
        Buffer.from('--B0undary--\r\n'),
      ])
      assert.deepEqual(seen.body, multipartWanted)

      // The query string: plain and encoded.
      seen = await send('GET', `/search?redirect_to=${enc(`http://${local}/wp-admin/`)}&u=http://${local}/x`, {})
      assert.equal(seen.url, `/search?redirect_to=${enc(`${target}/wp-admin/`)}&u=${target}/x`)

      // Left alone: other origins, other ports, and bodies that are not text.
      const other = `u=${enc('http://example.test/')}&v=http://${local}0/`
      seen = await send('POST', '/other', { 'content-type': 'application/x-www-form-urlencoded' }, other)
      assert.equal(seen.body.toString(), other)
      const png = Buffer.concat([Buffer.from([0x89, 0x50]), Buffer.from(`http://${local}/`)])
      seen = await send('POST', '/image', { 'content-type': 'image/png' }, png)
      assert.deepEqual(seen.body, png)
    })
  } finally {
    await site.close()
  }
})

test('a long text body (2 MiB, chunked) is rewritten as it streams; rewriteRequestBodies: false sends bodies and queries as they come', async () => {
  const { site, got } = await echoSite()
  try {
    await withProxy({ proxy: site.url, port: 0, quiet: true }, async (server) => {
      const local = new URL(server.url).host
      const line = `{"src":"http://${local}/img.png"}\n`
      const count = Math.ceil((2 << 20) / line.length)
      const body = line.repeat(count)
      const res = await request(`${server.url}/bulk`, { method: 'POST', headers: { 'content-type': 'application/x-ndjson+json' }, body })
      assert.equal(res.status, 200)
      const seen = got.at(-1)
      assert.equal(seen.headers['transfer-encoding'], 'chunked', 'its length changed: sent chunked')
      assert.equal(seen.headers['content-length'], undefined)
      assert.equal(seen.body.toString(), `{"src":"${site.url}/img.png"}\n`.repeat(count))
    })
    await withProxy({ proxy: site.url, port: 0, quiet: true, rewriteRequestBodies: false }, async (server) => {
      const local = new URL(server.url).host
      const form = `u=http://${local}/x`
      await request(`${server.url}/save?r=http://${local}/`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form })
      const seen = got.at(-1)
      assert.equal(seen.body.toString(), form)
      assert.equal(seen.url, `/save?r=http://${local}/`)
    })
  } finally {
    await site.close()
  }
})
