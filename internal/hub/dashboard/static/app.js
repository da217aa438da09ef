// The dashboard: routes (#/view/arg?filters), the sign-in, and the live loop that polls the
// compact fleet document every POLL_MS with If-None-Match, so an unchanged fleet costs the
// hub a 304 and the browser nothing.
import * as api from './api.js';
import { ago } from './dom.js';
import * as overview from './overview.js';
import * as matrix from './matrix.js';
import * as cluster from './cluster.js';
import * as skew from './skew.js';
import * as drift from './drift.js';
import * as audit from './audit.js';

const POLL_MS = 2000;
const VIEWS = ['overview', 'matrix', 'clusters', 'cluster', 'assignment', 'rollouts', 'rollout', 'skew', 'drift', 'audit'];
const $ = (id) => document.getElementById(id);

// Views a first visit rarely opens are loaded when first shown, so the matrix's first load
// does not wait for them.
const lazy = {};
const load = (name) => (lazy[name] ||= import(`./${name}.js`));

const state = {
  fleet: null, etag: '', updates: 0, inflight: false, lastOK: 0, stale: '', timer: 0, running: false, renderSeq: 0,
  route: { view: 'overview', arg: '', params: new URLSearchParams() },
};

function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const path = q >= 0 ? raw.slice(0, q) : raw;
  const [view, ...rest] = path.split('/');
  return {
    view: VIEWS.includes(view) ? view : 'overview',
    arg: rest.length ? decodeURIComponent(rest.join('/')) : '',
    params: new URLSearchParams(q >= 0 ? raw.slice(q + 1) : ''),
  };
}

// app is what views may call back: read and replace the current view's filters. A view that
// names itself (from) changes nothing once another view is shown: a filter typed just before
// leaving it lands after its debounce.
const app = {
  params: () => new URLSearchParams(state.route.params),
  setParams(p, from) {
    if (from && from !== state.route.view) return;
    const s = p.toString();
    const arg = state.route.arg ? `/${state.route.arg.split('/').map(encodeURIComponent).join('/')}` : '';
    history.replaceState(null, '', `#/${state.route.view}${arg}${s ? `?${s}` : ''}`);
    state.route = parseRoute();
    render('filter');
  },
};

function showError(msg, kind) {
  const el = $('error');
  el.textContent = msg;
  el.dataset.kind = kind || 'fatal';
  el.hidden = !msg;
}

function clearData() {
  state.fleet = null;
  state.etag = '';
  for (const s of document.querySelectorAll('main section')) { s.replaceChildren(); s.hidden = true; }
  $('loading').hidden = true;
}

function stop() {
  state.running = false;
  clearTimeout(state.timer);
  state.timer = 0;
}

// signOut forgets the token and every byte of fleet data, and asks for a token.
function signOut(message) {
  stop();
  stopSSO();
  api.clearToken();
  clearData();
  $('nav').hidden = true;
  $('signout').hidden = true;
  $('whoami').hidden = true;
  $('live').textContent = '';
  showError(message || '', 'auth');
  $('login').hidden = false;
  $('token').value = '';
  $('token').focus();
  api.loginInfo().then((info) => { $('sso').hidden = !(info && info.oidc); }).catch(() => {});
}

// The single sign-on: the hub runs the OIDC device flow at the issuer for the page (which
// may not call the issuer itself); the page shows the code, the user signs in at the issuer
// in another tab, and the page polls the hub until the ID token comes.
const sso = { timer: 0, seq: 0 };

function stopSSO() {
  clearTimeout(sso.timer);
  sso.timer = 0;
  sso.seq++;
  $('sso-code').hidden = true;
  $('sso-start').disabled = false;
}

async function startSSO() {
  stopSSO();
  const seq = sso.seq;
  $('sso-start').disabled = true;
  const r = await api.post('/api/v1/login/device');
  if (seq !== sso.seq) return;
  if (r.status !== 200) {
    $('sso-start').disabled = false;
    showError(`Single sign-on failed: ${(r.data && r.data.error) || r.status}`, 'auth');
    return;
  }
  const d = r.data;
  const link = Object.assign(document.createElement('a'), {
    href: d.verificationURIComplete || d.verificationURI, target: '_blank', rel: 'noopener noreferrer',
    textContent: d.verificationURI,
  });
  const code = Object.assign(document.createElement('strong'), { textContent: d.userCode });
  code.id = 'sso-user-code';
  $('sso-code').replaceChildren('Open ', link, ' and enter the code ', code, '. Waiting for the sign-in…');
  $('sso-code').hidden = false;
  const pollSSO = async () => {
    if (seq !== sso.seq) return;
    const p = await api.post('/api/v1/login/device/token', { deviceCode: d.deviceCode });
    if (seq !== sso.seq) return;
    if (p.status === 202 || p.status === 429) {
      sso.timer = setTimeout(pollSSO, Math.max(1, d.interval || 5) * 1000);
      return;
    }
    stopSSO();
    if (p.status !== 200) {
      showError(`Single sign-on failed: ${(p.data && p.data.error) || p.status}`, 'auth');
      return;
    }
    api.setToken(p.data.token);
    start();
  };
  sso.timer = setTimeout(pollSSO, Math.max(1, d.interval || 5) * 1000);
}

