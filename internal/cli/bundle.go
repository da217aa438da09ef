package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func newBundleCommand(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Carry a cluster's desired state to an air-gapped site",
		Long: `Offline bundles carry a cluster's desired state and every artifact it needs to an agent that
cannot reach the hub, signed by the hub's CA (docs/airgap.md).`,
	}
	cmd.AddCommand(newBundleExportCommand(s))
	return cmd
}

func newBundleExportCommand(s streams) *cobra.Command {
	var (
		hf      hubFlags
		cluster string
		output  string
	)
	cmd := &cobra.Command{
		Use:   "export --cluster C [-o FILE]",
		Short: "Write a cluster's signed bundle: its desired state and artifacts",
		Long: `Write one file holding the cluster's desired state as the hub would send it to its agent
(with its generation), every artifact it needs, the highest report seq the hub has ingested from
the cluster, and a signature by the hub's CA over all of it. Carry it to the site and run
"flotilla agent import FILE --state-dir S" there: the agent checks the signature against the CA
it pinned when it joined and takes the desired state on as if the hub had sent it.

Needs a deployer of every project (or an admin); audited as bundle.exported. The default file
is CLUSTER-GENERATION.bundle in the current directory; "-o -" writes to standard output. Progress
goes to standard error.`,
		Example: `  flotilla bundle export --cluster edge-7
  flotilla bundle export --cluster edge-7 -o /media/usb/edge-7.bundle
  flotilla bundle export --cluster edge-7 -o - | ssh jump 'cat > edge-7.bundle'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cluster == "" {
				return usageError{fmt.Errorf("--cluster is required")}
			}
			c, err := hf.client()
			if err != nil {
				return err
			}
			var (
				w    = s.out
				file *os.File
				path = output
			)
			if output != "-" {
				// The file gets its name only once the bundle is whole: a cut transfer leaves no
				// file that looks complete.
				dir := "."
				if output != "" {
					dir = filepath.Dir(output)
				}
				if file, err = os.CreateTemp(dir, ".bundle-*.part"); err != nil {
					return err
				}
				defer func() {
					_ = file.Close() // closed and checked on success; this covers the early returns
					os.Remove(file.Name())
				}()
				w = file
			}
			p := &progress{w: s.errOut, what: "bundle of cluster " + cluster, every: 64 << 20}
			pw := &progressWriter{w: w, p: p}
			var gen int64
			err = c.ExportBundle(cmd.Context(), cluster, pw, func(bi hubclient.BundleInfo) {
				gen = bi.Generation
				p.total = bi.Bytes
			})
			if err != nil {
				return err
			}
			if file == nil {
				p.done()
				return nil
			}
			if err := file.Close(); err != nil {
				return err
			}
			if path == "" {
				path = fmt.Sprintf("%s-%d.bundle", cluster, gen)
			}
			if err := os.Rename(file.Name(), path); err != nil {
				return err
			}
			p.done()
			fmt.Fprintf(s.errOut, "Wrote %s: cluster %s, desired state generation %d, %s.\nAt the site: flotilla agent import %s --state-dir STATE_DIR\n",
				path, cluster, gen, byteSize(pw.n), filepath.Base(path))
			return nil
		},
	}
	hf.bind(cmd)
	cmd.Flags().StringVar(&cluster, "cluster", "", "the cluster whose bundle to write (required)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "file to write (default CLUSTER-GENERATION.bundle; - for standard output)")
	return cmd
}

// progress reports a long transfer on standard error every `every` bytes.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	what  string
	total int64 // -1 or 0: unknown
	every int64
	next  int64
	n     int64
	start time.Time
	shown bool
}

func (p *progress) add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.start.IsZero() {
		p.start = time.Now()
	}
	p.n += int64(n)
	if p.n < p.next+p.every {
		return
	}
	p.next = p.n - p.n%p.every
	p.shown = true
	if p.total > 0 {
		fmt.Fprintf(p.w, "%s: %s of %s (%d%%)\n", p.what, byteSize(p.n), byteSize(p.total), min(100, p.n*100/p.total))
		return
	}
	fmt.Fprintf(p.w, "%s: %s\n", p.what, byteSize(p.n))
}

// done closes a progress report that said anything.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprintf(p.w, "%s: %s in %s\n", p.what, byteSize(p.n), time.Since(p.start).Round(time.Second))
	}
}

type progressWriter struct {
	w io.Writer
	p *progress
	n int64
}

func (pw *progressWriter) Write(b []byte) (int, error) {
	n, err := pw.w.Write(b)
	pw.n += int64(n)
	pw.p.add(n)
	return n, err
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
