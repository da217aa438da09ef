package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/hubclient"
)

func newDriftCommand(s streams) *cobra.Command {
	var (
		hf      hubFlags
		f       hubclient.DriftFilter
		suggest bool
	)
	format := newChoice("table", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "drift [--cluster C] [--release R] [--suggest]",
		Short: "List objects changed by hand across the fleet, with their field paths and who changed them",
		Long: `List the objects each agent found drifted at its last drift check, with the field paths
that differ from what the release applies and the field manager that wrote each live value
(from the object's managedFields: kubectl-edit, kubectl-patch, an operator's name).

Drift is a change, since flotilla last applied an object with the same desired content, to
what flotilla applies:
  - a field the release sets now has another value live, or is gone: kubectl edit, patch,
    set image, a client-side kubectl apply, or kubectl label/annotate --overwrite of a
    label or annotation the release sets;
  - the whole object was deleted by hand: it shows with the path (deleted).
Not drift:
  - labels, annotations and fields the release does not set, added by people or other
    controllers (kubectl label of a new key, an injected sidecar, defaults the API server
    fills in);
  - fields the release leaves alone: the paths of its ignore rules (spec.ignore), fields
    written by its respectManagers, and fields written through the scale subresource
    (an HPA, kubectl scale), which are always respected;
  - fields another server-side-apply field manager owns: those are conflicts (see flotilla
    status and cluster show), left alone, never fought over;
  - status, and metadata that changes at every write (resourceVersion, managedFields, ...);
  - a new revision of the release: that is a change, applied as such.

STATE is "healed" when the agent took the change back, re-creating a deleted object
(selfHeal: true, the default) and "reported" when it only reported it (selfHeal: false).
PATHS name each field's manager in parentheses when the agent's report says.
REPORTED is when the agent's report was produced.

With --suggest, it prints for each drifted field the Release settings that would make
flotilla leave it alone: an ignore rule (spec.ignore) for that field of that object, or a
respectManagers entry for the manager that wrote it (every field it writes, in every
object of the release). Paste one into the release's spec. Nothing is changed.`,
		Example: `  flotilla drift
  flotilla drift --cluster eu-prod-1
  flotilla drift --release baseline -o json
  flotilla drift --release web --suggest`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			v, err := c.Drift(cmd.Context(), f)
			if err != nil {
				return err
			}
			if suggest {
				sugg := suggestions(v)
				return printOut(s.out, format.Value, sugg, func(w io.Writer) { printsuggestions(w, sugg) })
			}
			return printOut(s.out, format.Value, v, func(w io.Writer) {
				if len(v.Objects) == 0 {
					fmt.Fprintln(w, "No drift reported.")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "CLUSTER\tRELEASE\tNAMESPACE\tOBJECT\tPATHS\tSTATE\tREPORTED")
				for _, o := range v.Objects {
					state := "reported"
					if o.Healed {
						state = "healed"
					}
					ns := o.Namespace
					if ns == "" {
						ns = "-"
					}
					t := o.ReportedAt
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Cluster, o.Release, ns, o.Object, strings.Join(pathsWithManagers(o), ","), state, ago(&t))
				}
				tw.Flush()
			})
		},
	}
	hf.bind(cmd)
	cmd.Flags().StringVar(&f.Cluster, "cluster", "", "only this cluster")
	cmd.Flags().StringVar(&f.Release, "release", "", "only this release")
	cmd.Flags().BoolVar(&suggest, "suggest", false, "print the ignore rule or respectManagers entry that would silence each drifted field")
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

// pathsWithManagers is the object's drifted paths, each followed by the manager that wrote
// its live value when the report says: ".spec.replicas (kubectl-patch)".
func pathsWithManagers(o hubclient.DriftedObject) []string {
	managers := map[string]string{}
	for _, f := range o.Fields {
		managers[f.Path] = f.Manager
	}
	out := make([]string, len(o.Paths))
	for i, p := range o.Paths {
		out[i] = p
		if m := managers[p]; m != "" {
			out[i] += " (" + m + ")"
		}
	}
	return out
}

// suggestion is what would make flotilla leave one drifted field alone, for every cluster
// that reported it.
type suggestion struct {
	Release   string   `json:"release"`
	Object    string   `json:"object"`
	Namespace string   `json:"namespace,omitempty"`
	Path      string   `json:"path"`
	Clusters  []string `json:"clusters"`
	Manager   string   `json:"manager,omitempty"`
	// Ignore is the rule for spec.ignore; nil when no rule can silence the drift (a deleted
	// object, a field removed live), and Note says why.
	Ignore *ignoresuggestion `json:"ignore,omitempty"`
	// RespectManagers are the entries for spec.respectManagers, when the manager is known.
	RespectManagers []string `json:"respectManagers,omitempty"`
	Note            string   `json:"note,omitempty"`
}

// ignoreSuggestion is one Release.spec.ignore entry.
type ignoresuggestion struct {
	Target ignoreTarget `json:"target"`
	Paths  []string     `json:"paths"`
}

