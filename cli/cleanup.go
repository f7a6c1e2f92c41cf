package cli

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/session"
	"github.com/hookback/hookback/tunnel"
)

var cleanupExamples = []Example{
	{Command: "hookback cleanup", Comment: "this user's session and every dead session"},
	{Command: "hookback cleanup --session ci-1234"},
	{Command: "hookback cleanup --all", Comment: "everything labelled app.kubernetes.io/managed-by=hookback"},
}

// CleanupOptions are cleanup's flags.
type CleanupOptions struct {
	GlobalOptions
	Session, LeaseNamespace, TunnelNamespace string
	All                                      bool
}

func (o *CleanupOptions) bind(b *binder) {
	o.GlobalOptions.bind(b)
	bind(b, &o.Session, "session", catCluster, "the session to remove besides every dead one (default: <user>-<host>)")
	bind(b, &o.All, "all", catCluster, "remove every session, alive or not")
	bind(b, &o.LeaseNamespace, "lease-namespace", catCluster, "where session Leases are looked for when no configuration records theirs (a --webhooks none session has only its Lease)")
	bind(b, &o.TunnelNamespace, "tunnel-namespace", catTunnel, "where relays are looked for when you may not list Deployments cluster-wide")
}

func cleanupCommand() (*cli.Command, *binder) {
	o := CleanupOptions{GlobalOptions: defaultGlobalOptions(), LeaseNamespace: "default", TunnelNamespace: tunnel.DefaultNamespace}
	b := &binder{}
	o.bind(b)
	cmd := &cli.Command{
		Name:  "cleanup",
		Usage: "delete webhook configurations and Leases that hookback left in the cluster",
		Description: `cleanup removes this user's session (after a crash, kill -9 or a closed laptop),
every session whose Lease expired, or with --all everything labelled
app.kubernetes.io/managed-by=hookback, with the relays of --tunnel sessions (in every namespace
when you may list Deployments cluster-wide, else in --tunnel-namespace); then the shared objects
(exec RBAC, node CPU) that no live session still uses.` + examplesText(cleanupExamples),
		Flags: b.flags,
		Action: func(c *cli.Context) error {
			b.load(c)
			g, name := o.GlobalOptions, o.Session
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
				Kubeconfig: g.kubeconfig(), Sessions: []string{name}, All: o.All,
				LeaseNamespace: o.LeaseNamespace, TunnelNamespace: o.TunnelNamespace, Log: g.logger(c.App.ErrWriter),
			})
			if len(removed) == 0 {
				fmt.Fprintln(c.App.Writer, "nothing to clean up")
			} else {
				fmt.Fprintf(c.App.Writer, "removed sessions: %s\n", strings.Join(removed, ", "))
			}
			return err
		},
	}
	return cmd, b
}
