package render

import (
	"fmt"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Substitution on decoded values.
//
// Flux substitutes on an object's YAML text and parses the result again (substituteText). For
// a string whose ${...} references expand to "inert" text (no quote, backslash or line break
// that could change the YAML around it), that round trip has a known outcome, decided by how
// yaml.v3 writes the string:
//
//   - quoted (single or double, or a plain string the emitter must quote, such as one with
//     braces inside a flow mapping): the expanded string, still a string;
//   - a literal block (|): the expanded string, when every line keeps its emptiness and its
//     leading space, so that indentation and chomping read the same;
//   - plain, in block context: the expansion read as a plain scalar, so "${n}" with n=3 is the
//     number 3 and a key "${k}" the string k expands to.
//
// substituteDecoded substitutes each string that way and reports done=false, having changed
// nothing, whenever one string falls outside those cases (an anchor or alias, a merge key, a
// tag, a folded block, a multi-line quoted string, non-ASCII or special text, a string the
// emitter would fold at 80 columns, a renamed key that collides, an undefined variable): the
// caller then takes the round trip, which also writes the errors users see.

// emitterWidth is where yaml.v3's emitter folds long scalars at a space.
const emitterWidth = 80

// scalarContext is how yaml.v3 would write a string when it serialises the object.
type scalarContext struct {
	style yaml.Style
	flow  bool // inside a flow collection
	key   bool
	// column bounds the column the scalar starts at in yaml.v3's output (4-space indents).
	column int
}

// valueSubstitution collects the changes of one object; they are applied only when every string
// of the object could be substituted.
type valueSubstitution struct {
	vars  map[string]string
	exp   *expansion
	apply []func()
}

// substituteDecoded substitutes o on its decoded values when it can (see above). done reports
// whether it did; err is then the error substituteText would give.
func substituteDecoded(o *object, vars map[string]string, exp *expansion) (done bool, err error) {
	s := &valueSubstitution{vars: vars, exp: exp}
	if exp != nil {
		// Not done: substituteText substitutes the whole object again and counts it anew.
		left := exp.left
		defer func() {
			if !done {
				exp.left = left
			}
		}()
	}
	var ok bool
	switch {
	case o.node != nil:
		n := o.node
		if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
			n = n.Content[0]
		}
		ok = s.node(n, o.u.Object, scalarContext{}, nil)
	case o.lazyNode != nil:
		ok = len(o.sites) > 0 && s.sites(o.sites) // read by decodeYAMLFast
	default:
		ok = s.json(o.u.Object, 0, nil)
	}
	if !ok {
		return false, nil
	}
	name := objectName(o.u.GetKind(), o.u.GetNamespace(), o.u.GetName())
	for _, f := range s.apply {
		f()
	}
	o.node, o.sites, o.lazyNode = nil, nil, nil
	if err := checkObject(o.u.Object); err != nil {
		return true, &Error{File: o.file, Line: o.line, Object: name, Err: fmt.Errorf("after substitution: %w", err)}
	}
	return true, nil
}

// node walks YAML node n, whose decoded value is v; set replaces v in its parent.
func (s *valueSubstitution) node(n *yaml.Node, v any, c scalarContext, set func(any)) bool {
	if n.Anchor != "" {
		return false // aliases of it would be expanded after substitution, not before
	}
	switch n.Kind {
	case yaml.MappingNode:
		m, ok := v.(map[string]any)
		if !ok || len(m) != len(n.Content)/2 {
			return false
		}
		flow := c.flow || n.Style&yaml.FlowStyle != 0
		var renames [][2]string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, vn := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Anchor != "" || k.ShortTag() == "!!merge" {
				return false
			}
			key, err := mapKey(k)
			if err != nil {
				return false
			}
			child, present := m[key]
			if !present {
				return false
			}
			if mayChange(child) {
				cc := scalarContext{style: vn.Style, flow: flow, column: c.column + 4 + len(key) + 2}
				if !s.node(vn, child, cc, func(nv any) { m[key] = nv }) {
					return false
				}
			}
			if hasDollarSyntax(key) {
				if k.ShortTag() != "!!str" {
					return false
				}
				nk, ok := s.scalar(key, scalarContext{style: k.Style, flow: flow, key: true, column: c.column + 4})
				if !ok {
					return false
				}
				renames = append(renames, [2]string{key, nk.(string)})
			}
		}
		return s.rename(m, renames)
	case yaml.SequenceNode:
		l, ok := v.([]any)
		if !ok || len(l) != len(n.Content) {
			return false
		}
		flow := c.flow || n.Style&yaml.FlowStyle != 0
		for i, item := range n.Content {
			if mayChange(l[i]) {
				cc := scalarContext{style: item.Style, flow: flow, column: c.column + 6}
				if !s.node(item, l[i], cc, func(nv any) { l[i] = nv }) {
					return false
				}
			}
		}
		return true
	case yaml.ScalarNode:
		str, ok := v.(string)
		if !ok || n.ShortTag() != "!!str" || n.Value != str || set == nil {
			return false
		}
		nv, ok := s.scalar(str, c)
		if !ok {
			return false
		}
		s.apply = append(s.apply, func() { set(nv) })
		return true
	}
	return false // an alias, or a document inside an object
}

