package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// quietControllerRuntime silences controller-runtime's complaint that its process-wide logger
// was never set: this package logs through slog and never uses that logger.
var quietControllerRuntime sync.Once

// Reconciler reconciles assignments into one cluster. It is safe for concurrent use by
// different assignments.
type Reconciler struct {
	// client reads and writes the assignment's objects: the agent's own identity, or in a
	// copy made by asServiceAccount, the project's ServiceAccount.
	client client.Client
	// agent reads and writes inventories, always with the agent's own identity, so that no
	// project's ServiceAccount needs (or gets) a right in the inventory namespace.
	agent    client.Client
	accounts *impersonation
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
	newTimer func(time.Duration) <-chan time.Time
}

// New returns a Reconciler for the cluster that restCfg points at. It sets no client-side rate
// limit (Config.Concurrency bounds the requests in flight instead).
func New(restCfg *rest.Config, cfg Config, log *slog.Logger) (*Reconciler, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	quietControllerRuntime.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	rc := counted(restCfg)
	rc.QPS = -1 // no client-side token bucket
	httpClient, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", restCfg.Host, err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(rc, httpClient)
	if err != nil {
		return nil, fmt.Errorf("discovery client for %s: %w", restCfg.Host, err)
	}
	c, err := client.New(rc, client.Options{HTTPClient: httpClient, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", restCfg.Host, err)
	}
	return &Reconciler{
		client:   c,
		agent:    c,
		accounts: newImpersonation(rc, mapper),
		cfg:      cfg.withDefaults(),
		log:      log,
		now:      time.Now,
		newTimer: time.After,
	}, nil
}

// Reconcile makes the cluster match objects for the assignment opts.Name; see the package
// documentation for the steps. The objects are not modified. The returned Result is never nil;
// on failure it says what was done before the failure, and the error is also in Result.Error.
func (r *Reconciler) Reconcile(ctx context.Context, objects []*unstructured.Unstructured, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	start := r.now()
	counter := &requestCounter{}
	res := &Result{Name: opts.Name, DryRun: opts.DryRun}
	err := r.reconcile(withCounter(ctx, counter), objects, opts, res)
	res.Duration = r.now().Sub(start)
	res.Seconds = res.Duration.Seconds()
	res.Requests = counter.snapshot()
	if err != nil {
		err = fmt.Errorf("assignment %q%s: %w", opts.Name, actingAs(opts.Project), err)
		res.Error = err.Error()
	}
	return res, err
}
