// The release x cluster matrix. Only one page of rows is ever in the DOM (PAGE_SIZE clusters
// x the shown releases), so 1,000 clusters x 20 releases cost 1,000 cells, not 20,000.
import { h, show, shortRev, labelChips } from './dom.js';
import {
  filterMatrix, CELL, FLAG_DRIFTED, FLAG_CONFLICTED, FILTER_STATES, healthOf, rowHealth, healthText, healthClass, toggleTerm,
} from './filter.js';

export const PAGE_SIZE = 50;
// FLAG_WAITING is dashboard.FlagWaiting: the phase is Waiting (counted as progressing).
const FLAG_WAITING = 32;

let controls = null; // built once, so typing keeps focus while the data refreshes

function buildControls(root, app) {
  const q = h('input', { id: 'filter-q', type: 'search', placeholder: 'name or label: env=prod region!=us', size: 32, 'aria-label': 'Filter clusters' });
  const release = h('select', { id: 'filter-release', 'aria-label': 'Release' });
  const state = h('select', { id: 'filter-state', 'aria-label': 'State' });
  const summary = h('span', { id: 'matrix-summary', class: 'muted' });
  const rollout = h('a', { id: 'matrix-rollout', hidden: true });
  const prev = h('button', { type: 'button', id: 'page-prev' }, '‹ Previous');
  const next = h('button', { type: 'button', id: 'page-next' }, 'Next ›');
  const body = h('div', { id: 'matrix-body', class: 'matrix-wrap' });
  let timer = 0;
  const changed = (resetPage) => {
    const p = new URLSearchParams();
    if (q.value) p.set('q', q.value);
    if (release.value) p.set('release', release.value);
    if (state.value) p.set('state', state.value);
    const page = resetPage ? 1 : Number(app.params().get('page') || 1);
    if (page > 1) p.set('page', String(page));
    app.setParams(p, 'matrix');
  };
  q.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(() => changed(true), 150); });
  release.addEventListener('change', () => changed(true));
  state.addEventListener('change', () => changed(true));
  const turn = (d) => {
    const p = app.params();
    p.set('page', String(Math.max(1, Number(p.get('page') || 1) + d)));
    app.setParams(p, 'matrix');
  };
  body.addEventListener('click', (e) => {
    const chip = e.target.closest('button.label');
    if (chip) {
      q.value = toggleTerm(q.value, chip.dataset.label);
      changed(true);
      return;
    }
    const td = e.target.closest('td.cell');
    if (td) location.hash = `#/assignment/${encodeURIComponent(td.dataset.cluster)}/${encodeURIComponent(td.dataset.release)}`;
  });
  prev.addEventListener('click', () => turn(-1));
  next.addEventListener('click', () => turn(1));
  show(root,
    h('h2', null, 'Release × cluster matrix'),
    h('div', { class: 'controls' }, q, release, state, rollout, summary, h('span', { class: 'pager' }, prev, next)),
    h('p', { class: 'legend' }, 'Each cell shows the revision applied (click it for the release on that cluster, object by object); its colour is the state: ',
      ['ready', 'progressing', 'pending', 'failed', 'unreachable'].map((s) => h('span', { class: `chip s-${s}` }, s)),
      '; ', h('span', { class: 'chip f-drifted' }, 'Δ drifted'), h('span', { class: 'chip f-conflicted' }, '! conflicts'),
      h('span', { class: 'chip' }, '→ not on the desired revision'), h('span', { class: 'chip f-unhealthy' }, '✕ health not Current'),
      h('span', { class: 'chip f-waiting' }, '⏸ waiting'),
      '. Click a label to filter by it.'),
    body);
  controls = { root, q, release, state, rollout, summary, prev, next, body };
}

function setOptions(select, values, label) {
  const want = [''].concat(values);
  const have = Array.from(select.options).map((o) => o.value);
  if (have.length === want.length && have.every((v, i) => v === want[i])) return;
  const cur = select.value;
  select.replaceChildren(...want.map((v) => h('option', { value: v }, v || label)));
  select.value = cur;
}

