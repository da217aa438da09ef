package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/importer"
)

// exitLeftOut is the exit code of an import that left something out.
const exitLeftOut = 3

func newImportCommand(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Convert Argo CD or Flux objects into a Flotilla fleet configuration",
		Long: `Convert another GitOps tool's objects into Flotilla's fleet configuration: Sources, Releases,
Projects and Windows, one file per kind, that flotilla hub accepts as written.

Everything that is not converted is a line of the report (stderr): the input file, the
object, the field and what to do. Exit codes: 0 everything was converted, 3 something was
left out (read the report), 2 a usage error, 1 a failure (an unreadable input).

See docs/import.md for what maps to what.`,
	}
	cmd.AddCommand(newImportArgoCDCommand(s), newImportFluxCommand(s))
	return cmd
}

// importFlags are the flags both importers share.
type importFlags struct {
	out    string
	report *choice
	adopt  bool
}

func (f *importFlags) bind(cmd *cobra.Command) {
	f.report = newChoice("text", "json")
	cmd.Flags().StringVarP(&f.out, "output-dir", "o", "", "directory to write sources.yaml, releases.yaml, projects.yaml and windows.yaml into (default: print the YAML to stdout)")
	cmd.Flags().Var(f.report, "report", "report format on stderr: text, or json (an array of findings)")
	cmd.Flags().BoolVar(&f.adopt, "adopt", false, "give every release spec.adopt with the old tool's field managers, so that its first apply takes over the live objects (docs/adopt.md)")
}

func newImportArgoCDCommand(s streams) *cobra.Command {
	var (
		flags importFlags
		repos []string
	)
	cmd := &cobra.Command{
		Use:   "argocd FILE|DIR",
		Short: "Convert Argo CD Applications, ApplicationSets, AppProjects and repository Secrets",
		Long: `Convert Argo CD objects read from FILE, or from every *.yaml, *.yml and *.json below DIR
(multi-document files and v1 Lists too), into a Flotilla fleet configuration:

  Application      a Source (repoURL and targetRevision) and a Release
  ApplicationSet   Releases, from list, clusters, Git directory and matrix generators
  AppProject       a Project (default becomes the built-in platform project), and
                   its sync windows Windows
  repository and repo-creds Secrets
                   a credentials name per host in the Sources; no value is ever read

A destination cluster becomes a target selector on the cluster label
argocd.argoproj.io/cluster: NAME (the Argo CD cluster name; in-cluster for
https://kubernetes.default.svc; the host of any other server URL). Put that label on the
Flotilla clusters; the report lists each value.

A Git directory generator with wildcards needs a checkout of its repository to list the
directories: give it with --repo URL=DIR.`,
		Example: `  # Convert an Argo CD repository and write the fleet beside it
  flotilla import argocd ./argocd-apps -o ./fleet

  # Releases that take over what Argo CD applied, once Argo CD no longer syncs them
  flotilla import argocd ./argocd-apps -o ./fleet --adopt

  # Expand Git directory generators against a local checkout
  flotilla import argocd apps.yaml --repo https://github.com/example/addons.git=../addons -o fleet

  # The report as JSON, for a script
  flotilla import argocd ./argocd-apps -o ./fleet --report json 2> report.json`,
		Annotations: argsNamed("one file or directory"),
		Args:        cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rm := map[string]string{}
			for _, r := range repos {
				u, d, ok := strings.Cut(r, "=")
				if !ok || u == "" || d == "" {
					return usageError{fmt.Errorf("--repo %q: want URL=DIR", r)}
				}
				if st, err := os.Stat(d); err != nil || !st.IsDir() {
					return usageError{fmt.Errorf("--repo %q: %s is not a directory", r, d)}
				}
				rm[u] = d
			}
			return runImport(s, flags, args[0], func(objs []*importer.Object) *importer.Result {
				res := importer.ArgoCD(objs, importer.ArgoCDOptions{Repos: rm})
				if flags.adopt {
					res.Adopt(importer.ArgoCDManagers...)
				}
				return res
			})
		},
	}
	flags.bind(cmd)
	cmd.Flags().StringArrayVar(&repos, "repo", nil, "URL=DIR: a local checkout of repository URL, to expand Git directory generators; repeat for more")
	return cmd
}

func newImportFluxCommand(s streams) *cobra.Command {
	var (
		flags   importFlags
		cluster string
	)
	cmd := &cobra.Command{
		Use:   "flux DIR",
		Short: "Convert Flux GitRepositories and Kustomizations",
		Long: `Convert the Flux objects below DIR (or in one file) into a Flotilla fleet configuration:

  GitRepository    a Source (url, ref, interval; secretRef becomes a credentials name)
  Kustomization    a Release (path, prune, interval, timeout, wait, suspend,
                   targetNamespace, dependsOn, postBuild.substitute)

OCIRepository, HelmRepository, Bucket and HelmRelease are not Flotilla kinds yet: the report
says what to do with each. Flux applies to the cluster it runs in, so the releases target the
cluster label fluxcd.io/cluster: NAME, NAME from --cluster (default: the name of DIR).`,
		Example: `  # Convert the production cluster's Flux configuration, adopting what Flux applied
  flotilla import flux ./fleet-infra --cluster production -o ./fleet --adopt

  # See what would be converted, without writing anything
  flotilla import flux ./fleet-infra > /dev/null`,
		Annotations: argsNamed("one directory or file"),
		Args:        cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := cluster
			if name == "" {
				abs, err := filepath.Abs(args[0])
				if err == nil {
					name = strings.TrimSuffix(filepath.Base(abs), filepath.Ext(abs))
				}
			}
			return runImport(s, flags, args[0], func(objs []*importer.Object) *importer.Result {
				res := importer.Flux(objs, importer.FluxOptions{Cluster: name})
				if flags.adopt {
					res.Adopt(importer.FluxManagers...)
				}
				return res
			})
		},
	}
	flags.bind(cmd)
	cmd.Flags().StringVar(&cluster, "cluster", "", "value of the fluxcd.io/cluster label the releases target (default: the name of DIR)")
	return cmd
}

func runImport(s streams, flags importFlags, input string, convert func([]*importer.Object) *importer.Result) error {
	var read importer.Report
	objs, err := importer.ReadInputs(input, importer.DefaultLimits(), &read)
	if err != nil {
		return err
	}
	res := convert(objs)
	res.Report.Findings = append(read.Findings, res.Report.Findings...)
	if err := res.Check(); err != nil {
		return err
	}
	if flags.out != "" {
		if _, err := res.Write(flags.out); err != nil {
			return err
		}
	} else {
		data, err := res.Stream()
		if err != nil {
			return err
		}
		if _, err := s.out.Write(data); err != nil {
			return err
		}
	}
	if flags.report.Value == "json" {
		if err := res.Report.WriteJSON(s.errOut); err != nil {
			return err
		}
	} else {
		if err := res.Report.WriteText(s.errOut); err != nil {
			return err
		}
		where := "stdout"
		if flags.out != "" {
			where = flags.out
		}
		fmt.Fprintf(s.errOut, "imported %d sources, %d releases, %d projects and %d windows into %s; %d left out, %d to do, %d notes\n",
			len(res.Sources), len(res.Releases), len(res.Projects), len(res.Windows), where,
			res.Report.Count(importer.LeftOut), res.Report.Count(importer.Action), res.Report.Count(importer.Note))
	}
	if res.Report.LeftOut() {
		return exitCode(exitLeftOut)
	}
	return nil
}
