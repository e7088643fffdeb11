/**
 * The dashboard's page: one HTML document with its script inline, no build
 * step and nothing fetched from elsewhere. It listens to `/events` (server-
 * sent events) and redraws. Everything shown that came from a worker is set
 * as text (never as HTML): names of functions and stats are hostile input.
 * @module
 */

const SCRIPT = String.raw`
'use strict';
const $ = (id) => document.getElementById(id);
function el(tag, attrs, children) {
  const node = document.createElementNS(tag === 'svg' || tag === 'path' || tag === 'polyline' || tag === 'line' || tag === 'text' || tag === 'g' ? 'http://www.w3.org/2000/svg' : 'http://www.w3.org/1999/xhtml', tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  for (const c of [].concat(children === undefined ? [] : children)) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}
const bytes = (n) => n >= 1e9 ? (n / 1e9).toFixed(1) + ' GB' : n >= 1e6 ? (n / 1e6).toFixed(1) + ' MB' : n >= 1e3 ? (n / 1e3).toFixed(0) + ' kB' : n + ' B';
const uptime = (s) => s >= 3600 ? Math.floor(s / 3600) + 'h' + String(Math.floor(s % 3600 / 60)).padStart(2, '0') + 'm' : s >= 60 ? Math.floor(s / 60) + 'm' + String(s % 60).padStart(2, '0') + 's' : s + 's';
const COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
function rates(functions, seconds, nowS) {
  let calls = 0, errors = 0, ms = 0;
  for (const f of functions) for (const b of f.buckets) if (b[0] > nowS - seconds) { calls += b[1]; errors += b[2]; ms += b[3]; }
  return { perSecond: calls / seconds, meanMs: calls ? ms / calls : 0, errors };
}
function perSecond(functions, nowS, seconds) {
  const out = new Array(seconds).fill(0);
  for (const f of functions) for (const b of f.buckets) { const i = b[0] - (nowS - seconds + 1); if (i >= 0 && i < seconds) out[i] += b[1]; }
  return out;
}
// An axis label: three significant digits, with k/M for large values; exponents only for values too small to read otherwise.
function tick(v) {
  const a = Math.abs(v);
  if (a >= 1e6) return Number((v / 1e6).toPrecision(3)) + 'M';
  if (a >= 1e4) return Number((v / 1e3).toPrecision(3)) + 'k';
  return a !== 0 && a < 1e-3 ? v.toExponential(1) : String(Number(v.toPrecision(3)));
}
function lineChart(series, width, height, opts) {
  const svg = el('svg', { width, height, viewBox: '0 0 ' + width + ' ' + height, class: 'chart' });
  const pts = series.flatMap((s) => s.points);
  if (pts.length === 0) { svg.append(el('text', { x: 8, y: height / 2, class: 'muted' }, 'no data yet')); return svg; }
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  const x0 = opts && opts.x0 !== undefined ? opts.x0 : Math.min(...xs), x1 = opts && opts.x1 !== undefined ? opts.x1 : Math.max(...xs);
  // A flat series (a worker with no calls: all zeros) gets the range 0..1, not a made-up tiny one.
  const y0 = Math.min(0, ...ys), top = Math.max(...ys), y1 = top > y0 ? top : y0 + 1;
  const X = (x) => 36 + (x1 === x0 ? 0 : (x - x0) / (x1 - x0)) * (width - 44);
  const Y = (y) => height - 16 - (y - y0) / (y1 - y0) * (height - 26);
  svg.append(el('line', { x1: 36, x2: width - 8, y1: Y(y0), y2: Y(y0), class: 'axis' }));
  svg.append(el('text', { x: 2, y: Y(y1) + 4, class: 'tick' }, tick(y1)));
  svg.append(el('text', { x: 2, y: Y(y0), class: 'tick' }, tick(y0)));
  series.forEach((s, i) => {
    if (s.points.length === 0) return;
    svg.append(el('polyline', { points: s.points.map((p) => X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1)).join(' '), fill: 'none', stroke: s.color || COLORS[i % COLORS.length], 'stroke-width': 1.8 }));
  });
  return svg;
}
function legend(series) {
  return el('div', { class: 'legend' }, series.map((s, i) => el('span', {}, [el('i', { style: 'background:' + (s.color || COLORS[i % COLORS.length]) }), s.label])));
}
function table(header, rows, attrs) {
  return el('table', attrs || {}, [el('thead', {}, el('tr', {}, header.map((h) => el('th', {}, h)))), el('tbody', {}, rows)]);
}
function render(state) {
  const nowS = Math.floor(state.at / 1000);
  const up = state.workers.filter((w) => w.state === 'up');
  $('where').textContent = 'namespace ' + state.namespace + ' on ' + state.server;
  $('count').textContent = up.length + ' worker(s) up';
  $('count').dataset.up = String(up.length);
  $('updated').textContent = 'updated ' + new Date(state.at).toLocaleTimeString();
  // Workers
  const rows = state.workers.map((w) => {
    const s = w.stats;
    const cells = [el('td', { 'data-field': 'name', class: 'long', title: w.name }, w.name), el('td', {}, w.id), el('td', { 'data-field': 'state', class: 'state ' + w.state }, w.state)];
    // A departed worker's last answer is no longer live figures (a call it had in flight then is not in flight now): the row says when it went.
    if (s && w.state === 'up') {
      const served = rates(s.served, 10, nowS);
      const total = s.served.reduce((n, f) => n + f.total, 0);
      const made = s.made.reduce((n, f) => n + f.total, 0);
      const errors = Object.values(s.errors).reduce((n, e) => n + e, 0);
      const routes = Object.entries(s.routes).map(([peer, r]) => peer + ':' + r).join(' ');
      cells.push(el('td', { class: 'long', title: s.host + ' (' + s.pid + ')' }, s.host + ' (' + s.pid + ')'), el('td', {}, uptime(s.uptimeS)), el('td', {}, s.backend), el('td', { class: 'long', title: routes }, s.transport + (routes ? ' · ' + [...new Set(Object.values(s.routes))].join('/') : '')),
        el('td', { 'data-field': 'calls', class: 'num' }, total), el('td', { 'data-field': 'made', class: 'num' }, made), el('td', { class: 'num' }, served.perSecond.toFixed(1)), el('td', { class: 'num' }, served.meanMs.toFixed(2)),
        el('td', { 'data-field': 'errors', class: 'num' + (errors ? ' bad' : '') }, errors), el('td', { 'data-field': 'in-flight', class: 'num' }, s.inFlight), el('td', { class: 'num' }, s.rrefs.owned + '/' + s.rrefs.used), el('td', { class: 'num' }, s.contexts),
        el('td', { 'data-field': 'tensors', class: 'num' }, s.tensors), el('td', { class: 'num' }, bytes(s.tensorBytes)), el('td', { class: 'num' }, s.wasmHeapBytes ? bytes(s.wasmHeapBytes) : '-'), el('td', { class: 'num' }, bytes(s.rssBytes)));
    } else {
      cells.push(el('td', { colspan: 16, class: 'muted' }, w.state === 'up' ? 'no stats answer' : 'departed ' + new Date(w.lastSeen).toLocaleTimeString()));
    }
    return el('tr', { 'data-worker': w.name, 'data-state': w.state, class: w.state === 'up' ? '' : 'departed' }, cells);
  });
  $('workers').replaceChildren(table(['worker', 'id', 'state', 'host (pid)', 'uptime', 'backend', 'transport · routes', 'calls served', 'calls made', 'served/s', 'ms', 'errors', 'in flight', 'rrefs o/u', 'contexts', 'tensors', 'tensor mem', 'wasm heap', 'rss'], rows, { id: 'workers-table' }));
  // Learning: the values workers report, over time
  const byStat = new Map();
  for (const w of state.workers) for (const [stat, points] of Object.entries(w.history)) {
    if (!byStat.has(stat)) byStat.set(stat, []);
    byStat.get(stat).push({ label: w.name, points });
  }
  const learning = [...byStat.entries()].sort().map(([stat, series]) => el('div', { class: 'card', 'data-stat': stat }, [el('h3', {}, stat + ' ' + series.map((s) => s.points.length ? Number(s.points[s.points.length - 1][1].toPrecision(4)) : '').join(' ')), lineChart(series, 360, 150), legend(series)]));
  $('learning').replaceChildren(...(learning.length ? learning : [el('p', { class: 'muted' }, 'No worker reports values yet (reportStat(agent, name, value)).')]));
  // Calls per second, per worker, over the window
  const seconds = 120;
  const charts = up.filter((w) => w.stats).map((w, i) => {
    const served = perSecond(w.stats.served, nowS, seconds).map((v, k) => [k - seconds + 1, v]);
    const made = perSecond(w.stats.made, nowS, seconds).map((v, k) => [k - seconds + 1, v]);
    const series = [{ label: 'served', points: served, color: COLORS[0] }, { label: 'made', points: made, color: COLORS[1] }];
    return el('div', { class: 'card' }, [el('h3', {}, w.name + ' calls/s (last 2 min)'), lineChart(series, 360, 120, { x0: -seconds + 1, x1: 0 }), legend(series)]);
  });
  $('rates').replaceChildren(...(charts.length ? charts : [el('p', { class: 'muted' }, up.length ? 'No stats answer from the workers up.' : 'No worker is up.')]));
  // Functions
  const fnRows = [];
  for (const w of up) if (w.stats) for (const [side, list] of [['served', w.stats.served], ['made', w.stats.made]]) for (const f of list) {
    const r = rates([f], 10, nowS);
    fnRows.push(el('tr', {}, [el('td', {}, w.name), el('td', {}, side), el('td', {}, f.fn), el('td', { class: 'num' }, r.perSecond.toFixed(1)), el('td', { class: 'num' }, r.meanMs.toFixed(2)), el('td', { class: 'num' }, r.errors), el('td', { class: 'num' }, f.total)]));
  }
  $('functions').replaceChildren(table(['worker', 'side', 'function', 'calls/s (10 s)', 'ms', 'errors', 'total'], fnRows));
  const errRows = [];
  for (const w of state.workers) if (w.stats) for (const [code, n] of Object.entries(w.stats.errors)) errRows.push(el('tr', {}, [el('td', {}, w.name), el('td', {}, code), el('td', { class: 'num' }, n)]));
  $('errors').replaceChildren(errRows.length ? table(['worker', 'code', 'count'], errRows) : el('p', { class: 'muted' }, 'No errors.'));
  const events = state.events.slice().reverse().slice(0, 50).map((e) => el('li', { 'data-event': e.kind, 'data-worker': e.worker }, [el('time', {}, new Date(e.at).toLocaleTimeString()), ' ', el('b', { class: 'state ' + e.kind }, e.kind), ' ', e.worker]));
  $('events').replaceChildren(...(events.length ? events : [el('li', { class: 'muted' }, 'No joins, leaves, failures or restarts yet.')]));
}
const source = new EventSource('events');
source.onopen = () => { $('live').textContent = 'live'; $('live').className = 'live'; };
source.onerror = () => { $('live').textContent = 'disconnected'; $('live').className = 'off'; };
source.onmessage = (m) => { try { render(JSON.parse(m.data)); } catch (e) { console.error(e); } };
`;

