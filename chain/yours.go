package chain

import (
	"fmt"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Registered is what this session registered for your mutating webhooks:
// a configuration of the cluster is yours only when it is one of these by
// its name, its session label and the exact endpoint of the webhook
// called. The path alone says nothing: another session registered from
// the same manifests (a colleague debugging the same webhook) serves its
// webhooks at the same paths, on another address; its configuration is
// then one more in the chain, attributed like any other.
type Registered struct {
	// Session is the session's name, the registration.LabelSession of its objects.
	Session  string              `json:"session"`
	Webhooks []RegisteredWebhook `json:"webhooks"`
}

// RegisteredWebhook is one of your mutating webhooks as registered.
type RegisteredWebhook struct {
	Configuration string `json:"configuration"`
	Webhook       string `json:"webhook"`
	// Endpoint is where the apiserver sends its reviews (Endpoint).
	Endpoint string `json:"endpoint"`
}

// RegisteredFrom reads what session registers for your mutating webhooks
// from objs, its configurations as applied (the observers left out).
func RegisteredFrom(session string, objs []*unstructured.Unstructured) (Registered, error) {
	r := Registered{Session: session}
	for _, obj := range objs {
		if obj.GetKind() != "MutatingWebhookConfiguration" || obj.GetLabels()[LabelObserver] != "" {
			continue
		}
		var conf admissionregistrationv1.MutatingWebhookConfiguration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &conf); err != nil {
			return Registered{}, fmt.Errorf("chain: %s %q: %w", obj.GetKind(), obj.GetName(), err)
		}
		for _, w := range conf.Webhooks {
			r.Webhooks = append(r.Webhooks, RegisteredWebhook{Configuration: conf.Name, Webhook: w.Name, Endpoint: Endpoint(w.ClientConfig)})
		}
	}
	return r, nil
}

// Endpoint is where a webhook's clientConfig sends reviews: its URL as
// written (host and port included), or its Service's namespace, name,
// port (the apiserver's default 443 when unset) and path.
func Endpoint(cc admissionregistrationv1.WebhookClientConfig) string {
	switch {
	case cc.URL != nil:
		return *cc.URL
	case cc.Service != nil:
		s := cc.Service
		port := int32(443)
		if s.Port != nil {
			port = *s.Port
		}
		path := ""
		if s.Path != nil {
			path = *s.Path
		}
		return "service " + s.Namespace + "/" + s.Name + ":" + strconv.Itoa(int(port)) + path
	}
	return ""
}

// has says conf's webhook w is one of r's.
func (r Registered) has(conf Configuration, w Webhook) bool {
	if r.Session == "" || conf.Session != r.Session || conf.Observer != "" {
		return false
	}
	for _, x := range r.Webhooks {
		if x.Configuration == conf.Name && x.Webhook == w.Name && x.Endpoint == w.Endpoint {
			return true
		}
	}
	return false
}

// yourConfiguration is the configuration (name) and webhook of the cluster
// that call your webhook served at path: one of r's, never merely one whose
// path is the same; "" when the cluster has none (not applied yet).
func yourConfiguration(cat Catalog, r Registered, path string) (string, Webhook) {
	if path == "" {
		return "", Webhook{}
	}
	for _, conf := range cat.Mutating {
		for _, w := range conf.Webhooks {
			if w.Path == path && r.has(conf, w) {
				return conf.Name, w
			}
		}
	}
	return "", Webhook{}
}
