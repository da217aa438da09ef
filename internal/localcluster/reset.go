package localcluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A cluster is reset by its storage, not through the API: without a controller manager a
// deleted namespace stays Terminating for ever, and finalizers, admission webhooks or an RBAC
// rule a test left behind could refuse an API delete. The API server sees etcd's deletes
// through its watch, as it would see another API server's.

// registryPrefix holds every object the API server stores.
const registryPrefix = "/registry/"

// systemNamespaces are created by the API server itself after it reports ready; the
// baseline is taken once they exist, so that it holds everything the API server makes.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// ownWrites are the keys under which the API server keeps writing by itself (leases, range
// allocations, the status of its API services and flow-control objects, its authentication
// configuration): a change there since the baseline is the API server's, not a test's.
var ownWrites = []string{
	"/registry/leases/",
	"/registry/masterleases/",
	"/registry/peerserverleases/",
	"/registry/ranges/",
	"/registry/events/",
	"/registry/flowschemas/",
	"/registry/prioritylevelconfigurations/",
	"/registry/apiregistration.k8s.io/apiservices/",
	"/registry/configmaps/kube-system/extension-apiserver-authentication",
}

// ErrChanged is returned by Reset when an object the cluster started with was changed: the
// cluster cannot be brought back to its start, and should be stopped rather than reused.
var ErrChanged = errors.New("an object the cluster started with was changed")

// baseline is what Reset brings the cluster back to.
type baseline struct {
	keys       map[string]int64 // etcd key → mod revision
	namespaces []string
	groups     []string
}

// MarkBaseline records the cluster's objects as they are now, once the API server has created
// its own, as the state Reset returns to. Call it on a fresh cluster, before any test uses it.
func (c *Cluster) MarkBaseline(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	for {
		keys, err := c.etcdKeys(ctx)
		if err != nil {
			return fmt.Errorf("cluster %q: baseline: %w", c.opts.Name, err)
		}
		ready := true
		for _, ns := range systemNamespaces {
			_, ok := keys[registryPrefix+"namespaces/"+ns]
			ready = ready && ok
		}
		if ready {
			namespaces, groups, err := c.apiView(ctx)
			if err != nil {
				return fmt.Errorf("cluster %q: baseline: %w", c.opts.Name, err)
			}
			c.mu.Lock()
			c.base = &baseline{keys: keys, namespaces: namespaces, groups: groups}
			c.mu.Unlock()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster %q: baseline: the API server did not create its namespaces %v: %w", c.opts.Name, systemNamespaces, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Reset deletes every object created since MarkBaseline, custom resource definitions and
// namespaces with what they hold, and returns once the API server serves no more of them. It
// returns ErrChanged, and deletes nothing, when an object of the baseline was changed.
func (c *Cluster) Reset(ctx context.Context) error {
	c.mu.Lock()
	base := c.base
	c.mu.Unlock()
	if base == nil {
		return fmt.Errorf("cluster %q: reset: no baseline marked", c.opts.Name)
	}
	keys, err := c.etcdKeys(ctx)
	if err != nil {
		return fmt.Errorf("cluster %q: reset: %w", c.opts.Name, err)
	}
	var created []string
	for k, rev := range keys {
		was, ok := base.keys[k]
		switch {
		case !ok:
			created = append(created, k)
		case rev != was && !ownWrite(k):
			return fmt.Errorf("cluster %q: reset: %s: %w", c.opts.Name, k, ErrChanged)
		}
	}
	for k := range base.keys {
		if _, ok := keys[k]; !ok && !ownWrite(k) {
			return fmt.Errorf("cluster %q: reset: %s was deleted: %w", c.opts.Name, k, ErrChanged)
		}
	}
	for _, k := range created {
		if err := c.etcdCall(ctx, "/v3/kv/deleterange", map[string]string{"key": b64(k)}, nil); err != nil {
			return fmt.Errorf("cluster %q: reset: delete %s: %w", c.opts.Name, k, err)
		}
	}
	// The API server learns of the deletes through its watch of etcd: wait until what it
	// serves is the baseline again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		namespaces, groups, err := c.apiView(ctx)
		if err == nil && slices.Equal(namespaces, base.namespaces) && slices.Equal(groups, base.groups) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster %q: reset: the API server still serves namespaces %v and groups %v, want %v and %v (error %v)",
				c.opts.Name, namespaces, groups, base.namespaces, base.groups, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster %q: reset: %w", c.opts.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func ownWrite(key string) bool {
	for _, p := range ownWrites {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// apiView is what the API server serves: its namespaces and API groups, sorted.
func (c *Cluster) apiView(ctx context.Context) (namespaces, groups []string, err error) {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, nil, err
	}
	nsList, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list namespaces: %w", err)
	}
	for _, ns := range nsList.Items {
		namespaces = append(namespaces, ns.Name)
	}
	gl, err := cs.Discovery().ServerGroups()
	if err != nil {
		return nil, nil, fmt.Errorf("list API groups: %w", err)
	}
	for _, g := range gl.Groups {
		groups = append(groups, g.Name)
	}
	slices.Sort(namespaces)
	slices.Sort(groups)
	return namespaces, groups, nil
}

// etcdKeys lists the keys under registryPrefix with their mod revisions, through etcd's JSON
// gateway (no etcd client library in this module).
func (c *Cluster) etcdKeys(ctx context.Context) (map[string]int64, error) {
	var out struct {
		Kvs []struct {
			Key         string `json:"key"`
			ModRevision string `json:"mod_revision"`
		} `json:"kvs"`
	}
	end := registryPrefix[:len(registryPrefix)-1] + string(rune(registryPrefix[len(registryPrefix)-1]+1))
	if err := c.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": b64(registryPrefix), "range_end": b64(end), "keys_only": true}, &out); err != nil {
		return nil, err
	}
	keys := make(map[string]int64, len(out.Kvs))
	for _, kv := range out.Kvs {
		k, err := base64.StdEncoding.DecodeString(kv.Key)
		if err != nil {
			return nil, fmt.Errorf("etcd key %q: %w", kv.Key, err)
		}
		rev, err := strconv.ParseInt(kv.ModRevision, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("etcd key %s: mod revision %q: %w", k, kv.ModRevision, err)
		}
		keys[string(k)] = rev
	}
	return keys, nil
}

func (c *Cluster) etcdCall(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d%s", c.ports[0], path)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
