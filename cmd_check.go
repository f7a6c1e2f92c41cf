package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/kubeconfig"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:  "check",
		Usage: "check that the cluster is reachable and hookback has every permission it needs",
		Description: `check connects with the kubeconfig, prints the server version, who the apiserver
thinks you are and the address start would advertise (and which strategy chose it),
and asks (SelfSubjectAccessReview) for every permission hookback start needs. It
writes nothing. It exits non-zero and names what is missing.

Examples:
   hookback check
   hookback check --advertise-address 192.168.1.20
   hookback --kubeconfig ~/.kube/dev.yaml --context dev check`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "advertise-address", EnvVars: env("advertise-address"), Usage: "IP or DNS name the apiserver dials to reach hookback (default: decided from the kubeconfig's server, see docs/reachability.md)"},
			&cli.StringFlag{Name: "lease-namespace", EnvVars: env("lease-namespace"), Value: "default", Usage: "namespace for the session Lease and the canary ConfigMap"},
			&cli.DurationFlag{Name: "timeout", EnvVars: env("timeout"), Value: 10 * time.Second, Usage: "give up on the apiserver after this long"},
		},
		Action: runCheck,
	}
}

func runCheck(c *cli.Context) error {
	cfg, err := kubeconfig.Load(kubeconfigOptions(c))
	if err != nil {
		return err
	}
	cs, err := cfg.Clientset(c.Duration("timeout"))
	if err != nil {
		return err
	}
	ctx := c.Context
	out := c.App.Writer
	v, err := kubeconfig.ServerVersion(ctx, cs, cfg.Server)
	if err != nil {
		return err
	}
	who, err := kubeconfig.WhoAmI(ctx, cs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Server:    %s (context %q from %s)\n", cfg.Server, cfg.Context, cfg.Source())
	fmt.Fprintf(out, "Version:   %s\n", v.GitVersion)
	fmt.Fprintf(out, "User:      %s (groups: %s)\n", who.Username, strings.Join(who.Groups, ", "))
	// start would fail on an undecidable address, so check fails too, but
	// only after the permissions, which are worth seeing either way.
	adErr := printAdvertise(ctx, out, c.String("advertise-address"), cfg)
	fmt.Fprintln(out)

	perms, err := permissions(c.String("lease-namespace"), []string{"all"}, []string{"all"})
	if err != nil {
		return err
	}
	results, err := kubeconfig.CheckPermissions(ctx, cs, perms)
	if err != nil {
		return err
	}
	if err := printPermissions(out, results); err != nil {
		return err
	}
	if missing := kubeconfig.Missing(results); len(missing) > 0 {
		return &exitError{code: 2, err: kubeconfig.MissingError(who.Username, missing)}
	}
	fmt.Fprintf(out, "\nall %d permissions granted\n", len(results))
	return adErr
}

// printAdvertise prints the address start would advertise and why.
func printAdvertise(ctx context.Context, w io.Writer, explicit string, cfg *kubeconfig.Config) error {
	d, err := decideAdvertise(ctx, explicit, cfg)
	if err != nil {
		fmt.Fprintf(w, "Advertise: none (%v)\n", err)
		return err
	}
	fmt.Fprintf(w, "Advertise: %s (strategy %s: %s)\n", d.Host, d.Strategy, d.Reason)
	return nil
}

func printPermissions(w io.Writer, results []kubeconfig.PermissionResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PERMISSION\tNAMESPACE\tALLOWED\tNEEDED FOR")
	for _, r := range results {
		ns := r.Namespace
		if ns == "" {
			ns = "*"
		}
		ok := "yes"
		if !r.Allowed {
			ok = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Permission, ns, ok, r.Why)
	}
	return tw.Flush()
}
