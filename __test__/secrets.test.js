'use strict'
// Issue 49 item 1: one redaction policy for everything the proxy shows or writes. One proxy, in a child
// process (so its stderr is the proxy's alone), with `record`, `inspector`, `onRequest`, `logRequests` and
// `logFormat: 'json'`, gets every secret shape the policy names, from the client and from the target; then
// every output is searched for a 10-character piece of every secret: the request log, the onRequest records
// (forwarded over IPC), the inspector's snapshot and event stream, the cassette, toHar(cassette), a 502 page,
// and a second proxy's replay miss pages (and its own log, records and inspector). Values that are not
// secrets must stay visible in the same outputs, so that masking everything does not pass.
//
// The same file is the child: with DEVPROXY_SECRETS_CHILD set it runs the proxy, driven over IPC:
//   {type:'start', options} -> {type:'started', port, url}; every onRequest record -> {type:'record', record}
//   {type:'recording'}      -> {type:'recording', recording}   (server.recording())
//   {type:'stop'}           -> {type:'stopped'}
// SECRETS_KEEP=1 keeps the temporary directory: the cassette and every output as searched (<output>.txt).

if (process.env.DEVPROXY_SECRETS_CHILD) {
  const { start } = require(require('node:path').resolve(__dirname, '..'))
  let server
  process.on('message', async (m) => {
    try {
      if (m.type === 'start') {
        server = await start({ ...m.options, onRequest: (record) => process.send({ type: 'record', record }) })
        process.send({ type: 'started', port: server.port, url: server.url })
      } else if (m.type === 'recording') {
        process.send({ type: 'recording', recording: server.recording() })
      } else if (m.type === 'stop') {
        await server.stop()
        process.send({ type: 'stopped' })
      }
    } catch (err) {
      process.send({ type: 'error', message: String(err && err.stack) })
    }
  })
  return
}

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const http = require('node:http')
const WebSocket = require('ws')
const { lib, startUpstream, request, spawnNode, until, withTimeout, mulberry32 } = require('./helpers')

const WAIT = 15000

// ---------------------------------------------------------------------------------------------------
// The secrets: each a distinct, random-looking value (seeded, so a run can be repeated), at least 20
// characters with digits; `piece` is the 10 characters searched for (from the random part, never a prefix
// such as `sk-ant-`).

const rnd = mulberry32(0x49_0001)
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
const B64URL = ALNUM + '-_'
const DIGITS = '0123456789'
const usedPieces = new Set()

/** `n` random characters whose first 10 hold a letter and a digit, and whose first 10 were never used. */
function rand(n, alphabet = ALNUM) {
  for (;;) {
    let s = ''
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(rnd() * alphabet.length)]
    const piece = s.slice(0, 10)
    if (/\d/.test(piece) && /[A-Za-z]/.test(piece) && /^[A-Za-z0-9]/.test(piece) && !usedPieces.has(piece)) {
      usedPieces.add(piece)
      return s
    }
  }
}
function digits(n) {
  let s = ''
  for (let i = 0; i < n; i++) s += DIGITS[Math.floor(rnd() * 10)]
  return s
}

/** Every secret sent anywhere: { label, value, piece }. */
const SECRETS = []
function secret(label, prefix, body, suffix = '') {
  const value = prefix + body + suffix
  assert.ok(value.length >= 20 && /\d/.test(value), `${label}: a secret of 20+ characters with digits`)
  const s = { label, value, piece: body.slice(0, 10) }
  SECRETS.push(s)
  return s.value
}
const generic = (label) => secret(label, '', rand(24))

