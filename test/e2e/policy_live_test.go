package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/inspector"
)

// policyViews reads the views start --policy wrote into dir/policy/.
func policyViews(t *testing.T, dir string) []inspector.PolicyView {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "policy", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []inspector.PolicyView
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v inspector.PolicyView
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, v)
	}
	return out
}

// observed is the observer's view of the request for object name, once
// recorded; nil before.
func observed(t *testing.T, dir, name string) *inspector.PolicyView {
	t.Helper()
	for _, v := range policyViews(t, dir) {
		if v.Webhook == "policy-observer" && v.Request.Name == name && v.Evaluation != nil {
			return &v
		}
	}
	return nil
}

// dryRunDeployment asks the apiserver to create a Deployment of replicas
// in ns, dry run: admission runs (the observer is sideEffects None), and
// nothing is stored.
func dryRunDeployment(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{whAppContainer()}}}}}
	if _, err := env.client.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run create of deployment %s: %v: the observer must never refuse", name, err)
	}
}

// TestPolicyLive: the Kubernetes documentation's ValidatingAdmissionPolicy
// (replicas <= 5 in namespaces labelled environment=test), not enforced:
// hookback's observer receives the real request, which the apiserver
// admits, and shows that the policy would deny it, with its validation,
// in --record-dir and on the inspector (list and entry.json). An edit of
// the file changes the next request's evaluation.
func TestPolicyLive(t *testing.T) {
	t.Parallel()
	ns := namespaceLabelled(t, map[string]string{"environment": "test"})
	dir, records := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	orig, err := os.ReadFile(repoPath("policy", "testdata", "basic", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--webhooks", "none", "--controllers", "none",
		"--policy", file, "--namespace", ns, "--record-dir", records, "--inspector-address", addr)
	p.ready(t)

	dryRunDeployment(t, ns, "seven", 7)
	var v *inspector.PolicyView
	eventually(t, "the observer's evaluation of seven", func(context.Context) (bool, error) {
		v = observed(t, records, "seven")
		return v != nil, nil
	})
	if len(v.Evaluation.Bindings) != 1 {
		t.Fatalf("bindings %+v, want the docs' one", v.Evaluation.Bindings)
	}
	b := v.Evaluation.Bindings[0]
	if v.Evaluation.Allowed || b.Policy != "demo-policy.example.com" || b.Binding != "demo-binding-test.example.com" || b.Decision != "deny" ||
		strings.Join(b.Actions, ",") != "deny" || len(b.Validations) != 1 || b.Validations[0].Result != "false" ||
		!strings.Contains(v.Evaluation.Message, "failed expression: object.spec.replicas <= 5") {
		t.Errorf("seven's evaluation %+v, want a denial by the docs' validation", v.Evaluation)
	}

	// The inspector: the row's policy column, and the review's entry.json.
	base := "http://" + addr
	id := regexp.MustCompile(`^[^"]*" data-id="(\d+)">`)
	var m []string
	eventually(t, "seven's row on the inspector, its policy column saying the policy would deny", func(context.Context) (bool, error) {
		for _, row := range strings.Split(get(t, base+"/?namespace="+ns), `<tr class="review`)[1:] {
			if strings.Contains(row, ns+"/seven</td>") && strings.Contains(row, `class="policy p-deny">would deny: `) {
				m = id.FindStringSubmatch(row)
			}
		}
		return m != nil, nil
	})
	var entry struct {
		Policy *inspector.PolicyView `json:"policy"`
	}
	if err := json.Unmarshal([]byte(get(t, base+"/reviews/"+m[1]+"/entry.json")), &entry); err != nil {
		t.Fatal(err)
	}
	if entry.Policy == nil || entry.Policy.Evaluation == nil || entry.Policy.Evaluation.Allowed {
		t.Errorf("entry.json's policy %+v, want the denial", entry.Policy)
	}

	// The edit: at most 10 replicas. The next requests are evaluated
	// against it once hookback has read it.
	if err := os.WriteFile(file, bytes.Replace(orig, []byte("<= 5"), []byte("<= 10"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	p.whWaitLogLine(t, "policies reloaded")
	dryRunDeployment(t, ns, "seven-again", 7)
	eventually(t, "the observer's evaluation of seven-again", func(context.Context) (bool, error) {
		v = observed(t, records, "seven-again")
		return v != nil, nil
	})
	if !v.Evaluation.Allowed || len(v.Evaluation.Bindings) != 1 || v.Evaluation.Bindings[0].Validations[0].Expression != "object.spec.replicas <= 10" {
		t.Errorf("seven-again's evaluation %+v, want admitted by the edited validation", v.Evaluation)
	}
	if strings.Contains(p.stderr.String(), `"replicas":7`) || strings.Contains(p.stderr.String(), "whapp") {
		t.Errorf("the log shows an object:\n%s", p.stderr.String())
	}
}

// candidatePolicy is the ValidatingAdmissionPolicy a team writes to
// replace crupstream's /validate (denies pods named deny-*, "controller-
// runtime says no to NAME"). It is wrong in one case: it denies every name
// that starts with "deny", dash or not.
const candidatePolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: no-deny-pods
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods"]
  validations:
  - expression: "!object.metadata.name.startsWith('deny')"
    messageExpression: "'controller-runtime says no to ' + object.metadata.name"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-deny-pods
spec:
  policyName: no-deny-pods
  validationActions: [Deny]
`

// TestPolicyMigration: controller-runtime's webhook server through
// --upstream, beside a candidate policy that agrees on all cases but one:
// the webhook decides every request, and exactly that one disagreement is
// logged, recorded, counted and summed up at exit. The mutating webhook is
// not compared with the validating policy.
func TestPolicyMigration(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	upstream, _ := startCRUpstream(t)
	session := sessionFor(t)
	file, records := filepath.Join(t.TempDir(), "policy.yaml"), t.TempDir()
	if err := os.WriteFile(file, []byte(candidatePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session),
		"--upstream", upstream, "--upstream-insecure", "--policy", file, "--namespace", ns, "--record-dir", records)
	p.ready(t)
	ctx := context.Background()
	if _, err := upstreamPod(ctx, ns, "deny-a", session, nil); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "controller-runtime says no to deny-a") {
		t.Fatalf("deny-a: err = %v, want controller-runtime's denial", err)
	}
	for _, name := range []string{"fine-b", "denyall"} {
		if _, err := upstreamPod(ctx, ns, name, session, nil); err != nil {
			t.Fatalf("%s: %v: the webhook decides, and it allows", name, err)
		}
	}
	var compared map[string]string
	eventually(t, "the three comparisons recorded", func(context.Context) (bool, error) {
		compared = map[string]string{}
		for _, v := range policyViews(t, records) {
			for _, c := range v.Comparisons {
				what := "agree"
				if !c.Agree {
					what = c.Disagreement.What + ": webhook " + string(c.Disagreement.WebhookResult) + ", policy " + string(c.Disagreement.PolicyResult) +
						" " + c.Disagreement.PolicyMessage
				}
				compared[v.Request.Name+" "+c.Policy] = what
			}
		}
		return len(compared) >= 3, nil
	})
	want := map[string]string{
		"deny-a ValidatingAdmissionPolicy/no-deny-pods":  "agree",
		"fine-b ValidatingAdmissionPolicy/no-deny-pods":  "agree",
		"denyall ValidatingAdmissionPolicy/no-deny-pods": "decision: webhook allowed, policy denied controller-runtime says no to denyall",
	}
	if fmt.Sprint(compared) != fmt.Sprint(want) {
		t.Errorf("comparisons\n%v\nwant\n%v", compared, want)
	}
	if n := strings.Count(p.stderr.String(), "your webhook and the policy disagree"); n != 1 {
		t.Errorf("%d disagreement log lines, want 1:\n%s", n, p.stderr.String())
	}
	eventually(t, "the comparison metrics", func(context.Context) (bool, error) {
		m := get(t, "http://"+p.health+"/metrics")
		return strings.Contains(m, `hookback_policy_comparisons_total{policy="ValidatingAdmissionPolicy/no-deny-pods",result="agree",webhook="vpod.example.com"} 2`) &&
			strings.Contains(m, `hookback_policy_comparisons_total{policy="ValidatingAdmissionPolicy/no-deny-pods",result="disagree",webhook="vpod.example.com"} 1`), nil
	})
	p.signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("hookback exited %d", code)
	}
	if !strings.Contains(p.stderr.String(), `msg="policy summary" webhook=all policy=all reviews=3 agree=2 disagree=1`) {
		t.Errorf("no exit summary:\n%s", p.stderr.String())
	}
}
