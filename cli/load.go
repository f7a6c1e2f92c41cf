package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/load"
	"github.com/hookback/hookback/registration"
)

var loadExamples = []Example{
	{Command: "hookback load -n default -f suite/pod-offensive.yaml --rate 20 --duration 1s", Comment: "20 dry-run pod creates a second for a second, through whatever webhooks are registered"},
	{Command: "hookback load -n default --suite suite --rate 10..40 --steps 2 --step 1s --max-p99 5s -o json", Comment: "a ramp from a suite's CREATE cases, with a gate: exit 1 when a step's p99 passes 5s"},
	{Command: "hookback load -n default -f suite/pod-offensive.yaml --rate 20 --duration 1s --plot load.svg -o junit > load.xml", Comment: "a JUnit report for CI, and latency against rate as an SVG"},
	{Command: "hookback load --start --webhooks pod-name -n default -f suite/pod-offensive.yaml --rate 20 --duration 1s", Comment: "with start's registration for the run: the built-in pod-name denies every create, and the report shows its latency from hookback's side"},
}

func loadCommand(ext Extension) (*cli.Command, *binder) {
	o, b := defaultLoadOptions(), &binder{}
	o.bind(b)
	cmd := &cli.Command{
		Name:  "load",
		Usage: "send dry-run creates through the apiserver at a rate or a ramp, and report latency per step and per webhook",
		Description: `load sends server-side dry-run creates (nothing is stored) of the objects given, from
manifests (-f), suites' CREATE cases (--suite) or recordings' CREATE reviews (--record), in
the namespace given (-n) and only there, through the apiserver and every webhook and policy
registered for them: a hookback start session's, your deployed webhook's, or, with --start,
those start registers with the same flags, for the run only (deregistered when it ends,
Ctrl-C included; its -n is the load's namespace and the session's scope). It sends at a
fixed rate (--rate 200) or a ramp (--rate 10..400 --steps 5 --step 30s), open loop, bounded
by --duration and --count, and reports per step the rate offered and achieved, the
end-to-end p50, p95, p99 and max, the outcomes by kind (ok, denied, timeout, throttled: a 429
from priority and fairness, never retried; server_error; client_error; transport), and the
knee: the first step whose p99 passes --budget or that has errors. Per webhook it reports
the apiserver's own histogram of its calls (when /metrics is readable) and, for the webhooks
a hookback session serves (its /metrics on --health-address), your server's latency and
hookback's own share. With --inspector-address (a session's inspector, or the one --start
serves), the inspector shows the steps and the plot live, at /load.
Off a cluster on this machine, more than 50 requests a second needs --allow-high-rate.
Ctrl-C stops at once and reports the steps measured (docs/load.md).

Exit status: 0 when every gate passed, 1 when a gate failed or the run was interrupted, 2
on bad flags or a run that could not start.` + examplesText(loadExamples),
		Flags: b.flags,
		Action: func(c *cli.Context) error {
			b.load(c)
			return runLoad(c, ext, o)
		},
	}
	return cmd, b
}

// LoadOptions are load's flags: start's (its registration with --start,
// its -n as the load's namespace and scope, its --health-address as where
// the session's /metrics are), and the load's own.
type LoadOptions struct {
	Start        StartOptions
	StartSession bool
	Load         load.Options
	Inputs       load.Inputs
	Gates        load.Gates
	Output, Plot string
}

func defaultLoadOptions() LoadOptions {
	st := defaultStartOptions()
	// A load's session needs no controllers and no inspector unless asked.
	st.Plan.Controllers, st.Plan.Inspector.Address = nil, ""
	return LoadOptions{Start: st, Output: report.FormatTable,
		Load: load.Options{Rate: "10", Steps: load.DefaultSteps, Step: load.DefaultStep, Timeout: load.DefaultTimeout,
			Budget: load.DefaultBudget, MaxInFlight: load.DefaultMaxInFlight}}
}

