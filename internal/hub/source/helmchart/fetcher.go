package helmchart

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/source"
)

// Options configure a Fetcher. The zero value of each limit is its default.
type Options struct {
	// Policy resolves named credentials and the hosts they may be sent to. Nil: sources may
	// name no credentials.
	Policy *source.Policy
	// TLS is the client TLS configuration for repositories and registries (RootCAs for a
	// private CA). Nil: the system's roots. Verification is never turned off.
	TLS *tls.Config
	// Transport, when set, carries every request instead of one built from TLS (tests wrap
	// one to see what is requested).
	Transport http.RoundTripper
	// RequestTimeout bounds each HTTP request, body included. Default 1m.
	RequestTimeout time.Duration
	// MaxIndexBytes bounds a repository's index.yaml. Default 16 MiB.
	MaxIndexBytes int64
	// MaxChartBytes bounds one chart archive as downloaded. Default 10 MiB.
	MaxChartBytes int64
	// MaxUnpackedBytes bounds what the chart and its dependencies unpack to, together
	// (archives inside charts/ counted unpacked). Default 20 MiB.
	MaxUnpackedBytes int64
	// MaxFiles bounds the files and directories of the chart and its dependencies together.
	// Default 5000.
	MaxFiles int
	// MaxDependencies bounds the dependencies fetched for one chart, at every depth. Default 32.
	MaxDependencies int
	// MaxDepth bounds how deep dependencies of dependencies are fetched. Default 4.
	MaxDepth int
}

func (o *Options) setDefaults() {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = time.Minute
	}
	if o.MaxIndexBytes <= 0 {
		o.MaxIndexBytes = 16 << 20
	}
	if o.MaxChartBytes <= 0 {
		o.MaxChartBytes = 10 << 20
	}
	if o.MaxUnpackedBytes <= 0 {
		o.MaxUnpackedBytes = 20 << 20
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = 5000
	}
	if o.MaxDependencies <= 0 {
		o.MaxDependencies = 32
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = 4
	}
}

// Fetcher fetches Helm chart sources. It is safe for concurrent use.
type Fetcher struct {
	opts Options
	base http.RoundTripper

	mu      sync.Mutex
	indexes map[string]*cachedIndex // by index URL and credentials name
}

// New returns a Fetcher.
func New(opts Options) *Fetcher {
	opts.setDefaults()
	var tlsConf *tls.Config
	if opts.TLS != nil {
		tlsConf = opts.TLS.Clone()
	} else {
		tlsConf = &tls.Config{}
	}
	tlsConf.InsecureSkipVerify = false
	if tlsConf.MinVersion == 0 {
		tlsConf.MinVersion = tls.VersionTLS12
	}
	base := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsConf,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   4,
		ForceAttemptHTTP2:     true,
	}
	f := &Fetcher{opts: opts, base: base, indexes: map[string]*cachedIndex{}}
	if opts.Transport != nil {
		f.base = opts.Transport
	}
	return f
}

var _ source.Fetcher = (*Fetcher)(nil)

// Fetch resolves the chart s names and, unless its revision equals prev, writes the chart
// directory (with its dependencies in charts/) into dst.
func (f *Fetcher) Fetch(ctx context.Context, s v1alpha1.Source, prev string, dst string) (source.Fetched, error) {
	h := s.Spec.Helm
	if h == nil {
		return source.Fetched{}, fmt.Errorf("source '%s': not a Helm source (spec.helm is not set)", s.Metadata.Name)
	}
	job := &fetchJob{
		f: f, source: s.Metadata.Name, chart: h.Chart, version: h.Version, repository: h.Repository,
		credentials: h.Credentials, insecure: h.Insecure, dependencyHosts: h.DependencyHosts,
		budget: &budget{bytes: f.opts.MaxUnpackedBytes, files: f.opts.MaxFiles, deps: f.opts.MaxDependencies},
	}
	res := source.Fetched{URL: source.Redact(h.Repository) + " chart " + h.Chart}
	if h.Chart == "" || strings.ContainsAny(h.Chart, "/\\") || h.Chart == "." || h.Chart == ".." {
		return res, job.errorf("chart %q: want a chart name", h.Chart)
	}
	repo, err := job.openRepository(ctx, h.Repository, h.Credentials, true)
	if err != nil {
		return res, err
	}
	ch, err := repo.resolve(ctx, h.Chart, h.Version)
	if err != nil {
		return res, err
	}
	job.resolved = ch.version
	if ch.digest != "" && revision(ch.version, ch.digest) == prev {
		res.Revision, res.Unchanged = prev, true
		return res, nil
	}
	data, err := repo.download(ctx, ch)
	if err != nil {
		return res, err
	}
	res.Revision = revision(ch.version, sha256Hex(data))
	if res.Revision == prev {
		res.Unchanged = true
		return res, nil
	}
	if err := job.install(ctx, data, ch, dst, 0); err != nil {
		// Leave dst empty, as a failed fetch promises nothing about it.
		cleanDir(dst)
		return res, err
	}
	return res, nil
}

// revision is what Fetched.Revision says for a chart version and archive digest (hex).
func revision(version, hexDigest string) string { return version + "@sha256:" + hexDigest }

// fetchJob is one Fetch: the source it is for (errors name it) and the budget its chart and
// dependencies share.
type fetchJob struct {
	f                       *Fetcher
	source, chart, version  string
	repository, credentials string
	insecure                bool
	resolved                string // the version picked, once known
	budget                  *budget
	// parent is the job of the chart that depends on this one (nil for the source's chart).
	parent *fetchJob
	// dependencyHosts are the hosts beside the source repository's own that dependencies
	// may be fetched from (Source.spec.helm.dependencyHosts), at every depth.
	dependencyHosts []string
}

// errorf says what failed, naming the source, repository, chart and version (the range, or the
// version picked once there is one), and for a dependency the chart that depends on it.
func (j *fetchJob) errorf(format string, args ...any) error {
	return fmt.Errorf("source '%s': %s: "+format, append([]any{j.source, j.where()}, args...)...)
}

func (j *fetchJob) where() string {
	v := j.resolved
	if v == "" {
		v = j.version
		if v == "" {
			v = "newest"
		}
	}
	if j.parent == nil {
		return fmt.Sprintf("helm repository %s chart %s version %s", source.Redact(j.repository), j.chart, v)
	}
	return fmt.Sprintf("%s: dependency %s version %s (repository %s)", j.parent.where(), j.chart, v, source.Redact(j.repository))
}

// budget is what the chart and its dependencies may still take, together.
type budget struct {
	bytes int64
	files int
	deps  int
}

func cleanDir(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		os.RemoveAll(dir + string(os.PathSeparator) + e.Name())
	}
}

// parseRepository parses a repository URL: https, http or oci.
func parseRepository(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("repository: %w", errors.Unwrap(err))
	}
	switch u.Scheme {
	case "https", "http", "oci":
	default:
		return nil, fmt.Errorf("repository scheme %q: want https://, http:// (with insecure) or oci://", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("repository names no host")
	}
	return u, nil
}
