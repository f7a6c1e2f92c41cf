package roundtrip

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// ClusterSeeds lists up to limit objects of crd in the cluster (every
// namespace), for the fuzzer to start from. They are listed in the CRD's
// storage version, as they are stored: a list in another version goes
// through the conversion webhook under test, and one object it cannot
// convert would fail the whole list. The fuzzer converts them to the
// other versions itself (Options.Seeds).
func ClusterSeeds(ctx context.Context, client dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition, limit int64) ([]map[string]any, error) {
	storage := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	if storage == "" {
		return nil, fmt.Errorf("CRD %s has no storage version", crd.Name)
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: storage, Resource: crd.Spec.Names.Plural}
	list, err := client.Resource(gvr).List(ctx, metav1.ListOptions{Limit: limit})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("list %s in the cluster: %s is not served there: install the CRD, or start from no objects of the cluster", gvr, crd.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("list %s in the cluster: %w", gvr, err)
	}
	out := make([]map[string]any, 0, len(list.Items))
	for _, item := range list.Items {
		if int64(len(out)) == limit {
			break
		}
		out = append(out, item.Object)
	}
	return out, nil
}
