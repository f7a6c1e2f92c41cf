package suite

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// sidecar appends a container each call, as a naive sidecar injector
// does; checked adds it only when it is not there yet.
func sidecar(obj map[string]any) (string, []map[string]any) {
	return "", []map[string]any{{"op": "add", "path": "/spec/containers/-", "value": map[string]any{"name": "agent", "image": "agent"}}}
}

func checkedSidecar(obj map[string]any) (string, []map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	cs, _ := spec["containers"].([]any)
	for _, c := range cs {
		if m, _ := c.(map[string]any); m["name"] == "agent" {
			return "", nil
		}
	}
	return sidecar(obj)
}

// sameLabel answers every call with the same label: the second patch is
// not empty, yet leaves the object as it was.
func sameLabel(map[string]any) (string, []map[string]any) {
	return "", []map[string]any{{"op": "add", "path": "/metadata/labels", "value": map[string]any{"seen": "yes"}}}
}

func TestMutatingWebhooksAreCalledAgainWithTheirOutput(t *testing.T) {
	ifNeeded, never := admissionregistrationv1.IfNeededReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy
	tests := []struct {
		name   string
		answer answer
		policy *admissionregistrationv1.ReinvocationPolicyType
		mode   string
		status string
		// diff or note: what the row must say; calls: how often the
		// webhook was called.
		diff, note string
		calls      int
	}{
		{name: "a naive injector under IfNeeded fails", answer: sidecar, policy: &ifNeeded, status: Fail, calls: 2,
			diff: "not idempotent: second call patched /spec/containers/- (reinvocationPolicy IfNeeded: the apiserver calls it again with its own output)"},
		{name: "a naive injector under Never is a note", answer: sidecar, policy: &never, status: Pass, calls: 2,
			note: "not idempotent: second call patched /spec/containers/- (a failure under reinvocationPolicy IfNeeded, or with --not-idempotent fail)"},
		{name: "a naive injector, policy unset, is a note", answer: sidecar, status: Pass, calls: 2, note: "not idempotent: second call patched /spec/containers/-"},
		{name: "an injector that looks first passes", answer: checkedSidecar, policy: &ifNeeded, status: Pass, calls: 2},
		{name: "the same label again changes nothing", answer: sameLabel, policy: &ifNeeded, status: Pass, calls: 2},
		{name: "fail mode fails under Never", answer: sidecar, policy: &never, mode: IdempotenceFail, status: Fail, calls: 2,
			diff: "not idempotent: second call patched /spec/containers/-"},
		{name: "warn mode notes under IfNeeded", answer: sidecar, policy: &ifNeeded, mode: IdempotenceWarn, status: Pass, calls: 2,
			note: "not idempotent: second call patched /spec/containers/-"},
		{name: "off mode calls once", answer: sidecar, policy: &ifNeeded, mode: IdempotenceOff, status: Pass, calls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newReviewServer(t, map[string]answer{"/m": tt.answer})
			hooks := []*Webhook{{Configuration: "m", Path: "/m", Handler: s.forwarder(t, "/m"), Mutating: &admissionregistrationv1.MutatingWebhook{
				Name: "inject.example.com", Rules: podRules(), ReinvocationPolicy: tt.policy, AdmissionReviewVersions: []string{"v1"}}}}
			_, first := tt.answer(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "a"}}}})
			want, _ := json.Marshal(first)
			path := writeSuite(t, header+"- {name: c, operation: CREATE, namespace: y, object: "+pod("p", "")+", expect: {result: patched, patch: "+string(want)+"}}\n")
			files, err := Load([]string{path})
			if err != nil {
				t.Fatal(err)
			}
			rows := Run(context.Background(), files, Options{Webhooks: hooks, Idempotence: tt.mode})
			if len(rows) != 1 || rows[0].Status != tt.status {
				t.Fatalf("rows %+v, want one %s", rows, tt.status)
			}
			r := rows[0]
			if tt.diff != "" && !strings.Contains(r.Diff, tt.diff) || tt.diff == "" && r.Diff != "" {
				t.Errorf("diff %q, want %q", r.Diff, tt.diff)
			}
			notes := slices.DeleteFunc(slices.Clone(r.Notes), func(n string) bool { return !strings.HasPrefix(n, "not idempotent") })
			if tt.note != "" && (len(notes) != 1 || !strings.Contains(notes[0], tt.note)) || tt.note == "" && len(notes) > 0 {
				t.Errorf("notes %q, want %q", notes, tt.note)
			}
			seen := s.objects("/m")
			if len(seen) != tt.calls {
				t.Fatalf("called %d times, want %d", len(seen), tt.calls)
			}
			if tt.calls == 2 && reflect.DeepEqual(seen[0], seen[1]) {
				t.Errorf("the second call was not sent the first one's output: %v", seen[1])
			}
		})
	}
}

