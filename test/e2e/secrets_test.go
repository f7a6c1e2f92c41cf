package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSecretsNeverLeave sends a Secret through your own webhook, created
// and then changed with kubectl apply (whose annotation keeps a copy of the
// data), with recording on and --log-level debug: no log line, no recorded
// file and no Event holds its data.
func TestSecretsNeverLeave(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	up := testUpstream(t, false)
	session := sessionFor(t)
	dir := t.TempDir()
	manifests := filepath.Join(t.TempDir(), "secrets-webhook.yaml")
	if err := os.WriteFile(manifests, []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: my-secrets
webhooks:
  - name: secrets.example.com
    clientConfig:
      service: {namespace: system, name: webhook-service, path: /validate}
    rules:
      - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["secrets"]}
    objectSelector:
      matchLabels: {e2e-upstream: "`+session+`"}
    failurePolicy: Fail
    sideEffects: None
    admissionReviewVersions: ["v1"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session, "--record-dir", dir,
		"--log-level", "debug", "--webhooks", "pod-lifespan", "--controllers", "none",
		"--webhook-config", manifests, "--upstream", up.URL)
	p.ready(t)

	const first, second = "hunter2-first-e2e", "hunter3-second-e2e"
	secret := func(value string) []byte {
		return []byte(fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: db, namespace: %s, labels: {e2e-upstream: %q}}
stringData: {password: %q}
data: {token: %s}
`, ns, session, value, base64.StdEncoding.EncodeToString([]byte(value+"-token"))))
	}
	kubectl, err := ctlKubectlPath()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{first, second} {
		cmd := exec.Command(kubectl, "--kubeconfig", env.kubeconfig, "apply", "-f", "-")
		cmd.Stdin = bytes.NewReader(secret(v))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
	}
	var recorded []string
	eventually(t, "a CREATE and an UPDATE of the Secret recorded", func(context.Context) (bool, error) {
		recorded, _ = filepath.Glob(filepath.Join(dir, "*_"+ns+"_db_*.json"))
		var create, update bool
		for _, f := range recorded {
			create = create || strings.Contains(f, "_create_")
			update = update || strings.Contains(f, "_update_")
		}
		return create && update, nil
	})
	forbidden := []string{}
	for _, v := range []string{first, second} {
		for _, s := range []string{v, v + "-token"} {
			forbidden = append(forbidden, s, base64.StdEncoding.EncodeToString([]byte(s)))
		}
	}
	leaks := func(what, text string) {
		t.Helper()
		for _, f := range forbidden {
			if strings.Contains(text, f) {
				t.Errorf("%s holds the Secret's data (%q)", what, f)
			}
		}
	}
	for _, f := range recorded {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "last-applied-configuration") {
			t.Errorf("%s: kubectl apply's annotation is not in the review, the test proves nothing about it", f)
		}
		leaks(f, string(b))
	}
	if !strings.Contains(p.stderr.String(), "level=DEBUG") {
		t.Error("no debug line logged: --log-level debug did not take")
	}
	leaks("the log", p.stdout.String()+p.stderr.String())
	evs, err := env.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		leaks("Event "+e.Name, fmt.Sprint(e.Message, e.Reason, e.Action, e.Annotations))
	}
}
