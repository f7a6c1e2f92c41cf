package takeover

import (
	"context"
	"log/slog"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/registration"
)

// TestTakenOverCRDLabelsGivenBack: a CRD both taken over (its CA injection
// set aside) and redirected (its conversion) keeps hookback's labels until
// the last of the two gives it back, which puts back the CRD's own
// managed-by (kustomize), whichever saved it; its labels, annotations and
// conversion are then as before. The session gives back in the order of
// its exit and of a crash's cleanup: the take-over first, then the
// conversion.
func TestTakenOverCRDLabelsGivenBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
	}{
		{name: "no labels"},
		{name: "managed-by kustomize", labels: map[string]string{registration.LabelManagedBy: "kustomize", "app.kubernetes.io/name": "shop"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, logs := fixture(t, "operator.yaml")
			res := c.Dynamic.Resource(crdResource)
			crd, _ := res.Get(ctx, crdName, metav1.GetOptions{})
			crd.SetLabels(tc.labels)
			before, err := res.Update(ctx, crd, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tk := taker(c, logs, "dev-1")
			if err := tk.Take(ctx, discover(t, c), redirects()); err != nil {
				t.Fatal(err)
			}
			crds := &registration.CRDs{Dynamic: c.Dynamic, Session: "dev-1", LeaseRef: tk.LeaseRef, Log: slog.New(slog.DiscardHandler)}
			route := &registration.Route{Path: registration.ConversionPath(crdName, "/convert"), UpstreamPath: "/convert"}
			if _, _, err := crds.Ensure(ctx, []registration.CRD{{Object: before.DeepCopy(), Name: crdName, Conversion: route}},
				func(string) bool { return true }, registration.Target{URL: "https://10.0.0.1:8643"}); err != nil {
				t.Fatal(err)
			}
			if _, err := tk.Restore(ctx, nil); err != nil {
				t.Fatal(err)
			}
			mid, _ := res.Get(ctx, crdName, metav1.GetOptions{})
			if mid.GetLabels()[registration.LabelSession] != "dev-1" {
				t.Fatalf("labels %v once the take-over is given back: the conversion, still redirected, needs the session's", mid.GetLabels())
			}
			if _, err := crds.Restore(ctx); err != nil {
				t.Fatal(err)
			}
			after, _ := res.Get(ctx, crdName, metav1.GetOptions{})
			if !reflect.DeepEqual(after.GetLabels(), before.GetLabels()) || !reflect.DeepEqual(after.GetAnnotations(), before.GetAnnotations()) {
				t.Errorf("labels %v annotations %v, want %v %v", after.GetLabels(), after.GetAnnotations(), before.GetLabels(), before.GetAnnotations())
			}
			if !reflect.DeepEqual(after.Object["spec"], before.Object["spec"]) {
				t.Errorf("spec %v, want %v", after.Object["spec"], before.Object["spec"])
			}
		})
	}
}
