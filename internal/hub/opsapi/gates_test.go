package opsapi_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/window"
	"github.com/flotilla/flotilla/internal/window/hold"
)

// gatesOf waits until cluster's stored document satisfies ok and returns its gates.
func gatesOf(t *testing.T, f *hubtest.Fleet, cluster, what string, ok func([]window.Gate) bool) []window.Gate {
	t.Helper()
	var gates []window.Gate
	eventually.Within(t, 30*time.Second, func() error {
		ds, err := f.Store.GetDesiredState(t.Context(), cluster)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := desired.DecodeDocument(ds.Document)
		if err != nil {
			t.Fatal(err)
		}
		if !ok(doc.Gates) {
			return fmt.Errorf("%s: %s's gates are still %+v", what, cluster, doc.Gates)
		}
		gates = doc.Gates
		return nil
	})
	return gates
}

func hasGate(name string) func([]window.Gate) bool {
	return func(gs []window.Gate) bool {
		return slices.ContainsFunc(gs, func(g window.Gate) bool { return g.Name == name })
	}
}

func not(f func([]window.Gate) bool) func([]window.Gate) bool {
	return func(gs []window.Gate) bool { return !f(gs) }
}

func client(t *testing.T, f *hubtest.Fleet, token string) *hubclient.Client {
	t.Helper()
	c, err := hubclient.NewClient(hubclient.Config{Hub: f.APIURL, Token: token, CAFile: f.CAPath})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// raw sends body as it is and returns the status and the error message.
func raw(t *testing.T, f *hubtest.Fleet, method, path, body string) (int, string) {
	t.Helper()
	pem, err := os.ReadFile(f.CAPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequestWithContext(t.Context(), method, f.APIURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.AdminToken)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func auditActions(t *testing.T, c *hubclient.Client, action string) []hubclient.AuditRecord {
	t.Helper()
	recs, err := c.Audit(t.Context(), hubclient.AuditFilter{Action: action})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A freeze reaches the documents of the clusters it covers with its actor and reason, is
// listed, audited, and lifted; a cluster suspension likewise.
func TestFreezeAndSuspend(t *testing.T) {
	t.Parallel()
	f := hubtest.Start(t, hubtest.Options{Clusters: 4, Releases: 2})
	admin := client(t, f, f.AdminToken)
	ctx := t.Context()
	prod, staging := f.Clusters[0], f.Clusters[1] // env=prod, env=staging (hubtest alternates)

	all, err := admin.Freeze(ctx, "", hubclient.FreezeRequest{Selector: map[string]string{"env": "prod"}, Reason: "  incident 4711 "})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(all.ID, "frz-") || all.Actor != "token:admin" || all.Reason != "incident 4711" || all.Clusters != 2 || all.Release != "" {
		t.Errorf("fleet freeze answered %+v", all)
	}
	web, err := admin.Freeze(ctx, f.Releases[1], hubclient.FreezeRequest{Reason: "bad config in release-01"})
	if err != nil {
		t.Fatal(err)
	}
	gates := gatesOf(t, f, prod, "after two freezes", func(gs []window.Gate) bool { return hasGate(all.ID)(gs) && hasGate(web.ID)(gs) })
	want := []window.Gate{
		{Name: all.ID, Kind: "freeze", Type: "deny", Reason: "incident 4711", Actor: "token:admin"},
		{Name: web.ID, Kind: "freeze", Type: "deny", Releases: []string{f.Releases[1]}, Reason: "bad config in release-01", Actor: "token:admin"},
	}
	slices.SortFunc(want, func(a, b window.Gate) int { return strings.Compare(a.Name, b.Name) })
	if diff := cmp.Diff(want, gates); diff != "" {
		t.Errorf("%s's gates (-want +got):\n%s", prod, diff)
	}
	if gates := gatesOf(t, f, staging, "release freeze on staging", hasGate(web.ID)); hasGate(all.ID)(gates) {
		t.Errorf("the freeze of env=prod reached %s (staging): %+v", staging, gates)
	}

	list, err := admin.Freezes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != all.ID || list[1].ID != web.ID || list[1].Clusters != 4 {
		t.Errorf("freezes listed: %+v", list)
	}
	if recs := auditActions(t, admin, "freeze.created"); len(recs) != 2 || recs[0].Actor != "token:admin" || recs[0].Detail["reason"] != "incident 4711" {
		t.Errorf("freeze.created audit records: %+v", recs)
	}

	// A viewer lists freezes and may not set or lift one.
	tok, err := admin.CreateUserToken(ctx, hubclient.CreateUserTokenRequest{Name: "watcher", Role: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	viewer := client(t, f, tok.Token)
	if _, err := viewer.Freezes(ctx); err != nil {
		t.Errorf("a viewer lists freezes: %v", err)
	}
	var se *hubclient.StatusError
	if _, err := viewer.Freeze(ctx, "", hubclient.FreezeRequest{Reason: "x"}); !errors.As(err, &se) || se.Code != http.StatusForbidden {
		t.Errorf("a viewer freezes: %v", err)
	}
	if _, err := viewer.Unfreeze(ctx, "", all.ID); !errors.As(err, &se) || se.Code != http.StatusForbidden {
		t.Errorf("a viewer unfreezes: %v", err)
	}

	// A viewer of another project sees the freeze of every release, not the freeze (and its
	// reason) of a platform release; a viewer of platform sees both.
	for _, tt := range []struct {
		project string
		want    []string
	}{{"team-x", []string{all.ID}}, {"platform", []string{all.ID, web.ID}}} {
		tok, err := admin.CreateUserToken(ctx, hubclient.CreateUserTokenRequest{Name: "viewer-" + tt.project, Role: "viewer", Projects: []string{tt.project}})
		if err != nil {
			t.Fatal(err)
		}
		list, err := client(t, f, tok.Token).Freezes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, fv := range list {
			ids = append(ids, fv.ID)
		}
		if diff := cmp.Diff(tt.want, ids); diff != "" {
			t.Errorf("freezes a viewer of %s sees (-want +got):\n%s", tt.project, diff)
		}
	}

	// A freeze of one release is lifted through its release only.
	if _, err := admin.Unfreeze(ctx, f.Releases[0], web.ID); !errors.As(err, &se) || se.Code != http.StatusNotFound ||
		se.Message != `freeze "`+web.ID+`" is not a freeze of release "release-00"` {
		t.Errorf("unfreeze through another release: %v", err)
	}
	if _, err := admin.Unfreeze(ctx, f.Releases[1], web.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Unfreeze(ctx, "", all.ID); err != nil {
		t.Fatal(err)
	}
	gatesOf(t, f, prod, "after unfreeze", func(gs []window.Gate) bool { return len(gs) == 0 })
	if recs := auditActions(t, admin, "freeze.lifted"); len(recs) != 2 || recs[1].Detail["id"] != all.ID || recs[1].Detail["frozenBy"] != "token:admin" {
		t.Errorf("freeze.lifted audit records: %+v", recs)
	}
	if _, err := admin.Unfreeze(ctx, "", all.ID); !errors.As(err, &se) || se.Code != http.StatusNotFound ||
		se.Message != `freeze "`+all.ID+`" not found: see flotilla freeze list` {
		t.Errorf("unfreeze twice: %v", err)
	}

	// Suspend and resume a cluster: once each changes something, twice does not.
	s, err := admin.SuspendCluster(ctx, staging, "node pool upgrade")
	if err != nil || !s.Suspended || !s.Changed || s.Actor != "token:admin" || s.Since == nil {
		t.Fatalf("suspend: %+v, %v", s, err)
	}
	if again, err := admin.SuspendCluster(ctx, staging, "other"); err != nil || again.Changed || again.Reason != "node pool upgrade" {
		t.Errorf("suspend again: %+v, %v", again, err)
	}
	gates = gatesOf(t, f, staging, "after suspend", hasGate(staging))
	if diff := cmp.Diff([]window.Gate{{Name: staging, Kind: "suspend", Type: "deny", Reason: "node pool upgrade", Actor: "token:admin"}}, gates); diff != "" {
		t.Errorf("%s's gates after suspend (-want +got):\n%s", staging, diff)
	}
	if r, err := admin.ResumeCluster(ctx, staging); err != nil || !r.Changed || r.Suspended {
		t.Errorf("resume: %+v, %v", r, err)
	}
	gatesOf(t, f, staging, "after resume", not(hasGate(staging)))
	if r, err := admin.ResumeCluster(ctx, staging); err != nil || r.Changed {
		t.Errorf("resume again: %+v, %v", r, err)
	}
	if recs := auditActions(t, admin, "cluster.suspended"); len(recs) != 1 || recs[0].Cluster != staging || recs[0].Detail["reason"] != "node pool upgrade" {
		t.Errorf("cluster.suspended audit records: %+v", recs)
	}
	if recs := auditActions(t, admin, "cluster.resumed"); len(recs) != 1 || recs[0].Detail["suspendedBy"] != "token:admin" {
		t.Errorf("cluster.resumed audit records: %+v", recs)
	}

	// A removed cluster's suspension goes with it: registered again, it is not suspended.
	if _, err := admin.SuspendCluster(ctx, staging, "decommission"); err != nil {
		t.Fatal(err)
	}
	if err := admin.RemoveCluster(ctx, staging); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Store.GetRecord(ctx, hold.RecordSuspend, staging); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("suspension of a removed cluster: %v, want none", err)
	}
}

// Every refusal, with its status and message.
func TestGateRefusals(t *testing.T) {
	t.Parallel()
	f := hubtest.Start(t, hubtest.Options{Clusters: 1, Releases: 1})
	long := strings.Repeat("x", 1025)
	tests := []struct {
		name, method, path, body string
		status                   int
		message                  string
	}{
		{"no reason", "POST", "/api/v1/freezes", `{}`, 400,
			"freeze: a reason is required: it is shown in the status of every release held back, and recorded in the audit trail"},
		{"an empty body", "POST", "/api/v1/freezes", ``, 400,
			"freeze: a reason is required: it is shown in the status of every release held back, and recorded in the audit trail"},
		{"a blank reason", "POST", "/api/v1/releases/release-00/freeze", `{"reason": "  "}`, 400,
			"freeze: a reason is required: it is shown in the status of every release held back, and recorded in the audit trail"},
		{"a reason too long", "POST", "/api/v1/freezes", `{"reason": "` + long + `"}`, 400, "freeze: reason of 1025 bytes: at most 1024"},
		{"a reason of two lines", "POST", "/api/v1/freezes", `{"reason": "a\nb"}`, 400,
			"freeze: the reason has a line break or another control character: it must fit on one status line"},
		{"an invalid selector key", "POST", "/api/v1/freezes", `{"reason": "x", "selector": {"a b": "c"}}`, 400,
			`freeze: selector: label key "a b" is invalid: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{"an invalid selector value", "POST", "/api/v1/freezes", `{"reason": "x", "selector": {"env": "a b"}}`, 400,
			`freeze: selector: label value "a b" of env is invalid: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		{"an unknown release", "POST", "/api/v1/releases/nope/freeze", `{"reason": "x"}`, 400, `freeze: release "nope" is not in the fleet configuration`},
		{"a release in the body", "POST", "/api/v1/freezes", `{"reason": "x", "release": "release-00"}`, 400,
			`want {"selector": {"key": "value"}, "reason": "..."}: json: unknown field "release"`},
		{"not JSON", "POST", "/api/v1/freezes", `reason=x`, 400,
			`want {"selector": {"key": "value"}, "reason": "..."}: invalid character 'r' looking for beginning of value`},
		{"a body too big", "POST", "/api/v1/freezes", `{"reason": "` + strings.Repeat("x", 17<<10) + `"}`, 413, "body over 16384 bytes"},
		{"an unknown freeze", "DELETE", "/api/v1/freezes/frz-0", ``, 404, `freeze "frz-0" not found: see flotilla freeze list`},
		{"suspend an unknown cluster", "POST", "/api/v1/clusters/nope/suspend", `{"reason": "x"}`, 404, `cluster "nope" not found`},
		{"resume an unknown cluster", "POST", "/api/v1/clusters/nope/resume", ``, 404, `cluster "nope" not found`},
		{"a suspension reason of two lines", "POST", "/api/v1/clusters/" + f.Clusters[0] + "/suspend", `{"reason": "a\rb"}`, 400,
			"suspend: the reason has a line break or another control character: it must fit on one status line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := raw(t, f, tt.method, tt.path, tt.body)
			if status != tt.status || !strings.Contains(body, jsonString(tt.message)) {
				t.Errorf("%s %s: %d %s, want %d with %q", tt.method, tt.path, status, body, tt.status, tt.message)
			}
		})
	}
	if list, err := client(t, f, f.AdminToken).Freezes(context.Background()); err != nil || len(list) != 0 {
		t.Errorf("freezes after the refusals: %+v, %v", list, err)
	}
}

// jsonString is s as the error document's JSON encodes it (without the quotes).
func jsonString(s string) string {
	r := strings.NewReplacer(`"`, `\"`, "\n", `\n`, "<", `\u003c`, ">", `\u003e`, "&", `\u0026`)
	return r.Replace(s)
}
