package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/project"
	"github.com/hookback/hookback/record"
	"github.com/hookback/hookback/session"
	"github.com/hookback/hookback/suite"
)

var testExamples = []Example{
	{Command: "hookback test --webhooks pod-name,pod-lifespan suite", Comment: "the built-ins against the cases in suite/, no cluster"},
	{Command: "hookback test --webhooks pod-name,pod-lifespan -o junit suite > report.xml", Comment: "a JUnit report for CI: a testsuite per suite file"},
	{Command: "hookback test init --from-objects widget.yaml --crd widgets-crd.yaml --out crd-suite", Comment: "a case per object, a create sent to its CRD's rules, expecting what they answer now"},
	{Command: "hookback test --crd widgets-crd.yaml --webhooks none crd-cases", Comment: "cases that target the CRD's schema and CEL rules (and run after mutating webhooks, before validating ones)"},
	{Command: "hookback test --crd widgets-crd.yaml --policy widget-policy.yaml --webhooks none widget-policy-cases", Comment: "a MutatingAdmissionPolicy, then the CRD's rules on what it made, in one case: the apiserver's order, the object decoded and defaulted as it decodes a request"},
}

// TestOptions are test's flags: start's webhook inputs, how to start your
// server, and how to report.
type TestOptions struct {
	Serve       ServeOptions
	Exec        string
	ExecTimeout time.Duration
	Output      string
	Update      bool
	Concurrency int
	// NotIdempotent is what a mutating webhook that changes its own
	// output again does to its case (suite.Options.Idempotence).
	NotIdempotent string
	Fuzz          fuzzOptions
	// Policy are --policy's manifests, tested beside the webhooks.
	Policy []string
	// CRDFromCluster: the cluster's CRDs of the suite's kinds are
	// webhooks of the suite too, as --crd's are.
	CRDFromCluster bool
	// Watch reruns the suite on every change (test_watch.go).
	Watch bool
}

func defaultTestOptions() TestOptions {
	return TestOptions{Serve: defaultServeOptions(), Output: report.FormatTable, ExecTimeout: 2 * time.Minute, Concurrency: 8, NotIdempotent: suite.IdempotenceAuto}
}

func (o *TestOptions) bind(b *binder) {
	s := &o.Serve
	p := &s.Plan
	s.GlobalOptions.bind(b)
	bind(b, &p.Certs.StateDir, "state-dir", catServing, "where hookback keeps its local CA, which signs the --exec server's certificate", sets("certs.Options.StateDir"))
	bind(b, &p.Template.Path, "template", catServing, "webhook configuration template (default: the built-in webhook-url.yaml.tmpl)", sets("registration.Template.Path"))
	bind(b, &p.Webhooks, "webhooks", catBuiltins, "built-in webhooks to test, all or none (comma list or repeated: "+strings.Join(webhooks.Names(), ", ")+"); in project mode the default is none", sets("plan.Options.Webhooks"))
	bindWebhookOptions(b, &p.WebhookOptions)
	bind(b, &p.ProjectDir, "project", catUser, "kubebuilder or Operator SDK project root, or auto: the current directory when it has a PROJECT file and no --webhook-config is given; its config/default, the default built-ins off, --upstream "+project.DefaultUpstream+", --exec the command that starts the manager", sets("plan.Options.ProjectDir"))
	bind(b, &p.User.Manifests, "webhook-config", catUser, "your webhook configurations and CRDs as written for the cluster (file, directory, kustomize directory, bundle, or - for stdin; repeatable)", sets("plan.UserWebhooks.Manifests"))
	s.bindUpstream(b)
	bind(b, &p.User.Timeout, "timeout", catUser, "your webhooks: override every timeoutSeconds, 1s to 30s; 0 keeps each one's", sets("plan.UserWebhooks.Timeout"))
	bind(b, &o.Exec, "exec", catUser, "start your webhook server with this command (sh -c), with a serving certificate signed by hookback's CA, wait until it accepts TLS, run the suite, stop it (default in project mode: the command start prints, make run or go run)")
	bind(b, &o.ExecTimeout, "exec-timeout", catUser, "how long --exec's server has to accept TLS (the first go run compiles)", sets("suite.ExecOptions.Deadline"))
	bind(b, &p.User.CertDir, "upstream-cert-dir", catUser, "with --exec: write the server's tls.crt and tls.key here (default with --exec and in project mode: controller-runtime's, $TMPDIR/k8s-webhook-server/serving-certs)", sets("plan.UserWebhooks.CertDir"))
	bind(b, &o.Policy, "policy", catUser, "ValidatingAdmissionPolicies and MutatingAdmissionPolicies (admissionregistration.k8s.io/v1) with their bindings and params: each a webhook of the suite (configuration ValidatingAdmissionPolicy or MutatingAdmissionPolicy, webhook the policy's name), evaluated with the apiserver's code, no cluster (file, directory, kustomize directory, or - for stdin; repeatable)")
	bind(b, &o.CRDFromCluster, "crd-from-cluster", catUser, "the CRDs of the suite's kinds that --crd does not give, read from the cluster of --kubeconfig, are webhooks of the suite as --crd's are (needs list on customresourcedefinitions)")
	bind(b, &o.Output, "output", catOutput, "table, json or junit (a testsuite per suite file, a testcase per case and webhook)", alias("o"))
	bind(b, &o.Watch, "watch", catOutput, "keep running: run the suite again on every change to its files, the --crd CRDs or the --policy policies, printing only the results that changed; Ctrl-C stops")
	bind(b, &o.Update, "update", catOutput, "rewrite the expectations of failing cases to the current answers and print what changed; passing cases stay byte for byte")
	bind(b, &o.Concurrency, "concurrency", catOutput, "cases in flight at once")
	bind(b, &o.NotIdempotent, "not-idempotent", catOutput, "a mutating webhook is sent its own output again, as the apiserver does under reinvocationPolicy IfNeeded; when it changes it again: auto (fail the case under IfNeeded, a note otherwise), fail, warn (a note) or off (no second call)")
	o.Fuzz.bind(b)
}

