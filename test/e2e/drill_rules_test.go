package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hookback/hookback/lint"
)

// drillWebhook is a validating webhook configuration with the given
// webhook fields (JSON, NS standing for ns), served at /validate by the
// drill's upstream.
func drillWebhook(name, fields, ns string) string {
	fields = strings.ReplaceAll(fields, "NS", ns)
	return fmt.Sprintf(`{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
"metadata": {"name": %q},
"webhooks": [{"name": "%s.drill.example.com", "clientConfig": {"service": {"namespace": "policy-system", "name": "policy-webhook", "path": "/validate"}},
  "failurePolicy": "Fail", "timeoutSeconds": 2, "admissionReviewVersions": ["v1"], %s}]}`, name, name, fields)
}

// kwok's nodes hold no Lease: the drill's lease renewal in kube-node-lease
// is then a create, which the lease rules below cover beside the update.

// TestDrillRules: for each lint rule a drill can show on the local control
// plane, the configuration the rule is about, linted (the finding and its
// fix) and drilled with hookback drill (registered as start does, the
// fault injected, the failurePolicy kept): the request the rule says fails
// does fail on the apiserver; lint's fix, applied to the manifest as the
// JSON patch it prints, removes the finding and the failure. A second
// request, which the webhook judges in both runs, shows it was registered
// and called. The drill's registration is scoped like start's (-n): to
// drill the control plane's namespaces, the test names them with -n, as a
// developer who means to see it would; the configuration's own selectors
// still decide.
func TestDrillRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, rule string
		// fields of the webhook; NS is the test's namespace.
		fields string
		// scope is the drill's -n beside the test's namespace; "*" is
		// --all-namespaces instead.
		scope []string
		// the drill's request ("request namespace", NS the test's
		// namespace) the rule is about, and its outcome before and after
		// the fix.
		request, before, after string
		// judged is a request the webhook judges in both runs (timed out),
		// which shows it registered and called; judgedAfter when the fix
		// changes that outcome (failurePolicy Ignore: admitted, the log's
		// admission line showing the call). proof is the namespace of
		// that log line.
		judged, judgedAfter, proof string
		// fix replaces lint's patch where the rule has none (advice).
		fix string
		// label, when set, is put on the test's namespace before the
		// first drill: what anyone who may edit a namespace can do.
		label string
		// controlPlane: the drill's webhook judges what the control plane
		// and other drills send (kube-system pods, kube-node-lease leases,
		// nodes): such drills run one at a time.
		controlPlane bool
	}{
		{name: "control-plane-namespaces", rule: "control-plane-namespaces", scope: []string{"kube-system"}, controlPlane: true,
			fields:  `"sideEffects": "None", "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]`,
			request: "pod create kube-system", before: "timed out", after: "admitted", judged: "pod create NS"},
		{name: "critical-resources", rule: "critical-resources", scope: []string{"kube-node-lease"}, controlPlane: true,
			fields: `"sideEffects": "None", "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]},
  {"apiGroups": ["coordination.k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["leases"]}]`,
			request: "lease renewal kube-node-lease", before: "timed out", after: "admitted", judged: "pod create NS", judgedAfter: "admitted"},
		{name: "wildcard-subresources", rule: "wildcard-subresources", scope: []string{"*"}, controlPlane: true,
			fields: `"sideEffects": "None", "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["*/*"], "scope": "Cluster"},
  {"apiGroups": ["coordination.k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["leases"]}],
  "matchConditions": [{"name": "nodes-and-node-leases", "expression": "request.resource.resource == 'nodes' || (request.resource.resource == 'leases' && request.namespace == 'kube-node-lease')"}]`,
			request: "node status update ", before: "timed out", after: "admitted", judged: "lease renewal kube-node-lease", proof: "kube-node-lease"},
		{name: "opt-out-label", rule: "opt-out-label", label: "policy.example.com/skip",
			fields: `"sideEffects": "None", "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
  "namespaceSelector": {"matchExpressions": [{"key": "policy.example.com/skip", "operator": "DoesNotExist"}]}`,
			fix:     `[{"op": "replace", "path": "/webhooks/0/namespaceSelector", "value": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "kube-node-lease"]}]}}]`,
			request: "pod create NS", before: "admitted", after: "timed out", judged: "pod create NS", judgedAfter: "timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			manifest := []byte(drillWebhook(tc.name, tc.fields, ns))
			f := lintFile(t, manifest, tc.rule)
			if f == nil {
				t.Fatalf("lint finds no %s in %s", tc.rule, manifest)
			}
			fix := tc.fix
			if fix == "" {
				b, err := json.Marshal(f.Fix)
				if err != nil || len(f.Fix) == 0 {
					t.Fatalf("%s has no fix: %+v", tc.rule, f)
				}
				fix = string(b)
			}
			request, judged, proof := strings.ReplaceAll(tc.request, "NS", ns), strings.ReplaceAll(tc.judged, "NS", ns), cmp.Or(tc.proof, ns)
			scope := append([]string{ns}, tc.scope...)
			if slices.Contains(tc.scope, "*") {
				scope = []string{"*"}
			}
			if tc.label != "" {
				labelNamespace(t, ns, tc.label)
			}
			if tc.controlPlane {
				controlPlaneDrills.Lock()
				defer controlPlaneDrills.Unlock()
			}
			got, errOut := drill(t, manifest, scope)
			if got[request] != tc.before || tc.label == "" && got[judged] != "timed out" {
				t.Fatalf("%s: %s %q, %s %q; want %q, and the webhook judging the other\n%s", tc.rule, request, got[request], judged, got[judged], tc.before, errOut)
			}
			manifest = applyFix(t, manifest, []byte(fix))
			if g := lintFile(t, manifest, tc.rule); g != nil {
				t.Errorf("after the fix, lint still finds %s: %s", tc.rule, g.Message)
			}
			got, errOut = drill(t, manifest, scope)
			if got[request] != tc.after || got[judged] != cmp.Or(tc.judgedAfter, "timed out") {
				t.Fatalf("after the fix %s: %s %q, %s %q; want %q, and the webhook still judging the other\n%s", fix, request, got[request], judged, got[judged], tc.after, errOut)
			}
			if !strings.Contains(errOut, "namespace="+proof) {
				t.Errorf("hookback's log shows no admission in %s: the webhook was not called\n%s", proof, errOut)
			}
		})
	}
}

