package webhooks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hookback/hookback/admission"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestMutatingPatchesKeepUnknownFields replays objects that carry fields
// k8s.io/api does not know (as a newer apiserver, an alpha feature or an
// extension would send) at several depths through each mutating webhook. The
// patch must hold exactly the intended operations, and applying it must
// change nothing but what they name: a patch computed from a re-encoded
// typed object would remove every unknown field.
func TestMutatingPatchesKeepUnknownFields(t *testing.T) {
	tests := []struct {
		name    string
		webhook string
		// object is under testdata/fidelity; the request is built
		// around it.
		object    string
		operation admissionv1.Operation
		kind      string
		sub       string
		// wantOps is the exact patch.
		wantOps string
	}{
		{
			name: "pod-lifespan appends tolerations", webhook: NamePodLifespan, object: "pod-lifespan.json",
			operation: admissionv1.Create, kind: "Pod",
			wantOps: `[
				{"op":"add","path":"/spec/tolerations/-","value":{"key":"acme.com/lifespan-remaining","operator":"Equal","value":"13","effect":"NoSchedule"}},
				{"op":"add","path":"/spec/tolerations/-","value":{"key":"acme.com/lifespan-remaining","operator":"Equal","value":"14","effect":"NoSchedule"}}]`,
		},
		{
			name: "pod-lifespan creates the list for an unlabelled pod", webhook: NamePodLifespan, object: "pod-unlabelled.json",
			operation: admissionv1.Create, kind: "Pod",
			wantOps: `[{"op":"add","path":"/spec/tolerations","value":[{"key":"acme.com/lifespan-remaining","operator":"Exists","effect":"NoSchedule"}]}]`,
		},
		{
			name: "pod-sidecar appends one container", webhook: NamePodSidecar, object: "pod-sidecar.json",
			operation: admissionv1.Create, kind: "Pod",
			wantOps: `[{"op":"add","path":"/spec/containers/-","value":{"name":"xxl-agent","image":"` + DefaultSidecarImage + `",
				"ports":[{"name":"http-xxl-agent","containerPort":9999,"protocol":"TCP"}],
				"env":[{"name":"CONTAINER_NAME","value":"worker"},{"name":"XXL_JOB_NAME","value":"demo"},{"name":"XXL_JOB_ADDR","value":"http://admin:8080"},
					{"name":"NAMESPACE","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}},
					{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}}],
				"resources":{}}}]`,
		},
		{
			name: "node-status replaces two quantities and sets one annotation", webhook: NameNodeStatus, object: "node.json",
			operation: admissionv1.Update, kind: "Node", sub: "status",
			wantOps: `[
				{"op":"replace","path":"/status/allocatable/cpu","value":"7"},
				{"op":"replace","path":"/status/capacity/cpu","value":"7500m"},
				{"op":"add","path":"/metadata/annotations/hookback.dev~1cpu-oversell",
				 "value":"{\"factor\":2,\"reportedAllocatable\":\"3500m\",\"reportedCapacity\":\"4\",\"allocatable\":\"7\",\"capacity\":\"7500m\"}"}]`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fidelity", tc.object))
			if err != nil {
				t.Fatal(err)
			}
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "fidelity", Operation: tc.operation, Namespace: "default", SubResource: tc.sub,
				Kind:   metav1.GroupVersionKind{Version: "v1", Kind: tc.kind},
				Object: runtime.RawExtension{Raw: raw}, OldObject: runtime.RawExtension{Raw: raw},
			}}
			if tc.operation == admissionv1.Create {
				req.OldObject.Raw = nil
			}
			deps, _, _ := testDeps()
			resp := buildOne(t, tc.webhook, DefaultOptions(), deps).Handle(context.Background(), req)
			if !resp.Allowed {
				t.Fatalf("denied: %+v", resp.Result)
			}
			if !jsonpatch.Equal(resp.Patch, []byte(tc.wantOps)) {
				t.Fatalf("patch =\n%s\nwant\n%s", resp.Patch, tc.wantOps)
			}
			// Every unknown field survives the patch.
			got := applyPatch(t, raw, resp.Patch)
			for _, field := range []string{"futureMeta", "futureHint", "futureContainerField", "futureStatus", "deeper"} {
				if !containsKey(t, raw, field) {
					t.Fatalf("fixture %s lacks the unknown field %q it is meant to carry", tc.object, field)
				}
				if !containsKey(t, got, field) {
					t.Errorf("patched object lost %q:\n%s", field, got)
				}
			}
		})
	}
}

// containsKey reports whether a JSON document has an object member named key
// at any depth.
func containsKey(t *testing.T, doc []byte, key string) bool {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch n := v.(type) {
		case map[string]any:
			for k, c := range n {
				if k == key || walk(c) {
					return true
				}
			}
		case []any:
			for _, c := range n {
				if walk(c) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}
