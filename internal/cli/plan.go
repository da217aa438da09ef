package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// exitCode ends a command with that status and no further message: `flotilla plan` says
// with 1 that something changes, with 2 that something is wrong.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Bounds on a candidate directory `flotilla plan` uploads; the hub enforces the same.
const (
	planMaxFiles = 1000
	planMaxBytes = 8 << 20
	// commentLimit is GitHub's limit on a comment's characters; the markdown stays under
	// it with room for a bot's own header.
	commentLimit  = 65536
	markdownLimit = 60000
	planMaxRows   = 100
)

func newPlanCommand(s streams) *cobra.Command {
	var (
		hf      hubFlags
		fleet   string
		sources []string
	)
	format := newChoice("text", "markdown", "json")
	cmd := &cobra.Command{
		Use:   "plan --fleet DIR|ref:BRANCH_OR_COMMIT [--source NAME=REF ...] [-o text|markdown|json]",
		Short: "Show what a candidate fleet configuration would change on which clusters",
		Long: `Ask the hub what a candidate fleet configuration would change, before it is merged: the
releases each cluster would gain, lose or run differently (path, revision, variables,
settings), and per release and cluster the objects added, removed or changed, as a unified
diff of their YAML with Secrets' values redacted. Clusters that would get exactly the same
change are grouped, so a thousand clusters collapse to a few diffs. Problems are listed:
an invalid configuration (file and line), releases that cannot be scheduled or break their
project's rules, undefined variables and other render errors; a change that a window,
freeze or suspension holds back now is marked as waiting.

--fleet DIR uploads the configuration files (.yaml, .yml, .json; at most 1000 files and
8 MiB) of a local checkout; --fleet ref:BRANCH or ref:COMMIT has the hub read its own fleet
repository at that branch or full commit. --source NAME=REF reads source NAME at another
branch or full commit, for this plan only (only repositories the fleet in force reads).

The hub computes the plan from what it knows: clusters, labels, and what each runs.
Nothing is applied or stored, and no cluster credentials are needed. Any viewer may plan;
a viewer of some projects sees only their releases (their projects as the hub runs them,
never as the candidate says) on the clusters those projects may target, and may plan only
a candidate that changes nothing outside them, with --source only for sources they may
use: otherwise the hub refuses, naming what ("plan refused: release platform-ingress is
in project platform, outside your projects [team-a]: the candidate changes it").

-o markdown fits a pull-request comment (under GitHub's 65,536 characters, saying what was
cut). Exit status: 0 nothing changes, 1 something changes, 2 errors (in the candidate, or
in calling the hub).`,
		Example: `  # What would the branch I am on change? (from the root of a fleet checkout)
  flotilla plan --fleet .

  # The hub reads its fleet repository at the pull request's branch
  flotilla plan --fleet ref:feature/eu-paths

  # ...with source apps at the same branch, as a pull-request comment
  flotilla plan --fleet ref:feature/eu-paths --source apps=feature/eu-paths -o markdown > plan.md`,
		Args:        cobra.NoArgs,
		Annotations: argsNamed("no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := planRequest(fleet, sources)
			if err != nil {
				return usageError{err}
			}
			c, err := hf.client()
			if err != nil {
				return usageError{err}
			}
			p, err := c.Plan(cmd.Context(), req)
			if err != nil {
				fmt.Fprintln(s.errOut, "Error: plan:", err)
				return exitCode(2)
			}
			switch format.Value {
			case "json":
				err = writeJSON(s.out, p)
			case "markdown":
				_, err = io.WriteString(s.out, planMarkdown(p))
			default:
				_, err = io.WriteString(s.out, planText(p))
			}
			if err != nil {
				return err
			}
			switch {
			case p.Errors:
				return exitCode(2)
			case p.Changes:
				return exitCode(1)
			}
			return nil
		},
	}
	hf.bind(cmd)
	f := cmd.Flags()
	f.StringVar(&fleet, "fleet", "", "the candidate: a local directory, or ref:BRANCH_OR_COMMIT of the hub's fleet repository (required)")
	f.StringArrayVar(&sources, "source", nil, "read source NAME at branch or commit REF for this plan: NAME=REF (repeatable)")
	f.VarP(format, "output", "o", "output format")
	return cmd
}

