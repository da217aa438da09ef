// Rollouts (GET /api/v1/rollouts, as `flotilla rollout status`): every release's rollout in
// one table, and one release's rollout (#/rollout/RELEASE) as a lane per wave: the wave's
// phase, approval and failures, its clusters as chips coloured by their phase, the pinned,
// stable and queued revisions, the recent events, and the actions (pause, resume, approve,
// abort, rollback) for a principal whose role may take them. The hub decides: a refused
// action shows the hub's answer (403 for a role or project that may not, 409 for an action
// the rollout's state does not allow).
import { h, show, shortRev, when, table } from './dom.js';
import { get, token, Unauthorized, APIError } from './api.js';

const enc = encodeURIComponent;
const ENDED = new Set(['Idle', 'Completed', 'Aborted', 'RolledBack']);

// The last action's outcome per release, shown until the next action there: the page is
// redrawn on every fleet update, which must not wipe what the user just did.
const outcome = new Map();

// whoami is fetched once per token: a principal's grants do not change while it is signed in.
let grants = null;
let grantsOf = '';
async function mayAct() {
  if (grants === null || grantsOf !== token()) {
    grantsOf = token();
    try {
      grants = (await get('/api/v1/whoami')).data.grants || [];
    } catch (e) {
      if (e instanceof Unauthorized) throw e;
      grants = [];
    }
  }
  return grants.some((g) => g.role === 'deployer' || g.role === 'admin');
}

// act posts a user's action on a release's rollout, as the token's principal.
async function act(release, action, wave) {
  const resp = await fetch(`/api/v1/rollouts/${enc(release)}/${enc(action)}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token()}`, 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify(wave ? { wave } : {}), cache: 'no-store', credentials: 'omit',
  });
  let body = null;
  try { body = await resp.json(); } catch { body = null; }
  if (resp.status === 401) throw new Unauthorized((body && body.error) || 'the hub refused the token');
  if (!resp.ok) throw new APIError(resp.status, (body && body.error) || `${resp.status} ${resp.statusText}`);
  return body;
}

const phaseClass = (p) => `rp-${String(p || '').toLowerCase()}`;

function revisionText(rev, digest, none) {
  if (!rev) return h('span', { class: 'muted' }, none);
  return h('span', { class: 'rev', title: `${rev}${digest ? `\n${digest}` : ''}` }, rev, digest ? h('span', { class: 'muted' }, ` (${digest.slice(0, 19)})`) : null);
}

function doneCount(v) {
  let done = 0;
  let total = 0;
  for (const w of v.waves || []) for (const c of w.clusters || []) { total++; if (c.phase === 'Done') done++; }
  return `${done}/${total}`;
}

function currentWave(v) {
  const w = (v.waves || []).find((x) => x.phase !== 'Done');
  return w ? w.name : '-';
}

async function renderList(root, isCurrent) {
  const list = (await get('/api/v1/rollouts')).data || [];
  if (!isCurrent()) return;
  show(root,
    h('h2', null, 'Rollouts'),
    list.length
      ? table('grid', ['Release', 'Phase', 'Revision', 'Stable', 'Wave', 'Clusters done', 'Message'], list.map((v) => h('tr', { data: { release: v.release } },
        h('th', { scope: 'row' }, h('a', { href: `#/rollout/${enc(v.release)}` }, v.release)),
        h('td', null, h('span', { class: `chip ${phaseClass(v.phase)}` }, v.phase), v.paused && v.phase !== 'Paused' ? ' (paused)' : ''),
        h('td', { class: 'rev', title: v.revision || '' }, shortRev(v.revision) || '-'),
        h('td', { class: 'rev', title: v.stableRevision || '' }, shortRev(v.stableRevision) || '-'),
        h('td', null, currentWave(v)),
        h('td', { class: 'num' }, doneCount(v)),
        h('td', null, v.message || ''))))
      : h('p', { class: 'muted', id: 'rollouts-empty' }, 'No release has a rollout (spec.rollout).'));
}

function lane(v, w, canAct, onAct) {
  let approval = null;
  if (w.approval) {
    approval = w.approvedBy
      ? h('span', { class: 'badge approved', data: { field: 'approval' } }, `approved by ${w.approvedBy}`)
      : h('span', { class: 'badge needs', data: { field: 'approval' } }, 'approval required');
  }
  const settings = [`at most ${w.maxConcurrent} at a time`, w.bake ? `bake ${w.bake}` : null].filter(Boolean).join(' · ');
  return h('div', { class: `lane ${phaseClass(w.phase)}`, data: { wave: w.name, phase: w.phase } },
    h('div', { class: 'lane-head' },
      h('h3', null, w.name),
      h('span', { class: `chip ${phaseClass(w.phase)}`, data: { field: 'phase' } }, w.phase),
      approval,
      h('span', { class: `failures${w.failures > w.maxFailures ? ' over' : ''}`, data: { field: 'failures' }, title: 'failures of at most maxFailures' },
        `failures ${w.failures}/${w.maxFailures}`)),
    h('div', { class: 'muted lane-meta' }, settings),
    h('div', { class: 'lane-clusters' },
      (w.clusters || []).length
        ? w.clusters.map((c) => h('a', {
          class: `chip rc ${phaseClass(c.phase)}`, href: `#/assignment/${enc(c.cluster)}/${enc(v.release)}`,
          data: { cluster: c.cluster, phase: c.phase },
          title: `${c.cluster}: ${c.phase}${c.revision ? `\nrevision ${c.revision}` : ''}${c.since ? `\nsince ${when(c.since)}` : ''}${c.message ? `\n${c.message}` : ''}`,
        }, c.cluster))
        : h('span', { class: 'muted' }, 'no cluster')),
    (w.clusters || []).filter((c) => c.message).length
      ? h('ul', { class: 'lane-messages' }, w.clusters.filter((c) => c.message).map((c) => h('li', null, h('strong', null, c.cluster), `: ${c.message}`)))
      : null,
    canAct && w.approval && !w.approvedBy && w.phase !== 'Done'
      ? h('button', { type: 'button', class: 'act', data: { action: 'approve', wave: w.name }, on: { click: () => onAct('approve', w.name) } }, `Approve ${w.name}`)
      : null);
}

