// The clusters list: one row per cluster with its labels, reachability, health and counts of
// its assignments by state, from the compact fleet document alone (no request of its own).
// The same filter as the matrix's (a name, or label selectors: env=prod region!=us); a click
// on a label filters by it. One page of rows at a time.
import { h, show, labelChips } from './dom.js';
import { parseQuery, matchCluster, toggleTerm, rowHealth, healthText, healthClass, CELL, FLAG_DRIFTED, FLAG_CONFLICTED } from './filter.js';

export const PAGE_SIZE = 100;

let controls = null; // built once, so typing keeps focus while the data refreshes

function buildControls(root, app) {
  const q = h('input', { id: 'clusters-q', type: 'search', placeholder: 'name or label: env=prod region!=us', size: 32, 'aria-label': 'Filter clusters' });
  const summary = h('span', { id: 'clusters-summary', class: 'muted' });
  const prev = h('button', { type: 'button', id: 'clusters-prev' }, '‹ Previous');
  const next = h('button', { type: 'button', id: 'clusters-next' }, 'Next ›');
  const body = h('div', { id: 'clusters-body' });
  let timer = 0;
  const changed = (page) => {
    const p = new URLSearchParams();
    if (q.value) p.set('q', q.value);
    if (page > 1) p.set('page', String(page));
    app.setParams(p, 'clusters');
  };
  const page = () => Number(app.params().get('page') || 1);
  q.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(() => changed(1), 150); });
  prev.addEventListener('click', () => changed(Math.max(1, page() - 1)));
  next.addEventListener('click', () => changed(page() + 1));
  body.addEventListener('click', (e) => {
    const chip = e.target.closest('button.label');
    if (!chip) return;
    q.value = toggleTerm(q.value, chip.dataset.label);
    changed(1);
  });
  show(root,
    h('h2', null, 'Clusters'),
    h('div', { class: 'controls' }, q, summary, h('span', { class: 'pager' }, prev, next)),
    h('p', { class: 'legend' }, 'Health is the kstatus the agents reported for releases that wait for it ("-": none did). Click a label to filter by it.'),
    body);
  controls = { root, q, summary, prev, next, body };
}

// counts sums one cluster's assignments by state name, plus drifted and conflicted.
function counts(fleet, row) {
  const out = { assigned: 0, drifted: 0, conflicted: 0 };
  for (let j = 0; j < fleet.releases.length; j++) {
    const code = row[CELL * j];
    if (code === 0) continue;
    out.assigned++;
    const name = fleet.states[code];
    out[name] = (out[name] || 0) + 1;
    const flags = row[CELL * j + 3];
    if (flags & FLAG_DRIFTED) out.drifted++;
    if (flags & FLAG_CONFLICTED) out.conflicted++;
  }
  return out;
}

const num = (n, cls) => h('td', { class: n ? `num ${cls}` : 'zero' }, String(n || 0));

export function render(root, fleet, params, app) {
  if (!controls || controls.root !== root || !root.contains(controls.body)) buildControls(root, app);
  const c = controls;
  const q = params.get('q') || '';
  if (document.activeElement !== c.q) c.q.value = q;
  const query = parseQuery(q);
  const rows = [];
  fleet.clusters.forEach((cl, i) => { if (matchCluster(cl, query)) rows.push(i); });
  const pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
  const page = Math.min(pages, Math.max(1, Number(params.get('page') || 1)));
  const shown = rows.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE);
  c.summary.textContent = rows.length
    ? `${rows.length} of ${fleet.clusters.length} cluster(s) shown, page ${page} of ${pages}`
    : `no cluster matches (${fleet.clusters.length} in the fleet)`;
  c.prev.disabled = page <= 1;
  c.next.disabled = page >= pages;
  const all = fleet.releases.map((_, j) => j);
  const trs = shown.map((i) => {
    const cl = fleet.clusters[i];
    const n = counts(fleet, fleet.cells[i]);
    const hs = rowHealth(fleet.cells[i], all);
    const reach = cl.reachable ? 'yes' : (cl.seen ? 'no' : 'never connected');
    return h('tr', { data: { cluster: cl.name } },
      h('th', { scope: 'row', class: cl.reachable ? '' : 'unreachable' }, h('a', { href: `#/cluster/${encodeURIComponent(cl.name)}` }, cl.name)),
      h('td', { class: 'labels' }, labelChips(cl.labels)),
      h('td', { class: cl.reachable ? '' : 's-unreachable', data: { field: 'reachable' } }, reach),
      h('td', { class: `health ${healthClass(hs)}`, data: { field: 'health' } }, healthText(hs)),
      h('td', { class: 'num' }, String(n.assigned)),
      num(n.ready, 's-ready'), num(n.progressing, 's-progressing'), num(n.pending, 's-pending'), num(n.failed, 's-failed'),
      num(n.unreachable, 's-unreachable'), num(n.drifted, 's-drifted'), num(n.conflicted, 's-conflicted'));
  });
  show(c.body, rows.length
    ? h('table', { class: 'grid clusters', id: 'clusters' },
      h('thead', null, h('tr', null, ['Cluster', 'Labels', 'Reachable', 'Health', 'Releases', 'Ready', 'Progressing', 'Pending', 'Failed', 'Unreachable', 'Drifted', 'Conflicted']
        .map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', null, trs))
    : h('p', { class: 'muted', id: 'clusters-empty' }, 'No cluster matches the filter.'));
}
