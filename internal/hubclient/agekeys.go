package hubclient

import (
	"context"
	"net/http"
	"net/url"
)

// AgeKeysView answers GET /api/v1/agekeys?selector=...[&project=P]: whom `flotilla secret
// encrypt --project P` encrypts for.
type AgeKeysView struct {
	// Project is the project whose keys Clusters holds: "platform" (the clusters' own keys,
	// the default) or a project's.
	Project string `json:"project"`
	// Clusters are the selected clusters whose agent has sent its age recipient, by name.
	Clusters []ClusterAgeKey `json:"clusters"`
	// Missing are the selected clusters whose agent has not sent Project's recipient (not
	// joined yet, older, or, for a project, no release of it assigned there yet).
	Missing []string `json:"missing"`
	// RecoveryRecipients are the hub's --recovery-recipient keys: every Secret is encrypted
	// to them too, so that it can be re-encrypted when clusters change.
	RecoveryRecipients []string `json:"recoveryRecipients"`
}

// ClusterAgeKey is one cluster's age recipient.
type ClusterAgeKey struct {
	Name         string `json:"name"`
	AgeRecipient string `json:"ageRecipient"`
	// Projects are the recipients of the cluster's keys for the projects other than the
	// platform that deliver to it, by project.
	Projects map[string]string `json:"projects,omitempty"`
}

// AgeKeys returns the age recipients of the clusters matching any of the label selectors
// ("env=prod,region in (eu)") for project ("" or "platform": the clusters' own keys), and
// the hub's recovery recipients.
func (c *Client) AgeKeys(ctx context.Context, selectors []string, project string) (AgeKeysView, error) {
	q := url.Values{"selector": selectors}
	if project != "" {
		q.Set("project", project)
	}
	var out AgeKeysView
	err := c.do(ctx, http.MethodGet, "/api/v1/agekeys?"+q.Encode(), nil, &out)
	return out, err
}
