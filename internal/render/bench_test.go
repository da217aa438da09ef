package render_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/render"
)

// BenchmarkRenderPlain renders a plain directory of 1,000 small ConfigMaps (50 multi-document
// files in 5 directories) with a cluster's variables, as the agent does on every reconcile.
//
//	go test -run '^$' -bench RenderPlain -benchmem ./internal/render
func BenchmarkRenderPlain(b *testing.B) {
	root := writeConfigMaps(b, 1000, 20)
	opts := render.Options{
		Root: root,
		Vars: render.ClusterVars("edge-1", map[string]string{"region": "eu-west", "tier": "gold"}),
	}
	b.ReportAllocs()
	for b.Loop() {
		objs, err := render.Render(b.Context(), opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(objs) != 1000 {
			b.Fatalf("rendered %d objects, want 1000", len(objs))
		}
	}
}

// writeConfigMaps writes n ConfigMaps, perFile documents to a file, under a temporary directory.
func writeConfigMaps(b *testing.B, n, perFile int) string {
	b.Helper()
	root := b.TempDir()
	var doc strings.Builder
	for i := range n {
		fmt.Fprintf(&doc, `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings-%d
  namespace: team-%d
  labels:
    app.kubernetes.io/name: settings
    app.kubernetes.io/part-of: platform
data:
  LOG_LEVEL: info
  FEATURE_FLAGS: "a,b,c"
  TIMEOUT: "30s"
`, i, i%10)
		if (i+1)%perFile == 0 || i == n-1 {
			file := filepath.Join(root, fmt.Sprintf("team-%d", (i/perFile)%5), fmt.Sprintf("settings-%03d.yaml", i/perFile))
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(doc.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			doc.Reset()
		}
	}
	return root
}