// ignoreTarget is an ignore rule's target, as narrow as the report allows.
type ignoreTarget struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// suggestions lists, per release, object and drifted field, what would silence it.
func suggestions(v hubclient.DriftView) []suggestion {
	byKey := map[[4]string]*suggestion{}
	var out []*suggestion
	for _, o := range v.Objects {
		fields := o.Fields
		if len(fields) == 0 {
			for _, p := range o.Paths {
				fields = append(fields, hubclient.DriftField{Path: p})
			}
		}
		for _, f := range fields {
			key := [4]string{o.Release, o.Namespace, o.Object, f.Path}
			if s := byKey[key]; s != nil {
				s.Clusters = append(s.Clusters, o.Cluster)
				if s.Manager == "" {
					s.Manager, s.RespectManagers = f.Manager, respectEntries(f.Manager)
				}
				continue
			}
			s := suggestFor(o, f)
			byKey[key] = &s
			out = append(out, &s)
		}
	}
	res := make([]suggestion, len(out))
	for i, s := range out {
		sort.Strings(s.Clusters)
		res[i] = *s
	}
	sort.SliceStable(res, func(i, j int) bool {
		a, b := res[i], res[j]
		if a.Release != b.Release {
			return a.Release < b.Release
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Object != b.Object {
			return a.Object < b.Object
		}
		return a.Path < b.Path
	})
	return res
}

func suggestFor(o hubclient.DriftedObject, f hubclient.DriftField) suggestion {
	s := suggestion{Release: o.Release, Object: o.Object, Namespace: o.Namespace, Path: f.Path, Clusters: []string{o.Cluster},
		Manager: f.Manager, RespectManagers: respectEntries(f.Manager)}
	if f.Path == reconcile.DeletedPath {
		s.Note = "the whole object was deleted: no rule keeps it deleted; remove it from the release, or turn selfHeal off"
		return s
	}
	ptr, err := reconcile.DriftPointer(f.Path)
	if err != nil {
		s.Note = "this path cannot be written as a JSON pointer: " + err.Error()
		return s
	}
	if len(o.Fields) > 0 && f.Live == "" {
		s.Note = "the field was removed live: an ignore rule keeps live values, and a field absent live is applied as desired; remove the field from the release instead"
		return s
	}
	name := o.Name
	if name == "" {
		// Not detailed by the agent: the kubectl form still has the name, not the kind's case.
		name = o.Object[strings.LastIndexByte(o.Object, '/')+1:]
	}
	s.Ignore = &ignoresuggestion{
		Target: ignoreTarget{Group: o.Group, Kind: o.Kind, Name: name, Namespace: o.Namespace},
		Paths:  []string{ptr},
	}
	return s
}

// respectEntries are the respectManagers entries for a drift's manager ("a, b" when several
// share the value). flotilla's own name is never one.
func respectEntries(manager string) []string {
	var out []string
	for _, m := range strings.Split(manager, ", ") {
		if m != "" && m != reconcile.FieldManager {
			out = append(out, m)
		}
	}
	return out
}

// printsuggestions prints each suggestion as YAML to paste into a Release's spec.
func printsuggestions(w io.Writer, sugg []suggestion) {
	if len(sugg) == 0 {
		fmt.Fprintln(w, "No drift reported.")
		return
	}
	for i, s := range sugg {
		if i > 0 {
			fmt.Fprintln(w)
		}
		where := s.Object
		if s.Namespace != "" {
			where += " in namespace " + s.Namespace
		}
		fmt.Fprintf(w, "# release %s, %s: %s", s.Release, where, s.Path)
		if s.Manager != "" {
			fmt.Fprintf(w, " (written by %s)", s.Manager)
		}
		fmt.Fprintf(w, "\n# clusters: %s\n", strings.Join(s.Clusters, ", "))
		if s.Note != "" {
			fmt.Fprintf(w, "# %s\n", s.Note)
		}
		if s.Ignore != nil {
			fmt.Fprintln(w, "# leave this field alone in this object:")
			fmt.Fprintln(w, "spec:")
			fmt.Fprintln(w, "  ignore:")
			fmt.Fprintf(w, "    - target: {%s}\n", flowMap(s.Ignore.Target))
			fmt.Fprintf(w, "      paths: [%s]\n", quoted(s.Ignore.Paths...))
		}
		if len(s.RespectManagers) > 0 {
			fmt.Fprintf(w, "# or leave every field %s writes alone, in every object of the release", strings.Join(s.RespectManagers, " and "))
			if strings.HasPrefix(s.Manager, "kubectl") {
				fmt.Fprint(w, " (kubectl is people's hands: this gives up self-heal of their edits)")
			}
			fmt.Fprintln(w, ":")
			fmt.Fprintln(w, "spec:")
			fmt.Fprintf(w, "  respectManagers: [%s]\n", quoted(s.RespectManagers...))
		}
	}
}

// flowMap is the target's set fields as a YAML flow mapping, values JSON-quoted (valid YAML
// whatever they hold).
func flowMap(t ignoreTarget) string {
	var parts []string
	for _, kv := range [][2]string{{"group", t.Group}, {"kind", t.Kind}, {"name", t.Name}, {"namespace", t.Namespace}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+": "+quoted(kv[1]))
		}
	}
	return strings.Join(parts, ", ")
}

func quoted(ss ...string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		b, _ := json.Marshal(s)
		out[i] = string(b)
	}
	return strings.Join(out, ", ")
}
