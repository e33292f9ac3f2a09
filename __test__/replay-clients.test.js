'use strict'
// Record and replay with real client libraries (issue 50): the official OpenAI, Anthropic and Google
// Gen AI SDKs (devDependencies) and plain fetch clients, against fake upstreams on 127.0.0.1 that speak
// each wire format. Each exchange is recorded through the proxy, then replayed with the upstream gone.
// - Gemini: a key in the query string (`key=`, `api_key=`, `token=`, `access_token=`) must not make
//   replay miss, and no key may reach the cassette, a miss message or the proxy's log.
// - OpenAI and Anthropic: a recorded 429/529 replays as that status with its body (the SDK's
//   RateLimitError / InternalServerError, or its retry then the recorded 200), never as a connection
//   error; a client that cancels the error body while recording does not cut the recording short.
// - An HTTP/1.0 origin (python3 -m http.server): the proxy answers HTTP/1.1 with keep-alive and logs
//   each passed-through file as completed.
// The proxy runs in a child process (fixtures/cassette-child.js) so that its stderr can be read.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const fs = require('node:fs')
const http = require('node:http')
const os = require('node:os')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { OpenAI, RateLimitError: OpenAIRateLimitError, APIConnectionError: OpenAIConnectionError } = require('openai')
const {
  Anthropic,
  InternalServerError: AnthropicInternalServerError,
  APIConnectionError: AnthropicConnectionError,
} = require('@anthropic-ai/sdk')
const { HOST, startUpstream, deadPort, connectRefused, withTimeout, until, spawnNode } = require('./helpers')

const CHILD = path.join(__dirname, 'fixtures', 'cassette-child.js')
const RUNS = 5 // replays per speed: the reset was intermittent
const CALL_MS = 8000 // failure guard per SDK call

// Google API keys: "AIza" + 35 characters (random-looking, so that a piece of one is never found by chance).
const GEMINI_KEY = 'AIzaSyDq7vX2mPzR8kLw4NcT1bHj6YsE9gUa3f5'
const GEMINI_OTHER_KEY = 'AIzaSyWm3Rt8KpQ2xVn6ZbL9cFh4JsG7dYe1TuA'
const OPENAI_KEY = 'sk-proj-TESTKEYabcdefghijklmnopqrstuvwxyz0123'
const ANTHROPIC_KEY = 'sk-ant-api03-TESTKEYabcdefghijklmnopqrstuvwxyz'

let dir
let dead // a target nothing listens on: every replayed answer must come from the cassette

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-replay-clients-'))
  dead = `http://${HOST}:${await deadPort()}`
})

after(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// ---------------------------------------------------------------------------------------------
// The proxy in a child process.

/** Starts the proxy in a child with `options`; `stderr()` is what it wrote so far (log lines included). */
async function proxyChild(options) {
  const child = spawnNode(CHILD)
  let stopped = false
  const handle = {
    url: null,
    stderr: () => child.output().stderr,
    async replay(replayOptions) {
      child.send({ type: 'replay', options: replayOptions })
      await child.next('replaying', 10000)
    },
    async recording() {
      child.send({ type: 'recording' })
      return (await child.next('recording', 10000)).status
    },
    /** Waits until `n` exchanges are written (or refused) to the cassette. */
    async written(n, what) {
      let last
      await until(async () => {
        last = await handle.recording()
        return last && last.written + last.refused >= n
      }, 5000, `${n} exchange(s) written for ${what} (recording: ${JSON.stringify(last)})`)
    },
    async stop() {
      if (stopped) return
      stopped = true
      try {
        child.send({ type: 'stop' })
        await child.next('stopped', 10000)
        await withTimeout(child.exited, 5000, 'the proxy child to exit')
      } catch {
        await child.kill()
      }
    },
  }
  try {
    child.send({ type: 'start', options: { ...options, logRequests: true } })
    handle.url = (await child.next('started', 15000)).url
  } catch (err) {
    await child.kill()
    throw err
  }
  return handle
}

/** Runs fn(proxy) with a proxy child, always stopping it. */
async function withChild(options, fn) {
  const proxy = await proxyChild(options)
  try {
    return await fn(proxy)
  } finally {
    await proxy.stop()
  }
}

// ---------------------------------------------------------------------------------------------
// Cassettes.

/** The cassette's exchanges by id: { request, response, bodies: [line], text, end }. */
function exchanges(file) {
  const byId = new Map()
  for (const line of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))) {
    if (line.type === 'cassette') continue
    if (!byId.has(line.id)) byId.set(line.id, { bodies: [] })
    const e = byId.get(line.id)
    if (line.type === 'request') e.request = line
    else if (line.type === 'response') e.response = line
    else if (line.type === 'body') e.bodies.push(line)
    else if (line.type === 'end') e.end = line
  }
  for (const e of byId.values()) {
    e.body = Buffer.concat(e.bodies.map((b) => (b.base64 !== undefined ? Buffer.from(b.base64, 'base64') : Buffer.from(b.text))))
  }
  return [...byId.entries()].sort(([a], [b]) => a - b).map(([, e]) => e) // by id: the order the requests came in
}

/** One line per exchange, for failure messages. */
function describeCassette(file) {
  return exchanges(file)
    .map((e, i) => `  #${i + 1} ${e.request?.method} ${e.request?.url} -> ${e.response ? e.response.status : 'no response'}, ${e.body.length} body bytes, end ${e.end ? (e.end.error ? `error: ${e.end.error}` : 'ok') : 'missing'}`)
    .join('\n')
}

// ---------------------------------------------------------------------------------------------
// Observing what an SDK's fetch saw, attempt by attempt.

