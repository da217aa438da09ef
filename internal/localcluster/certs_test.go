package localcluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
	"time"
)

func TestServingCertificateVerifiesForLoopbackNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, err := writePKI(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(files.servingCert, files.servingKey)
	if err != nil {
		t.Fatalf("serving key pair: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(files.caPEM) {
		t.Fatal("CA PEM not parseable")
	}
	for _, name := range []string{"127.0.0.1", "::1", "localhost", "kubernetes.default.svc"} {
		t.Run(name, func(t *testing.T) {
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
				t.Errorf("certificate does not verify for %s: %v", name, err)
			}
		})
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: roots}); err == nil {
		t.Error("certificate verifies for example.com; it must only cover local names")
	}
	for _, p := range []string{files.servingKey, files.saKey} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, st.Mode().Perm())
		}
		data, _ := os.ReadFile(p)
		if b, _ := pem.Decode(data); b == nil || b.Type != "EC PRIVATE KEY" {
			t.Errorf("%s is not an EC PRIVATE KEY PEM block", p)
		}
	}
}

func TestFailedChecksKeepsOnlyFailures(t *testing.T) {
	t.Parallel()
	body := "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[+]poststarthook/rbac ok\nreadyz check failed\n"
	got := failedChecks([]byte(body))
	want := "[-]etcd failed: reason withheld; readyz check failed"
	if got != want {
		t.Errorf("failedChecks = %q, want %q", got, want)
	}
}
