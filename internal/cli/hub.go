package cli

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hub/webhook"
	"github.com/flotilla/flotilla/internal/version"
)

// HubCommand is `flotilla hub`, for the benchmark binary, which runs hubs as its own processes.
func HubCommand(out, errOut io.Writer) *cobra.Command {
	return newHubCommand(streams{out: out, errOut: errOut})
}

func newHubCommand(s streams) *cobra.Command {
	var (
		opts          hub.Options
		metricsAddr   string
		pprofAddr     string
		sinkHeaders   []string
		storeLocation string
		// webhookSecrets are PROVIDER=FILE: the secrets stay out of the process list.
		webhookSecrets []string
		// verifyKeys are NAME=FILE: the public keys OCI sources may name (docs/oci.md).
		verifyKeys []string
		// budget is the --render-* flags (hub_budget.go).
		budget *renderBudgetFlags
	)
	cmd := &cobra.Command{
		Use:   "hub --data-dir D --fleet PATH_OR_GIT_URL",
		Short: "Run the hub: fleet configuration, sources, scheduling, agent and user endpoints",
		Long: `Run the hub. It reads the fleet configuration (Source and Release objects) from a directory
or a Git repository, resolves every source once per poll into a content-addressed artifact,
schedules releases onto the clusters their selectors match, and serves:

  --agent-addr  the agent endpoint (HTTPS, mTLS): join, watch, report, heartbeat, artifacts
  --api-addr    the user API (HTTPS, bearer token) for the CLI and the dashboard

On first start it writes to --data-dir: admin.token (the user API token), ca.crt (the CA that
signs its serving certificate and every agent certificate), hub.db (SQLite), artifacts/ and git/.
Everything survives a restart. With --store postgres://..., the state lives in PostgreSQL instead
and several hubs may share it (docs/ha.md).`,
		Example: `  # A fleet in a local directory
  flotilla hub --data-dir ./hub-data --fleet ./fleet

  # Stream the audit trail to a log collector, with a token read from a file
  flotilla hub --data-dir ./hub-data --fleet ./fleet \
    --audit-sink https://logs.example.com/ingest/flotilla \
    --audit-sink-header 'Authorization: @/etc/flotilla/sink-token'

  # One of several replicas sharing a PostgreSQL database (see docs/ha.md); the password
  # comes from PGPASSWORD (or a PGPASSFILE), not the command line
  flotilla hub --data-dir /var/lib/flotilla --fleet https://git.example.com/platform/fleet.git \
    --store "postgres://flotilla@db.example.com:5432/flotilla?sslmode=verify-full"

  # Poll sources as soon as GitHub says a branch moved (docs/webhooks.md)
  flotilla hub --data-dir ./hub-data --fleet ./fleet \
    --webhook-secret-file github=/etc/flotilla/github-webhook-secret

  # Accept OCI artifacts only when signed with cosign by the release key (docs/oci.md)
  flotilla hub --data-dir ./hub-data --fleet ./fleet --verify-key release=/etc/flotilla/cosign.pub

  # Encrypt Secrets to a recovery key too, kept offline by the platform team (docs/secrets.md)
  flotilla hub --data-dir ./hub-data --fleet ./fleet --recovery-recipient age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p

  # Renders bounded tighter than the defaults (256Mi, 30s, 10000 objects, 64Mi of output);
  # a Project may lower these, never raise them (docs/rendering.md)
  flotilla hub --data-dir ./hub-data --fleet ./fleet --render-memory 128Mi --render-timeout 10s \
    --render-max-objects 5000

  # Agents behind a NAT that drops flows idle for 30s: PING their connections more often
  flotilla hub --data-dir ./hub-data --fleet ./fleet --agent-ping-interval 20s --agent-ping-timeout 10s

  # A fleet in a Git repository, listening on all interfaces
  flotilla hub --data-dir /var/lib/flotilla --fleet https://git.example.com/platform/fleet.git \
    --fleet-branch main --agent-addr 0.0.0.0:8443 --api-addr 0.0.0.0:8444 --host hub.example.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			opts.Logger = loggerFrom(ctx)
			opts.Version = version.Get().Version
			if err := parseSinkHeaders(&opts.AuditSink, sinkHeaders); err != nil {
				return usageError{err}
			}
			secrets, err := readWebhookSecrets(webhookSecrets)
			if err != nil {
				return err
			}
			opts.WebhookSecrets = secrets
			if opts.VerifyKeys, err = parseVerifyKeys(verifyKeys); err != nil {
				return err
			}
			if opts.DataDir == "" || opts.Fleet == "" {
				return usageError{fmt.Errorf("--data-dir and --fleet are required")}
			}
			if err := hub.CheckAgentPing(opts); err != nil {
				return usageError{err}
			}
			if opts.RenderBudget, err = budget.limits(); err != nil {
				return usageError{err}
			}
			st, err := openStore(cmd, opts.DataDir, storeLocation)
			if err != nil {
				return err
			}
			defer func() { _ = st.Close() }() // on the way out: every write was committed
			h, err := hub.New(ctx, opts, st)
			if err != nil {
				return err
			}
			if pprofAddr != "" {
				srv, err := servePprof(ctx, pprofAddr)
				if err != nil {
					return err
				}
				defer func() { _ = srv.Close() }() // on the way out: nothing is left to serve
				fmt.Fprintf(s.errOut, "Profiling:          http://%s/debug/pprof/\n", srv.Addr)
			}
			if metricsAddr != "" {
				srv, err := serveMetrics(ctx, metricsAddr, h.Metrics())
				if err != nil {
					return err
				}
				defer func() { _ = srv.Close() }() // on the way out: nothing is left to serve
				fmt.Fprintf(s.errOut, "Metrics:            http://%s/metrics\n", srv.Addr)
			}
			fmt.Fprintf(s.errOut, "Hub agent endpoint: %s\nHub API:            %s\nAdmin token:        %s\nCA:                 %s\n",
				h.AgentURL(), h.APIURL(), filepath.Join(opts.DataDir, hub.AdminTokenFile), h.CAPath())
			return h.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.DataDir, "data-dir", "", "directory for the hub's state (required)")
	f.StringVar(&storeLocation, "store", "", "where the hub keeps its state: a postgres:// URL, shared by several hub replicas; libpq's PG* variables (PGPASSWORD) fill in what it leaves out (default: SQLite, hub.db in --data-dir)")
	f.StringVar(&opts.Replica.ID, "replica-id", "", "name of this hub replica, unique among those sharing --store (default: host name and a random suffix)")
	f.StringVar(&opts.Replica.SecretsKeyFile, "secrets-key-file", "", "with a postgres:// --store (required): file holding the key, 64 hex digits, that seals the CA key the replicas share in the store; every replica reads the same file, e.g. a mounted Secret made with: openssl rand -hex 32 > secrets.key")
	f.DurationVar(&opts.Replica.LeaseTTL, "lease-ttl", hub.DefaultLeaseTTL, "with a shared --store: how long the replica that polls sources keeps that job without renewing it; another takes over after it dies")
	f.StringVar(&pprofAddr, "pprof-addr", "", "serve Go's profiling endpoints (/debug/pprof/) on this address, e.g. 127.0.0.1:6060 (default: off)")
	f.StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address, e.g. :9090 (default: off)")
	f.StringVar(&opts.Fleet, "fleet", "", "fleet configuration: a directory or a Git URL (required)")
	f.StringVar(&opts.FleetBranch, "fleet-branch", "", "branch of a Git fleet repository (default: its HEAD)")
	f.StringVar(&opts.FleetPath, "fleet-path", "", "directory inside a Git fleet repository (default: its root)")
	f.StringVar(&opts.AgentAddr, "agent-addr", hub.DefaultAgentAddr, "listen address of the agent endpoint")
	f.StringVar(&opts.APIAddr, "api-addr", hub.DefaultAPIAddr, "listen address of the user API")
	f.StringSliceVar(&opts.Hosts, "host", nil, "extra DNS name or IP for the serving certificate (repeatable)")
	f.DurationVar(&opts.FleetInterval, "fleet-interval", hub.DefaultFleetInterval, "how often the fleet configuration is re-read")
	f.DurationVar(&opts.UnreachableAfter, "unreachable-after", hub.DefaultUnreachableAfter, "show a cluster as unreachable (never Ready) when its agent has been silent this long")
	f.DurationVar(&opts.AgentPing.Interval, "agent-ping-interval", 0, "send an HTTP/2 PING on an agent connection silent this long (default 45s, or 3/8 of --unreachable-after if less)")
	f.DurationVar(&opts.AgentPing.Timeout, "agent-ping-timeout", 0, "close an agent connection that has not answered a PING within this; its watch stream ends and its cluster is no longer heard from (default 15s, or 1/8 of --unreachable-after if less)")
	f.Float64Var(&opts.AgentQPS, "agent-qps", hub.DefaultAgentQPS, "requests per second each agent may make, sustained")
	f.IntVar(&opts.AgentBurst, "agent-burst", hub.DefaultAgentBurst, "requests each agent may make at once")
	f.Float64Var(&opts.GlobalQPS, "global-qps", hub.DefaultGlobalQPS, "requests per second the agent endpoint takes from all authenticated agents (joins have --join-qps)")
	f.IntVar(&opts.GlobalBurst, "global-burst", hub.DefaultGlobalBurst, "requests the agent endpoint takes at once from all agents")
	f.IntVar(&opts.MaxArtifactDownloads, "max-artifact-downloads", hub.DefaultMaxArtifactDownloads, "artifact downloads served at once; up to 256 per download served wait their turn (round-robin across clusters, each held up to a minute), beyond that agents are told when to come back")
	f.IntVar(&opts.MaxInflightReports, "max-inflight-reports", hub.DefaultMaxInflightReports, "agent reports decoded and stored at once (bounds the memory a report storm takes)")
	f.StringVar(&opts.AuditSink.URL, "audit-sink", "", "stream every audit record to this http(s) URL by POST, at least once, resuming after a restart (default: off)")
	f.StringArrayVar(&sinkHeaders, "audit-sink-header", nil, "header for the audit sink, 'Name: value' (repeatable), e.g. 'Authorization: Bearer T'; 'Name: @FILE' reads the value from FILE")
	f.StringVar(&opts.AuditSink.Format, "audit-sink-format", audit.SinkFormatJSONL, "audit sink body: jsonl (one record per line) or json (an array)")
	f.DurationVar(&opts.AuditCheckpoint, "audit-checkpoint", hub.DefaultAuditCheckpoint, "how often, at most, an assignment whose checks change nothing gets an apply.verified audit record (a negative value: every check is a full record)")
	// Access: sign-in with OIDC (docs/access.md).
	f.StringVar(&opts.OIDC.Issuer, "oidc-issuer", "", "take ID tokens of this OpenID Connect issuer (https URL) as bearer tokens; `flotilla login` signs in there with the device flow (default: off)")
	f.StringVar(&opts.OIDC.ClientID, "oidc-client-id", "", "the client ID ID tokens must be issued for (the audience), and that `flotilla login` uses")
	f.StringVar(&opts.OIDC.GroupsClaim, "oidc-groups-claim", "groups", "the ID token claim that lists the subject's groups")
	f.StringVar(&opts.OIDC.CAFile, "oidc-ca", "", "PEM file of CA certificates to trust for the issuer, besides the system's")
	f.StringArrayVar(&opts.OIDC.GroupRoles, "oidc-group-role", nil, "map a group to a role: GROUP=ROLE (every project) or GROUP=ROLE:PROJECT[,PROJECT...], e.g. platform-admins=admin, team-a=deployer:team-a (repeatable)")
	// Credentials and transport (docs/credentials.md), and the unauthenticated Join's limit.
	f.StringVar(&opts.CredentialsConfig, "credentials-config", "", "YAML file naming the credentials sources may use (spec.git.credentials), the hosts each may be sent to, and allowCredentialsFiles: the directories a source's credentialsFile may name (default: none)")
	f.StringArrayVar(&opts.AllowFileSources, "allow-file-sources", nil, "directory under which file:// sources may lie (repeatable; default: file sources are refused; the --fleet repository is not bound by it)")
	f.Float64Var(&opts.JoinQPS, "join-qps", hub.DefaultJoinQPS, "failed joins (bad or used token) per second each client address may make, sustained (an IPv6 address counts by its /64); joins with valid tokens are not counted, they wait their turn")
	f.IntVar(&opts.JoinBurst, "join-burst", hub.DefaultJoinBurst, "failed joins each client address may make before it is refused")
	f.Float64Var(&opts.APIQPS, "api-qps", httpapi.DefaultMutationQPS, "changing user API calls (sync, freeze, suspend, rollout actions, plan, tokens) per second each principal may make, sustained; past it a call gets 429 with Retry-After, e.g. --api-qps 5 --api-burst 60 for a busy CI")
	f.IntVar(&opts.APIBurst, "api-burst", httpapi.DefaultMutationBurst, "changing user API calls each principal may make at once before --api-qps applies")
	// Webhooks of Git providers (docs/webhooks.md).
	f.StringArrayVar(&webhookSecrets, "webhook-secret-file", nil, "serve /hooks/PROVIDER (github, gitlab or generic) with the secret read from FILE: PROVIDER=FILE (repeatable; default: no webhooks)")
	// Keys that OCI sources' cosign signatures are verified with (docs/oci.md).
	f.StringArrayVar(&opts.RecoveryRecipients, "recovery-recipient", nil, "also encrypt every Secret `flotilla secret encrypt` writes to this age recipient (age1...), whose holder can decrypt and re-encrypt it when clusters change (repeatable; docs/secrets.md)")
	budget = addRenderBudgetFlags(f)
	f.StringArrayVar(&verifyKeys, "verify-key", nil, "trust a cosign public key for OCI sources that name it in verify.cosign.publicKeys: NAME=FILE, FILE a cosign.pub PEM file (ECDSA P-256, RSA or Ed25519); loaded at start (repeatable; default: none, and sources that ask for verification are refused)")
	cmd.AddCommand(newHubCopyStoreCommand(s))
	cmd.AddCommand(newHubRotateAdminTokenCommand(s)) // hub_admintoken.go
	cmd.AddCommand(newHubImportReportsCommand(s))    // hub_reports.go
	return cmd
}

// parseSinkHeaders reads --audit-sink-header values into o.Header. A value "@FILE" is read
// from FILE (trailing newline trimmed), so a token need not appear in the process list.
func parseSinkHeaders(o *audit.SinkOptions, values []string) error {
	if len(values) > 0 && o.URL == "" {
		return fmt.Errorf("--audit-sink-header needs --audit-sink")
	}
	for _, v := range values {
		name, value, ok := strings.Cut(v, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return fmt.Errorf("--audit-sink-header %q: want 'Name: value'", v)
		}
		if file, ok := strings.CutPrefix(value, "@"); ok {
			data, err := os.ReadFile(file)
			if err != nil {
				return fmt.Errorf("--audit-sink-header %s: %w", name, err)
			}
			value = strings.TrimRight(string(data), "\r\n")
		}
		if o.Header == nil {
			o.Header = http.Header{}
		}
		o.Header.Add(name, value)
	}
	return nil
}

func openStore(cmd *cobra.Command, dataDir, location string) (store.Store, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dataDir, err)
	}
	if err := store.CheckPassword(location, os.Getenv("PGPASSWORD")); err != nil {
		return nil, err
	}
	return store.Open(cmd.Context(), location, dataDir)
}

// readWebhookSecrets reads --webhook-secret-file values, PROVIDER=FILE, into secrets by
// provider. The file holds the secret alone (a trailing newline is trimmed), so that it never
// appears on the command line.
func readWebhookSecrets(values []string) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(values))
	for _, v := range values {
		provider, file, ok := strings.Cut(v, "=")
		if !ok || file == "" {
			return nil, usageError{fmt.Errorf("--webhook-secret-file %q: want PROVIDER=FILE, e.g. github=/etc/flotilla/github-webhook-secret", v)}
		}
		if !slices.Contains(webhook.Providers, webhook.Provider(provider)) {
			return nil, usageError{fmt.Errorf("--webhook-secret-file %q: provider %q: want github, gitlab or generic", v, provider)}
		}
		if _, dup := out[provider]; dup {
			return nil, usageError{fmt.Errorf("--webhook-secret-file: provider %s named twice", provider)}
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--webhook-secret-file %s: %w", provider, err)
		}
		secret := strings.TrimRight(string(data), "\r\n")
		if strings.TrimSpace(secret) == "" {
			return nil, fmt.Errorf("--webhook-secret-file %s: %s is empty", provider, file)
		}
		if len(secret) < 16 {
			return nil, fmt.Errorf("--webhook-secret-file %s: the secret in %s has %d characters: use at least 16 (e.g. openssl rand -hex 32)", provider, file, len(secret))
		}
		out[provider] = secret
	}
	return out, nil
}
