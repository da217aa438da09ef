package helmchart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// TestRepositoryVersions: the newest version satisfying the range wins, pre-releases only
// when the range names one, and the revision is the version with the digest of the archive
// that was unpacked into dst.
func TestRepositoryVersions(t *testing.T) {
	t.Parallel()
	r := startRepo(t, true, "", "")
	archives := map[string][]byte{}
	for _, v := range []string{"1.0.0", "1.2.0", "1.10.0", "2.0.0-rc.1", "0.9.0"} {
		archives[v] = r.add(t, newChart("podinfo", v, 2), "")
	}
	r.add(t, newChart("other", "9.0.0", 1), "")
	f := New(Options{TLS: testTLS(t, r)})

	for _, tc := range []struct {
		version, want, err string
	}{
		{version: "", want: "1.10.0"},
		{version: "^1.0", want: "1.10.0"},
		{version: "~1.2", want: "1.2.0"},
		{version: "1.0.0", want: "1.0.0"},
		{version: "<1.0.0", want: "0.9.0"},
		{version: ">=2.0.0-0", want: "2.0.0-rc.1"},
		{version: "2.0.0-rc.1", want: "2.0.0-rc.1"},
		{version: "^2", err: "source 'charts': helm repository " + r.URL + " chart podinfo version ^2: no version satisfying ^2 among 2.0.0-rc.1, 1.10.0, 1.2.0, 1.0.0, 0.9.0"},
		{version: "not a range", err: `version "not a range" is not a semver range`},
	} {
		t.Run(tc.version, func(t *testing.T) {
			dst := t.TempDir()
			got, err := f.Fetch(t.Context(), helmSource(r.URL, "podinfo", tc.version), "", dst)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want + "@sha256:" + hexSum(archives[tc.want])
			if got.Revision != want || got.Unchanged || got.URL != r.URL+" chart podinfo" {
				t.Fatalf("fetched %+v, want revision %s", got, want)
			}
			chartYAML, err := os.ReadFile(filepath.Join(dst, "Chart.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(chartYAML), "version: "+tc.want+"\n") {
				t.Fatalf("dst/Chart.yaml:\n%s\nwant version %s", chartYAML, tc.want)
			}
			if diff := cmp.Diff([]string{"Chart.yaml", "templates/cm-0.yaml", "templates/cm-1.yaml", "values.yaml"}, listFiles(t, dst)); diff != "" {
				t.Fatalf("files (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRepositoryUnchanged: when the index states the digest and the revision is the previous
// one, nothing but the index is requested (revalidated by its ETag) and dst stays empty; an
// index without digests costs a download, still reported as unchanged.
func TestRepositoryUnchanged(t *testing.T) {
	t.Parallel()
	r := startRepo(t, true, "", "")
	data := r.add(t, newChart("podinfo", "6.5.4", 3), "")
	f := New(Options{TLS: testTLS(t, r)})
	src := helmSource(r.URL, "podinfo", "^6")
	first, err := f.Fetch(t.Context(), src, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if want := "6.5.4@sha256:" + hexSum(data); first.Revision != want {
		t.Fatalf("revision %s, want %s", first.Revision, want)
	}
	if got := r.take(); len(got) != 2 || got[0].path != "/index.yaml" || got[0].status != 200 || got[1].path != "/charts/podinfo-6.5.4.tgz" {
		t.Fatalf("first fetch requested %+v, want the index and the archive", got)
	}
	dst := t.TempDir()
	again, err := f.Fetch(t.Context(), src, first.Revision, dst)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Unchanged || again.Revision != first.Revision {
		t.Fatalf("second fetch %+v, want unchanged at %s", again, first.Revision)
	}
	if diff := cmp.Diff([]request{{path: "/index.yaml", status: 304}}, r.take(), cmp.AllowUnexported(request{})); diff != "" {
		t.Fatalf("second fetch requests (-want +got):\n%s", diff)
	}
	if files := listFiles(t, dst); len(files) != 0 {
		t.Fatalf("unchanged fetch wrote %v", files)
	}

	// Without a digest in the index, only the download tells.
	noDigest := startRepo(t, true, "", "")
	noDigest.addArchive(t, newChart("podinfo", "6.5.4", 3).Metadata, data, "podinfo-6.5.4.tgz", "-")
	again, err = f.Fetch(t.Context(), helmSource(noDigest.URL, "podinfo", "^6"), first.Revision, dst)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Unchanged || again.Revision != first.Revision {
		t.Fatalf("fetch without index digest %+v, want unchanged at %s", again, first.Revision)
	}
	if files := listFiles(t, dst); len(files) != 0 {
		t.Fatalf("unchanged fetch wrote %v", files)
	}
}

// TestRepositoryDigestMismatch: an archive that is not the one the index states is refused,
// and nothing is written.
func TestRepositoryDigestMismatch(t *testing.T) {
	t.Parallel()
	r := startRepo(t, true, "", "")
	stated := strings.Repeat("ab", 32)
	data := r.add(t, newChart("podinfo", "6.5.4", 1), stated)
	f := New(Options{TLS: testTLS(t, r)})
	dst := t.TempDir()
	_, err := f.Fetch(t.Context(), helmSource(r.URL, "podinfo", ""), "", dst)
	want := "source 'charts': helm repository " + r.URL + " chart podinfo version 6.5.4: chart archive " + r.URL + "/charts/podinfo-6.5.4.tgz has digest sha256:" + hexSum(data) + ", the index says sha256:" + stated + ": refused"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant %s", err, want)
	}
	if files := listFiles(t, dst); len(files) != 0 {
		t.Fatalf("refused fetch wrote %v", files)
	}
}

// TestRepositoryCredentials: the named credentials reach the repository, and not a second host
// the index sends the archive to; without them the repository's refusal is reported.
func TestRepositoryCredentials(t *testing.T) {
	t.Parallel()
	r := startRepo(t, true, "deploy", "s3cret")
	elsewhere := startRepo(t, true, "", "")
	c := newChart("podinfo", "6.5.4", 1)
	data := packageChart(t, c)
	elsewhere.files["/archives/podinfo-6.5.4.tgz"] = data
	r.addArchive(t, c.Metadata, data, elsewhere.URL+"/archives/podinfo-6.5.4.tgz", "")
	r.add(t, newChart("local", "1.0.0", 1), "")

	p := policy(t, "username: deploy\npassword: s3cret\n", "127.0.0.1")
	f := New(Options{TLS: testTLS(t, r), Policy: p})
	withCreds := func(h *v1alpha1.HelmSource) { h.Credentials = "charts" }

	if _, err := f.Fetch(t.Context(), helmSource(r.URL, "podinfo", "", withCreds), "", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	for _, req := range r.take() {
		if !strings.HasPrefix(req.auth, "Basic ") || req.status != 200 {
			t.Errorf("repository request %+v: want basic auth, 200", req)
		}
	}
	got := elsewhere.take()
	if len(got) != 1 || got[0].path != "/archives/podinfo-6.5.4.tgz" || got[0].auth != "" {
		t.Fatalf("other host saw %+v, want one archive download without credentials", got)
	}

	_, err := f.Fetch(t.Context(), helmSource(r.URL, "local", ""), "", t.TempDir())
	if want := "download index " + r.URL + "/index.yaml: 401 Unauthorized (the source names no credentials)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	r.take()

	// The operator's policy decides where a credential may go.
	narrow := New(Options{TLS: testTLS(t, r), Policy: policy(t, "username: deploy\npassword: s3cret\n", "charts.example.com")})
	_, err = narrow.Fetch(t.Context(), helmSource(r.URL, "local", "", withCreds), "", t.TempDir())
	if want := "source 'charts': helm repository " + r.URL + " chart local version newest: credentials 'charts' may be sent to charts.example.com only, not to " + hostOf(r.URL); err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant %s", err, want)
	}
	if got := r.take(); len(got) != 0 {
		t.Fatalf("refused source requested %+v", got)
	}
}

// TestRepositoryRefusals: plain HTTP without insecure, and indexes and archives over their
// limits, are refused with the limit named; a repository URL with credentials in it too.
func TestRepositoryRefusals(t *testing.T) {
	t.Parallel()
	plain := startRepo(t, false, "", "")
	plain.add(t, newChart("podinfo", "1.0.0", 1), "")
	r := startRepo(t, true, "", "")
	r.add(t, newChart("podinfo", "1.0.0", 40), "")
	r.add(t, newChart("huge", "1.0.0", 4000), "")

	t.Run("plain http", func(t *testing.T) {
		_, err := New(Options{}).Fetch(t.Context(), helmSource(plain.URL, "podinfo", ""), "", t.TempDir())
		want := "source 'charts': helm repository " + plain.URL + " chart podinfo version newest: " + plain.URL + " is plain HTTP: use https://, or set insecure: true on the source to accept it"
		if err == nil || err.Error() != want {
			t.Fatalf("error %v\nwant %s", err, want)
		}
		if got := plain.take(); len(got) != 0 {
			t.Fatalf("refused source requested %+v", got)
		}
		insecure := func(h *v1alpha1.HelmSource) { h.Insecure = true }
		if _, err := New(Options{}).Fetch(t.Context(), helmSource(plain.URL, "podinfo", "", insecure), "", t.TempDir()); err != nil {
			t.Fatalf("insecure: %v", err)
		}
	})
	for _, tc := range []struct {
		name  string
		opts  Options
		chart string
		want  string
	}{
		{"index over its limit", Options{MaxIndexBytes: 200}, "podinfo", "download index " + r.URL + "/index.yaml: larger than the limit of 200 bytes"},
		{"archive over its limit", Options{MaxChartBytes: 300}, "podinfo", "download " + r.URL + "/charts/podinfo-1.0.0.tgz: chart archive: larger than the limit of 300 bytes"},
		{"unpacked over the limit", Options{MaxUnpackedBytes: 4000}, "podinfo", "chart archive: unpacks to more bytes than the limit allows"},
		{"too many files", Options{MaxFiles: 10}, "podinfo", "chart archive: more files than the limit allows"},
		// A gzip bomb in a small archive: 4000 templates compress well.
		{"many files, default limits", Options{}, "huge", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.TLS = testTLS(t, r)
			dst := t.TempDir()
			_, err := New(tc.opts).Fetch(t.Context(), helmSource(r.URL, tc.chart, ""), "", dst)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "source 'charts': helm repository "+r.URL+" chart "+tc.chart) {
				t.Fatalf("error %v\nwant %q", err, tc.want)
			}
			if files := listFiles(t, dst); len(files) != 0 {
				t.Fatalf("refused fetch left %v", files)
			}
		})
	}
	t.Run("credentials in the URL", func(t *testing.T) {
		u := strings.Replace(r.URL, "https://", "https://user:secret@", 1)
		_, err := New(Options{TLS: testTLS(t, r)}).Fetch(t.Context(), helmSource(u, "podinfo", ""), "", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "the repository URL holds credentials") || strings.Contains(err.Error(), "secret") {
			t.Fatalf("error %v", err)
		}
	})
}

// TestRepositoryRedirects: a redirect to another host gets no credentials, and a redirect
// from https to plain http is refused.
func TestRepositoryRedirects(t *testing.T) {
	t.Parallel()
	r := startRepo(t, true, "deploy", "s3cret")
	elsewhere := startRepo(t, true, "", "")
	plain := startRepo(t, false, "", "")
	c := newChart("podinfo", "6.5.4", 1)
	data := packageChart(t, c)
	elsewhere.files["/podinfo.tgz"] = data
	plain.files["/podinfo.tgz"] = data
	r.redirects = map[string]string{"/moved/podinfo-6.5.4.tgz": elsewhere.URL + "/podinfo.tgz", "/plain/podinfo-7.0.0.tgz": plain.URL + "/podinfo.tgz"}
	r.addArchive(t, c.Metadata, data, "moved/podinfo-6.5.4.tgz", "")
	c7 := newChart("podinfo", "7.0.0", 1)
	r.addArchive(t, c7.Metadata, data, "plain/podinfo-7.0.0.tgz", "-")
	f := New(Options{TLS: testTLS(t, r), Policy: policy(t, "username: deploy\npassword: s3cret\n", "127.0.0.1")})
	withCreds := func(h *v1alpha1.HelmSource) { h.Credentials = "charts" }

	if _, err := f.Fetch(t.Context(), helmSource(r.URL, "podinfo", "^6", withCreds), "", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if got := elsewhere.take(); len(got) != 1 || got[0].auth != "" || got[0].status != 200 {
		t.Fatalf("the redirect's target saw %+v, want one download without credentials", got)
	}
	_, err := f.Fetch(t.Context(), helmSource(r.URL, "podinfo", "^7", withCreds), "", t.TempDir())
	if want := "redirect from https to " + plain.URL + "/podinfo.tgz refused"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	if got := plain.take(); len(got) != 0 {
		t.Fatalf("the plain-HTTP server saw %+v", got)
	}
}
