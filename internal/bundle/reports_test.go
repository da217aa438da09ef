package bundle

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flotilla/flotilla/internal/pki"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// pkiKey is an agent's key, as after a join.
type pkiKey struct{ ECDSA *ecdsa.PrivateKey }

func newAgent(t *testing.T, ca *pki.CA, cluster string) ([]byte, *pkiKey) {
	t.Helper()
	key, err := pki.NewAgentKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := pki.CreateCSR(key, cluster)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, _, err := ca.SignAgentCSR(csr, cluster, time.Hour, testNow)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, &pkiKey{key}
}

func testReports() []*agentv1.Report {
	var out []*agentv1.Report
	for seq := uint64(5); seq <= 7; seq++ {
		out = append(out, &agentv1.Report{Seq: seq, ProducedAt: timestamppb.New(testNow), Statuses: []*agentv1.AssignmentStatus{
			{Release: "web", Generation: 7, Revision: "main@abc", Phase: "Ready"},
		}})
	}
	return out
}

func TestReportsRoundTrip(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	certPEM, key := newAgent(t, ca, "edge-1")
	var buf bytes.Buffer
	m, err := WriteReports(&buf, "edge-1", testReports(), certPEM, key.ECDSA, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if m.Count != 3 || m.FirstSeq != 5 || m.LastSeq != 7 {
		t.Errorf("manifest = %+v, want 3 reports, seqs 5 to 7", m)
	}
	got, err := ReadReports(bytes.NewReader(buf.Bytes()), ReportsLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Reports) != 3 || !proto.Equal(got.Reports[2], testReports()[2]) {
		t.Errorf("reports read back = %v", got.Reports)
	}
	block, _ := pem.Decode(certPEM)
	if !bytes.Equal(got.Certificate.Raw, block.Bytes) {
		t.Error("certificate read back differs")
	}
	if _, err := x509.ParseCertificate(got.Certificate.Raw); err != nil {
		t.Fatal(err)
	}
}

func TestReadReportsRefuses(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	certPEM, key := newAgent(t, ca, "edge-1")
	otherCert, _ := newAgent(t, ca, "edge-1")
	var buf bytes.Buffer
	if _, err := WriteReports(&buf, "edge-1", testReports(), certPEM, key.ECDSA, testNow); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	tests := []struct {
		name string
		file func() []byte
		lim  ReportsLimits
		want string
	}{
		{name: "a report changed", file: func() []byte {
			es := entries(t, good)
			es[3].data[len(es[3].data)-1] ^= 1
			return retar(t, es)
		}, want: "reports.pb does not match the manifest"},
		{name: "the manifest changed", file: func() []byte {
			es := entries(t, good)
			es[0].data = bytes.Replace(es[0].data, []byte(`"cluster":"edge-1"`), []byte(`"cluster":"edge-2"`), 1)
			return retar(t, es)
		}, want: "signature does not verify"},
		{name: "another certificate of the cluster swapped in", file: func() []byte {
			es := entries(t, good)
			es[1].data = otherCert
			return retar(t, es)
		}, want: "certificate.pem "},
		{name: "more reports than the bound", file: func() []byte { return good }, lim: ReportsLimits{MaxReports: 2},
			want: "3 reports; at most 2"},
		{name: "larger than the bound", file: func() []byte { return good }, lim: ReportsLimits{MaxBytes: 100},
			want: "larger than 100 bytes"},
		{name: "a bundle instead", file: func() []byte {
			f := newFixture(t)
			return f.write(t, f.desired, f.ca)
		}, want: `format "flotilla.dev/bundle/v1", want "flotilla.dev/reports/v1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadReports(bytes.NewReader(tt.file()), tt.lim)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadReports: error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestWriteReportsRefusesDisorder(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	certPEM, key := newAgent(t, ca, "edge-1")
	rs := testReports()
	rs[0], rs[1] = rs[1], rs[0]
	if _, err := WriteReports(&bytes.Buffer{}, "edge-1", rs, certPEM, key.ECDSA, testNow); err == nil || !strings.Contains(err.Error(), "not in order") {
		t.Fatalf("error %v, want one saying the seqs are not in order", err)
	}
}