// Key-shaped values (the policy's "value shapes anywhere"), one maker per shape.
const SHAPES = {
  'OpenAI sk-': (l) => secret(l, 'sk-', rand(48)),
  'OpenAI sk-proj-': (l) => secret(l, 'sk-proj-', rand(64)),
  'Anthropic sk-ant-': (l) => secret(l, 'sk-ant-api03-', rand(80, B64URL), 'AA'),
  'AWS AKIA': (l) => secret(l, 'AKIA', rand(16, UPPER)),
  'AWS ASIA': (l) => secret(l, 'ASIA', rand(16, UPPER)),
  'Bearer token': (l) => secret(l, 'Bearer ', rand(40)),
  JWT: (l) => {
    const payload = Buffer.from(JSON.stringify({ sub: `user-${digits(6)}`, iat: 1764500000 })).toString('base64url')
    return secret(l, `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.${payload}.`, rand(43, B64URL))
  },
  'GitHub ghp_': (l) => secret(l, 'ghp_', rand(36)),
  'GitHub gho_': (l) => secret(l, 'gho_', rand(36)),
  'GitHub ghu_': (l) => secret(l, 'ghu_', rand(36)),
  'GitHub ghs_': (l) => secret(l, 'ghs_', rand(36)),
  'GitHub ghr_': (l) => secret(l, 'ghr_', rand(36)),
  'GitHub github_pat_': (l) => secret(l, 'github_pat_', rand(22), '_' + rand(59)),
  'Google AIza': (l) => secret(l, 'AIza', rand(35, B64URL)),
  'Slack xoxb-': (l) => secret(l, `xoxb-${digits(12)}-${digits(13)}-`, rand(24)),
  'Slack xoxp-': (l) => secret(l, `xoxp-${digits(12)}-${digits(13)}-`, rand(32)),
  'Stripe sk_live_': (l) => secret(l, 'sk_live_', rand(24)),
  'Stripe rk_live_': (l) => secret(l, 'rk_live_', rand(24)),
  'GitLab glpat-': (l) => secret(l, 'glpat-', rand(20, B64URL)),
  'npm npm_': (l) => secret(l, 'npm_', rand(36)),
}
const slug = (shape) => shape.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')

// Request headers by each secret name (value redacted by name, whatever it looks like).
const SECRET_REQUEST_HEADERS = [
  ['authorization', (l) => 'Token ' + generic(l)],
  ['proxy-authorization', (l) => 'Basic ' + generic(l)],
  ['cookie', (l) => 'sid=' + generic(l)],
  ['set-cookie', (l) => 'sid=' + generic(l)],
  ['x-api-key'],
  ['api-key'],
  ['x-goog-api-key'],
  ['x-csrf-token'],
  ['X-CSRFToken'],
  ['X-Auth'],
  ['X-Session-Id'],
  ['x-upload-token'], // contains "token"
  ['x-client-secret'], // "secret"
  ['x-db-password'], // "password"
  ['x-user-session'], // "session"
  ['x-csrf-nonce'], // "csrf"
  ['x-xsrf-guard'], // "xsrf"
  ['x-oauth-grant'], // "auth"
  ['x-partner-apikey'], // "apikey"
  ['x-partner-api-key'], // "api-key"
]
const requestHeaders = {}
for (const [name, make] of SECRET_REQUEST_HEADERS) {
  const label = `request header ${name}`
  requestHeaders[name] = make ? make(label) : generic(label)
}

// Query parameters by each secret name.
const SECRET_PARAMS = ['key', 'api_key', 'apikey', 'token', 'access_token', 'refresh_token', 'id_token', 'client_secret', 'password', 'passwd', 'secret', 'sig', 'signature', 'X-Amz-Signature', 'X-Amz-Security-Token', 'X-Amz-Credential', 'upload_token', 'my_secret', 'db_password', 'url_signature']
const params = SECRET_PARAMS.map((name) => [name, generic(`query parameter ${name}`)])
params.push(['code', secret('query parameter code (OAuth, 40 characters)', '', rand(40))])

// Key shapes in neutral places: request headers, query parameters, response headers, a JSON request body
// (the recorder refuses that exchange) and an HTML response body (refused too; the inspector's preview).
const shapeHeaders = {}
const shapeParams = []
const shapeResponseHeaders = {}
const shapeBody = {}
const shapePage = []
for (const [shape, make] of Object.entries(SHAPES)) {
  shapeHeaders[`x-note-${slug(shape)}`] = make(`${shape} in a request header (x-note-${slug(shape)})`)
  shapeParams.push([`note_${slug(shape).replace(/-/g, '_')}`, make(`${shape} in a query parameter`)])
  shapeResponseHeaders[`x-echo-note-${slug(shape)}`] = make(`${shape} in a response header (x-echo-note-${slug(shape)})`)
  shapeBody[slug(shape)] = make(`${shape} in a JSON request body`)
  shapePage.push(make(`${shape} in an HTML response body`))
}
const pathKey = SHAPES['GitHub ghp_']('GitHub ghp_ in a URL path (/v1/keys/<key>)')
// A key that the inspector's 1 KiB body preview cuts after 16 of its 36 characters: what is left is no
// longer key-shaped, and must not show either.
const edgeKey = SHAPES['GitHub ghp_']('GitHub ghp_ cut by the 1 KiB body preview (16 of 36 characters kept)')
const edgeHead = '<!doctype html><html><body><script>var pad="'
const edgePage = edgeHead + 'p'.repeat(1024 - 16 - 'ghp_'.length - '";var k="'.length - edgeHead.length) + '";var k="' + edgeKey + '"</script></body></html>'
assert.equal(edgePage.indexOf(edgeKey) + 'ghp_'.length + 16, 1024)

