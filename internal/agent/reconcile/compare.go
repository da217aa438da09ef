package reconcile

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/render"
	"github.com/flotilla/flotilla/internal/textcut"
)

// ownsByApply reports whether flotilla's field manager holds fields of live through
// server-side apply: only then does removing a field from the desired state remove it live.
func ownsByApply(live *unstructured.Unstructured) bool {
	for _, mf := range live.GetManagedFields() {
		if mf.Manager == FieldManager && mf.Operation == "Apply" && mf.Subresource == "" {
			return true
		}
	}
	return false
}

// coveredBy reports whether every value set in desired is equal in live. It decides without a
// request that an object is unchanged, so it must never say "equal" wrongly; a false
// "different" only costs a dry-run. Nulls in desired ("leave it") and the top-level status are
// ignored; numbers compare by value (JSON decoding gives int64 or float64).
func coveredBy(desired, live any, top bool) bool {
	switch d := desired.(type) {
	case nil:
		return true
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, dv := range d {
			if top && k == "status" {
				continue
			}
			if !coveredBy(dv, l[k], false) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(d) {
			return false
		}
		for i := range d {
			if !coveredBy(d[i], l[i], false) {
				return false
			}
		}
		return true
	case int64, float64, int, int32:
		lf, ok := number(live)
		df, _ := number(d)
		return ok && lf == df
	default:
		return desired == live
	}
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	}
	return 0, false
}

// ignoredMetadata are the metadata fields that change on every write and say nothing about
// what a user declared.
var ignoredMetadata = []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink"}

func pathsOf(fields []FieldDrift) []string {
	paths := make([]string, len(fields))
	for i, f := range fields {
		paths[i] = f.Path
	}
	return paths
}

// maxDriftValue bounds each value a drift report carries: enough to read a changed image or
// setting, not a copy of a large ConfigMap.
const maxDriftValue = 256

// redacted stands for a value a report must never carry.
const redacted = "(redacted)"

// changedFields lists the fields (".spec.replicas", ".data.key") whose values differ between
// live and the dry-run result of applying the desired state, with the values on each side.
// Status is not compared. A Secret's values are never carried, only its paths; nor are those
// of an object of any kind that came from a decrypted document (render.DecryptedAnnotation)
// outside apiVersion, kind and metadata, which SOPS leaves readable.
func changedFields(live, dryRun *unstructured.Unstructured) []FieldDrift {
	a, b := comparableFields(live), comparableFields(dryRun)
	var fields []FieldDrift
	diffInto(&fields, "", a, b)
	secret := live.GetKind() == "Secret" && live.GroupVersionKind().Group == ""
	decrypted := wasDecrypted(live) || wasDecrypted(dryRun)
	for i := range fields {
		if secret || (decrypted && !readableWhenDecrypted(fields[i].Path)) {
			fields[i].Desired, fields[i].Live = redactedIfSet(fields[i].Desired), redactedIfSet(fields[i].Live)
		}
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].Path < fields[j].Path })
	return fields
}

// wasDecrypted reports whether u carries the renderer's mark of a decrypted document.
func wasDecrypted(u *unstructured.Unstructured) bool {
	return u != nil && u.GetAnnotations()[render.DecryptedAnnotation] == "true"
}

// readableWhenDecrypted reports whether a field's values may be carried for a decrypted
// object: its identity, not its content.
func readableWhenDecrypted(path string) bool {
	for _, top := range []string{".apiVersion", ".kind", ".metadata"} {
		if path == top || strings.HasPrefix(path, top+".") || strings.HasPrefix(path, top+"[") {
			return true
		}
	}
	return false
}

func redactedIfSet(v string) string {
	if v == "" {
		return ""
	}
	return redacted
}

func comparableFields(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy().Object
	delete(c, "status")
	if md, ok := c["metadata"].(map[string]any); ok {
		for _, f := range ignoredMetadata {
			delete(md, f)
		}
	}
	return c
}

// diffInto appends one FieldDrift per differing leaf, live value a against desired value b.
func diffInto(fields *[]FieldDrift, prefix string, a, b any) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			diffInto(fields, prefix+pathSegment(k), am[k], bm[k])
		}
		return
	}
	al, alok := a.([]any)
	bl, blok := b.([]any)
	if alok && blok && len(al) == len(bl) {
		for i := range al {
			diffInto(fields, fmt.Sprintf("%s[%d]", prefix, i), al[i], bl[i])
		}
		return
	}
	if !coveredBy(a, b, false) || !coveredBy(b, a, false) {
		*fields = append(*fields, FieldDrift{Path: prefix, Desired: shortJSON(b), Live: shortJSON(a)})
	}
}

// shortJSON is v as JSON cut to maxDriftValue bytes, "" for an absent value.
func shortJSON(v any) string {
	if v == nil {
		return ""
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return textcut.Cut(string(data), maxDriftValue)
}

// pathSegment is ".key", or ["key"] for keys that are not plain identifiers:
// .metadata.labels["app.kubernetes.io/name"].
func pathSegment(k string) string {
	if strings.ContainsAny(k, "./[]\" ") {
		return fmt.Sprintf("[%q]", k)
	}
	return "." + k
}
