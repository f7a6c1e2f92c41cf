package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/client-go/dynamic"

	"github.com/hookback/hookback/crdvalidate"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/kubeconfig"
)

var validateExamples = []Example{
	{Command: "hookback validate --crd widgets-crd.yaml widget.yaml", Comment: "judge an object as the apiserver would on create: schema, defaults, pruning, CEL rules; exit 1 if any is invalid"},
	{Command: "hookback validate --crd widgets-crd.yaml --old widget.yaml widget-v2.yaml", Comment: "an update of the stored widget.yaml: transition rules (oldSelf), immutable fields, ratcheting of what did not change"},
	{Command: "hookback validate --crd widgets-crd.yaml --old widget.yaml --subresource status widget-status.yaml", Comment: "a status update, judged against the status schema and rules"},
	{Command: "hookback validate deployment.yaml", Comment: "a native kind, with no CRD: judged against the bundled OpenAPI schema of Kubernetes 1.36 (types, enums, required fields, unknown fields; not the native types' hand-written validation)"},
	{Command: "hookback validate --schemas-from-cluster --field-validation Strict deployment.yaml", Comment: "against the schemas of your cluster's own version, unknown fields refused as kubectl refuses them"},
	{Command: "hookback validate --crd-from-cluster widget.yaml", Comment: "the CRD as the cluster of --kubeconfig serves it (needs list on customresourcedefinitions)"},
	{Command: "hookback validate --crd-cost --crd widgets-crd.yaml", Comment: "each CEL rule's estimated cost against the apiserver's per-rule and per-CRD budgets"},
	{Command: "hookback validate --crd widgets-crd.yaml -o junit - < widget.yaml > validate.xml", Comment: "objects from stdin; a JUnit report for CI, a testcase per object"},
}

// ValidateOptions are validate's flags.
type ValidateOptions struct {
	Global          GlobalOptions
	CRD             []string
	CRDFromCluster  bool
	Old             []string
	Subresource     string
	Namespace       string
	FieldValidation string
	Output          string
	CRDCost         bool
	Watch           bool

	SchemasFromCluster bool
}

func defaultValidateOptions() ValidateOptions {
	return ValidateOptions{Global: defaultGlobalOptions(), Output: "text", FieldValidation: crdvalidate.FieldValidationWarn}
}

func (o *ValidateOptions) bind(b *binder) {
	o.Global.bind(b)
	bind(b, &o.CRD, "crd", catCRD, "CustomResourceDefinitions (file, directory, kustomize directory, or - for stdin; repeatable); CRDs among the objects count too (default in a kubebuilder project: config/crd)", sets("crdvalidate.Options.CRDs"))
	bind(b, &o.CRDFromCluster, "crd-from-cluster", catCRD, "also read the CRDs of the objects' kinds from the cluster of --kubeconfig (those --crd does not give; needs list on customresourcedefinitions)", sets("crdvalidate.Options.FromCluster"))
	bind(b, &o.Old, "old", catCRD, "the stored objects: each object is judged as an update of the one of the same kind, namespace and name here (file or directory; repeatable)", sets("crdvalidate.Options.Old"))
	bind(b, &o.Subresource, "subresource", catCRD, "status: judge the objects as status updates of their --old objects", sets("crdvalidate.Options.Subresource"))
	bind(b, &o.Namespace, "namespace", catCRD, "the namespace of namespaced objects that name none (default: default)", alias("n"), sets("crdvalidate.Options.Namespace"))
	bind(b, &o.FieldValidation, "field-validation", catCRD, "unknown fields: Warn returns them as warnings (the apiserver's default), Strict refuses the object (kubectl's)", sets("crdvalidate.Options.FieldValidation"))
	bind(b, &o.CRDCost, "crd-cost", catCRD, "print each CEL rule's estimated cost against the per-rule and per-CRD budgets the apiserver enforces, instead of judging objects (exit 2 when over budget)")
	bind(b, &o.SchemasFromCluster, "schemas-from-cluster", catCRD, "judge native kinds (Deployment, ConfigMap...) against the OpenAPI schemas of the cluster of --kubeconfig, not the bundled ones of Kubernetes 1.36", sets("crdvalidate.Options.Schemas"))
	bind(b, &o.Watch, "watch", catCRD, "keep running: judge again on every change to the CRDs, objects or old objects, printing only the objects whose verdict changed; Ctrl-C stops")
	bind(b, &o.Output, "output", catOutput, "text (the apiserver's messages), table, json or junit (a testcase per object)", alias("o"))
}

func validateCommand() (*cli.Command, *binder) {
	o, b := defaultValidateOptions(), &binder{}
	o.bind(b)
	cmd := &cli.Command{
		Name:      "validate",
		Usage:     "judge custom resources against their CRD's schema and CEL rules as the apiserver would, with no cluster",
		ArgsUsage: "FILE|DIR|-...",
		Description: `validate checks each CRD as the apiserver checks it on create (its schema, its CEL rules'
compilation and cost), then judges each object with the apiserver's own code
(k8s.io/apiextensions-apiserver): pruning and unknown-field warnings, defaulting, OpenAPI
validation, list types, embedded objects and the CEL rules with their cost budgets; with
--old, as an update (transition rules with oldSelf, optionalOldSelf, ratcheting of what
did not change); with --subresource status, as a status update. The messages are the
apiserver's, text for text. Native kinds (Deployment, ConfigMap...) are judged against
the OpenAPI schema of their group-version, bundled or the cluster's. docs/crd-validation.md.

Exit status: 0 when every object is valid, 1 when any is invalid, 2 on bad input: an
unreadable file, a CRD the apiserver would refuse (with its reason), an object no CRD
defines.` + examplesText(validateExamples),
		Flags: b.flags,
		Action: func(c *cli.Context) error {
			b.load(c)
			return runValidate(c, o)
		},
	}
	return cmd, b
}

