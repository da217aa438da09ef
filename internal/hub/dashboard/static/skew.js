// Skew (GET /api/v1/skew, as `flotilla skew`): per release and desired revision, the clusters
// grouped by the revision they applied. A release is skewed when some of its clusters are not
// on the desired revision (an older one, failed applying it, or nothing reported yet); those
// groups are listed with their clusters, so "12 of 100 clusters run an old webhook" is one
// glance.
import { h, show, shortRev } from './dom.js';
import { get } from './api.js';

const LIST = 12; // cluster names listed per group before "and N more"

function groupLabel(g) {
  if (!g.revision) return 'nothing applied yet';
  return `${shortRev(g.revision)}${g.failed ? ', failed applying it' : ''}`;
}

export async function render(root, isCurrent) {
  const releases = (await get('/api/v1/skew')).data.releases || [];
  if (!isCurrent()) return;
  const skewed = releases.filter((r) => r.skewed > 0);
  const inStep = Array.from(new Set(releases.filter((r) => r.skewed === 0).map((r) => r.release)));
  show(root,
    h('h2', null, 'Skew'),
    h('p', { class: 'muted', id: 'skew-summary' }, `${skewed.length} of ${releases.length} release revision(s) have clusters off the desired revision.`),
    skewed.map((r) => h('div', { class: 'skew', data: { release: r.release, skewed: String(r.skewed) } },
      h('h3', null, h('a', { href: `#/matrix?release=${encodeURIComponent(r.release)}&state=not-ready` }, r.release),
        ` — ${r.skewed} of ${r.clusters} clusters off `, h('span', { class: 'rev', title: r.desiredRevision }, shortRev(r.desiredRevision))),
      h('ul', null, r.groups.map((g) => h('li', { class: g.desired ? 'ok' : 'off' },
        h('span', { class: 'rev', title: g.revision || '' }, groupLabel(g)),
        g.desired ? ' (desired)' : '',
        `: ${g.count} of ${r.clusters} clusters`,
        g.desired ? null : [' — ', g.clusters.slice(0, LIST).map((n, k) => [k ? ', ' : '', h('a', { href: `#/cluster/${encodeURIComponent(n)}` }, n)]),
          g.count > LIST ? ` and ${g.count - LIST} more` : '']))))),
    inStep.length ? h('p', { class: 'muted' }, `In step: ${inStep.join(', ')}.`) : null,
  );
}
