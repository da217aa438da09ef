package cli

import (
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/image"
	"github.com/flotilla/flotilla/internal/version"
)

func newImageCommand(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build flotilla's container image and push it to a registry, without Docker",
		Long: `Build the container image that deploy/ and docs/install.md run: one layer with a static
flotilla binary as /flotilla, a non-root user (65532:65532), /tmp and a CA bundle; no shell.`,
	}
	cmd.AddCommand(newImageBuildCommand(s), newImagePushCommand(s))
	return cmd
}

// imageResult is what build and push print with -o json.
type imageResult struct {
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	Revision  string `json:"revision"`
	Path      string `json:"path,omitempty"`
}

func newImageBuildCommand(s streams) *cobra.Command {
	var out, binary, tag, caBundle string
	format := newChoice(image.FormatLayout, image.FormatTarball)
	output := newChoice("text", "json")
	cmd := &cobra.Command{
		Use:   "build --dest DIR|FILE",
		Short: "Build the image from a static flotilla binary into an OCI layout directory or a tarball",
		Long: `Build the image from a statically linked flotilla binary (CGO_ENABLED=0, built inside the Git
checkout so that it carries its commit). The image's creation time is the commit's time, so
two builds of one commit give the same digest. The binary is /PROGRAM in the image and its
entrypoint, PROGRAM being its main package: flotilla (the CLI and hub) or flotilla-agent.
` + "`make image`" + ` builds both binaries statically and runs this for each.`,
		Example: `  # What make image runs: this binary, into an OCI layout directory
  flotilla image build --dest out/image

  # The agent's image (make image builds both): /flotilla-agent, ghcr.io/flotilla/flotilla-agent
  flotilla image build --binary bin/flotilla-agent --dest out/image-agent

  # Another binary, as a tarball for docker load or podman load
  flotilla image build --binary bin/flotilla --format tarball --dest out/flotilla.tar

  # No CA bundle (agents trust only the hub's pinned CA)
  flotilla image build --dest out/image --ca-bundle ""`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if out == "" {
				return usageError{fmt.Errorf("flotilla image build: --dest is required: the directory (oci-layout) or file (tarball) to write")}
			}
			ver := version.Version
			if binary == "" {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("find this flotilla binary: %w (name one with --binary)", err)
				}
				binary = exe
			}
			// A --tag given is checked before the binary is read; the default needs its program.
			ref, err := parseImageTag(tag, "", ver)
			if tag != "" && err != nil {
				return err
			}
			bin, err := image.Inspect(binary)
			if err != nil {
				return err
			}
			if tag == "" {
				if ref, err = parseImageTag("", image.RepositoryFor(bin.Program), ver); err != nil {
					return err
				}
			}
			if bin.Modified {
				loggerFrom(c.Context()).Warn("the binary was built from a checkout with uncommitted changes: the image is not reproducible from its commit alone", "revision", bin.Revision)
			}
			img, err := image.Build(bin, image.Options{Version: ref.TagStr(), CABundle: caBundle})
			if err != nil {
				return err
			}
			if err := image.Write(out, format.Value, ref, img); err != nil {
				return err
			}
			d, err := img.Digest()
			if err != nil {
				return fmt.Errorf("image digest: %w", err)
			}
			res := imageResult{Reference: ref.Name(), Digest: d.String(), Revision: bin.Revision, Path: out}
			if output.Value == "json" {
				return writeJSON(s.out, res)
			}
			_, err = fmt.Fprintf(s.out, "built %s (%s) from commit %s into %s\n", res.Reference, res.Digest, res.Revision, out)
			return err
		},
	}
	cmd.Flags().StringVar(&out, "dest", "", "where to write the image: a directory for oci-layout, a file for tarball")
	cmd.Flags().Var(format, "format", "oci-layout (a directory) or tarball (docker-archive)")
	cmd.Flags().StringVar(&binary, "binary", "", "the static flotilla binary to put in (default: this one)")
	cmd.Flags().StringVar(&tag, "tag", "", "the image's name (default ghcr.io/flotilla/PROGRAM:VERSION, PROGRAM being the binary's, flotilla or flotilla-agent, and VERSION this binary's); its tag is also the image's version label")
	cmd.Flags().StringVar(&caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", `PEM CA bundle copied to /etc/ssl/certs/ca-certificates.crt ("" for none)`)
	cmd.Flags().VarP(output, "output", "o", "output format: text or json")
	return cmd
}

func newImagePushCommand(s streams) *cobra.Command {
	output := newChoice("text", "json")
	cmd := &cobra.Command{
		Use:   "push SOURCE REFERENCE",
		Short: "Push an image built by flotilla image build to a registry",
		Long: `Push the image in SOURCE (the OCI layout directory or tarball flotilla image build wrote) to
REFERENCE, with the credentials of docker login or podman login. Prints the digest to deploy.
A registry with a private CA: point SSL_CERT_FILE at it.`,
		Example: `  flotilla image push out/image ghcr.io/flotilla/flotilla:v0.1.0
  flotilla image push out/flotilla.tar registry.example.com/platform/flotilla:v0.1.0 -o json`,
		Args:        cobra.ExactArgs(2),
		Annotations: argsNamed("an image directory or tarball and a registry reference"),
		RunE: func(c *cobra.Command, args []string) error {
			ref, err := name.ParseReference(args[1])
			if err != nil {
				return usageError{fmt.Errorf("flotilla image push: reference %q: %w", args[1], err)}
			}
			img, err := image.Load(args[0])
			if err != nil {
				return err
			}
			dig, err := image.Push(c.Context(), img, ref, nil)
			if err != nil {
				return err
			}
			res := imageResult{Reference: ref.Name(), Digest: dig.DigestStr()}
			if cf, err := img.ConfigFile(); err == nil {
				res.Revision = cf.Config.Labels["org.opencontainers.image.revision"]
			}
			if output.Value == "json" {
				return writeJSON(s.out, res)
			}
			_, err = fmt.Fprintln(s.out, dig.Name())
			return err
		},
	}
	cmd.Flags().VarP(output, "output", "o", "output format: text or json")
	return cmd
}

// parseImageTag reads --tag, defaulting to the deploy manifests' repository of the binary's
// program (ghcr.io/flotilla/flotilla, ghcr.io/flotilla/flotilla-agent) at version.
func parseImageTag(tag, repository, version string) (name.Tag, error) {
	if tag == "" {
		tag = repository + ":" + version
	}
	ref, err := name.NewTag(tag, name.StrictValidation)
	if err != nil {
		return name.Tag{}, usageError{fmt.Errorf("flotilla image build: --tag %q: want REPOSITORY:TAG: %w", tag, err)}
	}
	return ref, nil
}
