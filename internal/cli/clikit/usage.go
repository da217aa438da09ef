package clikit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// WithUsageErrors makes every error in how a command of the tree was called a UsageError
// (exit code 2) that names what is missing or extra and shows the usage line. A command that
// only groups others (flotilla cluster) says which subcommands it has.
func WithUsageErrors(c *cobra.Command) {
	for _, sub := range c.Commands() {
		WithUsageErrors(sub)
	}
	if c.HasSubCommands() && c.HasParent() && !c.Runnable() {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[GroupAnnotation] = "true"
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return UsageError{Err: fmt.Errorf("%s has no subcommand %q; want one of: %s", cmd.CommandPath(), args[0], subcommands(cmd))}
			}
			return UsageError{Err: fmt.Errorf("%s needs a subcommand: %s (see %s --help)", cmd.CommandPath(), subcommands(cmd), cmd.CommandPath())}
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
		var marked interface{ Usage() }
		if errors.As(err, &marked) {
			return err // said already
		}
		return UsageError{Err: fmt.Errorf("%s: %s (usage: %s)", cmd.CommandPath(), argsProblem(cmd, args, err), cmd.UseLine())}
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
// GroupAnnotation marks a command that only groups others.
const (
	argsAnnotation  = "flotilla.dev/args"
	GroupAnnotation = "flotilla.dev/group"
)

// ArgsNamed returns the annotations of a command whose arguments are what.
func ArgsNamed(what string) map[string]string { return map[string]string{argsAnnotation: what} }

func subcommands(cmd *cobra.Command) string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return strings.Join(names, ", ")
}
