package audit

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hookback/hookback/admission"
)

func TestCompareAnswers(t *testing.T) {
	req := &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "ns", Name: "web",
		Resource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		Object:   runtime.RawExtension{Raw: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}`)}}
	label := func(v string) admission.Response {
		return admission.Patched("", admission.PatchOp{Op: "add", Path: "/metadata/labels", Value: map[string]any{"team": v}})
	}
	for _, tc := range []struct {
		name    string
		w, p    admission.Response
		want    string
		message string
	}{
		{name: "both allow", w: admission.Allowed(""), p: admission.Allowed("not matched by any binding")},
		{name: "both deny alike", w: admission.Denied("too many replicas"), p: admission.Denied(" too many replicas")},
		{name: "only the webhook denies", w: admission.Denied("no"), p: admission.Allowed(""), want: "decision", message: "no"},
		{name: "other messages", w: admission.Denied("no"), p: admission.Denied("never"), want: "message", message: "no"},
		{name: "same patch", w: label("a"), p: label("a")},
		{name: "other patch", w: label("a"), p: label("b"), want: "patch", message: `[{"op":"add","path":"/metadata/labels","value":{"team":"a"}}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, differ := CompareAnswers(req, "hook", tc.w, "ValidatingAdmissionPolicy/p", tc.p)
			if differ != (tc.want != "") || d.What != tc.want {
				t.Fatalf("CompareAnswers = %+v, %v; want what %q", d, differ, tc.want)
			}
			if differ && (d.Resource != "deployments.apps" || d.Namespace != "ns" || d.Name != "web" || d.Operation != "CREATE" || d.WebhookMessage != tc.message) {
				t.Errorf("disagreement %+v: want deployments.apps ns/web CREATE, webhook message %q", d, tc.message)
			}
		})
	}
}
