package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/render"
	"github.com/flotilla/flotilla/internal/secrets"
)

func newSecretCommand(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret",
		Short: "Encrypt Secrets for the clusters that may read them (SOPS with each cluster's age key)",
		Long: `Secrets go into Git encrypted with SOPS, for the age keys of the clusters that need them;
each cluster's agent generated its key when it joined and decrypts with it, just before it
applies. The hub, artifacts, reports and flotilla render never hold the plaintext. See
docs/secrets.md.`,
		Example: `  flotilla secret encrypt --selector env=prod --in-place secrets/db.yaml`,
		Args:    cobra.NoArgs,
	}
	cmd.AddCommand(newSecretEncryptCommand(s))
	return cmd
}

const secretEncryptLong = `Encrypt a Secret manifest with SOPS for exactly the clusters the selectors pick (any of them:
--selector env=prod --selector env=staging picks both), plus the age recipients named with
--recipient, plus the hub's recovery recipients (flotilla hub --recovery-recipient). The
values under data and stringData are encrypted; apiVersion, kind and metadata stay readable.
The result is what "sops --encrypt --age ... --encrypted-regex '^(data|stringData)$'" writes:
sops decrypts it, and the agent decrypts files the sops CLI wrote.

Each cluster's agent holds one age key per project that delivers to it: a release decrypts
only with its own project's key, so a file encrypted for one project does not decrypt in
another project's release, even copied byte for byte. --project P (default platform, the
clusters' own keys) encrypts for project P's keys on the selected clusters; an agent makes
P's key when it is first assigned a release of P.

The hub says which recipient each selected cluster has. A selected cluster without one (its
agent has not joined yet, or no release of the project is assigned there yet) could not
decrypt the file: encrypt is refused, naming it, unless --allow-missing. A release delivers
such files with spec.decryption.provider: sops.

FILE is one Secret per file (- reads standard input). The output goes to standard output,
to -o FILE, or back into FILE with --in-place; which clusters it was encrypted for goes to
standard error.`

