package takeover

import (
	"bytes"
	"log/slog"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
)

// fixture loads testdata/NAME: webhook configurations and CRDs into a fake
// dynamic client (as stored, unknown fields too), the rest into a fake
// clientset.
func fixture(t *testing.T, name string) (Clients, *bytes.Buffer) {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var typed, dyn []runtime.Object
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if u.Object == nil {
			continue
		}
		switch u.GetKind() {
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "CustomResourceDefinition":
			dyn = append(dyn, u)
		default:
			o, err := scheme.Scheme.New(u.GroupVersionKind())
			if err != nil {
				t.Fatal(err)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, o); err != nil {
				t.Fatal(err)
			}
			typed = append(typed, o)
		}
	}
	lists := map[schema.GroupVersionResource]string{crdResource: "CustomResourceDefinitionList"}
	for kind, gvr := range hookResources {
		lists[gvr] = kind + "List"
	}
	var logs bytes.Buffer
	return Clients{Client: fake.NewClientset(typed...), Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, dyn...)}, &logs
}

func taker(c Clients, logs *bytes.Buffer, session string) *Taker {
	return &Taker{Clients: c, Session: session, LeaseRef: "default/hookback-" + session, Log: slog.New(slog.NewTextHandler(logs, nil))}
}
