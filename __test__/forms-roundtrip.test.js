'use strict'
// Issue 48, outside in: a real Django 5.2 admin (fixtures/django-forms, sqlite in a temp dir) edited in
// headless Chromium through the proxy stores what it stores edited directly. The link rewrite shows the
// target's URLs as the proxy's (`//<proxy>/page-a` in an <input>, a <textarea>); rewriteRequestBodies
// must turn every form of the proxy's origin the browser sends back into the target's, scheme included:
// multipart fields (the Link form, it has a file field), urlencoded fields (the Note form, percent-encoded)
// and the query string (the change list's search box). The same steps run twice, directly against Django
// (the control) and through the proxy, each on a fresh copy of the seeded database: log in (CSRF), open
// every change form and press Save without editing, add an object with a URL typed as the page shows one
// (and a file upload, whose bytes spell the proxy's origin: never touched), search for a URL as the page
// shows it; then the database is read back, every field, attachment names and bytes included, and the
// two runs must agree. Needs python3 with Django (scripts/install-chromium.sh installs it): fails without.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { HOST, deadPort, launchChromium, lib, request, until, withTimeout } = require('./helpers')

const SITE = path.join(__dirname, 'fixtures', 'django-forms')
const USER = 'admin'
const PASSWORD = 'devproxy-forms-test'
// What searching each change list for page-a finds: the seeded row 1.
const FOUND = { link: { count: '1 result (2 total)', ids: ['1'] }, note: { count: '1 result (2 total)', ids: ['1'] } }

let tmp
let browser
let proxy
let djangoPort
let target // http://127.0.0.1:<django>
let proxyHost // 127.0.0.1:<proxy>
let seeded // what seed.py was given
let stored // what the database holds after the steps taken directly (the control)
let upload // the bytes of the file uploaded through the admin
let direct // the run directly against Django
let proxied // the run through the proxy

/** The environment of Django's processes for a data directory (database and uploads in it). */
function djangoEnv(dir) {
  return {
    ...process.env,
    FORMS_DATA_DIR: dir,
    FORMS_DB: path.join(dir, 'db.sqlite3'),
    FORMS_MEDIA: path.join(dir, 'media'),
    // Nothing written into the fixture's directory.
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONUNBUFFERED: '1',
  }
}

