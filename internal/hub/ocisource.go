package hub

import (
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/source/ociartifact"
)

// newOCIFetcher loads the operator's verification keys (a bad file fails the start, not the
// first poll) and returns the fetcher of OCI artifact sources.
func newOCIFetcher(opts Options, policy *source.Policy) (*ociartifact.Fetcher, error) {
	keys, err := ociartifact.LoadKeys(opts.VerifyKeys)
	if err != nil {
		return nil, err
	}
	return ociartifact.New(ociartifact.Options{Policy: policy, Keys: keys, Logger: opts.Logger})
}
