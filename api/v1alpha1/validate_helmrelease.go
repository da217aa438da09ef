package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"
)

// MaxHelmReleaseNameLength is Helm's bound on a release name: its objects' names and labels
// are built from it, with room for a suffix.
const MaxHelmReleaseNameLength = 53

// MaxInlineValuesBytes bounds Release.spec.helm.values, as JSON: the agent bounds a release's
// values (files included) at 4 MiB, and more than this inline belongs in a values file.
const MaxInlineValuesBytes = 1 << 20

// MaxInlinePatchBytes bounds one inline post-render patch.
const MaxInlinePatchBytes = 256 << 10

// helmReleaseName is Helm's rule for release names (chartutil.ValidateReleaseName) without its
// dots: a DNS-1123 label, since charts put the name in object names and label values.
var helmReleaseName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// validateReleaseHelm checks Release.spec.helm.
func validateReleaseHelm(h *ReleaseHelm, add func(field, msg string)) {
	if h == nil {
		return
	}
	if n := h.ReleaseName; n != "" {
		switch {
		case len(n) > MaxHelmReleaseNameLength:
			add("spec.helm.releaseName", fmt.Sprintf("%q is %d characters: Helm allows at most %d", n, len(n), MaxHelmReleaseNameLength))
		case !helmReleaseName.MatchString(n):
			add("spec.helm.releaseName", fmt.Sprintf("%q is not a valid release name: lowercase letters, digits and '-', starting and ending with a letter or digit", n))
		}
	}
	for i, f := range h.ValuesFiles {
		for _, msg := range checkFilePath(f.Path) {
			add(fmt.Sprintf("spec.helm.valuesFiles[%d].path", i), msg)
		}
	}
	if h.Values != nil {
		data, err := json.Marshal(h.Values)
		switch {
		case err != nil:
			add("spec.helm.values", err.Error())
		case len(data) > MaxInlineValuesBytes:
			add("spec.helm.values", fmt.Sprintf("is %d bytes as JSON: at most %d inline; put larger values in a file and name it in spec.helm.valuesFiles", len(data), MaxInlineValuesBytes))
		}
	}
	if h.PostRender != nil {
		if len(h.PostRender.Patches) == 0 {
			add("spec.helm.postRender.patches", "must list at least one patch (or leave postRender out)")
		}
		for i, p := range h.PostRender.Patches {
			validatePostRenderPatch(fmt.Sprintf("spec.helm.postRender.patches[%d]", i), p, add)
		}
	}
}

// checkFilePath checks the path of a file a release names in a source: relative, inside the
// source, and literal (unlike spec.path, it is not a template: it is read as written).
func checkFilePath(p string) []string {
	var msgs []string
	switch {
	case p == "":
		return []string{"must be set: the file's path in the source"}
	case strings.HasPrefix(p, "/"):
		msgs = append(msgs, fmt.Sprintf("path %q must be relative to the root of the source", p))
	case strings.HasSuffix(p, "/"):
		msgs = append(msgs, fmt.Sprintf("path %q names a directory: name a file", p))
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." {
			msgs = append(msgs, fmt.Sprintf("path %q must not contain \"..\"", p))
			break
		}
	}
	if strings.Contains(p, "{{") {
		msgs = append(msgs, fmt.Sprintf("path %q is a template: file paths are read as written", p))
	}
	if len(p) > MaxPathLength {
		msgs = append(msgs, fmt.Sprintf("path is %d bytes long: it must be at most %d", len(p), MaxPathLength))
	}
	return msgs
}

func validatePostRenderPatch(field string, p PostRenderPatch, add func(field, msg string)) {
	switch {
	case p.Patch == "" && p.Path == "":
		add(field, "set patch (inline) or path (a file in a source)")
	case p.Patch != "" && p.Path != "":
		add(field, "set patch or path, not both")
		return
	case p.Source != "" && p.Path == "":
		add(field+".source", "applies to path only: an inline patch has no source")
	}
	if p.Path != "" {
		for _, msg := range checkFilePath(p.Path) {
			add(field+".path", msg)
		}
	}
	if p.Patch != "" {
		validateInlinePatch(field, p, add)
	}
	if t := p.Target; t != nil {
		validatePatchTarget(field+".target", t, add)
	}
}

