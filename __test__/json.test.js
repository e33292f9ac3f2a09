'use strict'
// rewriteJson (on by default): JSON from the target keeps its data, and only the target's exact origin,
// written plainly, slash-escaped (`http:\/\/...`, WordPress REST) or percent-encoded, becomes the proxy's
// in the same form. Checked at a real upstream: WordPress-shaped REST answers (gzip'd too), the editor's
// round trip (GET rewritten, PUT back reversed: the site stores its own origin), what is left alone,
// `/.well-known/` documents, the switch, and `rewriteTextTypes` still running every rule.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const zlib = require('node:zlib')
const { request, startUpstream, withProxy, stopIfStarted } = require('./helpers')

const slashed = (text) => text.replace(/\//g, '\\/')

/** WordPress's `/wp-json/wp/v2/posts` shape: PHP's json_encode escapes every slash. */
function restPosts(origin) {
  return slashed(
    JSON.stringify([
      {
        id: 1,
        link: `${origin}/hello-world/`,
        guid: { rendered: `${origin}/?p=1` },
        content: { rendered: `<p><img src="${origin}/wp-content/uploads/a.png"></p>` },
        _links: { self: [{ href: `${origin}/wp-json/wp/v2/posts/1` }] },
        login: `${origin}/wp-login.php?redirect_to=${encodeURIComponent(`${origin}/wp-admin/`)}`,
      },
    ]),
  )
}

async function restSite() {
  const saved = []
  const upstream = await startUpstream({
    '/wp-json/wp/v2/posts': (req, res) => {
      const body = restPosts(upstream.url)
      res.setHeader('content-type', 'application/json; charset=UTF-8')
      if (/gzip/.test(req.headers['accept-encoding'] || '')) {
        res.setHeader('content-encoding', 'gzip')
        res.end(zlib.gzipSync(body))
      } else {
        res.end(body)
      }
    },
    '/wp-json/wp/v2/posts/1': (req, res) => {
      const chunks = []
      req.on('data', (c) => chunks.push(c))
      req.on('end', () => {
        saved.push(Buffer.concat(chunks).toString())
        res.setHeader('content-type', 'application/json')
        res.end('{"saved":true}')
      })
    },
    '/.well-known/openid-configuration': (req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ issuer: upstream.url, authorization_endpoint: `${upstream.url}/authorize` }))
    },
    '/loose': (req, res) => {
      res.setHeader('content-type', 'application/problem+json')
      const host = new URL(upstream.url).host
      // Not the origin: another port, a longer host, another scheme, no scheme, a userinfo trick.
      res.end(JSON.stringify([`${upstream.url}0/`, `${upstream.url}.cdn.test/`, `https://${host}/`, `//${host}/x`, host, `${upstream.url}@x.test`]))
    },
  })
  return { upstream, saved }
}

test("REST JSON gets the target's exact origin in every form turned into the proxy's, gzip'd or not", async () => {
  const { upstream } = await restSite()
  try {
    await withProxy({ proxy: upstream.url, port: 0 }, async (server) => {
      const want = restPosts(server.url)
      const plain = await request(`${server.url}/wp-json/wp/v2/posts`, { headers: { accept: 'application/json' } })
      assert.equal(plain.status, 200)
      assert.equal(plain.body.toString(), want)
      assert.ok(!plain.body.toString().includes(new URL(upstream.url).host), 'no trace of the origin is left')

      const gz = await request(`${server.url}/wp-json/wp/v2/posts`, { headers: { accept: '*/*', 'accept-encoding': 'gzip' } })
      assert.equal(gz.headers['content-encoding'], 'gzip', 'compression is kept')
      assert.equal(zlib.gunzipSync(gz.body).toString(), want)
      // The request's Host decides the origin written: a page reached at localhost gets localhost.
      const port = new URL(server.url).port
      const byName = await request(`${server.url}/wp-json/wp/v2/posts`, { headers: { host: `localhost:${port}` } })
      assert.equal(byName.body.toString(), restPosts(`http://localhost:${port}`))
    })
  } finally {
    await upstream.close()
  }
})

test('the editor round trip: what comes back rewritten is saved with the origin again', async () => {
  const { upstream, saved } = await restSite()
  try {
    await withProxy({ proxy: upstream.url, port: 0 }, async (server) => {
      const got = await request(`${server.url}/wp-json/wp/v2/posts`)
      const post = JSON.parse(got.body.toString())[0]
      assert.ok(post.content.rendered.includes(server.url), 'the editor sees images through the proxy')
      const body = slashed(JSON.stringify({ content: post.content.rendered, link: post.link }))
      const put = await request(`${server.url}/wp-json/wp/v2/posts/1`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body })
      assert.equal(put.status, 200)
      const original = JSON.parse(restPosts(upstream.url))[0]
      assert.equal(saved.at(-1), slashed(JSON.stringify({ content: original.content.rendered, link: original.link })))
    })
  } finally {
    await upstream.close()
  }
})

test('what is not the exact origin, /.well-known/ documents, and rewriteJson: false stay byte for byte', async () => {
  const { upstream } = await restSite()
  try {
    await withProxy({ proxy: upstream.url, port: 0 }, async (server) => {
      const loose = await request(`${server.url}/loose`)
      const host = new URL(upstream.url).host
      assert.equal(
        loose.body.toString(),
        JSON.stringify([`${upstream.url}0/`, `${upstream.url}.cdn.test/`, `https://${host}/`, `//${host}/x`, host, `${upstream.url}@x.test`]),
      )
      const oidc = await request(`${server.url}/.well-known/openid-configuration`)
      assert.equal(JSON.parse(oidc.body.toString()).issuer, upstream.url, 'an issuer stays the issuer')
    })
    await withProxy({ proxy: upstream.url, port: 0, rewriteJson: false }, async (server) => {
      const res = await request(`${server.url}/wp-json/wp/v2/posts`)
      assert.equal(res.body.toString(), restPosts(upstream.url))
    })
  } finally {
    await upstream.close()
  }
})

test('with rewriteTextTypes, JSON goes through every rule and Browsersync\'s link rewrite, as before', async () => {
  const { upstream } = await restSite()
  try {
    const rewriteRules = [{ match: /hello-world/g, replace: 'bonjour' }]
    await withProxy({ proxy: upstream.url, port: 0, rewriteTextTypes: true, rewriteRules }, async (server) => {
      const res = await request(`${server.url}/wp-json/wp/v2/posts`)
      const text = res.body.toString()
      assert.ok(text.includes('bonjour'), 'the user rule ran')
      // Browsersync's link rewrite writes protocol-relative links.
      assert.ok(text.includes(slashed(`//${new URL(server.url).host}/bonjour/`)), text)
    })
    // Without it, user rules stay on pages: JSON gets its origins only.
    await withProxy({ proxy: upstream.url, port: 0, rewriteRules }, async (server) => {
      const res = await request(`${server.url}/wp-json/wp/v2/posts`)
      assert.equal(res.body.toString(), restPosts(server.url))
    })
  } finally {
    await upstream.close()
  }
})

test('rewriteJson must be a boolean, named in the error', async () => {
  const { lib } = require('./helpers')
  await assert.rejects(stopIfStarted(lib().start({ proxy: 'http://127.0.0.1:9', port: 0, rewriteJson: 'yes' })), /rewriteJson/)
})