/** Runs python3 in the fixture's directory; resolves to its stdout, rejects with its stderr. */
function python(args, env, input = '') {
  const run = new Promise((resolve, reject) => {
    const child = spawn('python3', args, { cwd: SITE, env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', (err) => reject(new Error(`python3 ${args.join(' ')} could not run: ${err.message}`)))
    child.on('close', (code, signal) =>
      code === 0 ? resolve(stdout) : reject(new Error(`python3 ${args.join(' ')} exited with ${code ?? signal}:\n${stderr}`)),
    )
    child.stdin.end(input)
  })
  return withTimeout(run, 60000, `python3 ${args.join(' ')}`)
}

/** `manage.py runserver` on the Django port over `dir`'s data; `ready` once it answers, `stop()` always. */
function runserver(dir) {
  const child = spawn('python3', ['manage.py', 'runserver', `${HOST}:${djangoPort}`, '--noreload', '--skip-checks'], {
    cwd: SITE,
    env: djangoEnv(dir),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  let spawnError = null
  child.stdout.on('data', (d) => (output += d))
  child.stderr.on('data', (d) => (output += d))
  child.on('error', (err) => (spawnError = err))
  const exited = new Promise((resolve) => child.on('close', resolve))
  const ready = (async () => {
    try {
      await until(
        async () => {
          if (spawnError) throw new Error(`python3 could not run: ${spawnError.message}`)
          if (child.exitCode !== null) throw new Error(`it exited with ${child.exitCode}`)
          try {
            return (await request(`${target}/admin/login/`, { timeout: 5000 })).status === 200
          } catch {
            return false
          }
        },
        30000,
        `answering on ${target}`,
        100,
      )
    } catch (err) {
      throw new Error(`Django's runserver did not start on ${target} (${err.message}); its output:\n${output}`)
    }
  })()
  return {
    ready,
    async stop() {
      if (child.exitCode === null && child.signalCode === null && !spawnError) {
        child.kill('SIGTERM')
        await withTimeout(exited, 10000, 'runserver exiting').catch(() => {
          child.kill('SIGKILL')
          return exited
        })
      }
    },
  }
}

/**
 * Presses `selector` (a submit button of a POST form), expects a redirect and waits for the page it
 * leads to, `landing`; fails with the page's text otherwise (a CSRF failure, the form with its errors).
 */
async function submit(page, selector, landing) {
  const posting = page.waitForRequest((r) => r.method() === 'POST', { timeout: 15000 })
  await page.click(selector)
  const post = await posting
  const response = await post.response()
  if (!response || response.status() !== 302) {
    await page.waitForLoadState('load')
    const text = await page.locator('body').innerText().catch((err) => `(unreadable: ${err.message})`)
    assert.fail(`POST ${post.url()} answered ${response ? response.status() : 'nothing'}, not a redirect:\n${text.slice(0, 3000)}`)
  }
  await page.waitForURL(landing, { waitUntil: 'load', timeout: 15000 })
}

/**
 * The same steps as a user would take in the admin, directly (`via` false) or through the proxy, on a
 * fresh copy of the seeded data: what the database holds after, what the searches found, what the
 * browser posted, and (through the proxy) any request or link that went round it to Django.
 */
async function run(via) {
  const base = via ? proxy.url : target
  // How a page shows the target's origin: through the proxy, the link rewrite made it `//<proxy>`.
  const shown = via ? `//${proxyHost}` : target
  const dir = path.join(tmp, via ? 'proxied' : 'direct')
  fs.cpSync(path.join(tmp, 'seeded'), dir, { recursive: true })
  const django = runserver(dir)
  const context = await browser.newContext()
  const seen = { posts: [], around: [], linksToDjango: [], search: {} }
  try {
    await django.ready
    const page = await context.newPage()
    page.setDefaultTimeout(15000)
    page.on('request', (r) => {
      const url = new URL(r.url())
      if (url.protocol.startsWith('http') && url.origin !== base) seen.around.push(r.url())
      if (r.method() === 'POST') seen.posts.push({ url: url.pathname, type: r.headers()['content-type'] })
    })
    const look = async () => {
      const found = await page.$$eval(
        '[href], [src], [action], [srcset], [formaction]',
        (els, host) =>
          els.flatMap((el) =>
            ['href', 'src', 'action', 'srcset', 'formaction']
              .map((name) => el.getAttribute(name))
              .filter((value) => value && value.includes(host))
              .map((value) => `<${el.localName}> ${value}`),
          ),
        `${HOST}:${djangoPort}`,
      )
      for (const link of found) seen.linksToDjango.push(`${page.url()}: ${link}`)
    }
    const visit = async (url) => {
      const response = await page.goto(base + url, { waitUntil: 'load' })
      assert.equal(response.status(), 200, `GET ${base}${url}`)
      await look()
    }
    const saved = async (model, what) => {
      await submit(page, 'input[name="_save"]', `${base}/admin/links/${model}/`)
      await look()
      const message = await page.locator('.messagelist .success').innerText()
      assert.match(message, new RegExp(`was ${what} successfully`), `${model}: ${message}`)
    }

    // Log in: the login form's CSRF token and cookie, the session cookie after.
    await visit('/admin/login/?next=/admin/')
    await page.fill('#id_username', USER)
    await page.fill('#id_password', PASSWORD)
    await submit(page, 'input[type="submit"]', `${base}/admin/`)
    await look()
    assert.match(await page.locator('#content h1').innerText(), /Site administration/)

    // The change lists searched (a GET form) for a URL as the page shows it, before anything is saved.
    for (const model of ['link', 'note']) {
      await visit(`/admin/links/${model}/`)
      await page.fill('#searchbar', `${shown}/page-a`)
      await Promise.all([page.waitForURL(/\?q=/, { waitUntil: 'load' }), page.press('#searchbar', 'Enter')])
      await look()
      seen.search[model] = {
        count: (await page.locator('#changelist-search .quiet').innerText()).trim(),
        ids: await page.$$eval('#result_list input.action-select', (els) => els.map((el) => el.value)),
      }
    }

    // Every change form saved as it is.
    for (const [model, rows] of [['link', seeded.links], ['note', seeded.notes]]) {
      for (let id = 1; id <= rows.length; id++) {
        await visit(`/admin/links/${model}/${id}/change/`)
        await saved(model, 'changed')
      }
    }

    // New objects, their URLs typed as the page shows the site's links; the Link with a file.
    await visit('/admin/links/note/add/')
    await page.fill('#id_title', 'Added note')
    await page.fill('#id_url', `${shown}/page-d`)
    await page.fill('#id_notes', `Copied from ${shown}/page-e`)
    await saved('note', 'added')
    await visit('/admin/links/link/add/')
    await page.fill('#id_title', 'Added link')
    await page.fill('#id_url', `${shown}/page-d`)
    await page.fill('#id_notes', `Copied from ${shown}/page-e`)
    await page.setInputFiles('#id_attachment', { name: 'upload.bin', mimeType: 'application/octet-stream', buffer: upload })
    await saved('link', 'added')
  } finally {
    await context.close()
    await django.stop()
  }
  seen.db = JSON.parse(await python(['dump.py'], djangoEnv(dir)))
  return seen
}

before(async () => {
  try {
    await python(['-c', 'import django'], process.env)
  } catch (err) {
    throw new Error(`Django cannot be imported by python3: install it with sh scripts/install-chromium.sh (python3 -m pip install 'django>=5.2,<5.3'). ${err.message}`)
  }
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'devproxy-forms-'))
  djangoPort = await deadPort()
  target = `http://${HOST}:${djangoPort}`
  proxy = await lib().start({ proxy: target, port: 0, quiet: true })
  proxyHost = new URL(proxy.url).host
  // The file bytes spell the proxy's origin every way the bodies' rewrite looks for: it must leave them.
  upload = Buffer.concat([
    Buffer.from([0, 255, 1, 13, 10]),
    Buffer.from(`http://${proxyHost}/in-the-file //${proxyHost}/x ${encodeURIComponent(`//${proxyHost}/y`)}`),
    Buffer.from([254, 10]),
  ])
  const notes = `Read ${target}/page-b first, then <a href="${target}/page-c">c</a>; the script is <script src="//cdn.example.test/lib.js"></script>`
  // A row of each model with no URL of the target's: nothing to rewrite, a no-op save either way.
  const elsewhere = { title: 'Elsewhere', url: 'https://example.test/page', notes: 'Only //cdn.example.test/lib.js and https://example.test/' }
  seeded = {
    links: [
      {
        title: `Mirror of ${target}/`,
        url: `${target}/page-a`,
        notes,
        attachment: { name: 'seed.bin', base64: Buffer.concat([Buffer.from([0, 255]), Buffer.from(`${target}/in-the-seed`)]).toString('base64') },
      },
      { ...elsewhere },
    ],
    notes: [{ title: `Mirror of ${target}/`, url: `${target}/page-a`, notes }, { ...elsewhere }],
  }
  const added = { url: `${target}/page-d`, notes: `Copied from ${target}/page-e` }
  stored = {
    links: [
      { id: 1, ...seeded.links[0], attachment: { ...seeded.links[0].attachment, name: 'attachments/seed.bin' } },
      { id: 2, ...elsewhere, attachment: null },
      { id: 3, title: 'Added link', ...added, attachment: { name: 'attachments/upload.bin', base64: upload.toString('base64') } },
    ],
    notes: [...seeded.notes.map((row, i) => ({ id: i + 1, ...row })), { id: 3, title: 'Added note', ...added }],
    files: ['attachments/seed.bin', 'attachments/upload.bin'],
    log: [
      ...[...seeded.links, ...seeded.notes].map((row) => ({ object: row.title, action: 2, change: 'No fields changed.' })),
      { object: 'Added note', action: 1, change: 'Added.' },
      { object: 'Added link', action: 1, change: 'Added.' },
    ],
  }
  const seed = djangoEnv(path.join(tmp, 'seeded'))
  fs.mkdirSync(seed.FORMS_DATA_DIR)
  await python(['manage.py', 'migrate', '--noinput'], seed)
  await python(['manage.py', 'createsuperuser', '--noinput'], {
    ...seed,
    DJANGO_SUPERUSER_USERNAME: USER,
    DJANGO_SUPERUSER_PASSWORD: PASSWORD,
    DJANGO_SUPERUSER_EMAIL: 'admin@example.test',
  })
  await python(['seed.py'], seed, JSON.stringify(seeded))
  browser = await launchChromium()
})

after(async () => {
  if (browser) await browser.close()
  if (proxy) await withTimeout(proxy.stop(), 15000, 'proxy.stop()')
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
})

test('directly, saving without edits changes nothing and new objects are stored as typed (the control)', { timeout: 60000 }, async () => {
  direct = await run(false)
  assert.deepEqual(direct.db, stored)
  // The look for links to Django's port sees them where they are: directly, the URL widget's "Currently:" link.
  assert.ok(direct.linksToDjango.some((link) => link.endsWith(`<a> ${target}/page-a`)), direct.linksToDjango.join('\n'))
  assert.deepEqual(direct.search, FOUND)
})

test('through the proxy: login, CSRF, every admin page, multipart and urlencoded saves, the upload byte for byte', { timeout: 60000 }, async () => {
  proxied = await run(true)
  assert.deepEqual(proxied.around, [], 'every request of the browser went to the proxy')
  assert.deepEqual(proxied.linksToDjango, [], "no link in the pages points at Django's port")
  const types = proxied.posts.map(({ url, type }) => `${url} ${type.split(';')[0]}`)
  assert.deepEqual(types, [
    '/admin/login/ application/x-www-form-urlencoded',
    '/admin/links/link/1/change/ multipart/form-data',
    '/admin/links/link/2/change/ multipart/form-data',
    '/admin/links/note/1/change/ application/x-www-form-urlencoded',
    '/admin/links/note/2/change/ application/x-www-form-urlencoded',
    '/admin/links/note/add/ application/x-www-form-urlencoded',
    '/admin/links/link/add/ multipart/form-data',
  ])
  assert.deepEqual(proxied.db.files, stored.files)
  assert.deepEqual(
    proxied.db.links.map((row) => row.attachment),
    stored.links.map((row) => row.attachment),
    'attachments: names and bytes, the seeded one kept, the uploaded one as sent',
  )
})

test('saved without edits through the proxy, the database is what the same saves store directly', () => {
  assert.ok(direct && proxied, 'both runs completed (see the tests before)')
  assert.deepEqual(proxied.db, direct.db)
})

test("a URL typed as the page shows it (//<proxy>/page-d) is stored with the target's origin and scheme", () => {
  assert.ok(proxied, 'the run through the proxy completed (see the test before)')
  const wanted = { url: `${target}/page-d`, notes: `Copied from ${target}/page-e` }
  const pick = ({ url, notes }) => ({ url, notes })
  assert.deepEqual(
    { note: pick(proxied.db.notes.at(-1)), link: pick(proxied.db.links.at(-1)) },
    { note: wanted, link: wanted },
    'the Note (posted urlencoded) and the Link (multipart) added through the proxy',
  )
})

test('the change lists searched through the proxy for a URL as the page shows it find the seeded objects', () => {
  assert.ok(proxied, 'the run through the proxy completed (see the test before)')
  assert.deepEqual(proxied.search, FOUND)
})