// Secret headers the target answers with.
const responseSecretHeaders = {
  'set-cookie': `sessionid=${generic('response header set-cookie')}; Path=/; HttpOnly`,
  'x-auth-token': generic('response header x-auth-token'),
  'x-session-id': generic('response header x-session-id'),
  'x-refresh-token': generic('response header x-refresh-token'),
  'x-api-key': generic('response header x-api-key'),
}
const loginCookie = `sessionid=${generic('response header set-cookie (after the login form)')}; Path=/; HttpOnly`

// URLs in response headers (Location of a 302; Refresh, Link and Content-Location of a 200).
const location = {
  token: generic('Location (302) ?token='),
  access_token: generic('Location (302) ?access_token='),
  code: secret('Location (302) ?code= (OAuth, 43 characters)', '', rand(43, B64URL)),
}
const refresh = { sig: generic('Refresh ?sig='), amz: generic('Refresh ?X-Amz-Signature=') }
const link = { sig: generic('Link ?sig='), amz: generic('Link ?X-Amz-Signature=') }
const contentLocation = { sig: generic('Content-Location ?sig='), amz: generic('Content-Location ?X-Amz-Signature=') }
const referer = { token: generic('Referer (request) ?token='), access_token: generic('Referer (request) ?access_token=') }

// Bodies: a login form (urlencoded) and an OAuth token request (JSON).
const form = { password: generic('form body password='), csrfmiddlewaretoken: generic('form body csrfmiddlewaretoken= (Django)') }
const oauth = {
  client_secret: generic('JSON body client_secret'),
  refresh_token: generic('JSON body refresh_token'),
  password: generic('JSON body password'),
}

// WebSocket: Kubernetes' bearer subprotocol, and a token in the upgrade's query.
const k8sToken = secret('Sec-WebSocket-Protocol base64url.bearer.authorization.k8s.io.<token>', '', Buffer.from(rand(32)).toString('base64url').replace(/^[^A-Za-z0-9]+/, ''))
const wsQueryToken = generic('WebSocket upgrade ?token=')

// The 502 page, and the replay misses.
const down = { token: generic('502 request ?token='), password: generic('502 request ?password='), authorization: SHAPES['Bearer token']('502 request Authorization: Bearer') }
const miss = {
  token: generic('replay miss ?token='),
  password: generic('replay miss ?password='),
  authorization: SHAPES['Bearer token']('replay miss Authorization: Bearer'),
  apiKey: generic('replay miss x-api-key'),
  sig: generic('replay miss (no nearest) ?sig='),
  amz: generic('replay miss (no nearest) ?X-Amz-Signature='),
  clientSecret: generic('replay miss JSON body client_secret'),
  refreshToken: generic('replay miss JSON body refresh_token'),
  formPassword: generic('replay miss form body password='),
}

