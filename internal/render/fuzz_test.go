package render

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/flotilla/flotilla/internal/fuzzseed"
)

// fuzzSeeds are the committed seed corpus of FuzzDecodeManifests, by file name.
func fuzzSeeds() map[string][]byte {
	return map[string][]byte{
		"multi-document": []byte("# comment only\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: apps\ndata:\n  enabled: yes\n  started: 2024-01-02\n---\n---\napiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  ports: [{port: 80}]\n"),
		"json-object":    []byte(`{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps", "labels": {"tier": "1", "cluster": "${cluster_name}"}}, "spec": {"n": 1.5e3}}` + "\n"),
		"list":           []byte("apiVersion: v1\nkind: List\nitems:\n  - &sa {apiVersion: v1, kind: ServiceAccount, metadata: {name: web}}\n  - {<<: *sa, metadata: {name: db, annotations: {config.kubernetes.io/local-config: \"true\"}}}\n  - apiVersion: v1\n    kind: ServiceAccount\n    metadata:\n      name: ${name:=api}\n"),
		"malformed":      []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n name: broken\n  - [\n"),
		"variables":      []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ${name:=web}\n  namespace: ${cluster_name}\nspec:\n  replicas: ${replicas:=2}\n  template: {spec: {containers: [{name: web, image: \"nginx:${tag:-1.27}\", command: [sh, -c, \"echo $$HOME $${x}\"]}]}}\n"),
		"empty":          {},
	}
}

// TestFuzzSeedCorpus checks that the committed seed corpus is what fuzzSeeds builds
// (-write-fuzz-seeds rewrites it).
func TestFuzzSeedCorpus(t *testing.T) {
	t.Parallel()
	fuzzseed.Check(t, "FuzzDecodeManifests", fuzzSeeds())
}

// FuzzDecodeManifests reads arbitrary bytes as a manifest file of a plain directory, as a
// .yaml and as a .json file, then substitutes variables, as Render does for each file it reads.
// No input may panic; each read either gives objects that have apiVersion, kind and
// metadata.name and that the agent can copy and serialise, or an *Error naming the file.
//
// It calls the per-file decoder rather than Render: writing a file and walking a directory for
// every input would cost most of each execution and add nothing the render tests do not cover.
func FuzzDecodeManifests(f *testing.F) {
	vars := map[string]string{"cluster_name": "eu-1", "replicas": "3"}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, rel := range []string{"apps/in.yaml", "apps/in.json"} {
			objs, err := decodeFile(rel, data, nil)
			if err == nil {
				err = substituteAll(ctx, objs, vars, nil)
			}
			if err != nil {
				var re *Error
				if !errors.As(err, &re) {
					t.Fatalf("%s: error is %T, not *Error: %v", rel, err, err)
				}
				if re.File != rel {
					t.Fatalf("%s: error names file %q: %v", rel, re.File, err)
				}
				continue
			}
			for i, o := range objs {
				u := o.u
				if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
					t.Fatalf("%s: object %d lacks apiVersion, kind or metadata.name: %v", rel, i, u.Object)
				}
				if o.file != rel {
					t.Fatalf("%s: object %d says it came from %q", rel, i, o.file)
				}
				// Values of a type unstructured does not know make DeepCopy panic, and NaN or
				// infinities cannot be sent to the API server.
				u.DeepCopy()
				if _, err := json.Marshal(u.Object); err != nil {
					t.Fatalf("%s: object %d does not serialise: %v", rel, i, err)
				}
			}
		}
	})
}
