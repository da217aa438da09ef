// Small DOM helpers. Text always goes in as text nodes, never as HTML: cluster names, labels
// and error messages come from the fleet and must not become markup.

// h builds an element. attrs: class, text, title, href, data (an object of data-* values),
// on (an object of event listeners), and any other attribute by name. Children are nodes or
// strings; null and false are skipped.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'data') for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = dv;
    else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// show replaces root's children with nodes, skipping null and false and flattening arrays
// (replaceChildren itself would print "null").
export function show(root, ...nodes) {
  root.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false));
}

// shortRev turns "main@sha1:4f2c1a2..." or "sha1:4f2c..." into "4f2c1a2"; anything else is
// cut to 12 characters.
export function shortRev(rev) {
  if (!rev) return '';
  const i = rev.lastIndexOf('sha1:');
  if (i >= 0) return rev.slice(i + 5, i + 12);
  return rev.length > 12 ? rev.slice(0, 12) : rev;
}

// ago says how long before now a time was, roughly.
export function ago(t) {
  if (!t) return 'never';
  const s = Math.max(0, Math.round((Date.now() - new Date(t).getTime()) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

// when shows a time as local date and time with how long ago it was.
export function when(t) {
  if (!t) return 'never';
  const d = new Date(t);
  if (isNaN(d) || d.getFullYear() < 1971) return 'never';
  return `${d.toLocaleString()} (${ago(t)})`;
}

export function labelText(labels) {
  return Object.keys(labels || {}).sort().map((k) => `${k}=${labels[k]}`).join(' ');
}

// table builds a table from a header row and rows of cells (nodes or strings).
export function table(cls, headers, rows) {
  return h('table', { class: cls },
    h('thead', null, h('tr', null, headers.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', null, rows));
}

// labelChips shows labels as chips, each a button carrying its "key=value" in data-label, so
// a view can filter by a label with one delegated click handler.
export function labelChips(labels) {
  return Object.keys(labels || {}).sort().map((k) => {
    const term = `${k}=${labels[k]}`;
    return h('button', { type: 'button', class: 'chip label', data: { label: term }, title: `filter by ${term} (click again to remove)` }, term);
  });
}
