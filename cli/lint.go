package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/lint"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/project"
)

var lintExamples = []Example{
	{Command: "hookback lint config/webhook/", Comment: "every outage your webhook configurations can cause, ranked, each with its fix as a JSON patch"},
	{Command: "hookback lint config/default -o junit > lint.xml", Comment: "a kustomize directory, rendered as kubectl kustomize would; a JUnit report for CI (--fail-on warning: exit 1 on warnings too)"},
	{Command: "hookback lint config/webhook/manifests.yaml -o sarif > lint.sarif", Comment: "SARIF 2.1.0 for GitHub code scanning (docs/safety.md has the workflow)"},
	{Command: "hookback lint config/webhook/ --disable opt-out-label --fail-on none -o json", Comment: "every finding as JSON, one rule off, never failing"},
	{Command: "hookback lint --probe --upstream-insecure my-mutating-webhooks.yaml --fail-on none", Comment: "your server (controller-runtime's https://127.0.0.1:9443 unless --upstream) sent a pod through each mutating webhook's path, then its own output: reinvocation-unsafe when it changes it again"},
	{Command: "hookback lint --cluster --fail-on none", Comment: "everything the cluster has: its webhooks' chains, Services without ready endpoints, served certificates, p99 latencies from the apiserver's metrics"},
	{Command: "hookback lint --cluster config/webhook/ --fail-on none", Comment: "the cluster with your configurations applied over it, as they would be"},
}

func lintCommand() (*cli.Command, *binder) {
	o, b := defaultLintOptions(), &binder{}
	o.bind(b)
	cmd := &cli.Command{
		Name:      "lint",
		Usage:     "check webhook configurations for the outages they can cause: self-deadlock, the control plane behind a failing webhook, timeouts past the request's deadline",
		ArgsUsage: "[FILE|DIR|-]...",
		Description: `lint reads your webhook configurations (files, directories, kustomize directories, bundles,
Lists, - for stdin; with no argument, in a kubebuilder or Operator SDK project, its
config/default) with the Services and workloads beside them, and reports each way they
can take a cluster down or weaken what they enforce: a failurePolicy Fail webhook called
for the pods its own Service needs to come back (self-deadlock), for the control plane's
namespaces or for leases, nodes, events and tokenreviews; webhooks whose timeouts add
up past the 34 s deadline of a request, which fails it even under failurePolicy Ignore;
sideEffects that break dry-run, admissionReviewVersions without v1, "*/*" rules,
matchPolicy Exact, and labels anyone can set to opt out of enforcement. It reads
Validating and MutatingAdmissionPolicies and their bindings too: a binding of a policy
that does not exist or a policy without one, a paramKind bound without paramRef, a
failurePolicy Fail bound without Deny, Fail policies on the control plane. Whether the
apiserver calls a webhook for a request is decided with its own matching code, CEL
matchConditions included. Each finding names its rule, the object, the field, why (a
link) and the fix as a JSON patch of the object where one exists. It reads no cluster,
unless --cluster: then the cluster's webhook configurations, admission policies and
bindings, namespaces, and the Services,
workloads and EndpointSlices behind its webhooks are linted too, with your manifests
applied over them as if applied (an object of the same kind and name replaces the
cluster's), and the online rules run: a Service without a ready endpoint, a url webhook
whose served certificate the caBundle does not verify, a p99 latency near the timeout
(from the apiserver's /metrics, when you may read it).

--probe sends each mutating webhook a sample (a minimal object of each resource its rules
name, or the CREATE cases of --probe-cases) through your server at the webhook's path, as
start forwards, then the object it made as a new review, as the apiserver does under
reinvocationPolicy IfNeeded: a second change (a sidecar appended twice), or a refusal, is
reinvocation-unsafe, an error under IfNeeded and a warning otherwise.

The annotation hookback.dev/lint-ignore: "RULE=reason; RULE=reason" on a configuration
silences those rules for it: the findings are shown as suppressed, with the reason, and
do not fail the run. docs/safety.md describes every rule.

Exit status: 0 when no finding is at or above --fail-on, 1 when one is, 2 on bad input
(an unreadable manifest, an unknown rule, an annotation without a reason).` + examplesText(lintExamples),
		Flags: b.flags,
		Action: func(c *cli.Context) error {
			b.load(c)
			return runLint(c, o)
		},
	}
	return cmd, b
}

// LintOptions are lint's flags.
type LintOptions struct {
	GlobalOptions
	Output  string
	FailOn  string
	Disable []string
	Cluster bool
	// Deadline is the request deadline chain-budget checks against.
	Deadline time.Duration
	// RequestTimeout bounds each request to the apiserver (--cluster).
	RequestTimeout time.Duration
	Probe          lintProbeOptions
}

