package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/hookback/hookback/audit"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/session"
)

var auditExamples = []Example{
	{Command: "hookback audit --webhooks pod-name", Comment: "which existing pods would the built-in pod-name deny?"},
	{Command: "hookback audit --webhooks pod-name,pod-lifespan -o junit > audit.xml", Comment: "a JUnit report for CI: a failure per denial"},
	{Command: "hookback audit --webhooks pod-lifespan --operation UPDATE -o json", Comment: "send no-change UPDATEs; JSON, one object per review"},
}

// auditFlagNames are start's webhook inputs plus audit's own.
var auditFlagNames = []string{"session", "template", "webhooks", "banned-words", "sidecar-image", "cpu-oversell-factor",
	"webhook-config", "upstream", "upstream-ca", "upstream-insecure", "timeout", "operation", "output", "fail-on", "concurrency"}

func auditCommand(ext Extension) *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "send the cluster's existing objects through the webhooks as dry-run reviews and report what each would do",
		Description: `audit takes the same webhooks as start (built-ins, --template, your own --webhook-config
with --upstream), lists the existing objects each one's rules and selectors match (paged
lists, no watch), and sends each through the webhook as the review the apiserver would
send, dryRun true: a CREATE of the object as it is when the rules include CREATE, else an
UPDATE that changes nothing (oldObject = object); --operation forces one. Built-ins run
in this process; your webhooks' reviews go to --upstream with start's answer checks.
It registers nothing and writes nothing to the cluster. matchConditions are not
evaluated (a webhook is audited as if they matched), and each mutating webhook sees the
object as stored, not as earlier webhooks patched it (docs/audit-and-shadow.md).

Exit status: 0 when everything is allowed, 1 when anything is denied (or patched, with
--fail-on patched), 2 on an error: bad flags, an upstream that cannot be reached, or a
row whose webhook or list failed.` + examplesText(auditExamples),
		Flags:  withGlobal(auditFlagNames...),
		Action: func(c *cli.Context) error { return runAudit(c, ext) },
	}
}

// AuditOptions are audit's flags.
type AuditOptions struct {
	GlobalOptions
	Session, Template, Output, FailOn string
	Operation                         admissionregistrationv1.OperationType
	Concurrency                       int
	Webhooks                          []string
	ServeOptions                      ServeOptions
}

func auditOptions(c *cli.Context) AuditOptions {
	o := AuditOptions{GlobalOptions: globalOptions(c), Session: c.String("session"), Template: c.String("template"),
		Output: c.String("output"), FailOn: c.String("fail-on"), Concurrency: c.Int("concurrency"),
		Operation: admissionregistrationv1.OperationType(strings.ToUpper(c.String("operation"))),
		Webhooks:  strings.Split(c.String("webhooks"), ",")}
	s := ServeOptions{GlobalOptions: o.GlobalOptions, Session: o.Session, Template: o.Template, Webhooks: o.Webhooks,
		Controllers: []string{"none"}, Webhook: webhookOptions(c)}
	s.User, s.userErr = userWebhooks(c)
	s.User.Timeout = c.Duration("timeout")
	o.ServeOptions = s
	return o
}

// Validate reports every problem at once.
func (o AuditOptions) Validate() error {
	s := o.ServeOptions
	errs := []error{o.GlobalOptions.Validate(), validateWebhookOptions(s.Webhook), s.userErr, s.User.Validate()}
	if _, err := session.SelectWebhooks(o.Webhooks); err != nil {
		errs = append(errs, fmt.Errorf("--webhooks: %w", err))
	}
	if !slices.Contains(audit.Formats, o.Output) {
		errs = append(errs, fmt.Errorf("--output %q: want %s", o.Output, strings.Join(audit.Formats, ", ")))
	}
	if o.FailOn != "denied" && o.FailOn != "patched" {
		errs = append(errs, fmt.Errorf("--fail-on %q: want denied or patched (patched also fails on denials)", o.FailOn))
	}
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("--concurrency %d: want 1 or more", o.Concurrency))
	}
	errs = append(errs, audit.Options{Operation: o.Operation, Lister: &audit.ClusterLister{}}.Validate())
	return errors.Join(errs...)
}

func runAudit(c *cli.Context, ext Extension) error {
	o := auditOptions(c)
	if err := o.Validate(); err != nil {
		return usage(err)
	}
	log := o.logger(c.App.ErrWriter)
	cfg := o.ServeOptions.config(ext, log)
	cfg.Template = registration.Template{Path: o.Template, Default: ext.Template}
	progress, done := newProgress(c.App.ErrWriter)
	results, err := session.Audit(c.Context, cfg, session.AuditConfig{Operation: o.Operation, Concurrency: o.Concurrency, Progress: progress})
	done()
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	if err := audit.Write(c.App.Writer, o.Output, results, o.FailOn == "patched"); err != nil {
		return err
	}
	n := audit.Count(results)
	summary := fmt.Sprintf("%d reviews: %d allowed, %d denied, %d patched, %d errors", n.Reviews, n.Allowed, n.Denied, n.Patched, n.Errors)
	switch {
	case n.Errors > 0:
		return cli.Exit(summary, exitUsage)
	case n.Denied > 0, o.FailOn == "patched" && n.Patched > 0:
		return cli.Exit(summary, exitFailure)
	}
	fmt.Fprintln(c.App.ErrWriter, summary)
	return nil
}

// newProgress counts reviews on a terminal, at most ten times a second;
// on anything else (a CI log, a file) it shows nothing. done clears it.
func newProgress(w io.Writer) (func(int), func()) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, func() {}
	}
	var mu sync.Mutex
	var last time.Time
	shown := false
	progress := func(n int) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < 100*time.Millisecond {
			return
		}
		last, shown = time.Now(), true
		fmt.Fprintf(f, "\rauditing: %d reviews", n)
	}
	return progress, func() {
		mu.Lock()
		defer mu.Unlock()
		if shown {
			fmt.Fprint(f, "\r\033[K")
		}
	}
}
