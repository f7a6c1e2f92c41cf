package takeover

import (
	"context"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Deployed finds the Deployments whose pods the Services (NAMESPACE/NAME,
// those your manifests' webhooks and conversions name) select: your
// operator deployed in the cluster, as NAMESPACE/deployment/NAME, the form
// --take-over reads. It only reads; what it cannot read it leaves out.
func Deployed(ctx context.Context, c Clients, services []string) []string {
	var out []string
	for _, s := range services {
		ns, name, _ := strings.Cut(s, "/")
		svc, err := c.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(svc.Spec.Selector) == 0 {
			continue
		}
		deps, err := c.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		for _, d := range deps.Items {
			t := Target{Namespace: ns, Name: d.Name}.String()
			if sel.Matches(labels.Set(d.Spec.Template.Labels)) && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}
