package cli

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func newLoginCommand(s streams) *cobra.Command {
	var (
		hf         hubFlags
		printToken bool
		oidcCA     string
	)
	cmd := &cobra.Command{
		Use:   "login [--hub URL] [--ca FILE] [--token T]",
		Short: "Sign in to a hub (OIDC device flow, or a token) and save the token in the config file",
		Long: `Sign in to a hub. Without --token, the hub names its OpenID Connect issuer and client, and
login runs the device flow there: it prints a URL and a code to enter in a browser, waits for
the sign-in, and takes the ID token the issuer returns. With --token (a named token, or an
ID token got otherwise), it checks that the hub takes it.

The hub, CA and token are saved in the config file ($FLOTILLA_CONFIG, default
~/.config/flotilla/config.yaml), which every other verb reads. ID tokens expire (often after an
hour): sign in again then.`,
		Example: `  flotilla login --hub https://hub.example.com:8444 --ca ca.crt
  flotilla login --token "$CI_TOKEN"
  export FLOTILLA_TOKEN=$(flotilla login --print-token)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			path := configPath()
			fc, err := readConfig(path)
			if err != nil {
				return err
			}
			cfg := hubclient.Config{Hub: firstOf(hf.hub, os.Getenv("FLOTILLA_HUB"), fc.Hub), CAFile: firstOf(hf.ca, os.Getenv("FLOTILLA_CA"), fc.CA), Token: hf.token}
			if cfg.Hub == "" {
				return usageError{hubclient.ErrNoHub}
			}
			if cfg.Token == "" {
				info, err := hubclient.GetLoginInfo(ctx, cfg)
				if err != nil {
					return err
				}
				if info.OIDC == nil {
					return errors.New("this hub has no OIDC sign-in (--oidc-issuer): sign in with --token, a token from `flotilla token create`")
				}
				var hc *http.Client
				if oidcCA != "" {
					if hc, err = hubclient.HTTPClientTrusting(oidcCA); err != nil {
						return err
					}
				}
				cfg.Token, err = hubclient.DeviceLogin(ctx, *info.OIDC, hc, func(d hubclient.DeviceCode) {
					if d.URIComplete != "" {
						fmt.Fprintf(s.errOut, "To sign in, open %s\n(or open %s and enter the code %s)\n", d.URIComplete, d.URI, d.UserCode)
					} else {
						fmt.Fprintf(s.errOut, "To sign in, open %s and enter the code %s\n", d.URI, d.UserCode)
					}
					fmt.Fprintln(s.errOut, "Waiting for the sign-in...")
				})
				if err != nil {
					return err
				}
			}
			c, err := hubclient.NewClient(cfg)
			if err != nil {
				return err
			}
			who, err := c.WhoAmI(ctx)
			if err != nil {
				return fmt.Errorf("the hub refused the token: %w", err)
			}
			if printToken {
				fmt.Fprintln(s.out, cfg.Token)
			} else {
				fc.Hub, fc.CA, fc.Token = cfg.Hub, cfg.CAFile, cfg.Token
				if err := writeConfig(path, fc); err != nil {
					return err
				}
				fmt.Fprintf(s.errOut, "Saved to %s.\n", path)
			}
			roles := ""
			for i, g := range who.Grants {
				if i > 0 {
					roles += "; "
				}
				roles += g.Role
				if len(g.Projects) > 0 {
					roles += fmt.Sprintf(" in %v", g.Projects)
				}
			}
			fmt.Fprintf(s.errOut, "Signed in to %s as %s (%s).\n", cfg.Hub, who.Actor, roles)
			return nil
		},
	}
	// Local flags (not hubFlags.bind's persistent ones): login has no subcommands.
	cmd.Flags().StringVar(&hf.hub, "hub", "", "hub API URL https://HOST:PORT (env FLOTILLA_HUB, else the config file)")
	cmd.Flags().StringVar(&hf.token, "token", "", "a token to check and save instead of signing in with OIDC")
	cmd.Flags().StringVar(&hf.ca, "ca", "", "hub CA certificate file (env FLOTILLA_CA, else the config file)")
	cmd.Flags().StringVar(&oidcCA, "oidc-ca", "", "PEM file of CA certificates to trust for the OIDC issuer, besides the system's")
	cmd.Flags().BoolVar(&printToken, "print-token", false, "print the token to stdout instead of saving it in the config file")
	return cmd
}

// configPath is the CLI's config file: $FLOTILLA_CONFIG, else ~/.config/flotilla/config.yaml.
func configPath() string {
	if p := os.Getenv("FLOTILLA_CONFIG"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".flotilla", "config.yaml")
	}
	return filepath.Join(home, ".config", "flotilla", "config.yaml")
}

func readConfig(path string) (configFile, error) {
	var fc configFile
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fc, nil
	}
	if err != nil {
		return fc, err
	}
	if err := yaml.UnmarshalStrict(data, &fc); err != nil {
		return fc, fmt.Errorf("config file %s: %w", path, err)
	}
	return fc, nil
}

// writeConfig writes fc to path, readable by its owner only: it holds a token.
func writeConfig(path string, fc configFile) error {
	data, err := yaml.Marshal(fc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
