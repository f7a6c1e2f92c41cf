package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/hookback/hookback/lint"
)

// TestLintSlowWebhook: slow-webhook on the apiserver. A Fail webhook with
// a 1 s timeout whose server answers in 0.85 s: every call is admitted,
// and lint --cluster reads from the apiserver's own histogram
// (apiserver_admission_webhook_admission_duration_seconds) that its p99
// nears the timeout; a little more latency (1.2 s) and the request fails,
// as the rule predicts. The rule's fix is advice (make it faster): with
// the server answering at once the same request is admitted again. The
// finding stays: the histogram counts since the apiserver started.
func TestLintSlowWebhook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaceLabelled(t, nil)
	var delay atomic.Int64
	delay.Store(int64(850 * time.Millisecond))
	srv := answerReviewsTLS(t, func(_ http.ResponseWriter, r *http.Request, rv review, _ map[string]any) bool {
		d := time.Duration(delay.Load())
		if strings.HasPrefix(rv.Request.Object.Metadata.Name, "slower-") {
			d += 350 * time.Millisecond
		}
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
		return true
	})
	// A name of its own: the apiserver's histogram is by webhook name.
	name, hook := "e2e-lint-slow-"+ns, "slow-"+rand.String(6)+".e2e.hookback.dev"
	fail, none, timeout := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone, int32(1)
	url := srv.URL + "/validate"
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lintLabels},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: hook, FailurePolicy: &fail, SideEffects: &none,
			TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: onlyNamespace(ns), Rules: rulesFor("", "configmaps"),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: servedCA(srv)}}}}
	if _, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	create := func(ctx context.Context, cm string) error {
		_, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	// The configuration reaches the apiserver's informer shortly; then
	// each call takes 0.85 s and is admitted.
	eventually(t, "a ConfigMap admitted through the slow webhook", func(ctx context.Context) (bool, error) {
		start := time.Now()
		err := create(ctx, "cm-0")
		return err == nil && time.Since(start) > 800*time.Millisecond, err
	})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- create(ctx, fmt.Sprintf("cm-%d", i+1))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a call of 0.85 s against a 1 s timeout: %v, want admitted", err)
		}
	}
	f := findingOf(lintCluster(t, name), "slow-webhook")
	if f == nil || f.Severity != lint.Warning || !strings.Contains(f.Message, "timeout of 1s") {
		t.Fatalf("lint --cluster did not find the webhook's p99 near its timeout: %+v", f)
	}
	// What the rule predicts: a little more latency and requests fail.
	if err := create(ctx, "slower-1"); err == nil || !strings.Contains(err.Error(), hook) {
		t.Fatalf("a call of 1.2 s against a 1 s timeout: %v, want the request failed calling %s", err, hook)
	}
	// The fix: a faster webhook.
	delay.Store(int64(10 * time.Millisecond))
	if err := create(ctx, "slower-2"); err != nil {
		t.Errorf("the webhook made faster: %v, want admitted", err)
	}
}
