package opsapi

import (
	"fmt"
	"strings"
	"sync"

	"github.com/flotilla/flotilla/internal/hub/access"
)

// planSlots bounds the plans computed at once, and gives each caller one of them at a time:
// with two slots, a team whose CI plans in a loop (under several tokens, even) holds one, and
// the other stays free for everyone else.
type planSlots struct {
	max     int
	mu      sync.Mutex
	running map[string]bool // by planCaller
}

func newPlanSlots(max int) *planSlots { return &planSlots{max: max, running: map[string]bool{}} }

// take takes a slot for caller, or says why there is none; release gives it back.
func (s *planSlots) take(caller string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.running[caller]:
		return nil, fmt.Errorf("plan: a plan for %s is being computed; one at a time, so that other teams' plans are not kept waiting: try again when it is done", caller)
	case len(s.running) >= s.max:
		return nil, fmt.Errorf("plan: %d plans are being computed; try again shortly", s.max)
	}
	s.running[caller] = true
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.running, caller)
	}, nil
}

// planCaller is whom a plan's slot is counted against: the projects of a principal scoped to
// some (however many tokens of theirs call, as callerOf reads them), or the principal itself
// when it covers them all.
func planCaller(p access.Principal) string {
	c := callerOf(p)
	if c.All || len(c.Projects) == 0 {
		return p.Actor
	}
	return "project " + strings.Join(c.Projects, ", ")
}