// actions are the buttons of a rollout's state; abort and rollback ask to be confirmed.
function actions(v, onAct) {
  const btn = (action, label, confirm) => {
    const b = h('button', { type: 'button', class: 'act', data: { action } }, label);
    b.addEventListener('click', () => {
      if (!confirm) { onAct(action); return; }
      const yes = h('button', { type: 'button', class: 'act danger', data: { action, confirm: 'yes' }, on: { click: () => onAct(action) } }, `Yes, ${label.toLowerCase()}`);
      const no = h('button', { type: 'button', class: 'act', on: { click: () => span.replaceWith(b) } }, 'Cancel');
      const span = h('span', { class: 'confirm' }, `${confirm} `, yes, no);
      b.replaceWith(span);
    });
    return b;
  };
  const running = !ENDED.has(v.phase);
  return h('div', { class: 'controls', id: 'rollout-actions' },
    running && !v.paused ? btn('pause', 'Pause') : null,
    v.paused ? btn('resume', 'Resume') : null,
    (v.waves || []).some((w) => w.phase === 'WaitingApproval') ? btn('approve', 'Approve the waiting wave') : null,
    running ? btn('abort', 'Abort', 'Abort the rollout? Clusters keep what they run now.') : null,
    // Shown even without a stable revision: the hub then says there is nothing to go back to.
    v.phase !== 'RolledBack' && v.phase !== 'Idle'
      ? btn('rollback', 'Roll back', `Roll back to ${shortRev(v.stableRevision) || 'the stable revision'} the clusters that got ${shortRev(v.revision) || 'the revision'}?`) : null);
}

export async function render(root, arg, isCurrent) {
  if (!arg) { await renderList(root, isCurrent); return; }
  const release = arg;
  const [v, canAct] = await Promise.all([get(`/api/v1/rollouts/${enc(release)}`).then((r) => r.data), mayAct()]);
  if (!isCurrent()) return;
  const onAct = async (action, wave) => {
    for (const b of root.querySelectorAll('button.act')) b.disabled = true;
    try {
      await act(release, action, wave);
      outcome.set(release, { ok: true, text: `${action}${wave ? ` ${wave}` : ''}: done` });
    } catch (e) {
      outcome.set(release, { ok: false, text: `${action}${wave ? ` ${wave}` : ''} refused: ${e.message}` });
    }
    await render(root, arg, isCurrent);
  };
  const last = outcome.get(release);
  const facts = [
    ['Phase', h('span', { class: `chip ${phaseClass(v.phase)}` }, v.phase), v.paused && v.phase !== 'Paused' ? ' (paused)' : ''],
    ['Message', v.message || '-'],
    ['Revision (pinned)', revisionText(v.revision, v.digest, 'none: nothing is rolling out')],
    ['Stable', revisionText(v.stableRevision, v.stableDigest, 'none yet: no rollout completed')],
    ['Queued', revisionText(v.queuedRevision, v.queuedDigest, 'nothing queued')],
    ['Started', v.startedAt ? when(v.startedAt) : '-'],
    ['Updated', v.updatedAt ? when(v.updatedAt) : '-'],
  ];
  const events = (v.events || []).slice().reverse();
  show(root,
    h('p', { class: 'crumbs' }, h('a', { href: '#/rollouts' }, '‹ rollouts'), ' · ',
      h('a', { href: `#/matrix?release=${enc(release)}` }, `release ${release} on the matrix`)),
    h('h2', null, 'Rollout of release ', h('span', { id: 'rollout-release' }, release)),
    h('dl', { class: 'facts' }, facts.map(([k, ...x]) => [h('dt', null, k), h('dd', { data: { field: k } }, x)])),
    canAct ? actions(v, onAct) : h('p', { class: 'muted', id: 'rollout-readonly' }, 'Your role may view this rollout, not act on it (a deployer of its project or an admin may).'),
    last ? h('p', { id: 'rollout-outcome', class: last.ok ? 'ok-text' : 'errtext' }, last.text) : null,
    h('h3', null, 'Waves'),
    (v.waves || []).length
      ? h('div', { class: 'lanes', id: 'rollout-lanes' }, v.waves.map((w) => lane(v, w, canAct, onAct)))
      : h('p', { class: 'muted' }, 'This release has no rollout: a new revision reaches every cluster at once.'),
    h('h3', null, 'Recent events'),
    events.length
      ? h('ul', { class: 'events', id: 'rollout-events' }, events.map((e) => h('li', { data: { type: e.type } },
        h('span', { class: 'muted' }, when(e.at)), ' ', h('strong', null, e.type),
        `: ${e.message || [e.wave ? `wave ${e.wave}` : '', e.cluster ? `cluster ${e.cluster}` : ''].filter(Boolean).join(', ')}`,
        e.actor && !(e.message || '').includes(e.actor) ? ` (by ${e.actor})` : '')))
      : h('p', { class: 'muted' }, 'No event yet.'));
}