// Validate reports every problem at once.
func (o TestOptions) Validate() error {
	errs := []error{o.Serve.Validate(), o.Fuzz.Validate()}
	if err := checkOutput(o.Output, suite.Report{}); err != nil {
		errs = append(errs, err)
	}
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("--concurrency %d: want 1 or more", o.Concurrency))
	}
	if !slices.Contains(suite.IdempotenceModes, o.NotIdempotent) {
		errs = append(errs, fmt.Errorf("--not-idempotent %q: want %s", o.NotIdempotent, strings.Join(suite.IdempotenceModes, ", ")))
	}
	if o.ExecTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--exec-timeout %s: want more than 0", o.ExecTimeout))
	}
	errs = append(errs, o.validateWatch())
	return errors.Join(errs...)
}

func testCommand(ext Extension) (*cli.Command, *binder) {
	o, b := defaultTestOptions(), &binder{}
	o.bind(b)
	initCmd, _ := testInitCommand()
	cmd := &cli.Command{
		Name:      "test",
		Usage:     "run a suite of cases (recorded reviews, plain manifests, conversions) against your webhook server or the built-ins, with no cluster",
		ArgsUsage: "SUITE_DIR|FILE... (default: test/hookback in project mode)",
		Description: `test sends each case of the suite to every webhook it names, or that the apiserver
would call for it (rules, namespace and object selectors, matchConditions, evaluated with
the apiserver's own code), and compares the answers with the case's expectations. Webhooks
as start takes them: built-ins (--webhooks), your --webhook-config with --upstream (start's
answer checks apply), --exec to start your server first, or a kubebuilder/Operator SDK
project (no flag at all). A recorded case (test init's) goes to the webhook it was recorded
from, and needs no manifests: with --upstream alone it is sent to your server at the path it
was recorded at. Conversion cases go to the CRDs' conversion webhooks.
The format, with its JSON Schema, and a CI recipe: docs/testing.md.

Exit status: 0 when every case passes, 1 when any fails, 2 on an error: a bad suite file
(named with file and line), an upstream that cannot be reached, a server that never came up.` + examplesText(testExamples),
		Flags:       b.flags,
		Subcommands: []*cli.Command{initCmd},
		Action: func(c *cli.Context) error {
			b.load(c)
			return runTest(c, ext, o)
		},
	}
	return cmd, b
}

