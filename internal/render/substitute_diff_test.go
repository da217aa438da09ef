package render

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// referenceSubstituteAll is substitution as it was before it worked on decoded values: every
// object that may change goes through the YAML round trip. It is the reference the
// differential tests hold substituteAll to.
func referenceSubstituteAll(ctx context.Context, objs []object, vars map[string]string) error {
	for i := range objs {
		o := &objs[i]
		if !o.substitute || substituteDisabled(o) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := referenceSubstituteObject(o, vars); err != nil {
			return err
		}
	}
	return nil
}

func referenceSubstituteObject(o *object, vars map[string]string) error {
	name := objectName(o.u.GetKind(), o.u.GetNamespace(), o.u.GetName())
	fail := func(err error) error { return &Error{File: o.file, Line: o.line, Object: name, Err: err} }

	n := o.node
	if n == nil {
		n = quotedNode(o.u.Object)
	}
	stripComments(n)
	text, err := yaml.Marshal(n)
	if err != nil {
		return fail(fmt.Errorf("substitution: %w", err))
	}
	out, err := evalStrict(string(text), vars, nil)
	if err != nil {
		return fail(err)
	}
	if out == string(text) {
		return nil
	}
	v, err := decodeSubstituted(out)
	if err != nil {
		return fail(fmt.Errorf("after substitution: %w", err))
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fail(fmt.Errorf("after substitution: want a Kubernetes object, got %s", describe(v)))
	}
	if err := checkObject(m); err != nil {
		return fail(fmt.Errorf("after substitution: %w", err))
	}
	o.u.Object = m
	o.node = nil
	return nil
}

// referenceDecodeFile decodes a file with yaml.v3 (or encoding/json), never decodeYAMLFast.
func referenceDecodeFile(rel string, data []byte) ([]object, error) {
	if strings.HasSuffix(rel, ".json") {
		return decodeJSON(rel, data, nil)
	}
	return decodeYAML(rel, data, nil)
}

// sameDecoding fails unless decodeYAMLFast, where it reads data at all, gives the objects
// yaml.v3 gives. It reports whether the fast reader read it.
func sameDecoding(t *testing.T, data []byte) bool {
	t.Helper()
	got, ok := decodeYAMLFast("in.yaml", data, nil)
	if !ok {
		return false
	}
	want, err := decodeYAML("in.yaml", data, nil)
	if err != nil {
		t.Fatalf("fast reader read what yaml.v3 refuses (%v):\n%s", err, data)
	}
	if len(got) != len(want) {
		t.Fatalf("fast reader gives %d objects, yaml.v3 %d:\n%s", len(got), len(want), data)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i].u.Object, want[i].u.Object) || got[i].line != want[i].line || got[i].substitute != want[i].substitute {
			t.Fatalf("object %d: fast reader gives\n%#v (line %d)\nyaml.v3\n%#v (line %d)\ninput:\n%s", i, got[i].u.Object, got[i].line, want[i].u.Object, want[i].line, data)
		}
	}
	return true
}

// diffVars are variables whose values stress the cases where pasting text into YAML changes
// its meaning: numbers, booleans, nulls, quotes, colons, comments, spaces, long values.
var diffVars = map[string]string{
	"cluster_name": "eu-1", "replicas": "3", "flag": "true", "nothing": "null", "empty": "",
	"octal": "0777", "float": "1.5e3", "version": "1.27", "date": "2024-01-02", "tilde": "~",
	"colon": "a: b", "hash": "a #b", "dq": `a"b`, "sq": "a'b", "bs": `a\nb`, "brace": "{x: 1}",
	"list": "[1, 2]", "dash": "- x", "lead": " x", "trail": "x ", "spaced": "a b  c",
	"merge": "<<", "star": "*x", "amp": "&x", "bang": "!x", "pct": "%x", "utf8": "café",
	"tab": "a\tb", "long": strings.Repeat("word ", 30), "key": "name", "url": "https://example.com/x",
	"doc": "---", "dollar": "$$", "ref": "${cluster_name}", "yes": "yes", "inf": ".inf",
}

// sameSubstitution decodes data as file rel twice, substitutes one copy with substituteAll and
// the other with the reference, and fails unless both give the same objects or the same error.
// It reports whether data decoded.
func sameSubstitution(t *testing.T, rel string, data []byte, vars map[string]string) (decoded bool) {
	t.Helper()
	got, err := decodeFile(rel, data, nil)
	if err != nil {
		return false // decoding is not what differs
	}
	want, _ := referenceDecodeFile(rel, data)
	ctx := context.Background()
	gotErr := substituteAll(ctx, got, vars, nil)
	wantErr := referenceSubstituteAll(ctx, want, vars)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("%s: error %v, reference %v\ninput:\n%s", rel, gotErr, wantErr, data)
	}
	if wantErr != nil {
		return true
	}
	for i := range want {
		if !reflect.DeepEqual(got[i].u.Object, want[i].u.Object) || got[i].line != want[i].line || got[i].file != want[i].file {
			t.Fatalf("%s: object %d is\n%#v\nreference gives\n%#v\ninput:\n%s", rel, i, got[i].u.Object, want[i].u.Object, data)
		}
	}
	return true
}

