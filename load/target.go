package load

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/field"
)

// target is one object, ready to send: where to POST it and the body,
// encoded once so that the generator spends its time sending.
type target struct {
	source string
	// resource names the kind in the report (pods, deployments.apps).
	resource string
	path     string
	body     []byte
}

// resolve turns the objects into targets in namespace: each object's
// resource from the mapper (the apiserver's discovery), every object
// placed in namespace (whatever its own says), a name generated when it
// has none. A cluster-scoped kind is refused: a load stays in its scope.
func resolve(objs []Object, mapper meta.RESTMapper, namespace string, timeout time.Duration) ([]target, error) {
	q := url.Values{"dryRun": {"All"}, "timeout": {strconv.Itoa(int(timeout.Seconds())) + "s"}}.Encode()
	out := make([]target, 0, len(objs))
	for _, o := range objs {
		u := o.Object
		gvk := u.GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" {
			return nil, fmt.Errorf("%s: no apiVersion and kind", o.Source)
		}
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("%s: %s is not served by this cluster: %w", o.Source, gvk, err)
		}
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			return nil, field.Advise("load.Options.Namespace", "%s: %s is cluster-scoped: load sends only namespaced creates, each in {load.Options.Namespace}", o.Source, gvk.Kind)
		}
		c := u.DeepCopy()
		c.SetNamespace(namespace)
		// What the apiserver sets itself; a recorded object carries it.
		c.SetUID("")
		c.SetResourceVersion("")
		c.SetManagedFields(nil)
		c.SetCreationTimestamp(metav1.Time{})
		if c.GetName() == "" && c.GetGenerateName() == "" {
			c.SetGenerateName("hookback-load-")
		}
		body, err := json.Marshal(c.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: encode: %w", o.Source, err)
		}
		out = append(out, target{source: o.Source, resource: resourceName(m.Resource), path: collectionPath(m.Resource, namespace) + "?" + q, body: body})
	}
	return out, nil
}

// collectionPath is the URL path of a namespaced collection.
func collectionPath(r schema.GroupVersionResource, namespace string) string {
	prefix := "/apis/" + r.Group + "/" + r.Version
	if r.Group == "" {
		prefix = "/api/" + r.Version
	}
	return prefix + "/namespaces/" + url.PathEscape(namespace) + "/" + r.Resource
}

func resourceName(r schema.GroupVersionResource) string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}
