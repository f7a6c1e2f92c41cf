package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// variantOps are the operations a CREATE case's object is also checked
// under: the same object edited (UPDATE, oldObject and object alike) and
// deleted (DELETE, oldObject alone).
var variantOps = []string{"UPDATE", "DELETE"}

// variant is in as the apiserver would send op for the same object. It is
// only matched, never sent: a review sent as it is (a recording) is left
// out.
func (in *input) variant(op string) *input {
	out := *in
	out.review, out.recorded = nil, nil
	out.req.Operation = admissionv1.Operation(op)
	out.req.OldObject = in.req.Object
	if op == "DELETE" {
		out.req.Object = runtime.RawExtension{}
	}
	b, _ := json.Marshal(map[string]string{"kind": optionsKinds[op], "apiVersion": "meta.k8s.io/v1"})
	out.req.Options = runtime.RawExtension{Raw: b}
	return &out
}

// unseen lists the variant operations of a CREATE case that w's
// configuration never matches for the same object (rules, selectors,
// matchConditions, decided with the apiserver's code); a variant whose
// matching errs is not decidable offline and left out. Not a CREATE, a
// subresource, no object, or a webhook the case names that its
// configuration does not call for the CREATE itself (or whose
// configuration is not at hand, a recorded one): none.
func unseen(ctx context.Context, m *matcher, w *Webhook, in *input) []string {
	if in.req.Operation != admissionv1.Create || in.req.SubResource != "" || len(in.req.Object.Raw) == 0 {
		return nil
	}
	if ok, _, err := m.calls(ctx, w, in); err != nil || !ok {
		return nil
	}
	var out []string
	for _, op := range variantOps {
		if ok, _, err := m.calls(ctx, w, in.variant(op)); err == nil && !ok {
			out = append(out, op)
		}
	}
	return out
}

// unseenMessage is the note of a webhook that never sees ops: what an
// author must know (kyverno#16787: a policy on CREATE alone, bypassed by
// an edit).
func unseenMessage(w *Webhook, ops []string) string {
	kind := "validating"
	if w.Mutating != nil {
		kind = "mutating"
	}
	msg := fmt.Sprintf("%s webhook %s never sees %s of this object", kind, w.Name(), strings.Join(ops, " or "))
	if slices.Contains(ops, "UPDATE") {
		if w.Mutating != nil {
			return msg + ": an edit can change or remove what it set"
		}
		return msg + ": an edit can bypass it"
	}
	return msg
}

// markVariants puts the operations w never sees on its row: a failure for
// those the case requires (requireOperations), a note for the rest.
func markVariants(ctx context.Context, m *matcher, row *Row, l *Loaded, w *Webhook, in *input) {
	ops := unseen(ctx, m, w, in)
	if len(ops) == 0 {
		return
	}
	var required, noted []string
	for _, op := range ops {
		if slices.Contains(l.RequireOperations, op) {
			required = append(required, op)
		} else {
			noted = append(noted, op)
		}
	}
	if len(required) > 0 {
		failRow(row, "requireOperations: "+unseenMessage(w, required))
	}
	if len(noted) > 0 {
		row.Notes = append(row.Notes, unseenMessage(w, noted))
	}
}
