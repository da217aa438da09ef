package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
)

// isChartDir reports whether dir is a Helm chart: it holds Chart.yaml.
func isChartDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "Chart.yaml"))
	return err == nil && st.Mode().IsRegular()
}

// renderChart renders the chart in dir (rel inside root).
func renderChart(ctx context.Context, root, rel, dir string, opts Options, vars map[string]string) ([]object, error) {
	return nil, &Error{File: rel, Err: errors.New("helm charts are not rendered yet")}
}
