package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/cli/clikit"
)

// TestUsageErrorsExit2 walks the whole command tree: an unknown flag, arguments a command
// does not take, and a group command without its subcommand are usage errors, exit code 2,
// with a message that names the command.
func TestUsageErrorsExit2(t *testing.T) {
	t.Setenv("FLOTILLA_CONFIG", "/nonexistent")
	var walk func(c *cobra.Command)
	checked := 0
	run := func(t *testing.T, args ...string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := Run(t.Context(), args, &out, &errOut)
		checked++
		if code != 2 {
			t.Errorf("flotilla %s: exit %d, want 2 (stderr: %s)", strings.Join(args, " "), code, errOut.String())
		}
		if !strings.HasPrefix(errOut.String(), "Error: ") || !strings.Contains(errOut.String(), args[0]) {
			t.Errorf("flotilla %s: stderr does not say what is wrong: %q", strings.Join(args, " "), errOut.String())
		}
	}
	walk = func(c *cobra.Command) {
		if c.Name() == "help" || c.Name() == "completion" {
			return
		}
		path := strings.Fields(c.CommandPath())[1:]
		if c.HasParent() {
			t.Run(strings.Join(path, " "), func(t *testing.T) {
				run(t, append(path, "--no-such-flag")...)
				if c.Annotations[clikit.GroupAnnotation] != "" {
					run(t, path...)
					return
				}
				for _, args := range [][]string{nil, {"a"}, {"a", "b"}, {"a", "b", "c", "d", "e", "f"}} {
					if c.Args != nil && c.Args(c, args) != nil {
						run(t, append(path, args...)...)
					}
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(io.Discard, io.Discard))
	if checked < 40 {
		t.Errorf("only %d command lines checked: is the tree walked?", checked)
	}
}