// diffCases are inputs written to reach each rule of substitute_values.go.
var diffCases = []string{
	"plain: ${cluster_name}\nnum: ${replicas}\nb: ${flag}\nn: ${nothing}\no: ${octal}\nf: ${float}\nv: ${version}\nd: ${date}\nt: ${tilde}\ni: ${inf}\ny: ${yes}",
	"c: ${colon}\nh: ${hash}\nq: ${dq}\ns: ${sq}\nbs: ${bs}\nbr: ${brace}\nl: ${list}\nda: ${dash}",
	"le: ${lead}\ntr: ${trail}\nsp: ${spaced}\nm: ${merge}\nst: ${star}\nam: ${amp}\nbg: ${bang}\npc: ${pct}",
	"u: ${utf8}\ntb: ${tab}\nlg: ${long}\nurl: ${url}\ndoc: ${doc}\ndl: ${dollar}\nrf: ${ref}",
	"dq: \"${colon}\"\nsq: '${hash}'\ndq2: \"x ${spaced} y\"\nsq2: 'a ${lead}'\ndqq: \"${dq}\"\nsqq: '${sq}'",
	"lit: |\n  line ${cluster_name}\n  ${lead}\n  ${empty}\n  end\nlit2: |-\n  ${trail}\nlit3: |+\n  ${replicas}\n\nfold: >\n  a ${cluster_name}\n  b\n",
	"flow: {a: \"${cluster_name}\", b: x${replicas}, c: ['${flag}', x-${colon}]}\nfl2: [$$y, a$$]",
	"flow: {a: ${cluster_name}}",
	"first: |\n  ${lead}\n  b\n",
	"chomp: |\n  a\n  ${empty}\n",
	"chomp2: |-\n  ${empty}\n  a",
	"${key}: 1\n${cluster_name}: ${replicas}\n\"${flag}\": x\n${merge}: y\n${colon}: z\n${nothing}: w\n${tilde}: q",
	"name: dup\n${key}: again",
	"a: &x ${cluster_name}\nb: *x\nc: !!str ${replicas}\nd: !custom ${replicas}\ne: !!int ${replicas}",
	"base: &b {k: ${cluster_name}}\nm:\n  <<: *b\n  j: ${replicas}",
	"long: " + strings.Repeat("word ", 14) + "${spaced} end\ndeep:\n  deeper:\n    deepest: \"" + strings.Repeat("w ", 30) + "${lead}\"",
	"un: ${missing}\n",
	"un: ${missing:=fallback} ${missing:-x}\nesc: $${x} $$ $x",
	"open: ${cluster_name\nclose: x}",
	"nest: ${missing:=${cluster_name}}",
	"multi: \"a\n  ${cluster_name}\"\nplainmulti: a\n  ${cluster_name}",
	"seq:\n- ${replicas}\n- - ${cluster_name}\n  - {k: ${flag}}\n- k: ${nothing}",
	"tab: a\t${cluster_name}\nend: ${cluster_name}\t",
	"empty: ${empty}\nemptyq: \"${empty}\"\nemptykey: {${empty}: x}",
	"num: -${replicas}\nnum2: +${replicas}\nnum3: .${replicas}\nnum4: 0x${replicas}\nnum5: 1_${replicas}",
	"weird: ${replicas}:\nweird2: x:${replicas}\nhash: x#${replicas}",
	// Forms the fast reader reads, or must leave to yaml.v3.
	"flowurl: [http://x, a:b]\nflow2: {u: http://x}",
	"seqlit:\n- |\n x\n- y\n- |-\n  z\n\n- - a\n  - b",
	"k1: a, b\nk2: {a: b c, d: 'e f'}\nk3: [a b, 'c''d']\nk4: [ ]\nk5: {}\nk6: []\nk7: [a, ]",
	"k1: 'it''s'\nk2: \"a\" # c\nk3: x\n# c\n  # c2\nk4: y\nk5:\n  # c\n  a: 1",
	"k: |\n  a\n\n\n  b\n\nj: 1\nl: |\n  x\n    y\n  z\n",
	"k: -1\nj: -.5\ni: +1\nh: .5\ng: 1_000\nf: 0o17\ne: 012\nd: 00\nc: -0\nb: 123456789012345678901",
	"k: yes\nj: on\ni: Off\nh: y\ng: ~\nf: Null\ne: TRUE\nd: .inf\nc: .NaN",
	"k: 1.0\nj: 1.\ni: 6.02e+23\nh: 1e3\ng: 2024-01-02T10:00:00Z\nf: 12:30",
	"k: a:\nj: b",
	"k:   spaced   \nj:    'q'   \nl: |  \n  x",
	"1: one\ntrue: t\n0x1: h\n.5: f\na.b/c-d_e: k",
	"k:\n  value on the next line",
	"k: [a, {b: c, d: [e, f]}, 'g']\nl: {a: [1, 2], b: {c: d}}",
}

