package hubclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/flotilla/flotilla/internal/phase"
)

// Rollouts returns the rollout of every release the token may see (GET /api/v1/rollouts).
func (c *Client) Rollouts(ctx context.Context) ([]phase.RolloutView, error) {
	var out []phase.RolloutView
	err := c.do(ctx, http.MethodGet, "/api/v1/rollouts", nil, &out)
	return out, err
}

// Rollout returns one release's rollout (GET /api/v1/rollouts/{release}).
func (c *Client) Rollout(ctx context.Context, release string) (phase.RolloutView, error) {
	var out phase.RolloutView
	err := c.do(ctx, http.MethodGet, "/api/v1/rollouts/"+url.PathEscape(release), nil, &out)
	return out, err
}

// ActOnRollout takes a user's action on a release's rollout (pause, resume, approve, abort,
// rollback: POST /api/v1/rollouts/{release}/{action}) and returns the rollout as it stands
// after it.
func (c *Client) ActOnRollout(ctx context.Context, release, action string, a RolloutAction) (phase.RolloutView, error) {
	var out phase.RolloutView
	err := c.do(ctx, http.MethodPost, "/api/v1/rollouts/"+url.PathEscape(release)+"/"+url.PathEscape(action), a, &out)
	if err == nil && out.Release == "" {
		// The action's answer need not carry the view: read it.
		return c.Rollout(ctx, release)
	}
	return out, err
}

// RolloutAction is the body of POST /api/v1/rollouts/{release}/{action} (pause, resume,
// approve, abort, rollback): Wave names the wave to approve ("" the one waiting).
type RolloutAction struct {
	Wave string `json:"wave,omitempty"`
}