// Values that are not secrets: each must stay visible in the outputs listed.
const PROXY_A = ['log', 'onRequest', 'inspector', 'events']
const VISIBLE = [
  { what: 'query parameter q=hello-visible-q1', text: 'q=hello-visible-q1', in: [...PROXY_A, 'cassette', 'har'] },
  { what: 'query parameter page=2 beside the secrets', text: 'page=2', in: [...PROXY_A, 'cassette', 'har'] },
  { what: 'header x-request-id', text: 'req-visible-4821', in: [...PROXY_A, 'cassette', 'har'] },
  { what: 'header x-authority-hint ("authority" is not "auth")', text: 'authority-visible-77', in: [...PROXY_A, 'cassette', 'har'] },
  { what: 'a short OAuth-unlike code=US', text: 'code=US', in: [...PROXY_A, 'cassette', 'har'] },
  { what: 'Location ?state=state-visible-93 beside the secrets', text: 'state=state-visible-93', in: [...PROXY_A, 'cassette', 'har'] },
  { what: 'Refresh ?lang=en-visible-3 beside the secrets', text: 'lang=en-visible-3', in: [...PROXY_A, 'cassette', 'har'] },
  { what: 'Link ?v=link-visible-5 beside the secrets', text: 'v=link-visible-5', in: [...PROXY_A, 'cassette', 'har'] },
  { what: 'Content-Location ?lang=cl-visible-6 beside the secrets', text: 'lang=cl-visible-6', in: [...PROXY_A, 'cassette', 'har'] },
  { what: 'Referer ?q=referer-visible-8 beside the secrets', text: 'q=referer-visible-8', in: [...PROXY_A, 'cassette', 'har'] },
  { what: 'form body username=alice-visible', text: 'username=alice-visible', in: ['cassette', 'har'] },
  { what: 'JSON body client_id', text: 'client-visible-55', in: ['cassette', 'har'] },
  { what: 'WebSocket message', text: 'ping-visible-ws', in: ['cassette'] },
  { what: 'WebSocket upgrade ?q=ws-visible-9', text: 'q=ws-visible-9', in: [...PROXY_A, 'cassette'] },
  { what: '502 request ?q=hello-502-visible', text: 'q=hello-502-visible', in: ['page502', 'log', 'onRequest', 'inspector', 'events'] },
  { what: 'replay miss ?q=miss-visible-q', text: 'miss-visible-q', in: ['replayLog', 'replayOnRequest', 'replayInspector'] },
  { what: 'replay miss: the differing JSON field scope', text: 'write-visible', in: ['replayPages'] },
  { what: 'replay miss (no nearest): its path', text: '/nowhere-visible', in: ['replayPages', 'replayLog', 'replayOnRequest', 'replayInspector'] },
]

const OUTPUTS = {
  log: "proxy A's request log (stderr, logFormat json)",
  onRequest: "proxy A's onRequest records",
  inspector: "proxy A's inspector snapshot (api/exchanges)",
  events: "proxy A's inspector event stream (api/events)",
  cassette: 'the cassette',
  har: 'toHar(cassette)',
  recording: "proxy A's server.recording() (lastRefusal)",
  page502: 'the 502 page (target down)',
  replayPages: 'the replay miss pages (404 JSON)',
  replayLog: "the replay proxy's request log (stderr, logFormat text)",
  replayOnRequest: "the replay proxy's onRequest records",
  replayInspector: "the replay proxy's inspector snapshot",
}

// ---------------------------------------------------------------------------------------------------

const seen = {} // output name -> text
const notes = [] // what the scenario observed, for the diagnostics
let upstream
let cassetteLines = []
let recordingA
let replayLoadError = null
let dir

/** A child proxy; `records` collects its onRequest records. */
async function childProxy(options) {
  const child = spawnNode(__filename, [], { DEVPROXY_SECRETS_CHILD: '1' })
  const records = []
  child.child.on('message', (m) => {
    if (m && m.type === 'record') records.push(m.record)
  })
  child.send({ type: 'start', options })
  try {
    const { url, port } = await child.next('started', 30000)
    return { child, records, url, port }
  } catch (err) {
    await child.kill()
    throw err
  }
}

/** Everything an HTTP answer shows: status, headers, body. */
const answerText = (res) => `${res.status}\n${JSON.stringify(res.rawHeaders)}\n${res.body.toString('utf8')}`

/** Opens an event stream and keeps its raw text. */
function collectEvents(url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (d) => {
        text += d
      })
      res.on('error', () => {})
      resolve({ status: res.statusCode, text: () => text, close: () => req.destroy() })
    })
    req.on('error', reject)
  })
}