// objectText makes an object of body (top-level fields) in the two forms decodeFile reads.
func objectText(body string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name:=cm}\n  labels: {l: \"${cluster_name}\"}\ndata:\n" + indent(body, "  ") + "\n"
}

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

// diffInputs are the fuzz seeds, the render testdata and diffCases, by name.
func diffInputs(t testing.TB) map[string][]byte {
	in := map[string][]byte{}
	for name, data := range fuzzSeeds() {
		in["seed/"+name] = data
	}
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(p) {
		case ".yaml", ".yml", ".json":
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			in[p] = data
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range diffCases {
		in[fmt.Sprintf("case-%d", i)] = []byte(objectText(c))
	}
	// Separators at the very end of a file, with and without a line break (the first once
	// made the fast reader slice past the end).
	for i, raw := range []string{"---", "---\n", "a: b\n---", "---\n---", "\n---\n\n"} {
		in[fmt.Sprintf("raw-%d", i)] = []byte(raw)
	}
	in["json"] = []byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "${name:=x}"}, "data": {"a": "${replicas}", "${key}": "${colon}", "b": "${dq}", "c": "x ${lead}", "n": 1, "l": ["${flag}", {"${cluster_name}": "${nothing}"}]}}`)
	return in
}

// TestSubstitutionMatchesReference holds substitution on decoded values to the YAML round
// trip over the fuzz seeds, the render testdata and cases written for each rule, read as YAML
// and as JSON, with and without the variables.
func TestSubstitutionMatchesReference(t *testing.T) {
	t.Parallel()
	varSets := map[string]map[string]string{"none": nil, "stress": diffVars, "cluster": {"cluster_name": "edge-1", "image_tag": "1.27.3", "cluster_region": "eu"}}
	decoded := 0
	for name, data := range diffInputs(t) {
		for vname, vars := range varSets {
			t.Run(name+"/"+vname, func(t *testing.T) {
				checked, err := checkVars(vars)
				if err != nil {
					t.Fatal(err)
				}
				if sameSubstitution(t, "apps/in.yaml", data, checked) && vname == "stress" {
					decoded++
				}
				sameSubstitution(t, "apps/in.json", data, checked)
			})
		}
	}
	// The cases are written to decode; only the few malformed ones (and the seeds of malformed
	// input) do not.
	if min := len(diffCases) + 10; decoded < min {
		t.Errorf("only %d inputs decoded as YAML, want at least %d: the cases test nothing", decoded, min)
	}
}

// TestSubstitutionOnValuesIsTaken checks that the common forms are substituted without the
// round trip, so that the differential tests above compare two paths, not one with itself.
func TestSubstitutionOnValuesIsTaken(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"cluster_name": "edge-1", "replicas": "3", "region": "eu west"}
	tests := []struct {
		name, body string
		want       map[string]any
	}{
		{"plain string", "v: ${cluster_name}", map[string]any{"v": "edge-1"}},
		{"plain number", "v: ${replicas}", map[string]any{"v": int64(3)}},
		{"inside text", "v: x-${cluster_name}-y", map[string]any{"v": "x-edge-1-y"}},
		{"quoted number stays a string", `v: "${replicas}"`, map[string]any{"v": "3"}},
		{"single-quoted with spaces", "v: 'in ${region}'", map[string]any{"v": "in eu west"}},
		{"literal block", "v: |\n  cluster=${cluster_name}\n  n=${replicas}\n", map[string]any{"v": "cluster=edge-1\nn=3\n"}},
		{"key", "${cluster_name}: x", map[string]any{"edge-1": "x"}},
		{"default and escape", "v: ${unset:=d}-$${kept}", map[string]any{"v": "d-${kept}"}},
		{"flow mapping", `v: {a: "${cluster_name}", b: [x]}`, map[string]any{"v": map[string]any{"a": "edge-1", "b": []any{"x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n" + indent(tt.body, "  ") + "\n"
			objs, err := decodeFile("in.yaml", []byte(text), nil)
			if err != nil {
				t.Fatal(err)
			}
			done, err := substituteDecoded(&objs[0], vars, nil)
			if !done || err != nil {
				t.Fatalf("substituteDecoded = %v, %v; want it done without the round trip", done, err)
			}
			if got := objs[0].u.Object["data"]; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("data = %#v, want %#v", got, tt.want)
			}
			sameSubstitution(t, "in.yaml", []byte(text), vars)
		})
	}
}

// FuzzSubstitutionMatchesReference holds substitution on decoded values to the YAML round trip
// for arbitrary manifests and an arbitrary value of variable "v" (diffVars give the others).
//
//	go test -run '^$' -fuzz FuzzSubstitutionMatchesReference ./internal/render
func FuzzSubstitutionMatchesReference(f *testing.F) {
	for _, data := range diffInputs(f) {
		f.Add(data, "x")
	}
	for _, v := range diffVars {
		f.Add([]byte(objectText("a: ${v}\nb: \"${v}\"\nc: |\n  ${v}\n${v}: k")), v)
	}
	f.Fuzz(func(t *testing.T, data []byte, v string) {
		vars := make(map[string]string, len(diffVars)+1)
		for k, val := range diffVars {
			vars[k] = val
		}
		vars["v"] = v
		vars, err := checkVars(vars)
		if err != nil {
			t.Fatal(err)
		}
		sameDecoding(t, data)
		sameSubstitution(t, "apps/in.yaml", data, vars)
		sameSubstitution(t, "apps/in.json", data, vars)
	})
}

// TestFastReaderMatchesYAML holds decodeYAMLFast to yaml.v3 over the same inputs, and checks
// that it reads the common forms (so that the comparison compares something).
func TestFastReaderMatchesYAML(t *testing.T) {
	t.Parallel()
	read := 0
	for name, data := range diffInputs(t) {
		t.Run(name, func(t *testing.T) {
			if sameDecoding(t, data) {
				read++
			}
		})
	}
	t.Logf("fast reader read %d inputs", read)
	if read < len(diffCases)/2 {
		t.Errorf("the fast reader read only %d inputs", read)
	}
	common := "# a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-0001\n  labels: {app.kubernetes.io/part-of: rel-00, tier: \"1\"}\n" +
		"data:\n  cluster: ${cluster_name}\n  revision: \"3\"\n  n: 42\n  settings: |\n    a=b\n\n    c=d # not a comment\n  empty:\n  list:\n  - a\n  - k: v\n    j: [1, x, 'y']\n---\n"
	if !sameDecoding(t, []byte(common)) {
		t.Errorf("the fast reader does not read the common forms:\n%s", common)
	}
}

// simulatorConfigMaps is a file of n ConfigMaps as the fleet simulator writes them (about 512
// bytes each, a ${cluster_name} and a literal block of settings).
func simulatorConfigMaps(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\n  labels: {app.kubernetes.io/part-of: rel-07}\ndata:\n  cluster: ${cluster_name}\n  revision: \"%d\"\n  settings: |\n", i, 2)
		for line := 0; line < 9; line++ {
			fmt.Fprintf(&b, "    service.%03d.endpoint=svc-%04x.rel-07:%d\n    service.%03d.timeout=%dms\n", line, i*31+line, 1024+i, line, 100+line)
		}
	}
	return []byte(b.String())
}

// BenchmarkDecodeAndSubstitute reads and substitutes one release file of 100 ConfigMaps as the
// fleet simulator writes them, with the reference (yaml.v3 and the YAML round trip) and with
// the current path, in the same run; it reports each per object and their ratio.
//
//	go test -run '^$' -bench DecodeAndSubstitute -benchmem ./internal/render
func BenchmarkDecodeAndSubstitute(b *testing.B) {
	data := simulatorConfigMaps(100)
	vars := ClusterVars("edge-1", map[string]string{"region": "eu-west"})
	ctx := context.Background()
	var ref, cur time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		objs, err := decodeYAML("r.yaml", data, nil)
		if err == nil {
			err = referenceSubstituteAll(ctx, objs, vars)
		}
		if err != nil || len(objs) != 100 {
			b.Fatal(err, len(objs))
		}
		ref += time.Since(start)
		start = time.Now()
		objs, err = decodeFile("r.yaml", data, nil)
		if err == nil {
			err = substituteAll(ctx, objs, vars, nil)
		}
		if err != nil || len(objs) != 100 {
			b.Fatal(err, len(objs))
		}
		cur += time.Since(start)
	}
	perObject := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N*100) }
	b.ReportMetric(perObject(ref), "ref-µs/object")
	b.ReportMetric(perObject(cur), "new-µs/object")
	b.ReportMetric(float64(cur)/float64(ref), "new/ref")
}
