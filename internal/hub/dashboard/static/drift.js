// Drift: the objects changed behind the agents' backs, across the fleet, with field paths.
import { h, show, when, table } from './dom.js';
import { get } from './api.js';
import { CELL, FLAG_DRIFTED } from './filter.js';

const MAX_ROWS = 500;

// render lists the drifted objects (GET /api/v1/drift: {objects: [...]}, each with cluster,
// release, namespace, object, paths, healed, reportedAt); the fleet document's drifted
// assignments are shown beside the count, so a drift the agent has not detailed still shows.
export async function render(root, fleet, isCurrent) {
  const objects = (await get('/api/v1/drift')).data.objects || [];
  if (!isCurrent()) return;
  let assignments = 0;
  fleet.cells.forEach((row) => fleet.releases.forEach((_, j) => {
    if (row[CELL * j] !== 0 && (row[CELL * j + 3] & FLAG_DRIFTED)) assignments++;
  }));
  show(root,
    h('h2', null, 'Drift'),
    h('p', { class: 'muted', id: 'drift-summary' }, `${objects.length} drifted object(s) in ${assignments} drifted assignment(s)${objects.length > MAX_ROWS ? `, the first ${MAX_ROWS} shown` : ''}. Healed: the agent took the change back; reported: it only reported it (selfHeal: false).`),
    objects.length ? table('grid', ['Cluster', 'Release', 'Namespace', 'Object', 'Changed fields', 'State', 'Reported'], objects.slice(0, MAX_ROWS).map((o) => h('tr', { class: o.healed ? '' : 'bad' },
      h('td', null, h('a', { href: `#/cluster/${encodeURIComponent(o.cluster)}` }, o.cluster)),
      h('td', null, h('a', { href: `#/assignment/${encodeURIComponent(o.cluster)}/${encodeURIComponent(o.release)}`, title: 'the drift as a diff, desired against live' }, o.release)),
      h('td', null, o.namespace || ''), h('td', { class: 'rev' }, o.object),
      h('td', { class: 'rev' }, (o.paths || []).join(', ')),
      h('td', { class: o.healed ? 's-ready' : 's-drifted' }, o.healed ? 'healed' : 'reported'),
      h('td', null, when(o.reportedAt))))) : null);
}
