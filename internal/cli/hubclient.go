package cli

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// hubFlags are the connection flags of every client verb: flag, else environment, else the
// config file ($FLOTILLA_CONFIG, default ~/.config/flotilla/config.yaml).
type hubFlags struct {
	hub, token, ca string
	// insecure accepts an http:// hub URL.
	insecure bool
}

func (f *hubFlags) bind(cmd *cobra.Command) {
	p := cmd.PersistentFlags()
	p.StringVar(&f.hub, "hub", "", "hub API URL https://HOST:PORT (env FLOTILLA_HUB)")
	p.StringVar(&f.token, "token", "", "hub API token (env FLOTILLA_TOKEN)")
	p.StringVar(&f.ca, "ca", "", "hub CA certificate file (env FLOTILLA_CA)")
	p.BoolVar(&f.insecure, "insecure", false, "accept an http:// hub URL, over which the token travels in clear text (default: refused)")
}

// configFile is the CLI's config file format.
type configFile struct {
	Hub   string `json:"hub"`
	Token string `json:"token"`
	CA    string `json:"ca"`
}

func (f *hubFlags) client() (*hubclient.Client, error) {
	cfg := hubclient.Config{Hub: f.hub, Token: f.token, CAFile: f.ca}
	fromEnv := func(dst *string, env string) {
		if *dst == "" {
			*dst = os.Getenv(env)
		}
	}
	fromEnv(&cfg.Hub, "FLOTILLA_HUB")
	fromEnv(&cfg.Token, "FLOTILLA_TOKEN")
	fromEnv(&cfg.CAFile, "FLOTILLA_CA")
	if cfg.Hub == "" || cfg.Token == "" || cfg.CAFile == "" {
		path := os.Getenv("FLOTILLA_CONFIG")
		if path == "" {
			if home, err := os.UserHomeDir(); err == nil {
				path = filepath.Join(home, ".config", "flotilla", "config.yaml")
			}
		}
		if data, err := os.ReadFile(path); err == nil {
			var fc configFile
			if err := yaml.UnmarshalStrict(data, &fc); err != nil {
				return nil, fmt.Errorf("config file %s: %w", path, err)
			}
			for _, kv := range []struct {
				dst *string
				v   string
			}{{&cfg.Hub, fc.Hub}, {&cfg.Token, fc.Token}, {&cfg.CAFile, fc.CA}} {
				if *kv.dst == "" {
					*kv.dst = kv.v
				}
			}
		}
	}
	if u, err := url.Parse(cfg.Hub); err == nil && strings.EqualFold(u.Scheme, "http") && !f.insecure {
		return nil, usageError{fmt.Errorf("hub URL %s is plain HTTP: the token would travel in clear text; use https://, or pass --insecure to accept it", redactURL(u))}
	}
	c, err := hubclient.NewClient(cfg)
	if errors.Is(err, hubclient.ErrNoHub) || errors.Is(err, hubclient.ErrNoToken) {
		return nil, usageError{err}
	}
	return c, err
}

// redactURL hides a password in u, for messages.
func redactURL(u *url.URL) string { return u.Redacted() }

func labelString(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	if len(parts) == 0 {
		return "<none>"
	}
	return strings.Join(parts, ",")
}