// validateInlinePatch parses an inline patch as kustomize will: a mapping is a strategic merge
// patch (an object), a list is a JSON 6902 patch, which needs a target to say what it patches.
func validateInlinePatch(field string, p PostRenderPatch, add func(field, msg string)) {
	field += ".patch"
	if len(p.Patch) > MaxInlinePatchBytes {
		add(field, fmt.Sprintf("is %d bytes: at most %d inline; put it in a file and name it with path", len(p.Patch), MaxInlinePatchBytes))
		return
	}
	dec := yaml.NewDecoder(bytes.NewReader([]byte(p.Patch)))
	var n yaml.Node
	if err := dec.Decode(&n); err != nil {
		add(field, fmt.Sprintf("is not YAML: %v", err))
		return
	}
	if len(n.Content) == 0 {
		add(field, "is empty")
		return
	}
	switch doc := n.Content[0]; doc.Kind {
	case yaml.SequenceNode:
		if p.Target == nil {
			add(field, "is a JSON 6902 patch (a list of operations): set target to say which objects it patches")
		}
		for i, op := range doc.Content {
			var o struct {
				Op   string `yaml:"op"`
				Path string `yaml:"path"`
			}
			if err := op.Decode(&o); err != nil || o.Op == "" || !strings.HasPrefix(o.Path, "/") && o.Path != "" {
				add(fmt.Sprintf("%s[%d]", field, i), "want a JSON 6902 operation: {op: add|remove|replace|move|copy|test, path: /...}")
				continue
			}
			switch o.Op {
			case "add", "remove", "replace", "move", "copy", "test":
			default:
				add(fmt.Sprintf("%s[%d].op", field, i), fmt.Sprintf("%q is not a JSON 6902 operation: add, remove, replace, move, copy or test", o.Op))
			}
		}
	case yaml.MappingNode:
		var obj struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
		}
		if err := doc.Decode(&obj); err != nil {
			add(field, fmt.Sprintf("is not a strategic merge patch: %v", err))
			return
		}
		if p.Target == nil && (obj.Kind == "" || obj.Metadata.Name == "") {
			add(field, "is a strategic merge patch without kind and metadata.name: name the object it patches, or set target")
		}
	default:
		add(field, "want a strategic merge patch (an object) or a JSON 6902 patch (a list of operations)")
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		add(field, "holds more than one YAML document: one patch per entry")
	}
}

// validatePatchTarget checks a kustomize selector: group, version, kind, name and namespace are
// regular expressions (kustomize anchors them), the selectors are label selectors.
func validatePatchTarget(field string, t *PatchTarget, add func(field, msg string)) {
	if *t == (PatchTarget{}) {
		add(field, "is empty: it would select every object; leave it out of a strategic merge patch that names its object, or set kind, name, ...")
		return
	}
	for _, f := range []struct{ name, value string }{
		{"group", t.Group}, {"version", t.Version}, {"kind", t.Kind}, {"name", t.Name}, {"namespace", t.Namespace},
	} {
		if f.value == "" {
			continue
		}
		if _, err := regexp.Compile("^(?:" + f.value + ")$"); err != nil {
			add(field+"."+f.name, fmt.Sprintf("%q is not a regular expression: %v", f.value, err))
		}
	}
	for _, f := range []struct{ name, value string }{{"labelSelector", t.LabelSelector}, {"annotationSelector", t.AnnotationSelector}} {
		if f.value == "" {
			continue
		}
		if _, err := labels.Parse(f.value); err != nil {
			add(field+"."+f.name, fmt.Sprintf("%q is not a selector: %v", f.value, err))
		}
	}
}
