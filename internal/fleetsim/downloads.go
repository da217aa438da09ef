package fleetsim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// DownloadsReport says which artifacts each cluster downloaded (counted at the agents' end)
// and which its desired state named, so that a reader can check that no cluster received
// what none of its releases uses (Options.RecordDownloads).
type DownloadsReport struct {
	// Dir keeps one copy of every artifact downloaded, as the hub sent it: Dir/<hex>.
	Dir      string             `json:"dir"`
	Clusters []ClusterDownloads `json:"clusters"`
}

// ClusterDownloads is one cluster's artifacts: Downloaded by its agent over the run, and
// Desired, named by its assignments when each wave converged (the hub's status API).
type ClusterDownloads struct {
	Cluster    string   `json:"cluster"`
	Downloaded []string `json:"downloaded"`
	Desired    []string `json:"desired"`
}

// downloadLog records artifact downloads per cluster at the agents' end.
type downloadLog struct {
	dir        string
	mu         sync.Mutex
	downloaded map[string]map[string]bool // cluster -> digest
	desired    map[string]map[string]bool
	kept       map[string]bool // digests with a copy in dir
}

func newDownloadLog(dir string) (*downloadLog, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &downloadLog{dir: dir, downloaded: map[string]map[string]bool{}, desired: map[string]map[string]bool{}, kept: map[string]bool{}}, nil
}

func add(m map[string]map[string]bool, cluster, digest string) {
	if m[cluster] == nil {
		m[cluster] = map[string]bool{}
	}
	m[cluster][digest] = true
}

// wrap records the artifacts cluster's agent downloads through rt, and keeps the first copy
// of each.
func (l *downloadLog) wrap(cluster string, rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		hex, ok := strings.CutPrefix(r.URL.Path, "/artifacts/sha256/")
		if err != nil || !ok || resp.StatusCode != http.StatusOK {
			return resp, err
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		add(l.downloaded, cluster, "sha256:"+hex)
		if !l.kept[hex] {
			l.kept[hex] = true
			resp.Body = &keepBody{ReadCloser: resp.Body, file: filepath.Join(l.dir, hex), log: l, hex: hex}
		}
		return resp, nil
	})
}

// keepBody copies a download into file once it was read to its end.
type keepBody struct {
	io.ReadCloser
	buf  bytes.Buffer
	file string
	log  *downloadLog
	hex  string
	done bool
}

func (b *keepBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf.Write(p[:n])
	if err == io.EOF && !b.done {
		b.done = true
		tmp := b.file + ".tmp"
		if werr := os.WriteFile(tmp, b.buf.Bytes(), 0o644); werr == nil {
			_ = os.Rename(tmp, b.file)
		}
	}
	return n, err
}

func (b *keepBody) Close() error {
	if !b.done {
		// Cut short: the next download of this artifact keeps it.
		b.log.mu.Lock()
		delete(b.log.kept, b.hex)
		b.log.mu.Unlock()
	}
	return b.ReadCloser.Close()
}

// recordDesired notes the artifacts every assignment names now.
func (l *downloadLog) recordDesired(ctx context.Context, api *hubclient.Client) error {
	st, err := api.Status(ctx)
	if err != nil {
		return fmt.Errorf("record desired artifacts: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range st.Assignments {
		if a.DesiredDigest != "" {
			add(l.desired, a.Cluster, a.DesiredDigest)
		}
	}
	return nil
}

func (l *downloadLog) report(clusters []string) *DownloadsReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := func(m map[string]bool) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	rep := &DownloadsReport{Dir: l.dir}
	for _, c := range clusters {
		rep.Clusters = append(rep.Clusters, ClusterDownloads{Cluster: c, Downloaded: keys(l.downloaded[c]), Desired: keys(l.desired[c])})
	}
	return rep
}
