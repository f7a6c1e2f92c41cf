package webhooks

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hookback/hookback/admission"
)

// FuzzBuiltins: every built-in handler, fed arbitrary objects of the right
// and wrong kinds and operations, answers and never panics.
func FuzzBuiltins(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"offensive","labels":{"acme.com/lifespan-requested":"3"},"annotations":{"xxl-agent/enable":"true"}},"spec":{"containers":[{"name":"a"}],"tolerations":null}}`), uint8(0), uint8(0))
	f.Add([]byte(`{"status":{"allocatable":{"cpu":"4"},"capacity":{"cpu":"5"}},"metadata":{"annotations":{"hookback.dev/cpu-oversell":"{"}}}`), uint8(1), uint8(1))
	f.Add([]byte(`{"apiVersion":"policy/v1","kind":"Eviction","deleteOptions":{"dryRun":["All"]}}`), uint8(2), uint8(0))
	f.Add([]byte(`[]`), uint8(3), uint8(2))
	deps, _, _ := testDeps()
	hooks, err := Build(Names(), DefaultOptions(), deps)
	if err != nil {
		f.Fatal(err)
	}
	kinds := []struct{ kind, sub string }{{"Pod", ""}, {"Node", "status"}, {"Eviction", "eviction"}, {"Deployment", ""}}
	ops := []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Delete}
	f.Fuzz(func(t *testing.T, object []byte, kind, op uint8) {
		k := kinds[int(kind)%len(kinds)]
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "fuzz", Kind: metav1.GroupVersionKind{Version: "v1", Kind: k.kind}, SubResource: k.sub,
			Operation: ops[int(op)%len(ops)], Name: "n", Namespace: "ns",
			Object: runtime.RawExtension{Raw: object}, OldObject: runtime.RawExtension{Raw: object},
		}}
		for _, h := range hooks {
			if r := h.Handler.Handle(context.Background(), req); r.Result == nil {
				t.Fatalf("%s answered without a result", h.Name)
			}
		}
	})
}
