package crdvalidate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/hookback/hookback/field"
)

// CRDResource is where the apiserver serves CustomResourceDefinitions.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ClusterCRDs lists the CustomResourceDefinitions of the cluster client
// reaches, paged, and compiles those whose objects' kinds are in need. A
// kind of need the cluster has no CRD for is an error naming it; so is a
// list the cluster forbids, naming the RBAC verb it takes.
func ClusterCRDs(ctx context.Context, client dynamic.Interface, need []schema.GroupKind) ([]*CRD, error) {
	out, err := ClusterCRDsOf(ctx, client, need)
	if err != nil {
		return nil, err
	}
	found := map[schema.GroupKind]bool{}
	for _, c := range out {
		found[c.GroupKind()] = true
	}
	var missing []string
	for _, gk := range need {
		if !found[gk] {
			missing = append(missing, gk.String())
		}
	}
	if len(missing) > 0 {
		return nil, &field.Error{Field: "crdvalidate.Options.FromCluster", Advice: true,
			Detail: fmt.Sprintf("the cluster has no CustomResourceDefinition of %s: install it there (kubectl apply -f its CRD), or give it with {crdvalidate.Options.CRDs}", strings.Join(missing, ", "))}
	}
	return out, nil
}

// ClusterCRDsOf is ClusterCRDs without the error for a missing kind: the
// cluster's CRDs of those kinds it has (every one when kinds is nil), for
// a suite whose objects are of native kinds too.
func ClusterCRDsOf(ctx context.Context, client dynamic.Interface, kinds []schema.GroupKind) ([]*CRD, error) {
	var out []*CRD
	opts := metav1.ListOptions{Limit: 250}
	for {
		list, err := client.Resource(CRDResource).List(ctx, opts)
		if err != nil {
			return nil, listCRDsError(err)
		}
		for i := range list.Items {
			u := &list.Items[i]
			gk := schema.GroupKind{Group: str(u, "spec", "group"), Kind: str(u, "spec", "names", "kind")}
			if kinds != nil && !slices.Contains(kinds, gk) {
				continue
			}
			c, err := Compile(asManifest(u), "the cluster's CustomResourceDefinition "+u.GetName())
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// listCRDsError says what a failed list needs: the RBAC verb when the
// cluster forbids it.
func listCRDsError(err error) error {
	if apierrors.IsForbidden(err) {
		return &field.Error{Field: "crdvalidate.Options.FromCluster", Advice: true, Err: err,
			Detail: fmt.Sprintf("list %s: %v: reading the CRDs from the cluster needs the RBAC verb list on customresourcedefinitions (apiGroup apiextensions.k8s.io, cluster-wide); ask for it, or give the CRDs with {crdvalidate.Options.CRDs}", CRDResource.GroupResource(), err)}
	}
	return fmt.Errorf("list %s: %w", CRDResource.GroupResource(), err)
}

// asManifest is a stored CRD as its manifest would say it: what the
// apiserver set on it (uid, resourceVersion, managedFields, status) is
// not part of what a create of it is judged on.
func asManifest(u *unstructured.Unstructured) *unstructured.Unstructured {
	meta := map[string]any{"name": u.GetName()}
	if l := u.GetLabels(); len(l) > 0 {
		meta["labels"] = toAny(l)
	}
	if a := u.GetAnnotations(); len(a) > 0 {
		meta["annotations"] = toAny(a)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": CRDResource.GroupVersion().String(), "kind": "CustomResourceDefinition",
		"metadata": meta, "spec": u.Object["spec"]}}
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func str(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

// addFromCluster adds to s the cluster's CRDs of the kinds of objs that s
// does not define yet: CRDs given as files win over the cluster's.
func (s Set) addFromCluster(ctx context.Context, client dynamic.Interface, objs []*unstructured.Unstructured) error {
	var need []schema.GroupKind
	for _, u := range objs {
		gk := u.GroupVersionKind().GroupKind()
		if _, ok := s[gk]; !ok && gk.Kind != "" && !slices.Contains(need, gk) {
			need = append(need, gk)
		}
	}
	if len(need) == 0 {
		return nil
	}
	crds, err := ClusterCRDs(ctx, client, need)
	if err != nil {
		return fmt.Errorf("read CRDs from the cluster: %w", err)
	}
	for _, c := range crds {
		s.Add(c)
	}
	return nil
}
