package policy

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
)

// DecidePolicy is EvaluatePolicy for a caller that needs the answer
// (decision, message, warnings, patch) and not the variables' values,
// which take a second evaluation: an audit of many objects.
func (e *Engine) DecidePolicy(ctx context.Context, r *admissionv1.AdmissionRequest, kind, name string) (*Evaluation, error) {
	req, err := decodeRequest(r)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	req.brief = true
	return e.evaluateDecoded(ctx, req, func(k, n string) bool { return k == kind && n == name }), nil
}