before(async () => {
  const started = Date.now()
  const { WebSocketServer } = require('ws')
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (protocols) => (protocols.has('v4.channel.k8s.io') ? 'v4.channel.k8s.io' : false) })
  wss.on('connection', (ws) => ws.on('message', (data) => ws.send('echo:' + data)))
  upstream = await startUpstream(
    {
      '/api/data': (req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', ...responseSecretHeaders, 'x-served-by': 'served-visible' })
        res.end('{"items":[1,2,3]}')
      },
      '/api/geo': (req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{"country":"US"}')
      },
      '/api/shapes': (req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', ...shapeResponseHeaders })
        res.end('{"ok":true}')
      },
      '/oauth/authorize': (req, res) => {
        const q = `token=${location.token}&access_token=${location.access_token}&code=${location.code}&state=state-visible-93`
        res.writeHead(302, { location: `${upstream.url}/callback?${q}` })
        res.end()
      },
      '/doc': (req, res) => {
        res.writeHead(200, {
          'content-type': 'text/plain',
          refresh: `5; url=/next?sig=${refresh.sig}&X-Amz-Signature=${refresh.amz}&lang=en-visible-3`,
          link: `</style.css?sig=${link.sig}&X-Amz-Signature=${link.amz}&v=link-visible-5>; rel=preload; as=style`,
          'content-location': `/doc.en?sig=${contentLocation.sig}&X-Amz-Signature=${contentLocation.amz}&lang=cl-visible-6`,
        })
        res.end('the document')
      },
      '/login': (req, res) => {
        // The echo of the form: which fields came, and the value of the one that is not a secret.
        let body = ''
        req.on('data', (d) => {
          body += d
        })
        req.on('end', () => {
          const fields = new URLSearchParams(body)
          res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': loginCookie })
          res.end(JSON.stringify({ received: [...fields.keys()], username: fields.get('username') }))
        })
      },
      '/oauth/token': (req, res) => {
        req.resume()
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'application/json' })
          res.end('{"ok":true,"token_type":"bearer","expires_in":3600}')
        })
      },
      '/api/notes': (req, res) => {
        req.resume()
        req.on('end', () => {
          res.writeHead(201, { 'content-type': 'application/json' })
          res.end('{"saved":true}')
        })
      },
      '/edge.html': (req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end(edgePage)
      },
      // Two pages, so that every key lies within the first KiB (the inspector's preview).
      '/config.html': (req, res) => {
        const half = req.url.endsWith('?part=2') ? shapePage.slice(9) : shapePage.slice(0, 9)
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end(`<!doctype html><html><body><script>window.KEYS=${JSON.stringify(half)}</script><p>config</p></body></html>`)
      },
    },
    { onUpgrade: (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)) },
  )

  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-secrets-'))
  const cassette = path.join(dir, 'secrets.jsonl')
  const A = await childProxy({ proxy: upstream.url, port: 0, record: { path: cassette }, inspector: true, logRequests: true, logFormat: 'json' })
  let B
  try {
    const events = await collectEvents(`${A.url}/__devproxy/api/events`)
    assert.equal(events.status, 200, 'the inspector event stream opens')
    const sent = [] // paths of the exchanges sent through proxy A
    const send = async (pathAndQuery, opts = {}) => {
      sent.push(pathAndQuery.split('?')[0])
      return withTimeout(request(A.url + pathAndQuery, opts), WAIT, pathAndQuery.split('?')[0])
    }

    // 1. Every secret header name and every secret query parameter, beside values that are not secrets.
    const q1 = [...params.map(([n, v]) => `${n}=${v}`), 'q=hello-visible-q1', 'page=2'].join('&')
    const r1 = await send(`/api/data?${q1}`, { headers: { ...requestHeaders, 'x-request-id': 'req-visible-4821', 'x-authority-hint': 'authority-visible-77' } })
    assert.equal(r1.status, 200)
    // 2. A short `code` is not an OAuth code.
    assert.equal((await send('/api/geo?code=US&q=geo-visible')).status, 200)
    // 3. Key shapes in neutral headers and parameters; the target answers with key shapes in neutral headers.
    const q3 = shapeParams.map(([n, v]) => `${n}=${encodeURIComponent(v)}`).join('&')
    assert.equal((await send(`/api/shapes?${q3}`, { headers: shapeHeaders })).status, 200)
    // 4. A key shape in the path.
    await send(`/v1/keys/${pathKey}`)
    // 5. A 302 whose Location carries secrets.
    const r5 = await send('/oauth/authorize?client_id=client-visible-55&response_type=code')
    assert.equal(r5.status, 302)
    notes.push(`the client got Location: ${r5.headers.location.slice(0, 60)}...`)
    // 6. Refresh, Link, Content-Location; a Referer with secrets on the way in.
    const r6 = await send('/doc', { headers: { referer: `${A.url}/prev?token=${referer.token}&access_token=${referer.access_token}&q=referer-visible-8` } })
    assert.equal(r6.status, 200)
    // 7. A login form.
    const formBody = `username=alice-visible&password=${form.password}&csrfmiddlewaretoken=${form.csrfmiddlewaretoken}&next=%2Fhome`
    const r7 = await send('/login', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: formBody })
    assert.equal(r7.status, 200)
    // 8. An OAuth token request in JSON.
    const tokenBody = JSON.stringify({ grant_type: 'refresh_token', client_id: 'client-visible-55', ...oauth, scope: 'read' })
    assert.equal((await send('/oauth/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: tokenBody })).status, 200)
    // 9. Key shapes in a JSON request body: the recorder refuses the exchange.
    const notesBody = JSON.stringify({ title: 'notes-visible', notes: shapeBody })
    assert.equal((await send('/api/notes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: notesBody })).status, 201)
    // 10. Key shapes in an HTML page (rewritten: the inspector keeps a preview while its stream is open).
    assert.equal((await send('/config.html?part=1', { headers: { accept: 'text/html' } })).status, 200)
    assert.equal((await send('/config.html?part=2', { headers: { accept: 'text/html' } })).status, 200)
    assert.equal((await send('/edge.html', { headers: { accept: 'text/html' } })).status, 200)
    // 11. A WebSocket with Kubernetes' bearer subprotocol.
    sent.push('/ws')
    const wsUrl = `${A.url.replace(/^http/, 'ws')}/ws?token=${wsQueryToken}&q=ws-visible-9`
    const ws = new WebSocket(wsUrl, ['v4.channel.k8s.io', `base64url.bearer.authorization.k8s.io.${k8sToken}`])
    const echoed = await withTimeout(
      new Promise((resolve, reject) => {
        ws.on('open', () => ws.send('ping-visible-ws'))
        ws.on('message', (d) => resolve(String(d)))
        ws.on('error', reject)
        ws.on('unexpected-response', (req, res) => reject(new Error(`upgrade answered ${res.statusCode}`)))
      }),
      WAIT,
      'the WebSocket echo',
    )
    assert.equal(echoed, 'echo:ping-visible-ws')
    notes.push(`WebSocket protocol chosen: ${ws.protocol}`)
    await withTimeout(new Promise((resolve) => { ws.on('close', resolve); ws.close(1000) }), WAIT, 'the WebSocket close')

    // Every exchange recorded (or refused) and reported before the target goes.
    const httpSent = sent.length - 1
    await until(async () => {
      A.child.send({ type: 'recording' })
      recordingA = (await A.child.next('recording')).recording
      return recordingA.written + recordingA.refused >= httpSent + 1
    }, WAIT, 'every exchange written or refused by the recorder', 100).catch((err) => notes.push(`recorder: ${err.message} (${JSON.stringify(recordingA)})`))
    await until(() => sent.every((p) => A.records.some((r) => r.url.startsWith(p))), WAIT, 'an onRequest record for every exchange', 50).catch((err) =>
      notes.push(`onRequest: ${err.message}; missing ${sent.filter((p) => !A.records.some((r) => r.url.startsWith(p))).join(', ')}`),
    )

    // 12. The target down: a 502 page for a URL with secrets.
    await upstream.close()
    const r502 = await withTimeout(
      request(`${A.url}/x?token=${down.token}&password=${down.password}&q=hello-502-visible`, { headers: { authorization: down.authorization, 'x-request-id': 'req-visible-502' } }),
      WAIT,
      'the 502 page',
    )
    assert.equal(r502.status, 502)
    seen.page502 = answerText(r502)
    await until(() => A.records.some((r) => r.url.startsWith('/x')), WAIT, 'the onRequest record of the 502', 50).catch((err) => notes.push(err.message))
    await until(() => events.text().includes('"/x?'), WAIT, 'the 502 in the event stream', 50).catch((err) => notes.push(err.message))

    const snapshot = await withTimeout(request(`${A.url}/__devproxy/api/exchanges`), WAIT, 'the inspector snapshot')
    seen.inspector = snapshot.body.toString('utf8')
    seen.events = events.text()
    events.close()
    A.child.send({ type: 'recording' })
    recordingA = (await A.child.next('recording')).recording
    A.child.send({ type: 'stop' })
    await A.child.next('stopped', WAIT)
    await until(() => A.child.output().stderr.includes('/x?'), 5000, 'the 502 logged', 50).catch((err) => notes.push(err.message))
    seen.log = A.child.output().stderr
    seen.onRequest = JSON.stringify(A.records)

    seen.recording = JSON.stringify(recordingA)
    seen.cassette = fs.readFileSync(cassette, 'utf8')
    cassetteLines = seen.cassette.split('\n').filter(Boolean).map((l) => JSON.parse(l))
    try {
      seen.har = await withTimeout(lib().toHar(cassette), WAIT, 'toHar')
    } catch (err) {
      seen.har = ''
      notes.push(`toHar failed: ${err.message}`)
    }

    // 13. A second proxy replays the cassette; requests that miss, carrying secrets.
    // The cassette as written; if replay refuses it (today: the 502's exchange, a request line and an
    // `end` with the error, has no `response` line), the misses are tried on a copy without the exchanges
    // that have no response, and the refusal fails its own test below.
    const replayOptions = (file) => ({ proxy: upstream.url, port: 0, replay: { path: file }, inspector: true, logRequests: true, logFormat: 'text' })
    try {
      B = await childProxy(replayOptions(cassette))
    } catch (err) {
      replayLoadError = err.message.split('\n')[0]
      const answered = new Set(cassetteLines.filter((l) => l.type === 'response').map((l) => l.id))
      const copy = path.join(dir, 'answered.jsonl')
      fs.writeFileSync(copy, cassetteLines.filter((l) => l.id === undefined || answered.has(l.id)).map((l) => JSON.stringify(l) + '\n').join(''))
      B = await childProxy(replayOptions(copy))
    }
    const pages = []
    const misses = [
      [`/api/data?token=${miss.token}&password=${miss.password}&q=miss-visible-q`, { headers: { authorization: miss.authorization, 'x-api-key': miss.apiKey, 'x-request-id': 'req-visible-miss' } }],
      ['/oauth/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ grant_type: 'refresh_token', client_id: 'client-visible-55', client_secret: miss.clientSecret, refresh_token: miss.refreshToken, password: oauth.password, scope: 'write-visible' }) }],
      ['/login', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `username=bob-visible&password=${miss.formPassword}&csrfmiddlewaretoken=${form.csrfmiddlewaretoken}&next=%2Fhome` }],
      [`/nowhere-visible?sig=${miss.sig}&X-Amz-Signature=${miss.amz}`, {}],
    ]
    for (const [p, opts] of misses) {
      const res = await withTimeout(request(B.url + p, opts), WAIT, `replay miss ${p.split('?')[0]}`)
      if (res.status !== 404) notes.push(`replay of ${p.split('?')[0]} answered ${res.status}, not a miss`)
      pages.push(answerText(res))
    }
    seen.replayPages = pages.join('\n---\n')
    await until(() => B.records.length >= misses.length, WAIT, 'the replay proxy\'s records', 50).catch((err) => notes.push(err.message))
    seen.replayInspector = (await withTimeout(request(`${B.url}/__devproxy/api/exchanges`), WAIT, 'the replay inspector')).body.toString('utf8')
    B.child.send({ type: 'stop' })
    await B.child.next('stopped', WAIT)
    seen.replayLog = B.child.output().stderr
    seen.replayOnRequest = JSON.stringify(B.records)
  } finally {
    await A.child.kill()
    if (B) await B.child.kill()
    await upstream.close()
    wss.close()
  }
  notes.push(`scenario took ${Date.now() - started} ms; recorder: ${JSON.stringify(recordingA)}`)
})

after(() => {
  if (!dir) return
  if (!process.env.SECRETS_KEEP) return fs.rmSync(dir, { recursive: true, force: true })
  // SECRETS_KEEP=1: every output as it was searched, one file each, beside the cassette.
  for (const [name, text] of Object.entries(seen)) fs.writeFileSync(path.join(dir, `${name}.txt`), text)
  process.stderr.write(`outputs kept in ${dir}\n`)
})

// ---------------------------------------------------------------------------------------------------

test('the scenario reached every output (no output is vacuously clean)', (t) => {
  for (const note of notes) t.diagnostic(note)
  for (const [name, label] of Object.entries(OUTPUTS)) {
    assert.ok(typeof seen[name] === 'string' && seen[name].length > 0, `${label}: nothing was read`)
  }
  const paths = ['/api/data', '/api/shapes', '/oauth/authorize', '/doc', '/login', '/oauth/token', '/ws']
  for (const name of ['log', 'onRequest', 'inspector', 'events']) {
    for (const p of [...paths, '/x?']) assert.ok(seen[name].includes(`"${p}`), `${OUTPUTS[name]} has no exchange for ${p}`)
  }
  for (const p of paths) assert.ok(cassetteLines.some((l) => l.type === 'request' && l.url.startsWith(p)), `the cassette has no exchange for ${p}`)
  assert.ok(recordingA && recordingA.refused >= 1, `the recorder refused the key-shaped bodies (${JSON.stringify(recordingA)})`)
  assert.ok(seen.page502.startsWith('502'), 'the 502 page')
  assert.equal(seen.replayPages.split('\n---\n').filter((p) => p.startsWith('404')).length, 4, 'four replay misses')
})

for (const [name, label] of Object.entries(OUTPUTS)) {
  test(`no secret reaches ${label}`, (t) => {
    const text = seen[name] || ''
    const leaks = SECRETS.filter((s) => text.includes(s.piece))
    if (leaks.length) t.diagnostic(`${leaks.length} of ${SECRETS.length} secrets leak into ${label}`)
    assert.ok(leaks.length === 0, `${leaks.length} secrets leaked:\n` + leaks.map((s) => `  ${s.label} (…${s.piece}…) leaked into ${label}`).join('\n'))
  })
}

for (const [name, label] of Object.entries(OUTPUTS)) {
  const expected = VISIBLE.filter((v) => v.in.includes(name))
  if (!expected.length) continue
  test(`values that are not secrets stay visible in ${label}`, () => {
    const text = seen[name] || ''
    const hidden = expected.filter((v) => !text.includes(v.text))
    assert.ok(hidden.length === 0, `${hidden.length} non-secret values are missing:\n` + hidden.map((v) => `  ${v.what} (${v.text}) is not visible in ${label}`).join('\n'))
  })
}

test('the login form exchange is in the cassette, its password and csrfmiddlewaretoken redacted (recorded, not refused)', () => {
  const login = cassetteLines.find((l) => l.type === 'request' && l.url === '/login')
  assert.ok(login, `the login form exchange is not in the cassette (refused? last refusal: ${recordingA && recordingA.lastRefusal})`)
  const body = login.body ? login.body.text ?? Buffer.from(login.body.base64 || '', 'base64').toString('utf8') : ''
  assert.match(body, /username=alice-visible/, 'the form body keeps the username')
  assert.ok(!body.includes(form.password.slice(0, 10)), `form body password= leaked into the cassette: ${body}`)
  assert.ok(!body.includes(form.csrfmiddlewaretoken.slice(0, 10)), `form body csrfmiddlewaretoken= leaked into the cassette: ${body}`)
  assert.match(body, /password=(\[redacted\]|%5Bredacted%5D)/, `password= is redacted in place: ${body}`)
  const response = cassetteLines.find((l) => l.type === 'response' && l.id === login.id)
  assert.ok(response && response.status === 200, 'its response is recorded too')

  const token = cassetteLines.find((l) => l.type === 'request' && l.url === '/oauth/token')
  assert.ok(token, 'the OAuth token request is in the cassette (redacted, not refused)')
  const json = JSON.parse(token.body.text)
  for (const key of ['client_secret', 'refresh_token', 'password']) assert.equal(json[key], '[redacted]', `JSON body ${key} in the cassette`)
  assert.equal(json.client_id, 'client-visible-55')
})

test('the cassette, with the exchange of the 502 in it, loads for replay', () => {
  assert.equal(replayLoadError, null, `replay refused the cassette proxy A wrote: ${replayLoadError}`)
})

test('the target still got the real values', () => {
  const data = upstream.requests.find((r) => r.url.startsWith('/api/data'))
  assert.equal(data.headers.authorization, requestHeaders.authorization)
  assert.equal(data.headers['x-api-key'], requestHeaders['x-api-key'])
  for (const [name, value] of params) assert.ok(data.url.includes(`${name}=${value}`), `the target got ${name}`)
  const ws = upstream.requests.find((r) => r.upgrade)
  assert.ok(ws && ws.headers['sec-websocket-protocol'].includes(k8sToken), 'the target got the bearer subprotocol')
})
