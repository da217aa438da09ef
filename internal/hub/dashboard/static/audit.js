// Audit: the newest records of the hub's hash-chained audit trail (GET /api/v1/audit),
// filtered by cluster, release and action on the hub. Each record's detail shows as fields,
// one per line, key then value as the record holds it (no JSON escaping). Checkpoint records
// (apply.verified: an assignment verified unchanged over a window) are left out unless
// "Show checkpoints" is ticked (checkpoints=1 in the address).
import { h, show, when, table } from './dom.js';
import { get } from './api.js';

const LIMIT = 200;
const KEYS = ['cluster', 'release', 'action'];
let controls = null;

function buildControls(root, app) {
  const inputs = KEYS.map((k) => h('input', { id: `audit-${k}`, type: 'search', placeholder: k, size: 16, 'aria-label': `Audit ${k}` }));
  const checkpoints = h('input', { id: 'audit-checkpoints', type: 'checkbox' });
  const body = h('div', { id: 'audit-body' });
  let timer = 0;
  const changed = () => {
    const p = new URLSearchParams();
    inputs.forEach((el, k) => { if (el.value) p.set(KEYS[k], el.value); });
    if (checkpoints.checked) p.set('checkpoints', '1');
    app.setParams(p);
  };
  inputs.forEach((el) => el.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(changed, 300); }));
  checkpoints.addEventListener('change', changed);
  show(root, h('h2', null, 'Audit trail'),
    h('div', { class: 'controls' }, inputs,
      h('label', { title: 'apply.verified records: an assignment verified unchanged at its revision, from one time to another' }, checkpoints, ' Show checkpoints'),
      h('span', { class: 'muted' }, `newest ${LIMIT} first`)),
    body);
  controls = { root, inputs, checkpoints, body };
}

// fields flattens a detail into [key, text] pairs, keys sorted: a nested object's fields
// under dotted keys, a list of plain values joined by ", ", a list of objects item by item
// (objects[0].name). Strings are shown as they are: no quotes, no escapes.
export function fields(d, prefix = '', out = []) {
  for (const k of Object.keys(d || {}).sort()) {
    const v = d[k];
    const key = prefix + k;
    if (Array.isArray(v)) {
      if (v.some((x) => x !== null && typeof x === 'object')) v.forEach((x, i) => fields({ [`${k}[${i}]`]: x }, prefix, out));
      else out.push([key, v.map(String).join(', ')]);
    } else if (v !== null && typeof v === 'object' && Object.keys(v).length) {
      fields(v, `${key}.`, out);
    } else if (v !== null && typeof v === 'object') {
      out.push([key, Array.isArray(v) ? '[]' : '{}']);
    } else {
      out.push([key, v === null ? 'null' : String(v)]);
    }
  }
  return out;
}

function detail(d) {
  return fields(d).map(([k, v]) => h('div', { class: 'field', data: { key: k } }, h('b', null, k), ' ', h('span', { class: 'value' }, v)));
}

export async function render(root, params, app, isCurrent) {
  if (!controls || controls.root !== root || !root.contains(controls.body)) buildControls(root, app); // again after a sign-out emptied root
  const q = new URLSearchParams({ limit: String(LIMIT) });
  KEYS.forEach((k, i) => {
    const v = params.get(k) || '';
    if (document.activeElement !== controls.inputs[i]) controls.inputs[i].value = v;
    if (v) q.set(k, v);
  });
  controls.checkpoints.checked = params.get('checkpoints') === '1';
  if (!controls.checkpoints.checked) q.set('checkpoints', 'false');
  const recs = (await get(`/api/v1/audit?${q}`)).data || [];
  if (!isCurrent()) return;
  recs.reverse();
  show(controls.body, recs.length
    ? table('grid audit', ['#', 'Time', 'Actor', 'Action', 'Cluster', 'Release', 'Detail'], recs.map((r) => h('tr', { data: { seq: r.seq, action: r.action } },
      h('td', { class: 'num' }, String(r.seq)), h('td', { title: r.time }, when(r.time)), h('td', null, r.actor),
      h('td', null, r.action),
      h('td', null, r.cluster ? h('a', { href: `#/cluster/${encodeURIComponent(r.cluster)}` }, r.cluster) : ''),
      h('td', null, r.release || ''), h('td', { class: 'detail' }, detail(r.detail)))))
    : h('p', { class: 'muted' }, 'No audit record matches.'));
}
