package registration

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// serverFields are set by the apiserver on objects read back from a cluster
// (kubectl get -o yaml); applied under a new name they would be refused.
var serverFields = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink"}

// CAInjectors annotate webhook configurations so that a controller writes
// the in-cluster CA into every caBundle; left on hookback's copy, they would
// overwrite hookback's CA and the apiserver would stop trusting it.
var CAInjectors = []string{
	"cert-manager.io/inject-ca-from",
	"cert-manager.io/inject-ca-from-secret",
	"cert-manager.io/inject-apiserver-ca",
	"service.beta.openshift.io/inject-cabundle",
}

// CleanMetadata readies a copy of a user's object to be applied as
// hookback's: what the apiserver set on it when it was read back, a
// namespace, status and CA injectors' annotations removed.
func CleanMetadata(o *unstructured.Unstructured) {
	for _, f := range serverFields {
		unstructured.RemoveNestedField(o.Object, "metadata", f)
	}
	// Webhook configurations are cluster scoped; Helm charts sometimes set one.
	unstructured.RemoveNestedField(o.Object, "metadata", "namespace")
	unstructured.RemoveNestedField(o.Object, "status")
	if ann := o.GetAnnotations(); ann != nil {
		for _, a := range CAInjectors {
			delete(ann, a)
		}
		o.SetAnnotations(ann)
	}
}
