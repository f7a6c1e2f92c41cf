package lint

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookback/hookback/field"
)

// IgnoreAnnotation on an object silences rules for it, each with its
// reason: "self-deadlock=two replicas and a PDB; chain-budget=..."
// (entries separated by ";" or new lines). The findings are still
// reported, marked suppressed with the reason, and not counted.
const IgnoreAnnotation = "hookback.dev/lint-ignore"

// Options are what a run checks and what fails it.
type Options struct {
	// Disable are rule IDs not to run.
	Disable []string
	// FailOn is the least severity that fails the run ("none": nothing
	// does).
	FailOn string
	// Deadline is the request's deadline the chain-budget rule checks
	// against, whole seconds; 0 is Deadline, what a request without a
	// timeout parameter gets.
	Deadline time.Duration
}

// FailOnNone is the FailOn that fails on nothing.
const FailOnNone = "none"

// Validate names every unknown rule and severity.
func (o Options) Validate() error {
	var errs []error
	for _, id := range o.Disable {
		if !slices.Contains(RuleIDs(), id) {
			errs = append(errs, &field.Error{Field: "lint.Options.Disable", Value: fmt.Sprintf("%q", id),
				Detail: "no such rule; the rules are " + strings.Join(RuleIDs(), ", ")})
		}
	}
	if o.FailOn != FailOnNone && !slices.Contains(Severities, Severity(o.FailOn)) {
		errs = append(errs, &field.Error{Field: "lint.Options.FailOn", Value: fmt.Sprintf("%q", o.FailOn),
			Detail: "want error, warning, info or none"})
	}
	if o.Deadline != 0 && (o.Deadline < time.Second || o.Deadline%time.Second != 0) {
		errs = append(errs, &field.Error{Field: "lint.Options.Deadline", Value: o.Deadline.String(),
			Detail: "want whole seconds, 1s or more (timeoutSeconds are whole seconds)"})
	}
	return errors.Join(errs...)
}

// Run applies every rule not disabled to in. The findings are sorted by
// severity (errors first), then object, then rule; those an object's
// IgnoreAnnotation silences are marked Suppressed.
func Run(in *Input, o Options) *Report {
	rep := &Report{FailOn: o.FailOn}
	in.deadline = Deadline
	if o.Deadline > 0 {
		in.deadline = int32(o.Deadline / time.Second)
	}
	lines := newLineFinder()
	for _, r := range Rules() {
		if slices.Contains(o.Disable, r.ID) {
			continue
		}
		rep.Rules = append(rep.Rules, r)
		for _, f := range r.check(in, r) {
			obj := in.object(f.Object)
			if obj != nil {
				f.Source = obj.Doc.Source
				f.Line = lines.line(obj, f.Webhook)
				f.Suppressed = obj.ignore[f.Rule]
			}
			rep.Findings = append(rep.Findings, f)
		}
	}
	slices.SortStableFunc(rep.Findings, func(a, b Finding) int {
		return cmp.Or(b.Severity.rank()-a.Severity.rank(), cmp.Compare(a.Object, b.Object))
	})
	return rep
}

func (in *Input) object(ref string) *Object {
	for _, o := range in.objects {
		if o.Ref() == ref {
			return o
		}
	}
	return nil
}

// parseIgnore reads an IgnoreAnnotation: every entry RULE=reason, with a
// known rule and a reason.
func parseIgnore(v string) (map[string]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, e := range strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == '\n' }) {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		id, reason, _ := strings.Cut(e, "=")
		id, reason = strings.TrimSpace(id), strings.TrimSpace(reason)
		if !slices.Contains(RuleIDs(), id) {
			return nil, fmt.Errorf("annotation %s: no rule %q (the rules are %s)", IgnoreAnnotation, id, strings.Join(RuleIDs(), ", "))
		}
		if reason == "" {
			return nil, fmt.Errorf("annotation %s: %q has no reason: write %s=why it is safe here", IgnoreAnnotation, id, id)
		}
		out[id] = reason
	}
	return out, nil
}