// planRequest builds the request from the flags, reading a candidate directory.
func planRequest(fleet string, sources []string) (hubclient.PlanRequest, error) {
	var req hubclient.PlanRequest
	for _, s := range sources {
		name, ref, ok := strings.Cut(s, "=")
		if !ok || name == "" || ref == "" {
			return req, fmt.Errorf("--source %q: want NAME=REF, e.g. apps=feature/eu-paths", s)
		}
		if req.Sources == nil {
			req.Sources = map[string]string{}
		}
		if _, dup := req.Sources[name]; dup {
			return req, fmt.Errorf("--source: source %s named twice", name)
		}
		req.Sources[name] = ref
	}
	switch {
	case fleet == "":
		return req, errors.New("--fleet is required: a directory, or ref:BRANCH_OR_COMMIT of the hub's fleet repository")
	case strings.HasPrefix(fleet, "ref:"):
		req.Ref = strings.TrimPrefix(fleet, "ref:")
		if req.Ref == "" {
			return req, errors.New("--fleet ref: needs a branch or a full commit, e.g. ref:main")
		}
		return req, nil
	}
	files, err := readCandidate(fleet)
	if err != nil {
		return req, err
	}
	req.Files = files
	return req, nil
}

// readCandidate reads the configuration files below dir as the hub's LoadDir would
// (.yaml, .yml, .json; hidden files and directories skipped), within the upload bounds.
func readCandidate(dir string) (map[string]string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("--fleet %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("--fleet %s: not a directory (for a ref of the hub's fleet repository, write ref:%s)", dir, dir)
	}
	files := map[string]string{}
	total := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if len(files) == planMaxFiles {
			return fmt.Errorf("more than %d configuration files: a plan uploads at most %d", planMaxFiles, planMaxFiles)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if total += len(data); total > planMaxBytes {
			return fmt.Errorf("the configuration files hold more than %d bytes: a plan uploads at most %d", planMaxBytes, planMaxBytes)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("--fleet %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("--fleet %s: no .yaml, .yml or .json files", dir)
	}
	return files, nil
}

// clustersText names a group's clusters: "c1, c2 and 3 more".
func clustersText(g hubclient.PlanGroup, n int) string {
	names := g.Clusters
	if len(names) > n {
		names = names[:n]
	}
	s := strings.Join(names, ", ")
	if more := g.ClusterCount - len(names); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// objectsText counts a group's objects: "1 added, 2 changed".
func objectsText(g hubclient.PlanGroup) string {
	var n [3]int
	for _, o := range g.Objects {
		switch o.Action {
		case hubclient.ObjectAdded:
			n[0]++
		case hubclient.ObjectRemoved:
			n[1]++
		default:
			n[2]++
		}
	}
	var parts []string
	for i, w := range []string{"added", "removed", "changed"} {
		if n[i] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[i], w))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func objectName(o hubclient.PlanObject) string {
	if o.Namespace != "" {
		return o.Kind + "/" + o.Namespace + "/" + o.Name
	}
	return o.Kind + "/" + o.Name
}

func problemText(p hubclient.PlanProblem) string {
	var where []string
	if p.File != "" {
		f := p.File
		if p.Line > 0 {
			f += fmt.Sprintf(":%d", p.Line)
		}
		where = append(where, f)
	}
	if p.Release != "" {
		where = append(where, "Release/"+p.Release)
	}
	if p.Cluster != "" {
		where = append(where, "on "+p.Cluster)
	}
	s := p.Kind + ": "
	if len(where) > 0 {
		s += strings.Join(where, " ") + ": "
	}
	s += p.Message
	if p.Existing {
		s += " (already so in force)"
	}
	return s
}

func planHeadline(p hubclient.Plan) string {
	scope := ""
	if p.Scoped {
		scope = " (only the releases of the projects you may view)"
	}
	if !p.Changes {
		return fmt.Sprintf("No changes: %d clusters run the same with the candidate%s.", p.Summary.Clusters, scope)
	}
	s := p.Summary
	line := fmt.Sprintf("%d releases change on %d of %d clusters: %d assignments gained, %d lost, %d changed",
		s.Releases, s.ClustersChanged, s.Clusters, s.Gained, s.Lost, s.Changed)
	if s.Waiting > 0 {
		line += fmt.Sprintf("; %d wait for a window, freeze or suspension", s.Waiting)
	}
	return line + scope + "."
}

// planText is the plan for a terminal.
func planText(p hubclient.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan of %s against %s\n%s\n", p.Candidate, orNone(p.Revision), planHeadline(p))
	if len(p.Problems) > 0 {
		fmt.Fprintf(&b, "\nProblems:\n")
		for _, pr := range p.Problems {
			fmt.Fprintf(&b, "  %s\n", problemText(pr))
		}
	}
	for _, g := range p.Groups {
		fmt.Fprintf(&b, "\n%s %s on %d clusters: %s\n", g.Release, g.Change, g.ClusterCount, clustersText(g, len(g.Clusters)))
		for _, l := range g.Assignment {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		if g.Waiting != "" {
			fmt.Fprintf(&b, "  waits: %s\n", g.Waiting)
		}
		if g.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", g.Error)
		}
		for _, o := range g.Objects {
			fmt.Fprintf(&b, "  %s %s\n", o.Action, objectName(o))
			for _, l := range splitKeep(o.Diff) {
				fmt.Fprintf(&b, "    %s\n", l)
			}
		}
	}
	for _, t := range p.Truncated {
		fmt.Fprintf(&b, "\nLeft out by the hub's limits: %s\n", t)
	}
	return b.String()
}

func splitKeep(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// planMarkdown is the plan as a pull-request comment: a summary table, the problems, then
// one collapsible section per group, kept under markdownLimit characters.
func planMarkdown(p hubclient.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Flotilla plan\n\nCandidate `%s` against `%s`.\n\n**%s**\n", mdCode(p.Candidate), mdCode(orNone(p.Revision)), planHeadline(p))
	if len(p.Groups) > 0 {
		b.WriteString("\n| Release | Change | Clusters | Objects | Note |\n|---|---|---|---|---|\n")
		for i, g := range p.Groups {
			if i == planMaxRows {
				fmt.Fprintf(&b, "| … | | | | %d more groups |\n", len(p.Groups)-i)
				break
			}
			note := ""
			switch {
			case g.Error != "":
				note = "❌ render error"
			case g.Waiting != "":
				note = "⏸ waits: " + mdCell(g.Waiting)
			}
			fmt.Fprintf(&b, "| %s | %s | %d: %s | %s | %s |\n", mdCell(g.Release), g.Change, g.ClusterCount,
				mdCell(clustersText(g, 3)), objectsText(g), note)
		}
	}
	if len(p.Problems) > 0 {
		b.WriteString("\n#### Problems\n\n")
		for i, pr := range p.Problems {
			if i == planMaxRows {
				fmt.Fprintf(&b, "- … and %d more\n", len(p.Problems)-i)
				break
			}
			mark := "❌"
			if pr.Existing {
				mark = "ℹ️"
			}
			fmt.Fprintf(&b, "- %s %s\n", mark, mdCell(problemText(pr)))
		}
	}
	var cut []string
	for i, g := range p.Groups {
		sec := groupMarkdown(g)
		if b.Len()+len(sec) > markdownLimit {
			cut = append(cut, fmt.Sprintf("the details of %d of %d groups (the comment limit); run `flotilla plan -o text` for everything", len(p.Groups)-i, len(p.Groups)))
			break
		}
		b.WriteString(sec)
	}
	if t := append(slices.Clone(p.Truncated), cut...); len(t) > 0 {
		b.WriteString("\n**Left out:**\n")
		for _, l := range t {
			fmt.Fprintf(&b, "- %s\n", mdCell(l))
		}
	}
	return b.String()
}

func groupMarkdown(g hubclient.PlanGroup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n<details><summary><b>%s</b> %s on %d clusters: %s</summary>\n\n", htmlText(g.Release), g.Change, g.ClusterCount,
		htmlText(clustersText(g, len(g.Clusters))))
	for _, l := range g.Assignment {
		fmt.Fprintf(&b, "- %s\n", mdCell(l))
	}
	if g.Waiting != "" {
		fmt.Fprintf(&b, "- ⏸ waits: %s\n", mdCell(g.Waiting))
	}
	if g.Error != "" {
		fmt.Fprintf(&b, "- ❌ %s\n", mdCell(g.Error))
	}
	for _, o := range g.Objects {
		fmt.Fprintf(&b, "\n%s `%s`\n", o.Action, mdCode(objectName(o)))
		if o.Diff != "" {
			fence := "```"
			for strings.Contains(o.Diff, fence) {
				fence += "`"
			}
			fmt.Fprintf(&b, "\n%sdiff\n%s%s\n", fence, o.Diff, fence)
		}
	}
	b.WriteString("\n</details>\n")
	return b.String()
}

// mdCell keeps text on one table line and out of markdown and HTML syntax.
func mdCell(s string) string {
	return strings.NewReplacer("\n", " ", "|", `\|`, "<", "&lt;").Replace(s)
}

func mdCode(s string) string { return strings.ReplaceAll(s, "`", "'") }

func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
