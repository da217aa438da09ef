package hubapi

import (
	"context"
	"net/http"
	"net/url"
)

// AgeKeysView answers GET /api/v1/agekeys?selector=...: whom `flotilla secret encrypt`
// encrypts for.
type AgeKeysView struct {
	// Clusters are the selected clusters whose agent has sent its age recipient, by name.
	Clusters []ClusterAgeKey `json:"clusters"`
	// Missing are the selected clusters whose agent has not (not joined yet, or older).
	Missing []string `json:"missing"`
	// RecoveryRecipients are the hub's --recovery-recipient keys: every Secret is encrypted
	// to them too, so that it can be re-encrypted when clusters change.
	RecoveryRecipients []string `json:"recoveryRecipients"`
}

// ClusterAgeKey is one cluster's age recipient.
type ClusterAgeKey struct {
	Name         string `json:"name"`
	AgeRecipient string `json:"ageRecipient"`
}

// AgeKeys returns the age recipients of the clusters matching any of the label selectors
// ("env=prod,region in (eu)"), and the hub's recovery recipients.
func (c *Client) AgeKeys(ctx context.Context, selectors []string) (AgeKeysView, error) {
	q := url.Values{"selector": selectors}
	var out AgeKeysView
	err := c.do(ctx, http.MethodGet, "/api/v1/agekeys?"+q.Encode(), nil, &out)
	return out, err
}