func (o *LoadOptions) bind(b *binder) {
	o.Start.bind(b)
	// start's -n is the load's namespace too: its errors name the flag.
	b.libraryFields["load.Options.Namespace"] = "namespace"
	bind(b, &o.StartSession, "start", catLoad, "register and serve the webhooks as start does (start's flags), for the run only: deregistered when it ends, Ctrl-C included")
	bind(b, &o.Inputs.Objects, "filename", catLoad, "objects to create: a manifest file, a directory, a kustomize directory, or - for stdin (repeatable); taken in turn", alias("f"), sets("load.Inputs.Objects"))
	bind(b, &o.Inputs.Suites, "suite", catLoad, "hookback test suites (files or directories): their CREATE cases' objects (repeatable)", sets("load.Inputs.Suites"))
	bind(b, &o.Inputs.Records, "record", catLoad, "recordings (start --record-dir files or directories): their CREATE reviews' objects (repeatable)", sets("load.Inputs.Records"))
	l := &o.Load
	bind(b, &l.Rate, "rate", catLoad, "requests per second: a fixed rate (200) or a ramp FROM..TO (10..400)", sets("load.Options.Rate"))
	bind(b, &l.Steps, "steps", catLoad, "a ramp's number of steps, evenly spaced from FROM to TO", sets("load.Options.Steps"))
	bind(b, &l.Step, "step", catLoad, "each step's length (a fixed rate runs one step of --duration when given)", sets("load.Options.Step"))
	bind(b, &l.Duration, "duration", catLoad, "stop after this long (0: when the steps are done)", sets("load.Options.Duration"))
	bind(b, &l.Count, "count", catLoad, "stop after this many requests (0: no bound)", sets("load.Options.Count"))
	bind(b, &l.Timeout, "request-timeout", catLoad, "each request's timeout, sent to the apiserver too (1s to 1m)", sets("load.Options.Timeout"))
	bind(b, &l.Budget, "budget", catLoad, "the p99 a step may reach before it is the knee (0: errors alone make the knee)", sets("load.Options.Budget"))
	bind(b, &l.MaxInFlight, "max-in-flight", catLoad, "requests waiting for an answer at most; one due beyond it is skipped and counted as an error", sets("load.Options.MaxInFlight"))
	bind(b, &l.AllowHighRate, "allow-high-rate", catLoad, "allow more than 50 requests a second on a cluster that is not on this machine", sets("load.Options.AllowHighRate"))
	bind(b, &o.Gates.MaxP99, "max-p99", catOutput, "gate: exit 1 when any step's p99 is above this (0: no gate)", sets("load.Gates.MaxP99"))
	bind(b, &o.Gates.MaxErrorRate, "max-error-rate", catOutput, "gate: exit 1 when any step's error rate is above this: a fraction (0.01) or a percentage (1%) (\"\": no gate)", sets("load.Gates.MaxErrorRate"))
	bind(b, &o.Output, "output", catOutput, "table, json or junit (a testcase per step and per gate)", alias("o"))
	bind(b, &o.Plot, "plot", catOutput, "also write latency against rate as an SVG to this file")
}

// Validate reports the flags' problems that need no cluster, at once.
func (o LoadOptions) Validate() error {
	errs := []error{o.Start.GlobalOptions.Validate(), o.Gates.Validate()}
	if n := len(o.Start.Plan.Scope.Namespaces); n > 1 {
		errs = append(errs, fmt.Errorf("--namespace given %d times: a load runs in one namespace", n))
	}
	if err := checkOutput(o.Output, &load.Report{}); err != nil {
		errs = append(errs, err)
	}
	l := o.load()
	l.Local = true // whether the cluster is local is known once connected
	errs = append(errs, l.Validate())
	return errors.Join(errs...)
}

// load is load.Options with the namespace of -n.
func (o LoadOptions) load() load.Options {
	l := o.Load
	if len(o.Start.Plan.Scope.Namespaces) > 0 {
		l.Namespace = o.Start.Plan.Scope.Namespaces[0]
	}
	return l
}

func runLoad(c *cli.Context, ext Extension, o LoadOptions) error {
	if err := o.Validate(); err != nil {
		return usage(err)
	}
	if err := o.startFlagsNeedStart(c); err != nil {
		return usage(err)
	}
	log := o.Start.logger(c.App.ErrWriter)
	kc, err := kubeconfig.Load(o.Start.kubeconfig())
	if err != nil {
		return usage(err)
	}
	l := o.load()
	l.Local, _ = registration.LocalCluster(kc.Server, kc.Context)
	if o.Inputs.Stdin == nil {
		o.Inputs.Stdin = c.App.Reader
	}
	objs, err := o.Inputs.Read()
	if err != nil {
		return usage(err)
	}
	if err := l.Validate(); err != nil {
		return usage(err)
	}
	cl, err := load.Connect(kc.Rest)
	if err != nil {
		return err
	}
	if o.StartSession {
		stop, err := startForLoad(c, ext, o.Start, log)
		if err != nil {
			return err
		}
		defer func() {
			if serr := stop(); serr != nil {
				log.Error("the load's session did not stop cleanly", "error", serr)
			}
		}()
	}
	metrics := ""
	if o.Start.Plan.HealthAddress != "" {
		metrics = "http://" + o.Start.Plan.HealthAddress + "/metrics"
	}
	progress := func(s load.Step) {
		log.Info("step", "step", s.Step, "offered", s.OfferedRate, "achieved", s.AchievedRate, "p99_ms", s.P99Ms, "error_rate", s.ErrorRate)
	}
	rep, err := load.Run(c.Context, cl, load.Config{Options: l, Gates: o.Gates, Objects: objs, HookbackMetrics: metrics,
		Inspector: o.Start.Plan.Inspector.Address, Log: log, Progress: progress})
	if err != nil {
		return usage(err)
	}
	if err := report.Write(c.App.Writer, o.Output, rep); err != nil {
		return err
	}
	if o.Plot != "" {
		if err := writePlot(o.Plot, rep); err != nil {
			return err
		}
	}
	switch {
	case rep.Interrupted:
		return cli.Exit("interrupted: the report holds the steps measured before", exitFailure)
	case !rep.Passed:
		return cli.Exit("a gate failed (see the report)", exitFailure)
	}
	return nil
}

func writePlot(path string, rep *load.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if err := rep.WritePlot(f); err != nil {
		f.Close()
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}
