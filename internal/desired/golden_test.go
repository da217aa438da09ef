package desired

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/full.json from Encode")

// The stored form of a document with every field set is byte for byte what hubs have been
// storing (testdata/full.json was written by the scheduler package's Encode before the model
// moved here): a stored document must decode, and an unchanged desired state must not get a
// new generation because its bytes changed.
func TestEncodeGolden(t *testing.T) {
	t.Parallel()
	doc := filled[Document]()
	got, err := Encode(doc)
	if err != nil {
		t.Fatal(err)
	}
	const file = "testdata/full.json"
	if *rewrite {
		if err := os.WriteFile(file, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSuffix(want, []byte("\n")), got) {
		t.Errorf("Encode of a full document changed: %s", firstDifference(got, want))
	}
	back, err := DecodeDocument(want)
	if err != nil {
		t.Fatalf("%s does not decode: %v", file, err)
	}
	again, err := Encode(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, got) {
		t.Errorf("%s does not survive a decode and an encode: %s", file, firstDifference(again, got))
	}
}

// firstDifference shows where got and want part, with some bytes of context: the documents
// are a few kilobytes on one line.
func firstDifference(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(i-60, 0)
	return fmt.Sprintf("at byte %d:\n got ...%s\nwant ...%s", i, got[from:min(i+60, len(got))], want[from:min(i+60, len(want))])
}
