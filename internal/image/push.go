package image

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push uploads img to ref with the credentials of the Docker or Podman config (docker login,
// podman login) and returns the digest it is stored under. transport may be nil (Go's
// default, which trusts the system roots and SSL_CERT_FILE).
func Push(ctx context.Context, img v1.Image, ref name.Reference, transport http.RoundTripper) (name.Digest, error) {
	if transport == nil {
		transport = remote.DefaultTransport
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithTransport(transport)); err != nil {
		return name.Digest{}, fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return name.Digest{}, fmt.Errorf("push %s: %w", ref, err)
	}
	dig, err := name.NewDigest(ref.Context().Name() + "@" + d.String())
	if err != nil {
		return name.Digest{}, fmt.Errorf("push %s: %w", ref, err)
	}
	return dig, nil
}
