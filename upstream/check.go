package upstream

import (
	"encoding/json"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/hookback/hookback/admission"
)

// Check turns an upstream's answer to req into the response the apiserver
// gets: the answer itself when it is right, else a failed call (HTTP 500,
// so the webhook's failurePolicy applies) saying what the upstream did wrong.
func Check(req admission.Request, answer []byte) admission.Response {
	r, err := check(req, answer)
	if err != nil {
		return admission.CallFailed(err)
	}
	return r
}

func check(req admission.Request, answer []byte) (admission.Response, error) {
	var review admissionv1.AdmissionReview
	// Decoded as the apiserver decodes it: field names are case-sensitive,
	// so an answer with "UID" is refused here rather than by the apiserver.
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(answer, &review); err != nil {
		return admission.Response{}, fmt.Errorf("upstream answer is not an AdmissionReview: %w (answer: %s)", err, snippet(answer))
	}
	if review.Kind != "AdmissionReview" {
		return admission.Response{}, fmt.Errorf("upstream answer is not an AdmissionReview: kind %q", review.Kind)
	}
	if review.APIVersion != req.ReviewVersion {
		return admission.Response{}, fmt.Errorf("upstream answered %s to an %s review", review.APIVersion, req.ReviewVersion)
	}
	out := review.Response
	if out == nil {
		return admission.Response{}, fmt.Errorf("upstream answer has no response")
	}
	if out.UID != req.UID {
		return admission.Response{}, fmt.Errorf("upstream answered uid %q for request %q", out.UID, req.UID)
	}
	resp := admission.Response{Allowed: out.Allowed, Result: out.Result, Warnings: out.Warnings, AuditAnnotations: out.AuditAnnotations}
	if len(out.Patch) == 0 {
		return resp, nil
	}
	if out.PatchType == nil || *out.PatchType != admissionv1.PatchTypeJSONPatch {
		return admission.Response{}, fmt.Errorf("upstream sent a patch without patchType JSONPatch")
	}
	if _, err := checkPatch(req.Object.Raw, out.Patch); err != nil {
		return admission.Response{}, err
	}
	resp.Patch = out.Patch
	return resp, nil
}

// checkPatch applies patch to object and returns its operation count. The
// whole patch is applied at once (each application re-encodes the object:
// op by op a 3 MiB object took seconds); only when it fails is it applied
// op by op, to name the operation that does not apply.
func checkPatch(object, patch []byte) (int, error) {
	var ops []json.RawMessage
	if err := json.Unmarshal(patch, &ops); err != nil {
		return 0, fmt.Errorf("upstream patch is not a JSON patch: %w", err)
	}
	whole, err := jsonpatch.DecodePatch(patch)
	if err == nil {
		if _, err = whole.Apply(object); err == nil {
			return len(ops), nil
		}
	}
	doc := object
	for i, op := range ops {
		p, err := jsonpatch.DecodePatch([]byte("[" + string(op) + "]"))
		if err != nil {
			return 0, fmt.Errorf("patch op %d: %w", i+1, err)
		}
		next, err := p.Apply(doc)
		if err != nil {
			path, _ := p[0].Path()
			return 0, fmt.Errorf("patch op %d: path %s does not apply to the object: %w", i+1, path, err)
		}
		doc = next
	}
	// Each op applied on its own but not all at once: say so rather than
	// pass a patch the apiserver would refuse.
	return 0, fmt.Errorf("upstream patch does not apply to the object: %w", err)
}
