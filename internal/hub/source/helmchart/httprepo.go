package helmchart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/Masterminds/semver/v3"
)

// httpRepository is a chart repository: an index.yaml and chart archives over http(s).
type httpRepository struct {
	j        *fetchJob
	base     *url.URL // ends with "/"
	credName string
	client   *http.Client
}

// cachedIndex is the last index.yaml downloaded from one URL with one credential, with the ETag
// that revalidates it.
type cachedIndex struct {
	etag  string
	index *repo.IndexFile
}

// maxCachedIndexes bounds the indexes a Fetcher keeps between polls.
const maxCachedIndexes = 64

func (r *httpRepository) index(ctx context.Context) (*repo.IndexFile, error) {
	f := r.j.f
	u := r.base.ResolveReference(&url.URL{Path: "index.yaml"})
	key := u.String() + "\x00" + r.credName
	f.mu.Lock()
	cached := f.indexes[key]
	f.mu.Unlock()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, r.j.errorf("index %s: %v", u, err)
	}
	if cached != nil {
		req.Header.Set("If-None-Match", cached.etag)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, r.j.errorf("download index %s: %v", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && cached != nil {
		return cached.index, nil
	}
	if err := checkStatus(resp, r.credName); err != nil {
		return nil, r.j.errorf("download index %s: %v", u, err)
	}
	data, err := readBounded(resp.Body, f.opts.MaxIndexBytes)
	if err != nil {
		return nil, r.j.errorf("download index %s: %v", u, err)
	}
	idx := &repo.IndexFile{}
	if err := yaml.Unmarshal(data, idx); err != nil {
		return nil, r.j.errorf("index %s: %v", u, err)
	}
	if idx.APIVersion == "" {
		return nil, r.j.errorf("index %s has no apiVersion: not a chart repository's index.yaml", u)
	}
	if etag := resp.Header.Get("ETag"); etag != "" {
		f.mu.Lock()
		if len(f.indexes) >= maxCachedIndexes {
			for k := range f.indexes {
				delete(f.indexes, k)
				break
			}
		}
		f.indexes[key] = &cachedIndex{etag: etag, index: idx}
		f.mu.Unlock()
	}
	return idx, nil
}

func (r *httpRepository) resolve(ctx context.Context, chart, constraint string) (chartRef, error) {
	idx, err := r.index(ctx)
	if err != nil {
		return chartRef{}, err
	}
	entries := idx.Entries[chart]
	if len(entries) == 0 {
		return chartRef{}, r.j.errorf("the repository's index has no chart %s", chart)
	}
	var cands []candidate
	for _, e := range entries {
		if e == nil || e.Metadata == nil {
			continue
		}
		if v, err := semver.NewVersion(e.Version); err == nil {
			cands = append(cands, candidate{spelled: e.Version, v: v})
		}
	}
	pick, err := pickVersion(cands, constraint)
	if err != nil {
		return chartRef{}, r.j.errorf("%v", err)
	}
	for _, e := range entries {
		if e == nil || e.Metadata == nil || e.Version != pick.spelled {
			continue
		}
		if len(e.URLs) == 0 {
			return chartRef{}, r.j.errorf("the index names no archive for %s %s", chart, e.Version)
		}
		loc, err := r.base.Parse(e.URLs[0])
		if err != nil {
			return chartRef{}, r.j.errorf("archive URL of %s %s: %v", chart, e.Version, errors.Unwrap(err))
		}
		switch {
		case loc.Scheme == "http" && !r.j.insecure:
			return chartRef{}, r.j.errorf("the index names a plain-HTTP archive for %s %s (%s): set insecure: true on the source to accept it", chart, e.Version, loc.Redacted())
		case loc.Scheme != "http" && loc.Scheme != "https":
			return chartRef{}, r.j.errorf("archive URL of %s %s: scheme %q: want https", chart, e.Version, loc.Scheme)
		case loc.User != nil:
			return chartRef{}, r.j.errorf("archive URL of %s %s holds credentials: refused", chart, e.Version)
		}
		ref := chartRef{name: chart, version: e.Version, location: loc.String()}
		if e.Digest != "" {
			if ref.digest, err = checkHexDigest(e.Digest); err != nil {
				return chartRef{}, r.j.errorf("index entry of %s %s: %v", chart, e.Version, err)
			}
		}
		return ref, nil
	}
	return chartRef{}, r.j.errorf("chart %s %s vanished from the index", chart, pick.spelled)
}

func (r *httpRepository) download(ctx context.Context, ref chartRef) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref.location, nil)
	if err != nil {
		return nil, r.j.errorf("download %s: %v", ref.location, err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, r.j.errorf("download %s: %v", ref.location, err)
	}
	defer resp.Body.Close()
	if err := checkStatus(resp, r.credName); err != nil {
		return nil, r.j.errorf("download %s: %v", ref.location, err)
	}
	data, err := readBounded(resp.Body, r.j.f.opts.MaxChartBytes)
	if err != nil {
		return nil, r.j.errorf("download %s: chart archive: %v", ref.location, err)
	}
	if got := sha256Hex(data); ref.digest != "" && got != ref.digest {
		return nil, r.j.errorf("chart archive %s has digest sha256:%s, the index says sha256:%s: refused", ref.location, got, ref.digest)
	}
	return data, nil
}

// checkStatus turns a response that is not 200 into an error.
func checkStatus(resp *http.Response, credName string) error {
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && credName == "":
		return fmt.Errorf("%s (the source names no credentials)", resp.Status)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s (with credentials '%s')", resp.Status, credName)
	}
	return errors.New(resp.Status)
}

// readBounded reads r to its end, refusing more than limit bytes.
func readBounded(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, fmt.Errorf("larger than the limit of %d bytes", limit)
		}
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than the limit of %d bytes", limit)
	}
	return data, nil
}
