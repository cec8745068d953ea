// Faultline UI. Every piece of log text reaches the page through
// textContent (the el() helper); nothing here assigns innerHTML, so a log
// line containing <script> is shown, never run.
'use strict';

const state = {
  q: '', since: '', until: '', from: 0, size: 50,
  // after is the cursor of the page at from (the server's next of the page
  // before it): deep pages cost no more than the first. cursors keeps the
  // cursor of each page seen, for the previous button.
  after: '', cursors: {},
  filters: { node: [], container: [], source: [], level: [] },
  findings: [], live: null,
};

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const $ = (id) => document.getElementById(id);

// fmtTime shows an RFC 3339 time to the millisecond: log lines carry no
// finer times, and nanoseconds (a range's exclusive end is the last event
// plus 1 ns) only make the eye stumble.
function fmtTime(t) {
  if (!t || t.startsWith('0001-')) return '';
  return t.replace('T', ' ').replace('Z', '').replace(/(\.\d{3})\d+/, '$1');
}

// highlighted renders message with the byte ranges of the index's
// highlights wrapped in <mark>; offsets are UTF-8 bytes.
function highlighted(message, ranges) {
  const span = el('span', { class: 'msg' });
  if (!ranges || ranges.length === 0) { span.textContent = message; return span; }
  const bytes = new TextEncoder().encode(message);
  const dec = new TextDecoder();
  let pos = 0;
  for (const [s, e] of ranges) {
    if (s < pos || e > bytes.length) continue;
    span.append(document.createTextNode(dec.decode(bytes.subarray(pos, s))));
    span.append(el('mark', {}, dec.decode(bytes.subarray(s, e))));
    pos = e;
  }
  span.append(document.createTextNode(dec.decode(bytes.subarray(pos))));
  return span;
}

