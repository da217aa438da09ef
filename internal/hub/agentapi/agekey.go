package agentapi

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/hub/agekeys"
	"github.com/flotilla/flotilla/internal/secrets"
	"github.com/flotilla/flotilla/internal/textcut"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// AgeKeys records the age recipient each agent sends (agekeys.Tracker).
type AgeKeys interface {
	// Observe records cluster's recipient if it changed.
	Observe(ctx context.Context, cluster, recipient string) error
	// ObserveProjects records cluster's per-project recipients if they changed.
	ObserveProjects(ctx context.Context, cluster string, projects map[string]string) error
	// Forget drops what is remembered of a removed cluster.
	Forget(cluster string)
}

// checkAgeRecipient refuses a recipient that is not an age X25519 recipient ("" is an
// agent from before age keys).
func checkAgeRecipient(recipient string) error {
	if recipient == "" {
		return nil
	}
	if err := secrets.CheckRecipient(recipient); err != nil {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("age_recipient: %w", err))
	}
	return nil
}

// observeAgeKey records the recipient an agent sent. A store failure is logged, not
// returned: the next heartbeat tries again, and the agent's other work goes on.
func (s *Server) observeAgeKey(ctx context.Context, cluster, recipient string) error {
	if err := checkAgeRecipient(recipient); err != nil {
		return err
	}
	if s.d.AgeKeys == nil || recipient == "" {
		return nil
	}
	if err := s.d.AgeKeys.Observe(ctx, cluster, recipient); err != nil {
		s.d.Logger.Warn("cluster age recipient not recorded; the next heartbeat tries again", "cluster", cluster, "error", err)
	}
	return nil
}

// observeProjectKeys records the per-project recipients an agent sent; like observeAgeKey,
// a store failure is logged and the next heartbeat tries again.
func (s *Server) observeProjectKeys(ctx context.Context, cluster string, rs []*agentv1.ProjectAgeRecipient) error {
	if len(rs) == 0 {
		return nil
	}
	if len(rs) > agekeys.MaxProjects {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("project_age_recipients: %d, at most %d", len(rs), agekeys.MaxProjects))
	}
	projects := make(map[string]string, len(rs))
	for _, r := range rs {
		if _, dup := projects[r.GetProject()]; dup {
			return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("project_age_recipients: project %q twice", textcut.Cut(r.GetProject(), 64)))
		}
		projects[r.GetProject()] = r.GetRecipient()
	}
	if err := agekeys.CheckProjects(projects); err != nil {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("project_age_recipients: %w", err))
	}
	if s.d.AgeKeys == nil {
		return nil
	}
	if err := s.d.AgeKeys.ObserveProjects(ctx, cluster, projects); err != nil {
		s.d.Logger.Warn("project age recipients not recorded; the next heartbeat tries again", "cluster", cluster, "error", err)
	}
	return nil
}
