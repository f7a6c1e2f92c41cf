package cli

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/session"
)

var cleanupExamples = []Example{
	{Command: "hookback cleanup", Comment: "this user's session and every dead session"},
	{Command: "hookback cleanup --session ci-1234"},
	{Command: "hookback cleanup --all", Comment: "everything labelled app.kubernetes.io/managed-by=hookback"},
}

func cleanupCommand() *cli.Command {
	return &cli.Command{
		Name:  "cleanup",
		Usage: "delete webhook configurations and Leases that hookback left in the cluster",
		Description: `cleanup removes this user's session (after a crash, kill -9 or a closed laptop),
every session whose Lease expired, or with --all everything labelled
app.kubernetes.io/managed-by=hookback, with the relays of --tunnel sessions (in every namespace
when you may list Deployments cluster-wide, else in --tunnel-namespace); then the shared objects
(exec RBAC, node CPU) that no live session still uses.` + examplesText(cleanupExamples),
		Flags: withGlobalText(map[string]string{
			"lease-namespace":  "where session Leases are looked for when no configuration records theirs (a --webhooks none session has only its Lease)",
			"tunnel-namespace": "where relays are looked for when you may not list Deployments cluster-wide",
		}, "session", "all", "lease-namespace", "tunnel-namespace"),
		Action: func(c *cli.Context) error {
			g := globalOptions(c)
			name := c.String("session")
			if name != "" && sanitizeSession(name) != name {
				return usage(fmt.Errorf("--session %q: use lowercase letters, digits and '-', at most 40 characters", name))
			}
			if err := g.Validate(); err != nil {
				return usage(err)
			}
			if name == "" {
				name = defaultSession()
			}
			removed, err := session.Cleanup(c.Context, session.CleanupConfig{
				Kubeconfig: g.kubeconfig(), Sessions: []string{name}, All: c.Bool("all"),
				LeaseNamespace: c.String("lease-namespace"), TunnelNamespace: c.String("tunnel-namespace"), Log: g.logger(c.App.ErrWriter),
			})
			if len(removed) == 0 {
				fmt.Fprintln(c.App.Writer, "nothing to clean up")
			} else {
				fmt.Fprintf(c.App.Writer, "removed sessions: %s\n", strings.Join(removed, ", "))
			}
			return err
		},
	}
}
