package suite

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// Configuration kinds a case may name (Case.ConfigurationKind): a
// webhook's name is unique only within its configuration, so a mutating
// and a validating webhook may share one.
const (
	MutatingWebhookConfiguration   = "MutatingWebhookConfiguration"
	ValidatingWebhookConfiguration = "ValidatingWebhookConfiguration"
	MutatingAdmissionPolicy        = "MutatingAdmissionPolicy"
	ValidatingAdmissionPolicy      = "ValidatingAdmissionPolicy"
	// CustomResourceDefinition is a CRD's rules (Webhook.Schema).
	CustomResourceDefinition = "CustomResourceDefinition"
)

// ConfigurationKinds lists what Case.ConfigurationKind takes.
var ConfigurationKinds = []string{MutatingWebhookConfiguration, ValidatingWebhookConfiguration, MutatingAdmissionPolicy, ValidatingAdmissionPolicy, CustomResourceDefinition}

// Kind is the kind of the configuration that declares w: a webhook
// configuration's, or the policy's own for --policy.
func (w *Webhook) Kind() string {
	switch {
	case w.Policy:
		return w.Configuration
	case w.Schema != nil:
		return CustomResourceDefinition
	case w.Mutating != nil:
		return MutatingWebhookConfiguration
	}
	return ValidatingWebhookConfiguration
}

// target is the webhook a case names: names (or hookback paths), the kind
// of their configuration, and the path a recorded review was served at.
type target struct {
	names      []string
	kind, path string
}

// targetOf is what the case names; a recording's case that names nothing
// names the webhook it was recorded from.
func targetOf(l *Loaded, in *input) target {
	t := target{names: l.Webhooks, kind: l.ConfigurationKind, path: l.Path}
	if len(t.names) == 0 && in.recordedWebhook != "" {
		t.names = []string{in.recordedWebhook}
		t.kind = cmpOr(t.kind, in.recordedKind)
		t.path = cmpOr(t.path, in.recordedPath)
	}
	return t
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// named picks the webhooks a case names, whether or not they would match,
// in the order of their configurations: for each name, the webhooks of
// that name (or served at that path) and of the case's configuration
// kind; among them, those served at the case's recorded path when any is
// (the manifests may have moved it). A name that webhooks of two kinds
// share is an error unless the case says which kind it means. A recorded
// case whose webhook is not among hooks goes, with opts.Recorded set (your
// server without its manifests), to your server at its path.
func named(t target, hooks []*Webhook, opts Options) ([]picked, error) {
	var chosen, extra []*Webhook
	for _, name := range t.names {
		found := slices.DeleteFunc(slices.Clone(hooks), func(w *Webhook) bool {
			return w.Name() != name && w.Path != name || t.kind != "" && w.Kind() != t.kind
		})
		if at := slices.DeleteFunc(slices.Clone(found), func(w *Webhook) bool { return w.Path != t.path }); t.path != "" && len(at) > 0 {
			found = at
		}
		if err := ambiguous(name, found, t.kind); err != nil {
			return nil, err
		}
		if len(found) > 0 {
			chosen = append(chosen, found...)
			continue
		}
		w, err := recordedWebhook(name, t, hooks, opts)
		if err != nil {
			return nil, err
		}
		extra = append(extra, w)
	}
	var out []picked
	// In the order of their configurations, as the apiserver calls them,
	// whatever the order they are named in.
	for _, w := range hooks {
		if slices.Contains(chosen, w) {
			out = append(out, picked{w: w})
		}
	}
	for _, w := range extra {
		out = append(out, picked{w: w})
	}
	return out, nil
}

// ambiguous refuses a name found in configurations of more than one kind
// when the case does not say which it means.
func ambiguous(name string, found []*Webhook, kind string) error {
	if kind != "" {
		return nil
	}
	var kinds, where []string
	for _, w := range found {
		if !slices.Contains(kinds, w.Kind()) {
			kinds = append(kinds, w.Kind())
			where = append(where, fmt.Sprintf("a %s (%s)", w.Kind(), w.Configuration))
		}
	}
	if len(kinds) < 2 {
		return nil
	}
	return fmt.Errorf("webhook %q is in %s: a name is unique only within its configuration; set configurationKind to the one the case means (%s)",
		name, strings.Join(where, " and in "), strings.Join(kinds, " or "))
}

// recordedWebhook is the webhook a recorded case came from when its
// configuration is not at hand: your server at the recorded path, of the
// recorded kind (a kind not recorded is taken as validating: a case sent
// to one webhook is judged alike either way).
func recordedWebhook(name string, t target, hooks []*Webhook, opts Options) (*Webhook, error) {
	switch {
	case opts.Recorded != nil && t.path == "":
		return nil, errors.New(unmatched(opts))
	case opts.Recorded == nil:
		what := "webhook"
		if t.kind != "" {
			what = t.kind + " webhook"
		}
		return nil, fmt.Errorf("no %s %q among: %s", what, name, strings.Join(webhookNames(hooks), ", "))
	}
	h, err := opts.Recorded(t.path)
	if err != nil {
		return nil, fmt.Errorf("webhook %q, recorded at %s: %w", name, t.path, err)
	}
	versions := []string{"v1", "v1beta1"}
	w := &Webhook{Configuration: "(recorded)", Path: t.path, Handler: h}
	if t.kind == MutatingWebhookConfiguration {
		w.Mutating = &admissionregistrationv1.MutatingWebhook{Name: name, AdmissionReviewVersions: versions}
	} else {
		w.Validating = &admissionregistrationv1.ValidatingWebhook{Name: name, AdmissionReviewVersions: versions}
	}
	return w, nil
}

// unmatched is why a case that must be matched against your webhooks'
// configurations cannot run without them.
func unmatched(opts Options) string {
	if opts.Unmatched != "" {
		return opts.Unmatched
	}
	return "which of your webhooks it goes to is decided by their configurations, and none were given"
}

// webhookNames lists hooks for a message: name, and kind where two kinds
// share a name.
func webhookNames(hooks []*Webhook) []string {
	out := make([]string, 0, len(hooks))
	for _, w := range hooks {
		out = append(out, w.Name()+" ("+w.Kind()+")")
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}
