package suite

import (
	"context"
	"encoding/json"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/admission"
)

// CRDRules are a CRD's rules as the apiserver applies them to its
// objects (implemented by crdvalidate.CRD). The suite needs more of them
// than a webhook's answer: the apiserver prunes and defaults a custom
// resource when it decodes the request, before any admission, and
// defaults it again after each mutating webhook that patched it; the
// validating webhooks then see the object as the registry prepared it,
// the fields a mutating webhook added that the schema does not know
// still there (they are pruned on the way to storage).
type CRDRules interface {
	// Serves: the CRD defines gvk's kind and serves its version.
	Serves(gvk schema.GroupVersionKind) bool
	// Decode does to obj what the apiserver's decoder does to a request
	// body (stored false) or to an object read from storage (stored
	// true): unknown fields pruned, defaults applied. warnings are the
	// apiserver's for a request body's unknown fields. An error: obj is
	// not of a kind and version the CRD serves, or the apiserver would
	// refuse it as a bad request (Admit says so when its turn comes).
	Decode(obj []byte, stored bool) (out []byte, warnings []string, err error)
	// Default applies the defaults to an object a mutating webhook
	// patched, pruning nothing.
	Default(obj []byte) ([]byte, error)
	// Admit answers req as the apiserver's registry would; admitted: the
	// object was decoded at the request's entry (Decode), and is judged
	// as mutating admission left it. stored is, when allowed, the object
	// as validating admission sees it.
	Admit(ctx context.Context, req admission.Request, admitted bool) (resp admission.Response, stored []byte)
}

// decodedAtEntry is in as the apiserver has it when admission starts:
// with a CRD of its kind among hooks, its object pruned and defaulted as
// a request body (the decoder's warnings kept, which the apiserver
// returns with its answer) and its old object as read from storage. A
// review sent as recorded was decoded by the apiserver that recorded it.
func decodedAtEntry(in *input, hooks []*Webhook) *input {
	rules := schemaOf(in, hooks)
	if rules == nil || in.review != nil {
		return in
	}
	out := *in
	if len(in.req.OldObject.Raw) > 0 {
		if old, _, err := rules.Decode(in.req.OldObject.Raw, true); err == nil {
			out.req.OldObject = runtime.RawExtension{Raw: old}
		}
	}
	if len(in.req.Object.Raw) > 0 {
		if obj, warnings, err := rules.Decode(in.req.Object.Raw, false); err == nil {
			out.req.Object = runtime.RawExtension{Raw: obj}
			out.decoded, out.decodeWarnings = true, warnings
		}
	}
	return &out
}

// defaulted is in after a mutating webhook patched it: defaulted again,
// as the mutating dispatcher does to a patched custom resource before
// the next webhook.
func defaulted(in *input, hooks []*Webhook) *input {
	rules := schemaOf(in, hooks)
	if rules == nil {
		return in
	}
	obj, err := rules.Default(in.req.Object.Raw)
	if err != nil {
		return in
	}
	if out, err := in.withObject(obj); err == nil {
		return out
	}
	return in
}

// schemaOf is the rules of the CRD among hooks that serves in's object's
// kind and version, if any.
func schemaOf(in *input, hooks []*Webhook) CRDRules {
	raw := in.req.Object.Raw
	if len(raw) == 0 {
		raw = in.req.OldObject.Raw
	}
	var tm metav1.TypeMeta
	if len(raw) == 0 || json.Unmarshal(raw, &tm) != nil {
		return nil
	}
	gvk := tm.GroupVersionKind()
	for _, w := range hooks {
		if w.Schema != nil && w.Schema.Serves(gvk) {
			return w.Schema
		}
	}
	return nil
}

// callSchema is a CRD's judgement of req, which in made; the decoder's
// warnings from the request's entry (input.decodeWarnings) come first,
// as the apiserver sends them.
func callSchema(ctx context.Context, w *Webhook, req admission.Request, in *input) Outcome {
	resp, stored := w.Schema.Admit(ctx, req, in.decoded)
	if len(in.decodeWarnings) > 0 {
		resp.Warnings = append(slices.Clone(in.decodeWarnings), resp.Warnings...)
	}
	o := outcomeOf(resp, req.Object.Raw)
	if o.Result == Allowed {
		o.stored = json.RawMessage(stored)
	}
	return o
}