func newSecretEncryptCommand(s streams) *cobra.Command {
	var (
		hf           hubFlags
		selectors    []string
		recipients   []string
		inPlace      bool
		outFile      string
		allowMissing bool
		project      string
	)
	cmd := &cobra.Command{
		Use:   "encrypt --selector LABELS [--project P] [--recipient age1...] [--in-place | -o FILE] FILE",
		Short: "Encrypt a Secret manifest with SOPS for the selected clusters' age keys",
		Long:  secretEncryptLong,
		Example: `  # Encrypt for every production cluster, in place, then commit it
  flotilla secret encrypt --selector env=prod --in-place secrets/db.yaml

  # For the releases of project team-a on the production clusters (their team-a keys)
  flotilla secret encrypt --project team-a --selector env=prod -o team-a/secrets/db.yaml db.yaml

  # Production in the EU and the staging clusters, plus a team's own key
  flotilla secret encrypt --selector env=prod,region=eu --selector env=staging \
    --recipient age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p \
    -o secrets/db.enc.yaml secrets/db.yaml

  # Re-encrypt after clusters joined, with the recovery key (docs/secrets.md)
  SOPS_AGE_KEY_FILE=recovery.txt sops --decrypt secrets/db.yaml \
    | flotilla secret encrypt --selector env=prod -o secrets/db.yaml -`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("secret encrypt takes one argument, the Secret manifest (- for standard input); got %d", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			in := args[0]
			if len(selectors) == 0 && len(recipients) == 0 {
				return usageError{errors.New("say whom to encrypt for: --selector LABELS (clusters) and/or --recipient age1... (an age public key)")}
			}
			if inPlace && outFile != "" {
				return usageError{errors.New("--in-place and -o both say where to write: give one")}
			}
			if inPlace && in == "-" {
				return usageError{errors.New("--in-place needs a FILE, not standard input")}
			}
			for _, r := range recipients {
				if err := secrets.CheckRecipient(r); err != nil {
					return usageError{fmt.Errorf("--recipient: %w", err)}
				}
			}
			data, err := readInput(in, secrets.MaxDocumentBytes)
			if err != nil {
				return err
			}
			all := append([]string(nil), recipients...)
			var clusters []string
			var recovery []string
			if len(selectors) > 0 {
				c, err := hf.client()
				if err != nil {
					return err
				}
				keys, err := c.AgeKeys(cmd.Context(), selectors, project)
				if err != nil {
					return fmt.Errorf("age keys of the selected clusters: %w", err)
				}
				if keys.Project != project {
					// A hub older than keys per project answers with the clusters' own keys.
					return fmt.Errorf("--project %s: the hub answered with the keys of project %q: it is older than keys per project", project, keys.Project)
				}
				if len(keys.Clusters) == 0 && len(keys.Missing) == 0 {
					return fmt.Errorf("no cluster matches --selector %s", strings.Join(selectors, " --selector "))
				}
				if len(keys.Missing) > 0 && !allowMissing {
					if project != v1alpha1.ProjectPlatform {
						return fmt.Errorf("%s: no age key of project %s yet (no release of %s has been assigned there, or the agent is older than keys per project), so it could not decrypt: encrypt again once a release of %s is assigned there, or pass --allow-missing", plural(keys.Missing, "cluster", "clusters"), project, project, project)
					}
					return fmt.Errorf("%s: no age key yet (the agent has not joined, or is older than age keys), so it could not decrypt: encrypt again once it has joined, or pass --allow-missing", plural(keys.Missing, "cluster", "clusters"))
				}
				for _, k := range keys.Clusters {
					clusters = append(clusters, k.Name)
					all = append(all, k.AgeRecipient)
				}
				recovery = keys.RecoveryRecipients
				all = append(all, recovery...)
				if len(keys.Missing) > 0 {
					fmt.Fprintf(s.errOut, "Warning: %s not included: no age key yet.\n", plural(keys.Missing, "cluster", "clusters"))
				}
			}
			enc, err := secrets.Encrypt(data, formatOf(in), all, time.Now())
			if err != nil {
				return fmt.Errorf("%s: %w", in, err)
			}
			switch {
			case inPlace:
				err = writeFileKeepMode(in, enc)
			case outFile != "":
				err = writeFileKeepMode(outFile, enc)
			default:
				_, err = s.out.Write(enc)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(s.errOut, "Encrypted %s for %s", displayName(in), plural(clusters, "cluster", "clusters"))
			if project != v1alpha1.ProjectPlatform && len(selectors) > 0 {
				fmt.Fprintf(s.errOut, " (project %s's keys)", project)
			}
			if len(recipients) > 0 {
				fmt.Fprintf(s.errOut, ", %d recipient(s) named with --recipient", len(recipients))
			}
			fmt.Fprintf(s.errOut, " and %d recovery recipient(s).\n", len(recovery))
			return nil
		},
	}
	hf.bind(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&selectors, "selector", nil, "encrypt for the clusters with these labels: key=value[,key=value...] (repeatable: clusters matching any)")
	f.StringArrayVar(&recipients, "recipient", nil, "also encrypt for this age recipient, age1... (repeatable)")
	f.BoolVar(&inPlace, "in-place", false, "write the result back into FILE")
	f.StringVarP(&outFile, "output", "o", "", "write the result to this file (default: standard output)")
	f.StringVar(&project, "project", v1alpha1.ProjectPlatform, "encrypt for this project's keys on the selected clusters: only its releases can decrypt the file")
	f.BoolVar(&allowMissing, "allow-missing", false, "encrypt even when selected clusters have no age key yet (they will not be able to decrypt)")
	return cmd
}

// plural is "cluster eu-1" or "2 clusters (eu-1, eu-2)"; "0 clusters" for none.
func plural(names []string, one, many string) string {
	switch len(names) {
	case 0:
		return "0 " + many
	case 1:
		return one + " " + names[0]
	}
	return fmt.Sprintf("%d %s (%s)", len(names), many, strings.Join(names, ", "))
}

func displayName(in string) string {
	if in == "-" {
		return "standard input"
	}
	return in
}

// formatOf is SOPS's format for a file name: json for .json, yaml otherwise (standard input
// too).
func formatOf(name string) string {
	if strings.EqualFold(filepath.Ext(name), ".json") {
		return "json"
	}
	return "yaml"
}

// readInput reads FILE or standard input ("-"), at most limit bytes.
func readInput(name string, limit int64) ([]byte, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }() // read only: Close has nothing to flush
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", displayName(name), err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: over %d bytes", displayName(name), limit)
	}
	return data, nil
}

// writeFileKeepMode replaces path atomically, keeping its mode (0600 for a new file: it is
// ciphertext, but its metadata may still be private).
func writeFileKeepMode(path string, data []byte) error {
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		_ = f.Close() // already failing: the first error is the one returned
		return err
	}
	if err := f.Chmod(mode); err != nil {
		_ = f.Close() // already failing: the first error is the one returned
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// decryptFlags are flotilla render's --decrypt and --key-file.
type decryptFlags struct {
	decrypt bool
	keyFile string
}

func (d *decryptFlags) bind(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&d.decrypt, "decrypt", false, "decrypt SOPS-encrypted documents with the age key in --key-file (default: print them as ciphertext)")
	cmd.Flags().StringVar(&d.keyFile, "key-file", "", "age identity file (AGE-SECRET-KEY-1..., as age-keygen writes it: a recovery key, or an agent's age.key) for --decrypt")
}

// options are the render options for SOPS documents: ciphertext kept unless --decrypt.
func (d *decryptFlags) options() (dec render.Decryptor, keep bool, err error) {
	if !d.decrypt {
		if d.keyFile != "" {
			return nil, false, usageError{errors.New("--key-file is only read with --decrypt")}
		}
		return nil, true, nil
	}
	if d.keyFile == "" {
		return nil, false, usageError{errors.New("--decrypt needs --key-file FILE, an age identity")}
	}
	data, err := readInput(d.keyFile, 64<<10)
	if err != nil {
		return nil, false, err
	}
	k, err := secrets.ParseIdentity(data)
	if err != nil {
		return nil, false, fmt.Errorf("--key-file %s: %w", d.keyFile, err)
	}
	dd, err := secrets.NewDecryptor("the key in "+d.keyFile, k.Identity)
	if err != nil {
		return nil, false, err
	}
	return dd, false, nil
}
