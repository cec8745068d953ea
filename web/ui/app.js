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
  findings: [], live: false, stream: null,
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
  // Always three digits: RFC 3339 drops trailing zeros (22:43:47.96), and a
  // column of times reads in line only when each has as many.
  const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.(\d+))?/.exec(t);
  if (!m) return t.replace('T', ' ').replace('Z', '');
  return `${m[1]} ${m[2]}.${((m[3] || '') + '000').slice(0, 3)}`;
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
  if (!r.ok) {
    const err = new Error(body.error || r.statusText);
    err.body = body;
    throw err;
  }
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
    renderHint(res.hint);
    renderResults(res);
    renderFacets(res.facets || {});
    renderHistogram(res.total ? res.histogram || [] : []);
    renderActiveFilters();
    renderEmpty(res.total === 0);
    const ms = (res.took_ns / 1e6).toFixed(1);
    setStatus(`${res.total} hits · ${ms} ms` + (res.errors ? ' · partial: ' + res.errors.join('; ') : '') +
      (res.missing_share ? ` · about ${Math.max(1, Math.round(res.missing_share * 100))}% of the stream missing` : '') +
      (res.partial ? ' · partial: ' + res.partial.join('; ') : ''));
    $('prev').disabled = state.from === 0;
    $('next').disabled = !res.next;
  } catch (e) {
    queryFailed(e);
  }
  loadTimeline();
}

// queryFailed shows why a search failed; a query the language cannot read
// says where, and the cursor is put there.
function queryFailed(e) {
  const b = e.body || {};
  renderHint(b.hint);
  state.lastHits = [];
  $('results').replaceChildren();
  $('columns').replaceChildren();
  renderHistogram([]);
  renderEmpty(false);
  if (b.position) {
    const q = $('q');
    q.classList.add('bad');
    q.focus();
    // position is a 1-based column in characters; the input counts UTF-16 units.
    const at = [...q.value].slice(0, b.position - 1).join('').length;
    q.setSelectionRange(at, at + 1);
    setStatus(`Query error at column ${b.position}: ${e.message.replace(/^query: column \d+: /, '')}`, true);
    return;
  }
  setStatus('Search failed: ' + e.message, true);
}

// renderHint offers the query in Faultline's words when it was written in
// another language (LogQL), with a button that runs it.
function renderHint(hint) {
  const box = $('query-hint');
  if (!hint) { box.hidden = true; box.replaceChildren(); return; }
  const run = el('button', {
    type: 'button', class: 'run-hint',
    onclick: () => { $('q').value = hint.equivalent; readForm(); search(); },
  }, 'Search this instead');
  box.replaceChildren(
    el('span', {}, `This looks like ${hint.language}. In Faultline's syntax: `),
    el('code', { class: 'equivalent' }, hint.equivalent || '(nothing to carry over)'), ' ',
    hint.equivalent ? run : null,
    ...(hint.notes || []).map((n) => el('div', { class: 'hint' }, n)));
  box.hidden = false;
}

// renderEmpty says why there is nothing to show, instead of a bare axis.
function renderEmpty(empty) {
  const p = $('empty');
  p.hidden = !empty;
  if (!empty) return;
  const what = state.q ? `“${state.q}”` : 'this search';
  const filters = facetFields.flatMap((f) => state.filters[f].map((v) => `${f}:${v}`));
  const range = state.since || state.until ? ` between ${state.since || 'the start'} and ${state.until || 'now'}` : '';
  p.textContent = `No events match ${what}${filters.length ? ' with ' + filters.join(', ') : ''}${range}. ` +
    'Terms match whole tokens or their parts as typed; try fewer terms, a wildcard (ray*), or remove a filter.';
}

