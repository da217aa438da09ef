package reconcile

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/render"
)

// decrypted marks u as the renderer marks an object of a decrypted document, with label
// app=app to show that metadata stays readable.
func decrypted(u *unstructured.Unstructured, app string) *unstructured.Unstructured {
	u.SetAnnotations(map[string]string{render.DecryptedAnnotation: "true"})
	u.SetLabels(map[string]string{"app": app})
	return u
}

func TestChangedFieldsValues(t *testing.T) {
	t.Parallel()
	obj := func(kind string, data map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": "x"}, "data": data}}
		return u
	}
	long := strings.Repeat("é", 300)
	cases := []struct {
		name         string
		live, dryRun *unstructured.Unstructured
		want         []FieldDrift
	}{
		{"changed value", obj("ConfigMap", map[string]any{"a": "1"}), obj("ConfigMap", map[string]any{"a": "2"}),
			[]FieldDrift{{Path: ".data.a", Desired: `"2"`, Live: `"1"`}}},
		{"added live", obj("ConfigMap", map[string]any{"a": "1", "b": "x"}), obj("ConfigMap", map[string]any{"a": "1"}),
			[]FieldDrift{{Path: ".data.b", Live: `"x"`}}},
		{"secret values never carried", obj("Secret", map[string]any{"token": "czNjcjN0"}), obj("Secret", map[string]any{"token": "bmV3"}),
			[]FieldDrift{{Path: ".data.token", Desired: redacted, Live: redacted}}},
		{"decrypted configmap values never carried", decrypted(obj("ConfigMap", map[string]any{"a": "s3cr3t"}), "team"), decrypted(obj("ConfigMap", map[string]any{"a": "new"}), "app"),
			[]FieldDrift{{Path: ".data.a", Desired: redacted, Live: redacted}, {Path: ".metadata.labels.app", Desired: `"app"`, Live: `"team"`}}},
		{"long values cut on a rune", obj("ConfigMap", map[string]any{"a": long}), obj("ConfigMap", map[string]any{"a": "short"}),
			[]FieldDrift{{Path: ".data.a", Desired: `"short"`, Live: `"` + strings.Repeat("é", (maxDriftValue-len("…")-1)/2) + "…"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := changedFields(tc.live, tc.dryRun)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