/** Whatever an error says, with its causes (undici puts the socket's error in `cause`). */
function describeError(err) {
  if (!err) return String(err)
  let text = `${err.constructor?.name || 'Error'}${err.status !== undefined ? ` (status ${err.status})` : ''}: ${err.message}`
  for (let c = err.cause, depth = 0; c && depth < 3; c = c.cause, depth++) {
    text += ` [cause ${c.constructor?.name || typeof c}${c.code ? ` ${c.code}` : ''}: ${c.message ?? c}]`
  }
  return text
}

/** A fetch that notes each attempt: its status and `retry-after-ms`, or why it rejected, and how its body ended. */
function observingFetch(attempts, inner = fetch) {
  return async (url, init) => {
    const attempt = { n: attempts.length + 1 }
    attempts.push(attempt)
    try {
      const res = await inner(url, init)
      attempt.status = res.status
      attempt.retryAfterMs = res.headers.get('retry-after-ms')
      return res
    } catch (err) {
      attempt.error = describeError(err)
      throw err
    }
  }
}

function describeAttempts(attempts) {
  return attempts
    .map((a) => `attempt ${a.n}: ${a.error ? `fetch rejected (no response head): ${a.error}` : `status ${a.status}, retry-after-ms ${a.retryAfterMs}`}`)
    .join('; ') || 'no attempt'
}

/** The log lines `stderr` gained since `from` (its length then). */
function since(proxy, from) {
  return proxy.stderr().slice(from).trim()
}

// ---------------------------------------------------------------------------------------------
// Fake upstreams.

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => resolve(Buffer.concat(chunks).toString()))
    req.on('error', reject)
  })
}

/**
 * An error answer, ending `whole` (head and body written at once) or `late` (the head and the first
 * half of the body, then the rest 40 ms later: an SDK that retries cancels the body before its end).
 * Notes in `log` whether the upstream got to write all of it.
 */
async function sendError(res, status, headers, body, ending, log) {
  res.on('error', () => {})
  const sent = { status, ending, finished: false }
  log.push(sent)
  res.on('finish', () => {
    sent.finished = true
  })
  res.on('close', () => {
    if (!sent.finished) sent.hungUp = true
  })
  res.writeHead(status, headers)
  if (ending === 'whole') {
    res.end(body)
    return
  }
  const half = Math.floor(body.length / 2)
  res.write(body.slice(0, half))
  await sleep(40)
  if (!res.destroyed) res.end(body.slice(half))
}

// OpenAI: chat completions, the first call 429 (content-length), the second a 200 stream.
const OPENAI_429_BODY = JSON.stringify({
  error: {
    message: 'Rate limit reached for gpt-4o-mini in organization org-test on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 10ms.',
    type: 'requests',
    param: null,
    code: 'rate_limit_exceeded',
  },
})
const OPENAI_WORDS = ['Hello', ' from', ' the', ' recorded', ' stream']

function openaiUpstream(ending) {
  let calls = 0
  const errors = []
  return startUpstream({
    '/v1/chat/completions': async (req, res) => {
      await readBody(req)
      calls++
      if (calls === 1) {
        const headers = {
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(OPENAI_429_BODY),
          'retry-after-ms': '10',
          'x-request-id': 'req_test429',
        }
        return sendError(res, 429, headers, OPENAI_429_BODY, ending, errors)
      }
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': 'req_test200' })
      for (const [i, word] of OPENAI_WORDS.entries()) {
        const chunk = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: i === 0 ? { role: 'assistant', content: word } : { content: word }, finish_reason: null }] }
        res.write(`data: ${JSON.stringify(chunk)}\n\n`)
        await sleep(10)
      }
      res.write(`data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`)
      res.end('data: [DONE]\n\n')
    },
  }).then((up) => Object.assign(up, { errors, calls: () => calls }))
}

// Anthropic: messages, the first call 529 overloaded (chunked), the second a 200 message.
const ANTHROPIC_529_BODY = JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' }, request_id: 'req_011CTestOverloaded' })
const ANTHROPIC_TEXT = 'Hello from the recorded message'

function anthropicUpstream(ending) {
  let calls = 0
  const errors = []
  return startUpstream({
    '/v1/messages': async (req, res) => {
      await readBody(req)
      calls++
      if (calls === 1) {
        // retry-after-ms keeps the SDK's wait short (without it: 0.4-0.5 s per retry).
        const headers = { 'content-type': 'application/json', 'x-should-retry': 'true', 'retry-after-ms': '10', 'request-id': 'req_011CTestOverloaded' }
        return sendError(res, 529, headers, ANTHROPIC_529_BODY, ending, errors)
      }
      const body = JSON.stringify({
        id: 'msg_test',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [{ type: 'text', text: ANTHROPIC_TEXT }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 5, output_tokens: 6 },
      })
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'request-id': 'req_011CTestOk' })
      res.end(body)
    },
  }).then((up) => Object.assign(up, { errors, calls: () => calls }))
}

// ---------------------------------------------------------------------------------------------
// The SDK calls: { ok: true, text } or { ok: false, error }, with the attempts seen by fetch.

async function openaiCall(baseURL, maxRetries) {
  const attempts = []
  const client = new OpenAI({ apiKey: OPENAI_KEY, baseURL: `${baseURL}/v1`, maxRetries, timeout: CALL_MS, fetch: observingFetch(attempts) })
  try {
    const text = await withTimeout(
      (async () => {
        const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Say hello' }] })
        let out = ''
        for await (const chunk of stream) out += chunk.choices[0]?.delta?.content ?? ''
        return out
      })(),
      CALL_MS + 2000,
      'the OpenAI SDK call',
    )
    return { ok: true, text, attempts }
  } catch (error) {
    return { ok: false, error, attempts }
  }
}

async function anthropicCall(baseURL, maxRetries) {
  const attempts = []
  const client = new Anthropic({ apiKey: ANTHROPIC_KEY, baseURL, maxRetries, timeout: CALL_MS, fetch: observingFetch(attempts) })
  try {
    const message = await withTimeout(
      client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Say hello' }] }),
      CALL_MS + 2000,
      'the Anthropic SDK call',
    )
    return { ok: true, text: message.content.map((c) => c.text).join(''), attempts }
  } catch (error) {
    return { ok: false, error, attempts }
  }
}