// messageLines renders a record's message one line per span, each with
// the highlights that fall in it; a multi-line record (a traceback, a ray
// status block) is collapsed to its first line and the lines that hold a
// match, with a button to show all of it.
function messageLines(message, ranges) {
  const msg = el('span', { class: 'msg' });
  const bytes = new TextEncoder().encode(message);
  const dec = new TextDecoder();
  const lines = [];
  let start = 0;
  for (let i = 0; i <= bytes.length; i++) {
    if (i === bytes.length || bytes[i] === 10) { lines.push([start, i]); start = i + 1; }
  }
  let hidden = 0;
  lines.forEach(([a, b], n) => {
    if (n > 0) msg.append('\n');
    const inLine = (ranges || []).filter(([s, e]) => s >= a && e <= b).map(([s, e]) => [s - a, e - a]);
    const text = dec.decode(bytes.subarray(a, b));
    const ln = highlighted(text, inLine);
    ln.className = 'ln';
    if (n > 0 && inLine.length === 0) { ln.classList.add('more'); hidden++; }
    msg.append(ln);
  });
  if (lines.length === 1) return msg;
  const rec = el('span', { class: 'record collapsed' }, msg);
  const toggle = el('button', {
    type: 'button', class: 'expand', title: 'Show the whole record',
    onclick: (e) => {
      e.stopPropagation();
      const open = rec.classList.toggle('collapsed');
      toggle.textContent = open ? `+${hidden} lines` : 'collapse';
    },
  }, `+${hidden} lines`);
  if (hidden === 0) return msg;
  rec.append(toggle);
  return rec;
}