/** The dashboard's HTML page. */
export const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tensorbus dashboard</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 13px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f4f6f9; }
  header { display: flex; gap: 16px; align-items: baseline; padding: 10px 18px; background: #1d2330; color: #fff; }
  header h1 { font-size: 16px; margin: 0; }
  header span { opacity: .8; }
  .live { color: #7ee08a; } .off { color: #ff8a80; }
  main { padding: 8px 18px 24px; }
  section { margin-top: 14px; }
  h2 { font-size: 14px; margin: 0 0 6px; } h3 { font-size: 12px; margin: 0 0 4px; font-weight: 600; }
  table { border-collapse: collapse; background: #fff; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
  th, td { padding: 3px 8px; border-bottom: 1px solid #e6e9ef; text-align: left; white-space: nowrap; }
  th { background: #eef1f6; font-weight: 600; font-size: 12px; }
  /* The workers table fits a 1,400-pixel window: 19 columns, so narrower cells, headers that wrap, long values cut (the whole in the tooltip). */
  #workers-table th { white-space: normal; vertical-align: bottom; }
  #workers-table th, #workers-table td { padding: 3px 5px; }
  #workers-table td.long { max-width: 150px; overflow: hidden; text-overflow: ellipsis; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  tr.departed td { color: #9aa3b2; }
  .state.up { color: #2e7d32; } .state.left, .state.gone, .state.leave { color: #b26a00; } .state.failed, .state.fail { color: #c62828; } .state.join { color: #2e7d32; } .state.restart { color: #1565c0; }
  .bad { color: #c62828; font-weight: 600; }
  .cards { display: flex; flex-wrap: wrap; gap: 10px; }
  .card { background: #fff; padding: 8px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
  .chart .axis { stroke: #c7cdd8; } .chart .tick { font-size: 10px; fill: #6b7485; } .muted { color: #8a93a3; }
  .legend span { margin-right: 10px; font-size: 11px; } .legend i { display: inline-block; width: 10px; height: 3px; margin-right: 4px; vertical-align: middle; }
  ul { list-style: none; padding: 0; margin: 0; background: #fff; max-height: 220px; overflow: auto; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
  li { padding: 2px 8px; border-bottom: 1px solid #eef1f6; } time { color: #6b7485; font-variant-numeric: tabular-nums; }
  .row { display: flex; gap: 18px; flex-wrap: wrap; align-items: flex-start; }
</style>
</head>
<body>
<header><h1>tensorbus</h1><span id="where">connecting…</span><span id="count"></span><span id="updated"></span><span id="live" class="off">connecting</span></header>
<main>
  <section><h2>Workers</h2><div id="workers"></div></section>
  <section><h2>Learning (values the workers report)</h2><div id="learning" class="cards"></div></section>
  <section><h2>Calls per second</h2><div id="rates" class="cards"></div></section>
  <div class="row">
    <section><h2>Functions</h2><div id="functions"></div></section>
    <section><h2>Errors by code</h2><div id="errors"></div></section>
    <section><h2>Events</h2><ul id="events"></ul></section>
  </div>
</main>
<script>${SCRIPT}</script>
</body>
</html>
`;
