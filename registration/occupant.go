package registration

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Occupant names, as KIND/NAME, the first object of resources in namespace
// that ours does not claim, "" when there is none; a list that fails counts
// as an occupant. Whoever made a namespace deletes it only when it holds
// nothing of anyone else's: hookback's label on a namespace does not say
// that everything in it is hookback's.
func Occupant(ctx context.Context, dyn dynamic.Interface, namespace string, resources []schema.GroupVersionResource,
	ours func(*unstructured.Unstructured) bool) string {
	for _, gvr := range resources {
		list, err := dyn.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return gvr.Resource + " that could not be listed"
		}
		for i := range list.Items {
			if o := &list.Items[i]; !ours(o) {
				return o.GetKind() + "/" + o.GetName()
			}
		}
	}
	return ""
}
