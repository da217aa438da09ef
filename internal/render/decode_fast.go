package render

import (
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// A reader for the YAML most manifests are written in, several times faster than yaml.v3's
// parser: block mappings and sequences, plain scalars on one line, quoted scalars on one line
// without escapes, literal blocks (| and |-), flow collections on one line, comments and
// "---" separators, in printable ASCII. A file with anything else (anchors, tags, folded or
// multi-line scalars, tabs, non-ASCII text, duplicate keys, Lists...) is read by yaml.v3, as
// is every file the fast reader is not sure of: it never reports an error of its own. A
// differential fuzz target holds it to yaml.v3 (decode_fast_test.go).
//
// It records where each string that substitution may change sits and how yaml.v3 would write
// it (site), so that substitution needs no yaml.Node either (substituteSites).

// site is a string substitution may change: a value of mapping m or list l, or a key of m.
type site struct {
	m     map[string]any
	l     []any
	key   string
	index int
	isKey bool
	group int // key sites of one mapping share it
	ctx   scalarContext
}

// fastParser reads one document.
type fastParser struct {
	lines  []string // the document's lines; sequence items are rewritten in place ("- a: 1" -> "  a: 1")
	first  int      // line number of lines[0] in the file
	pos    int
	sites  []site
	groups int
	ok     bool
}

// decodeYAMLFast appends the objects of a YAML file as decodeYAML would, or reports ok=false
// (objs unchanged) when the file is not in the subset it reads.
func decodeYAMLFast(rel string, data []byte, objs []object) (_ []object, ok bool) {
	for _, b := range data {
		if b != '\n' && (b < 0x20 || b > 0x7e) {
			return objs, false
		}
	}
	text := string(data)
	lines := strings.Split(text, "\n")
	offsets := make([]int, len(lines)+1) // of each line in text; the last is past the end
	for i, l := range lines {
		offsets[i+1] = offsets[i] + len(l) + 1
	}
	out := objs
	flush := func(start, end int) bool {
		// The document as written (the parser rewrites lines), for the rare object whose
		// substitution needs yaml.v3's node after all.
		docText := text[min(offsets[start], len(text)):min(offsets[end], len(text))]
		p := &fastParser{lines: lines[start:end], first: start + 1, ok: true}
		v, line := p.document()
		if !p.ok {
			return false
		}
		if v == nil {
			return true // an empty document
		}
		m := v.(map[string]any)
		if checkObject(m) != nil {
			return false // the error is yaml.v3's to write
		}
		if kind, _ := m["kind"].(string); strings.HasSuffix(kind, "List") {
			if _, isList := m["items"]; isList {
				return false
			}
		}
		n := len(out)
		out = appendUnlessLocal(out, m, rel, line, func() *yaml.Node { return nil })
		if len(out) > n && out[n].substitute {
			out[n].sites = p.sites
			out[n].lazyNode = func() *yaml.Node {
				var node yaml.Node
				if err := yaml.NewDecoder(strings.NewReader(docText)).Decode(&node); err != nil {
					return nil
				}
				return &node
			}
		}
		return true
	}
	start := 0
	for i := 0; i <= len(lines); i++ {
		if i < len(lines) {
			l := lines[i]
			if !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "...") && !strings.HasPrefix(l, "%") {
				continue
			}
			if l != "---" {
				return objs, false
			}
		}
		if !flush(start, i) {
			return objs, false
		}
		start = i + 1
	}
	return out, true
}

func indentOf(l string) int {
	n := 0
	for n < len(l) && l[n] == ' ' {
		n++
	}
	return n
}

// blank: empty, spaces, or a comment.
func blank(l string) bool {
	t := strings.TrimLeft(l, " ")
	return t == "" || t[0] == '#'
}

// next skips blank lines and returns the index of the next content line, or -1.
func (p *fastParser) next() int {
	for p.pos < len(p.lines) && blank(p.lines[p.pos]) {
		p.pos++
	}
	if p.pos >= len(p.lines) {
		return -1
	}
	return p.pos
}

func (p *fastParser) fail() { p.ok = false }

