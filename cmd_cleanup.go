package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/server"
)

func cleanupCommand() *cli.Command {
	return &cli.Command{
		Name:  "cleanup",
		Usage: "delete webhook configurations and Leases that hookback left in the cluster",
		Description: `cleanup removes this user's session (after a crash, kill -9 or a closed laptop),
every session whose Lease expired, or with --all everything labelled
app.kubernetes.io/managed-by=hookback.

Examples:
   hookback cleanup                     # this user's session and every dead session
   hookback cleanup --session ci-1234
   hookback cleanup --all`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "session", EnvVars: env("session"), Usage: "session to remove (default: <user>-<host>)"},
			&cli.BoolFlag{Name: "all", EnvVars: env("all"), Usage: "remove every session, alive or not"},
			&cli.StringFlag{Name: "lease-namespace", EnvVars: env("lease-namespace"), Value: "default", Usage: "namespace of the session Leases"},
		},
		Action: runCleanup,
	}
}

func runCleanup(c *cli.Context) error {
	log, session, err := loggerAndSession(c)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	cs, err := cfg.Clientset(requestTimeout)
	if err != nil {
		return err
	}
	dyn, err := cfg.Dynamic(requestTimeout)
	if err != nil {
		return err
	}
	r := &server.Registrar{Client: cs, Dynamic: dyn, Session: session, Log: log}
	removed, err := r.Cleanup(c.Context, server.CleanupOptions{
		All: c.Bool("all"), Sessions: []string{session}, Stale: true,
		DefaultLeaseNamespace: c.String("lease-namespace"),
	})
	if len(removed) == 0 {
		fmt.Fprintln(c.App.Writer, "nothing to clean up")
	} else {
		fmt.Fprintf(c.App.Writer, "removed sessions: %s\n", strings.Join(removed, ", "))
	}
	// Shared objects (exec RBAC, node CPU) go too when no live session runs
	// the part that wrote them.
	namespaces, lerr := r.LeaseNamespaces(c.Context, c.String("lease-namespace"))
	if lerr != nil {
		return errors.Join(err, lerr)
	}
	live, lerr := server.LiveParts(c.Context, cs, namespaces, "")
	if lerr != nil {
		return errors.Join(err, lerr)
	}
	shared := sharedCleanups(cs, log, []string{"all"}, []string{"all"})
	return errors.Join(err, server.RunCleanups(c.Context, shared, live, log))
}
