package agentapi

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/secrets"
)

// AgeKeys records the age recipient each agent sends (agekeys.Tracker).
type AgeKeys interface {
	// Observe records cluster's recipient if it changed.
	Observe(ctx context.Context, cluster, recipient string) error
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