// document reads the document's root (a block mapping at column 0) and the line it starts on.
func (p *fastParser) document() (any, int) {
	i := p.next()
	if i < 0 {
		return nil, 0
	}
	if indentOf(p.lines[i]) != 0 || isSeqItem(p.lines[i][0:]) {
		p.fail()
		return nil, 0
	}
	line := p.first + i
	v := p.mapping(0, 0)
	if p.ok && p.next() >= 0 {
		p.fail() // something left at a smaller indentation: yaml.v3 decides
	}
	return v, line
}

func isSeqItem(rest string) bool { return rest == "-" || strings.HasPrefix(rest, "- ") }

// block reads the node that starts at the next content line, indented at ind.
func (p *fastParser) block(ind, col int) any {
	i := p.next()
	rest := p.lines[i][ind:]
	if isSeqItem(rest) {
		return p.sequence(ind, col)
	}
	return p.mapping(ind, col)
}

// mapping reads a block mapping whose keys are at indentation ind.
func (p *fastParser) mapping(ind, col int) map[string]any {
	m := map[string]any{}
	group := p.groups
	p.groups++
	for p.ok {
		i := p.next()
		if i < 0 {
			break
		}
		l := p.lines[i]
		li := indentOf(l)
		if li < ind {
			break
		}
		if li > ind {
			p.fail()
			break
		}
		rest := l[ind:]
		if isSeqItem(rest) {
			break // a sequence at the same indentation belongs to the parent key
		}
		key, value, ok := splitKey(rest)
		if !ok {
			p.fail()
			break
		}
		if _, dup := m[key]; dup {
			p.fail()
			break
		}
		p.pos++
		vcol := col + 4 + len(key) + 2
		if hasDollarSyntax(key) {
			p.sites = append(p.sites, site{m: m, key: key, isKey: true, group: group, ctx: scalarContext{key: true, column: col + 4}})
		}
		if value == "" {
			// The value is on the following lines, or null.
			j := p.next()
			switch {
			case j >= 0 && indentOf(p.lines[j]) > ind:
				m[key] = p.block(indentOf(p.lines[j]), vcol)
			case j >= 0 && indentOf(p.lines[j]) == ind && isSeqItem(p.lines[j][ind:]):
				m[key] = p.sequence(ind, vcol)
			default:
				m[key] = nil
			}
			continue
		}
		m[key] = p.inline(value, ind, vcol, func(s site) site { s.m, s.key = m, key; return s })
	}
	return m
}

// sequence reads a block sequence whose "- " are at indentation ind.
func (p *fastParser) sequence(ind, col int) []any {
	var l []any
	var pending []int // sites that are items of l
	for p.ok {
		i := p.next()
		if i < 0 {
			break
		}
		line := p.lines[i]
		li := indentOf(line)
		if li < ind {
			break
		}
		if li > ind || !isSeqItem(line[ind:]) {
			if li == ind {
				break // a key of the parent mapping
			}
			p.fail()
			break
		}
		idx := len(l)
		l = append(l, nil)
		icol := col + 6
		n := len(p.sites)
		rest := strings.TrimLeft(line[ind+1:], " ")
		switch {
		case rest == "" || rest[0] == '#':
			p.pos++
			if j := p.next(); j >= 0 && indentOf(p.lines[j]) > ind {
				l[idx] = p.block(indentOf(p.lines[j]), icol)
			}
		case isSeqItem(rest) || isMappingLine(rest):
			// "- a: 1" or "- - x": the item is a block node starting on this line.
			inner := ind + 1 + (len(line[ind+1:]) - len(rest))
			p.lines[i] = strings.Repeat(" ", inner) + rest
			l[idx] = p.block(inner, icol)
		default:
			p.pos++
			l[idx] = p.inline(rest, ind, icol, func(s site) site { return s })
		}
		for j := n; j < len(p.sites); j++ {
			if p.sites[j].m == nil && p.sites[j].l == nil {
				p.sites[j].index = idx
				pending = append(pending, j)
			}
		}
	}
	for _, j := range pending {
		p.sites[j].l = l
	}
	return l
}

