package artifact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVerifier(t *testing.T) {
	t.Parallel()
	content := []byte("some artifact bytes")
	sum := sha256.Sum256(content)
	right := "sha256:" + hex.EncodeToString(sum[:])
	wrong := "sha256:" + strings.Repeat("0", 64)

	tests := []struct {
		name     string
		expected string
		wantErr  bool
	}{
		{"matching digest", right, false},
		{"other digest", wrong, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewVerifier(tt.expected)
			if err != nil {
				t.Fatal(err)
			}
			// Written in pieces, as a download would be.
			if _, err := io.CopyBuffer(v, bytes.NewReader(content), make([]byte, 3)); err != nil {
				t.Fatal(err)
			}
			if v.Digest() != right || v.Size() != int64(len(content)) {
				t.Errorf("Digest, Size = %s, %d; want %s, %d", v.Digest(), v.Size(), right, len(content))
			}
			err = v.Verify()
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Verify = %v", err)
				}
				return
			}
			var mm *DigestMismatchError
			if !errors.As(err, &mm) || mm.Expected != wrong || mm.Actual != right {
				t.Fatalf("Verify = %v, want a mismatch expecting %s, got %s", err, wrong, right)
			}
			if want := "artifact: digest mismatch: expected " + wrong + ", got " + right; err.Error() != want {
				t.Errorf("error = %q, want %q", err, want)
			}
		})
	}

	if _, err := NewVerifier("md5:abc"); err == nil {
		t.Error("NewVerifier accepted a malformed digest")
	}
}

func TestVerifyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.tar.gz")
	var buf bytes.Buffer
	src := treeWith(t, map[string]string{"f": "x"})
	digest, _, err := Pack(t.Context(), src, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := VerifyFile(p, digest); err != nil {
		t.Fatalf("VerifyFile = %v", err)
	}

	other := "sha256:" + strings.Repeat("0", 64)
	err = VerifyFile(p, other)
	var mm *DigestMismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("VerifyFile with a wrong digest = %v, want *DigestMismatchError", err)
	}
	for _, s := range []string{p, "expected " + other, "got " + digest} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
	if err := VerifyFile(filepath.Join(dir, "missing"), digest); err == nil {
		t.Error("VerifyFile on a missing file succeeded")
	}
}
