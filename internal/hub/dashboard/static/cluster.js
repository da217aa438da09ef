// Cluster detail: what the hub knows of one cluster (GET /api/v1/clusters/NAME): labels,
// last seen, agent version, outbox depth, conditions and each assignment in full; a field the
// page does not know yet is still shown, by name.
import { h, show, shortRev, when, labelText, table } from './dom.js';
import { get } from './api.js';

const KNOWN = new Set(['name', 'labels', 'createdAt', 'lastSeen', 'agentVersion', 'reachable', 'generation', 'assignments', 'status', 'conditions', 'outboxDepth', 'reportsIngested', 'reportsCompacted', 'lastReportSeq']);

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
  const c = (await get(`/api/v1/clusters/${encodeURIComponent(name)}`)).data;
  if (!isCurrent()) return;
  const status = c.status || [];
  const extra = Object.keys(c).filter((k) => !KNOWN.has(k)).sort();
  const facts = [
    ['Labels', labelText(c.labels) || '(none)'],
    ['Reachable', c.reachable ? 'yes' : 'no'],
    ['Last seen', when(c.lastSeen)],
    ['Agent version', c.agentVersion || 'unknown'],
    ['Outbox', c.outboxDepth === undefined || c.outboxDepth === null ? 'unknown (no heartbeat since the hub started)' : `${c.outboxDepth} report(s) waiting`],
    ['Desired-state generation', String(c.generation)],
    ['Reports', `${c.reportsIngested || 0} ingested, ${c.reportsCompacted || 0} compacted by the agent's outbox`],
    ['Added', when(c.createdAt)],
    ...extra.map((k) => [k.replace(/([A-Z])/g, ' $1').replace(/^./, (x) => x.toUpperCase()), fieldValue(c[k])]),
  ];
  show(root,
    h('p', null, h('a', { href: '#/matrix' }, '‹ matrix')),
    h('h2', null, 'Cluster ', h('span', { id: 'cluster-name' }, c.name), c.reachable ? null : h('span', { class: 'chip s-unreachable' }, 'unreachable')),
    h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', null, k), h('dd', { data: { field: k } }, v)])),
    conditionsTable(c.conditions),
    h('h3', null, 'Assignments'),
    status.length
      ? table('grid', ['Release', 'Phase', 'Desired', 'Applied', 'Health', 'Objects', 'Drifted', 'Conflicts', 'Error'], status.map((a) => h('tr', { data: { release: a.release } },
        h('th', { scope: 'row' }, h('a', { href: `#/assignment/${encodeURIComponent(c.name)}/${encodeURIComponent(a.release)}`, title: 'objects, drift and conflicts of this release here' }, a.release)),
        h('td', { class: `s-${String(a.phase).toLowerCase()}`, title: a.reportedPhase ? `last reported: ${a.reportedPhase}` : '' }, a.phase),
        h('td', { class: 'rev', title: a.desiredRevision }, shortRev(a.desiredRevision)),
        h('td', { class: 'rev', title: a.appliedRevision || '' }, shortRev(a.appliedRevision) || '—'),
        h('td', null, a.health || '-'), h('td', { class: 'num' }, String(a.objects)),
        h('td', { class: a.drifted ? 's-drifted' : '' }, a.drifted ? 'yes' : 'no'),
        h('td', { class: a.conflicts ? 's-conflicted num' : 'num' }, String(a.conflicts)),
        h('td', { class: 'errtext' }, a.error || ''))))
      : h('p', { class: 'muted' }, 'No release is assigned to this cluster.'),
  );
}
