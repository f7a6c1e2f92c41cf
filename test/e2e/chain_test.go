package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/chain"
)

// TestChainView: start --chain around your webhook, with a real
// third-party webhook (controller-runtime's, e2e/crupstream) sorted before
// it, a MutatingAdmissionPolicy that changes the object before any
// webhook, and a webhook sorted after yours that overwrites the label your
// patch sets, which makes the apiserver call your webhook again in a
// reinvocation round. The view names each, in order, with its change, and
// warns about the overwrite; on the local control plane it is matched to
// the apiserver's audit annotations, and what the observers inferred
// agrees with them. A pod outside the session's scope calls no observer.
// The inspector's page of the request, in Chromium, shows the same view:
// the changes before and after yours with their values, and the
// overwrite warning (inspectChain).
func TestChainView(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t)
	other := namespace(t)
	session := sessionFor(t)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-chain": session}}
	pods := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}

	// The policy, before anything else: the apiserver takes a moment to
	// apply a new one.
	policy := chainPolicy(t, session, sel)

	// controller-runtime's webhook server, sorted before yours.
	crURL, crCert := startCRUpstream(t)
	crPEM, err := os.ReadFile(crCert)
	if err != nil {
		t.Fatal(err)
	}
	crConf := "aaa-e2e-cr-" + session
	chainConfiguration(t, crConf, crURL+"/mutate-pods", crPEM, sel, pods, admissionregistrationv1.NeverReinvocationPolicy)

	// A webhook sorted after yours that sets the label yours sets.
	var overwrites atomic.Int32
	ow := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rv review
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&rv); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		overwrites.Add(1)
		resp := map[string]any{"uid": rv.Request.UID, "allowed": true, "patchType": "JSONPatch",
			"patch": []byte(`[{"op":"add","path":"/metadata/labels/team","value":"theirs"}]`)}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": rv.APIVersion, "kind": "AdmissionReview", "response": resp})
	}))
	t.Cleanup(ow.Close)
	owConf := "zz-e2e-overwriter-" + session
	owPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ow.Certificate().Raw})
	chainConfiguration(t, owConf, ow.URL+"/overwrite", owPEM, sel, pods, admissionregistrationv1.NeverReinvocationPolicy)

	// Your webhook: it labels team=mine, and is called again when a later
	// webhook changed the object (IfNeeded).
	var yours atomic.Int32
	up := answerReviews(t, func(_ http.ResponseWriter, _ *http.Request, rv review, resp map[string]any) bool {
		yours.Add(1)
		if rv.Request.Object.Metadata.Labels["team"] != "mine" {
			resp["patchType"] = "JSONPatch"
			resp["patch"] = []byte(`[{"op":"add","path":"/metadata/labels/team","value":"mine"}]`)
		}
		return true
	})
	manifest := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: my-chain
