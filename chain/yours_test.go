package chain

import (
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// mutatingConf is a configuration with one webhook named hook, called at
// cc, labelled with session (none when "").
func mutatingConf(name, session, hook string, cc admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.MutatingWebhookConfiguration {
	conf := admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: hook, ClientConfig: cc}}}
	if session != "" {
		conf.Labels = map[string]string{"hookback.dev/session": session}
	}
	return conf
}

func atURL(u string) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{URL: &u}
}

func atService(path string) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: "hookback", Name: "relay-s", Path: &path, Port: ptr.To[int32](8443)}}
}

// TestYourConfiguration: a view takes for yours the configuration the
// session registered (name, session label, exact endpoint), never merely
// the first one whose path is your webhook's: another session registered
// from the same manifests serves the same path elsewhere.
func TestYourConfiguration(t *testing.T) {
	mine := mutatingConf("mine-s", "s", "mine.example.com", atURL("https://127.0.0.1:8643/mutate-mine"))
	registered := Registered{Session: "s", Webhooks: []RegisteredWebhook{
		{Configuration: "mine-s", Webhook: "mine.example.com", Endpoint: "https://127.0.0.1:8643/mutate-mine"}}}
	for _, tc := range []struct {
		name       string
		cluster    []admissionregistrationv1.MutatingWebhookConfiguration
		registered Registered
		path, want string
	}{
		{name: "yours", cluster: []admissionregistrationv1.MutatingWebhookConfiguration{mine},
			registered: registered, path: "/mutate-mine", want: "mine-s"},
		{name: "another session's, same manifests, sorted before yours",
			cluster: []admissionregistrationv1.MutatingWebhookConfiguration{
				mutatingConf("mine-a", "a", "mine.example.com", atURL("https://127.0.0.1:8700/mutate-mine")), mine},
			registered: registered, path: "/mutate-mine", want: "mine-s"},
		{name: "another session's alone is not yours",
			cluster:    []admissionregistrationv1.MutatingWebhookConfiguration{mutatingConf("mine-a", "a", "mine.example.com", atURL("https://127.0.0.1:8700/mutate-mine"))},
			registered: registered, path: "/mutate-mine"},
		{name: "your name and label at an earlier run's address",
			cluster:    []admissionregistrationv1.MutatingWebhookConfiguration{mutatingConf("mine-s", "s", "mine.example.com", atURL("https://127.0.0.1:8600/mutate-mine"))},
			registered: registered, path: "/mutate-mine"},
		{name: "your name and address without the session label",
			cluster:    []admissionregistrationv1.MutatingWebhookConfiguration{mutatingConf("mine-s", "", "mine.example.com", atURL("https://127.0.0.1:8643/mutate-mine"))},
			registered: registered, path: "/mutate-mine"},
		{name: "nothing registered yet", cluster: []admissionregistrationv1.MutatingWebhookConfiguration{mine},
			registered: Registered{}, path: "/mutate-mine"},
		{name: "another of your webhooks' path", cluster: []admissionregistrationv1.MutatingWebhookConfiguration{mine},
			registered: registered, path: "/mutate-other"},
		{name: "through the tunnel's relay Service",
			cluster: []admissionregistrationv1.MutatingWebhookConfiguration{
				mutatingConf("mine-a", "a", "mine.example.com", atURL("https://127.0.0.1:8700/mutate-mine")),
				mutatingConf("mine-s", "s", "mine.example.com", atService("/mutate-mine"))},
			registered: Registered{Session: "s", Webhooks: []RegisteredWebhook{
				{Configuration: "mine-s", Webhook: "mine.example.com", Endpoint: "service hookback/relay-s:8443/mutate-mine"}}},
			path: "/mutate-mine", want: "mine-s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat := NewCatalog(tc.cluster, nil, nil, nil, nil, nil)
			got, hook := yourConfiguration(cat, tc.registered, tc.path)
			if got != tc.want {
				t.Errorf("your configuration: %q, want %q", got, tc.want)
			}
			if tc.want != "" && hook.Name != "mine.example.com" {
				t.Errorf("your webhook: %q, want mine.example.com", hook.Name)
			}
		})
	}
}

// TestRegisteredFrom: what a session registers for your webhooks is read
// from its configurations as applied: mutating ones only, its observers
// left out, each webhook with its exact endpoint.
func TestRegisteredFrom(t *testing.T) {
	var objs []*unstructured.Unstructured
	add := func(kind string, o any, labels map[string]string) {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetKind(kind)
		u.SetLabels(labels)
		objs = append(objs, u)
	}
	mine := mutatingConf("mine-s", "s", "mine.example.com", atURL("https://127.0.0.1:8643/mutate-mine"))
	mine.Webhooks = append(mine.Webhooks, admissionregistrationv1.MutatingWebhook{Name: "relayed.example.com", ClientConfig: atService("/mutate-relayed")})
	add("MutatingWebhookConfiguration", &mine, mine.Labels)
	first := mutatingConf("0--hookback-chain-first-s", "s", "first.chain.hookback.dev", atURL("https://127.0.0.1:8643/chain/first"))
	add("MutatingWebhookConfiguration", &first, map[string]string{"hookback.dev/session": "s", LabelObserver: "first"})
	validating := admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "check-s"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "check.example.com", ClientConfig: atURL("https://127.0.0.1:8643/check")}}}
	add("ValidatingWebhookConfiguration", &validating, map[string]string{"hookback.dev/session": "s"})

	r, err := RegisteredFrom("s", objs)
	if err != nil {
		t.Fatal(err)
	}
	want := []RegisteredWebhook{
		{Configuration: "mine-s", Webhook: "mine.example.com", Endpoint: "https://127.0.0.1:8643/mutate-mine"},
		{Configuration: "mine-s", Webhook: "relayed.example.com", Endpoint: "service hookback/relay-s:8443/mutate-relayed"},
	}
	if r.Session != "s" || !slices.Equal(r.Webhooks, want) {
		t.Errorf("registered %+v, want session s and %+v", r, want)
	}

	bad := &unstructured.Unstructured{Object: map[string]any{"kind": "MutatingWebhookConfiguration", "metadata": map[string]any{"name": "bad-s"}, "webhooks": "none"}}
	if _, err := RegisteredFrom("s", []*unstructured.Unstructured{bad}); err == nil {
		t.Error("a configuration whose webhooks are not a list: no error")
	}
}
