package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/session"
)

var checkExamples = []Example{
	{Command: "hookback check"},
	{Command: "hookback check --advertise-address 127.0.0.1", Comment: "with the address start would be told to use"},
	{Command: "hookback check --tunnel", Comment: "with what start --tunnel needs: the relay's objects and the pod port-forward"},
	{Command: "hookback check --webhooks pod-name --controllers none", Comment: "what start needs with only these built-ins"},
	{Command: "hookback check --context \"$(kubectl config current-context)\"", Comment: "a kubeconfig context, as kubectl names them"},
}

// CheckOptions are check's flags.
type CheckOptions struct {
	RequestTimeout time.Duration
	// Serve holds what start would run (check binds the part of its Plan
	// that decides the permissions): the built-ins, your webhooks and CRDs
	// (--webhook-config, --project) and the upstreams, which are probed;
	// the tunnel; the Deployments start --take-over would pause.
	Serve ServeOptions
}

func (o *CheckOptions) bind(b *binder) {
	o.Serve.GlobalOptions.bind(b)
	p := &o.Serve.Plan
	bind(b, &p.AdvertiseAddress, "advertise-address", catServing, "IP or DNS name start would be told to advertise (default: decided from the kubeconfig's server, see docs/reachability.md)", sets("plan.Options.AdvertiseAddress", "advertise.Input.Explicit"))
	bind(b, &p.LeaseNamespace, "lease-namespace", catCluster, "namespace for the session Lease and the canary ConfigMap", sets("plan.Options.LeaseNamespace"))
	bind(b, &o.RequestTimeout, "request-timeout", catCluster, "give up on the apiserver after this long")
	bind(b, &p.Tunnel.Enabled, "tunnel", catTunnel, "check what start --tunnel needs too: the relay's objects and the pod port-forward in --tunnel-namespace", sets("tunnel.Config.Enabled"))
	bind(b, &p.Tunnel.Namespace, "tunnel-namespace", catTunnel, "tunnel: the namespace start --tunnel would deploy its relay to", sets("tunnel.Config.Namespace"))
	o.Serve.bindUpstream(b)
	o.Serve.bindWhatRuns(b)
	bind(b, &p.TakeOver, "take-over", catUser, "[NAMESPACE/]deployment/NAME: check what start --take-over of it needs too (repeatable)", sets("plan.Options.TakeOver"))
}

func checkCommand() (*cli.Command, *binder) {
	o := CheckOptions{RequestTimeout: 10 * time.Second, Serve: defaultServeOptions()}
	b := &binder{}
	o.bind(b)
	cmd := &cli.Command{
		Name:  "check",
		Usage: "check that the cluster is reachable and hookback has every permission it needs",
		Description: `check connects with the kubeconfig, prints the server version, who the apiserver
thinks you are and the address start would advertise (and which strategy chose it),
and asks (SelfSubjectAccessReview) for every permission hookback start needs with the
same flags: the built-ins selected (all by default; none in a kubebuilder project, see
--project), the webhook configurations, the CRDs of --webhook-config or the project
(installed when missing, conversion redirected), the tunnel. It writes nothing. It exits 2
and names what is missing.` + examplesText(checkExamples),
		Flags: b.flags,
		Action: func(c *cli.Context) error {
			b.load(c)
			return runCheck(c, o)
		},
	}
	return cmd, b
}

func runCheck(c *cli.Context, o CheckOptions) error {
	g := o.Serve.GlobalOptions
	if err := g.Validate(); err != nil {
		return usage(err)
	}
	// check prints the advertise decision itself; the log only adds the
	// strategies it skipped, at debug.
	log := g.logger(c.App.ErrWriter)
	cfg, err := kubeconfig.Load(g.kubeconfig())
	if err != nil {
		return err
	}
	cs, err := cfg.Clientset(o.RequestTimeout)
	if err != nil {
		return err
	}
	ctx, out := c.Context, c.App.Writer
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
	completed, err := plan.Complete(o.Serve.config(Extension{}, log))
	if err != nil {
		return configUsage(err)
	}
	sc := completed.Options()
	tun := sc.Tunnel
	var adErr error
	if tun.Enabled {
		fmt.Fprintf(out, "Advertise: none needed (--tunnel: the apiserver calls a relay in namespace %s, reached through its pod port-forward)\n", tun.Namespace)
	} else {
		adErr = printAdvertise(ctx, out, log, sc.AdvertiseAddress, cfg)
	}
	fmt.Fprintln(out)
	printChecking(out, sc)
	perms, err := plan.Permissions(completed)
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
		return exit(kubeconfig.MissingError(who.Username, missing), exitUsage)
	}
	fmt.Fprintf(out, "\nall %d permissions granted\n", len(results))
	return errors.Join(adErr, checkUpstreams(c, sc))
}

// printAdvertise prints the address start would advertise and why.
func printAdvertise(ctx context.Context, w io.Writer, log *slog.Logger, explicit string, cfg *kubeconfig.Config) error {
	d, err := session.Advertise(ctx, quiet(log), explicit, cfg)
	if err != nil {
		fmt.Fprintf(w, "Advertise: none (%v)\n", withFlagNames(err))
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

// quiet passes on only debug records: what check prints already, it does
// not log again.
func quiet(log *slog.Logger) *slog.Logger {
	return slog.New(debugOnly{log.Handler()})
}

type debugOnly struct{ slog.Handler }

func (d debugOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l <= slog.LevelDebug && d.Handler.Enabled(ctx, l)
}

// checkUpstreams says whether each --upstream accepts connections.
func checkUpstreams(c *cli.Context, o plan.Options) error {
	spec := o.User
	if len(spec.Upstreams) == 0 {
		return nil
	}
	// Project mode's default upstream is the manager, which the developer
	// starts after hookback: not listening yet is no failure of check.
	implicit := o.Project != nil && spec.UpstreamDefaulted
	var errs []error
	for url, perr := range session.ProbeUpstreams(c.Context, spec) {
		switch {
		case perr != nil && implicit:
			fmt.Fprintf(c.App.Writer, "Upstream:  %s: %v (start the manager: %s)\n", url, withFlagNames(perr), orDefault(o.Project.Run, "your manager"))
			continue
		case perr != nil:
			fmt.Fprintf(c.App.Writer, "Upstream:  %s: %v\n", url, withFlagNames(perr))
			errs = append(errs, perr)
			continue
		}
		fmt.Fprintf(c.App.Writer, "Upstream:  %s accepts connections\n", url)
	}
	return errors.Join(errs...)
}

// printChecking says what the permissions below are checked for.
func printChecking(w io.Writer, cfg plan.Options) {
	list := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ", ")
	}
	fmt.Fprintf(w, "Checking:  built-in webhooks: %s; controllers: %s", list(cfg.Webhooks), list(cfg.Controllers))
	if cfg.Project != nil {
		fmt.Fprintf(w, "; project %s", cfg.Project.Title())
	}
	if len(cfg.User.Manifests) > 0 {
		fmt.Fprintf(w, "; your webhooks and CRDs from %s", strings.Join(cfg.User.Manifests, ", "))
	}
	if cfg.Tunnel.Enabled {
		fmt.Fprint(w, "; tunnel")
	}
	fmt.Fprintln(w)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
