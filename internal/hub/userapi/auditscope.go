package userapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
)

// auditVisible returns whether ctx's scope sees a record of cluster and release: one of a
// release must be of a release in the scope (and of a cluster in it, if it names one); one
// of a cluster alone, of a cluster in the scope; one of neither (fleet revisions, token
// events) only for the whole fleet. Clusters are those registered now: the records of a
// removed cluster are the whole fleet's.
func (api *API) auditVisible(ctx context.Context) (func(cluster, release string) bool, error) {
	scope := httpapi.ScopeOf(ctx)
	if scope.All() {
		return func(string, string) bool { return true }, nil
	}
	clusters, err := api.d.Store.ListClusters(ctx)
	if err != nil {
		return nil, err
	}
	visible := make(map[string]bool, len(clusters))
	for _, c := range clusters {
		visible[c.Name] = scope.Cluster(c.Labels)
	}
	return func(cluster, release string) bool {
		switch {
		case release != "":
			return scope.Release(release) && (cluster == "" || visible[cluster])
		case cluster != "":
			return visible[cluster]
		}
		return false
	}, nil
}

// filterRecords keeps the records visible says are.
func filterRecords(recs []audit.Record, visible func(cluster, release string) bool) []audit.Record {
	out := recs[:0]
	for _, r := range recs {
		if visible(r.Cluster, r.Release) {
			out = append(out, r)
		}
	}
	return out
}

// jsonlFilter passes on the JSON Lines records visible says are, whole lines at a time.
type jsonlFilter struct {
	w       io.Writer
	visible func(cluster, release string) bool
	buf     []byte
}

func (f *jsonlFilter) Write(p []byte) (int, error) {
	f.buf = append(f.buf, p...)
	for {
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := f.buf[:i+1]
		var rec struct {
			Cluster string `json:"cluster"`
			Release string `json:"release"`
		}
		if json.Unmarshal(line, &rec) == nil && f.visible(rec.Cluster, rec.Release) {
			if _, err := f.w.Write(line); err != nil {
				return 0, err
			}
		}
		f.buf = f.buf[i+1:]
	}
}
