package cli

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubapi"
)

// withUsageErrors makes every error in how a command of the tree was called a usageError
// (exit code 2) that names what is missing or extra and shows the usage line. A command that
// only groups others (flotilla cluster) says which subcommands it has.
func withUsageErrors(c *cobra.Command) {
	for _, sub := range c.Commands() {
		withUsageErrors(sub)
	}
	if c.HasSubCommands() && c.HasParent() && !c.Runnable() {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[groupAnnotation] = "true"
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("%s has no subcommand %q; want one of: %s", cmd.CommandPath(), args[0], subcommands(cmd))}
			}
			return usageError{fmt.Errorf("%s needs a subcommand: %s (see %s --help)", cmd.CommandPath(), subcommands(cmd), cmd.CommandPath())}
		}
		return
	}
	if c.Args == nil {
		return
	}
	check := c.Args
	c.Args = func(cmd *cobra.Command, args []string) error {
		err := check(cmd, args)
		if err == nil {
			return nil
		}
		var ue usageError
		if errors.As(err, &ue) {
			return err
		}
		return usageError{fmt.Errorf("%s: %s (usage: %s)", cmd.CommandPath(), argsProblem(cmd, args, err), cmd.UseLine())}
	}
}

// argsProblem says in words what is wrong with args; the command's annotation
// argsAnnotation names what it takes ("a cluster name").
func argsProblem(cmd *cobra.Command, args []string, err error) string {
	what := cmd.Annotations[argsAnnotation]
	switch {
	case len(args) == 0 && what != "":
		return "needs " + what
	case len(args) == 0:
		return "needs an argument"
	case what != "":
		return fmt.Sprintf("takes %s, got %d arguments: %s", what, len(args), strings.Join(args, " "))
	case strings.HasPrefix(err.Error(), "unknown command"):
		return fmt.Sprintf("takes no arguments, got %q", strings.Join(args, " "))
	}
	return err.Error()
}

// argsAnnotation names, in a command's Annotations, what its arguments are, for errors;
// groupAnnotation marks a command that only groups others.
const (
	argsAnnotation  = "flotilla.dev/args"
	groupAnnotation = "flotilla.dev/group"
)

// argsNamed returns the annotations of a command whose arguments are what.
func argsNamed(what string) map[string]string { return map[string]string{argsAnnotation: what} }

func subcommands(cmd *cobra.Command) string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return strings.Join(names, ", ")
}

// hint suggests the fix for a common mistake, or returns "".
func hint(err error) string {
	var unknownCA x509.UnknownAuthorityError
	var se *hubapi.StatusError
	switch {
	case errors.As(err, &se) && se.Code == http.StatusUnauthorized:
		return "use a token from `flotilla token create`, admin.token in the hub's data dir, or sign in with `flotilla login` (an ID token expires: sign in again)"
	case errors.As(err, &se) && se.Code == http.StatusForbidden:
		return "this token's role does not allow it: ask an admin for a token or group with the role (docs/access.md)"
	case errors.Is(err, hubapi.ErrNoHub):
		return "after `make demo`, `source out/demo/demo.env` sets FLOTILLA_HUB, FLOTILLA_TOKEN and FLOTILLA_CA (flotilla demo --data-dir D writes D/demo.env)"
	case errors.As(err, &unknownCA):
		return "the hub's certificate is signed by its own CA: give it with --ca (or FLOTILLA_CA), the ca.crt in the hub's data dir"
	}
	return ""
}