func runTest(c *cli.Context, ext Extension, o TestOptions) error {
	if err := o.Validate(); err != nil {
		return usage(errors.Join(err, o.config(ext, discardLog).Validate()))
	}
	log := o.Serve.logger(c.App.ErrWriter)
	cfg := o.config(ext, log)
	if o.Exec != "" && cfg.User.CertDir == "" {
		cfg.User.CertDir = certs.ControllerRuntimeCertDir()
	}
	completed, err := plan.Complete(cfg)
	if err != nil {
		return exit(err, exitUsage)
	}
	proj := completed.Options().Project
	if proj != nil && o.Exec == "" && completed.Options().User.UpstreamDefaulted {
		o.Exec = proj.Run
	}
	if o.Exec == "" && o.Serve.Plan.User.CertDir != "" {
		return usage(errors.New("--upstream-cert-dir is for --exec: the certificate of the server hookback starts"))
	}
	paths := c.Args().Slice()
	if len(paths) == 0 && proj != nil {
		paths = []string{filepath.Join(proj.Dir, "test", "hookback")}
	}
	if len(paths) == 0 && o.Fuzz.N == 0 {
		return usage(errors.New("test takes the suite: directories or files of cases (hookback test init writes them from recordings)"))
	}
	files, err := loadSuite(paths, o.Fuzz.N > 0)
	if err != nil {
		return usage(err)
	}
	setup, err := session.TestTargets(completed)
	if err != nil {
		return exit(err, exitUsage)
	}
	opts := suite.Options{Concurrency: o.Concurrency, Log: log, Webhooks: testWebhooks(setup), Recorded: setup.Recorded, Idempotence: o.NotIdempotent}
	if setup.Unmatched != nil {
		// The suite's rows are text: the advice is shown with the flag
		// here, where the field it names is known as one.
		opts.Unmatched = withFlagNames(setup.Unmatched).Error()
	}
	base := opts.Webhooks
	extra, err := suiteWebhooks(c.Context, o, files, c.App.Reader, nil)
	if err != nil {
		return exit(err, exitUsage)
	}
	opts.Webhooks = append(base, extra...)
	for _, h := range setup.Conversions {
		opts.Conversions = append(opts.Conversions, suite.ConversionWebhook{CRD: h.CRD, Converter: h.Converter})
	}
	if o.Exec != "" {
		srv, err := startExec(c.Context, o, proj, setup)
		if err != nil {
			return exit(err, exitUsage)
		}
		defer srv.Stop()
		opts.Server = srv.Output()
	} else if err := setup.Probe(c.Context); err != nil {
		return exit(err, exitUsage)
	}
	if o.Watch {
		opts.Webhooks = base
		return watchTest(c, o, paths, opts)
	}
	rows := suite.Run(c.Context, files, opts)
	if o.Fuzz.N > 0 {
		samples := ""
		if proj != nil {
			samples = filepath.Join(proj.Dir, "config", "samples")
		}
		fuzzed, err := runFuzz(c.Context, o.Fuzz, o.Serve.GlobalOptions, setup, files, samples, fuzzCaseDir(paths), c.App.ErrWriter, log)
		if err != nil {
			return exit(err, exitUsage)
		}
		rows = append(rows, fuzzed...)
	}
	return reportTest(c, o, rows)
}

// config is the session's Config of test: no controllers, and your
// upstreams answer recorded cases without your manifests, at the path
// each case was recorded at (plan.UserWebhooks.RecordedPaths).
func (o TestOptions) config(ext Extension, log *slog.Logger) plan.Options {
	cfg := o.Serve.config(ext, log)
	cfg.Controllers = nil
	cfg.User.RecordedPaths = true
	return cfg
}

// startExec starts --exec's server where the project (or the current
// directory) is, and waits until it accepts TLS.
func startExec(ctx context.Context, o TestOptions, proj *project.Project, setup *session.TestSetup) (*suite.Server, error) {
	dir := ""
	if proj != nil {
		dir = proj.Dir
	}
	return suite.StartServer(ctx, suite.ExecOptions{Command: o.Exec, Dir: dir, Ready: setup.Probe, Deadline: o.ExecTimeout})
}