// json walks a value decoded from JSON: substituteText writes every string of it
// double-quoted, in block style (quotedNode).
func (s *valueSubstitution) json(v any, column int, set func(any)) bool {
	switch v := v.(type) {
	case map[string]any:
		var renames [][2]string
		for key, child := range v {
			if mayChange(child) && !s.json(child, column+4+len(key)+4, func(nv any) { v[key] = nv }) {
				return false
			}
			if hasDollarSyntax(key) {
				nk, ok := s.scalar(key, scalarContext{style: yaml.DoubleQuotedStyle, key: true, column: column + 4})
				if !ok {
					return false
				}
				renames = append(renames, [2]string{key, nk.(string)})
			}
		}
		return s.rename(v, renames)
	case []any:
		for i, e := range v {
			if mayChange(e) && !s.json(e, column+6, func(nv any) { v[i] = nv }) {
				return false
			}
		}
		return true
	case string:
		nv, ok := s.scalar(v, scalarContext{style: yaml.DoubleQuotedStyle, column: column})
		if !ok || set == nil {
			return false
		}
		s.apply = append(s.apply, func() { set(nv) })
		return true
	}
	return false
}

// rename queues the key renames of mapping m. A new key that is already a key of m, or that
// two renames share, would be a duplicate key in the substituted text: the round trip says so.
func (s *valueSubstitution) rename(m map[string]any, renames [][2]string) bool {
	if len(renames) == 0 {
		return true
	}
	seen := map[string]bool{}
	for _, r := range renames {
		if _, exists := m[r[1]]; exists || seen[r[1]] || r[1] == "<<" {
			return false
		}
		seen[r[1]] = true
	}
	s.apply = append(s.apply, func() {
		moved := make([]any, len(renames))
		for i, r := range renames {
			moved[i] = m[r[0]]
			delete(m, r[0])
		}
		for i, r := range renames {
			m[r[1]] = moved[i]
		}
	})
	return true
}

// scalar substitutes string str, written as c says, and returns its value after the round
// trip; ok is false when that value is not certain.
func (s *valueSubstitution) scalar(str string, c scalarContext) (any, bool) {
	if !inertText(str) || !balancedReferences(str) || c.style&yaml.TaggedStyle != 0 {
		return nil, false
	}
	out, err := evalStrict(str, s.vars, s.exp)
	if err != nil || !inertText(out) {
		return nil, false
	}
	if c.key && (len(str) > 128 || len(out) > 128) {
		return nil, false // written as a "? key": not a simple key any more
	}
	multiline := strings.Contains(str, "\n") || strings.Contains(out, "\n")
	// The emitter folds single-line scalars at a space past column 80; a fold next to an
	// expansion that starts or ends with a space would lose that space.
	// In a flow collection the column also depends on the entries before: no spaces there.
	folds := strings.Contains(str, " ") && (c.flow || c.column+len(str)+4 >= emitterWidth)
	switch {
	case c.style&yaml.FoldedStyle != 0:
		return nil, false
	case c.style&yaml.LiteralStyle != 0:
		if c.flow || c.key || !sameLines(str, out) {
			return nil, false
		}
		return out, true
	case c.style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0:
		if multiline || folds {
			return nil, false
		}
		return out, true
	}
	// Plain.
	if multiline || folds || strings.Contains(str, "\t") {
		return nil, false
	}
	if c.flow {
		if !strings.ContainsAny(str, "{}[],?:") {
			return nil, false // stays plain inside the flow collection
		}
		return out, true // quoted by the emitter: flow indicators
	}
	if !blockPlainAllowed(str) {
		return out, true // quoted by the emitter
	}
	return plainValue(out, c.key)
}

