package incluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hookback/hookback/registration"
)

// TestServeAppliesWhatRenderPrints: the webhook configurations `render
// --in-cluster` prints are, byte for byte in YAML, the ones `serve` applies
// before it sets their caBundle: both render through plan's Config.Objects
// at the install's Service placement.
func TestServeAppliesWhatRenderPrints(t *testing.T) {
	hooks, _ := all(t)
	for name, o := range map[string]Options{
		"every built-in": {Namespace: DefaultNamespace, Image: "img", Replicas: 1, Webhooks: hooks, Template: template(t)},
		"two":            {Namespace: "webhooks", Image: "img", Replicas: 1, Webhooks: []string{"pod-name", "pod-lifespan"}, Template: template(t)},
	} {
		t.Run(name, func(t *testing.T) {
			rendered, err := InCluster(o)
			if err != nil {
				t.Fatal(err)
			}
			var printed []runtime.Object
			for _, obj := range rendered {
				if k := obj.GetObjectKind().GroupVersionKind().Kind; k == registration.KindMutatingHook || k == registration.KindValidatingHook {
					printed = append(printed, obj)
				}
			}
			served, err := configurations(ServeConfig{Namespace: o.Namespace, Webhooks: o.Webhooks, Template: o.Template})
			if err != nil {
				t.Fatal(err)
			}
			applied := make([]runtime.Object, len(served))
			for i, obj := range served {
				applied[i] = obj
			}
			if len(printed) == 0 {
				t.Fatal("render --in-cluster printed no webhook configuration")
			}
			want, err := YAML("", printed)
			if err != nil {
				t.Fatal(err)
			}
			got, err := YAML("", applied)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("serve applies\n%s\nrender --in-cluster prints\n%s", got, want)
			}
		})
	}
}