const SDKS = {
  openai: {
    label: 'OpenAI',
    upstream: openaiUpstream,
    call: openaiCall,
    errorStatus: 429,
    errorBody: OPENAI_429_BODY,
    expectedText: OPENAI_WORDS.join(''),
    errorClass: OpenAIRateLimitError,
    connectionErrorClass: OpenAIConnectionError,
    // openai's APIError keeps the body's `error` object
    errorPayload: JSON.parse(OPENAI_429_BODY).error,
  },
  anthropic: {
    label: 'Anthropic',
    upstream: anthropicUpstream,
    call: anthropicCall,
    errorStatus: 529,
    errorBody: ANTHROPIC_529_BODY,
    expectedText: ANTHROPIC_TEXT,
    errorClass: AnthropicInternalServerError, // 529 is its OverloadedError, a subclass
    connectionErrorClass: AnthropicConnectionError,
    // @anthropic-ai/sdk's APIError keeps the whole body
    errorPayload: JSON.parse(ANTHROPIC_529_BODY),
  },
}

/**
 * What is wrong with an outcome, or null. Retries on: the error answer (status and retry-after-ms seen
 * by fetch), then the recorded 200's text. Retries off: the SDK's own error class for the status, with
 * the recorded header and (unless `cut`: only part of it is in the cassette) the recorded body.
 */
function outcomeProblem(sdk, retries, outcome, { cut = false } = {}) {
  const seen = describeAttempts(outcome.attempts)
  const first = outcome.attempts[0]
  if (retries) {
    if (!outcome.ok) return `the call failed: ${describeError(outcome.error)} (${seen})`
    if (outcome.text !== sdk.expectedText) return `the text is ${JSON.stringify(outcome.text)}, not the recorded ${JSON.stringify(sdk.expectedText)} (${seen})`
    if (!first || first.status !== sdk.errorStatus || first.retryAfterMs !== '10') {
      return `the call succeeded, but the first attempt did not get the recorded ${sdk.errorStatus} with retry-after-ms 10 (${seen})`
    }
    if (outcome.attempts.length !== 2 || outcome.attempts[1].status !== 200) return `expected 2 attempts, ${sdk.errorStatus} then 200 (${seen})`
    return null
  }
  if (outcome.ok) return `the call succeeded (${JSON.stringify(outcome.text)}) where the recorded ${sdk.errorStatus} was expected (${seen})`
  const err = outcome.error
  if (err instanceof sdk.connectionErrorClass) return `the SDK threw its connection error, not its ${sdk.errorClass.name}: ${describeError(err)} (${seen})`
  if (!(err instanceof sdk.errorClass)) return `the SDK threw ${describeError(err)}, not its ${sdk.errorClass.name} (${seen})`
  if (err.status !== sdk.errorStatus) return `${err.constructor.name} with status ${err.status}, not ${sdk.errorStatus} (${seen})`
  if (!cut) {
    try {
      assert.deepEqual(err.error, sdk.errorPayload)
    } catch {
      return `${err.constructor.name} ${err.status} without the recorded error body: err.error is ${JSON.stringify(err.error)}, message ${JSON.stringify(err.message)} (${seen})`
    }
  }
  const retryAfter = err.headers?.get?.('retry-after-ms')
  if (retryAfter !== '10') return `${err.constructor.name} ${err.status} without the recorded retry-after-ms header (got ${retryAfter}) (${seen})`
  if (outcome.attempts.length !== 1) return `expected 1 attempt with retries off (${seen})`
  return null
}

// ---------------------------------------------------------------------------------------------
// Every wire format, its happy path: what the SDK made of the recording, it makes of the replay.

/** OpenAI (chat completions and responses) and Anthropic (messages), JSON or SSE as the body's `stream` says; each answer echoes the prompt. */
function wireUpstream() {
  const sse = (res) => res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' })
  const json = (res, value) => {
    const body = JSON.stringify(value)
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    res.end(body)
  }
  const words = (prompt) => ['Echo', ': ', prompt]
  return startUpstream({
    '/v1/chat/completions': async (req, res) => {
      const body = JSON.parse(await readBody(req))
      const prompt = body.messages.at(-1).content
      const base = { id: 'chatcmpl-w', created: 1, model: body.model }
      if (!body.stream) {
        return json(res, { ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: words(prompt).join(''), refusal: null }, finish_reason: 'stop', logprobs: null }], usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } })
      }
      sse(res)
      for (const word of words(prompt)) {
        res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: word }, finish_reason: null }] })}\n\n`)
        await sleep(5)
      }
      res.end('data: [DONE]\n\n')
    },
    '/v1/responses': async (req, res) => {
      const body = JSON.parse(await readBody(req))
      const prompt = body.input
      const text = words(prompt).join('')
      const message = (t, status) => ({ type: 'message', id: 'msg_w', status, role: 'assistant', content: t === null ? [] : [{ type: 'output_text', text: t, annotations: [] }] })
      const response = (status, output) => ({ id: 'resp_w', object: 'response', created_at: 1, status, model: body.model, output, parallel_tool_calls: true, tool_choice: 'auto', tools: [], error: null, incomplete_details: null, instructions: null, metadata: {}, temperature: 1, top_p: 1 })
      if (!body.stream) return json(res, { ...response('completed', [message(text, 'completed')]), usage: { input_tokens: 3, output_tokens: 3, total_tokens: 6 } })
      sse(res)
      let seq = 0
      const event = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`)
      event('response.created', { response: response('in_progress', []) })
      event('response.output_item.added', { output_index: 0, item: message(null, 'in_progress') })
      for (const word of words(prompt)) {
        event('response.output_text.delta', { item_id: 'msg_w', output_index: 0, content_index: 0, delta: word })
        await sleep(5)
      }
      event('response.output_text.done', { item_id: 'msg_w', output_index: 0, content_index: 0, text })
      event('response.completed', { response: response('completed', [message(text, 'completed')]) })
      res.end()
    },
    '/v1/messages': async (req, res) => {
      const body = JSON.parse(await readBody(req))
      const prompt = body.messages.at(-1).content
      const message = { id: 'msg_w', type: 'message', role: 'assistant', model: body.model, stop_reason: null, stop_sequence: null, usage: { input_tokens: 3, output_tokens: 1 } }
      if (!body.stream) return json(res, { ...message, content: [{ type: 'text', text: words(prompt).join('') }], stop_reason: 'end_turn' })
      sse(res)
      const event = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)
      event('message_start', { message: { ...message, content: [] } })
      event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } })
      for (const word of words(prompt)) {
        event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: word } })
        await sleep(5)
      }
      event('content_block_stop', { index: 0 })
      event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } })
      event('message_stop', {})
      res.end()
    },
  })
}