// controlPlaneDrills serializes the drills whose webhooks judge what
// every drill sends to the control plane (a pod in kube-system, a node
// lease, a node's status): TestDrill expects kube-system's pod admitted.
var controlPlaneDrills sync.Mutex

// TestDrillSideEffects: dry-run-side-effects on kube-apiserver 1.36. The
// rule's failure comes earlier than the dry run it is about:
// admissionregistration.k8s.io/v1 refuses sideEffects Some (and Unknown,
// and none at all), so the drill cannot even register the configuration;
// with lint's fix (None) it registers, and its dry-run pod create is
// judged and admitted (Ignore).
func TestDrillSideEffects(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	manifest := []byte(drillWebhook("side-effects", `"sideEffects": "Some", "failurePolicy": "Ignore", "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]`, ns))
	f := lintFile(t, manifest, "dry-run-side-effects")
	if f == nil || len(f.Fix) == 0 {
		t.Fatalf("lint finds no dry-run-side-effects with a fix: %+v", f)
	}
	path := filepath.Join(t.TempDir(), "webhook.json")
	if err := os.WriteFile(path, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := hookback(t, env.kubeconfig, drillArgs(t, path, []string{ns}, "slow=10ms")...)
	if code == 0 || !strings.Contains(out+errOut, "sideEffects") {
		t.Fatalf("drill of sideEffects Some: exit %d, want the configuration refused naming sideEffects\n%s\n%s", code, out, errOut)
	}
	t.Logf("refused: %s", lastLine(errOut))
	manifest = applyFix(t, manifest, fixOf(t, f))
	got, errOut := drill(t, manifest, []string{ns}, "slow=10ms")
	if got["pod create "+ns] != "admitted" || !strings.Contains(errOut, "namespace="+ns) {
		t.Fatalf("after the fix: pod create in %s %q, want admitted through the webhook\n%s", ns, got["pod create "+ns], errOut)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

// lintFile lints manifest as a file and returns its finding of rule.
func lintFile(t *testing.T, manifest []byte, rule string) *lint.Finding {
	t.Helper()
	path := filepath.Join(t.TempDir(), "webhook.json")
	if err := os.WriteFile(path, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	return findingOf(lintFindings(t, "lint", path, "--fail-on", "none", "-o", "json"), rule)
}

// drillArgs drill path's webhooks under fault, kept Fail, scoped to
// the namespaces of scope ("*": --all-namespaces).
func drillArgs(t *testing.T, path string, scope []string, fault string) []string {
	up := testUpstream(t, false)
	args := []string{"drill", "--session", sessionFor(t), "--port", fmt.Sprint(freePort(t)),
		"--health-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--state-dir", t.TempDir(),
		"--webhook-config", path, "--upstream", up.URL, "--timeout", "1s", "--fault", fault, "--keep-failure-policy", "-o", "json"}
	for _, n := range scope {
		if n == "*" {
			args = append(args, "--all-namespaces")
			continue
		}
		args = append(args, "-n", n)
	}
	return args
}

// drill runs hookback drill on manifest (fault timeout unless one is
// given first in more, then any more flags) and returns each request's
// outcome, by "request namespace".
func drill(t *testing.T, manifest []byte, scope []string, more ...string) (map[string]string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "webhook.json")
	if err := os.WriteFile(path, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	f := "timeout"
	if len(more) > 0 {
		f, more = more[0], more[1:]
	}
	out, errOut, code := hookback(t, env.kubeconfig, append(drillArgs(t, path, scope, f), more...)...)
	if code != 0 && code != 1 {
		t.Fatalf("drill exit %d\n%s\n%s", code, out, errOut)
	}
	var rep struct {
		Results []struct{ Request, Namespace, Outcome, Message string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("drill -o json: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, r := range rep.Results {
		got[r.Request+" "+r.Namespace] = r.Outcome
	}
	return got, errOut
}

// labelNamespace sets label=true on ns, as anyone who may patch a
// namespace can.
func labelNamespace(t *testing.T, ns, label string) {
	t.Helper()
	p, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{label: "true"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.client.CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType, p, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// applyFix applies a JSON patch (lint's printed fix) to manifest.
func applyFix(t *testing.T, manifest, fix []byte) []byte {
	t.Helper()
	p, err := jsonpatch.DecodePatch(fix)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(manifest)
	if err != nil {
		t.Fatalf("apply %s: %v", fix, err)
	}
	return out
}

// fixOf is f's fix as the JSON patch lint prints.
func fixOf(t *testing.T, f *lint.Finding) []byte {
	t.Helper()
	b, err := json.Marshal(f.Fix)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
