// Package clikit holds what the flotilla and flotilla-agent command lines share: where a
// command writes, usage errors and exit codes, the -o flag's words, output as JSON, YAML or a
// table, the logger the root flags set up, the metrics endpoint and the join token file.
// It is small on purpose: the agent's binary links it, and must not link the hub's commands.
package clikit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/internal/pki"
)

// Streams are where a command writes: results to Out, progress, logs and errors to ErrOut, so
// that `flotilla ... -o json | jq` sees only results.
type Streams struct {
	Out, ErrOut io.Writer
}

// UsageError marks an error in how a command was called: exit code 2, like flag errors.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usage marks the error as one in how a command was called (see IsUsage).
func (UsageError) Usage() {}

// ExitCode is an error that says only which code to exit with: the command printed what it
// had to.
type ExitCode int

func (c ExitCode) Error() string { return fmt.Sprintf("exit code %d", int(c)) }

// IsUsage reports whether err is a usage error: one with a Usage method (UsageError), or
// cobra's unknown command.
func IsUsage(err error) bool {
	var ue interface{ Usage() }
	return errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command ")
}

// Choice is a flag value limited to a few words, such as -o text|json.
type Choice struct {
	Value   string
	allowed []string
}

// NewChoice returns a choice set to the first allowed word.
func NewChoice(allowed ...string) *Choice { return &Choice{Value: allowed[0], allowed: allowed} }

func (c *Choice) String() string { return c.Value }
func (c *Choice) Type() string   { return strings.Join(c.allowed, "|") }
func (c *Choice) Set(v string) error {
	if !slices.Contains(c.allowed, v) {
		return fmt.Errorf("want %s, got %q", strings.Join(c.allowed, " or "), v)
	}
	c.Value = v
	return nil
}

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// PrintOut writes v in format: "json", "yaml", or else as a table (via table).
func PrintOut(w io.Writer, format string, v any, table func(io.Writer)) error {
	switch format {
	case "json":
		return WriteJSON(w, v)
	case "yaml":
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		y, err := yaml.JSONToYAML(data)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	default:
		table(w)
		return nil
	}
}

// NewLogger is the logger of the --log-level and --log-format flags.
func NewLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
}

type loggerKey struct{}

// WithLogger returns ctx carrying l, for LoggerFrom.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// LoggerFrom returns the logger the root command's flags set up, or one that discards.
func LoggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// AddLogFlags adds --log-level and --log-format to root, and sets the logger they choose on
// every command's context before it runs.
func AddLogFlags(root *cobra.Command, errOut io.Writer) {
	var level, format string
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		logger, err := NewLogger(errOut, level, format)
		if err != nil {
			return UsageError{Err: err}
		}
		cmd.SetContext(WithLogger(cmd.Context(), logger))
		return nil
	}
	root.PersistentFlags().StringVar(&level, "log-level", "info", "log level: debug, info, warn or error")
	root.PersistentFlags().StringVar(&format, "log-format", "text", "log format: text or json")
}

// ServeMetrics serves handler at /metrics on addr until ctx ends. The returned server's Addr
// is the address actually bound (addr may use port 0).
func ServeMetrics(ctx context.Context, addr string, handler http.Handler) (*http.Server, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", handler)
	srv := &http.Server{Addr: ln.Addr().String(), Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the process keeps running without metrics
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close() // on the way out: nothing is left to serve
	}()
	return srv, nil
}

// maxJoinTokenFile bounds what --join-token-file reads: a join token is about 150 bytes.
const maxJoinTokenFile = 4096

// ReadJoinTokenFile reads a join token from path ("-": from stdin), so that the token need
// not be on a command line, where process listings show it. The token is checked for shape
// here, so that a wrong file (a kubeconfig, an empty Secret) fails at once with its name.
func ReadJoinTokenFile(path string, stdin io.Reader) (string, error) {
	name := path
	var r io.Reader
	if path == "-" {
		name, r = "standard input", stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("--join-token-file: %w", err)
		}
		defer func() { _ = f.Close() }() // read only: Close has nothing to flush
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxJoinTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("--join-token-file: read %s: %w", name, err)
	}
	if len(data) > maxJoinTokenFile {
		return "", fmt.Errorf("--join-token-file %s: larger than %d bytes, not a join token", name, maxJoinTokenFile)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("--join-token-file %s is empty: it should hold the token from \"flotilla cluster add\"", name)
	}
	if _, err := pki.ParseJoinToken(tok); err != nil {
		return "", fmt.Errorf("--join-token-file %s: %w", name, err)
	}
	return tok, nil
}

// Exit prints err (and hint's suggestion for it, with hint non-nil) to errOut and returns the
// exit code: 0 for no error, 2 for a usage error, the code of an ExitCode, else 1.
func Exit(err error, errOut io.Writer, hint func(error) string) int {
	if err == nil {
		return 0
	}
	var code ExitCode
	if errors.As(err, &code) {
		return int(code) // the command said what it had to
	}
	fmt.Fprintln(errOut, "Error:", err)
	if hint != nil {
		if h := hint(err); h != "" {
			fmt.Fprintln(errOut, "Hint:", h)
		}
	}
	if IsUsage(err) {
		return 2
	}
	return 1
}

// Root sets up a binary's root command: errors and usage printed once by Exit, not by cobra;
// output to out and errOut; flag errors as usage errors that say where help is; the log flags.
func Root(root *cobra.Command, out, errOut io.Writer) *cobra.Command {
	root.SilenceUsage, root.SilenceErrors = true, true
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return UsageError{Err: fmt.Errorf("%s: %w (see %s --help)", cmd.CommandPath(), err, cmd.CommandPath())}
	})
	AddLogFlags(root, errOut)
	return root
}

// Main runs a binary's Run with its arguments, stopped by SIGINT or SIGTERM, and exits with
// its code.
func Main(run func(ctx context.Context, args []string, out, errOut io.Writer) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