const WIRE_CALLS = [
  {
    label: 'OpenAI chat.completions (JSON)',
    call: async (url) => (await new OpenAI({ apiKey: OPENAI_KEY, baseURL: `${url}/v1`, maxRetries: 0, timeout: CALL_MS }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'chat json' }] })).choices[0].message.content,
  },
  {
    label: 'OpenAI chat.completions (SSE)',
    call: async (url) => {
      let text = ''
      for await (const c of await new OpenAI({ apiKey: OPENAI_KEY, baseURL: `${url}/v1`, maxRetries: 0, timeout: CALL_MS }).chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'chat sse' }] })) text += c.choices[0]?.delta?.content ?? ''
      return text
    },
  },
  {
    label: 'OpenAI responses (JSON)',
    call: async (url) => (await new OpenAI({ apiKey: OPENAI_KEY, baseURL: `${url}/v1`, maxRetries: 0, timeout: CALL_MS }).responses.create({ model: 'gpt-4o-mini', input: 'responses json' })).output_text,
  },
  {
    label: 'OpenAI responses (SSE)',
    call: async (url) => {
      let text = ''
      for await (const e of await new OpenAI({ apiKey: OPENAI_KEY, baseURL: `${url}/v1`, maxRetries: 0, timeout: CALL_MS }).responses.create({ model: 'gpt-4o-mini', stream: true, input: 'responses sse' })) {
        if (e.type === 'response.output_text.delta') text += e.delta
      }
      return text
    },
  },
  {
    label: 'Anthropic messages (JSON)',
    call: async (url) => (await new Anthropic({ apiKey: ANTHROPIC_KEY, baseURL: url, maxRetries: 0, timeout: CALL_MS }).messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'messages json' }] })).content.map((c) => c.text).join(''),
  },
  {
    label: 'Anthropic messages (SSE)',
    call: async (url) => {
      let text = ''
      const stream = await new Anthropic({ apiKey: ANTHROPIC_KEY, baseURL: url, maxRetries: 0, timeout: CALL_MS }).messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'messages sse' }] })
      for await (const e of stream) if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text
      return text
    },
  },
]

/** Each call in turn: its text, or the error it threw. */
async function wireResults(url) {
  const out = []
  for (const w of WIRE_CALLS) {
    try {
      out.push({ label: w.label, text: await withTimeout(w.call(url), CALL_MS + 2000, w.label) })
    } catch (err) {
      out.push({ label: w.label, error: describeError(err) })
    }
  }
  return out
}