// showWhoami names the principal the dashboard shows the fleet for, and its role.
async function showWhoami() {
  try {
    const r = await api.get('/api/v1/whoami');
    const roles = (r.data.grants || []).map((g) => (g.projects && g.projects.length ? `${g.role} of ${g.projects.join(', ')}` : g.role));
    $('whoami').textContent = `${r.data.actor} (${roles.join('; ')})`;
    $('whoami').hidden = false;
  } catch {
    $('whoami').hidden = true;
  }
}

function start() {
  if (!api.token()) {
    signOut('This dashboard shows fleet data only to a signed-in user: sign in below.');
    return;
  }
  stopSSO();
  $('login').hidden = true;
  showWhoami();
  $('nav').hidden = false;
  $('signout').hidden = false;
  showError('');
  state.running = true;
  $('loading').hidden = false;
  poll();
}

function schedule() {
  if (!state.running) return;
  clearTimeout(state.timer);
  state.timer = setTimeout(poll, POLL_MS);
}

async function poll() {
  if (!state.running || state.inflight) return;
  if (document.hidden) { schedule(); return; } // resumed by visibilitychange
  state.inflight = true;
  try {
    const r = await api.get('/api/v1/dashboard/fleet', state.etag);
    if (!state.running) return;
    state.lastOK = Date.now();
    if (state.stale) { state.stale = ''; showError(''); }
    if (!r.notModified) {
      state.fleet = r.data;
      state.etag = r.etag;
      state.updates++;
      document.body.dataset.updates = String(state.updates);
      $('loading').hidden = true;
      render('data');
    }
  } catch (e) {
    if (e instanceof api.Unauthorized) {
      signOut(`The hub refused the token: ${e.message}`);
      return;
    }
    state.stale = e.message;
    showError(`No update from the hub (${e.message}); the data shown may be stale. Retrying every ${POLL_MS / 1000}s.`, 'transient');
  } finally {
    state.inflight = false;
  }
  updateLive();
  schedule();
}

function updateLive() {
  if (!state.running) return;
  const el = $('live');
  if (state.stale) { el.textContent = 'stale'; el.className = 'live stale'; return; }
  el.textContent = state.lastOK ? `live · updated ${ago(state.lastOK)}` : 'connecting…';
  el.className = 'live ok';
}

// render shows the current view. why is "route", "filter" or "data": views that fetch their
// own data (cluster, assignment, skew, drift, audit) fetch again on "route" and "data" only.
function render(why) {
  const { view, arg, params } = state.route;
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.view === view || (view === 'rollout' && a.dataset.view === 'rollouts'));
  for (const s of document.querySelectorAll('main section')) s.hidden = s.dataset.view !== view;
  const root = $(`view-${view}`);
  const f = state.fleet;
  if (!f) return;
  const seq = ++state.renderSeq;
  const failed = (e) => {
    if (e instanceof api.Unauthorized) { signOut(`The hub refused the token: ${e.message}`); return; }
    root.replaceChildren(Object.assign(document.createElement('p'), { className: 'errtext', textContent: e.message }));
  };
  switch (view) {
    case 'overview': overview.render(root, f); break;
    case 'matrix': matrix.render(root, f, params, app); break;
    case 'clusters': load('clusters').then((m) => m.render(root, f, params, app)).catch(failed); break;
    case 'rollouts': case 'rollout': if (why !== 'filter') load('rollout').then((m) => m.render(root, view === 'rollout' ? arg : '', () => seq === state.renderSeq)).catch(failed); break;
    case 'skew': if (why !== 'filter') skew.render(root, () => seq === state.renderSeq).catch(failed); break;
    case 'cluster': if (why !== 'filter') cluster.render(root, arg, () => seq === state.renderSeq).catch(failed); break;
    case 'assignment': if (why !== 'filter') load('assignment').then((m) => m.render(root, arg, () => seq === state.renderSeq)).catch(failed); break;
    case 'drift': if (why !== 'filter') drift.render(root, f, () => seq === state.renderSeq).catch(failed); break;
    case 'audit': audit.render(root, params, app, () => seq === state.renderSeq).catch(failed); break;
    default: break;
  }
  if (!performance.getEntriesByName('flotilla:data-rendered').length) performance.mark('flotilla:data-rendered');
}

$('login').addEventListener('submit', (e) => {
  e.preventDefault();
  const t = $('token').value.trim();
  if (!t) return;
  api.setToken(t);
  $('token').value = '';
  start();
});
$('signout').addEventListener('click', () => signOut('Signed out.'));
$('sso-start').addEventListener('click', () => { startSSO().catch((e) => showError(`Single sign-on failed: ${e.message}`, 'auth')); });
window.addEventListener('hashchange', () => {
  if (location.hash.startsWith('#token=')) {
    api.takeTokenFromFragment();
    stop();
    clearData();
    state.route = parseRoute();
    start();
    return;
  }
  state.route = parseRoute();
  render('route');
});
document.addEventListener('visibilitychange', () => { if (!document.hidden && state.running) poll(); });
setInterval(updateLive, 1000);

api.takeTokenFromFragment();
state.route = parseRoute();
render('route');
start();
