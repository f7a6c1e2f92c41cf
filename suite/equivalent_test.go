package suite

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

func gadgetRules(version string) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"test.hookback.dev"}, APIVersions: []string{version}, Resources: []string{"gadgets"}}}}
}

const gadgetV2 = `{apiVersion: test.hookback.dev/v2, kind: Gadget, metadata: {name: g, namespace: default}, spec: {count: 3, color: blue}}`

// TestMatchPolicyEquivalent: a webhook registered for v1 of a CRD is
// called for a v2 object under matchPolicy Equivalent (the default), with
// the object converted to v1 by the CRD's conversion webhook, and not at
// all under Exact; with no conversion webhook known, the row says the
// object must be converted.
func TestMatchPolicyEquivalent(t *testing.T) {
	exact, equiv := admissionregistrationv1.Exact, admissionregistrationv1.Equivalent
	conv := []ConversionWebhook{{CRD: "gadgets.test.hookback.dev", Converter: gadgetConverter(t, false)}}
	for _, tc := range []struct {
		name   string
		policy *admissionregistrationv1.MatchPolicyType
		convs  []ConversionWebhook
		expect string
		// status and detail of the row; called: the webhook's calls.
		status, detail string
		called         int
	}{
		{name: "default is Equivalent", expect: "{result: allowed}", convs: conv, status: Pass, called: 1},
		{name: "Equivalent", policy: &equiv, expect: "{result: allowed}", convs: conv, status: Pass, called: 1},
		{name: "Exact", policy: &exact, expect: "{result: skip}", convs: conv, status: Pass},
		{name: "Equivalent with no conversion webhook", expect: "{result: allowed}", status: Fail, called: 0,
			detail: "the object must be converted to test.hookback.dev/v1: under matchPolicy Equivalent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newReviewServer(t, map[string]answer{"/v1": func(obj map[string]any) (string, []map[string]any) {
				if obj["apiVersion"] != "test.hookback.dev/v1" || obj["spec"].(map[string]any)["size"] != 3.0 {
					return "not a v1 gadget of size 3", nil
				}
				return "", nil
			}})
			hooks := []*Webhook{{Configuration: "v", Path: "/v1", Handler: s.forwarder(t, "/v1"), Validating: &admissionregistrationv1.ValidatingWebhook{
				Name: "v1.example.com", Rules: gadgetRules("v1"), MatchPolicy: tc.policy, AdmissionReviewVersions: []string{"v1"}}}}
			path := writeSuite(t, header+"- name: v2-gadget\n  operation: CREATE\n  object: "+gadgetV2+"\n  expect: "+tc.expect+"\n")
			files, err := Load([]string{path})
			if err != nil {
				t.Fatal(err)
			}
			rows := Run(context.Background(), files, Options{Webhooks: hooks, Conversions: tc.convs})
			if len(rows) != 1 || rows[0].Status != tc.status || !strings.Contains(rows[0].Detail, tc.detail) {
				t.Fatalf("rows %+v", rows)
			}
			if n := len(s.objects("/v1")); n != tc.called {
				t.Errorf("the webhook was called %d times, want %d", n, tc.called)
			}
		})
	}
}

