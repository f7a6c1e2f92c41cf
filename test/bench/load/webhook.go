package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// startSession runs `hookback start` with the no-op webhook as the user's:
// its configuration (a Service, as written for the cluster) rewritten to
// point at hookback, forwarded to url, failurePolicy Fail kept, scoped to
// ns. It returns the session's health address (its /metrics) once ready.
func startSession(ctx context.Context, c config, dir, ns, url string) (health string, stop func(), err error) {
	manifest := filepath.Join(dir, "noop-webhook.yaml")
	doc := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: bench-load-noop}
webhooks:
- name: %s
  clientConfig: {service: {name: noop, namespace: %s, path: /validate}}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  failurePolicy: Fail
  sideEffects: None
  timeoutSeconds: 5
  admissionReviewVersions: [v1]
`, webhookName, ns)
	if err := os.WriteFile(manifest, []byte(doc), 0o600); err != nil {
		return "", nil, err
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	hp, err := freePort()
	if err != nil {
		return "", nil, err
	}
	health = "127.0.0.1:" + strconv.Itoa(hp)
	cmd := exec.Command(c.binary, "start", "--kubeconfig", c.kubeconfig, "--session", "bench-load-"+strconv.Itoa(os.Getpid()),
		"--port", strconv.Itoa(port), "--health-address", health, "--state-dir", filepath.Join(dir, "state"), "--inspector-address", "",
		"--webhooks", "none", "--controllers", "none", "--webhook-config", manifest, "--upstream", url, "--upstream-insecure",
		"--keep-failure-policy", "-n", ns, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	if err := waitReady(ctx, "http://"+health+"/readyz", exited); err != nil {
		stop()
		return "", nil, err
	}
	return health, stop, nil
}

// waitReady polls readyz until it answers 200, or the session exits, or a
// minute passes.
func waitReady(ctx context.Context, readyz string, exited <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("hookback start exited before it was ready: %v", err)
		case <-ctx.Done():
			return errors.New("hookback start not ready within a minute")
		case <-tick.C:
		}
		if resp, err := client.Get(readyz); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func register(ctx context.Context, cs kubernetes.Interface, ns, url string, caBundle []byte) (string, error) {
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	timeout := int32(5)
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-load-"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: webhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			FailurePolicy:     &fail, SideEffects: &none, TimeoutSeconds: &timeout,
			AdmissionReviewVersions: []string{"v1"}}}}
	got, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("register the no-op webhook: %w", err)
	}
	return got.Name, nil
}

// waitCalled makes dry-run creates until the apiserver calls the webhook.
func waitCalled(ctx context.Context, cs kubernetes.Interface, ns string, calls *atomic.Int64) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}}
		_, _ = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if calls.Load() > 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the apiserver did not call the no-op webhook within 30 s")
}
