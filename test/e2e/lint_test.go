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
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hookback/hookback/lint"
)

// The lint tests register webhook configurations of their own, each
// scoped to the test's namespace (namespaceSelector on its immutable
// name), so that nothing else in the cluster passes through them. They
// are not labelled as hookback's: a hookback starting beside the test
// would take them for a crashed session's and delete them.
var lintLabels = map[string]string{"app.kubernetes.io/part-of": "hookback-e2e", "hookback-e2e/test": "lint"}

func onlyNamespace(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{ns}}}}
}

func rulesFor(group, resource string) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: []string{resource}}}}
}

// lintCluster runs `hookback lint --cluster -o json` and returns the
// findings about the configuration named config.
func lintCluster(t *testing.T, config string, args ...string) []lint.Finding {
	t.Helper()
	var fs []lint.Finding
	for _, f := range lintFindings(t, append([]string{"lint", "--cluster", "--fail-on", "none", "-o", "json"}, args...)...) {
		if strings.HasSuffix(f.Object, "/"+config) || strings.Contains(f.Message, config) {
			fs = append(fs, f)
		}
	}
	return fs
}

// lintFindings runs hookback with args (lint, -o json) and returns its
// findings.
func lintFindings(t *testing.T, args ...string) []lint.Finding {
	t.Helper()
	out, errOut, code := hookback(t, env.kubeconfig, args...)
	if code != 0 {
		t.Fatalf("hookback %v: exit %d\n%s", args, code, errOut)
	}
	var rep lint.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("lint's JSON: %v\n%s", err, out)
	}
	return rep.Findings
}

func findingOf(fs []lint.Finding, rule string) *lint.Finding {
	for i := range fs {
		if fs[i].Rule == rule {
			return &fs[i]
		}
	}
	return nil
}

func patchFix(t *testing.T, res string, name string, f *lint.Finding) {
	t.Helper()
	p, err := json.Marshal(f.Fix)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	reg := env.client.AdmissionregistrationV1()
	if res == "validating" {
		_, err = reg.ValidatingWebhookConfigurations().Patch(ctx, name, types.JSONPatchType, p, metav1.PatchOptions{})
	} else {
		_, err = reg.MutatingWebhookConfigurations().Patch(ctx, name, types.JSONPatchType, p, metav1.PatchOptions{})
	}
	if err != nil {
		t.Fatalf("apply lint's fix %s to %s: %v", p, name, err)
	}
}

// TestLintSelfDeadlock: lint --cluster predicts that a failurePolicy Fail
// pod webhook served from its own namespace keeps its own pods from being
// created; on the real apiserver the ReplicaSet controller then cannot
// create the Deployment's pod (the apiserver calls the webhook, which is
// not there); lint's patch applied, the pod is created.
func TestLintSelfDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaceLabelled(t, nil)
	name := "e2e-lint-deadlock-" + ns
	labels := map[string]string{"app": "my-webhook"}
	if _, err := env.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "my-webhook"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 443}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	timeout := int32(2)
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lintLabels},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mpod.e2e.hookback.dev", FailurePolicy: &fail, SideEffects: &none,
			TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: onlyNamespace(ns), Rules: rulesFor("", "pods"),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "my-webhook"}}}}}
	if _, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	one := int32(1)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "my-webhook"}, Spec: appsv1.DeploymentSpec{Replicas: &one,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "webhook", Image: "registry.example/webhook:1"}}}}}}
	if _, err := env.client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	f := findingOf(lintCluster(t, name), "self-deadlock")
	if f == nil || f.Severity != lint.Error || !strings.Contains(f.Message, "CREATE pods in "+ns) {
		t.Fatalf("lint --cluster did not predict the self-deadlock: %+v", f)
	}
	// The prediction, on the apiserver: the ReplicaSet controller's create
	// is sent to the webhook and fails.
	eventually(t, "the ReplicaSet's FailedCreate naming the webhook", func(ctx context.Context) (bool, error) {
		evs, err := env.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if strings.Contains(e.Message, `failed calling webhook "mpod.e2e.hookback.dev"`) {
				return true, nil
			}
		}
		return false, nil
	})
	if pods := podCount(t, ns); pods != 0 {
		t.Fatalf("%d pods created through a webhook that is not there", pods)
	}
	patchFix(t, "mutating", name, f)
	if fs := lintCluster(t, name); findingOf(fs, "self-deadlock") != nil {
		t.Errorf("after lint's fix, still: %+v", findingOf(fs, "self-deadlock"))
	}
	eventually(t, "the Deployment's pod, once the fix is applied", func(context.Context) (bool, error) {
		return podCount(t, ns) == 1, nil
	})
}

func podCount(t *testing.T, ns string) int {
	t.Helper()
	pods, err := env.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(pods.Items)
}