func defaultLintOptions() LintOptions {
	return LintOptions{GlobalOptions: defaultGlobalOptions(), Output: report.FormatTable, FailOn: string(lint.Error), RequestTimeout: 30 * time.Second}
}

func (o *LintOptions) bind(b *binder) {
	o.GlobalOptions.bind(b)
	bind(b, &o.Output, "output", catOutput, "table, json, junit (a testsuite per rule, a failure per finding at or above --fail-on) or sarif (SARIF 2.1.0, for GitHub code scanning)", alias("o"))
	bind(b, &o.FailOn, "fail-on", catOutput, "exit 1 when a finding is at or above this severity: error, warning, info, or none", sets("lint.Options.FailOn"))
	bind(b, &o.Cluster, "cluster", catCluster, "lint the cluster's webhook configurations too, with the manifests given applied over them, and run the online rules")
	bind(b, &o.RequestTimeout, "request-timeout", catCluster, "with --cluster: how long each request to the apiserver may take")
	bind(b, &o.Deadline, "deadline", catOutput, "chain-budget: the request deadline the webhooks' timeouts must fit in, whole seconds (default 34s, what a request without a timeout parameter gets; give your clients' --request-timeout)", sets("lint.Options.Deadline"))
	bind(b, &o.Disable, "disable", catOutput, "a rule not to run (repeatable): "+strings.Join(lint.RuleIDs(), ", "), sets("lint.Options.Disable"))
	o.Probe.bind(b)
}

func (o LintOptions) lintOptions() lint.Options {
	return lint.Options{Disable: o.Disable, FailOn: o.FailOn, Deadline: o.Deadline}
}

// Validate reports every problem at once.
func (o LintOptions) Validate() error {
	errs := []error{o.GlobalOptions.Validate(), o.lintOptions().Validate(), o.Probe.Validate()}
	if err := checkOutput(o.Output, &lint.Report{}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func runLint(c *cli.Context, o LintOptions) error {
	if err := o.Validate(); err != nil {
		return usage(err)
	}
	in, err := lintInput(c, o)
	if err != nil {
		return err
	}
	if o.Probe.Probe {
		if err := o.Probe.probe(c.Context, in, c.App.ErrWriter); err != nil {
			return err
		}
	}
	rep := lint.Run(in, o.lintOptions())
	if err := report.Write(c.App.Writer, o.Output, rep); err != nil {
		return err
	}
	if n := len(rep.Failing()); n > 0 {
		return cli.Exit(fmt.Sprintf("%s; %d at or above --fail-on %s", rep.Summary(), n, o.FailOn), exitFailure)
	}
	fmt.Fprintln(c.App.ErrWriter, rep.Summary())
	return nil
}

// lintInput reads the manifests and, with --cluster, the cluster under
// them.
func lintInput(c *cli.Context, o LintOptions) (*lint.Input, error) {
	paths, err := lintPaths(c.Args().Slice(), o.Cluster)
	if err != nil {
		return nil, usage(err)
	}
	var docs []manifests.Document
	if len(paths) > 0 {
		if docs, err = manifests.Load(paths, c.App.Reader); err != nil {
			return nil, exit(err, exitUsage)
		}
	}
	var live *lint.Live
	if o.Cluster {
		cfg, err := kubeconfig.Load(o.kubeconfig())
		if err != nil {
			return nil, err
		}
		cs, err := cfg.Clientset(o.RequestTimeout)
		if err != nil {
			return nil, err
		}
		var cluster []manifests.Document
		if cluster, live, err = lint.ReadCluster(c.Context, cs); err != nil {
			return nil, kubeconfig.Explain(err)
		}
		if live.MetricsErr != nil {
			fmt.Fprintf(c.App.ErrWriter, "slow-webhook not checked: %v\n", live.MetricsErr)
		}
		docs = lint.Merge(cluster, docs)
	}
	in, err := lint.Read(docs)
	if err != nil {
		return nil, exit(err, exitUsage)
	}
	in.Live = live
	if in.Empty() && !o.Cluster {
		return nil, cli.Exit(fmt.Sprintf("%s: no webhook configuration, admission policy or binding to lint", strings.Join(paths, ", ")), exitUsage)
	}
	return in, nil
}

// lintPaths are the arguments, or a project's manifests when there are
// none (none at all with --cluster outside a project).
func lintPaths(args []string, cluster bool) ([]string, error) {
	if len(args) > 0 {
		return args, nil
	}
	if cluster && !project.Has(".") {
		return nil, nil
	}
	if !project.Has(".") {
		return nil, errors.New("nothing to lint: give FILE, DIR (a kustomize directory is rendered) or - for stdin, or run lint in a kubebuilder or Operator SDK project")
	}
	p, err := project.Load(".")
	if err != nil {
		return nil, fmt.Errorf("lint the project: %w", err)
	}
	return p.Manifests, nil
}
