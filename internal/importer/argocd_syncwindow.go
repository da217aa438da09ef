package importer

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// appRecord is what a project's sync windows match a converted release by.
type appRecord struct {
	release, app, namespace, cluster, project string
}

// pendingWindows are an AppProject's sync windows, converted once every release is known.
type pendingWindows struct {
	o       *Object
	project string
	windows []any
}

// syncWindows converts the sync windows of each AppProject into Windows that name the
// releases the window matched at import time: Argo CD matches a window against the
// project's applications by name, namespace or cluster; a Flotilla window names releases.
func (a *argo) syncWindows() {
	for _, pw := range a.windows {
		for i, it := range pw.windows {
			m, _ := it.(map[string]any)
			field := fmt.Sprintf("spec.syncWindows[%d]", i)
			f := func(l Level, fld, msg, do string) { a.find(pw.o, l, field+fld, msg, do) }
			str := func(k string) string { s, _ := m[k].(string); return s }
			list := func(k string) []string {
				var out []string
				l, _ := m[k].([]any)
				for _, e := range l {
					if s, ok := e.(string); ok {
						out = append(out, s)
					}
				}
				return out
			}
			apps, nss, clusters := list("applications"), list("namespaces"), list("clusters")
			and, _ := m["andOperator"].(bool)
			var releases []string
			for _, r := range a.apps {
				if r.project != pw.project {
					continue
				}
				hits := []bool{}
				for _, c := range []struct {
					pats  []string
					value string
				}{{apps, r.app}, {nss, r.namespace}, {clusters, r.cluster}} {
					if len(c.pats) > 0 {
						hits = append(hits, slices.ContainsFunc(c.pats, func(p string) bool { ok, _ := path.Match(p, c.value); return ok }))
					}
				}
				match := len(hits) > 0 && slices.Contains(hits, true)
				if and {
					match = len(hits) > 0 && !slices.Contains(hits, false)
				}
				if match {
					releases = append(releases, r.release)
				}
			}
			slices.Sort(releases)
			releases = slices.Compact(releases)
			if len(releases) == 0 {
				f(LeftOut, "", "the window matches none of the imported releases: not converted", "import the project's Applications too, or define the Window by hand (docs/windows.md)")
				continue
			}
			w := v1alpha1.Window{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindWindow}
			w.Spec = v1alpha1.WindowSpec{Type: str("kind"), Schedule: str("schedule"), TimeZone: str("timeZone"), Releases: releases,
				Blocks: []string{v1alpha1.BlockRevisions, v1alpha1.BlockPrune, v1alpha1.BlockSelfHeal}}
			if err := w.Spec.Duration.UnmarshalText([]byte(str("duration"))); err != nil {
				f(LeftOut, ".duration", fmt.Sprintf("%q: %v; not converted", str("duration"), err), "")
				continue
			}
			w.Metadata.Name = a.names.assign(v1alpha1.KindWindow, pw.project+"-"+str("kind")+"-window", nil, nil, "")
			if err := checkWindow(w); err != nil {
				f(LeftOut, "", fmt.Sprintf("not converted: %v", err), "define the Window by hand (docs/windows.md)")
				continue
			}
			a.res.Windows = append(a.res.Windows, w)
			f(Note, "", fmt.Sprintf("became Window %s for the %d releases it matched now (a release imported later is not in it); it holds back new revisions, prune and self-heal, as an Argo CD window holds every sync", w.Metadata.Name, len(releases)), "")
			if ms, _ := m["manualSync"].(bool); ms {
				f(Note, ".manualSync", "manual syncs in a closed window: `flotilla sync RELEASE --override --reason TEXT` passes it once", "")
			}
			for _, k := range sortedKeys(m) {
				switch k {
				case "kind", "schedule", "duration", "timeZone", "applications", "namespaces", "clusters", "andOperator", "manualSync", "description":
				default:
					f(LeftOut, "."+k, "not converted", "")
				}
			}
		}
	}
}

// checkWindow validates one Window as the hub does.
func checkWindow(w v1alpha1.Window) error {
	y, err := yaml.Marshal(w)
	if err != nil {
		return err
	}
	_, err = v1alpha1.Parse(map[string][]byte{"window.yaml": y})
	var inv *v1alpha1.InvalidError
	if errors.As(err, &inv) {
		var msgs []string
		for _, p := range inv.Problems {
			msgs = append(msgs, strings.TrimSpace(p.Field+": "+p.Message))
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return err
}