webhooks:
  - name: mine.example.com
    clientConfig:
      service: {namespace: system, name: webhook-service, path: /mutate-chain}
    rules:
      - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
    objectSelector:
      matchLabels: {e2e-chain: "`+session+`"}
    reinvocationPolicy: IfNeeded
    sideEffects: None
    admissionReviewVersions: ["v1"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	records := t.TempDir()
	inspector := "127.0.0.1:" + itoa(freePort(t))
	args := []string{"--session", session, "--webhooks", "none", "--controllers", "none", "--webhook-config", manifest,
		"--upstream", up.URL, "--namespace", ns, "--chain", "--record-dir", records, "--inspector-address", inspector}
	audit := filepath.Join(env.repo, ".cache", "cluster", "audit.log")
	if env.local {
		args = append(args, "--chain-audit-log", audit)
	}
	p := start(t, args...)
	p.ready(t)

	pod, err := env.client.CoreV1().Pods(ns).Create(ctx, chainPod("chain-1", session), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"cr-seen": "yes", "by-policy": "yes", "team": "mine"} {
		if pod.Labels[k] != want {
			t.Errorf("pod label %s=%q, want %q (labels %v)", k, pod.Labels[k], want, pod.Labels)
		}
	}
	if n := yours.Load(); n != 2 {
		t.Errorf("your webhook was called %d times, want 2: round 0 and the reinvocation", n)
	}
	v := chainViewIn(t, records)

	names := map[string]string{}
	for _, st := range v.Steps {
		for _, ch := range st.Changes {
			names[st.Name+" "+ch.Path] = ch.Who()
			if ch.Exact && !agrees(ch) {
				t.Errorf("%s %s: the audit annotations say %s, the observers inferred %v", st.Name, ch.Path, ch.Who(), ch.Inferred)
			}
		}
	}
	crWho := "MutatingWebhookConfiguration " + crConf + " (webhook " + crConf + ".e2e.hookback.dev)"
	owWho := "MutatingWebhookConfiguration " + owConf + " (webhook " + owConf + ".e2e.hookback.dev)"
	expect := map[string]string{
		chain.StepBefore + " /metadata/labels/cr-seen": crWho,
		chain.StepAfter + " /metadata/labels/team":     owWho,
		chain.StepRound + " /metadata/labels/team":     "your webhook mine.example.com",
	}
	if env.local {
		expect[chain.StepPolicies+" /metadata/labels/by-policy"] = "MutatingAdmissionPolicy " + policy
		if !v.Exact {
			t.Errorf("the view was not matched to the audit log %s", audit)
		}
	}
	for k, want := range expect {
		if got := names[k]; !strings.Contains(got, want) || env.local && got != want {
			t.Errorf("%s: by %q, want %q", k, got, want)
		}
	}
	steps := make([]string, 0, len(v.Steps))
	for _, st := range v.Steps {
		steps = append(steps, st.Name)
	}
	if got := strings.Join(steps, ", "); got != "the policies' first round, before your webhook, after your webhook, reinvocation round, the apiserver after mutating admission" {
		t.Errorf("steps: %s", got)
	}
	var warned bool
	for _, w := range v.Warnings {
		warned = warned || w.Kind == chain.WarnOverwritten && w.Path == "/metadata/labels/team" && w.Round == 0 && strings.Contains(w.Message, owConf)
	}
	if !warned {
		t.Errorf("no overwritten warning naming %s for /metadata/labels/team: %+v", owConf, v.Warnings)
	}
	if len(v.Yours) != 2 || v.Yours[1].Round != 1 {
		t.Errorf("your calls %+v: want rounds 0 and 1", v.Yours)
	}
	var final corev1.Pod
	if err := json.Unmarshal(v.Final, &final); err != nil || final.Labels["team"] != "mine" {
		t.Errorf("the validators' object has labels %v (%v): want team=mine", final.Labels, err)
	}
	for _, st := range v.Steps {
		for _, ch := range st.Changes {
			t.Logf("%s: %s %s by %s", st.Name, ch.Op, ch.Path, ch.Who())
		}
	}

	// Outside the scope: no observer is called (the counters say so),
	// though the other webhooks are.
	before := overwrites.Load()
	if _, err := env.client.CoreV1().Pods(other).Create(ctx, chainPod("chain-out", session), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if overwrites.Load() == before {
		t.Fatal("the overwriter was not called for the pod outside the scope: the check below would prove nothing")
	}
	metrics := get(t, "http://"+p.health+"/metrics")
	for _, obs := range []string{"chain-first", "chain-last", "chain-validating"} {
		want := `hookback_admission_requests_total{decision="allowed",webhook="` + obs + `"} `
		count := ""
		for line := range strings.SplitSeq(metrics, "\n") {
			if rest, ok := strings.CutPrefix(line, want); ok {
				count = rest
			}
		}
		wantCount := "1"
		if obs == "chain-last" {
			wantCount = "2" // round 0 and the reinvocation
		}
		if count != wantCount {
			t.Errorf("%s was called %q times, want %s: the pod in scope only", obs, count, wantCount)
		}
	}

	// The same view on the inspector's page, in Chromium (last: without a
	// Chromium the test is skipped from here).
	inspectChain(t, "http://"+inspector, ns, "chain-1", crWho, owWho)
}

// agrees: what the audit annotations name is among what the rules inferred.
func agrees(ch chain.Attributed) bool {
	for _, b := range ch.By {
		found := false
		for _, i := range ch.Inferred {
			found = found || i == b
		}
		if !found {
			return false
		}
	}
	return true
}

func chainPod(name, session string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"e2e-chain": session, "app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{whAppContainer()}, TerminationGracePeriodSeconds: ptr.To[int64](0)}}
}

// chainConfiguration registers a mutating webhook of the test's own (not
// hookback's), removed at the end.
func chainConfiguration(t *testing.T, name, url string, ca []byte, sel *metav1.LabelSelector, rules []admissionregistrationv1.RuleWithOperations, reinvoke admissionregistrationv1.ReinvocationPolicyType) {
	t.Helper()
	conf := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: name + ".e2e.hookback.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules: rules, ObjectSelector: sel, ReinvocationPolicy: &reinvoke, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](5)}}}
	ctx := context.Background()
	if _, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, conf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// chainPolicy creates a MutatingAdmissionPolicy (and its binding) that
// labels the test's pods by-policy=yes, and waits until the apiserver
// applies it.
func chainPolicy(t *testing.T, session string, sel *metav1.LabelSelector) string {
	t.Helper()
	ctx := context.Background()
	name := "e2e-chain-" + session
	a := env.client.AdmissionregistrationV1()
	_, err := a.MutatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ObjectSelector: sel, ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"by-policy": "yes"}}}`}}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.MutatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	_, err = a.MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = a.MutatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	ns := namespace(t)
	eventually(t, "the MutatingAdmissionPolicy to apply", func(ctx context.Context) (bool, error) {
		pod, err := env.client.CoreV1().Pods(ns).Create(ctx, chainPod("probe", session), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && pod.Labels["by-policy"] == "yes", err
	})
	return name
}

// chainViewIn waits for the one chain view under dir's chain/.
func chainViewIn(t *testing.T, dir string) chain.View {
	t.Helper()
	var v chain.View
	eventually(t, "the chain view in "+dir+"/chain", func(context.Context) (bool, error) {
		files, err := filepath.Glob(filepath.Join(dir, "chain", "*.json"))
		if err != nil || len(files) == 0 {
			return false, err
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			return false, err
		}
		var doc struct {
			Chain chain.View `json:"chain"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return false, err
		}
		v = doc.Chain
		return true, nil
	})
	return v
}