// isMappingLine: the text starts with a key ("key: ..." or "key:").
func isMappingLine(s string) bool {
	_, _, ok := splitKey(s)
	return ok
}

// splitKey splits "key: value" (or "key:"), with a plain key of letters, digits and "_./-"
// not starting with "-"; value is trimmed, without a trailing comment.
func splitKey(s string) (key, value string, ok bool) {
	end := 0
	for end < len(s) && keyChar(s[end]) {
		end++
	}
	if end == 0 || end >= len(s) || s[end] != ':' || s[0] == '-' || s[0] == '{' || s[0] == '}' {
		return "", "", false
	}
	key = s[:end]
	switch key {
	case "null", "Null", "NULL":
		return "", "", false
	}
	rest := s[end+1:]
	if rest != "" && rest[0] != ' ' {
		return "", "", false
	}
	rest = strings.TrimLeft(rest, " ")
	if rest != "" && rest[0] == '#' {
		rest = ""
	}
	return key, rest, true
}

func keyChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-' || c == '$' || c == '{' || c == '}'
}

// inline reads the value that follows "key: " or "- " on one line (and a literal block's
// lines). at fills in where a site of the value sits.
func (p *fastParser) inline(v string, ind, col int, at func(site) site) any {
	switch v[0] {
	case '|':
		return p.literal(v, ind, col, at)
	case '"', '\'':
		s, ok := quoted(v)
		if !ok {
			p.fail()
			return nil
		}
		style := yaml.DoubleQuotedStyle
		if v[0] == '\'' {
			style = yaml.SingleQuotedStyle
		}
		if hasDollarSyntax(s) {
			p.sites = append(p.sites, at(site{ctx: scalarContext{style: style, column: col}}))
		}
		return s
	case '{', '[':
		f := &flowParser{s: v, p: p}
		val := f.value(col)
		end := f.i
		f.space()
		if !f.ok || (f.i < len(f.s) && (f.s[f.i] != '#' || f.i == end)) {
			p.fail()
			return nil
		}
		return val
	case '>', '&', '*', '!', '%', '@', '`', '#', ',', ']', '}', '?', ':':
		p.fail()
		return nil
	case '-':
		if len(v) == 1 || v[1] == ' ' {
			p.fail()
			return nil
		}
	}
	s := plainText(v)
	if s == "" || strings.Contains(s, ": ") || strings.HasSuffix(s, ":") || strings.Contains(s, "\t") {
		p.fail()
		return nil
	}
	// A more indented line after a plain scalar would continue it: yaml.v3 decides.
	if j := p.next(); j >= 0 && indentOf(p.lines[j]) > ind {
		p.fail()
		return nil
	}
	if hasDollarSyntax(s) {
		p.sites = append(p.sites, at(site{ctx: scalarContext{column: col}}))
		return s // "${...}" reads as a string
	}
	val, ok := plainValue(s, false)
	if !ok {
		p.fail()
		return nil
	}
	return val
}

// plainText is a plain scalar's text: up to a comment, without trailing spaces.
func plainText(v string) string {
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimRight(v, " ")
}

