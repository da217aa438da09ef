package render_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/render"
)

// connCounter is a local server that counts the connections it accepts. Every remote
// reference in the tests below points at it, so any attempt to fetch one is seen, whether
// kustomize uses HTTP, TLS or git.
type connCounter struct {
	ln       net.Listener
	mu       sync.Mutex
	accepted int
	barriers int // connections made by connections itself
	changed  chan struct{}
}

func newConnCounter(t *testing.T) *connCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &connCounter{ln: ln, changed: make(chan struct{}, 1)}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.accepted++
			c.mu.Unlock()
			select {
			case c.changed <- struct{}{}:
			default:
			}
			// Answer as a web server would, with a patch, so that a fetch would succeed.
			go func() {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
				buf := make([]byte, 4096)
				_, _ = conn.Read(buf)
				body := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base}\ndata: {fetched: \"yes\"}\n"
				_, _ = io.WriteString(conn, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return c
}

func (c *connCounter) addr() string { return c.ln.Addr().String() }

// connections returns how many connections anything but itself has made so far. It makes one
// itself and waits until it is accepted: the listener accepts in order, so every earlier
// connection has been counted by then. Any connection at all is a failure, so the tests check
// that this stays zero.
func (c *connCounter) connections(t *testing.T) int {
	t.Helper()
	c.mu.Lock()
	before := c.accepted
	c.mu.Unlock()
	conn, err := net.Dial("tcp", c.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	deadline := time.After(5 * time.Second)
	for {
		c.mu.Lock()
		n := c.accepted
		c.mu.Unlock()
		if n > before {
			c.mu.Lock()
			c.barriers++
			n -= c.barriers
			c.mu.Unlock()
			return n
		}
		select {
		case <-c.changed:
		case <-deadline:
			t.Fatal("the barrier connection was not accepted")
		}
	}
}

// sealCase is a kustomization that names a remote reference in one field.
type sealCase struct {
	name string
	// files of the artifact; REF is replaced by the reference.
	files map[string]string
	// file and field the error names.
	file, field string
	// wantChecked overrides the message expected with the checks on (Helm is refused whole).
	wantChecked string
}

const baseResource = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base}\ndata: {a: b}\n"

// pluginConfigs are the built-in generators and transformers that name files, each with REF in
// that field, and whether kustomize lists it under generators (else transformers).
var pluginConfigs = []struct {
	name, doc, field string
	generator        bool
	wantChecked      string
}{
	{name: "ConfigMapGenerator files", generator: true, field: "ConfigMapGenerator/cm: files[0]",
		doc: "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: cm}\nfiles: [REF]\n"},
	{name: "ConfigMapGenerator envs", generator: true, field: "ConfigMapGenerator/cm: envs[0]",
		doc: "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: cm}\nenvs: [REF]\n"},
	{name: "SecretGenerator files", generator: true, field: "SecretGenerator/s: files[0]",
		doc: "apiVersion: builtin\nkind: SecretGenerator\nmetadata: {name: s}\nfiles: [REF]\n"},
	{name: "SecretGenerator envs", generator: true, field: "SecretGenerator/s: envs[0]",
		doc: "apiVersion: builtin\nkind: SecretGenerator\nmetadata: {name: s}\nenvs: [REF]\n"},
	{name: "PatchTransformer path", field: "PatchTransformer/p: path",
		doc: "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: REF\n"},
	{name: "PatchJson6902Transformer path", field: "PatchJson6902Transformer/j: path",
		doc: "apiVersion: builtin\nkind: PatchJson6902Transformer\nmetadata: {name: j}\ntarget: {version: v1, kind: ConfigMap, name: base}\npath: REF\n"},
	{name: "PatchStrategicMergeTransformer paths", field: "PatchStrategicMergeTransformer/s: paths[0]",
		doc: "apiVersion: builtin\nkind: PatchStrategicMergeTransformer\nmetadata: {name: s}\npaths: [REF]\n"},
	{name: "ReplacementTransformer replacements path", field: "ReplacementTransformer/r: replacements[0].path",
		doc: "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata: {name: r}\nreplacements: [{path: REF}]\n"},
	{name: "ValueAddTransformer targetFilePath", field: "ValueAddTransformer/v: targetFilePath",
		doc: "apiVersion: builtin\nkind: ValueAddTransformer\nmetadata: {name: v}\nvalue: x\ntargetFilePath: REF\n"},
	{name: "ValueAddTransformer value", field: "ValueAddTransformer/v: value",
		doc: "apiVersion: builtin\nkind: ValueAddTransformer\nmetadata: {name: v}\nvalue: REF\ntargets: [{selector: {kind: ConfigMap}, fieldPath: data/a}]\n"},
	{name: "HelmChartInflationGenerator repo", generator: true, field: "HelmChartInflationGenerator/h: repo",
		doc:         "apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata: {name: h}\nname: chart\nrepo: REF\n",
		wantChecked: "HelmChartInflationGenerator refused: helm charts are not allowed"},
}

// kustomizationFields are the kustomization's own fields that name files or bases.
var kustomizationFields = []struct{ name, kust, field string }{
	{"resources", "resources: [base.yaml, REF]\n", "resources[1]"},
	{"bases", "resources: [base.yaml]\nbases: [REF]\n", "bases[0]"},
	{"components", "resources: [base.yaml]\ncomponents: [REF]\n", "components[0]"},
	{"patches path", "resources: [base.yaml]\npatches: [{path: REF}]\n", "patches[0].path"},
	{"patchesJson6902 path", "resources: [base.yaml]\npatchesJson6902: [{target: {version: v1, kind: ConfigMap, name: base}, path: REF}]\n", "patchesJson6902[0].path"},
	{"patchesStrategicMerge", "resources: [base.yaml]\npatchesStrategicMerge: [REF]\n", "patchesStrategicMerge[0]"},
	{"replacements path", "resources: [base.yaml]\nreplacements: [{path: REF}]\n", "replacements[0].path"},
	{"configMapGenerator files", "configMapGenerator: [{name: cm, files: [REF]}]\n", "configMapGenerator[0].files[0]"},
	{"configMapGenerator envs", "configMapGenerator: [{name: cm, envs: [REF]}]\n", "configMapGenerator[0].envs[0]"},
	{"secretGenerator files", "secretGenerator: [{name: s, files: [REF]}]\n", "secretGenerator[0].files[0]"},
	{"secretGenerator envs", "secretGenerator: [{name: s, envs: [REF]}]\n", "secretGenerator[0].envs[0]"},
	{"crds", "resources: [base.yaml]\ncrds: [REF]\n", "crds[0]"},
	{"configurations", "resources: [base.yaml]\nconfigurations: [REF]\n", "configurations[0]"},
	{"openapi path", "resources: [base.yaml]\nopenapi: {path: REF}\n", "openapi.path"},
	{"generators entry", "generators: [REF]\n", "generators[0]"},
	{"transformers entry", "resources: [base.yaml]\ntransformers: [REF]\n", "transformers[0]"},
}

func sealCases() []sealCase {
	var cases []sealCase
	for _, k := range kustomizationFields {
		cases = append(cases, sealCase{
			name:  "kustomization " + k.name,
			files: map[string]string{"kustomization.yaml": k.kust, "base.yaml": baseResource},
			file:  "kustomization.yaml", field: k.field,
		})
	}
	for _, p := range pluginConfigs {
		list := "transformers"
		if p.generator {
			list = "generators"
		}
		inlineWant := ""
		if p.wantChecked != "" {
			inlineWant = list + "[0]: " + p.wantChecked
		}
		inline := "resources: [base.yaml]\n" + list + ":\n- |\n" + indent(p.doc, "  ")
		cases = append(cases,
			sealCase{
				name:  p.name + " inline",
				files: map[string]string{"kustomization.yaml": inline, "base.yaml": baseResource},
				file:  "kustomization.yaml", field: list + "[0]: " + p.field, wantChecked: inlineWant,
			},
			sealCase{
				name: p.name + " in a file",
				files: map[string]string{
					"kustomization.yaml": "resources: [base.yaml]\n" + list + ": [plugin.yaml]\n",
					"plugin.yaml":        p.doc, "base.yaml": baseResource,
				},
				file: "plugin.yaml", field: p.field, wantChecked: p.wantChecked,
			})
	}
	return cases
}

func indent(s, by string) string {
	return by + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+by) + "\n"
}

