// Skew: per release, the clusters grouped by the revision they run. A release is skewed when
// its clusters do not all run the desired revision: the groups off it are listed first, with
// their clusters, so "12 of 100 clusters run an old webhook" is one glance.
import { h, show, shortRev } from './dom.js';
import { CELL } from './filter.js';

const LIST = 12; // cluster names listed per group before "and N more"

export function analyse(fleet) {
  const out = [];
  fleet.releases.forEach((rel, j) => {
    const groups = new Map(); // applied revision index -> cluster indexes
    const desired = new Set();
    let assigned = 0;
    fleet.cells.forEach((row, i) => {
      if (row[CELL * j] === 0) return;
      assigned++;
      desired.add(row[CELL * j + 1]);
      const a = row[CELL * j + 2];
      if (!groups.has(a)) groups.set(a, []);
      groups.get(a).push(i);
    });
    if (!assigned) return;
    const list = Array.from(groups, ([rev, clusters]) => ({ rev, clusters, desired: desired.has(rev) }))
      .sort((a, b) => (a.desired - b.desired) || (b.clusters.length - a.clusters.length));
    out.push({ release: rel, assigned, groups: list, skewed: list.some((g) => !g.desired) || list.length > 1 });
  });
  return out;
}

export function render(root, fleet) {
  const all = analyse(fleet);
  const skewed = all.filter((r) => r.skewed);
  show(root, 
    h('h2', null, 'Skew'),
    h('p', { class: 'muted' }, `${skewed.length} of ${all.length} assigned releases run more than one revision or not the desired one.`),
    skewed.map((r) => h('div', { class: 'skew', data: { release: r.release, skewed: String(r.groups.filter((g) => !g.desired).reduce((n, g) => n + g.clusters.length, 0)) } },
      h('h3', null, h('a', { href: `#/matrix?release=${encodeURIComponent(r.release)}&state=not-ready` }, r.release), ` (${r.assigned} clusters)`),
      h('ul', null, r.groups.map((g) => {
        const names = g.clusters.slice(0, LIST).map((i) => fleet.clusters[i].name);
        const rev = g.rev >= 0 ? fleet.revisions[g.rev] : '';
        return h('li', { class: g.desired ? 'ok' : 'off' },
          h('span', { class: 'rev', title: rev }, rev ? shortRev(rev) : 'nothing applied yet'),
          g.desired ? ' (desired)' : '',
          `: ${g.clusters.length} of ${r.assigned} clusters`,
          g.desired ? null : [' — ', names.map((n, k) => [k ? ', ' : '', h('a', { href: `#/cluster/${encodeURIComponent(n)}` }, n)]),
            g.clusters.length > LIST ? ` and ${g.clusters.length - LIST} more` : '']);
      })))),
    all.length > skewed.length ? h('p', { class: 'muted' }, `In step: ${all.filter((r) => !r.skewed).map((r) => r.release).join(', ')}.`) : null,
  );
}