test('OpenAI chat completions and responses, Anthropic messages, JSON and SSE: each SDK gets from the replay (speed 1 and 0) what it got while recording', async (t) => {
  const cassette = path.join(dir, 'wire.jsonl')
  const upstream = await wireUpstream()
  let recorded
  try {
    await withChild({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (proxy) => {
      recorded = await wireResults(proxy.url)
      await proxy.written(WIRE_CALLS.length, 'the wire-format recording')
    })
  } finally {
    await upstream.close()
  }
  t.diagnostic(`cassette:\n${describeCassette(cassette)}`)
  await t.test('recording: every call answered', () => {
    const wrong = recorded.filter((r) => r.error || !r.text.startsWith('Echo: ')).map((r) => `${r.label}: ${r.error || JSON.stringify(r.text)}`)
    assert.deepEqual(wrong, [], 'calls not answered while recording')
  })
  const replayer = await proxyChild({ proxy: dead, port: 0, replay: { path: cassette, speed: 1 } })
  try {
    for (const speed of [1, 0]) {
      await t.test(`replayed at speed ${speed}: the same results`, async () => {
        await replayer.replay({ path: cassette, speed })
        const replayed = await wireResults(replayer.url)
        const wrong = replayed
          .map((r, i) => (r.error || r.text !== recorded[i].text ? `${r.label}: ${r.error || JSON.stringify(r.text)}, recorded ${JSON.stringify(recorded[i].text ?? recorded[i].error)}` : null))
          .filter(Boolean)
        assert.deepEqual(wrong, [], 'calls whose replay differs')
      })
    }
  } finally {
    await replayer.stop()
  }
})

// ---------------------------------------------------------------------------------------------
// OpenAI and Anthropic: recorded error answers replay as errors, with their bodies.

for (const [name, sdk] of Object.entries(SDKS)) {
  for (const retries of [true, false]) {
    for (const ending of ['whole', 'late']) {
      const endingLabel = ending === 'whole' ? '(a) error body sent at once' : '(b) error body ends 40 ms after the head'
      const title = `${sdk.label} SDK, retries ${retries ? 'on (maxRetries 1)' : 'off (maxRetries 0)'}, ${endingLabel}: a recorded ${sdk.errorStatus} replays as the SDK's ${retries ? 'retry then the recorded 200' : `${sdk.errorClass.name} ${sdk.errorStatus}`}, never a connection error`
      test(title, async (t) => {
        const cassette = path.join(dir, `${name}-${retries ? 'retries' : 'noretries'}-${ending}.jsonl`)
        const maxRetries = retries ? 1 : 0
        const expectedExchanges = retries ? 2 : 1
        const upstream = await sdk.upstream(ending)
        let recorded
        let recordLog
        try {
          await withChild({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (proxy) => {
            recorded = await sdk.call(proxy.url, maxRetries)
            await proxy.written(expectedExchanges, `${sdk.label} recording`)
            // With the fix the proxy keeps reading the upstream after the client left: its end comes later.
            await until(() => upstream.errors.every((e) => e.finished || e.hungUp), 3000, 'the fake upstream done with its error answer')
            await sleep(50)
            recordLog = proxy.stderr()
          })
        } finally {
          await upstream.close()
        }
        const sent = upstream.errors.map((e) => `${e.status} ${e.ending}: ${e.finished ? 'written whole' : e.hungUp ? 'the proxy hung up before its end' : 'unfinished'}`)
        t.diagnostic(`recording: ${describeAttempts(recorded.attempts)}; upstream error answer: ${sent.join(', ')}`)
        t.diagnostic(`cassette:\n${describeCassette(cassette)}`)
        t.diagnostic(`recording proxy log:\n${recordLog.trim()}`)

        await t.test('recording: the SDK call through the proxy behaves as against the upstream', () => {
          assert.equal(upstream.calls(), expectedExchanges, `the fake upstream got ${upstream.calls()} calls`)
          const problem = outcomeProblem(sdk, retries, recorded)
          assert.equal(problem, null, `while recording: ${problem}`)
        })

        await t.test(`the cassette holds ${expectedExchanges} exchange(s), the ${sdk.errorStatus} with its whole body and an end without error`, () => {
          const all = exchanges(cassette)
          assert.equal(all.length, expectedExchanges, `exchanges in the cassette:\n${describeCassette(cassette)}`)
          const error = all[0] // the first request (ids in arrival order)
          assert.equal(error.response?.status, sdk.errorStatus, `the first exchange's status:\n${describeCassette(cassette)}`)
          assert.equal(
            error.body.toString(),
            sdk.errorBody,
            `the ${sdk.errorStatus} exchange's recorded body (${error.body.length} of ${Buffer.byteLength(sdk.errorBody)} bytes; end: ${JSON.stringify(error.end)}): the proxy should keep reading the upstream after the client left`,
          )
          assert.ok(error.end && !error.end.error, `the ${sdk.errorStatus} exchange ends with ${JSON.stringify(error.end)}, not a clean end`)
          if (retries) {
            assert.equal(all[1].response?.status, 200, `the second exchange:\n${describeCassette(cassette)}`)
            assert.ok(all[1].end && !all[1].end.error, `the 200 exchange ends with ${JSON.stringify(all[1].end)}`)
          }
        })

        const replayer = await proxyChild({ proxy: dead, port: 0, replay: { path: cassette, speed: 1 } })
        try {
          let firstRun = true
          for (const speed of [1, 0]) {
            await t.test(`replayed at speed ${speed}, ${RUNS} times: ${retries ? `${sdk.errorStatus} (retry-after-ms 10) then the recorded 200` : `${sdk.errorClass.name} ${sdk.errorStatus} with the recorded body`}`, async () => {
              const failures = []
              for (let run = 1; run <= RUNS; run++) {
                if (!firstRun) await replayer.replay({ path: cassette, speed }) // the cassette from its start
                firstRun = false
                const from = replayer.stderr().length
                const outcome = await sdk.call(replayer.url, maxRetries)
                const problem = outcomeProblem(sdk, retries, outcome)
                if (problem) failures.push(`run ${run}: ${problem}\n    proxy log: ${since(replayer, from).replace(/\n/g, '\n               ') || '(nothing)'}`)
              }
              assert.equal(failures.length, 0, `${failures.length} of ${RUNS} replays at speed ${speed} failed:\n  ${failures.join('\n  ')}`)
            })
          }
        } finally {
          await replayer.stop()
        }
      })
    }
  }
}

/**
 * A copy of `src` as a recording made before the fix looked: the `status` exchange's body cut to its
 * first half and its end an error ("the client went away before the body's end").
 */
function cutCassette(src, status, dst) {
  const all = fs.readFileSync(src, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
  const response = all.find((l) => l.type === 'response' && l.status === status)
  assert.ok(response, `no ${status} exchange in ${src} to cut`)
  const body = exchanges(src).find((e) => e.response?.id === response.id).body.toString()
  const out = []
  for (const line of all) {
    if (line.id === response.id && (line.type === 'body' || line.type === 'end')) continue
    out.push(line)
    if (line === response) {
      out.push({ type: 'body', id: line.id, chunk: 0, at: line.at, text: body.slice(0, Math.floor(body.length / 2)) })
      out.push({ type: 'end', id: line.id, at: line.at + 1, error: "the client went away before the body's end" })
    }
  }
  fs.writeFileSync(dst, out.map((l) => JSON.stringify(l)).join('\n') + '\n')
  return dst
}

for (const [name, sdk] of Object.entries(SDKS)) {
  test(`${sdk.label} SDK, a cassette recorded before the fix (the ${sdk.errorStatus}'s body cut, its end an error): the head still goes out; retries off -> ${sdk.errorClass.name} ${sdk.errorStatus}, retries on -> ${sdk.errorStatus} then the recorded 200`, async (t) => {
    const whole = path.join(dir, `${name}-for-cut.jsonl`)
    const upstream = await sdk.upstream('whole')
    try {
      await withChild({ proxy: upstream.url, port: 0, record: { path: whole } }, async (proxy) => {
        const recorded = await sdk.call(proxy.url, 1)
        assert.equal(outcomeProblem(sdk, true, recorded), null, 'the recording')
        await proxy.written(2, `${sdk.label} recording`)
      })
    } finally {
      await upstream.close()
    }
    const cassette = cutCassette(whole, sdk.errorStatus, path.join(dir, `${name}-cut.jsonl`))
    t.diagnostic(`cassette:\n${describeCassette(cassette)}`)
    const replayer = await proxyChild({ proxy: dead, port: 0, replay: { path: cassette, speed: 0 } })
    try {
      for (const retries of [false, true]) {
        for (const speed of [1, 0]) {
          await t.test(`retries ${retries ? 'on' : 'off'}, speed ${speed}, ${RUNS} times`, async () => {
            const failures = []
            for (let run = 1; run <= RUNS; run++) {
              await replayer.replay({ path: cassette, speed })
              const from = replayer.stderr().length
              const outcome = await sdk.call(replayer.url, retries ? 1 : 0)
              const problem = outcomeProblem(sdk, retries, outcome, { cut: true })
              if (problem) failures.push(`run ${run}: ${problem}\n    proxy log: ${since(replayer, from).replace(/\n/g, '\n               ') || '(nothing)'}`)
            }
            assert.equal(failures.length, 0, `${failures.length} of ${RUNS} replays failed:\n  ${failures.join('\n  ')}`)
          })
        }
      }
    } finally {
      await replayer.stop()
    }
  })
}

// ---------------------------------------------------------------------------------------------
// Gemini: the key in the query string.

const GEMINI_MODEL = 'gemini-2.0-flash'
const GEMINI_PATH = `/v1beta/models/${GEMINI_MODEL}:streamGenerateContent`

/** A Gemini SSE stream (CRLF, as Google's servers send it) echoing the prompt. */
function geminiUpstream() {
  return startUpstream({
    [GEMINI_PATH]: async (req, res) => {
      const body = JSON.parse(await readBody(req))
      const prompt = body.contents.flatMap((c) => c.parts.map((p) => p.text)).join('')
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-disposition': 'attachment', vary: 'Origin, X-Origin, Referer' })
      const pieces = ['Hello', ', you said: ', prompt]
      for (const [i, text] of pieces.entries()) {
        const chunk = {
          candidates: [{ content: { parts: [{ text }], role: 'model' }, index: 0, ...(i === pieces.length - 1 ? { finishReason: 'STOP' } : {}) }],
          usageMetadata: { promptTokenCount: 4, candidatesTokenCount: i + 1, totalTokenCount: 5 + i },
          modelVersion: GEMINI_MODEL,
          responseId: 'resp-test',
        }
        res.write(`data: ${JSON.stringify(chunk)}\r\n\r\n`)
        await sleep(10)
      }
      res.end()
    },
  })
}

const geminiExpected = (prompt) => `Hello, you said: ${prompt}`

/** @google/genai's fetch with the key moved from x-goog-api-key to the query, as `?${param}=`. */
function keyInQuery(param) {
  return (url, init) => {
    const headers = new Headers(init.headers)
    const key = headers.get('x-goog-api-key')
    headers.delete('x-goog-api-key')
    const u = new URL(url)
    u.searchParams.append(param, key)
    return fetch(u, { ...init, headers })
  }
}

/** The real SDK's stream; `param`: put the key in the query instead of its header. */
async function geminiSdk(baseUrl, { param }, key, prompt) {
  const { GoogleGenAI } = require('@google/genai')
  const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl, ...(param ? { fetch: keyInQuery(param) } : {}) } })
  return withTimeout(
    (async () => {
      const stream = await ai.models.generateContentStream({ model: GEMINI_MODEL, contents: prompt })
      let text = ''
      for await (const chunk of stream) text += chunk.text ?? ''
      return text
    })(),
    CALL_MS,
    'the @google/genai stream',
  )
}

