package suite

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/lint"
	"github.com/hookback/hookback/upstream"
)

// ProbeOptions say where `lint --probe` sends its samples, and what.
type ProbeOptions struct {
	// Upstream is your webhook server, forwarded to as start forwards.
	Upstream upstream.Options
	// Cases, when given, are the samples: each CREATE case's object goes
	// to the mutating webhooks whose configuration matches it. Without
	// them each webhook gets a minimal object of each resource its rules
	// name (probeSamples).
	Cases []*File
}

// ProbeResult is what Probe found: the unsafe second calls, and the
// webhooks it could not judge (the first call failed or was refused).
type ProbeResult struct {
	Reinvocations []lint.Reinvocation
	Skipped       []string
}

// ErrProbe marks a probe that judged nothing: every first call failed.
var ErrProbe = errors.New("probe")

// Probe sends each mutating webhook of hooks a sample through your
// server at the webhook's path, then, when it patched, the object it
// made as a new review (reinvoke): a second change is a Reinvocation.
// The first unsafe sample of a webhook is reported, not each.
func Probe(ctx context.Context, hooks []*lint.Hook, o ProbeOptions) (*ProbeResult, error) {
	res := &ProbeResult{}
	m, handlers, sent := newMatcher(), map[string]admission.Handler{}, 0
	for _, h := range hooks {
		if !h.Mutating {
			continue
		}
		w, err := probeWebhook(h, o.Upstream, handlers)
		if err != nil {
			return nil, err
		}
		samples, err := probeInputs(ctx, m, w, o.Cases)
		if err != nil {
			return nil, err
		}
		if len(samples) == 0 {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s %s: no sample: its rules name no resource hookback can build an object of, and no suite case matches it", h.Config.Ref(), h.Name))
		}
		for _, s := range samples {
			sent++
			r, skip := probeOne(ctx, w, s.in)
			if skip != "" {
				res.Skipped = append(res.Skipped, fmt.Sprintf("%s %s, %s: %s", h.Config.Ref(), h.Name, s.name, skip))
				continue
			}
			if r.Unsafe() {
				ri := lint.Reinvocation{Object: h.Config.Ref(), Webhook: h.Name, Sample: s.name, Paths: r.Paths, Message: strings.TrimPrefix(r.String(), "not idempotent: ")}
				res.Reinvocations = append(res.Reinvocations, ri)
				break
			}
		}
	}
	if sent > 0 && len(res.Skipped) >= sent {
		return res, fmt.Errorf("%w: no mutating webhook answered a sample: %s", ErrProbe, strings.Join(res.Skipped, "; "))
	}
	return res, nil
}

// probeOne sends one sample, then the webhook's own output; skip says why
// the sample judges nothing (the first call failed or was refused).
func probeOne(ctx context.Context, w *Webhook, in *input) (Reinvocation, string) {
	first := call(ctx, w, in)
	switch first.Result {
	case Error:
		return Reinvocation{}, "the first call failed: " + first.Message
	case Denied:
		return Reinvocation{}, "the first call was denied: " + first.Message
	case Allowed:
		return Reinvocation{}, ""
	}
	next, err := in.withObject(first.Object)
	if err != nil {
		return Reinvocation{}, err.Error()
	}
	return reinvoke(ctx, picked{w: w}, next, nil), ""
}

// probeWebhook is h as the suite calls it, answered by your server at
// its path; one forwarder per path.
func probeWebhook(h *lint.Hook, up upstream.Options, handlers map[string]admission.Handler) (*Webhook, error) {
	path := h.ServerPath()
	handler, ok := handlers[path]
	if !ok {
		f, err := upstream.New(up, path)
		if err != nil {
			return nil, err
		}
		handler, handlers[path] = f, f
	}
	v := h.ValidatingWebhook
	reinvocation := h.Reinvocation
	return &Webhook{Configuration: h.Config.Name, Path: path, Handler: handler, Mutating: &admissionregistrationv1.MutatingWebhook{
		Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules, FailurePolicy: v.FailurePolicy, MatchPolicy: v.MatchPolicy,
		NamespaceSelector: v.NamespaceSelector, ObjectSelector: v.ObjectSelector, SideEffects: v.SideEffects, TimeoutSeconds: v.TimeoutSeconds,
		AdmissionReviewVersions: v.AdmissionReviewVersions, MatchConditions: v.MatchConditions, ReinvocationPolicy: &reinvocation,
	}}, nil
}

// sample is one request a probe sends, named for the report.
type sample struct {
	name string
	in   *input
}

// probeInputs are w's samples: the CREATE cases its configuration
// matches, when cases are given, else a minimal object per resource.
func probeInputs(ctx context.Context, m *matcher, w *Webhook, files []*File) ([]sample, error) {
	if len(files) == 0 {
		return probeSamples(w)
	}
	var out []sample
	for _, f := range files {
		for _, l := range f.Cases {
			in, err := readInput(l)
			if err != nil {
				return nil, err
			}
			if in.conversion != nil || in.req.Operation != "CREATE" || len(in.req.Object.Raw) == 0 {
				continue
			}
			if ok, _, err := m.calls(ctx, w, in); err == nil && ok {
				out = append(out, sample{name: "case " + l.ID(), in: in})
			}
		}
	}
	return out, nil
}
