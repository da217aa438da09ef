package source

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/artifact"
)

var manifests = map[string]string{
	"README.md":                   "# platform\n",
	"apps/web/deployment.yaml":    "kind: Deployment\n",
	"apps/web/service.yaml":       "kind: Service\n",
	"apps/web/kustomization.yaml": "resources: [deployment.yaml, service.yaml]\n",
	"scripts/render.sh":           "#!/bin/sh\necho render\n",
	"clusters/prod/web":           "->../../apps/web",
	"clusters/prod/readme":        "->../../README.md",
}

func TestCheckoutWritesTheCommittedTree(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	first := r.commit("first", manifests)
	wantFirst := snapshot(t, r.dir)
	second := r.commit("second", map[string]string{"apps/web/service.yaml": "-", "apps/api/deployment.yaml": "kind: Deployment\n"})
	wantSecond := snapshot(t, r.dir)

	p := NewPoller(t.TempDir())
	g := Git{Name: "platform", URL: r.dir}
	resolve(t, p, g)

	for _, tt := range []struct {
		commit string
		want   map[string]string
	}{{first, wantFirst}, {second, wantSecond}} {
		dst := filepath.Join(t.TempDir(), "tree")
		if err := p.Checkout(context.Background(), g, tt.commit, dst); err != nil {
			t.Fatalf("Checkout(%s): %v", tt.commit, err)
		}
		if diff := cmp.Diff(tt.want, snapshot(t, dst)); diff != "" {
			t.Errorf("Checkout(%s) (-want +got):\n%s", tt.commit, diff)
		}
		if _, err := os.Stat(filepath.Join(dst, ".git")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Checkout wrote .git")
		}
	}

	// The hub's path: checkout, then pack. The artifact of a checkout is the
	// artifact of the working tree it was committed from, into an existing
	// empty directory as well as a new one.
	var fromRepo bytes.Buffer
	want, _, err := artifact.Pack(context.Background(), r.dir, &fromRepo)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := p.Checkout(context.Background(), g, second, dst); err != nil {
		t.Fatal(err)
	}
	store, err := artifact.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := store.PutDir(context.Background(), dst)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("artifact of the checkout %s, of the working tree %s", got, want)
	}
}

func TestCheckoutWithAFreshPollerFetches(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	head := r.commit("first", manifests)
	dst := filepath.Join(t.TempDir(), "tree")
	if err := NewPoller(t.TempDir()).Checkout(context.Background(), Git{Name: "s", URL: r.dir}, head, dst); err != nil {
		t.Fatalf("Checkout: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "README.md")); err != nil {
		t.Error(err)
	}
}

func TestCheckoutRefuses(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	good := r.commit("good", manifests)
	escaping := r.commit("escaping symlink", map[string]string{"apps/passwd": "->../../../etc/passwd"})
	absolute := r.commit("absolute symlink", map[string]string{"apps/passwd": "->/etc/passwd"})
	p := NewPoller(t.TempDir())
	g := Git{Name: "platform", URL: r.dir}
	resolve(t, p, g)

	nonEmpty := t.TempDir()
	if err := os.WriteFile(filepath.Join(nonEmpty, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		commit  string
		dst     string
		wantErr string
	}{
		{"symlink out of the tree", escaping, "", "symlink 'apps/passwd' -> '../../../etc/passwd': points outside the tree"},
		{"absolute symlink", absolute, "", "symlink 'apps/passwd' -> '/etc/passwd': absolute target"},
		{"unknown commit", strings.Repeat("12", 20), "", "source 'platform': checkout: commit 1212121212121212121212121212121212121212 not found in " + r.dir},
		{"short commit", good[:7], "", "want a full 40-digit hex hash"},
		{"non-empty destination", good, nonEmpty, "not empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := tt.dst
			if dst == "" {
				dst = filepath.Join(t.TempDir(), "tree")
			}
			err := p.Checkout(context.Background(), g, tt.commit, dst)
			if err == nil || !strings.HasPrefix(err.Error(), "source 'platform': ") || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Checkout = %v, want an error containing %q", err, tt.wantErr)
			}
			if tt.dst == "" {
				if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("dst left behind after error (stat: %v)", err)
				}
			}
		})
	}
	if names, _ := os.ReadDir(nonEmpty); len(names) != 1 {
		t.Errorf("Checkout touched a non-empty destination: %v", names)
	}
}