export function render(root, fleet, params, app) {
  if (!controls || controls.root !== root || !root.contains(controls.body)) buildControls(root, app); // again after a sign-out emptied root
  const c = controls;
  const filter = { q: params.get('q') || '', release: params.get('release') || '', state: params.get('state') || '' };
  if (document.activeElement !== c.q) c.q.value = filter.q;
  setOptions(c.release, fleet.releases, 'all releases');
  setOptions(c.state, FILTER_STATES, 'any state');
  c.release.value = filter.release;
  c.state.value = filter.state;
  c.rollout.hidden = !filter.release;
  c.rollout.href = `#/rollout/${encodeURIComponent(filter.release)}`;
  c.rollout.textContent = `rollout of ${filter.release} ›`;

  const { rows, cols } = filterMatrix(fleet, filter);
  const pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
  const page = Math.min(pages, Math.max(1, Number(params.get('page') || 1)));
  const shown = rows.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE);
  c.summary.textContent = rows.length
    ? `clusters ${(page - 1) * PAGE_SIZE + 1}–${(page - 1) * PAGE_SIZE + shown.length} of ${rows.length} shown (${fleet.clusters.length} in the fleet), page ${page} of ${pages}`
    : `no cluster matches (${fleet.clusters.length} in the fleet)`;
  c.prev.disabled = page <= 1;
  c.next.disabled = page >= pages;

  const rev = (i) => (i >= 0 ? fleet.revisions[i] : '');
  const trs = shown.map((i) => {
    const cl = fleet.clusters[i];
    const row = fleet.cells[i];
    const hs = rowHealth(row, cols);
    return h('tr', { data: { cluster: cl.name } },
      h('th', { scope: 'row', class: cl.reachable ? '' : 'unreachable' },
        h('a', { href: `#/cluster/${encodeURIComponent(cl.name)}` }, cl.name)),
      h('td', { class: 'labels' }, labelChips(cl.labels)),
      h('td', { class: `health ${healthClass(hs)}`, data: { health: healthText(hs) } }, healthText(hs)),
      cols.map((j) => {
        const code = row[CELL * j];
        const relName = fleet.releases[j];
        if (code === 0) return h('td', { class: 's-unassigned', data: { cluster: cl.name, release: relName, state: 'unassigned' } });
        const state = fleet.states[code];
        const desired = rev(row[CELL * j + 1]);
        const applied = rev(row[CELL * j + 2]);
        const flags = row[CELL * j + 3];
        const drifted = (flags & FLAG_DRIFTED) !== 0;
        const conflicted = (flags & FLAG_CONFLICTED) !== 0;
        const health = healthOf(flags);
        const unhealthy = health === 'InProgress' || health === 'Failed';
        const waiting = (flags & FLAG_WAITING) !== 0;
        return h('td', {
          class: `cell s-${state}${drifted ? ' f-drifted' : ''}${conflicted ? ' f-conflicted' : ''}${waiting ? ' f-waiting' : ''}`,
          data: { cluster: cl.name, release: relName, state },
          title: `${relName} on ${cl.name}: ${waiting ? 'waiting' : state}${drifted ? ', drifted' : ''}${conflicted ? ', conflicts' : ''}\nhealth ${health || '-'}\ndesired ${desired || '-'}\napplied ${applied || 'nothing yet'}`,
        }, applied ? shortRev(applied) : '—',
        applied && applied !== desired ? h('span', { class: 'mark behind', title: 'not the desired revision' }, '→') : null,
        drifted ? h('span', { class: 'mark', title: 'drifted' }, 'Δ') : null,
        conflicted ? h('span', { class: 'mark', title: 'conflicts' }, '!') : null,
        unhealthy ? h('span', { class: 'mark', title: `health ${health}` }, '✕') : null,
        waiting ? h('span', { class: 'mark', title: 'waiting: held back by a window, freeze, suspension or dependency' }, '⏸') : null);
      }));
  });
  show(c.body, rows.length
    ? h('table', { class: 'grid matrix', id: 'matrix' },
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Cluster'), h('th', { scope: 'col' }, 'Labels'), h('th', { scope: 'col' }, 'Health'),
        cols.map((j) => h('th', { scope: 'col', class: 'rel' }, h('a', { href: `#/matrix?release=${encodeURIComponent(fleet.releases[j])}` }, fleet.releases[j]))))),
      h('tbody', null, trs))
    : h('p', { class: 'muted', id: 'matrix-empty' }, 'No cluster matches the filter.'));
  if (rows.length && !performance.getEntriesByName('flotilla:matrix-rendered').length) {
    performance.mark('flotilla:matrix-rendered');
  }
}
