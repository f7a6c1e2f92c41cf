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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/chain"
)

// TestChainAnotherSession: two developers debug the same webhook on one
// cluster, each with a hookback session registered from the same manifests
// and their own build behind it (issue 50, item 3). The other session's
// configuration sorts before yours, so the apiserver calls it first; a
// webhook of the test's own, sorted after both, overwrites the label your
// patch sets. Your --chain view takes your own configuration for yours, not
// the first one serving the same path: the other session's is one more
// configuration before yours, with its change attributed to it, the
// overwrite is the overwriter's alone, and no warning names your own
// configuration as what undid your patch.
func TestChainAnotherSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t)
	base := sessionFor(t)
	// Same manifests, so "my-chain-a-…" (theirs) sorts before "my-chain-b-…".
	mine, theirs := "b-"+base, "a-"+base
	myConf, theirConf := "my-chain-"+mine, "my-chain-"+theirs
	owConf := "zz-e2e-overwriter-" + base
	if !(theirConf < myConf && myConf < owConf) {
		t.Fatalf("names sort %s, %s, %s: want theirs, yours, the overwriter", theirConf, myConf, owConf)
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-chain": base}}
	pods := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	owURL, owPEM, overwrites := teamLabeller(t, "overwritten")
	chainConfiguration(t, owConf, owURL, owPEM, sel, pods, admissionregistrationv1.NeverReinvocationPolicy)

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
      matchLabels: {e2e-chain: "`+base+`"}
    sideEffects: None
    admissionReviewVersions: ["v1"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	// Each developer's own build: each labels the pod its own way.
	var myCalls, theirCalls atomic.Int32
	myUp := answerReviews(t, labelTeam(&myCalls, "mine"))
	theirUp := answerReviews(t, labelTeam(&theirCalls, "theirs"))
	common := []string{"--webhooks", "none", "--controllers", "none", "--webhook-config", manifest, "--namespace", ns}
	other := start(t, append([]string{"--session", theirs, "--upstream", theirUp.URL}, common...)...)
	records := t.TempDir()
	args := append([]string{"--session", mine, "--upstream", myUp.URL, "--chain", "--record-dir", records}, common...)
	if env.local {
		args = append(args, "--chain-audit-log", filepath.Join(env.repo, ".cache", "cluster", "audit.log"))
	}
	p := start(t, args...)
	other.ready(t)
	p.ready(t)

	pod, err := env.client.CoreV1().Pods(ns).Create(ctx, chainPod("two-sessions", base), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels["team"] != "overwritten" || myCalls.Load() != 1 || theirCalls.Load() != 1 || overwrites.Load() != 1 {
		t.Fatalf("pod labels %v; calls: yours %d, theirs %d, the overwriter %d: want team=overwritten and one call each",
			pod.Labels, myCalls.Load(), theirCalls.Load(), overwrites.Load())
	}
	v := chainViewIn(t, records)
	if env.local && !v.Exact {
		t.Errorf("the view was not matched to the audit log: it looks for your configuration's patch annotation")
	}
	for _, y := range v.Yours {
		if y.Configuration != myConf {
			t.Errorf("your call in round %d is taken as configuration %q's, want %q", y.Round, y.Configuration, myConf)
		}
	}
	who := map[string]string{}
	for _, st := range v.Steps {
		for _, ch := range st.Changes {
			who[st.Name+" "+ch.Path] = ch.Who()
			t.Logf("%s: %s %s by %s", st.Name, ch.Op, ch.Path, ch.Who())
			if ch.Exact && !agrees(ch) {
				t.Errorf("%s %s: the audit annotations say %s, the observers inferred %v", st.Name, ch.Path, ch.Who(), ch.Inferred)
			}
		}
	}
	for k, want := range map[string]string{
		chain.StepBefore + " /metadata/labels/team": "MutatingWebhookConfiguration " + theirConf + " (webhook mine.example.com)",
		chain.StepAfter + " /metadata/labels/team":  "MutatingWebhookConfiguration " + owConf + " (webhook " + owConf + ".e2e.hookback.dev)",
	} {
		if got := who[k]; !strings.Contains(got, want) || strings.Contains(got, myConf) || env.local && got != want {
			t.Errorf("%s: by %q, want %q", k, got, want)
		}
	}
	var overwritten bool
	for _, w := range v.Warnings {
		t.Logf("warning %s %s: %s", w.Kind, w.Path, w.Message)
		if strings.Contains(w.Message, myConf) {
			t.Errorf("warning %s blames your own configuration %s: %s", w.Kind, myConf, w.Message)
		}
		overwritten = overwritten || w.Kind == chain.WarnOverwritten && w.Path == "/metadata/labels/team" && strings.Contains(w.Message, owConf)
	}
	if !overwritten {
		t.Errorf("no overwritten warning naming %s for /metadata/labels/team: %+v", owConf, v.Warnings)
	}
}

// labelTeam is an upstream's answer: count the call, label team=value.
func labelTeam(calls *atomic.Int32, value string) func(http.ResponseWriter, *http.Request, review, map[string]any) bool {
	return func(_ http.ResponseWriter, _ *http.Request, _ review, resp map[string]any) bool {
		calls.Add(1)
		resp["patchType"] = "JSONPatch"
		resp["patch"] = []byte(`[{"op":"add","path":"/metadata/labels/team","value":"` + value + `"}]`)
		return true
	}
}

// teamLabeller is a webhook of the test's own on loopback TLS that labels
// team=value: its URL, its certificate for the caBundle, and its calls.
func teamLabeller(t *testing.T, value string) (string, []byte, *atomic.Int32) {
	t.Helper()
	calls := new(atomic.Int32)
	answer := labelTeam(calls, value)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rv review
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&rv); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := map[string]any{"uid": rv.Request.UID, "allowed": true}
		answer(w, r, rv, resp)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": rv.APIVersion, "kind": "AdmissionReview", "response": resp})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/label", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), calls
}
