package tunnel_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/tunnel"
)

func TestManifests(t *testing.T) {
	s := tunnel.Spec{Name: "hookback-relay-dev", Namespace: "hookback-system", Session: "dev",
		Image: "ghcr.io/hookback/hookback:v1", Secret: "the-secret-value"}
	o := tunnel.Manifests(s)
	session := labels.SelectorFromSet(labels.Set{registration.LabelManagedBy: registration.ManagedByValue, registration.LabelSession: "dev"})

	t.Run("every object carries the session labels cleanup selects on", func(t *testing.T) {
		for kind, l := range map[string]map[string]string{"Secret": o.Secret.Labels, "Deployment": o.Deployment.Labels,
			"Service": o.Service.Labels, "pod template": o.Deployment.Spec.Template.Labels} {
			if !session.Matches(labels.Set(l)) {
				t.Errorf("%s labels %v do not match %s", kind, l, session)
			}
		}
	})
	t.Run("the Service and the Deployment select the relay pods", func(t *testing.T) {
		pod := labels.Set(o.Deployment.Spec.Template.Labels)
		if !labels.SelectorFromSet(o.Service.Spec.Selector).Matches(pod) {
			t.Error("Service selector misses the relay pods")
		}
		if !labels.SelectorFromSet(o.Deployment.Spec.Selector.MatchLabels).Matches(pod) {
			t.Error("Deployment selector misses its pods")
		}
		sel, err := labels.Parse(s.Selector())
		if err != nil || !sel.Matches(pod) {
			t.Errorf("Spec.Selector %q misses the pods (%v)", s.Selector(), err)
		}
	})
	t.Run("the secret reaches the relay by reference only", func(t *testing.T) {
		b, err := json.Marshal(o.Deployment)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), s.Secret) {
			t.Error("the Deployment spells out the session secret")
		}
		env := o.Deployment.Spec.Template.Spec.Containers[0].Env
		if len(env) != 1 || env[0].Name != "HOOKBACK_RELAY_SECRET" || env[0].ValueFrom.SecretKeyRef.Name != o.Secret.Name {
			t.Errorf("env = %+v, want HOOKBACK_RELAY_SECRET from Secret %s", env, o.Secret.Name)
		}
		if string(o.Secret.Data[tunnel.SecretKey]) != s.Secret {
			t.Error("the Secret lacks the session secret")
		}
	})
	t.Run("the pod runs hookback relay on the default ports", func(t *testing.T) {
		c := o.Deployment.Spec.Template.Spec.Containers[0]
		want := []string{"relay", "--log-format", "json", "--listen", ":8443", "--control", ":9443", "--metrics-address", ":8080"}
		if c.Image != s.Image || !slices.Equal(c.Args, want) {
			t.Errorf("container %s %v, want %s %v", c.Image, c.Args, s.Image, want)
		}
		if got := o.Service.Spec.Ports[0].TargetPort.StrVal; got != "https" {
			t.Errorf("Service targets %q, want the pod's https port", got)
		}
	})
	if got := s.ServiceHost(); got != "hookback-relay-dev.hookback-system.svc" {
		t.Errorf("ServiceHost = %q", got)
	}
}
