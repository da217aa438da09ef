// Filtering the release x cluster matrix: pure functions over the compact fleet document
// (see dashboard.Fleet in the hub), so 20,000 cells are filtered without touching the DOM.

// parseQuery reads the cluster filter: space- or comma-separated terms, each a label
// selector (key=value, key!=value, or a bare key that must exist as "key=") or a substring
// of the cluster name.
export function parseQuery(q) {
  const out = { names: [], labels: [] };
  for (const term of (q || '').split(/[\s,]+/).filter(Boolean)) {
    const m = /^([^=!]+)(!?=)(.*)$/.exec(term);
    if (m) out.labels.push({ key: m[1], value: m[3], negate: m[2] === '!=' });
    else out.names.push(term.toLowerCase());
  }
  return out;
}

export function matchCluster(cluster, query) {
  const name = cluster.name.toLowerCase();
  for (const n of query.names) if (!name.includes(n)) return false;
  for (const l of query.labels) {
    const has = Object.prototype.hasOwnProperty.call(cluster.labels, l.key);
    const eq = has && (l.value === '' ? true : cluster.labels[l.key] === l.value);
    if (l.negate ? eq : !eq) return false;
  }
  return true;
}

// CELL is how many integers a cell takes in fleet.cells: state, desired, applied, flags.
export const CELL = 4;
export const FLAG_DRIFTED = 1;
export const FLAG_CONFLICTED = 2;
// The kstatus health the agent reported (dashboard.FlagHealth*): at most one is set, none
// without wait.
export const FLAG_HEALTH_CURRENT = 4;
export const FLAG_HEALTH_IN_PROGRESS = 8;
export const FLAG_HEALTH_FAILED = 16;

// healthOf names a cell's health: Current, InProgress, Failed, or '' when none was reported.
export function healthOf(flags) {
  if (flags & FLAG_HEALTH_FAILED) return 'Failed';
  if (flags & FLAG_HEALTH_IN_PROGRESS) return 'InProgress';
  if (flags & FLAG_HEALTH_CURRENT) return 'Current';
  return '';
}

// FILTER_STATES are the choices of the state filter: the phases, then the flags.
export const FILTER_STATES = ['ready', 'progressing', 'pending', 'failed', 'unreachable', 'drifted', 'conflicted', 'unhealthy', 'not-ready'];

// stateMatches: the cell (its state code and flags) is what the filter asks for: a phase,
// "drifted", "conflicted" or "unhealthy" (health reported and not Current; whatever the
// phase), "not-ready" (assigned, not Ready), or "" (anything assigned).
export function stateMatches(fleet, code, flags, want) {
  if (code === 0) return false;
  if (!want) return true;
  if (want === 'drifted') return (flags & FLAG_DRIFTED) !== 0;
  if (want === 'conflicted') return (flags & FLAG_CONFLICTED) !== 0;
  if (want === 'unhealthy') return (flags & (FLAG_HEALTH_IN_PROGRESS | FLAG_HEALTH_FAILED)) !== 0;
  const name = fleet.states[code];
  if (want === 'not-ready') return name !== 'ready';
  return name === want;
}

// filterMatrix returns the cluster rows and release columns to show for a filter
// {q, release, state}: columns are all releases or the one chosen; a row is kept when the
// cluster matches q and, when a release or a state is chosen, one of its cells in those
// columns is assigned and in that state.
export function filterMatrix(fleet, filter) {
  let cols = fleet.releases.map((_, j) => j);
  if (filter.release) {
    const j = fleet.releases.indexOf(filter.release);
    cols = j >= 0 ? [j] : [];
  }
  const query = parseQuery(filter.q);
  const needCell = Boolean(filter.release || filter.state);
  const rows = [];
  for (let i = 0; i < fleet.clusters.length; i++) {
    if (!matchCluster(fleet.clusters[i], query)) continue;
    if (needCell) {
      const row = fleet.cells[i];
      let ok = false;
      for (const j of cols) {
        if (stateMatches(fleet, row[CELL * j], row[CELL * j + 3], filter.state)) { ok = true; break; }
      }
      if (!ok) continue;
    }
    rows.push(i);
  }
  return { rows, cols };
}

// toggleTerm adds a filter term (a label selector such as env=prod) to the query, or removes
// it when the query has it already: what clicking a label does.
export function toggleTerm(q, term) {
  const terms = (q || '').split(/[\s,]+/).filter(Boolean);
  const i = terms.indexOf(term);
  if (i >= 0) terms.splice(i, 1);
  else terms.push(term);
  return terms.join(' ');
}

// rowHealth sums the health of one cluster's cells in the given columns:
// {current, inProgress, failed} counts of assignments by reported health.
export function rowHealth(row, cols) {
  const out = { current: 0, inProgress: 0, failed: 0 };
  for (const j of cols) {
    if (row[CELL * j] === 0) continue;
    const f = row[CELL * j + 3];
    if (f & FLAG_HEALTH_FAILED) out.failed++;
    else if (f & FLAG_HEALTH_IN_PROGRESS) out.inProgress++;
    else if (f & FLAG_HEALTH_CURRENT) out.current++;
  }
  return out;
}

// healthText says a row's health in a few words: "Failed 1", "InProgress 2", "Current", or
// "-" when no assignment reported health (releases without wait).
export function healthText(hs) {
  const parts = [];
  if (hs.failed) parts.push(`Failed ${hs.failed}`);
  if (hs.inProgress) parts.push(`InProgress ${hs.inProgress}`);
  if (parts.length) return parts.join(', ');
  return hs.current ? 'Current' : '-';
}

// healthClass is the colour of a health: s-failed, s-progressing, s-ready, or none.
export function healthClass(hs) {
  if (hs.failed) return 's-failed';
  if (hs.inProgress) return 's-progressing';
  return hs.current ? 's-ready' : '';
}
