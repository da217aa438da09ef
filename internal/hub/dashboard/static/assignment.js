// One release on one cluster (GET /api/v1/clusters/CLUSTER/releases/RELEASE), as its agent
// last reported it, never read from the cluster: the status, the settings, and every object
// the agent reported on (those not Ready, drifted, in conflict or failed) with its last
// action, health, conflicts (field and owner), error, and drift as a diff of the drifted
// fields, desired against live.
import { h, show, shortRev, when, table } from './dom.js';
import { get } from './api.js';

// diff shows one object's drifted fields: the path, then "- desired" and "+ live" lines, as
// a unified diff of the desired state against the cluster would.
function diff(drift, omitted) {
  if (!drift.length) return omitted ? h('span', { class: 'muted' }, `${omitted} drift or conflict entries not reported`) : null;
  return h('div', { class: 'diff' },
    drift.map((f) => {
      if (f.path === '(deleted)') {
        return h('div', { class: 'field', data: { path: f.path } },
          h('div', { class: 'del' }, '- the whole object (desired)'), h('div', { class: 'add' }, '+ (deleted by hand: absent from the cluster)'));
      }
      const values = f.desired || f.live;
      return h('div', { class: 'field', data: { path: f.path } },
        h('div', { class: 'path' }, f.manager ? `${f.path} (written by ${f.manager})` : f.path),
        values ? h('div', { class: 'del', data: { side: 'desired' } }, `- ${f.desired || '(absent)'}`) : null,
        values ? h('div', { class: 'add', data: { side: 'live' } }, `+ ${f.live || '(absent)'}`) : null,
        values ? null : h('div', { class: 'muted' }, 'changed (values not reported)'));
    }),
    omitted ? h('div', { class: 'muted' }, `and ${omitted} more drift or conflict entries not reported`) : null);
}

function conflicts(list) {
  if (!list.length) return null;
  return h('ul', { class: 'conflicts' }, list.map((c) => h('li', null,
    c.field ? h('code', null, c.field) : 'the object', ' owned by ', c.owner)));
}

const ACTION_CLASS = { conflict: 's-conflicted', drifted: 's-drifted', healed: 's-ready' };

function healthCell(o) {
  if (!o.health) return h('td', { data: { field: 'health' } }, '-');
  const cls = o.health === 'Current' ? 's-ready' : (o.health === 'Failed' ? 's-failed' : 's-progressing');
  return h('td', { class: cls, data: { field: 'health' } }, o.health, o.healthMessage ? h('div', { class: 'detail' }, o.healthMessage) : null);
}

function objectsSummary(d, objects) {
  const a = d.assignment;
  if (!d.reported) return 'Nothing reported yet.';
  if (!objects.length && !d.objectsOmitted) {
    if (!a.objects && a.phase === 'Waiting') return `Nothing of ${shortRev(a.desiredRevision) || 'the desired revision'} is applied here yet: the release waits (see Waiting above).`;
    if (!a.objects) return a.error ? 'No object was applied: the error above stopped the reconcile before any object.' : 'The release has no objects.';
    return `Every object (${a.objects}) is Ready and unchanged.`;
  }
  const rejected = objects.filter((o) => o.action === 'rejected').length;
  if (!a.objects && rejected) {
    return `No object was applied: the API server refused ${rejected} object(s), listed below with its reason.`;
  }
  return `${objects.length} object(s) listed of ${a.objects}: the agent reports only objects that are not Current, drifted, in conflict or failed; the others are Ready and unchanged.${d.objectsOmitted ? ` ${d.objectsOmitted} more needed a look but were left out of the report by its bounds.` : ''}`;
}

