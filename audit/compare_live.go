package audit

import (
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/admission"
)

// CompareAnswers is Compare for one live review (start --policy beside
// a webhook): the webhook's answer w and the policy's answer p to the
// same request, judged as the audit judges them (decision, message, the
// objects their patches produce, errors). It returns the disagreement and
// true, or false when they agree.
func CompareAnswers(req *admissionv1.AdmissionRequest, webhook string, w admission.Response, policy string, p admission.Response) (Disagreement, bool) {
	base := Result{Resource: resourceOf(req), Namespace: req.Namespace, Name: req.Name, Operation: string(req.Operation), object: req.Object.Raw}
	if len(base.object) == 0 {
		base.object = req.OldObject.Raw // DELETE: the object as it was
	}
	secret := req.Resource.Group == "" && req.Resource.Resource == "secrets"
	wr, pr := base, base
	wr.Webhook, pr.Webhook, pr.Policy = webhook, policy, true
	wr, pr = outcome(wr, w, secret), outcome(pr, p, secret)
	what := disagreement(wr, pr)
	if what == "" {
		return Disagreement{}, false
	}
	return Disagreement{Resource: base.Resource, Namespace: base.Namespace, Name: base.Name, Operation: base.Operation, What: what,
		WebhookResult: wr.Result, WebhookMessage: detail(wr), PolicyResult: pr.Result, PolicyMessage: detail(pr)}, true
}

// resourceOf names the request's resource as Target.Resource does.
func resourceOf(req *admissionv1.AdmissionRequest) string {
	t := Target{GVR: schema.GroupVersionResource{Group: req.Resource.Group, Version: req.Resource.Version, Resource: req.Resource.Resource},
		Subresource: req.SubResource}
	return t.Resource()
}
