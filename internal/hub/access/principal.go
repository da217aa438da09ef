package access

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// Role is what a grant allows; the roles are ordered, each allowing what the one before does.
type Role string

// The roles, least first.
const (
	Viewer   Role = "viewer"
	Deployer Role = "deployer"
	Admin    Role = "admin"
)

// Roles are the roles, least first.
var Roles = []Role{Viewer, Deployer, Admin}

func (r Role) rank() int { return slices.Index(Roles, r) }

// AtLeast reports whether r allows what min allows.
func (r Role) AtLeast(min Role) bool { return r.rank() >= 0 && r.rank() >= min.rank() }

// ParseRole returns the role named s, or an error naming the roles.
func ParseRole(s string) (Role, error) {
	if r := Role(s); r.rank() >= 0 {
		return r, nil
	}
	return "", fmt.Errorf("role %q: want viewer, deployer or admin", s)
}

// Grant is a role in some projects, or in every project when Projects is empty. An admin
// grant covers every project, whatever Projects says.
type Grant struct {
	Role     Role     `json:"role"`
	Projects []string `json:"projects,omitempty"`
}

// AllProjects reports whether g covers every project.
func (g Grant) AllProjects() bool { return g.Role == Admin || len(g.Projects) == 0 }

// Covers reports whether g covers project ("" is the platform project).
func (g Grant) Covers(project string) bool {
	return g.AllProjects() || slices.Contains(g.Projects, v1alpha1.ProjectOrPlatform(project))
}

func (g Grant) String() string {
	if g.AllProjects() {
		return string(g.Role)
	}
	return string(g.Role) + ":" + strings.Join(g.Projects, ",")
}

// Principal is who makes a request: its Actor, as the audit trail names it ("token:ci",
// "oidc:SUBJECT"), and its grants.
type Principal struct {
	Actor  string
	Grants []Grant
}

// Can reports whether p may act with role in project.
func (p Principal) Can(role Role, project string) bool {
	for _, g := range p.Grants {
		if g.Role.AtLeast(role) && g.Covers(project) {
			return true
		}
	}
	return false
}

// CanEverywhere reports whether one of p's grants allows role in every project.
func (p Principal) CanEverywhere(role Role) bool {
	for _, g := range p.Grants {
		if g.Role.AtLeast(role) && g.AllProjects() {
			return true
		}
	}
	return false
}

// Role is the role the audit trail records for p: its grants, "admin" or "viewer:team-a" or
// "deployer:team-a;viewer" for several.
func (p Principal) Role() string {
	parts := make([]string, len(p.Grants))
	for i, g := range p.Grants {
		parts[i] = g.String()
	}
	return strings.Join(parts, ";")
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal ctx carries, and whether it carries one.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
