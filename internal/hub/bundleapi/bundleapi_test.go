package bundleapi_test

import (
	"bytes"
	"crypto/ecdsa"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flotilla/flotilla/internal/bundle"
	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/pki"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

func client(t *testing.T, f *hubtest.Fleet, token string) *hubclient.Client {
	t.Helper()
	c, err := hubclient.NewClient(hubclient.Config{Hub: f.APIURL, Token: token, CAFile: f.CAPath})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func hubCA(t *testing.T, f *hubtest.Fleet) *pki.CA {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(filepath.Dir(f.CAPath), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// agentOf is an agent's key and certificate, signed by ca; registered in the store (as a
// join does) when st is set.
func agentOf(t *testing.T, f *hubtest.Fleet, ca *pki.CA, cluster string, register bool) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	return agentAt(t, f, ca, cluster, register, time.Now(), time.Hour)
}

// agentAt is agentOf with a certificate issued at issued, valid for ttl.
func agentAt(t *testing.T, f *hubtest.Fleet, ca *pki.CA, cluster string, register bool, issued time.Time, ttl time.Duration) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := pki.NewAgentKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := pki.CreateCSR(key, cluster)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, serial, notAfter, err := ca.SignAgentCSR(csr, cluster, ttl, issued)
	if err != nil {
		t.Fatal(err)
	}
	if register {
		if err := f.Store.AddCertificate(t.Context(), store.Certificate{Serial: serial, Cluster: cluster, NotAfter: notAfter}); err != nil {
			t.Fatal(err)
		}
	}
	return certPEM, key
}

func reportsFile(t *testing.T, f *hubtest.Fleet, cluster string, certPEM []byte, key *ecdsa.PrivateKey, release string, seqs ...uint64) []byte {
	t.Helper()
	return reportsFileAt(t, f, cluster, certPEM, key, release, time.Now(), seqs...)
}

func reportsFileAt(t *testing.T, f *hubtest.Fleet, cluster string, certPEM []byte, key *ecdsa.PrivateKey, release string, written time.Time, seqs ...uint64) []byte {
	t.Helper()
	var reports []*agentv1.Report
	for _, seq := range seqs {
		reports = append(reports, &agentv1.Report{Seq: seq, ProducedAt: timestamppb.Now(), Statuses: []*agentv1.AssignmentStatus{
			{Release: release, Generation: 1, Revision: f.Revision, Phase: "Ready", Health: "Current"},
		}})
	}
	var buf bytes.Buffer
	if _, err := bundle.WriteReports(&buf, cluster, reports, certPEM, key, written); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExport(t *testing.T) {
	t.Parallel()
	f := hubtest.Start(t, hubtest.Options{Clusters: 2, Releases: 2})
	admin := client(t, f, f.AdminToken)
	cluster := f.Clusters[0]
	var buf bytes.Buffer
	var info hubclient.BundleInfo
	if err := admin.ExportBundle(t.Context(), cluster, &buf, func(bi hubclient.BundleInfo) { info = bi }); err != nil {
		t.Fatal(err)
	}
	stored, err := f.Store.GetDesiredState(t.Context(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Read(t.Context(), bytes.NewReader(buf.Bytes()), bundle.ReadOptions{CA: hubCA(t, f).Certificate(), Cluster: cluster})
	if err != nil {
		t.Fatalf("the exported bundle does not verify against the hub CA: %v", err)
	}
	if b.Manifest.Generation != stored.Generation || info.Generation != stored.Generation || len(b.Desired.Assignments) != 2 {
		t.Errorf("bundle generation %d (header %d) with %d assignments; the store has generation %d with 2",
			b.Manifest.Generation, info.Generation, len(b.Desired.Assignments), stored.Generation)
	}
	// hubtest seeded one report of seq 1 per cluster.
	if b.Manifest.ReportsIngestedThrough != 1 {
		t.Errorf("reportsIngestedThrough = %d, want 1", b.Manifest.ReportsIngestedThrough)
	}
	recs, err := admin.Audit(t.Context(), hubclient.AuditFilter{Action: "bundle.exported"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Actor != "token:admin" || recs[0].Cluster != cluster || recs[0].Detail["generation"] != float64(stored.Generation) {
		t.Errorf("bundle.exported records: %+v", recs)
	}

	t.Run("unknown cluster", func(t *testing.T) {
		err := admin.ExportBundle(t.Context(), "nope", &bytes.Buffer{}, nil)
		var se *hubclient.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusNotFound || !strings.Contains(se.Message, `cluster "nope" not found`) {
			t.Errorf("error %v, want 404 naming the cluster", err)
		}
	})
	t.Run("a viewer may not", func(t *testing.T) {
		tok, err := admin.CreateUserToken(t.Context(), hubclient.CreateUserTokenRequest{Name: "watcher", Role: "viewer"})
		if err != nil {
			t.Fatal(err)
		}
		err = client(t, f, tok.Token).ExportBundle(t.Context(), cluster, &bytes.Buffer{}, nil)
		var se *hubclient.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusForbidden || !strings.Contains(se.Message, "deployer of every project") {
			t.Errorf("error %v, want 403 saying a deployer of every project is needed", err)
		}
	})
}

func TestImportReports(t *testing.T) {
	t.Parallel()
	f := hubtest.Start(t, hubtest.Options{Clusters: 2, Releases: 1})
	admin := client(t, f, f.AdminToken)
	ca := hubCA(t, f)
	cluster, release := f.Clusters[0], f.Releases[0]
	certPEM, key := agentOf(t, f, ca, cluster, true)
	file := reportsFile(t, f, cluster, certPEM, key, release, 2, 3, 4)

	res, err := admin.ImportReports(t.Context(), bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if res.Cluster != cluster || res.Reports != 3 || res.Ingested != 3 || res.Duplicates != 0 || res.IngestedThrough != 4 {
		t.Errorf("first import: %+v; want 3 ingested through seq 4", res)
	}
	stats, err := f.Store.ReportStats(t.Context(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	again, err := admin.ImportReports(t.Context(), bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	after, err := f.Store.ReportStats(t.Context(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	if again.Ingested != 0 || again.Duplicates != 3 || after.Ingested != stats.Ingested {
		t.Errorf("second import: %+v, the store went from %d to %d reports; want nothing ingested", again, stats.Ingested, after.Ingested)
	}
	recs, err := admin.Audit(t.Context(), hubclient.AuditFilter{Action: "reports.imported"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Actor != "token:admin" || recs[0].Cluster != cluster {
		t.Errorf("reports.imported records: %+v", recs)
	}

	t.Run("a report on a release the cluster does not run is refused, the rest ingested", func(t *testing.T) {
		var reports []*agentv1.Report
		for seq, rel := range map[uint64]string{10: release, 11: "not-assigned"} {
			reports = append(reports, &agentv1.Report{Seq: seq, Statuses: []*agentv1.AssignmentStatus{{Release: rel, Phase: "Ready"}}})
		}
		if reports[0].Seq > reports[1].Seq {
			reports[0], reports[1] = reports[1], reports[0]
		}
		var buf bytes.Buffer
		if _, err := bundle.WriteReports(&buf, cluster, reports, certPEM, key, time.Now()); err != nil {
			t.Fatal(err)
		}
		res, err := admin.ImportReports(t.Context(), &buf)
		if err != nil {
			t.Fatal(err)
		}
		if res.Ingested != 1 || len(res.Refused) != 1 || res.Refused[0].Seq != 11 || !strings.Contains(res.Refused[0].Error, `"not-assigned" is not in the desired state`) {
			t.Errorf("import: %+v; want seq 10 ingested and 11 refused with the reason", res)
		}
	})

	t.Run("a site whose clock is a day ahead", func(t *testing.T) {
		res, err := admin.ImportReports(t.Context(), bytes.NewReader(reportsFileAt(t, f, cluster, certPEM, key, release, time.Now().Add(24*time.Hour), 11)))
		if err != nil || res.Ingested != 1 {
			t.Fatalf("import: %+v (%v); want the report ingested", res, err)
		}
	})
	t.Run("an agent whose certificate expired while it was cut off", func(t *testing.T) {
		// Expired a minute ago, after the test's CA was created.
		expiredCert, expiredKey := agentAt(t, f, ca, cluster, true, time.Now().Add(-2*time.Minute), time.Minute)
		res, err := admin.ImportReports(t.Context(), bytes.NewReader(reportsFile(t, f, cluster, expiredCert, expiredKey, release, 12)))
		if err != nil || res.Ingested != 1 {
			t.Fatalf("import: %+v (%v); want the report ingested: the agent could not renew", res, err)
		}
		recs, err := admin.Audit(t.Context(), hubclient.AuditFilter{Action: "reports.imported"})
		if err != nil {
			t.Fatal(err)
		}
		if last := recs[len(recs)-1]; last.Detail["certificateExpired"] != true {
			t.Errorf("audit record %+v; want certificateExpired true", last.Detail)
		}
	})

	other, err := pki.LoadOrCreateCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	foreignCert, foreignKey := agentOf(t, f, other, cluster, false)
	unregCert, unregKey := agentOf(t, f, ca, cluster, false)
	otherClusterCert, otherClusterKey := agentOf(t, f, ca, f.Clusters[1], true)
	tampered := bytes.Clone(file)
	tampered[bytes.LastIndex(tampered, []byte(release))] ^= 1 // a report's release, inside reports.pb
	for _, tc := range []struct {
		name string
		file []byte
		code int
		want string
	}{
		{"signed by an agent of another hub", reportsFile(t, f, cluster, foreignCert, foreignKey, release, 20), http.StatusForbidden,
			"not signed by an agent of this hub"},
		{"a certificate the hub never issued or revoked", reportsFile(t, f, cluster, unregCert, unregKey, release, 20), http.StatusForbidden,
			"revoked or cluster removed"},
		{"another cluster's certificate", reportsFile(t, f, cluster, otherClusterCert, otherClusterKey, release, 20), http.StatusForbidden,
			`says cluster "` + cluster + `", but its certificate is cluster "` + f.Clusters[1] + `"'s`},
		{"altered after signing", tampered, http.StatusBadRequest, "reports.pb does not match the manifest"},
		{"not a reports file", []byte("hello"), http.StatusBadRequest, "reports file:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := admin.ImportReports(t.Context(), bytes.NewReader(tc.file))
			var se *hubclient.StatusError
			if !errors.As(err, &se) || se.Code != tc.code || !strings.Contains(se.Message, tc.want) {
				t.Errorf("error %v, want %d containing %q", err, tc.code, tc.want)
			}
		})
	}
	final, err := f.Store.ReportStats(t.Context(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	if final.LastSeq != 12 {
		t.Errorf("after the refused files the hub's last seq of %s is %d, want 12 (nothing of them ingested)", cluster, final.LastSeq)
	}
}