async function api(path, params) {
  const url = new URL(path, location.href);
  for (const [k, v] of Object.entries(params || {})) {
    if (Array.isArray(v)) v.forEach((x) => url.searchParams.append(k, x));
    else if (v !== '' && v !== undefined && v !== null) url.searchParams.set(k, v);
  }
  const r = await fetch(url, { credentials: 'same-origin' });
  if (r.status === 401) {
    // The session cookie is gone or the token changed: sign in again,
    // then come back to this very page.
    location.assign('/login?next=' + encodeURIComponent(location.pathname + location.search));
  }
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function queryParams() {
  return { q: state.q, since: state.since, until: state.until, ...state.filters };
}

function setStatus(text, isError) {
  const s = $('status');
  s.textContent = text;
  s.className = isError ? 'error' : '';
}

// The search lives in the URL: a link shows the same search, and the back
// button goes to the previous one. urlParams is the state as URL
// parameters; fromURL reads it back.
function urlParams() {
  const p = new URLSearchParams();
  if (state.q) p.set('q', state.q);
  if (state.since) p.set('since', state.since);
  if (state.until) p.set('until', state.until);
  for (const f of facetFields) for (const v of state.filters[f]) p.append(f, v);
  if (state.from) p.set('from', state.from);
  if (state.from && state.after) p.set('after', state.after);
  return p;
}

function fromURL() {
  const p = new URLSearchParams(location.search);
  state.q = p.get('q') || '';
  state.since = p.get('since') || '';
  state.until = p.get('until') || '';
  for (const f of facetFields) state.filters[f] = p.getAll(f);
  state.from = Math.max(0, parseInt(p.get('from') || '0', 10) || 0);
  state.after = p.get('after') || '';
  $('q').value = state.q;
  $('since').value = state.since;
  $('until').value = state.until;
}

// search runs the current state's search; a new search (not one the back
// button restored) is recorded in the browser's history.
async function search(fromHistory) {
  if (!state.from) {
    // A new search or the first page: cursors of another query are void.
    state.after = '';
    state.cursors = {};
  }
  const qs = urlParams().toString();
  const url = location.pathname + (qs ? '?' + qs : '');
  if (fromHistory !== true && url !== location.pathname + location.search) history.pushState(null, '', url);
  setStatus('Searching…');
  try {
    const res = await api('api/search', {
      ...queryParams(), size: state.size, facets: 1, histogram: 60, highlight: 1,
      ...(state.after ? { after: state.after } : { from: state.from }),
    });
    state.cursors[state.from + state.size] = res.next || '';
    renderResults(res);
    renderFacets(res.facets || {});
    renderHistogram(res.histogram || []);
    renderActiveFilters();
    const ms = (res.took_ns / 1e6).toFixed(1);
    setStatus(`${res.total} hits · ${ms} ms` + (res.errors ? ' · partial: ' + res.errors.join('; ') : ''));
    $('prev').disabled = state.from === 0;
    $('next').disabled = !res.next;
  } catch (e) {
    setStatus('Search failed: ' + e.message, true);
  }
  loadTimeline();
}

function hitRow(h) {
  return el('li', { class: `hit lvl-${h.level || 'none'}`, dataset: { id: h.id, node: h.node }, onclick: () => openContext(h.id) },
    el('span', { class: 'time' }, fmtTime(h.time)),
    el('span', { class: 'node' }, h.node),
    el('span', { class: 'level' }, h.level || ''),
    el('span', { class: 'source' }, h.source || ''),
    highlighted(h.message, h.highlights));
}

function renderResults(res) {
  state.lastHits = res.hits;
  const byNode = $('by-node').checked;
  $('results').hidden = byNode;
  $('columns').hidden = !byNode;
  if (!byNode) {
    $('results').replaceChildren(...res.hits.map(hitRow));
    return;
  }
  // One column per node, each in time order, so what every node said
  // about the same thing reads side by side.
  const nodes = [...new Set(res.hits.map((h) => h.node))].sort();
  $('columns').replaceChildren(...nodes.map((n) => el('div', { class: 'column', dataset: { node: n } },
    el('h3', {}, n),
    el('ol', {}, ...res.hits.filter((h) => h.node === n).map(hitRow)))));
}

const facetFields = ['node', 'container', 'source', 'level'];

function renderFacets(facets) {
  const groups = facetFields.map((f) => {
    const terms = facets[f] || [];
    // Keep active values visible even when the current hits lack them.
    for (const v of state.filters[f]) if (!terms.some((t) => t.term === v)) terms.push({ term: v, count: 0 });
    return el('div', { class: 'facet-group', dataset: { field: f } },
      el('h3', {}, f),
      ...terms.map((t) => el('button', {
        type: 'button', class: 'facet' + (state.filters[f].includes(t.term) ? ' active' : ''),
        dataset: { field: f, value: t.term }, onclick: () => toggleFilter(f, t.term),
      }, el('span', {}, t.term), el('span', { class: 'count' }, t.count))));
  });
  $('facets').replaceChildren(...groups);
}

function toggleFilter(field, value) {
  const vs = state.filters[field];
  const i = vs.indexOf(value);
  if (i >= 0) vs.splice(i, 1); else vs.push(value);
  state.from = 0;
  search();
}

function renderActiveFilters() {
  const chips = [];
  for (const f of facetFields) {
    for (const v of state.filters[f]) {
      chips.push(el('button', { type: 'button', class: 'chip', onclick: () => toggleFilter(f, v) }, `${f}:${v} ×`));
    }
  }
  if (state.since || state.until) {
    chips.push(el('button', {
      type: 'button', class: 'chip',
      onclick: () => { state.since = state.until = ''; $('since').value = $('until').value = ''; search(); },
    }, `time ${state.since || '…'} – ${state.until || '…'} ×`));
  }
  $('active-filters').replaceChildren(...chips);
}

function renderHistogram(buckets) {
  const maxCount = Math.max(1, ...buckets.map((b) => b.count));
  $('histogram').replaceChildren(...buckets.map((b) => {
    const bar = el('button', {
      type: 'button', class: 'hbar', title: `${fmtTime(b.start)} – ${fmtTime(b.end)}: ${b.count}`,
      onclick: () => { state.since = b.start; state.until = b.end; $('since').value = b.start; $('until').value = b.end; state.from = 0; search(); },
    });
    bar.style.height = `${(100 * b.count) / maxCount}%`;
    return bar;
  }));
}

async function openContext(id) {
  try {
    const c = await api('api/context/' + encodeURIComponent(id), { n: 15 });
    const line = (h, focus) => el('li', { class: 'ctx-line' + (focus ? ' focus' : ''), dataset: { id: h.id } },
      el('span', { class: 'line' }, h.line),
      el('span', { class: 'time' }, fmtTime(h.time)),
      el('span', { class: 'msg' }, h.message));
    $('context-title').textContent = `${c.hit.node} ${c.hit.file}:${c.hit.line}`;
    $('context-lines').replaceChildren(...c.before.map((h) => line(h, false)), line(c.hit, true), ...c.after.map((h) => line(h, false)));
    $('context').hidden = false;
    document.querySelector('#context .focus').scrollIntoView({ block: 'center' });
  } catch (e) {
    setStatus('Context failed: ' + e.message, true);
  }
}

async function loadFindings() {
  try {
    state.findings = await api('api/findings');
  } catch (e) {
    setStatus('Findings failed: ' + e.message, true);
    return;
  }
  renderFindings();
}

function renderFindings() {
  const fs = state.findings;
  $('findings-count').textContent = fs.length ? `(${fs.length})` : '(none)';
  $('findings').replaceChildren(...fs.map((f, i) => {
    const ev = (f.evidence || []).map((e) => el('li', {},
      el('a', {
        href: '#', class: 'evidence-link', dataset: { id: e.record_id },
        onclick: (event) => { event.preventDefault(); openContext(e.record_id); },
      }, `${e.node} ${e.file}:${e.line} ${fmtTime(e.time)}  `, e.text),
      e.fact ? el('span', { class: 'hint' }, ` (${e.fact})`) : null));
    const ruled = (f.ruled_out || []).map((r) => el('li', {}, el('b', {}, r.cause), ': ', r.reason));
    const det = el('details', {
      class: `finding sev-${f.severity} ${f.status === 'resolved' ? 'resolved' : ''}`,
      dataset: { id: f.id, cause: f.cause }, open: i === 0 && !f.explained_by ? '' : null,
    },
    el('summary', {}, el('span', { class: 'sev' }, f.severity), f.title || f.cause,
      el('span', { class: 'hint' }, `  ${f.cause} · ${(f.nodes || []).join(', ')}${f.explained_by ? ' · consequence of ' + f.explained_by : ''}${f.status === 'resolved' ? ' · resolved' : ''}`)),
    el('p', { class: 'summary' }, f.summary),
    el('h3', {}, 'Remediation'), el('p', { class: 'remediation' }, f.remediation),
    ruled.length ? el('h3', {}, 'Ruled out') : null, ruled.length ? el('ul', { class: 'ruled-out' }, ...ruled) : null,
    el('h3', {}, 'Evidence'), el('ul', { class: 'evidence' }, ...ev));
    return det;
  }));
}

async function loadTimeline() {
  let tl;
  try {
    tl = await api('api/timeline', { ...queryParams(), histogram: 80 });
  } catch (e) {
    $('timeline').replaceChildren(el('p', { class: 'hint' }, 'Timeline failed: ' + e.message));
    return;
  }
  const t0 = Date.parse(tl.start), t1 = Date.parse(tl.end);
  const span = Math.max(1, t1 - t0);
  const pct = (t) => `${Math.min(100, Math.max(0, (100 * (Date.parse(t) - t0)) / span))}%`;
  // The range follows the query's hits: evidence outside it is not drawn.
  const inRange = (t) => { const v = Date.parse(t); return v >= t0 && v <= t1; };
  const lanes = tl.lanes.map((lane) => {
    const track = el('div', { class: 'lane-track' });
    const maxCount = Math.max(1, ...lane.buckets.map((b) => b.count));
    for (const b of lane.buckets) {
      if (!b.count) continue;
      const bar = el('div', { class: 'lane-bar', title: `${fmtTime(b.start)}: ${b.count}` });
      bar.style.left = pct(b.start);
      // Buckets have round widths: the last may end past the range.
      const from = Math.max(t0, Date.parse(b.start)), to = Math.min(t1, Date.parse(b.end));
      bar.style.width = `${(100 * Math.max(0, to - from)) / span}%`;
      bar.style.height = `${(100 * b.count) / maxCount}%`;
      track.append(bar);
    }
    for (const h of lane.errors) {
      const m = el('button', { type: 'button', class: 'lane-err', title: `${fmtTime(h.time)} ${h.message}`, onclick: () => openContext(h.id) });
      m.style.left = pct(h.time);
      track.append(m);
    }
    for (const f of state.findings) {
      for (const e of f.evidence || []) {
        if (e.node !== lane.node || !e.time || !inRange(e.time)) continue;
        const m = el('button', { type: 'button', class: 'lane-finding', title: `${f.title}: ${e.text}`, onclick: () => openContext(e.record_id) }, '◆');
        m.style.left = pct(e.time);
        track.append(m);
      }
    }
    return el('div', { class: 'lane', dataset: { node: lane.node } }, el('span', { class: 'lane-name' }, lane.node), track);
  });
  // Five ticks from start to end, as times to the millisecond.
  const ticks = [0, 1, 2, 3, 4].map((i) => el('span', {}, fmtTime(new Date(t0 + (span * i) / 4).toISOString())));
  const axis = el('div', { class: 'timeline-axis' }, ...ticks);
  $('timeline').replaceChildren(...lanes, axis);
}

function setLive(on) {
  if (state.live) { state.live.close(); state.live = null; }
  $('live-list').hidden = !on;
  if (!on) return;
  const list = $('live-list');
  list.replaceChildren(el('div', { class: 'hint' }, 'Following new events…'));
  const es = new EventSource('api/stream');
  es.addEventListener('log', (m) => {
    const h = JSON.parse(m.data);
    for (const f of facetFields) {
      if (state.filters[f].length && !state.filters[f].includes(h[f])) return;
    }
    list.prepend(hitRow(h));
    while (list.childElementCount > 300) list.lastElementChild.remove();
  });
  es.addEventListener('finding', () => loadFindings().then(loadTimeline));
  state.live = es;
}

function readForm() {
  state.q = $('q').value.trim();
  state.since = $('since').value.trim();
  state.until = $('until').value.trim();
  state.from = 0;
}

function init() {
  $('search-form').addEventListener('submit', (e) => { e.preventDefault(); readForm(); search(); });
  $('context-close').addEventListener('click', () => { $('context').hidden = true; });
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape') $('context').hidden = true; });
  $('prev').addEventListener('click', () => {
    state.from = Math.max(0, state.from - state.size);
    state.after = state.cursors[state.from] || '';
    search();
  });
  $('next').addEventListener('click', () => {
    state.after = state.cursors[state.from + state.size] || '';
    state.from += state.size;
    search();
  });
  $('live').addEventListener('change', (e) => setLive(e.target.checked));
  $('by-node').addEventListener('change', () => renderResults({ hits: state.lastHits || [] }));
  api('api/syntax').then((s) => { $('syntax').textContent = s.syntax; }).catch(() => {});
  window.addEventListener('popstate', () => { fromURL(); search(true); });
  fromURL();
  loadFindings().then(() => search(true));
}

document.addEventListener('DOMContentLoaded', init);
