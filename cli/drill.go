package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/fault"
	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/lint"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/session"
)

var drillExamples = []Example{
	{Command: "hookback drill --webhook-config my-webhooks.yaml --upstream http://127.0.0.1:8090 -n default --fault timeout", Comment: "your webhooks never answering, with hookback's default failurePolicy Ignore: do pods still start in default and kube-system, do nodes still heartbeat? (--keep-failure-policy: as written)"},
	{Command: "hookback drill --webhook-config my-webhooks.yaml --upstream http://127.0.0.1:8090 -n default --fault refuse --fault slow=1s -o junit > drill.xml", Comment: "each fault in turn, one session each; a JUnit report for CI, a failure per request that failed"},
}

func drillCommand(ext Extension) (*cli.Command, *binder) {
	o, b := defaultDrillOptions(), &binder{}
	o.bind(b)
	cmd := &cli.Command{
		Name:  "drill",
		Usage: "register your webhooks as start does, make them fail on purpose, and show what the apiserver does to the requests the cluster needs",
		Description: `drill registers your webhook configurations as start would (scoped, labelled, removed at
the end of each fault, and after a crash by the next run) once per --fault, with that fault
injected: refuse, timeout (never answers), error (HTTP 500) or slow=DUR. Under each it sends
dry-run requests: a pod in each --namespace and in kube-system, a node status update, a node
lease renewal, and reports how the apiserver answered (admitted, denied, timed out, failed)
with the latency and message. It exits 1 when any of them failed (docs/safety.md).` + examplesText(drillExamples),
		Flags: b.flags,
		Action: func(c *cli.Context) error {
			b.load(c)
			return runDrill(c, ext, o)
		},
	}
	return cmd, b
}

// DrillOptions are drill's flags: start's webhook inputs, the faults, the
// output.
type DrillOptions struct {
	ServeOptions
	Faults []string
	// Objects are sent too, each a dry-run create (--object).
	Objects []string
	Output  string
}

func defaultDrillOptions() DrillOptions {
	o := DrillOptions{ServeOptions: defaultServeOptions(), Output: report.FormatTable}
	o.Plan.Webhooks, o.Plan.Controllers = nil, nil // your webhooks alone
	return o
}

func (o *DrillOptions) bind(b *binder) {
	o.ServeOptions.bind(b)
	bind(b, &o.Plan.HealthAddress, "health-address", catServing, "host:port for /healthz, /readyz and /metrics while each fault's session runs", sets("plan.Options.HealthAddress"))
	bind(b, &o.Faults, "fault", catUser, "a fault to drill (repeatable, one session each, in order): refuse, timeout, error or slow=DUR")
	bind(b, &o.Objects, "object", catUser, "an object to send too, as a dry-run create in the version it names, in its namespace (else the first -n): a kind of yours, or a resource in another served version (file or directory; repeatable)")
	bind(b, &o.Output, "output", catOutput, "table, json or junit (a testsuite per fault, a failure per request that failed)", alias("o"))
}

// faults parses every --fault, reporting every bad one.
func (o DrillOptions) faults() ([]fault.Fault, error) {
	var out []fault.Fault
	var errs []error
	for _, s := range o.Faults {
		f, err := fault.Parse(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("--%w", err))
			continue
		}
		out = append(out, f)
	}
	if len(o.Faults) == 0 {
		errs = append(errs, errors.New("--fault: give at least one: refuse, timeout, error or slow=DUR"))
	}
	return out, errors.Join(errs...)
}

func runDrill(c *cli.Context, ext Extension, o DrillOptions) error {
	faults, ferr := o.faults()
	if err := errors.Join(ferr, o.ServeOptions.Validate(), checkOutput(o.Output, &session.DrillReport{})); err != nil {
		return usage(err)
	}
	log := o.logger(c.App.ErrWriter)
	cfg, err := plan.Complete(o.config(ext, log))
	if err != nil {
		return configUsage(err)
	}
	yours := cfg.Options().User.Manifests
	if len(yours) == 0 {
		return usage(errors.New("--webhook-config: drill needs your webhook configurations (or a project)"))
	}
	in := drillLint(yours, log)
	var findings []lint.Finding
	var own []lint.OwnPod
	if in != nil {
		findings, own = lint.Run(in, lint.Options{}).Findings, in.OwnPods()
	}
	docs, err := manifests.Load(o.Objects, c.App.Reader)
	if err != nil {
		return usage(fmt.Errorf("--object: %w", err))
	}
	objects := make([]*unstructured.Unstructured, len(docs))
	for i, d := range docs {
		objects[i] = d.Object
	}
	rep, err := session.Drill(c.Context, cfg, faults, own, objects)
	if rep != nil {
		rep.Predict(findings)
		if werr := report.Write(c.App.Writer, o.Output, rep); werr != nil {
			return werr
		}
	}
	if err != nil {
		return configUsage(err)
	}
	if n := len(rep.Failing()); n > 0 {
		return cli.Exit(fmt.Sprintf("drill: %d of %d requests failed", n, len(rep.Results)), exitFailure)
	}
	return nil
}

// drillLint is lint's input from the manifests as written: its findings
// are the report's predictions, its workloads' pods requests the drill
// sends. nil for stdin, which the drill already read.
func drillLint(paths []string, log *slog.Logger) *lint.Input {
	if len(paths) == 0 || slices.Contains(paths, "-") {
		return nil
	}
	docs, err := manifests.Load(paths, nil)
	if err == nil {
		var in *lint.Input
		if in, err = lint.Read(docs); err == nil {
			return in
		}
	}
	log.Warn("lint's predictions left out", "error", err)
	return nil
}