export async function render(root, arg, isCurrent) {
  const [cluster, release] = arg.split('/');
  if (!cluster || !release) throw new Error(`no assignment named "${arg}": the address is #/assignment/CLUSTER/RELEASE`);
  const d = (await get(`/api/v1/clusters/${encodeURIComponent(cluster)}/releases/${encodeURIComponent(release)}`)).data;
  if (!isCurrent()) return;
  const a = d.assignment;
  const s = d.desired || {};
  const settings = [s.path ? `path ${s.path}` : 'path /', s.namespace ? `namespace ${s.namespace}` : null,
    s.prune ? 'prune' : 'no prune', s.selfHeal ? 'selfHeal' : 'no selfHeal', s.wait ? `wait (timeout ${s.timeout})` : 'no wait', `interval ${s.interval}`]
    .filter(Boolean).join(', ');
  const facts = [
    ['Phase', h('span', { class: `chip s-${String(a.phase).toLowerCase()}` }, a.phase), a.reportedPhase && a.reportedPhase !== a.phase ? ` (last reported: ${a.reportedPhase})` : ''],
    a.waiting ? ['Waiting', h('span', { id: 'assignment-waiting' }, a.waiting)] : null,
    a.rollout ? ['Rollout', h('a', { id: 'assignment-rollout', href: `#/rollout/${encodeURIComponent(release)}` }, a.rollout)] : null,
    ['Health', a.health || '-'],
    ['Desired revision', h('span', { class: 'rev', title: a.desiredRevision }, a.desiredRevision || '-')],
    ['Applied revision', h('span', { class: 'rev', title: a.appliedRevision || '' }, a.appliedRevision || 'nothing applied yet')],
    ['Source', s.source || '-'],
    ['Settings', settings],
    ['Reported', d.reported ? when(a.reportedAt) : 'not yet: the agent has not reported on this assignment'],
    ['Objects', d.reported ? `${a.objects} (created ${d.created}, configured ${d.configured}, pruned ${d.pruned}) in ${Number(d.durationSeconds || 0).toFixed(1)}s` : '-'],
  ].filter(Boolean);
  const objects = d.objects || [];
  show(root,
    h('p', { class: 'crumbs' }, h('a', { href: `#/matrix?release=${encodeURIComponent(release)}` }, '‹ matrix'), ' · ',
      h('a', { href: `#/cluster/${encodeURIComponent(cluster)}` }, `cluster ${cluster}`), ' · ',
      h('a', { href: `#/rollout/${encodeURIComponent(release)}` }, `rollout of ${release}`)),
    h('h2', null, 'Release ', h('span', { id: 'assignment-release' }, release), ' on cluster ', h('span', { id: 'assignment-cluster' }, cluster)),
    h('dl', { class: 'facts' }, facts.map(([k, ...v]) => [h('dt', null, k), h('dd', { data: { field: k } }, v)])),
    a.error ? h('p', { class: 'errtext', id: 'assignment-error' }, a.error) : null,
    d.conflictTexts.length ? [h('h3', null, 'Conflicts'), h('ul', { class: 'problems', id: 'assignment-conflicts' }, d.conflictTexts.map((c) => h('li', null, c)))] : null,
    h('h3', null, 'Objects that need a look'),
    h('p', { class: 'muted', id: 'objects-summary' }, objectsSummary(d, objects)),
    objects.length ? table('grid objects', ['Object', 'Namespace', 'Action', 'Health', 'Drift (- desired, + live)', 'Conflicts', 'Error'],
      objects.map((o) => h('tr', { data: { object: o.object, namespace: o.namespace || '' } },
        h('th', { scope: 'row', class: 'rev' }, o.object),
        h('td', null, o.namespace || ''),
        h('td', { class: ACTION_CLASS[o.action] || '', data: { field: 'action' } }, o.action || '-'),
        healthCell(o),
        h('td', { data: { field: 'drift' } }, diff(o.drift || [], o.fieldsOmitted || 0)),
        h('td', { data: { field: 'conflicts' } }, conflicts(o.conflicts || [])),
        h('td', { class: 'errtext', data: { field: 'error' } }, o.error || '')))) : null,
    a.desiredRevision && a.appliedRevision && a.desiredRevision !== a.appliedRevision
      ? h('p', { class: 'muted' }, `The cluster runs ${shortRev(a.appliedRevision)}, not the desired ${shortRev(a.desiredRevision)}: the objects are those of the applied revision.`) : null,
  );
}
