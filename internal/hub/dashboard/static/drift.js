// Drift: the assignments whose objects were changed behind the agent's back. When the hub
// serves GET /api/v1/drift (drifted objects with field paths, healed or only reported) it is
// shown in full; otherwise the drifted assignments of the fleet document are listed.
import { h, shortRev, table } from './dom.js';
import { get, APIError } from './api.js';

function cellText(v) {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(cellText).join(', ');
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// rowsOf finds the list in the drift answer: the answer itself or its first array field.
function rowsOf(data) {
  if (Array.isArray(data)) return data;
  if (data && typeof data === 'object') {
    for (const v of Object.values(data)) if (Array.isArray(v)) return v;
  }
  return [];
}

const MAX_ROWS = 500;

export async function render(root, fleet, isCurrent) {
  let objects = null;
  try {
    objects = rowsOf((await get('/api/v1/drift')).data);
  } catch (e) {
    if (!(e instanceof APIError && (e.status === 404 || e.status === 405))) throw e;
  }
  if (!isCurrent()) return;
  if (objects) {
    const keys = Array.from(new Set(objects.slice(0, MAX_ROWS).flatMap((o) => Object.keys(o))));
    root.replaceChildren(
      h('h2', null, 'Drift'),
      h('p', { class: 'muted' }, `${objects.length} drifted object(s) across the fleet${objects.length > MAX_ROWS ? `, the first ${MAX_ROWS} shown` : ''}.`),
      objects.length ? table('grid', keys, objects.slice(0, MAX_ROWS).map((o) => h('tr', null, keys.map((k) => {
        if (k === 'cluster') return h('td', null, h('a', { href: `#/cluster/${encodeURIComponent(o[k])}` }, o[k]));
        return h('td', null, cellText(o[k]));
      })))) : null);
    return;
  }
  const drifted = fleet.states.indexOf('drifted');
  const rows = [];
  fleet.cells.forEach((row, i) => fleet.releases.forEach((rel, j) => {
    if (row[3 * j] === drifted) rows.push([fleet.clusters[i].name, rel, fleet.revisions[row[3 * j + 2]] || '']);
  }));
  root.replaceChildren(
    h('h2', null, 'Drift'),
    h('p', { class: 'muted' }, `${rows.length} drifted assignment(s)${rows.length > MAX_ROWS ? `, the first ${MAX_ROWS} shown` : ''}. Open a cluster for its objects.`),
    rows.length ? table('grid', ['Cluster', 'Release', 'Revision'], rows.slice(0, MAX_ROWS).map(([c, r, rev]) => h('tr', null,
      h('td', null, h('a', { href: `#/cluster/${encodeURIComponent(c)}` }, c)), h('td', null, r), h('td', { class: 'rev', title: rev }, shortRev(rev))))) : null);
}
