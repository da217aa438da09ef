// Package agentapitest holds what tests of the agent endpoint share as an agent would see it,
// without linking the hub, so that tests inside internal/hub and beside it can both use it.
package agentapitest

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// WaitAssignment watches the agent's desired state until it has an assignment with an
// artifact, for at most a minute.
func WaitAssignment(tb testing.TB, c agentv1connect.AgentServiceClient) *agentv1.Assignment {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), time.Minute)
	defer cancel()
	stream, err := c.Watch(ctx, connect.NewRequest(&agentv1.WatchRequest{}))
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = stream.Close() }() // the stream's own error is checked
	for stream.Receive() {
		for _, as := range stream.Msg().GetDesired().GetAssignments() {
			if as.GetDigest() != "" {
				return as
			}
		}
	}
	tb.Fatalf("no assignment with an artifact: %v", stream.Err())
	return nil
}
