package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/spec3"
)

// namespaces is the NamespaceLister the policies' namespaceSelectors and
// the namespaceObject variable read: the Namespaces of the files, then
// the cluster's (read once, at New), and, with no cluster, a Namespace
// that has only the label every Namespace carries
// (kubernetes.io/metadata.name), so that a request in a namespace the
// files do not describe still evaluates. Namespaces the lister lacks on a
// cluster are fetched by the matcher's client, as the apiserver does.
type namespaces struct {
	byName     map[string]*corev1.Namespace
	synthesize bool
}

var _ listersv1.NamespaceLister = (*namespaces)(nil)

func (n *namespaces) List(selector labels.Selector) ([]*corev1.Namespace, error) {
	var out []*corev1.Namespace
	for _, ns := range n.byName {
		if selector.Matches(labels.Set(ns.Labels)) {
			out = append(out, ns)
		}
	}
	return out, nil
}

func (n *namespaces) Get(name string) (*corev1.Namespace, error) {
	if ns, ok := n.byName[name]; ok {
		return ns, nil
	}
	if n.synthesize {
		return &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}},
		}, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
}

// clusterAuthorizer answers the policies' authorizer checks with a
// SubjectAccessReview for the request's user: the apiserver's own
// authorizer, asked from outside.
type clusterAuthorizer struct{ client kubernetes.Interface }

func (c clusterAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	u := a.GetUser()
	if u == nil {
		return authorizer.DecisionNoOpinion, "no user", nil
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(),
	}}
	if extra := u.GetExtra(); len(extra) > 0 {
		sar.Spec.Extra = map[string]authorizationv1.ExtraValue{}
		for k, v := range extra {
			sar.Spec.Extra[k] = v
		}
	}
	if a.IsResourceRequest() {
		sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: a.GetNamespace(), Verb: a.GetVerb(), Group: a.GetAPIGroup(), Version: a.GetAPIVersion(),
			Resource: a.GetResource(), Subresource: a.GetSubresource(), Name: a.GetName(),
		}
	} else {
		sar.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.GetPath(), Verb: a.GetVerb()}
	}
	res, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return authorizer.DecisionNoOpinion, "", fmt.Errorf("subjectaccessreview: %w", err)
	}
	switch {
	case res.Status.Allowed:
		return authorizer.DecisionAllow, res.Status.Reason, nil
	case res.Status.Denied:
		return authorizer.DecisionDeny, res.Status.Reason, nil
	}
	return authorizer.DecisionNoOpinion, res.Status.Reason, nil
}

// errNoCluster is what the authorizer variable answers without a cluster.
var errNoCluster = errors.New("policy: no cluster to authorize against")

// offlineAuthorizer has no opinion, and says why.
type offlineAuthorizer struct{}

func (offlineAuthorizer) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "", errNoCluster
}

// typeConverters give the mutating dispatcher a schema for an
// ApplyConfiguration merge, as the apiserver's TypeConverterManager does:
// client-go's compiled-in schema for the built-in kinds, and the cluster's
// OpenAPI v3 for the rest (custom resources), fetched once per group
// version.
type typeConverters struct {
	static  managedfields.TypeConverter
	openapi openapi.Client // nil without a cluster

	mu    sync.Mutex
	paths map[string]openapi.GroupVersion
	byGV  map[schema.GroupVersion]managedfields.TypeConverter
}

func newTypeConverters(oc openapi.Client) *typeConverters {
	return &typeConverters{static: applyconfigurations.NewTypeConverter(scheme.Scheme), openapi: oc, byGV: map[schema.GroupVersion]managedfields.TypeConverter{}}
}

// Run is part of patch.TypeConverterManager; the schemas are fetched on
// demand instead.
func (t *typeConverters) Run(context.Context) {}

// GetTypeConverter returns nil when no schema is known: the dispatcher
// then reports the kind as not found, as the apiserver does.
func (t *typeConverters) GetTypeConverter(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	if scheme.Scheme.Recognizes(gvk) {
		return t.static
	}
	if t.openapi == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	gv := gvk.GroupVersion()
	if tc, ok := t.byGV[gv]; ok {
		return tc
	}
	if t.paths == nil {
		paths, err := t.openapi.Paths()
		if err != nil {
			return nil
		}
		t.paths = paths
	}
	prefix := "apis/"
	if gv.Group == "" {
		prefix = "api/"
	}
	entry, ok := t.paths[prefix+gv.String()]
	if !ok {
		return nil
	}
	b, err := entry.Schema("application/json")
	if err != nil {
		return nil
	}
	var doc spec3.OpenAPI
	if err := json.Unmarshal(b, &doc); err != nil || doc.Components == nil {
		return nil
	}
	tc, err := managedfields.NewTypeConverter(doc.Components.Schemas, false)
	if err != nil {
		return nil
	}
	t.byGV[gv] = tc
	return tc
}