// Validate reports every problem at once.
func (o ValidateOptions) Validate() error {
	return checkOutput(o.Output, crdvalidate.Report{})
}

func runValidate(c *cli.Context, o ValidateOptions) error {
	opts := crdvalidate.Options{CRDs: o.CRD, Objects: c.Args().Slice(), Old: o.Old, Subresource: o.Subresource,
		Namespace: o.Namespace, FieldValidation: o.FieldValidation}
	if len(opts.CRDs) == 0 && !o.CRDFromCluster {
		if dir := crdvalidate.ProjectCRDs("."); dir != "" {
			opts.CRDs = []string{dir}
		}
	}
	if o.CRDCost {
		return runCRDCost(c, o.Output, append(opts.CRDs, opts.Objects...))
	}
	if err := errors.Join(o.Validate(), opts.Validate()); err != nil {
		return usage(err)
	}
	if o.CRDFromCluster {
		client, err := clusterClient(o.Global)
		if err != nil {
			return exit(err, exitUsage)
		}
		opts.FromCluster = client
	}
	var err error
	if opts.Schemas, err = nativeSchemas(o); err != nil {
		return exit(err, exitUsage)
	}
	if o.Watch {
		return watchValidate(c, o.Output, opts)
	}
	rep, err := crdvalidate.Run(c.Context, opts, c.App.Reader)
	if err != nil {
		return exit(explainCluster(err), exitUsage)
	}
	if err := writeValidateReport(c, o.Output, rep); err != nil {
		return err
	}
	n := rep.Count()
	summary := validateSummary(rep)
	switch {
	case n.Errors > 0:
		return cli.Exit(summary, exitUsage)
	case n.Denied > 0:
		return cli.Exit(summary, exitFailure)
	}
	fmt.Fprintln(c.App.ErrWriter, summary)
	return nil
}

func writeValidateReport(c *cli.Context, format string, rep crdvalidate.Report) error {
	return report.Write(c.App.Writer, format, rep)
}

// runCRDCost prints the rules' costs of the CRDs in paths.
func runCRDCost(c *cli.Context, format string, paths []string) error {
	if err := checkOutput(format, crdvalidate.CostReport{}); err != nil {
		return usage(fmt.Errorf("with --crd-cost: %w", err))
	}
	costs, err := crdvalidate.ReadCosts(paths, c.App.Reader)
	if err != nil {
		return exit(err, exitUsage)
	}
	if err := report.Write(c.App.Writer, format, crdvalidate.CostReport(costs)); err != nil {
		return err
	}
	for _, vc := range costs {
		if vc.OverBudget() {
			return cli.Exit(fmt.Sprintf("CRD %s version %s: its rules are over the apiserver's cost budget, which refuses it", vc.CRD, vc.Version), exitUsage)
		}
	}
	return nil
}

func validateSummary(rep crdvalidate.Report) string {
	n := rep.Count()
	return fmt.Sprintf("%d objects: %d valid, %d invalid, %d not judged", len(rep), n.Allowed, n.Denied, n.Errors)
}

// watchValidate judges again on every change and prints what changed,
// until Ctrl-C; input errors are printed and watched past.
func watchValidate(c *cli.Context, format string, opts crdvalidate.Options) error {
	if format != "text" && format != report.FormatTable {
		return usage(fmt.Errorf("--output %q with --watch: want text or table", format))
	}
	wo := crdvalidate.WatchOptions{Interval: 2 * time.Second, Debounce: 50 * time.Millisecond}
	var werr error
	err := crdvalidate.Watch(c.Context, opts, wo, func(run crdvalidate.WatchRun) {
		if run.Err != nil {
			fmt.Fprintln(c.App.ErrWriter, "Error:", withFlagNames(run.Err))
			return
		}
		if werr == nil {
			werr = writeValidateReport(c, format, run.Changed)
		}
		fmt.Fprintf(c.App.ErrWriter, "%s (%d changed); watching for changes\n", validateSummary(run.All), len(run.Changed))
	})
	if err != nil {
		return cli.Exit(withFlagNames(err).Error(), exitUsage)
	}
	return werr
}

// clusterClient is the dynamic client of --kubeconfig's cluster, for
// --crd-from-cluster.
func clusterClient(g GlobalOptions) (dynamic.Interface, error) {
	cfg, err := kubeconfig.Load(g.kubeconfig())
	if err != nil {
		return nil, err
	}
	return cfg.Dynamic(30 * time.Second)
}

// explainCluster says what a cluster's error means (kubeconfig.Explain),
// keeping an error that already says what to do as it is.
func explainCluster(err error) error {
	var fe *field.Error
	if errors.As(err, &fe) {
		return err
	}
	return kubeconfig.Explain(err)
}