function hitRow(h) {
  return el('li', { class: `hit lvl-${h.level || 'none'}`, dataset: { id: h.id, node: h.node }, onclick: () => openContext(h.id) },
    el('span', { class: 'time', title: h.time || 'no time' }, fmtTime(h.time) || '—'),
    el('span', { class: 'node' }, h.node),
    el('span', { class: 'level' }, h.level || ''),
    el('span', { class: 'source' }, h.source || ''),
    messageLines(h.message, h.highlights));
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
  $('histogram').hidden = buckets.length === 0;
  const axis = $('histogram-axis');
  axis.replaceChildren(...(buckets.length ? [buckets[0].start, buckets[buckets.length - 1].end].map((t) => el('span', {}, fmtTime(t))) : []));
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

// loadLaunches shows how each launch ended, in the engine's own sentence
// (serve's /api/launches): a launch that came up says so, when and on which
// nodes, instead of an empty findings panel. Without the route (an offline
// index), the panel stays hidden.
async function loadLaunches() {
  let ls;
  try {
    ls = await api('api/launches');
  } catch (e) {
    $('launches-panel').hidden = true;
    $('launches-panel').dataset.loaded = 'none';
    return;
  }
  $('launches-panel').dataset.loaded = 'yes';
  $('launches-panel').hidden = !ls || ls.length === 0;
  $('launches').replaceChildren(...(ls || []).map((l) => el('li', {
    class: `launch outcome-${l.outcome}`, dataset: { cluster: l.cluster, launch: l.launch, outcome: l.outcome },
  },
  el('span', { class: 'outcome' }, l.outcome === 'ready' ? 'came up' : l.outcome),
  el('span', { class: 'launch-summary' }, l.summary || `launch ${l.launch} of ${l.cluster}`),
  l.first_failure ? recordLink(l.first_failure.record_id, 'first failure', 'launch-failure') : null)));
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

// upsertFinding takes a finding from the live stream: a new one is added,
// a new version of one shown replaces it, kept in the store's order (root
// causes first, as /api/findings gives them) by reloading when new.
function upsertFinding(f) {
  const i = state.findings.findIndex((x) => x.id === f.id);
  if (i < 0) { soon('findings', () => loadFindings().then(loadTimeline)); soon('launches', loadLaunches); return; }
  if ((state.findings[i].revision || 0) > (f.revision || 0)) return;
  state.findings[i] = f;
  renderFindings();
  soon('timeline', loadTimeline);
  soon('launches', loadLaunches);
}

// soon runs fn once within 300 ms however often it is asked for meanwhile:
// a replay announces a finding's revisions in bursts, and each reload of
// the timeline is a search per node.
const pending = {};
function soon(key, fn) {
  if (pending[key]) return;
  pending[key] = setTimeout(() => { delete pending[key]; fn(); }, 300);
}

const factLabel = (name) => name.replace(/_/g, ' ');

// prose renders a rule's text with its `commands` as code (as text nodes:
// a rule's text is data, never markup).
// prose renders a finding's text: `code` spans as code, each line its own
// block ("- " lines as a list item whose wrapped lines hang under its text,
// indented lines indented), and no break inside a word with a hyphen
// (--node-ip-address broke as "-" / "-node-ip-address", spark-2 as "spark-"
// / "2)"): the text copies as written, only the places it wraps change.
function prose(tag, cls, text) {
  const p = el(tag, { class: cls });
  const lines = (text || '').split('\n');
  let code = false; // a code span may run over a line's end
  for (const line of lines) {
    const m = /^(\s*)(- )?/.exec(line);
    const host = lines.length > 1
      ? el('span', { class: 'line' + (m[2] ? ' bullet' : '') + (m[1] ? ' indent' : '') })
      : p;
    if (lines.length > 1) {
      if (m[1]) host.style.paddingLeft = `${m[1].length * 0.5}em`;
      p.append(host);
    }
    line.slice(lines.length > 1 ? m[1].length : 0).split('`').forEach((part, i) => {
      if (i > 0) code = !code;
      if (part === '') return;
      const into = code ? host.appendChild(el('code', {})) : host;
      unbroken(into, part);
    });
  }
  return p;
}

// unbroken appends text whose words with a hyphen (at most 40 characters:
// a longer one may have to break on a phone) never wrap inside.
function unbroken(into, text) {
  for (const part of text.split(/(\S*(?:\w-|-\w)\S*)/)) {
    if (part === '') continue;
    if (/\w-|-\w/.test(part) && part.length <= 40) into.append(el('span', { class: 'nobr' }, part));
    else into.append(document.createTextNode(part));
  }
  return into;
}
const clock = (t) => fmtTime(t).slice(11); // HH:MM:SS.mmm
const recordLink = (id, text, cls) => el('a', {
  href: '#', class: cls || 'record-link', dataset: { id },
  onclick: (event) => { event.preventDefault(); event.stopPropagation(); openContext(id); },
}, text);

// nodeTable draws the facts the cause rests on, one row per node (what
// each node asked for, registered and was started with): the table an
// engineer builds by hand with docker exec and ray.nodes().
function nodeTable(t) {
  if (!t || !t.rows || t.rows.length === 0) return null;
  const head = el('tr', {}, el('th', {}, 'node'), ...t.columns.map((c) => el('th', {}, factLabel(c))));
  const rows = t.rows.map((r) => el('tr', { dataset: { node: r.node } },
    el('th', { scope: 'row' }, r.node || '(cluster)'),
    ...r.cells.map((c, i) => el('td', { dataset: { label: factLabel(t.columns[i]), fact: t.columns[i] } },
      ...(c.values || []).flatMap((v, j) => [j ? ', ' : null, recordLink((c.records || [])[j], v, 'fact-value')]),
      c.values && c.values.length ? null : el('span', { class: 'none' }, '—'),
      c.seen_on && c.seen_on.length ? el('span', { class: 'seen-on' }, ` (logs of ${c.seen_on.join(', ')})`) : null))));
  return el('div', { class: 'table-wrap' }, el('table', { class: 'node-table' }, el('thead', {}, head), el('tbody', {}, ...rows)));
}

// launchTimeline draws the finding's evidence per node on one time axis,
// with the failure point marked: what each node did, and when it broke.
function launchTimeline(f) {
  const evs = (f.evidence || []).filter((e) => e.time);
  if (evs.length === 0) return null;
  const fail = f.failure_point >= 0 ? f.evidence[f.failure_point] : null;
  const times = evs.map((e) => Date.parse(e.time));
  let t0 = Math.min(...times), t1 = Math.max(...times);
  const pad = Math.max(1000, (t1 - t0) * 0.04);
  t0 -= pad; t1 += pad;
  const pct = (t) => `${(100 * (Date.parse(t) - t0)) / (t1 - t0)}%`;
  const nodes = [...new Set([...(f.nodes || []), ...evs.map((e) => e.node)])];
  const lanes = nodes.map((n) => {
    const track = el('div', { class: 'ft-track' });
    for (const e of evs.filter((x) => x.node === n)) {
      const isFail = fail && e.record_id === fail.record_id && e.line === fail.line;
      const dot = el('button', {
        type: 'button', class: 'ft-dot' + (isFail ? ' ft-fail-dot' : ''), dataset: { id: e.record_id, fact: e.fact || '' },
        title: `${clock(e.time)} ${e.node} ${e.fact ? '(' + factLabel(e.fact) + ') ' : ''}${e.text}`,
        onclick: () => openContext(e.record_id),
      });
      dot.style.left = pct(e.time);
      track.append(dot);
    }
    return el('div', { class: 'ft-lane', dataset: { node: n } }, el('span', { class: 'ft-name' }, n), track);
  });
  const marks = [];
  if (fail) {
    const line = el('div', { class: 'ft-failure', title: `Failed here: ${fail.text}` }, el('span', {}, `✗ failed ${clock(fail.time)}`));
    line.style.left = pct(fail.time);
    marks.push(line);
  }
  const axis = el('div', { class: 'ft-axis' },
    el('span', {}, clock(new Date(t0).toISOString())), el('span', {}, clock(new Date(t1).toISOString())));
  return el('div', { class: 'finding-timeline' }, el('div', { class: 'ft-body' }, ...lanes, el('div', { class: 'ft-marks' }, ...marks)), axis);
}

function evidenceItem(f, e, i) {
  const isFail = i === f.failure_point;
  const first = (e.text || '').split('\n');
  return el('li', { class: isFail ? 'failure' : null, dataset: { index: i } },
    el('span', { class: 'ev-time' }, e.time ? clock(e.time) : '—'),
    el('span', { class: 'ev-node' }, e.node),
    el('span', { class: 'ev-body' },
      el('a', {
        href: '#', class: 'evidence-link', dataset: { id: e.record_id },
        onclick: (event) => { event.preventDefault(); openContext(e.record_id); },
      }, unbroken(el('span', {}), first[0]), first.length > 1 ? ` (+${first.length - 1} lines)` : ''),
      evidenceWhere(e, isFail)));
}

// evidenceWhere says where a line is and what it proves. On a phone the
// path breaks after a folder, never inside the file's name, its line
// number ("raylet.out:1" / "7") or the fact ("tri" / "ed node ip").
function evidenceWhere(e, isFail) {
  const w = el('span', { class: 'ev-where' });
  const parts = `${e.file}:${e.line}`.split('/');
  parts.forEach((part, i) => {
    if (i < parts.length - 1) w.append(part + '/', el('wbr', {}));
    else w.append(part.length <= 48 ? el('span', { class: 'nobr' }, part) : part);
  });
  if (e.fact) w.append(el('span', { class: 'nobr' }, ` · ${factLabel(e.fact)}`));
  if (isFail) w.append(el('span', { class: 'nobr' }, ' · ✗ failed here'));
  return w;
}

function evidenceList(f) {
  const all = f.evidence || [];
  if (all.length === 0) return null;
  const shown = f.evidence_shown && f.evidence_shown.length ? f.evidence_shown : all.map((_, i) => i);
  const list = el('ol', { class: 'evidence' }, ...shown.map((i) => evidenceItem(f, all[i], i)));
  if (shown.length >= all.length) return [el('h3', {}, 'Evidence, in time order'), list];
  const more = el('button', {
    type: 'button', class: 'show-all',
    onclick: () => {
      const full = list.classList.toggle('full');
      list.replaceChildren(...(full ? all.map((e, i) => evidenceItem(f, e, i)) : shown.map((i) => evidenceItem(f, all[i], i))));
      more.textContent = full ? `Show ${shown.length}` : `Show all ${all.length}`;
    },
  }, `Show all ${all.length}`);
  return [el('h3', {}, `Evidence, in time order `, el('span', { class: 'hint' }, `${shown.length} of ${all.length} lines `), more), list];
}

function findingCard(f, i) {
  const resolved = f.status === 'resolved';
  const meta = [f.cause, `confidence ${f.confidence}`, `launch ${f.launch}`, (f.nodes || []).join(', ')];
  if (f.first_seen) meta.push(`proven ${fmtTime(f.first_seen)}`);
  if (f.explained_by) meta.push('consequence of ' + ((state.findings.find((x) => x.id === f.explained_by) || {}).rule || f.explained_by));
  if (f.status && f.status !== 'active') meta.push(f.status);
  const ruled = (f.ruled_out || []).map((r) => el('li', {}, el('b', {}, r.cause), ': ', prose('span', 'reason', r.reason)));
  return el('details', {
    class: `finding sev-${f.severity}${resolved ? ' resolved' : ''}${f.explained_by ? ' consequence' : ''}`,
    dataset: { id: f.id, cause: f.cause }, open: i === 0 && !f.explained_by ? '' : null,
  },
  el('summary', {},
    el('span', { class: 'sev' }, f.severity),
    el('span', { class: 'title' }, f.title || f.cause),
    el('span', { class: 'meta' }, meta.filter(Boolean).join(' · '))),
  el('div', { class: 'finding-body' },
    prose('p', 'summary', f.summary),
    ...(f.notes || []).map((n) => prose('p', 'note', n)),
    el('div', { class: 'fix' }, el('h3', {}, 'Fix'), prose('p', 'remediation', f.remediation)),
    f.table && f.table.rows && f.table.rows.length ? el('h3', {}, 'Per node') : null,
    nodeTable(f.table),
    el('h3', {}, 'Launch timeline ', el('span', { class: 'hint' }, 'evidence per node · ✗ where it failed')),
    launchTimeline(f),
    ...(evidenceList(f) || []),
    ruled.length ? el('h3', {}, 'Ruled out') : null, ruled.length ? el('ul', { class: 'ruled-out' }, ...ruled) : null));
}

function renderFindings() {
  const fs = state.findings;
  $('findings-count').textContent = fs.length ? `(${fs.length})` : '(none)';
  // Keep open what the reader opened across a live update.
  const open = new Set([...document.querySelectorAll('#findings details.finding')].filter((d) => d.open).map((d) => d.dataset.id));
  const fresh = document.querySelectorAll('#findings details.finding').length === 0;
  if (fs.length === 0) {
    $('findings').replaceChildren(el('p', { class: 'hint' }, 'No rule has found a failure in these logs. Findings appear here as soon as one is proven.'));
    return;
  }
  $('findings').replaceChildren(...fs.map((f, i) => {
    const card = findingCard(f, i);
    if (!fresh) card.open = open.has(f.id) || (i === 0 && !f.explained_by && open.size === 0);
    return card;
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
    // Where each active finding's launch failed, on the node that said so.
    for (const f of state.findings) {
      const e = f.status === 'active' && f.failure_point >= 0 ? f.evidence[f.failure_point] : null;
      if (!e || e.node !== lane.node || !inRange(e.time)) continue;
      const m = el('div', { class: 'lane-failure', title: `${f.title}: failed here, ${fmtTime(e.time)}` });
      m.style.left = pct(e.time);
      track.append(m);
    }
    return el('div', { class: 'lane', dataset: { node: lane.node } }, el('span', { class: 'lane-name' }, lane.node), track);
  });
  // Five ticks from start to end, as times to the millisecond.
  const ticks = [0, 1, 2, 3, 4].map((i) => el('span', {}, fmtTime(new Date(t0 + (span * i) / 4).toISOString())));
  const axis = el('div', { class: 'timeline-axis' }, ...ticks);
  $('timeline').replaceChildren(...lanes, axis);
}

// The stream is always open for findings: the panel shows a new finding
// as soon as it is proven, whether or not "Live lines" is ticked (it showed
// none until a reload). Ticking it reopens the stream with the log lines.
function openStream() {
  if (state.stream) state.stream.close();
  const es = new EventSource('api/stream' + (state.live ? '' : '?logs=0'));
  const list = $('live-list');
  es.addEventListener('open', () => {
    $('findings-live').hidden = false;
    // Whatever was proven while the stream was down.
    loadFindings().then(loadTimeline);
    loadLaunches();
  });
  es.addEventListener('error', () => { $('findings-live').hidden = true; });
  es.addEventListener('log', (m) => {
    if (!state.live) return;
    const h = JSON.parse(m.data);
    for (const f of facetFields) {
      if (state.filters[f].length && !state.filters[f].includes(h[f])) return;
    }
    list.prepend(hitRow(h));
    while (list.childElementCount > 300) list.lastElementChild.remove();
  });
  es.addEventListener('finding', (m) => upsertFinding(JSON.parse(m.data)));
  state.stream = es;
}

function setLive(on) {
  state.live = on;
  $('live-list').hidden = !on;
  if (on) $('live-list').replaceChildren(el('div', { class: 'hint' }, 'Following new log lines…'));
  openStream();
}

function readForm() {
  $('q').classList.remove('bad');
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
  openStream();
  // A launch coming up proves no finding: look again now and then.
  setInterval(() => { if (!document.hidden) loadLaunches(); }, 15000);
}

document.addEventListener('DOMContentLoaded', init);
