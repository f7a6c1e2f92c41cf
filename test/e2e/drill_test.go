package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDrill: `hookback drill --fault timeout` on a validating webhook that
// covers every pod create (testdata/drill/pods-webhook.yaml), scoped to
// the test's namespace, on the real apiserver. With the failurePolicy
// kept (Fail), the pod create in the namespace fails after the 1 s timeout
// and the drill exits 1; with hookback's default Ignore it is admitted and
// the drill exits 0, hookback's admission log proving the webhook was
// called. kube-system is outside the scope: admitted in both, beside
// lint's prediction for the manifests as written.
func TestDrill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		keep        bool
		wantOutcome string
		wantCode    int
		// selfDeadlock: the webhook's own Service and Deployment are in
		// the namespace it covers, as the self-deadlock rule finds them.
		selfDeadlock bool
	}{
		{name: "fail", keep: true, wantOutcome: "timed out", wantCode: 1},
		{name: "ignore", wantOutcome: "admitted", wantCode: 0},
		{name: "self-deadlock", keep: true, selfDeadlock: true, wantOutcome: "timed out", wantCode: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			up := testUpstream(t, false)
			manifests := repoPath("testdata", "drill", "pods-webhook.yaml")
			if tc.selfDeadlock {
				manifests = selfDeadlockManifests(t, ns)
			}
			args := []string{"drill", "--session", sessionFor(t), "--port", fmt.Sprint(freePort(t)),
				"--health-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--state-dir", t.TempDir(),
				"--webhook-config", manifests, "--upstream", up.URL,
				"--timeout", "1s", "-n", ns, "--fault", "timeout", "-o", "json"}
			if tc.keep {
				args = append(args, "--keep-failure-policy")
			}
			// Its kube-system pod must not meet TestDrillRules' webhooks.
			controlPlaneDrills.Lock()
			out, errOut, code := hookback(t, env.kubeconfig, args...)
			controlPlaneDrills.Unlock()
			if code != tc.wantCode {
				t.Fatalf("drill exit %d, want %d\n%s\n%s", code, tc.wantCode, out, errOut)
			}
			var rep struct {
				Results []struct{ Fault, Request, Namespace, Outcome, Message, Predicted string }
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("drill -o json: %v\n%s", err, out)
			}
			got, predicted := map[string]string{}, map[string]string{}
			for _, r := range rep.Results {
				got[r.Request+" "+r.Namespace] = r.Outcome
				predicted[r.Request+" "+r.Namespace] = r.Predicted
			}
			// lint judges the manifests as written: kube-system not
			// excluded from a Fail webhook (the drill's scope keeps it out).
			if p := predicted["pod create kube-system"]; p != "control-plane-namespaces (error)" {
				t.Errorf("kube-system pod create: predicted %q, want lint's control-plane-namespaces finding", p)
			}
			if got["pod create "+ns] != tc.wantOutcome || got["pod create kube-system"] != "admitted" {
				t.Errorf("outcomes %v: want pod create in %s %s, in kube-system admitted\n%s", got, ns, tc.wantOutcome, out)
			}
			if tc.selfDeadlock {
				own := "own pod Deployment/policy-webhook " + ns
				if got[own] != "timed out" || !strings.Contains(predicted[own], "self-deadlock (error)") {
					t.Errorf("%s: %s, predicted %q: want timed out, as lint's self-deadlock predicts\n%s", own, got[own], predicted[own], out)
				}
			}
			if !strings.Contains(errOut, "namespace="+ns) {
				t.Errorf("hookback's log shows no admission in %s: the webhook was not called\n%s", ns, errOut)
			}
		})
	}
}

// selfDeadlockManifests are testdata/drill/pods-webhook.yaml's webhook
// with its Service and Deployment in ns, the namespace it covers.
func selfDeadlockManifests(t *testing.T, ns string) string {
	t.Helper()
	b, err := os.ReadFile(repoPath("testdata", "drill", "pods-webhook.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.ReplaceAll(string(b), "namespace: policy-system", "namespace: "+ns) + fmt.Sprintf(`---
apiVersion: v1
kind: Service
metadata: {name: policy-webhook, namespace: %[1]s}
spec:
  selector: {app: policy-webhook}
  ports: [{port: 443, targetPort: 9443}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: policy-webhook, namespace: %[1]s}
spec:
  selector: {matchLabels: {app: policy-webhook}}
  template:
    metadata: {labels: {app: policy-webhook}}
    spec:
      containers: [{name: webhook, image: registry.k8s.io/pause:3.10}]
`, ns)
	path := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