// quoted reads a one-line quoted scalar that is all of v but a trailing comment. Double-quoted
// text with a backslash (an escape) is left to yaml.v3.
func quoted(v string) (string, bool) {
	q := v[0]
	var b strings.Builder
	i := 1
	for ; i < len(v); i++ {
		c := v[i]
		if q == '"' && c == '\\' {
			return "", false
		}
		if c == q {
			if q == '\'' && i+1 < len(v) && v[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			break
		}
		b.WriteByte(c)
	}
	if i >= len(v) {
		return "", false // not closed on this line
	}
	tail := strings.TrimLeft(v[i+1:], " ")
	if tail != "" && tail[0] != '#' || tail != "" && v[i+1] != ' ' {
		return "", false
	}
	return b.String(), true
}

// literal reads a literal block ("|" or "|-") whose content lines follow, more indented
// than ind.
func (p *fastParser) literal(header string, ind, col int, at func(site) site) any {
	h := plainText(header)
	if h != "|" && h != "|-" {
		p.fail()
		return nil
	}
	if h != header && !strings.HasPrefix(header[len(h):], " #") && strings.TrimRight(header[len(h):], " ") != "" {
		p.fail()
		return nil
	}
	var content []string
	blockInd := -1
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if strings.TrimLeft(l, " ") == "" {
			if blockInd < 0 && len(l) > ind || blockInd >= 0 && len(l) > blockInd {
				p.fail() // spaces that may be content, or fix the indentation
				return nil
			}
			content = append(content, "")
			p.pos++
			continue
		}
		li := indentOf(l)
		if blockInd < 0 {
			if li <= ind {
				break
			}
			blockInd = li
		}
		if li < blockInd {
			if li > ind {
				p.fail()
				return nil
			}
			break
		}
		content = append(content, l[blockInd:])
		p.pos++
	}
	if blockInd < 0 {
		p.fail()
		return nil
	}
	// Trailing empty lines belong to the chomping: clip keeps one line break, strip none.
	for len(content) > 0 && content[len(content)-1] == "" {
		content = content[:len(content)-1]
		p.pos-- // and they are not the parent's
	}
	for p.pos < len(p.lines) && p.lines[p.pos] == "" {
		p.pos++
	}
	s := strings.Join(content, "\n")
	if h == "|" {
		s += "\n"
	}
	if hasDollarSyntax(s) {
		p.sites = append(p.sites, at(site{ctx: scalarContext{style: yaml.LiteralStyle, column: col}}))
	}
	return s
}

// flowParser reads a flow collection on one line: {a: b, c: [d, 'e']}.
type flowParser struct {
	s  string
	i  int
	p  *fastParser
	ok bool
}

func (f *flowParser) space() {
	for f.i < len(f.s) && f.s[f.i] == ' ' {
		f.i++
	}
}

func (f *flowParser) value(col int) any {
	f.ok = true
	return f.node(col)
}

func (f *flowParser) node(col int) any {
	f.space()
	if f.i >= len(f.s) {
		f.ok = false
		return nil
	}
	switch f.s[f.i] {
	case '{':
		f.i++
		m := map[string]any{}
		group := f.p.groups
		f.p.groups++
		for f.ok {
			f.space()
			if f.i < len(f.s) && f.s[f.i] == '}' && len(m) == 0 {
				f.i++
				return m
			}
			k, style := f.scalar(true)
			if !f.ok || k == "" {
				f.ok = false
				return nil
			}
			if _, dup := m[k]; dup || (style == 0 && (k == "null" || k == "Null" || k == "NULL" || k == "~")) {
				f.ok = false
				return nil
			}
			if hasDollarSyntax(k) {
				f.p.sites = append(f.p.sites, site{m: m, key: k, isKey: true, group: group, ctx: scalarContext{key: true, flow: true, style: style, column: col + 4}})
			}
			f.space()
			if f.i >= len(f.s) || f.s[f.i] != ':' || f.i+1 >= len(f.s) || f.s[f.i+1] != ' ' {
				f.ok = false
				return nil
			}
			f.i += 2
			n := len(f.p.sites)
			m[k] = f.node(col + 4 + len(k) + 2)
			for j := n; j < len(f.p.sites); j++ {
				if f.p.sites[j].m == nil && f.p.sites[j].l == nil {
					f.p.sites[j].m, f.p.sites[j].key = m, k
				}
			}
			f.space()
			if f.i < len(f.s) && f.s[f.i] == ',' {
				f.i++
				continue
			}
			if f.i < len(f.s) && f.s[f.i] == '}' {
				f.i++
				return m
			}
			f.ok = false
		}
		return nil
	case '[':
		f.i++
		l := []any{}
		var pending []int
		for f.ok {
			f.space()
			if f.i < len(f.s) && f.s[f.i] == ']' && len(l) == 0 {
				f.i++
				return l
			}
			n := len(f.p.sites)
			l = append(l, f.node(col+6))
			for j := n; j < len(f.p.sites); j++ {
				if f.p.sites[j].m == nil && f.p.sites[j].l == nil {
					f.p.sites[j].index = len(l) - 1
					pending = append(pending, j)
				}
			}
			f.space()
			if f.i < len(f.s) && f.s[f.i] == ',' {
				f.i++
				continue
			}
			if f.i < len(f.s) && f.s[f.i] == ']' {
				f.i++
				for _, j := range pending {
					f.p.sites[j].l = l
				}
				return l
			}
			f.ok = false
		}
		return nil
	}
	s, style := f.scalar(false)
	if !f.ok {
		return nil
	}
	if hasDollarSyntax(s) {
		f.p.sites = append(f.p.sites, site{ctx: scalarContext{flow: true, style: style, column: col}})
		if style == 0 {
			f.ok = false // a plain "$$" in flow context: left to yaml.v3
		}
		return s
	}
	if style != 0 {
		return s
	}
	v, ok := plainValue(s, false)
	if !ok {
		f.ok = false
	}
	return v
}