func testWebhooks(setup *session.TestSetup) []*suite.Webhook {
	out := make([]*suite.Webhook, 0, len(setup.Webhooks))
	for _, w := range setup.Webhooks {
		out = append(out, &suite.Webhook{Configuration: w.Configuration, Path: w.Path, Mutating: w.Mutating, Validating: w.Validating, Handler: w.Handler})
	}
	return out
}

func reportTest(c *cli.Context, o TestOptions, rows []suite.Row) error {
	if err := report.Write(c.App.Writer, o.Output, suite.Report(rows)); err != nil {
		return err
	}
	n := suite.Count(rows)
	summary := fmt.Sprintf("%d results: %d passed, %d failed, %d errors", n.Rows, n.Passed, n.Failed, n.Errors)
	if n.Notes > 0 {
		summary += fmt.Sprintf(" (%d notes)", n.Notes)
	}
	if o.Update && n.Passed < n.Rows {
		updated, err := suite.Update(rows, c.App.ErrWriter)
		if err != nil {
			return exit(err, exitUsage)
		}
		fmt.Fprintf(c.App.ErrWriter, "%s; %d cases updated\n", summary, updated)
		return nil
	}
	switch {
	case n.Errors > 0:
		return cli.Exit(summary, exitUsage)
	case n.Failed > 0:
		return cli.Exit(summary, exitFailure)
	}
	fmt.Fprintln(c.App.ErrWriter, summary)
	return nil
}

// TestInitOptions are test init's flags.
type TestInitOptions struct {
	FromRecords []string
	FromObjects []string
	CRD         []string
	Out         string
}

func testInitCommand() (*cli.Command, *binder) {
	var o TestInitOptions
	b := &binder{}
	bind(b, &o.FromRecords, "from-records", catUser, "recordings: start --record-dir directories or files, or the inspector's downloads (repeatable)")
	bind(b, &o.FromObjects, "from-objects", catUser, "objects (file, directory, kustomize directory, or - for stdin; repeatable): a case per object, a create sent to its CRD's rules, expecting what they answer now")
	bind(b, &o.CRD, "crd", catUser, "with --from-objects: the CRDs of the objects (file, directory, kustomize directory; repeatable; default in a kubebuilder project: config/crd); CRDs among the objects count too")
	bind(b, &o.Out, "out", catOutput, "the suite directory to write the cases into (created; existing cases are never overwritten)")
	cmd := &cli.Command{
		Name:  "init",
		Usage: "write a suite from recordings, or from objects and their CRDs: one case per distinct review or object, expecting what is answered now",
		Description: `init reads what start --record-dir recorded (or the inspector's downloads) and writes one
case file per distinct review into --out, named webhook_resource_name_operation.yaml, each
expecting the recorded answer. Secrets' data stays redacted as it was recorded.

With --from-objects instead, each object whose kind a CRD defines (--crd, the project's
config/crd, or CRDs among the objects) becomes a case file, a create sent to that CRD's
schema and CEL rules, expecting what they answer now (allowed with its warnings, or
denied with the apiserver's message); run them with test --crd.`,
		Flags: b.flags,
		Action: func(c *cli.Context) error {
			b.load(c)
			if (len(o.FromRecords) == 0) == (len(o.FromObjects) == 0) || o.Out == "" {
				return usage(errors.New("test init needs --from-records DIR or --from-objects DIR, and --out SUITE_DIR"))
			}
			if len(o.FromObjects) > 0 {
				return runTestInitObjects(c, o)
			}
			entries, err := record.ReadEntries(o.FromRecords)
			if err != nil {
				return usage(err)
			}
			rep, err := suite.Init(entries, o.Out, c.App.Writer)
			if err != nil {
				return exit(err, exitUsage)
			}
			for _, s := range rep.Skipped {
				fmt.Fprintf(c.App.ErrWriter, "skipped %s\n", s)
			}
			fmt.Fprintf(c.App.ErrWriter, "%d cases written to %s (%d duplicate reviews, %d recordings skipped)\n", rep.Written, o.Out, rep.Duplicates, len(rep.Skipped))
			return nil
		},
	}
	return cmd, b
}
