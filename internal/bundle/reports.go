package bundle

import (
	"archive/tar"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// ReportsFormat is the format of a reports file's manifest and the prefix of the message
// its signature covers.
const ReportsFormat = "flotilla.dev/reports/v1"

const (
	certificateEntry = "certificate.pem"
	reportsEntry     = "reports.pb"
)

// ReportsManifest describes a reports file; the agent's signature covers it.
type ReportsManifest struct {
	Format    string    `json:"format"`
	Cluster   string    `json:"cluster"`
	CreatedAt time.Time `json:"createdAt"`
	// Count, FirstSeq and LastSeq describe the reports, in seq order (0, 0, 0: none).
	Count    int    `json:"count"`
	FirstSeq uint64 `json:"firstSeq"`
	LastSeq  uint64 `json:"lastSeq"`
	// Certificate and Reports name the other entries' contents.
	Certificate FileDigest `json:"certificate"`
	Reports     FileDigest `json:"reports"`
}

// ReportsLimits bound what ReadReports accepts. A zero field takes its
// DefaultReportsLimits value.
type ReportsLimits struct {
	MaxBytes   int64
	MaxReports int
}

// DefaultReportsLimits hold ten agents' default outboxes (10,000 reports each).
func DefaultReportsLimits() ReportsLimits {
	return ReportsLimits{MaxBytes: 256 << 20, MaxReports: 100_000}
}

func (l ReportsLimits) withDefaults() ReportsLimits {
	d := DefaultReportsLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxReports <= 0 {
		l.MaxReports = d.MaxReports
	}
	return l
}

const maxCertificateBytes = 16 << 10

// WriteReports writes a reports file of reports (in seq order), signed by the agent's key
// whose certificate is certPEM.
func WriteReports(w io.Writer, cluster string, reports []*agentv1.Report, certPEM []byte, key crypto.Signer, now time.Time) (ReportsManifest, error) {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(&agentv1.ReportRequest{Reports: reports})
	if err != nil {
		return ReportsManifest{}, fmt.Errorf("reports of cluster %q: %w", cluster, err)
	}
	m := ReportsManifest{
		Format: ReportsFormat, Cluster: cluster, CreatedAt: now.UTC(), Count: len(reports),
		Certificate: digestOf(certPEM), Reports: digestOf(data),
	}
	for i, r := range reports {
		if i > 0 && r.GetSeq() <= reports[i-1].GetSeq() {
			return ReportsManifest{}, fmt.Errorf("reports of cluster %q: seq %d after %d: not in order", cluster, r.GetSeq(), reports[i-1].GetSeq())
		}
	}
	if len(reports) > 0 {
		m.FirstSeq, m.LastSeq = reports[0].GetSeq(), reports[len(reports)-1].GetSeq()
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		return ReportsManifest{}, err
	}
	sig, err := sign(key, ReportsFormat, manifest)
	if err != nil {
		return ReportsManifest{}, fmt.Errorf("reports of cluster %q: sign: %w", cluster, err)
	}
	tw := tar.NewWriter(w)
	for _, e := range []struct {
		name string
		data []byte
	}{{manifestEntry, manifest}, {certificateEntry, certPEM}, {signatureEntry, sig}, {reportsEntry, data}} {
		if err := writeEntry(tw, e.name, int64(len(e.data)), bytesReader(e.data)); err != nil {
			return ReportsManifest{}, fmt.Errorf("reports of cluster %q: %w", cluster, err)
		}
	}
	if err := tw.Close(); err != nil {
		return ReportsManifest{}, fmt.Errorf("reports of cluster %q: %w", cluster, err)
	}
	return m, nil
}

// Reports is a reports file read and verified against the certificate it carries. The
// certificate itself is not verified: the hub checks it against its CA and its store.
type Reports struct {
	Manifest    ReportsManifest
	Certificate *x509.Certificate
	Reports     []*agentv1.Report
}

// ReadReports reads a reports file and checks its signature against the certificate in it,
// and each entry against the manifest.
func ReadReports(r io.Reader, lim ReportsLimits) (*Reports, error) {
	lim = lim.withDefaults()
	rd := newReader("reports file", r, lim.MaxBytes)
	manifest, err := rd.readAll(manifestEntry, maxManifestBytes)
	if err != nil {
		return nil, err
	}
	if err := checkFormat(manifest, ReportsFormat); err != nil {
		return nil, fmt.Errorf("reports file: %w", err)
	}
	var m ReportsManifest
	if err := decodeStrict(manifest, &m); err != nil {
		return nil, fmt.Errorf("reports file: manifest: %w", err)
	}
	what := fmt.Sprintf("reports file of cluster %q", m.Cluster)
	rd.what = what
	if m.Count > lim.MaxReports {
		return nil, fmt.Errorf("%s: %d reports; at most %d", what, m.Count, lim.MaxReports)
	}
	certPEM, err := rd.readAll(certificateEntry, maxCertificateBytes)
	if err != nil {
		return nil, err
	}
	if err := m.Certificate.check(what, certificateEntry, certPEM); err != nil {
		return nil, err
	}
	block, rest := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" || len(rest) > 0 {
		return nil, fmt.Errorf("%s: %s: want one PEM CERTIFICATE block", what, certificateEntry)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", what, certificateEntry, err)
	}
	sig, err := rd.readAll(signatureEntry, maxSignatureBytes)
	if err != nil {
		return nil, err
	}
	if err := verify(cert, ReportsFormat, manifest, sig); err != nil {
		return nil, fmt.Errorf("%s: signature does not verify against the agent certificate in it: the file was altered: %w", what, err)
	}
	data, err := rd.readAll(reportsEntry, m.Reports.Size)
	if err != nil {
		return nil, err
	}
	if err := m.Reports.check(what, reportsEntry, data); err != nil {
		return nil, err
	}
	var req agentv1.ReportRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("%s: reports: %w", what, err)
	}
	if err := checkSeqs(what, m, req.GetReports()); err != nil {
		return nil, err
	}
	if err := rd.end(); err != nil {
		return nil, err
	}
	return &Reports{Manifest: m, Certificate: cert, Reports: req.GetReports()}, nil
}

func checkSeqs(what string, m ReportsManifest, reports []*agentv1.Report) error {
	if len(reports) != m.Count {
		return fmt.Errorf("%s: %d reports, the manifest says %d", what, len(reports), m.Count)
	}
	if len(reports) == 0 {
		return nil
	}
	for i, r := range reports {
		if r.GetSeq() == 0 {
			return fmt.Errorf("%s: report %d has no seq", what, i)
		}
		if i > 0 && r.GetSeq() <= reports[i-1].GetSeq() {
			return fmt.Errorf("%s: seq %d after %d: not in order", what, r.GetSeq(), reports[i-1].GetSeq())
		}
	}
	if reports[0].GetSeq() != m.FirstSeq || reports[len(reports)-1].GetSeq() != m.LastSeq {
		return errors.New(what + ": seqs differ from the manifest's")
	}
	return nil
}
