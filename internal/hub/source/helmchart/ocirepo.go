package helmchart

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/flotilla/flotilla/internal/hub/source"
)

// The media types `helm push` writes (helm.sh/helm/v3/pkg/registry).
const (
	helmConfigMediaType      = "application/vnd.cncf.helm.config.v1+json"
	helmChartMediaType       = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	helmLegacyChartMediaType = "application/tar+gzip"
)

// maxTags bounds the tags of one chart repository considered as versions.
const maxTags = 10000

// ociRepository is a registry path holding charts as OCI artifacts, <path>/<chart>:<version>.
type ociRepository struct {
	j    *fetchJob
	path string // registry[:port]/path, no scheme
	opts []remote.Option
	nopt []name.Option
}

func (j *fetchJob) newOCIRepository(u *url.URL, g *guard, creds source.Credentials) (*ociRepository, error) {
	auth := authn.Anonymous
	switch {
	case creds.Token != "":
		auth = authn.FromConfig(authn.AuthConfig{RegistryToken: creds.Token})
	case creds.Username != "":
		auth = authn.FromConfig(authn.AuthConfig{Username: creds.Username, Password: creds.Password})
	}
	r := &ociRepository{
		j:    j,
		path: strings.TrimSuffix(u.Host+u.Path, "/"),
		opts: []remote.Option{
			remote.WithTransport(g),
			remote.WithAuth(auth),
			remote.WithRetryBackoff(remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 2}),
			remote.WithUserAgent("flotilla-hub"),
		},
	}
	if j.insecure {
		r.nopt = append(r.nopt, name.Insecure)
	}
	return r, nil
}

func (r *ociRepository) repo(chart string) (name.Repository, error) {
	repo, err := name.NewRepository(r.path+"/"+chart, append([]name.Option{name.StrictValidation}, r.nopt...)...)
	if err != nil {
		return name.Repository{}, r.j.errorf("oci://%s/%s is not a registry repository: %v", r.path, chart, err)
	}
	return repo, nil
}

func (r *ociRepository) resolve(ctx context.Context, chart, constraint string) (chartRef, error) {
	repo, err := r.repo(chart)
	if err != nil {
		return chartRef{}, err
	}
	opts := append([]remote.Option{remote.WithContext(ctx)}, r.opts...)
	tags, err := remote.List(repo, opts...)
	if err != nil {
		return chartRef{}, r.j.errorf("list the tags of oci://%s: %v", repo, err)
	}
	if len(tags) > maxTags {
		return chartRef{}, r.j.errorf("oci://%s has %d tags, more than the %d considered", repo, len(tags), maxTags)
	}
	var cands []candidate
	for _, t := range tags {
		// Helm writes semver's "+" as "_", which tags may not hold.
		if v, err := semver.StrictNewVersion(strings.ReplaceAll(t, "_", "+")); err == nil {
			cands = append(cands, candidate{spelled: t, v: v})
		}
	}
	pick, err := pickVersion(cands, constraint)
	if err != nil {
		return chartRef{}, r.j.errorf("oci://%s: %v", repo, err)
	}
	version := pick.v.Original()
	tag := repo.Tag(pick.spelled)
	desc, err := remote.Get(tag, opts...)
	if err != nil {
		return chartRef{}, r.j.errorf("manifest of oci://%s: %v", tag, err)
	}
	if desc.MediaType != types.OCIManifestSchema1 && desc.MediaType != types.DockerManifestSchema2 {
		return chartRef{}, r.j.errorf("oci://%s is a %s, not a chart's manifest", tag, desc.MediaType)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return chartRef{}, r.j.errorf("manifest of oci://%s: %v", tag, err)
	}
	if m.Config.MediaType != helmConfigMediaType {
		return chartRef{}, r.j.errorf("oci://%s is not a Helm chart: its config is %s, not %s", tag, m.Config.MediaType, helmConfigMediaType)
	}
	var layer *v1.Descriptor
	for i, l := range m.Layers {
		if l.MediaType == helmChartMediaType || l.MediaType == helmLegacyChartMediaType {
			if layer != nil {
				return chartRef{}, r.j.errorf("oci://%s has more than one chart layer", tag)
			}
			layer = &m.Layers[i]
		}
	}
	if layer == nil {
		return chartRef{}, r.j.errorf("oci://%s has no layer of media type %s", tag, helmChartMediaType)
	}
	if layer.Digest.Algorithm != "sha256" {
		return chartRef{}, r.j.errorf("chart layer of oci://%s: digest algorithm %s, want sha256", tag, layer.Digest.Algorithm)
	}
	if layer.Size > r.j.f.opts.MaxChartBytes {
		return chartRef{}, r.j.errorf("chart layer of oci://%s is %d bytes, larger than the limit of %d bytes", tag, layer.Size, r.j.f.opts.MaxChartBytes)
	}
	return chartRef{name: chart, version: version, digest: layer.Digest.Hex, location: repo.Digest(layer.Digest.String()).String(), size: layer.Size}, nil
}

func (r *ociRepository) download(ctx context.Context, ref chartRef) ([]byte, error) {
	d, err := name.NewDigest(ref.location, r.nopt...)
	if err != nil {
		return nil, r.j.errorf("chart layer %s: %v", ref.location, err)
	}
	layer, err := remote.Layer(d, append([]remote.Option{remote.WithContext(ctx)}, r.opts...)...)
	if err != nil {
		return nil, r.j.errorf("chart layer oci://%s: %v", ref.location, err)
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, r.j.errorf("download chart layer oci://%s: %v", ref.location, err)
	}
	defer rc.Close()
	data, err := readBounded(rc, r.j.f.opts.MaxChartBytes)
	if err != nil {
		return nil, r.j.errorf("download chart layer oci://%s: %v", ref.location, err)
	}
	if got := sha256Hex(data); got != ref.digest {
		return nil, r.j.errorf("chart layer oci://%s has digest sha256:%s: refused", ref.location, got)
	}
	return data, nil
}