// scalar reads a plain or quoted scalar inside a flow collection.
func (f *flowParser) scalar(key bool) (string, yaml.Style) {
	if f.i >= len(f.s) {
		f.ok = false
		return "", 0
	}
	if c := f.s[f.i]; c == '"' || c == '\'' {
		end := strings.IndexByte(f.s[f.i+1:], c)
		if end < 0 {
			f.ok = false
			return "", 0
		}
		s := f.s[f.i+1 : f.i+1+end]
		if strings.ContainsRune(s, '\\') || (c == '\'' && f.i+2+end < len(f.s) && f.s[f.i+2+end] == '\'') {
			f.ok = false
			return "", 0
		}
		f.i += end + 2
		if c == '"' {
			return s, yaml.DoubleQuotedStyle
		}
		return s, yaml.SingleQuotedStyle
	}
	start := f.i
	for f.i < len(f.s) {
		c := f.s[f.i]
		if c == ',' || c == '[' || c == ']' || c == '{' || c == '}' || c == '#' || c == '"' || c == '\'' {
			break
		}
		if c == ':' && (f.i+1 >= len(f.s) || f.s[f.i+1] == ' ' || f.s[f.i+1] == ',' || f.s[f.i+1] == '}' || f.s[f.i+1] == ']') {
			break
		}
		f.i++
	}
	s := strings.TrimRight(f.s[start:f.i], " ")
	if s == "" || strings.IndexAny(s[:1], "&*!|>%@`?:-") == 0 && (s[0] != '-' || len(s) == 1 || s[1] == ' ') {
		f.ok = false
		return "", 0
	}
	if strings.Contains(s, "  ") || strings.Contains(s, " #") {
		f.ok = false
		return "", 0
	}
	return s, 0
}

// sites substitutes a fast-read object at its sites, as node does on a yaml.Node; ok is false
// (nothing changed) where it cannot be sure.
func (s *valueSubstitution) sites(sites []site) bool {
	renames := map[int][][2]string{}
	maps := map[int]map[string]any{}
	var order []int
	for _, st := range sites {
		if st.isKey {
			if st.ctx.flow && st.ctx.style == 0 {
				return false
			}
			nk, ok := s.scalar(st.key, st.ctx)
			if !ok {
				return false
			}
			if _, seen := maps[st.group]; !seen {
				order = append(order, st.group)
				maps[st.group] = st.m
			}
			renames[st.group] = append(renames[st.group], [2]string{st.key, nk.(string)})
			continue
		}
		var str string
		var ok bool
		if st.m != nil {
			str, ok = st.m[st.key].(string)
		} else if st.l != nil && st.index < len(st.l) {
			str, ok = st.l[st.index].(string)
		}
		if !ok {
			return false
		}
		nv, ok := s.scalar(str, st.ctx)
		if !ok {
			return false
		}
		if st.m != nil {
			m, key := st.m, st.key
			s.apply = append(s.apply, func() { m[key] = nv })
		} else {
			l, i := st.l, st.index
			s.apply = append(s.apply, func() { l[i] = nv })
		}
	}
	for _, g := range order {
		if !s.rename(maps[g], renames[g]) {
			return false
		}
	}
	return true
}
