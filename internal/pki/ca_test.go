package pki

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadOrCreateCA(t *testing.T) {
	t.Parallel()
	t.Run("creates the directory and files with the right modes", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state", "pki")
		if _, err := LoadOrCreateCA(dir, testNow); err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			name string
			mode os.FileMode
		}{
			{CACertFile, 0o644},
			{CAKeyFile, 0o600},
		} {
			fi, err := os.Stat(filepath.Join(dir, f.name))
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != f.mode {
				t.Errorf("%s mode = %v, want %v", f.name, got, f.mode)
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 {
			t.Errorf("directory holds %d entries, want only the two CA files", len(entries))
		}
	})

	t.Run("is stable across calls", func(t *testing.T) {
		dir := t.TempDir()
		first, err := LoadOrCreateCA(dir, testNow)
		if err != nil {
			t.Fatal(err)
		}
		second, err := LoadOrCreateCA(dir, testNow.Add(24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if first.Fingerprint() != second.Fingerprint() {
			t.Errorf("fingerprint changed: %s then %s", first.Fingerprint(), second.Fingerprint())
		}
		if !bytes.Equal(first.CertPEM(), second.CertPEM()) {
			t.Error("CertPEM changed between calls")
		}
		// The reloaded key signs certificates the first CA's pool accepts.
		a := newAgentCert(t, second, "prod", time.Hour)
		if _, _, err := first.VerifyAgent([][]byte{a.cert.Raw}, testNow); err != nil {
			t.Errorf("certificate from the reloaded CA: %v", err)
		}
	})

	t.Run("describes a usable CA", func(t *testing.T) {
		ca := newTestCA(t)
		cert := ca.Certificate()
		sum := sha256.Sum256(cert.Raw)
		if got, want := ca.Fingerprint(), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("Fingerprint() = %s, want %s", got, want)
		}
		if got := parseCertPEM(t, ca.CertPEM()); !got.Equal(cert) {
			t.Error("CertPEM() is not the CA certificate")
		}
		if !cert.IsCA || !cert.MaxPathLenZero || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
			t.Errorf("CA certificate constraints: IsCA=%v MaxPathLenZero=%v KeyUsage=%v", cert.IsCA, cert.MaxPathLenZero, cert.KeyUsage)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), CurrentTime: testNow}); err != nil {
			t.Errorf("CA does not verify against its own pool: %v", err)
		}
		pem := ca.CertPEM()
		pem[0] = 'X'
		if ca.CertPEM()[0] == 'X' {
			t.Error("CertPEM() returns the CA's own buffer")
		}
	})
}

func TestLoadOrCreateCAErrors(t *testing.T) {
	t.Parallel()
	other := newTestCA(t)
	serving, err := other.ServingCertificate([]string{"hub"}, time.Hour, testNow)
	if err != nil {
		t.Fatal(err)
	}
	otherDir := t.TempDir()
	if _, err := LoadOrCreateCA(otherDir, testNow); err != nil {
		t.Fatal(err)
	}
	otherKey, err := os.ReadFile(filepath.Join(otherDir, CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		// damage breaks the CA kept in dir.
		damage  func(t *testing.T, dir string)
		at      time.Time
		file    string // the file the error must name
		wantErr string
	}{
		{
			name:    "corrupt certificate",
			damage:  writeFile(CACertFile, []byte("not a certificate")),
			file:    CACertFile,
			wantErr: "no PEM data",
		},
		{
			name:    "corrupt key",
			damage:  writeFile(CAKeyFile, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")),
			file:    CAKeyFile,
			wantErr: "parse",
		},
		{
			name:    "certificate is not a CA",
			damage:  writeFile(CACertFile, pemBlock("CERTIFICATE", serving.Certificate[0])),
			file:    CACertFile,
			wantErr: "not a CA certificate",
		},
		{
			name:    "key of another CA",
			damage:  writeFile(CAKeyFile, otherKey),
			file:    CACertFile,
			wantErr: "does not match the CA key",
		},
		{
			name:    "missing key",
			damage:  removeFile(CAKeyFile),
			file:    CAKeyFile,
			wantErr: "missing",
		},
		{
			name:    "missing certificate",
			damage:  removeFile(CACertFile),
			file:    CACertFile,
			wantErr: "missing",
		},
		{
			name:    "expired CA",
			damage:  func(*testing.T, string) {},
			at:      testNow.Add(caLifetime + time.Second),
			file:    CACertFile,
			wantErr: "expired",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if _, err := LoadOrCreateCA(dir, testNow); err != nil {
				t.Fatal(err)
			}
			tt.damage(t, dir)
			at := tt.at
			if at.IsZero() {
				at = testNow
			}
			_, err := LoadOrCreateCA(dir, at)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, tt.file)) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("LoadOrCreateCA() error = %s, want one naming %s and containing %q", errString(err), tt.file, tt.wantErr)
			}
		})
	}
}

func writeFile(name string, data []byte) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func removeFile(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}
