package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/hookback/hookback/audit"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/project"
	"github.com/hookback/hookback/session"
)

var auditExamples = []Example{
	{Command: "hookback audit --webhooks pod-lifespan", Comment: "which existing pods would the built-in pod-lifespan patch, and how?"},
	{Command: "hookback audit --webhooks pod-lifespan -o junit > audit.xml", Comment: "a JUnit report for CI: a testcase per object, a failure per denial"},
	{Command: "hookback audit --webhooks pod-name --operation UPDATE -o json", Comment: "no-change UPDATEs instead of CREATEs (pod-name judges only what changed); one JSON object per review"},
	{Command: "hookback audit --policy policies/ --webhooks none", Comment: "what your ValidatingAdmissionPolicies and MutatingAdmissionPolicies would do to every existing object, evaluated with the apiserver's own code"},
	{Command: "hookback audit --crd widgets-crd.yaml", Comment: "a CRD upgrade: which stored Widgets the new version's rules would refuse on any update, or only when their failing field changes"},
	{Command: "hookback audit --policy policies/policy.yaml --webhooks pod-name", Comment: "a migration: a webhook and the policy meant to replace it, side by side on every existing object; exit 1 on any disagreement (--webhook-config and --upstream for yours)"},
}

func auditCommand(ext Extension) (*cli.Command, *binder) {
	o, b := defaultAuditOptions(), &binder{}
	o.bind(b)
	cmd := &cli.Command{
		Name:  "audit",
		Usage: "send the cluster's existing objects through the webhooks as dry-run reviews and report what each would do",
		Description: `audit takes the same webhooks as start (built-ins, --template, your own --webhook-config
with --upstream, project mode), lists the existing objects each one's rules and selectors
match (paged lists, no watch), and sends each through the webhook as the review the
apiserver would send, dryRun true: a CREATE of the object as it is when the rules include
CREATE, else an UPDATE that changes nothing (oldObject = object); --operation forces one.
Built-ins run in this process; your webhooks' reviews go to --upstream with start's answer
checks. It registers nothing and writes nothing to the cluster. matchConditions are not
evaluated (a webhook is audited as if they matched), and each mutating webhook sees the
object as stored, not as earlier webhooks patched it (docs/audit-and-shadow.md).
--policy adds ValidatingAdmissionPolicies and MutatingAdmissionPolicies (admissionregistration.k8s.io/v1,
with their bindings and params; file, directory, kustomize directory or -), each audited like a
webhook and evaluated with the apiserver's own policy code (docs/policies.md); without
--webhooks, the built-ins are then off. With webhooks and policies both, each webhook is
compared with each policy on the objects both were sent (decision, message, the objects their
patches produce): agreements and disagreements per pair, after the reviews.
For each CRD of your manifests with a conversion webhook, every stored object is converted
through --upstream to each other served version and back (CONVERT v1->v2->v1 rows): a
field lost or changed on the way is reported (lost), as is a conversion refused (failed).
--crd NEW.yaml audits a CRD upgrade instead of webhooks: every stored object of the CRD,
listed in its storage version, is judged against the new version's schema and rules with
the apiserver's code (docs/crd-validation.md): valid, failing only when a failing field is
changed (ratcheting keeps it updatable), or failing on any update.

Exit status: 0 when everything is allowed, 1 when anything is denied, lost or failed (or
patched, with --fail-on patched) or a webhook and a policy disagree, 2 on an error: bad flags, an upstream that cannot be reached, or a
row whose webhook or list failed.` + examplesText(auditExamples),
		Flags: b.flags,
		Action: func(c *cli.Context) error {
			b.load(c)
			return runAudit(c, ext, o)
		},
	}
	return cmd, b
}

// AuditOptions are audit's flags: start's webhook inputs, and how to
// send and report.
type AuditOptions struct {
	// Serve holds the webhook inputs, bound as start binds them.
	Serve             ServeOptions
	Operation, Output string
	FailOn            string
	Concurrency       int
	// Policy are --policy's manifests.
	Policy []string
	// CRD are --crd's manifests: the new CRDs whose stored objects are judged.
	CRD []string
}

func defaultAuditOptions() AuditOptions {
	return AuditOptions{Serve: defaultServeOptions(), Output: report.FormatTable, FailOn: "denied", Concurrency: 8}
}