// inertText: printable ASCII and line breaks, without quotes or backslashes, so that pasting
// it into a quoted or block scalar changes nothing around it.
func inertText(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b == '\n' {
			continue
		}
		if b < 0x20 || b > 0x7e || b == '"' || b == '\'' || b == '\\' {
			return false
		}
	}
	return true
}

// balancedReferences: every "${" is closed inside the string, so that envsubst reads the same
// references in it alone as in the object's text.
func balancedReferences(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '$':
			i++
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '{':
			depth++
			i++
		case s[i] == '}' && depth > 0:
			depth--
		}
	}
	return depth == 0
}

// sameLines: out, pasted into the literal block yaml.v3 writes for str, reads back as out:
// the block is allowed for str (no space before a line break or at the end), and every line
// keeps whether it is empty and whether it starts with a space, with no line of only spaces or
// ending in one.
func sameLines(str, out string) bool {
	if strings.HasSuffix(str, " ") || strings.Contains(str, " \n") {
		return false
	}
	a, b := strings.Split(str, "\n"), strings.Split(out, "\n")
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if (a[i] == "") != (b[i] == "") {
			return false
		}
		if b[i] == "" {
			continue
		}
		if (a[i][0] == ' ') != (b[i][0] == ' ') || strings.TrimLeft(b[i], " ") == "" || b[i][len(b[i])-1] == ' ' {
			return false
		}
	}
	return true
}

// blockPlainAllowed is yaml.v3's emitter rule for writing a single-line string plain in block
// context (yaml_emitter_analyze_scalar); str is printable ASCII without line breaks or tabs.
func blockPlainAllowed(str string) bool {
	if str == "" || str[0] == ' ' || str[len(str)-1] == ' ' {
		return false
	}
	if strings.HasPrefix(str, "---") || strings.HasPrefix(str, "...") {
		return false
	}
	followedBySpace := func(i int) bool { return i+1 >= len(str) || str[i+1] == ' ' }
	switch str[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '?', ':', '-':
		if followedBySpace(0) {
			return false
		}
	}
	for i := 1; i < len(str); i++ {
		switch {
		case str[i] == ':' && followedBySpace(i):
			return false
		case str[i] == '#' && str[i-1] == ' ':
			return false
		}
	}
	return true
}

// plainValue is what text means as a plain scalar in block context: a key (always a string),
// or a value resolved by the YAML 1.2 core schema as yaml.v3 applies it. ok is false when text
// would not read back as one plain scalar.
func plainValue(text string, key bool) (any, bool) {
	if plainString(text) {
		return text, true
	}
	if !key && decimal(text) {
		// yaml.v3 resolves these as !!int (they are no timestamp), and scalar parses them so.
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return i, true
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, false
	}
	n := doc.Content[0]
	if n.Kind != yaml.ScalarNode || n.Style != 0 || n.Value != text || n.Anchor != "" || n.ShortTag() == "!!merge" {
		return nil, false
	}
	if key {
		k, err := mapKey(n)
		return k, err == nil
	}
	v, err := scalar(n)
	return v, err == nil
}

// decimal: an optional "-", then "0" or digits not starting with 0, at most 18 of them.
func decimal(text string) bool {
	d := strings.TrimPrefix(text, "-")
	if d == "" || len(d) > 18 || d[0] == '0' && len(d) > 1 {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// plainString: text is plainly a string when read as a plain scalar, without asking the YAML
// library (the common case: a name, a region): a letter or "_" first, then letters, digits and
// "_.-/", and not one of the spellings of true, false and null (yaml.v3's resolve table).
func plainString(text string) bool {
	if text == "" {
		return false
	}
	c := text[0]
	if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_') {
		return false
	}
	switch text {
	case "true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL":
		return false
	}
	for i := 1; i < len(text); i++ {
		c := text[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-' || c == '/') {
			return false
		}
	}
	return true
}
