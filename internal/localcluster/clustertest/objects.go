package clustertest

import (
	"errors"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Objects reads multi-document YAML (or JSON) into objects to apply, skipping empty
// documents; it fails the test on a document that does not parse.
func Objects(tb testing.TB, docs string) []*unstructured.Unstructured {
	tb.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(docs), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			tb.Fatalf("parse test YAML: %v", err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}
