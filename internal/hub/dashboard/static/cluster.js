// Cluster detail: what the hub knows of one cluster (GET /api/v1/clusters/NAME, every field
// it has, outbox depth and conditions included when the hub reports them) and each of its
// assignments in full (GET /api/v1/dashboard/clusters/NAME).
import { h, shortRev, when, labelText, table } from './dom.js';
import { get } from './api.js';

const KNOWN = new Set(['name', 'labels', 'createdAt', 'lastSeen', 'agentVersion', 'reachable', 'generation', 'assignments']);

function fieldValue(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

function conditionsTable(conds) {
  if (!Array.isArray(conds) || !conds.length) return null;
  const keys = Array.from(new Set(conds.flatMap((c) => Object.keys(c))));
  return [h('h3', null, 'Conditions'), table('grid', keys, conds.map((c) => h('tr', null, keys.map((k) => h('td', null, fieldValue(c[k]))))))];
}

export async function render(root, name, isCurrent) {
  const [cl, as] = await Promise.all([
    get(`/api/v1/clusters/${encodeURIComponent(name)}`),
    get(`/api/v1/dashboard/clusters/${encodeURIComponent(name)}`),
  ]);
  if (!isCurrent()) return;
  const c = cl.data;
  const extra = Object.keys(c).filter((k) => !KNOWN.has(k) && k !== 'conditions').sort();
  const facts = [
    ['Labels', labelText(c.labels) || '(none)'],
    ['Reachable', c.reachable ? 'yes' : 'no'],
    ['Last seen', when(c.lastSeen)],
    ['Agent version', c.agentVersion || 'unknown'],
    ['Desired-state generation', String(c.generation)],
    ['Added', when(c.createdAt)],
    ...extra.map((k) => [k.replace(/([A-Z])/g, ' $1').replace(/^./, (x) => x.toUpperCase()), fieldValue(c[k])]),
  ];
  root.replaceChildren(
    h('p', null, h('a', { href: '#/matrix' }, '‹ matrix')),
    h('h2', null, 'Cluster ', h('span', { id: 'cluster-name' }, c.name), c.reachable ? null : h('span', { class: 'chip s-unreachable' }, 'unreachable')),
    h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', null, k), h('dd', { data: { field: k } }, v)])),
    conditionsTable(c.conditions),
    h('h3', null, 'Assignments'),
    as.data.length
      ? table('grid', ['Release', 'Phase', 'Desired', 'Applied', 'Health', 'Objects', 'Drifted', 'Conflicts', 'Error'], as.data.map((a) => h('tr', { data: { release: a.release } },
        h('th', { scope: 'row' }, h('a', { href: `#/matrix?release=${encodeURIComponent(a.release)}` }, a.release)),
        h('td', { class: `s-${a.phase === 'Ready' && a.appliedRevision === a.desiredRevision ? 'ready' : a.phase === 'Failed' ? 'failed' : 'progressing'}` }, a.phase),
        h('td', { class: 'rev', title: a.desiredRevision }, shortRev(a.desiredRevision)),
        h('td', { class: 'rev', title: a.appliedRevision || '' }, shortRev(a.appliedRevision) || '—'),
        h('td', null, a.health || ''), h('td', { class: 'num' }, String(a.objects)),
        h('td', { class: a.drifted ? 's-drifted' : '' }, a.drifted ? 'yes' : 'no'),
        h('td', { class: a.conflicts ? 's-conflicted num' : 'num' }, String(a.conflicts)),
        h('td', { class: 'errtext' }, a.error || ''))))
      : h('p', { class: 'muted' }, 'No release is assigned to this cluster.'),
  );
}
