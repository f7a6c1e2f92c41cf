package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/hookback/hookback/admission"
)

// defaultTimeout is the apiserver's default timeoutSeconds.
const defaultTimeout = 10 * time.Second

// Review versions the audit can send.
const (
	reviewV1      = "admission.k8s.io/v1"
	reviewV1beta1 = "admission.k8s.io/v1beta1"
)

// dryRunOptions are the options of a dry-run request, as the apiserver
// puts them into the review.
var dryRunOptions = map[admissionregistrationv1.OperationType][]byte{
	admissionregistrationv1.Create: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","dryRun":["All"]}`),
	admissionregistrationv1.Update: []byte(`{"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1","dryRun":["All"]}`),
}

// review sends one object through one webhook and says what it did.
func review(ctx context.Context, j job, who Identity) Result {
	res := Result{Webhook: j.hook.Name, Resource: j.target.Resource(), Namespace: j.namespace, Name: j.name,
		Operation: string(j.target.Operation), Policy: j.hook.Policy, object: j.raw}
	version, ok := reviewVersion(j.hook.ReviewVersions)
	if !ok {
		res.Result, res.Message = Error, fmt.Sprintf("admissionReviewVersions %v: hookback sends v1 or v1beta1", j.hook.ReviewVersions)
		return res
	}
	req, err := request(j, who, version)
	if err != nil {
		res.Result, res.Message = Error, err.Error()
		return res
	}
	timeout := j.hook.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	req.Timeout = timeout
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return outcome(res, j.hook.Handler.Handle(ctx, req), j.target.GVR.Group == "" && j.target.GVR.Resource == "secrets")
}

func reviewVersion(accepted []string) (string, bool) {
	for _, v := range accepted {
		if v == "v1" || v == reviewV1 {
			return reviewV1, true
		}
		if v == "v1beta1" || v == reviewV1beta1 {
			return reviewV1beta1, true
		}
	}
	return "", false
}

// request is the review the apiserver would send for a dry-run request of
// the operation: the object as stored, and for an UPDATE the same object as
// oldObject, an update that changes nothing.
func request(j job, who Identity, version string) (admission.Request, error) {
	kind := metav1.GroupVersionKind(j.target.Kind)
	resource := metav1.GroupVersionResource(j.target.GVR)
	dryRun := true
	r := admissionv1.AdmissionRequest{
		UID: uuid.NewUUID(), Kind: kind, Resource: resource, SubResource: j.target.Subresource,
		RequestKind: &kind, RequestResource: &resource, RequestSubResource: j.target.Subresource,
		Name: j.name, Namespace: j.namespace, Operation: admissionv1.Operation(j.target.Operation),
		UserInfo: authenticationv1.UserInfo{Username: who.Username, Groups: who.Groups},
		Object:   runtime.RawExtension{Raw: j.raw}, DryRun: &dryRun,
		Options: runtime.RawExtension{Raw: dryRunOptions[j.target.Operation]},
	}
	if j.target.Operation == admissionregistrationv1.Update {
		r.OldObject = runtime.RawExtension{Raw: j.raw}
	}
	if j.hook.Policy {
		// Evaluated in process, never forwarded: the review's bytes are
		// not read, so they are not encoded and decoded back for each
		// object and policy.
		return admission.Request{AdmissionRequest: r, ReviewVersion: version}, nil
	}
	raw, err := json.Marshal(struct {
		APIVersion string                        `json:"apiVersion"`
		Kind       string                        `json:"kind"`
		Request    *admissionv1.AdmissionRequest `json:"request"`
	}{version, "AdmissionReview", &r})
	if err != nil {
		return admission.Request{}, fmt.Errorf("encode review: %w", err)
	}
	req, err := admission.NewRequest(raw)
	if err != nil {
		return admission.Request{}, fmt.Errorf("read the review back: %w", err)
	}
	return req, nil
}

// redacted replaces what a patch writes into a Secret: the audit's output
// never shows a Secret's data.
const redacted = "<redacted>"

// outcome reads a handler's response into res.
func outcome(res Result, resp admission.Response, secret bool) Result {
	msg := ""
	if resp.Result != nil {
		msg = resp.Result.Message
	}
	switch {
	case resp.Failed():
		res.Result, res.Message = Error, msg
	case !resp.Allowed:
		res.Result, res.Message = Denied, msg
	case len(resp.Patch) > 0:
		var ops []PatchOperation
		if err := json.Unmarshal(resp.Patch, &ops); err != nil {
			res.Result, res.Message = Error, fmt.Sprintf("the webhook's patch is not a JSON patch: %v", err)
			return res
		}
		if len(ops) == 0 {
			res.Result = Allowed
			return res
		}
		if secret {
			for i := range ops {
				if ops[i].Value != nil {
					ops[i].Value = redacted
				}
			}
		}
		res.Result, res.Message, res.Patch = Patched, msg, ops
	default:
		res.Result, res.Message = Allowed, msg
	}
	if len(resp.Warnings) > 0 && res.Result != Error {
		res.Warnings = slices.Clone(resp.Warnings)
	}
	return res
}