func (o *AuditOptions) bind(b *binder) {
	s := &o.Serve
	p := &s.Plan
	s.GlobalOptions.bind(b)
	bind(b, &p.Session, "session", catCluster, "session name, as start would register the webhooks under it (default: <user>-<host>)", sets("plan.Options.Session"))
	bind(b, &p.Certs.StateDir, "state-dir", catServing, "where start keeps its local CA: in project mode audit trusts it for the manager's certificate", sets("certs.Options.StateDir"))
	bind(b, &p.Template.Path, "template", catServing, "webhook configuration template (default: the built-in webhook-url.yaml.tmpl)", sets("registration.Template.Path"))
	bind(b, &p.Webhooks, "webhooks", catBuiltins, "built-in webhooks to audit, all or none (comma list or repeated: "+strings.Join(webhooks.Names(), ", ")+"); in project mode and with --policy the default is none", sets("plan.Options.Webhooks"))
	bindWebhookOptions(b, &p.WebhookOptions)
	bind(b, &p.ProjectDir, "project", catUser, "kubebuilder or Operator SDK project root, or auto: the current directory when it has a PROJECT file and no --webhook-config is given; its config/default, the default built-ins off, --upstream "+project.DefaultUpstream, sets("plan.Options.ProjectDir"))
	bind(b, &p.User.Manifests, "webhook-config", catUser, "your webhook configurations as written for the cluster (file, directory, kustomize directory, bundle, or - for stdin; repeatable)", sets("plan.UserWebhooks.Manifests"))
	s.bindUpstream(b)
	bind(b, &p.User.Timeout, "timeout", catUser, "your webhooks: override every timeoutSeconds, 1s to 30s; 0 keeps each one's", sets("plan.UserWebhooks.Timeout"))
	bind(b, &p.Scope.Namespaces, "namespace", catScope, "audit only objects in this namespace (repeatable), as start --namespace would scope the webhooks; naming one also opts it in to pod-name and pod-lifespan", alias("n"), sets("registration.Scope.Namespaces"))
	bind(b, &p.Scope.NamespaceSelector, "namespace-selector", catScope, "audit only objects in namespaces matching this label selector (kubectl syntax)", sets("registration.Scope.NamespaceSelector"))
	bind(b, &p.Scope.ObjectSelector, "object-selector", catScope, "audit only objects matching this label selector (kubectl syntax)", sets("registration.Scope.ObjectSelector"))
	bind(b, &p.Scope.OnlyMine, "only-mine", catScope, "scope as start --only-mine does (a matchCondition, not evaluated: the reviews carry your identity anyway)", sets("registration.Scope.OnlyMine"))
	bind(b, &o.Policy, "policy", catUser, "ValidatingAdmissionPolicies and MutatingAdmissionPolicies (admissionregistration.k8s.io/v1) with their bindings and params, audited beside the webhooks (file, directory, kustomize directory, or - for stdin; repeatable)")
	bind(b, &o.CRD, "crd", catCRD, "new versions of CRDs (file, directory, kustomize directory; repeatable): judge every stored object of each against it, as valid, failing only when a failing field is changed (ratcheting), or failing on any update; no webhooks are audited")
	bind(b, &o.Operation, "operation", catOutput, "send CREATE or UPDATE (a no-change update) to every webhook whose rules include it, instead of CREATE where the rules include it, else UPDATE", sets("audit.Options.Operation"))
	bind(b, &o.Output, "output", catOutput, "table, json (one object per review) or junit (a testsuite per webhook, a failure per denial)", alias("o"))
	bind(b, &o.FailOn, "fail-on", catOutput, "denied: exit 1 when any object is denied; patched: also when any is patched")
	bind(b, &o.Concurrency, "concurrency", catOutput, "reviews in flight at once", sets("audit.Options.Concurrency"))
}

func (o AuditOptions) operation() admissionregistrationv1.OperationType {
	return admissionregistrationv1.OperationType(strings.ToUpper(o.Operation))
}

// Validate reports every problem at once.
func (o AuditOptions) Validate() error {
	errs := []error{o.Serve.Validate()}
	if err := checkOutput(o.Output, audit.Report{}); err != nil {
		errs = append(errs, err)
	}
	if o.FailOn != "denied" && o.FailOn != "patched" {
		errs = append(errs, fmt.Errorf("--fail-on %q: want denied or patched (patched also fails on denials)", o.FailOn))
	}
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("--concurrency %d: want 1 or more", o.Concurrency))
	}
	errs = append(errs, audit.Options{Operation: o.operation(), Lister: &audit.ClusterLister{}}.Validate())
	return errors.Join(errs...)
}

func runAudit(c *cli.Context, ext Extension, o AuditOptions) error {
	if len(o.CRD) > 0 {
		return runCRDAudit(c, o)
	}
	if len(o.Policy) > 0 && !c.IsSet("webhooks") {
		o.Serve.Plan.Webhooks = nil // the policies alone
	}
	if err := o.Validate(); err != nil {
		return usage(errors.Join(err, o.Serve.config(ext, discardLog).Validate()))
	}
	log := o.Serve.logger(c.App.ErrWriter)
	opts := o.Serve.config(ext, log)
	opts.Controllers = nil
	cfg, err := plan.Complete(opts)
	if err != nil {
		return exit(err, exitUsage)
	}
	progress, done := newProgress(c.App.ErrWriter, progressEvery)
	results, err := session.Audit(c.Context, cfg, session.AuditConfig{Operation: o.operation(), Concurrency: o.Concurrency, Progress: progress,
		Policies: plan.PolicyInput{Paths: o.Policy, Stdin: c.App.Reader}})
	done()
	if err != nil {
		return exit(err, exitUsage)
	}
	compared := audit.Compare(results)
	if err := report.Write(c.App.Writer, o.Output, audit.Report{Results: results, Comparisons: compared, FailPatched: o.FailOn == "patched"}); err != nil {
		return err
	}
	n := audit.Count(results)
	summary := fmt.Sprintf("%d reviews: %d allowed, %d denied, %d patched, %d errors", n.Reviews, n.Allowed, n.Denied, n.Patched, n.Errors)
	if n.Unconvertible > 0 {
		summary += fmt.Sprintf(", %d objects that cannot be converted to a webhook's version", n.Unconvertible)
	}
	if n.RoundTrips > 0 {
		summary += fmt.Sprintf("; %d conversion round trips: %d kept, %d lost fields, %d failed", n.RoundTrips, n.Kept, n.Lost, n.Failed)
	}
	if len(compared) > 0 {
		summary += fmt.Sprintf("; webhooks beside policies: %d pairs, %d disagreements", len(compared), audit.DisagreementCount(compared))
	}
	switch {
	case n.Errors > 0:
		return cli.Exit(summary, exitUsage)
	case n.Findings(o.FailOn == "patched") > 0, audit.DisagreementCount(compared) > 0:
		return cli.Exit(summary, exitFailure)
	}
	fmt.Fprintln(c.App.ErrWriter, summary)
	return nil
}
