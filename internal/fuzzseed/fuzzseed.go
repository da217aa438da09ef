// Package fuzzseed keeps the committed seed corpora of fuzz targets in step with the code that
// builds them. Tests only import it.
package fuzzseed

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

var rewrite = flag.Bool("write-fuzz-seeds", false, "rewrite the seed corpora under testdata/fuzz instead of checking them")

// Check compares testdata/fuzz/<target>/ with seeds (file name -> input): every seed must be
// committed with exactly that content, and no other file may be there. With -write-fuzz-seeds
// it rewrites the directory instead. A failure says which file differs and how to fix it.
func Check(t *testing.T, target string, seeds map[string][]byte) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	if *rewrite {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range seeds {
			if err := os.WriteFile(filepath.Join(dir, name), encode(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("seed corpus of %s: %v (run the test with -write-fuzz-seeds)", target, err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
		want, ok := seeds[e.Name()]
		if !ok {
			t.Errorf("%s/%s is committed but no seed of that name is built: remove it or run with -write-fuzz-seeds", dir, e.Name())
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != string(encode(want)) {
			t.Errorf("%s/%s differs from the seed the code builds: run with -write-fuzz-seeds", dir, e.Name())
		}
	}
	for name := range seeds {
		i := sort.SearchStrings(got, name)
		if i == len(got) || got[i] != name {
			t.Errorf("seed %s of %s is not committed: run with -write-fuzz-seeds", name, target)
		}
	}
}

// encode writes one []byte input in the corpus file format of go test -fuzz.
func encode(data []byte) []byte {
	return []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%+q)\n", data))
}
