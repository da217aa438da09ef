package v1alpha1

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flotilla/flotilla/internal/fuzzseed"
)

// fuzzSeeds are the committed seed corpus of FuzzParseFleet, by file name: the example fleets
// under testdata, each as one file (hidden files left out, as LoadDir leaves them out), and
// some garbage.
func fuzzSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{
		"garbage":      []byte("\x00\xff{[:\n---\n- ]\n\t*x &y !!binary"),
		"not-a-fleet":  []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n[1, 2]\n---\n~\n"),
		"aliases":      []byte("a: &a [*a]\n---\nb: &b {c: *b}\n"),
		"duplicate":    []byte("apiVersion: flotilla.dev/v1alpha1\napiVersion: flotilla.dev/v1alpha1\n"),
		"unterminated": []byte(`{"apiVersion": "flotilla.dev/v1alpha1", "kind": "Source", "metadata": {"name": `),
	}
	for _, dir := range []string{"fleet", "invalid"} {
		var all []byte
		err := filepath.WalkDir(filepath.Join("testdata", dir), func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case strings.HasPrefix(d.Name(), "."): // as LoadDir does
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			case d.IsDir() || !isConfigFile(d.Name()):
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if len(all) > 0 {
				all = append(all, "---\n"...)
			}
			all = append(all, data...)
			if len(data) > 0 && data[len(data)-1] != '\n' {
				all = append(all, '\n')
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		seeds[dir] = all
	}
	return seeds
}

// TestFuzzSeedCorpus checks that the committed seed corpus is what fuzzSeeds builds
// (-write-fuzz-seeds rewrites it).
func TestFuzzSeedCorpus(t *testing.T) {
	t.Parallel()
	fuzzseed.Check(t, "FuzzParseFleet", fuzzSeeds(t))
}

// FuzzParseFleet parses arbitrary bytes as the only file of a fleet repository. No input may
// panic. A fleet that parses is valid, every release's source is defined, and writing its
// objects out and parsing them again gives the same fleet. A fleet that does not parse gives an
// *InvalidError whose problems all name the file, the object or document, and what is wrong.
func FuzzParseFleet(f *testing.F) {
	const file = "fleet.yaml"
	f.Fuzz(func(t *testing.T, data []byte) {
		fleet, err := Parse(map[string][]byte{file: data})
		if err != nil {
			if fleet != nil {
				t.Fatalf("Parse returned a fleet and an error: %v", err)
			}
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error is %T, not *InvalidError: %v", err, err)
			}
			if len(ie.Problems) == 0 {
				t.Fatal("InvalidError without problems")
			}
			for _, p := range ie.Problems {
				if p.File != file || p.Object == "" || p.Message == "" {
					t.Fatalf("problem lacks file, object or message: %#v", p)
				}
			}
			return
		}
		if err := fleet.Validate(); err != nil {
			t.Fatalf("Parse accepted a fleet that Validate refuses: %v", err)
		}
		sources := make(map[string]bool, len(fleet.Sources))
		for _, s := range fleet.Sources {
			sources[s.Metadata.Name] = true
		}
		for _, r := range fleet.Releases {
			if !sources[r.Spec.Source] {
				t.Fatalf("Release/%s uses source %q, which is not defined", r.Metadata.Name, r.Spec.Source)
			}
		}

		var out []byte
		add := func(v any) {
			j, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			out = append(append(out, j...), "\n---\n"...)
		}
		for _, s := range fleet.Sources {
			add(s)
		}
		for _, r := range fleet.Releases {
			add(r)
		}
		for _, n := range fleet.Notifications {
			add(n)
		}
		for _, p := range fleet.Projects {
			add(p)
		}
		again, err := Parse(map[string][]byte{file: out})
		if err != nil {
			t.Fatalf("fleet written out does not parse again: %v\n%s", err, out)
		}
		if diff := cmp.Diff(fleet, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("fleet written out and parsed again differs (-first +again):\n%s", diff)
		}
	})
}
