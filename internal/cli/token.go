package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func newTokenCommand(s streams) *cobra.Command {
	var hf hubFlags
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list, rotate and revoke named tokens of the hub's API (admin only)",
		Long: `Named tokens give people and automation access to the hub's API with a role, in some projects
or in all of them (docs/access.md):

  viewer    reads everything of its projects: releases, the clusters their projects select,
            status, drift, skew, audit records, the dashboard
  deployer  a viewer that may also act on its projects' releases (sync, pause, approve)
  admin     everything: clusters, join tokens, named tokens, every project

The hub stores only a hash of each token: the secret is printed once, by create and rotate.`,
		Example: `  flotilla token create ci-deployer --role deployer --project team-a --expires 90d
  flotilla token create dashboard-ro --role viewer -o json | jq -r .token
  flotilla token list
  flotilla token rotate ci-deployer
  flotilla token revoke ci-deployer`,
	}
	hf.bind(cmd)
	cmd.AddCommand(newTokenCreateCommand(s, &hf), newTokenListCommand(s, &hf), newTokenRevokeCommand(s, &hf), newTokenRotateCommand(s, &hf))
	return cmd
}

// parseExpiry reads --expires: a Go duration (720h) or a number of days (90d).
func parseExpiry(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return "", fmt.Errorf("--expires %q: want a duration such as 720h or a number of days such as 90d", s)
		}
		return (time.Duration(n) * 24 * time.Hour).String(), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return "", fmt.Errorf("--expires %q: want a duration such as 720h or a number of days such as 90d", s)
	}
	return d.String(), nil
}

func printNewToken(s streams, format string, t hubclient.NewUserToken, what string) error {
	return printOut(s.out, format, t, func(w io.Writer) {
		fmt.Fprintf(w, "Token %s %s. Its secret, shown this once:\n  %s\n", t.Name, what, t.Token)
	})
}

func newTokenCreateCommand(s streams, hf *hubFlags) *cobra.Command {
	var (
		role     string
		projects []string
		expires  string
	)
	format := newChoice("text", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "create NAME --role viewer|deployer|admin [--project P ...] [--expires D]",
		Short: "Create a named token and print its secret once",
		Long: `Create a named token. Without --project, a viewer or deployer token covers every project; an
admin token always does. --expires takes a duration (720h) or days (90d); without it the token
works until it is revoked.`,
		Example: `  flotilla token create ci-deployer --role deployer --project team-a --expires 90d
  flotilla token create auditor --role viewer -o json`,
		Args:        cobra.ExactArgs(1),
		Annotations: argsNamed("a token name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if role == "" {
				return usageError{fmt.Errorf("--role is required: viewer, deployer or admin")}
			}
			exp, err := parseExpiry(expires)
			if err != nil {
				return usageError{err}
			}
			c, err := hf.client()
			if err != nil {
				return err
			}
			t, err := c.CreateUserToken(cmd.Context(), hubclient.CreateUserTokenRequest{Name: args[0], Role: role, Projects: projects, Expires: exp})
			if err != nil {
				return err
			}
			return printNewToken(s, format.Value, t, "created")
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "viewer, deployer or admin (required)")
	cmd.Flags().StringArrayVar(&projects, "project", nil, "a project the token covers (repeatable; default: every project)")
	cmd.Flags().StringVar(&expires, "expires", "", "lifetime: a duration (720h) or days (90d) (default: until revoked)")
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

func newTokenListCommand(s streams, hf *hubFlags) *cobra.Command {
	format := newChoice("text", "json", "yaml")
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the named tokens: name, role, projects, creation and expiry (never secrets)",
		Example: `  flotilla token list -o json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			ts, err := c.UserTokens(cmd.Context())
			if err != nil {
				return err
			}
			return printOut(s.out, format.Value, ts, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tROLE\tPROJECTS\tCREATED\tEXPIRES")
				for _, t := range ts {
					projects, expires := "*", "never"
					if len(t.Grant.Projects) > 0 {
						projects = strings.Join(t.Grant.Projects, ",")
					}
					if !t.ExpiresAt.IsZero() {
						expires = t.ExpiresAt.Local().Format(time.RFC3339)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, t.Grant.Role, projects, t.CreatedAt.Local().Format(time.RFC3339), expires)
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

func newTokenRevokeCommand(s streams, hf *hubFlags) *cobra.Command {
	return &cobra.Command{
		Use:         "revoke NAME",
		Short:       "Revoke a named token: it stops working at once",
		Example:     `  flotilla token revoke ci-deployer`,
		Args:        cobra.ExactArgs(1),
		Annotations: argsNamed("a token name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			if err := c.RevokeUserToken(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(s.out, "token/%s revoked\n", args[0])
			return nil
		},
	}
}

func newTokenRotateCommand(s streams, hf *hubFlags) *cobra.Command {
	format := newChoice("text", "json", "yaml")
	cmd := &cobra.Command{
		Use:         "rotate NAME",
		Short:       "Give a named token a new secret, printed once; the old one stops working",
		Example:     `  flotilla token rotate ci-deployer -o json | jq -r .token`,
		Args:        cobra.ExactArgs(1),
		Annotations: argsNamed("a token name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			t, err := c.RotateUserToken(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printNewToken(s, format.Value, t, "rotated")
		},
	}
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}