// TestLintNoReadyEndpoints: a Fail webhook whose Service has no endpoint
// rejects every request it matches now; lint --cluster says so, and its
// fix (failurePolicy Ignore) lets the request through, the webhook still
// called (the apiserver counts the call it failed open).
func TestLintNoReadyEndpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaceLabelled(t, nil)
	name := "e2e-lint-endpoints-" + ns
	if _, err := env.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "nobody"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "nobody"}, Ports: []corev1.ServicePort{{Port: 443}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	timeout := int32(2)
	hook := "vcm.e2e.hookback.dev"
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lintLabels},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: hook, FailurePolicy: &fail, SideEffects: &none,
			TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: onlyNamespace(ns), Rules: rulesFor("", "configmaps"),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "nobody"}}}}}
	if _, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	f := findingOf(lintCluster(t, name), "no-ready-endpoints")
	if f == nil || f.Severity != lint.Error {
		t.Fatalf("lint --cluster did not find the Service without endpoints: %+v", f)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	// The configuration takes effect in the apiserver's informer, shortly.
	eventually(t, "the ConfigMap rejected by the webhook without endpoints", func(ctx context.Context) (bool, error) {
		_, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), `failed calling webhook "`+hook+`"`), nil
	})
	before := failOpen(t, hook)
	patchFix(t, "validating", name, f)
	eventually(t, "the ConfigMap admitted once the fix is applied", func(ctx context.Context) (bool, error) {
		_, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, nil
	})
	if after := failOpen(t, hook); after <= before {
		t.Errorf("apiserver_admission_webhook_fail_open_count for %s: %v, then %v: the webhook was not called", hook, before, after)
	}
}

// failOpen is the apiserver's count of calls to hook that failed open.
func failOpen(t *testing.T, hook string) float64 {
	t.Helper()
	b, err := env.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "apiserver_admission_webhook_fail_open_count{") && strings.Contains(l, `name="`+hook+`"`) {
			var v float64
			if err := json.Unmarshal([]byte(l[strings.LastIndex(l, " ")+1:]), &v); err == nil {
				n += v
			}
		}
	}
	return n
}

// TestLintChainBudget: three mutating webhooks that never answer, 2 s
// each under failurePolicy Ignore, against a 5 s request deadline (a
// client's timeout parameter): lint predicts the chain does not fit, and
// the create really fails, Ignore or not; with the timeouts lowered to
// 1 s as lint advises, lint is quiet and the create is admitted, after the
// apiserver called all three.
func TestLintChainBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaceLabelled(t, nil)
	var calls atomic.Int64
	done := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select { // never answers in time: the apiserver gives up first
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	bundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	var names []string
	var cfgs []*admissionregistrationv1.MutatingWebhookConfiguration
	for _, i := range []string{"1", "2", "3"} {
		name := "e2e-lint-chain-" + ns + "-" + i
		names = append(names, name)
		timeout, url := int32(2), srv.URL+"/hang"
		cfgs = append(cfgs, &admissionregistrationv1.MutatingWebhookConfiguration{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lintLabels},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: name + ".e2e.hookback.dev", FailurePolicy: &ignore, SideEffects: &none,
				TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: onlyNamespace(ns), Rules: rulesFor("", "configmaps"),
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: bundle}}}})
	}
	// The chain is judged on the configurations as shipped (a file): on
	// the cluster, other tests' webhooks come and go in the same chain.
	budget := func() *lint.Finding {
		file := filepath.Join(t.TempDir(), "chain.json")
		b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": cfgs})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range lintFindings(t, "lint", file, "--deadline", "5s", "--fail-on", "none", "-o", "json") {
			if f.Rule == "chain-budget" {
				return &f
			}
		}
		return nil
	}
	if f := budget(); f == nil || f.Severity != lint.Error || !strings.Contains(f.Message, "CREATE configmaps") || !strings.Contains(f.Message, names[2]) {
		t.Fatalf("lint --deadline 5s did not predict the chain past the deadline: %+v", f)
	}
	for _, cfg := range cfgs {
		if _, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), cfg.Name, metav1.DeleteOptions{})
		})
	}
	createWithin := func(d time.Duration) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
		return env.client.CoreV1().RESTClient().Post().Namespace(ns).Resource("configmaps").Timeout(d).Body(cm).Do(ctx).Error()
	}
	// The configurations reach the apiserver's informer shortly: until
	// all three are there, a create may still fit in 5 s.
	eventually(t, "a create within 5 s failing on its deadline, Ignore or not", func(context.Context) (bool, error) {
		err := createWithin(5 * time.Second)
		return err != nil && (strings.Contains(err.Error(), "deadline") || strings.Contains(err.Error(), "Timeout")) && calls.Load() > 0, nil
	})
	for _, cfg := range cfgs {
		one := int32(1)
		cfg.Webhooks[0].TimeoutSeconds = &one
		p := []byte(`[{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":1}]`)
		if _, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, cfg.Name, types.JSONPatchType, p, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if f := budget(); f != nil {
		t.Errorf("after the timeouts were lowered, still: %s", f.Message)
	}
	eventually(t, "a create admitted within 5 s through the three 1 s webhooks", func(context.Context) (bool, error) {
		before := calls.Load()
		err := createWithin(5 * time.Second)
		return err == nil && calls.Load()-before >= 3, nil
	})
}
