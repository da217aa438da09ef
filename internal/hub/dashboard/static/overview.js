// Fleet overview: the fleet configuration in force, cluster reachability, per-release
// counts (each a link into the filtered matrix), sources and scheduling problems.
import { h, show, shortRev, when, table } from './dom.js';

// COLUMNS are the counts of `flotilla status` (hubclient.ReleaseSummary): the first five
// partition a release's clusters; drifted and conflicted count among them.
const COLUMNS = [
  ['ready', 'On desired revision'], ['progressing', 'Progressing'], ['pending', 'Pending'],
  ['failed', 'Failed'], ['unreachable', 'Unreachable'], ['drifted', 'Drifted'], ['conflicted', 'Conflicted'],
];

export function render(root, fleet) {
  const reachable = fleet.clusters.filter((c) => c.reachable).length;
  const never = fleet.clusters.filter((c) => !c.seen).length;
  const rows = fleet.summaries.map((s) => h('tr', { data: { release: s.release } },
    h('th', { scope: 'row' }, h('a', { href: `#/matrix?release=${encodeURIComponent(s.release)}` }, s.release)),
    h('td', { class: 'rev', title: s.desiredRevision }, shortRev(s.desiredRevision)),
    h('td', { class: 'num' }, String(s.clusters)),
    COLUMNS.map(([state]) => {
      const n = s[state] || 0;
      return h('td', { class: `num ${n ? `s-${state}` : 'zero'}`, data: { state } },
        n ? h('a', { href: `#/matrix?release=${encodeURIComponent(s.release)}&state=${state}` }, String(n)) : '0');
    })));
  const f = fleet.fleet;
  show(root,
    h('h2', null, 'Fleet overview'),
    h('div', { class: 'cards' },
      h('div', { class: `card ${f.error ? 'bad' : ''}` },
        h('h3', null, 'Fleet configuration'),
        h('p', { class: 'big', title: f.revision || '' }, f.revision ? shortRev(f.revision) : 'not read yet'),
        h('p', { class: 'muted' }, `updated ${when(f.updatedAt)}`),
        f.error ? h('p', { class: 'errtext', id: 'fleet-error' }, f.error) : null),
      h('div', { class: 'card' },
        h('h3', null, 'Clusters'),
        h('p', { class: 'big' }, String(fleet.clusters.length)),
        h('p', { class: 'muted' }, `${reachable} reachable, ${fleet.clusters.length - reachable} unreachable${never ? ` (${never} never connected)` : ''}`)),
      h('div', { class: 'card' },
        h('h3', null, 'Releases'),
        h('p', { class: 'big' }, String(fleet.releases.length)),
        h('p', { class: 'muted' }, `${fleet.sources.length} source(s)`))),
    h('h3', null, 'Releases'),
    fleet.summaries.length
      ? table('grid summary', ['Release', 'Desired', 'Clusters', ...COLUMNS.map((c) => c[1])], rows)
      : h('p', { class: 'muted' }, 'No releases in the fleet configuration.'),
    h('h3', null, 'Sources'),
    fleet.sources.length
      ? table('grid', ['Source', 'URL', 'Revision', 'Checked', 'Error'], fleet.sources.map((s) => h('tr', { class: s.error ? 'bad' : '' },
        h('th', { scope: 'row' }, s.name), h('td', { class: 'url' }, s.url),
        h('td', { title: s.revision, class: 'rev' }, shortRev(s.revision)), h('td', null, when(s.checkedAt)),
        h('td', { class: 'errtext' }, s.error || ''))))
      : h('p', { class: 'muted' }, 'No source polled yet.'),
    fleet.problems.length ? [h('h3', null, 'Scheduling problems'), h('ul', { class: 'problems' }, fleet.problems.map((p) => h('li', null, p)))] : null,
  );
}