// TestEquivalentInAChain: a mutating webhook of v1 patches the v1 object;
// its patch, converted back to v2, reaches the validating webhook of v2.
func TestEquivalentInAChain(t *testing.T) {
	s := newReviewServer(t, map[string]answer{
		"/mutate-v1": addLabel("mutated", "in-v1"),
		"/check-v2": func(obj map[string]any) (string, []map[string]any) {
			if obj["apiVersion"] != "test.hookback.dev/v2" || labelsOf(obj)["mutated"] != "in-v1" {
				return "want a v2 gadget with the v1 webhook's label", nil
			}
			return "", nil
		},
	})
	hooks := []*Webhook{
		{Configuration: "m", Path: "/mutate-v1", Handler: s.forwarder(t, "/mutate-v1"), Mutating: &admissionregistrationv1.MutatingWebhook{
			Name: "mutate-v1.example.com", Rules: gadgetRules("v1"), AdmissionReviewVersions: []string{"v1"}}},
		{Configuration: "v", Path: "/check-v2", Handler: s.forwarder(t, "/check-v2"), Validating: &admissionregistrationv1.ValidatingWebhook{
			Name: "check-v2.example.com", Rules: gadgetRules("v2"), AdmissionReviewVersions: []string{"v1"}}},
	}
	path := writeSuite(t, header+`- name: chain
  operation: CREATE
  object: `+gadgetV2+`
  expect: {result: allowed}
  expectWebhooks:
    mutate-v1.example.com:
      result: patched
      object: {apiVersion: test.hookback.dev/v1, kind: Gadget, metadata: {name: g, namespace: default, labels: {mutated: in-v1}}, spec: {size: 3, color: blue}}
`)
	files, err := Load([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	rows := Run(context.Background(), files, Options{Webhooks: hooks, Conversions: []ConversionWebhook{{CRD: "gadgets.test.hookback.dev", Converter: gadgetConverter(t, false)}}})
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.Status != Pass {
			t.Errorf("%s %s: %s\n%s", r.Webhook, r.Status, r.Detail, r.Diff)
		}
	}
}

// TestEquivalentBuiltinType: a webhook registered for apps/v1beta1
// deployments matches an apps/v1 case under Equivalent, and since
// hookback converts no built-in type offline, the row says the object
// must be converted to apps/v1beta1, without calling the webhook.
func TestEquivalentBuiltinType(t *testing.T) {
	h := &counting{}
	w := &Webhook{Configuration: "v", Path: "/deploy", Handler: h, Validating: &admissionregistrationv1.ValidatingWebhook{
		Name: "deploy.example.com", AdmissionReviewVersions: []string{"v1"},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1beta1"}, Resources: []string{"deployments"}}}}}}
	path := writeSuite(t, header+"- name: deployment\n  operation: CREATE\n  object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: x}}\n  expect: {result: error, message: the object must be converted to apps/v1beta1}\n")
	files, err := Load([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	rows := Run(context.Background(), files, Options{Webhooks: []*Webhook{w}})
	if len(rows) != 1 || rows[0].Status != Pass || !strings.Contains(rows[0].Got.Message, "no conversion webhook of deployments.apps") {
		t.Errorf("rows %+v", rows)
	}
	if n := h.calls.Load(); n != 0 {
		t.Errorf("the webhook was called %d times with an object in the wrong version", n)
	}
}

// TestEquivalentMatchConditions: the matchConditions of a webhook matched
// through another version see the object in that version (v1's
// spec.size, where the v2 case has spec.count), as the apiserver converts
// before evaluating them.
func TestEquivalentMatchConditions(t *testing.T) {
	for _, tc := range []struct {
		condition string
		want      string
		called    int
	}{
		{"object.spec.size == 3", "allowed", 1},
		{"object.spec.size == 4", "skip", 0},
	} {
		t.Run(tc.condition, func(t *testing.T) {
			s := newReviewServer(t, map[string]answer{"/v1": func(map[string]any) (string, []map[string]any) { return "", nil }})
			hooks := []*Webhook{{Configuration: "v", Path: "/v1", Handler: s.forwarder(t, "/v1"), Validating: &admissionregistrationv1.ValidatingWebhook{
				Name: "v1.example.com", Rules: gadgetRules("v1"), AdmissionReviewVersions: []string{"v1"},
				MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "size", Expression: tc.condition}}}}}
			path := writeSuite(t, header+"- name: v2-gadget\n  operation: CREATE\n  object: "+gadgetV2+"\n  expect: {result: "+tc.want+"}\n")
			files, err := Load([]string{path})
			if err != nil {
				t.Fatal(err)
			}
			conv := []ConversionWebhook{{CRD: "gadgets.test.hookback.dev", Converter: gadgetConverter(t, false)}}
			rows := Run(context.Background(), files, Options{Webhooks: hooks, Conversions: conv})
			if len(rows) != 1 || rows[0].Status != Pass {
				t.Errorf("rows %+v", rows)
			}
			if n := len(s.objects("/v1")); n != tc.called {
				t.Errorf("called %d times, want %d", n, tc.called)
			}
		})
	}
}
