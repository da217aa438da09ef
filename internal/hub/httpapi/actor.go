package httpapi

import (
	"context"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// Actor is who the audit trail names for ctx's request: "token:NAME" or "oidc:SUBJECT", or
// "hub" for the hub's own calls (no principal).
func Actor(ctx context.Context) string {
	if p, ok := access.FromContext(ctx); ok {
		return p.Actor
	}
	return "hub"
}

// WithRole names ctx's actor in e and adds the role its principal acted with to e's detail,
// as every route's audit records do.
func WithRole(ctx context.Context, e audit.Event) audit.Event {
	p, _ := access.FromContext(ctx)
	e.Actor = Actor(ctx)
	detail := make(map[string]any, len(e.Detail)+1)
	for k, v := range e.Detail {
		detail[k] = v
	}
	detail["role"] = p.Role()
	e.Detail = detail
	return e
}

type scopeKey struct{}

// WithScope returns ctx carrying s, the scope of the fleet its principal sees. A Server puts
// the authenticated principal's there; the hub's own callers (notifications, the shared
// dashboard document) pass access.Everything().
func WithScope(ctx context.Context, s access.Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// ScopeOf is the scope ctx carries; none: the zero scope, which sees nothing.
func ScopeOf(ctx context.Context) access.Scope {
	s, _ := ctx.Value(scopeKey{}).(access.Scope)
	return s
}

// VisibleCluster reports whether ctx's scope holds cluster c.
func VisibleCluster(ctx context.Context, c store.Cluster) bool { return ScopeOf(ctx).Cluster(c.Labels) }

// VisibleProjects keeps, of byProject, the entries of the projects ctx's scope holds: which
// other teams deliver to a cluster is theirs to know.
func VisibleProjects[V any](ctx context.Context, byProject map[string]V) map[string]V {
	s := ScopeOf(ctx)
	var out map[string]V
	for p, v := range byProject {
		if s.Project(p) {
			if out == nil {
				out = make(map[string]V, len(byProject))
			}
			out[p] = v
		}
	}
	return out
}
