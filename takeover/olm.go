package takeover

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/internal/errkind"
)

var csvResource = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "clusterserviceversions"}

// refuseOLM refuses a Deployment owned by a ClusterServiceVersion: OLM
// puts the CSV's replicas back on it and re-writes the webhook
// configurations of the CSV's webhookdefinitions, so a take-over would be
// undone half-way. The error gives the step that works: scale through the
// CSV, then run hookback beside it with your manifests' copies.
func refuseOLM(ctx context.Context, c Clients, d *appsv1.Deployment) error {
	var csv string
	for _, r := range d.OwnerReferences {
		if r.Kind == "ClusterServiceVersion" {
			csv = r.Name
		}
	}
	if csv == "" {
		return nil
	}
	index, replicas := "I", int64(1)
	if o, err := c.Dynamic.Resource(csvResource).Namespace(d.Namespace).Get(ctx, csv, metav1.GetOptions{}); err == nil {
		deps, _, _ := unstructured.NestedSlice(o.Object, "spec", "install", "spec", "deployments")
		for i, dep := range deps {
			m, _ := dep.(map[string]any)
			if m["name"] == d.Name {
				index = fmt.Sprint(i)
				if r, ok, _ := unstructured.NestedInt64(m, "spec", "replicas"); ok {
					replicas = r
				}
			}
		}
	}
	patch := func(n int64) string {
		return fmt.Sprintf(`kubectl -n %s patch csv %s --type json -p '[{"op":"replace","path":"/spec/install/spec/deployments/%s/spec/replicas","value":%d}]'`,
			d.Namespace, csv, index, n)
	}
	return errkind.New(ErrOLM, fmt.Errorf("take over %s/deployment/%s: OLM owns it (ClusterServiceVersion %s) and would scale it back and re-write its webhook configurations; "+
		"scale it through the CSV instead: `%s`, run hookback without --take-over (your manifests' webhooks are registered as copies), and give it back with `%s`",
		d.Namespace, d.Name, csv, patch(0), patch(replicas)))
}