// TestRenderSealed renders a kustomization that names a remote reference in each field of the
// kustomization and of every built-in generator and transformer that takes a file, inline and in
// a file, with http://, https://, git:: and file:// references. Each must be refused with an
// error naming the file, the field and the reference, and no connection may be made.
//
// It runs each case twice: as Render does, and with the checks that run before kustomize
// switched off, which leaves only the sealed file system kustomize reads through: that is what
// still holds when a future kustomize learns a field the checks do not know.
func TestRenderSealed(t *testing.T) {
	t.Parallel()
	srv := newConnCounter(t)
	refs := []string{
		"http://" + srv.addr() + "/p.yaml",
		"https://" + srv.addr() + "/p.yaml",
		"git::http://" + srv.addr() + "/repo.git",
		"file:///etc/passwd",
	}
	modes := []struct {
		name   string
		render func(context.Context, render.Options) ([]*unstructured.Unstructured, error)
	}{
		{"checked", render.Render},
		{"sealed only", render.RenderUnchecked},
	}
	for _, tc := range sealCases() {
		for _, ref := range refs {
			for _, mode := range modes {
				scheme, _, _ := strings.Cut(ref, ":")
				t.Run(tc.name+"/"+scheme+"/"+mode.name, func(t *testing.T) {
					files := map[string]string{}
					for name, content := range tc.files {
						files[name] = strings.ReplaceAll(content, "REF", ref)
					}
					root := writeTree(t, files)
					_, err := mode.render(context.Background(), render.Options{Root: root})
					if n := srv.connections(t); n != 0 {
						t.Fatalf("%d connection(s) made to %s", n, srv.addr())
					}
					if err == nil {
						t.Fatal("rendered; want the reference refused")
					}
					want := fmt.Sprintf("render %s: %s: remote reference %q refused: rendering reads only the artifact", tc.file, tc.field, ref)
					wantIs := render.ErrRemoteNotAllowed
					if tc.wantChecked != "" && mode.name == "checked" {
						want = fmt.Sprintf("render %s: ", tc.file) + tc.wantChecked
						wantIs = render.ErrHelmNotAllowed
					}
					if err.Error() != want {
						t.Errorf("error:\n got %s\nwant %s", err, want)
					}
					if !errors.Is(err, wantIs) {
						t.Errorf("error %v is not %v", err, wantIs)
					}
				})
			}
		}
	}
}