/** A plain fetch client with the key in the URL (first or after alt=sse); a non-200 rejects with status and body. */
async function geminiFetch(baseUrl, { param, keyFirst }, key, prompt) {
  const query = keyFirst ? `${param}=${key}&alt=sse` : `alt=sse&${param}=${key}`
  const res = await fetch(`${baseUrl}${GEMINI_PATH}?${query}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: prompt }] }] }),
    signal: AbortSignal.timeout(CALL_MS),
  })
  const body = await res.text()
  if (res.status !== 200) {
    const err = new Error(`HTTP ${res.status} ${[...res.headers].map(([n, v]) => `${n}: ${v}`).join('; ')}\n${body}`)
    err.status = res.status
    throw err
  }
  let text = ''
  for (const event of body.split(/\r?\n\r?\n/)) {
    const data = event.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('')
    if (data) text += JSON.parse(data).candidates[0].content.parts.map((p) => p.text).join('')
  }
  return text
}

// @google/genai supports Node 20 and later (its `engines`): on Node 18 (the release workflow's oldest) the
// fetch clients alone.
const GENAI_RUNS = Number(process.versions.node.split('.')[0]) >= 20
const GEMINI_CLIENTS = [
  ...(GENAI_RUNS
    ? [
        { id: 'sdk-header', label: '@google/genai, key in x-goog-api-key (its default)', call: geminiSdk },
        { id: 'sdk-key', label: '@google/genai, key moved to ?alt=sse&key=', call: geminiSdk, param: 'key' },
      ]
    : []),
  { id: 'fetch-key', label: 'fetch, ?alt=sse&key=', call: geminiFetch, param: 'key' },
  { id: 'fetch-api_key', label: 'fetch, ?api_key=...&alt=sse', call: geminiFetch, param: 'api_key', keyFirst: true },
  { id: 'fetch-token', label: 'fetch, ?alt=sse&token=', call: geminiFetch, param: 'token' },
  { id: 'fetch-access_token', label: 'fetch, ?alt=sse&access_token=', call: geminiFetch, param: 'access_token' },
]

/**
 * Where `text` holds a key or a piece of one: any 6 characters in a row of its secret part (after the
 * `AIzaSy` every Google key starts with), so that a shortened key (`'AIzaSyDq7vX2...'`) counts too.
 * Returns the index of the first such piece, or -1.
 */
function keyAt(text) {
  let first = -1
  for (const key of [GEMINI_KEY, GEMINI_OTHER_KEY]) {
    for (let i = 6; i + 6 <= key.length; i++) {
      const at = text.indexOf(key.slice(i, i + 6))
      if (at >= 0 && (first < 0 || at < first)) first = at
    }
  }
  return first
}

const keyIn = (text) => keyAt(text) >= 0

/** The text around the first piece of a key in `text`, for a failure message. */
function keyContext(text) {
  const i = keyAt(text)
  return i < 0 ? '' : JSON.stringify(text.slice(Math.max(0, i - 160), i + 60))
}

test('Gemini (@google/genai and fetch clients, the key in the query as key=, api_key=, token=, access_token=): recorded then replayed, the same stream; no key in the cassette, a miss or the log', async (t) => {
  const cassette = path.join(dir, 'gemini.jsonl')
  const prompt = (client) => `Say hi (${client.id})`
  const upstream = await geminiUpstream()
  const recorded = {}
  let recordLog
  try {
    await withChild({ proxy: upstream.url, port: 0, record: { path: cassette } }, async (proxy) => {
      for (const client of GEMINI_CLIENTS) {
        try {
          recorded[client.id] = { text: await client.call(proxy.url, client, GEMINI_KEY, prompt(client)) }
        } catch (err) {
          recorded[client.id] = { error: describeError(err) }
        }
      }
      await proxy.written(GEMINI_CLIENTS.length, 'the Gemini recording')
      recordLog = proxy.stderr()
    })
  } finally {
    await upstream.close()
  }
  t.diagnostic(`cassette:\n${describeCassette(cassette)}`)
  t.diagnostic(`recording proxy log:\n${recordLog.trim()}`)

  await t.test('recording: every client gets its stream through the proxy', () => {
    const wrong = GEMINI_CLIENTS.filter((c) => recorded[c.id].text !== geminiExpected(prompt(c))).map((c) => `${c.label}: ${JSON.stringify(recorded[c.id])}`)
    assert.deepEqual(wrong, [], 'clients without their stream while recording')
  })

  await t.test('the cassette holds no key; the query parameter is recorded as [redacted], the header too', () => {
    const text = fs.readFileSync(cassette, 'utf8')
    assert.ok(!keyIn(text), `the cassette holds the key: ${keyContext(text)}`)
    const all = exchanges(cassette)
    assert.equal(all.length, GEMINI_CLIENTS.length, `exchanges:\n${describeCassette(cassette)}`)
    for (const [i, client] of GEMINI_CLIENTS.entries()) {
      const { request } = all[i]
      if (client.param) assert.ok(request.url.includes(`${client.param}=[redacted]`), `${client.label}: recorded url ${request.url}`)
      else assert.deepEqual(request.headers.find(([n]) => n === 'x-goog-api-key'), ['x-goog-api-key', '[redacted]'], `${client.label}: recorded header`)
    }
  })

  await t.test("the recording proxy's log names no key", () => {
    assert.ok(!keyIn(recordLog), `the recording proxy's stderr holds the key: ${keyContext(recordLog)}`)
  })

  const replayer = await proxyChild({ proxy: dead, port: 0, replay: { path: cassette, speed: 0 } })
  try {
    await t.test('replayed (speed 0) with the same key: each client gets its recorded stream', async () => {
      const failures = []
      for (const client of GEMINI_CLIENTS) {
        try {
          const text = await client.call(replayer.url, client, GEMINI_KEY, prompt(client))
          if (text !== recorded[client.id].text) failures.push(`${client.label}: got ${JSON.stringify(text)}, recorded ${JSON.stringify(recorded[client.id].text)}`)
        } catch (err) {
          const d = describeError(err)
          failures.push(`${client.label}: ${d}${keyIn(d) ? ' [the error names the key]' : ''}`)
        }
      }
      assert.equal(failures.length, 0, `${failures.length} of ${GEMINI_CLIENTS.length} clients did not get their recorded stream:\n  ${failures.join('\n  ')}`)
    })

    await t.test('replayed with another key in the query: still matched (the recorded key is [redacted])', async () => {
      const failures = []
      for (const client of GEMINI_CLIENTS.filter((c) => c.param)) {
        await replayer.replay({ path: cassette, speed: 0 })
        try {
          const text = await client.call(replayer.url, client, GEMINI_OTHER_KEY, prompt(client))
          if (text !== recorded[client.id].text) failures.push(`${client.label}: got ${JSON.stringify(text)}`)
        } catch (err) {
          failures.push(`${client.label}: ${describeError(err)}`)
        }
      }
      assert.equal(failures.length, 0, `clients whose request with another key missed:\n  ${failures.join('\n  ')}`)
    })

    await t.test('a miss (another prompt): a 404 whose message, as each client sees it, names no key', async () => {
      const failures = []
      for (const client of GEMINI_CLIENTS) {
        try {
          const text = await client.call(replayer.url, client, GEMINI_KEY, `Say bye (${client.id})`)
          failures.push(`${client.label}: the miss was answered ${JSON.stringify(text)}`)
        } catch (err) {
          const d = describeError(err)
          if (err.status !== 404) failures.push(`${client.label}: not a 404: ${d}`)
          if (keyIn(d)) failures.push(`${client.label}: the error names the key: ${keyContext(d)}`)
        }
      }
      assert.equal(failures.length, 0, `misses:\n  ${failures.join('\n  ')}`)
    })

    await t.test("the replaying proxy's log names no key", async (t) => {
      await sleep(100) // the log line of the last exchange
      const log = replayer.stderr()
      t.diagnostic(`replaying proxy log:\n${log.trim()}`)
      assert.ok(!keyIn(log), `the replaying proxy's stderr holds the key: ${keyContext(log)}`)
    })
  } finally {
    await replayer.stop()
  }
})

