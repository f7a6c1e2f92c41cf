package suite

import (
	"encoding/json"
	"fmt"
	"slices"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/admission"
)

// Outcome is what a webhook answered, as the suite compares it.
type Outcome struct {
	// Result is allowed, denied, patched or error; converted or failed.
	Result   string          `json:"result"`
	Code     int32           `json:"code,omitempty"`
	Message  string          `json:"message,omitempty"`
	Patch    json.RawMessage `json:"patch,omitempty"`
	Object   json.RawMessage `json:"object,omitempty"`
	Warnings []string        `json:"warnings,omitempty"`
	// stored is, after a CRD's rules allowed the object, the object as
	// the registry would store it: what validating admission sees.
	stored json.RawMessage
}

// outcomeOf reads a handler's response; obj is the request's object, which
// a patch is applied to.
func outcomeOf(resp admission.Response, obj []byte) Outcome {
	o := Outcome{Warnings: slices.Clone(resp.Warnings)}
	if resp.Result != nil {
		o.Code, o.Message = resp.Result.Code, resp.Result.Message
	}
	switch {
	case resp.Failed():
		o.Result, o.Warnings = Error, nil
	case !resp.Allowed:
		o.Result = Denied
	default:
		o.Result = Allowed
		if err := o.patched(resp.Patch, obj); err != nil {
			o.Result, o.Message = Error, err.Error()
		}
	}
	return o
}

// patched records a non-empty patch and the object it makes.
func (o *Outcome) patched(patch, obj []byte) error {
	if len(patch) == 0 {
		return nil
	}
	var ops []json.RawMessage
	if err := json.Unmarshal(patch, &ops); err != nil {
		return fmt.Errorf("the answer's patch is not a JSON patch: %v", err)
	}
	if len(ops) == 0 {
		return nil
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return fmt.Errorf("the answer's patch: %v", err)
	}
	after, err := p.Apply(obj)
	if err != nil {
		return fmt.Errorf("the answer's patch does not apply to the object: %v", err)
	}
	o.Result, o.Patch, o.Object = Patched, patch, after
	return nil
}

// recordedOutcome reads a recorded AdmissionReview answer.
func recordedOutcome(answer, obj []byte) (Outcome, error) {
	if isConversionReview(answer) {
		return conversionOutcome(answer)
	}
	var a struct {
		Response *struct {
			Allowed bool `json:"allowed"`
			Status  *struct {
				Code    int32  `json:"code"`
				Message string `json:"message"`
			} `json:"status"`
			Patch    []byte   `json:"patch"`
			Warnings []string `json:"warnings"`
		} `json:"response"`
	}
	if err := json.Unmarshal(answer, &a); err != nil || a.Response == nil {
		return Outcome{}, fmt.Errorf("the recorded answer is not an AdmissionReview response")
	}
	r := a.Response
	resp := admission.Response{Allowed: r.Allowed, Patch: r.Patch, Warnings: r.Warnings}
	if r.Status != nil {
		resp.Result = &metav1.Status{Code: r.Status.Code, Message: r.Status.Message}
	}
	return outcomeOf(resp, obj), nil
}
