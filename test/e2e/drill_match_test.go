package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDrillMatchPolicyExact: match-policy-exact on the apiserver. A Fail
// webhook for autoscaling/v2 HorizontalPodAutoscalers with matchPolicy
// Exact, drilled with the fault error and two objects of drill --object:
// the same HPA in autoscaling/v2 (judged: it fails) and in autoscaling/v1,
// which bypasses the webhook (admitted). With lint's fix (Equivalent) the
// apiserver converts the v1 request and sends it too: it fails as well.
func TestDrillMatchPolicyExact(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	manifest := []byte(drillWebhook("match-exact", `"sideEffects": "None", "matchPolicy": "Exact",
  "rules": [{"apiGroups": ["autoscaling"], "apiVersions": ["v2"], "operations": ["CREATE"], "resources": ["horizontalpodautoscalers"]}]`, ns))
	f := lintFile(t, manifest, "match-policy-exact")
	if f == nil || len(f.Fix) == 0 {
		t.Fatalf("lint finds no match-policy-exact with a fix in %s: %+v", manifest, f)
	}
	dir := t.TempDir()
	for version, spec := range map[string]string{
		"v1": `{"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 3}`,
		"v2": `{"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 3}`,
	} {
		hpa := `{"apiVersion": "autoscaling/` + version + `", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web-` + version + `", "namespace": "` + ns + `"}, "spec": ` + spec + `}`
		if err := os.WriteFile(filepath.Join(dir, "hpa-"+version+".json"), []byte(hpa), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v1, v2 := "HorizontalPodAutoscaler create (autoscaling/v1) "+ns, "HorizontalPodAutoscaler create (autoscaling/v2) "+ns
	got, errOut := drill(t, manifest, []string{ns}, "error", "--object", dir)
	if got[v2] != "failed" || got[v1] != "admitted" {
		t.Fatalf("matchPolicy Exact: v2 %q, v1 %q; want v2 failed (judged, fault error, Fail) and v1 admitted (never sent)\n%s", got[v2], got[v1], errOut)
	}
	b := fixOf(t, f)
	manifest = applyFix(t, manifest, b)
	if g := lintFile(t, manifest, "match-policy-exact"); g != nil {
		t.Errorf("after the fix, lint still finds match-policy-exact: %s", g.Message)
	}
	got, errOut = drill(t, manifest, []string{ns}, "error", "--object", dir)
	if got[v2] != "failed" || got[v1] != "failed" {
		t.Fatalf("after the fix %s: v2 %q, v1 %q; want both failed: the v1 request converted and sent\n%s", b, got[v2], got[v1], errOut)
	}
	if !strings.Contains(errOut, "namespace="+ns) {
		t.Errorf("hookback's log shows no admission in %s\n%s", ns, errOut)
	}
}

// TestDrillReviewVersions: review-versions' error on the apiserver. A
// configuration without admissionReviewVersions is refused by
// admissionregistration.k8s.io/v1 (it is required): the drill cannot
// register it and says so, naming the field; with lint's fix (v1) it
// registers and its dry-run pod create is judged and admitted (Ignore).
func TestDrillReviewVersions(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	manifest := []byte(strings.Replace(drillWebhook("review-versions", `"sideEffects": "None", "failurePolicy": "Ignore", "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]`, ns),
		`"admissionReviewVersions": ["v1"], `, "", 1))
	f := lintFile(t, manifest, "review-versions")
	if f == nil || len(f.Fix) == 0 {
		t.Fatalf("lint finds no review-versions with a fix in %s: %+v", manifest, f)
	}
	path := filepath.Join(t.TempDir(), "webhook.json")
	if err := os.WriteFile(path, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := hookback(t, env.kubeconfig, drillArgs(t, path, []string{ns}, "slow=10ms")...)
	if code == 0 || !strings.Contains(out+errOut, "admissionReviewVersions") {
		t.Fatalf("drill without admissionReviewVersions: exit %d, want the configuration refused naming admissionReviewVersions\n%s\n%s", code, out, errOut)
	}
	manifest = applyFix(t, manifest, fixOf(t, f))
	got, errOut := drill(t, manifest, []string{ns}, "slow=10ms")
	if got["pod create "+ns] != "admitted" || !strings.Contains(errOut, "namespace="+ns) {
		t.Fatalf("after the fix: pod create in %s %q, want admitted through the webhook\n%s", ns, got["pod create "+ns], errOut)
	}
}
