package registration

import (
	"fmt"
	"maps"
	"net/url"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// RenderService renders the same template start registers, for an install
// in the cluster: each clientConfig.url becomes a clientConfig.service
// reference to svc (its Path ignored) with the url's path, so the rules, selectors and
// policies are written once, in the template. There is no caBundle (the
// installer's certificate source fills it), names keep no session suffix,
// and the objects carry labels instead of hookback's managed-by ones:
// whoever applies them owns them, and session cleanup must never touch them.
func RenderService(name string, tmpl []byte, data TemplateData, paths []string, svc ServiceRef, labels map[string]string) (*Registration, error) {
	// Any https URL will do: only its path is kept.
	data.URL, data.CABundle = "https://"+svc.Name+"."+svc.Namespace+".svc", ""
	objs, err := execute(name, tmpl, data, paths)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if err := toService(o, svc); err != nil {
			return nil, fmt.Errorf("render service: %s %q: %w", o.GetKind(), o.GetName(), err)
		}
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		maps.Copy(l, labels)
		o.SetLabels(l)
	}
	return &Registration{Objects: objs}, nil
}

// PointAtService points every webhook of objs at svc, keeping each url's
// path and the caBundle: `start --tunnel`, where the apiserver reaches the
// session through its relay's Service.
func PointAtService(objs []*unstructured.Unstructured, svc ServiceRef) error {
	for _, o := range objs {
		if err := toService(o, svc); err != nil {
			return fmt.Errorf("point %s %q at service %s: %w", o.GetKind(), o.GetName(), svc.Key(), err)
		}
	}
	return nil
}

// toService swaps every webhook's clientConfig url for a service reference.
func toService(o *unstructured.Unstructured, svc ServiceRef) error {
	hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
	if err != nil {
		return err
	}
	for _, h := range hooks {
		hm, _ := h.(map[string]any)
		raw, _, _ := unstructured.NestedString(hm, "clientConfig", "url")
		u, err := url.Parse(raw)
		if err != nil {
			return fmt.Errorf("webhook %v: %w", hm["name"], err)
		}
		cc := map[string]any{"service": map[string]any{
			"namespace": svc.Namespace, "name": svc.Name, "path": u.Path, "port": int64(svc.Port),
		}}
		if b, ok, _ := unstructured.NestedString(hm, "clientConfig", "caBundle"); ok && b != "" {
			cc["caBundle"] = b
		}
		hm["clientConfig"] = cc
	}
	return unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
}
