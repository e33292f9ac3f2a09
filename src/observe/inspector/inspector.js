// devproxy inspector: the last exchanges through the proxy, live over Server-Sent Events.
// Plain JavaScript, no dependencies; every value from a record is shown through textContent.
'use strict'
;(function () {
  const $ = (id) => document.getElementById(id)
  const state = {
    records: new Map(), // id -> record
    order: [], // ids, oldest first
    capacity: 500,
    total: 0,
    dropped: 0,
    selected: null,
    connected: false,
    waiting: new Map(), // key -> request still waiting long for the target
  }

  // ---- formatting ----------------------------------------------------------------------------
  const dash = '—'
  const ms = (v) => (typeof v === 'number' ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : dash)
  const msUnit = (v) => (typeof v === 'number' ? ms(v) + ' ms' : dash)
  const coding = (r) => `${r.codingIn || dash} → ${r.codingOut || dash}`
  function bytes(n) {
    if (typeof n !== 'number') return dash
    if (n < 1024) return n + ' B'
    if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KB'
    return (n / 1024 / 1024).toFixed(2) + ' MB'
  }
  const statusText = (r) => (r.status ? String(r.status) : 'failed')
  const statusClass = (r) => 's' + Math.floor((r.status || 0) / 100)
  const ruleSummary = (r) => (r.rules || []).map((x) => `${x.rule} ×${x.matches}`).join(', ')
  function el(tag, text, className) {
    const node = document.createElement(tag)
    if (text !== undefined && text !== null) node.textContent = String(text)
    if (className) node.className = className
    return node
  }

  // ---- filters -------------------------------------------------------------------------------
  function visible(r) {
    const path = $('filter-path').value.trim().toLowerCase()
    if (path && !String(r.url || '').toLowerCase().includes(path)) return false
    const cls = $('filter-status').value
    if (cls !== '' && Math.floor((r.status || 0) / 100) !== Number(cls)) return false
    return true
  }

  // ---- the list ------------------------------------------------------------------------------
  let renderQueued = false
  function scheduleRender() {
    if (renderQueued) return
    renderQueued = true
    requestAnimationFrame(() => {
      renderQueued = false
      render()
    })
  }

  function row(r) {
    const tr = document.createElement('tr')
    tr.dataset.id = r.id
    tr.dataset.url = r.url
    if (state.selected === r.id) tr.className = 'selected'
    tr.append(
      el('td', r.id, 'num'),
      el('td', r.method),
      el('td', r.url, 'url'),
      el('td', statusText(r), statusClass(r)),
      el('td', coding(r)),
      el('td', `${bytes(r.bytesIn)} → ${bytes(r.bytesOut)}`, 'num'),
      el('td', ms(r.upstreamMs), 'num'),
      el('td', ms(r.totalMs), 'num'),
      el('td', r.rewritten ? 'yes' : 'no'),
      el('td', ruleSummary(r)),
    )
    tr.querySelector('.url').title = r.url
    return tr
  }

  /** A request the target has kept waiting past 30 s (no upstreamTimeoutMs): shown until it is answered. */
  function waitingRow(w) {
    const tr = document.createElement('tr')
    tr.className = 'waiting'
    const seconds = Math.round((Date.now() - w.startedAt) / 1000)
    tr.append(el('td', dash, 'num'), el('td', w.method), el('td', w.url, 'url'), el('td', 'waiting', 'pending'))
    tr.append(el('td', `for the target, ${seconds} s so far`))
    tr.lastChild.colSpan = 6
    return tr
  }

  function render() {
    const body = $('exchange-rows')
    const rows = [...state.waiting.values()].filter((w) => visible({ url: w.url, status: 0 })).map(waitingRow)
    for (let i = state.order.length - 1; i >= 0; i--) {
      const r = state.records.get(state.order[i])
      if (r && visible(r)) rows.push(row(r))
    }
    body.replaceChildren(...rows)
    $('empty').hidden = rows.length > 0
    $('empty').textContent = state.order.length
      ? 'No exchange matches the filters.'
      : 'No exchanges yet: requests through the proxy show up here as they finish.'
    showStatus()
  }

  function showStatus() {
    const s = $('status')
    s.className = 'status ' + (state.connected ? 'live' : 'down')
    const parts = [state.connected ? 'live' : 'reconnecting…', `${state.order.length} shown of the last ${state.capacity}`, `${state.total} seen`]
    if (state.dropped) parts.push(`${state.dropped} dropped (viewer too slow)`)
    s.textContent = parts.join(' · ')
  }

  function add(r) {
    if (state.records.has(r.id)) return
    state.records.set(r.id, r)
    state.order.push(r.id)
    while (state.order.length > state.capacity) state.records.delete(state.order.shift())
  }

  // ---- the detail view -----------------------------------------------------------------------
  function kvRows(table, pairs) {
    table.replaceChildren(
      ...pairs.map(([k, v]) => {
        const tr = document.createElement('tr')
        tr.append(el('td', k), el('td', v))
        return tr
      }),
    )
    if (!pairs.length) {
      const tr = document.createElement('tr')
      tr.append(el('td', 'none', 'muted'))
      table.replaceChildren(tr)
    }
  }

  function showDetail(id) {
    const r = state.records.get(id)
    state.selected = r ? id : null
    $('detail').hidden = !r
    for (const tr of $('exchange-rows').children) tr.classList.toggle('selected', Number(tr.dataset.id) === state.selected)
    if (!r) return
    $('detail-title').textContent = `${r.method} ${r.url} → ${statusText(r)}`
    $('detail-error').hidden = !r.error
    $('detail-error').textContent = r.error || ''
    const ratio = r.bytesIn && r.bytesOut ? ` (${((r.bytesOut / r.bytesIn) * 100).toFixed(0)}% of in)` : ''
    kvRows($('detail-timings'), [
      ['started', r.startedAt ? new Date(r.startedAt).toLocaleTimeString() : dash],
      ['answered by', r.source || dash],
      ['upstream (to its headers)', msUnit(r.upstreamMs)],
      ['rewrite', msUnit(r.rewriteMs)],
      ['encode', msUnit(r.encodeMs)],
      ['total', msUnit(r.totalMs)],
      ['coding in → out', coding(r)],
      ['bytes in → out', `${bytes(r.bytesIn)} → ${bytes(r.bytesOut)}${ratio}`],
      ['rewritten', r.rewritten ? 'yes' : 'no'],
      ['recorded', r.recorded ? 'yes' : 'no'],
    ])
    kvRows($('detail-rules'), (r.rules || []).map((x) => [x.rule, `${x.matches} match${x.matches === 1 ? '' : 'es'}`]))
    kvRows($('detail-request-headers'), r.requestHeaders || [])
    kvRows($('detail-response-headers'), r.responseHeaders || [])
    const pre = $('detail-diff')
    if (r.preview) {
      pre.replaceChildren(
        ...diff(r.preview.before || '', r.preview.after || '').map(([op, text]) =>
          op === '=' ? document.createTextNode(text) : el(op === '+' ? 'ins' : 'del', text),
        ),
      )
    } else {
      pre.replaceChildren(el('span', 'No preview: the body was not rewritten, or no inspector page was open while it was.', 'muted'))
    }
  }

  // ---- diff: tokens (words, spaces, single symbols), longest common subsequence ---------------
  function tokens(s) {
    return s.match(/\s+|[A-Za-z0-9_]+|[^\sA-Za-z0-9_]/g) || []
  }

  /** [op, text] runs turning `a` into `b`: '=' kept, '-' removed, '+' inserted. */
  function diff(a, b) {
    const x = tokens(a)
    const y = tokens(b)
    let start = 0
    while (start < x.length && start < y.length && x[start] === y[start]) start++
    let ex = x.length
    let ey = y.length
    while (ex > start && ey > start && x[ex - 1] === y[ey - 1]) {
      ex--
      ey--
    }
    const out = []
    const push = (op, text) => {
      if (!text) return
      const last = out[out.length - 1]
      if (last && last[0] === op) last[1] += text
      else out.push([op, text])
    }
    push('=', x.slice(0, start).join(''))
    const xs = x.slice(start, ex)
    const ys = y.slice(start, ey)
    const n = xs.length
    const m = ys.length
    if (n * m > 4e6) {
      push('-', xs.join(''))
      push('+', ys.join(''))
    } else {
      const w = m + 1
      const lcs = new Uint32Array((n + 1) * w)
      for (let i = n - 1; i >= 0; i--) {
        for (let j = m - 1; j >= 0; j--) {
          lcs[i * w + j] = xs[i] === ys[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1])
        }
      }
      let i = 0
      let j = 0
      while (i < n && j < m) {
        if (xs[i] === ys[j]) {
          push('=', xs[i++])
          j++
        } else if (lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) push('-', xs[i++])
        else push('+', ys[j++])
      }
      while (i < n) push('-', xs[i++])
      while (j < m) push('+', ys[j++])
    }
    push('=', x.slice(ex).join(''))
    return out
  }

  // ---- the per-rule table --------------------------------------------------------------------
  let rulesTimer = null
  async function loadRules() {
    rulesTimer = null
    try {
      const res = await fetch('api/rules', { cache: 'no-store' })
      if (!res.ok) return
      const { rules } = await res.json()
      $('rule-rows').replaceChildren(
        ...rules.map((r) => {
          const tr = document.createElement('tr')
          tr.append(el('td', r.rule), el('td', r.exchanges, 'num'), el('td', r.matches, 'num'), el('td', ms(r.rewriteMs), 'num'))
          return tr
        }),
      )
      $('rules-empty').hidden = rules.length > 0
    } catch (err) {
      // The server went away: the event stream's status line says so.
    }
  }
  function rulesChanged() {
    // At most one refresh a second while the table is open.
    if (!$('rules').hidden && rulesTimer === null) rulesTimer = setTimeout(loadRules, 1000)
  }

  // ---- tabs and controls ---------------------------------------------------------------------
  function showTab(name) {
    $('exchanges').hidden = name !== 'exchanges'
    $('rules').hidden = name !== 'rules'
    $('tab-exchanges').classList.toggle('active', name === 'exchanges')
    $('tab-rules').classList.toggle('active', name === 'rules')
    if (name === 'rules') loadRules()
  }
  $('tab-exchanges').addEventListener('click', () => showTab('exchanges'))
  $('tab-rules').addEventListener('click', () => showTab('rules'))
  $('filter-path').addEventListener('input', render)
  $('filter-status').addEventListener('change', render)
  $('clear').addEventListener('click', () => {
    state.records.clear()
    state.order = []
    showDetail(null)
    render()
  })
  $('exchange-rows').addEventListener('click', (e) => {
    const tr = e.target.closest('tr')
    if (tr) showDetail(Number(tr.dataset.id))
  })
  $('detail-close').addEventListener('click', () => showDetail(null))

  // ---- live updates --------------------------------------------------------------------------
  const events = new EventSource('api/events')
  events.addEventListener('open', () => {
    state.connected = true
    showStatus()
  })
  events.addEventListener('error', () => {
    // EventSource reconnects by itself (the server asks for 1 s); a new snapshot follows.
    state.connected = false
    showStatus()
  })
  events.addEventListener('snapshot', (e) => {
    const snap = JSON.parse(e.data)
    state.capacity = snap.capacity
    state.total = snap.total
    state.dropped = snap.dropped
    state.records.clear()
    state.order = []
    for (const r of snap.records) add(r)
    state.waiting = new Map((snap.waiting || []).map((w) => [w.key, w]))
    if (state.selected !== null && !state.records.has(state.selected)) showDetail(null)
    render()
    rulesChanged()
  })
  events.addEventListener('record', (e) => {
    const r = JSON.parse(e.data)
    state.total++
    add(r)
    scheduleRender()
    if (r.rules && r.rules.length) rulesChanged()
  })
  events.addEventListener('waiting', (e) => {
    const w = JSON.parse(e.data)
    state.waiting.set(w.key, w)
    scheduleRender()
  })
  events.addEventListener('answered', (e) => {
    state.waiting.delete(JSON.parse(e.data).key)
    scheduleRender()
  })
  events.addEventListener('dropped', (e) => {
    state.dropped += JSON.parse(e.data).dropped
    showStatus()
  })

  // For tests and the console.
  window.devproxyInspector = { state, diff }
  render()
})()
