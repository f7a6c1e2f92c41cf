package suite

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
)

// chainOrder sorts the webhooks of a case as the apiserver calls them:
// mutating admission policies first (the MutatingAdmissionPolicy plugin
// runs before MutatingAdmissionWebhook), then mutating configurations
// sorted by name (sort.SliceStable ByName in k8s.io/apiserver's
// mutating_webhook_manager.go), the webhooks of one configuration in
// their order, then a CRD's schema and CEL rules (the registry's
// rest.BeforeCreate/BeforeUpdate, after mutating admission), then the
// validating ones (createValidation, after it), which all see the object
// as the mutating ones and the registry left it. A custom resource is
// pruned and defaulted before the first (decodedAtEntry) and defaulted
// after each patch (defaulted).
func chainOrder(hooks []picked) []picked {
	rank := func(w *Webhook) int {
		switch {
		case w.Mutating != nil && w.Policy:
			return 0
		case w.Mutating != nil:
			return 1
		case w.Schema != nil:
			return 2
		}
		return 3
	}
	out := slices.Clone(hooks)
	slices.SortStableFunc(out, func(a, b picked) int {
		if c := cmp.Compare(rank(a.w), rank(b.w)); c != 0 || rank(a.w) != 1 {
			return c
		}
		return cmp.Compare(a.w.Configuration, b.w.Configuration)
	})
	return out
}

// chainRows calls the webhooks of a case in order, each mutating one with
// the object as the ones before it patched it, and judges each answer
// against the case's expectation for that webhook. A denial would end
// the request in the apiserver; the suite still asks the webhooks after
// it (with the object as it stood), so that each has its row.
func chainRows(ctx context.Context, m *matcher, l *Loaded, in *input, hooks []picked, recorded *Outcome, opts Options) []Row {
	cur := decodedAtEntry(in, opts.Webhooks)
	var rows []Row
	for _, h := range hooks {
		if h.pending {
			var ok bool
			if h, ok = matchNow(ctx, m, h.w, cur); !ok {
				continue
			}
		}
		got := callPicked(ctx, h, cur, opts.Conversions)
		row := Row{Webhook: h.w.Name(), Got: got}
		row.Status, row.Detail, row.Diff = judgeWith(l, l.expectFor(h.w.Name()), *got, recorded)
		if h.outcome == nil && h.w.Schema == nil {
			// A CRD's rules judge what the apiserver writes, not what a
			// configuration chose: no operation escapes them by choice.
			markVariants(ctx, m, &row, l, h.w, cur)
		}
		if h.w.Schema != nil && got.stored != nil {
			// The validating webhooks see the object as the registry
			// prepared it for storage.
			if stored, err := cur.withObject(got.stored); err == nil {
				cur = stored
			}
		}
		if h.w.Mutating == nil || got.Result != Patched {
			rows = append(rows, row)
			continue
		}
		next, err := cur.patchedBy(ctx, h, got.Object, opts.Conversions)
		if err != nil {
			rows = append(rows, row, Row{Webhook: h.w.Name(), Status: Erred,
				Detail: "the webhooks after it cannot be called with its patch: " + err.Error()})
			return rows
		}
		next = defaulted(next, opts.Webhooks)
		if opts.Idempotence != IdempotenceOff {
			markReinvocation(&row, h.w, reinvoke(ctx, h, next, opts.Conversions), opts.Idempotence)
		}
		rows = append(rows, row)
		cur = next
	}
	return rows
}

// candidates are the webhooks a case may go to: those it names (by name
// or path, see named), else every one, each matched in its turn
// (matchNow).
func candidates(l *Loaded, in *input, opts Options) ([]picked, error) {
	hooks := opts.Webhooks
	if t := targetOf(l, in); len(t.names) > 0 {
		return named(t, hooks, opts)
	}
	if opts.Recorded != nil {
		// Your webhooks' configurations are not at hand: matching against
		// the others alone would leave your server out unseen.
		return nil, errors.New(unmatched(opts))
	}
	out := make([]picked, 0, len(hooks))
	for _, w := range hooks {
		out = append(out, picked{w: w, pending: true})
	}
	return out, nil
}

// matchNow decides whether the apiserver calls w for the request as it
// stands; a refusal (a matchCondition error) is the webhook's outcome.
func matchNow(ctx context.Context, m *matcher, w *Webhook, in *input) (picked, bool) {
	ok, eq, err := m.calls(ctx, w, in)
	switch {
	case err != nil:
		return picked{w: w, outcome: &Outcome{Result: Error, Message: err.Error()}}, true
	case ok:
		return picked{w: w, equivalent: eq}, true
	}
	return picked{}, false
}

// callPicked calls one webhook with in, converted first to the version
// its rules name when it matched through matchPolicy Equivalent.
func callPicked(ctx context.Context, h picked, in *input, convs []ConversionWebhook) *Outcome {
	if h.outcome != nil {
		return h.outcome
	}
	send := in
	if h.equivalent != nil {
		var err error
		if send, err = in.inVersion(ctx, h.equivalent, convs); err != nil {
			return &Outcome{Result: Error, Message: err.Error()}
		}
	}
	o := call(ctx, h.w, send)
	return &o
}

// patchedBy is in with the object a mutating webhook made, back in the
// request's version when the webhook had it in another one.
func (in *input) patchedBy(ctx context.Context, h picked, obj []byte, convs []ConversionWebhook) (*input, error) {
	if h.equivalent != nil {
		back, err := convertObject(ctx, h.equivalent.resource, convs, obj, in.req.Kind.Group, in.req.Kind.Version)
		if err != nil {
			return nil, err
		}
		obj = back
	}
	return in.withObject(obj)
}

// withObject is in with its request's object replaced; a review sent as
// it is (a recording) gets the object in its request too.
func (in *input) withObject(obj []byte) (*input, error) {
	out := *in
	out.req.Object = runtime.RawExtension{Raw: obj}
	return out.withRequestField("object", obj)
}

// withRequestField sets key in the request of the review in is sent as,
// when it is sent as it is (a recording); in's own request already has
// the new value.
func (in *input) withRequestField(key string, value []byte) (*input, error) {
	out := *in
	if in.review == nil {
		return &out, nil
	}
	var review map[string]json.RawMessage
	if err := json.Unmarshal(in.review, &review); err != nil {
		return nil, fmt.Errorf("the case's review: %w", err)
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(review["request"], &req); err != nil {
		return nil, fmt.Errorf("the case's review's request: %w", err)
	}
	req[key] = value
	var err error
	if review["request"], err = json.Marshal(req); err != nil {
		return nil, err
	}
	if out.review, err = json.Marshal(review); err != nil {
		return nil, err
	}
	return &out, nil
}

// expectFor is the expectation of one webhook: its entry in
// expectWebhooks, else the case's expect.
func (l *Loaded) expectFor(webhook string) Expect {
	if e, ok := l.ExpectWebhooks[webhook]; ok {
		return e
	}
	return l.Expect
}