// TestRenderSealedConfigDirectory checks that a kustomization directory listed as transformer
// configs is refused: kustomize would build the configs, and a replacement in it can assemble a
// URL that no file holds, so nothing could check them first.
func TestRenderSealedConfigDirectory(t *testing.T) {
	t.Parallel()
	srv := newConnCounter(t)
	addr := srv.addr()
	files := map[string]string{
		"kustomization.yaml": "resources: [base.yaml]\ntransformers: [configs]\n",
		"base.yaml":          baseResource,
		// The PatchTransformer's path is assembled from "http:" and "//127.0.0.1:PORT/p.yaml".
		"configs/kustomization.yaml": "resources: [patch.yaml, parts.yaml]\n" +
			"replacements:\n- source: {kind: ConfigMap, name: parts, fieldPath: data.scheme}\n" +
			"  targets: [{select: {kind: PatchTransformer}, fieldPaths: [path], options: {delimiter: /, index: 0}}]\n",
		"configs/patch.yaml": "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: x//" + addr + "/p.yaml\n",
		"configs/parts.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: parts}\ndata: {scheme: \"http:\"}\n",
	}
	for _, mode := range []struct {
		name   string
		render func(context.Context, render.Options) ([]*unstructured.Unstructured, error)
	}{
		{"checked", render.Render},
		{"sealed only", render.RenderUnchecked},
	} {
		t.Run(mode.name, func(t *testing.T) {
			_, err := mode.render(context.Background(), render.Options{Root: writeTree(t, files)})
			if n := srv.connections(t); n != 0 {
				t.Fatalf("%d connection(s) made", n)
			}
			want := `render kustomization.yaml: transformers[0]: "configs" is a directory: plugin configs must be inline or in files, not built by a kustomization`
			if err == nil || err.Error() != want {
				t.Errorf("error:\n got %v\nwant %s", err, want)
			}
			if !errors.Is(err, render.ErrConfigNotCheckable) {
				t.Errorf("error %v is not ErrConfigNotCheckable", err)
			}
		})
	}
}

// TestRenderSealedAllowsData checks that the seal does not refuse URLs that are data:
// annotations, labels, configMapGenerator literals and inline patches.
func TestRenderSealedAllowsData(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"kustomization.yaml": "resources: [base.yaml]\n" +
			"commonAnnotations: {docs: \"https://wiki.example.com/x\"}\n" +
			"configMapGenerator: [{name: cm, literals: [\"URL=https://api.example.com\", \"url=http://x\"]}]\n" +
			"patches:\n- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: base, annotations: {link: \"http://example.com\"}}\n" +
			"transformers:\n- |\n  apiVersion: builtin\n  kind: AnnotationsTransformer\n  metadata: {name: a}\n  annotations: {source: \"https://git.example.com/x\"}\n  fieldSpecs: [{path: metadata/annotations, create: true}]\n",
		"base.yaml": baseResource,
	}
	for _, f := range []func(context.Context, render.Options) ([]*unstructured.Unstructured, error){render.Render, render.RenderUnchecked} {
		objs, err := f(context.Background(), render.Options{Root: writeTree(t, files)})
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 2 {
			t.Errorf("got %d objects, want 2", len(objs))
		}
	}
}

// TestRenderRefusesAbsolutePaths checks that absolute paths in a plugin config are refused
// before kustomize runs (kustomize would find nothing there in its in-memory copy anyway).
func TestRenderRefusesAbsolutePaths(t *testing.T) {
	t.Parallel()
	for _, p := range pluginConfigs {
		if p.wantChecked != "" || strings.HasSuffix(p.name, "value") {
			continue
		}
		files := map[string]string{
			"kustomization.yaml": "resources: [base.yaml]\ntransformers: [plugin.yaml]\n",
			"plugin.yaml":        strings.ReplaceAll(p.doc, "REF", "/etc/passwd"),
			"base.yaml":          baseResource,
		}
		_, err := render.Render(context.Background(), render.Options{Root: writeTree(t, files)})
		want := fmt.Sprintf(`render plugin.yaml: %s: "/etc/passwd" is an absolute path that points outside the artifact root`, p.field)
		if err == nil || err.Error() != want || !errors.Is(err, render.ErrOutsideRoot) {
			t.Errorf("%s: error:\n got %v\nwant %s", p.name, err, want)
		}
	}
}
