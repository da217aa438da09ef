// The user API with the token the dashboard signed in with. The token comes from the URL fragment (#token=...,
// which browsers never send to the server) or the sign-in form, and is kept in this tab's
// sessionStorage; it is sent as a bearer token and never put in a URL.

const KEY = 'flotilla.token';

export class Unauthorized extends Error {}

export class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// takeTokenFromFragment moves a token in the fragment (#token=T, optionally &view=V) to
// sessionStorage and removes it from the address bar and the history.
export function takeTokenFromFragment() {
  if (!location.hash.startsWith('#token=')) return;
  const p = new URLSearchParams(location.hash.slice(1));
  if (p.get('token')) sessionStorage.setItem(KEY, p.get('token'));
  const view = (p.get('view') || 'overview').replace(/^\/+/, '');
  history.replaceState(null, '', `${location.pathname}${location.search}#/${view}`);
}

export function token() { return sessionStorage.getItem(KEY) || ''; }
export function setToken(t) { sessionStorage.setItem(KEY, t.trim()); }
export function clearToken() { sessionStorage.removeItem(KEY); }

// get fetches an API path. With etag it asks for the document only if it changed and
// resolves to {notModified: true} when it did not. A 401 throws Unauthorized; any other
// error status throws APIError with the hub's message.
export async function get(path, etag) {
  const headers = { Authorization: `Bearer ${token()}`, Accept: 'application/json' };
  if (etag) headers['If-None-Match'] = etag;
  const resp = await fetch(path, { headers, cache: 'no-store', credentials: 'omit' });
  if (resp.status === 304) return { notModified: true, etag };
  let body = null;
  try { body = await resp.json(); } catch { body = null; }
  if (resp.status === 401) throw new Unauthorized((body && body.error) || 'the hub refused the token');
  if (!resp.ok) throw new APIError(resp.status, (body && body.error) || `${resp.status} ${resp.statusText}`);
  return { data: body, etag: resp.headers.get('ETag') || '' };
}

// post sends body as JSON to an API path that needs no token (the sign-in) and resolves to
// {status, data}.
export async function post(path, body) {
  const resp = await fetch(path, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify(body || {}), cache: 'no-store', credentials: 'omit',
  });
  let data = null;
  try { data = await resp.json(); } catch { data = null; }
  return { status: resp.status, data };
}

// loginInfo says how the hub takes sign-ins (GET /api/v1/login, no token needed).
export async function loginInfo() {
  const resp = await fetch('/api/v1/login', { cache: 'no-store', credentials: 'omit' });
  return resp.ok ? resp.json() : {};
}
