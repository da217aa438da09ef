// Audit: the newest records of the hub's hash-chained audit trail (GET /api/v1/audit),
// filtered by cluster, release and action on the hub.
import { h, show, when, table } from './dom.js';
import { get } from './api.js';

const LIMIT = 200;
let controls = null;

function buildControls(root, app) {
  const inputs = ['cluster', 'release', 'action'].map((k) => h('input', { id: `audit-${k}`, type: 'search', placeholder: k, size: 16, 'aria-label': `Audit ${k}` }));
  const body = h('div', { id: 'audit-body' });
  let timer = 0;
  const changed = () => {
    const p = new URLSearchParams();
    inputs.forEach((el, k) => { if (el.value) p.set(['cluster', 'release', 'action'][k], el.value); });
    app.setParams(p);
  };
  inputs.forEach((el) => el.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(changed, 300); }));
  show(root, h('h2', null, 'Audit trail'), h('div', { class: 'controls' }, inputs, h('span', { class: 'muted' }, `newest ${LIMIT} first`)), body);
  controls = { root, inputs, body };
}

function detail(d) {
  if (!d) return '';
  return Object.keys(d).sort().map((k) => `${k}=${typeof d[k] === 'object' ? JSON.stringify(d[k]) : d[k]}`).join(' ');
}

export async function render(root, params, app, isCurrent) {
  if (!controls || controls.root !== root || !root.contains(controls.body)) buildControls(root, app); // again after a sign-out emptied root
  const q = new URLSearchParams({ limit: String(LIMIT) });
  ['cluster', 'release', 'action'].forEach((k, i) => {
    const v = params.get(k) || '';
    if (document.activeElement !== controls.inputs[i]) controls.inputs[i].value = v;
    if (v) q.set(k, v);
  });
  const recs = (await get(`/api/v1/audit?${q}`)).data || [];
  if (!isCurrent()) return;
  recs.reverse();
  show(controls.body, recs.length
    ? table('grid audit', ['#', 'Time', 'Actor', 'Action', 'Cluster', 'Release', 'Detail'], recs.map((r) => h('tr', null,
      h('td', { class: 'num' }, String(r.seq)), h('td', { title: r.time }, when(r.time)), h('td', null, r.actor),
      h('td', null, r.action),
      h('td', null, r.cluster ? h('a', { href: `#/cluster/${encodeURIComponent(r.cluster)}` }, r.cluster) : ''),
      h('td', null, r.release || ''), h('td', { class: 'detail' }, detail(r.detail)))))
    : h('p', { class: 'muted' }, 'No audit record matches.'));
}