// TestVariantsTheConfigurationNeverMatches: a CREATE case is matched as
// an UPDATE and a DELETE of the same object too, with the apiserver's
// predicates and CEL; what a webhook never sees is a note, or a failure
// when the case requires it.
func TestVariantsTheConfigurationNeverMatches(t *testing.T) {
	ops := func(o ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		r := podRules()
		r[0].Operations = o
		return r
	}
	c, u, d, all := admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete, admissionregistrationv1.OperationAll
	tests := []struct {
		name  string
		rules []admissionregistrationv1.RuleWithOperations
		conds []admissionregistrationv1.MatchCondition
		// fields are more of the case's fields, in flow style.
		fields string
		status string
		note   string
		diff   string
	}{
		{name: "CREATE only", rules: ops(c), status: Pass, note: "validating webhook v.example.com never sees UPDATE or DELETE of this object: an edit can bypass it"},
		{name: "CREATE and UPDATE", rules: ops(c, u), status: Pass, note: "validating webhook v.example.com never sees DELETE of this object"},
		{name: "every operation", rules: ops(all), status: Pass},
		{name: "CREATE, UPDATE, DELETE", rules: ops(c, u, d), status: Pass},
		{name: "a matchCondition on the operation", rules: ops(all), status: Pass,
			conds: []admissionregistrationv1.MatchCondition{{Name: "create", Expression: "request.operation == 'CREATE'"}},
			note:  "never sees UPDATE or DELETE of this object: an edit can bypass it"},
		{name: "named, but not called for the CREATE either", rules: ops(u), fields: "webhooks: [v.example.com]", status: Pass},
		{name: "required UPDATE fails", rules: ops(c), fields: "requireOperations: [UPDATE]", status: Fail,
			diff: "requireOperations: validating webhook v.example.com never sees UPDATE of this object: an edit can bypass it",
			note: "never sees DELETE of this object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newReviewServer(t, map[string]answer{"/v": func(map[string]any) (string, []map[string]any) { return "", nil }})
			hooks := []*Webhook{{Configuration: "v", Path: "/v", Handler: s.forwarder(t, "/v"), Validating: &admissionregistrationv1.ValidatingWebhook{
				Name: "v.example.com", Rules: tt.rules, MatchConditions: tt.conds, AdmissionReviewVersions: []string{"v1"}}}}
			extra := ""
			if tt.fields != "" {
				extra = tt.fields + ", "
			}
			path := writeSuite(t, header+"- {name: c, operation: CREATE, namespace: y, "+extra+"object: "+pod("p", "")+", expect: {result: allowed}}\n")
			files, err := Load([]string{path})
			if err != nil {
				t.Fatal(err)
			}
			rows := Run(context.Background(), files, Options{Webhooks: hooks})
			if len(rows) != 1 || rows[0].Status != tt.status {
				t.Fatalf("rows %+v, want one %s", rows, tt.status)
			}
			if n := len(s.objects("/v")); n != 1 {
				t.Errorf("the webhook was called %d times, want once (the variants are matched, not sent)", n)
			}
			r := rows[0]
			if tt.note != "" && (len(r.Notes) != 1 || !strings.Contains(r.Notes[0], tt.note)) || tt.note == "" && len(r.Notes) > 0 {
				t.Errorf("notes %q, want %q", r.Notes, tt.note)
			}
			if tt.diff != r.Diff {
				t.Errorf("diff %q, want %q", r.Diff, tt.diff)
			}
		})
	}
}

// TestUpdateLeavesANotIdempotentCase: a case failed only by the second
// call has no expectation to rewrite: --update leaves it byte for byte.
func TestUpdateLeavesANotIdempotentCase(t *testing.T) {
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	s := newReviewServer(t, map[string]answer{"/m": sidecar})
	hooks := []*Webhook{{Configuration: "m", Path: "/m", Handler: s.forwarder(t, "/m"), Mutating: &admissionregistrationv1.MutatingWebhook{
		Name: "inject.example.com", Rules: podRules(), ReinvocationPolicy: &ifNeeded, AdmissionReviewVersions: []string{"v1"}}}}
	body := header + `- {name: c, operation: CREATE, namespace: y, object: ` + pod("p", "") + `, expect: {result: patched, patch: [{op: add, path: /spec/containers/-, value: {name: agent, image: agent}}]}}` + "\n"
	path := writeSuite(t, body)
	files, err := Load([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	rows := Run(context.Background(), files, Options{Webhooks: hooks})
	if len(rows) != 1 || rows[0].Status != Fail {
		t.Fatalf("rows %+v, want the case failed as not idempotent", rows)
	}
	var out strings.Builder
	if n, err := Update(rows, &out); err != nil || n != 0 {
		t.Errorf("Update = %d, %v, want 0 cases updated\n%s", n, err, out.String())
	}
	if b, _ := os.ReadFile(path); string(b) != body {
		t.Errorf("the suite file changed:\n%s", b)
	}
}
