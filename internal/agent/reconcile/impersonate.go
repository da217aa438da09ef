package reconcile

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceAccount names the ServiceAccount a project's objects are applied, pruned and read as.
type ServiceAccount struct {
	Namespace string
	Name      string
}

// User is the user name the API server knows the ServiceAccount by, and RBAC judges:
// "system:serviceaccount:NAMESPACE:NAME".
func (sa ServiceAccount) User() string {
	return "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
}

// String is "NAMESPACE/NAME".
func (sa ServiceAccount) String() string { return sa.Namespace + "/" + sa.Name }

// impersonation holds one client per ServiceAccount, each sending the Impersonate-User header
// on every request. They share the agent's RESTMapper (discovery is the agent's business, not
// the ServiceAccount's) and, through client-go's transport cache, its TLS connections.
type impersonation struct {
	base   *rest.Config
	mapper meta.RESTMapper

	mu      sync.Mutex
	clients map[ServiceAccount]client.Client
}

func newImpersonation(base *rest.Config, mapper meta.RESTMapper) *impersonation {
	return &impersonation{base: base, mapper: mapper, clients: map[ServiceAccount]client.Client{}}
}

// client returns the client that acts as sa, made on first use.
func (im *impersonation) client(sa ServiceAccount) (client.Client, error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if c, ok := im.clients[sa]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(im.base)
	// No groups: the API server gives an impersonated ServiceAccount its groups
	// (system:serviceaccounts, system:serviceaccounts:NAMESPACE) itself, and the agent then
	// needs the right to impersonate the ServiceAccount only.
	cfg.Impersonate = rest.ImpersonationConfig{UserName: sa.User()}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for ServiceAccount %s: %w", sa, err)
	}
	c, err := client.New(cfg, client.Options{HTTPClient: httpClient, Mapper: im.mapper})
	if err != nil {
		return nil, fmt.Errorf("client for ServiceAccount %s: %w", sa, err)
	}
	im.clients[sa] = c
	return c, nil
}

// as returns a Reconciler that applies, prunes and reads objects as sa, and reads and writes
// inventories as the agent; nil sa returns r itself.
func (r *Reconciler) as(sa *ServiceAccount) (*Reconciler, error) {
	if sa == nil {
		return r, nil
	}
	c, err := r.accounts.client(*sa)
	if err != nil {
		return nil, err
	}
	cp := *r
	cp.client = c
	return &cp, nil
}