// ---------------------------------------------------------------------------------------------
// An HTTP/1.0 origin.

/** GET through a keep-alive agent: { httpVersion, headers, body, reused, socketPort }. */
function agentGet(agent, url) {
  return withTimeout(
    new Promise((resolve, reject) => {
      const req = http.get(url, { agent }, (res) => {
        const chunks = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () =>
          resolve({ status: res.statusCode, httpVersion: res.httpVersion, headers: res.headers, body: Buffer.concat(chunks), complete: res.complete, reused: req.reusedSocket, socketPort: req.socket.localPort }),
        )
        res.on('error', reject)
      })
      req.on('error', reject)
    }),
    10000,
    `GET ${url}`,
  )
}

test('an HTTP/1.0 origin (python3 -m http.server) through record + logRequests: HTTP/1.1 keep-alive to the client, every file whole, each request logged as completed, the cassette without errors', async (t) => {
  const root = fs.mkdtempSync(path.join(dir, 'http10-'))
  const files = [
    { name: 'index.html', data: Buffer.from('<!doctype html>\n<html><head><title>t</title><link rel="stylesheet" href="style.css"></head>\n<body><p>HTTP/1.0 origin</p><script src="app.js"></script></body></html>\n') },
    { name: 'style.css', data: Buffer.from('body { color: #123456; }\n'.repeat(40)) },
    { name: 'app.js', data: Buffer.from('console.log("app");\n'.repeat(30)) },
    { name: 'blob.bin', data: crypto.randomBytes(200 * 1024) },
  ]
  for (const f of files) fs.writeFileSync(path.join(root, f.name), f.data)
  const port = await deadPort()
  const python = spawn('python3', ['-m', 'http.server', '--bind', HOST, String(port)], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] })
  let pythonErr = ''
  python.stderr.on('data', (d) => {
    pythonErr += d
  })
  const cassette = path.join(dir, 'http10.jsonl')
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  try {
    await until(async () => python.exitCode === null && !(await connectRefused(port)), 10000, `python3 -m http.server listening on ${port} (stderr: ${pythonErr})`)
    await withChild({ proxy: `http://${HOST}:${port}`, port: 0, record: { path: cassette } }, async (proxy) => {
      const results = []
      for (const f of files) results.push({ file: f, res: await agentGet(agent, `${proxy.url}/${f.name}`) })
      await proxy.written(files.length, 'the HTTP/1.0 recording')
      // A log line is written when the answer's body has ended.
      await until(() => files.every((f) => proxy.stderr().includes(`/${f.name}`)), 3000, 'a log line for every file').catch(() => {})
      const log = proxy.stderr()
      t.diagnostic(`proxy log:\n${log.trim()}`)
      t.diagnostic(`answers: ${results.map(({ file, res }) => `${file.name}: HTTP/${res.httpVersion} ${res.status} connection=${res.headers.connection} reused=${res.reused} port=${res.socketPort}`).join('; ')}`)

      await t.test('the proxy answers HTTP/1.1, never with Connection: close', () => {
        const wrong = results
          .filter(({ res }) => res.httpVersion !== '1.1' || /close/i.test(res.headers.connection || ''))
          .map(({ file, res }) => `${file.name}: HTTP/${res.httpVersion}, connection: ${res.headers.connection}${res.httpVersion === '1.0' && !/keep-alive/i.test(res.headers.connection || '') ? ' (HTTP/1.0 without keep-alive: closed after each answer)' : ''}`)
        assert.deepEqual(wrong, [], 'answers not HTTP/1.1 keep-alive')
      })

      await t.test('the keep-alive socket is reused for every next request', () => {
        const notReused = results.slice(1).filter(({ res }) => !res.reused).map(({ file, res }) => `${file.name} (local port ${res.socketPort}, first ${results[0].res.socketPort})`)
        assert.deepEqual(notReused, [], 'requests that got a new connection')
      })

      await t.test('every file arrives whole, byte for byte', () => {
        const wrong = results
          .filter(({ file, res }) => res.status !== 200 || !res.complete || !res.body.equals(file.data))
          .map(({ file, res }) => `${file.name}: status ${res.status}, ${res.body.length} of ${file.data.length} bytes, complete ${res.complete}`)
        assert.deepEqual(wrong, [], 'files not delivered whole')
      })

      await t.test('each request is logged once, as completed: no line says failed', () => {
        const lines = log.split('\n').filter((l) => files.some((f) => l.includes(`/${f.name}`)))
        const notOnce = files
          .map((f) => [f.name, lines.filter((l) => l.includes(`GET /${f.name} -> `)).length])
          .filter(([, n]) => n !== 1)
          .map(([name, n]) => `${name}: ${n} request lines`)
        assert.deepEqual(notOnce, [], `files not logged exactly once; the log:\n${log}`)
        const failed = lines.filter((l) => /fail/i.test(l))
        assert.deepEqual(failed, [], 'log lines saying failed')
      })
    })

    await t.test('the cassette ends each exchange without an error, with the whole file', () => {
      const all = exchanges(cassette)
      assert.equal(all.length, files.length, `exchanges:\n${describeCassette(cassette)}`)
      const wrong = []
      for (const f of files) {
        const e = all.find((x) => x.request?.url === `/${f.name}`)
        if (!e) wrong.push(`${f.name}: not recorded`)
        else if (!e.end || e.end.error) wrong.push(`${f.name}: end ${JSON.stringify(e.end)}`)
        else if (!e.body.equals(f.data)) wrong.push(`${f.name}: recorded body ${e.body.length} of ${f.data.length} bytes, not the file`)
      }
      assert.deepEqual(wrong, [], `exchanges not ended cleanly:\n${describeCassette(cassette)}`)
    })
  } finally {
    agent.destroy()
    python.kill()
  }
})
