package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// v2WebhookManifests is a directory of manifests for e2e/crmanager's
// Widget with a validating webhook registered for v2 (crmanager's v2
// validator: count at most 10) and the CRD with its conversion webhook,
// both pointing at the manager's Service.
func v2WebhookManifests(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	crd, err := os.ReadFile(filepath.Join("crmanager", "config", "crd", "bases", "e2e.hookback.dev_widgets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd = append(crd, []byte(`  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service: {namespace: crmanager-system, name: webhook-service, path: /convert}
      conversionReviewVersions: [v1]
`)...)
	vwc := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: widgets-v2
webhooks:
- name: vwidget-v2.kb.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  clientConfig:
    service: {namespace: crmanager-system, name: webhook-service, path: /validate-e2e-hookback-dev-v2-widget}
  rules:
  - apiGroups: [e2e.hookback.dev]
    apiVersions: [v2]
    operations: [CREATE, UPDATE]
    resources: [widgets]
`
	for name, body := range map[string]string{"crd.yaml": string(crd), "webhook.yaml": vwc} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestAuditStorageVersion: the kubebuilder multiversion tutorial's finding
// (a v1 CronJob whose schedule "@hourly" cannot be converted to v2 made
// `hookback audit` report both v2 webhooks as one error row each, exit 2),
// rebuilt on e2e/crmanager: widgets stored in v1, a validating webhook
// registered for v2, and a conversion that refuses one widget's color
// (--refuse-v2-color). The audit lists in the storage version, converts
// each widget to v2 through the manager's conversion webhook, reviews
// every widget that converts (the manager's v2 validator allows one and
// denies the other) and reports the one that does not convert as a
// finding of its own: exit 1, not 2.
func TestAuditStorageVersion(t *testing.T) {
	requireLocal(t, "it installs a cluster-scoped CRD of its own when missing")
	dyn := dynamicClient(t)
	ensureWidgetCRD(t, dyn)
	ns := namespace(t)
	ctx := context.Background()
	for name, spec := range map[string]map[string]any{
		"fine":     {"size": int64(2), "color": "red"},
		"too-big":  {"size": int64(20)},
		"infrared": {"size": int64(1), "color": "infrared"},
	} {
		if _, err := dyn.Resource(widgetsV1).Namespace(ns).Create(ctx, widget("v1", ns, name, spec), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create widget %s: %v", name, err)
		}
	}
	mgr := startCRManager(t, "--refuse-v2-color", "infrared")
	args := []string{"audit", "--session", sessionFor(t), "--webhooks", "none", "--webhook-config", v2WebhookManifests(t),
		"--upstream", mgr.URL, "--upstream-ca", mgr.Cert, "--namespace", ns, "-o", "json"}
	out, errOut, code := hookback(t, env.kubeconfig, args...)
	var rows []roundTripRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("audit -o json (exit %d): %v\n%s\nstderr:\n%s", code, err, out, errOut)
	}
	if code != 1 {
		t.Fatalf("audit exited %d, want 1 (findings, no error)\n%s\nstderr:\n%s", code, out, errOut)
	}
	got := map[string]roundTripRow{}
	for _, r := range rows {
		if r.Webhook == "vwidget-v2.kb.io" {
			got[r.Name] = r
		}
	}
	want := map[string]string{"fine": "allowed", "too-big": "denied", "infrared": "unconvertible"}
	if len(got) != len(want) {
		t.Fatalf("rows of the v2 webhook %+v, want one per widget: %v\nstderr:\n%s", got, want, errOut)
	}
	for name, res := range want {
		r := got[name]
		if r.Result != res || r.Resource != "widgets.e2e.hookback.dev" || r.Operation != "CREATE" {
			t.Errorf("%s: %+v, want %s on a CREATE of widgets.e2e.hookback.dev", name, r, res)
		}
	}
	if m := got["too-big"].Message; !strings.Contains(m, "must be at most 10 (crmanager's v2 validator)") {
		t.Errorf("too-big: %q, want the v2 validator's message: the widget reached it converted to v2", m)
	}
	if m := got["infrared"].Message; !strings.Contains(m, "stored in v1, it cannot be converted to v2") || !strings.Contains(m, `v2 has no color "infrared"`) {
		t.Errorf("infrared: %q, want the conversion webhook's refusal", m)
	}
	if !strings.Contains(errOut, "1 objects that cannot be converted to a webhook's version") {
		t.Errorf("summary:\n%s\nwant the unconvertible widget counted", errOut)
	}
}
