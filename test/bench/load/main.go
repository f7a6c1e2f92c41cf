// Command load measures `hookback load` itself: that the generator is not
// the bottleneck. It serves a no-op validating webhook over loopback HTTPS
// (HTTP/2, as the apiserver's client prefers), registers it for ConfigMap
// creates in a namespace of its own, runs the hookback binary's load
// command at a fixed rate or a ramp against the cluster, and prints, per
// step, the rate offered and achieved and the end-to-end percentiles
// beside the apiserver's own histogram of the calls to the webhook
// (apiserver_admission_webhook_admission_duration_seconds, read by load
// itself) and the webhook's count of the calls it answered; then the
// generator's CPU per request (the load process's user+system time, from
// its rusage, over the requests it sent). It prints Markdown
// (docs/performance.md, "The load generator").
//
//	hack/bench-load [-rate 250..1000] [-steps 4] [-step 5s]
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hookback/hookback/bench/internal/loopcert"
	"github.com/hookback/hookback/load"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "the cluster's kubeconfig")
	binary := flag.String("hookback", "hookback", "the hookback binary")
	rate := flag.String("rate", "250..1000", "load's --rate")
	steps := flag.Int("steps", 4, "load's --steps")
	step := flag.Duration("step", 5*time.Second, "load's --step")
	flag.Parse()
	if err := run(*kubeconfig, *binary, *rate, *steps, *step); err != nil {
		fmt.Fprintln(os.Stderr, "bench load:", err)
		os.Exit(1)
	}
}

const webhookName = "noop.load.bench"

func run(kubeconfig, binary, rate string, steps int, step time.Duration) error {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %q: %w", kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-load-"}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	defer cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	var calls atomic.Int64
	url, caBundle, stop, err := serveNoop(&calls)
	if err != nil {
		return err
	}
	defer stop()
	name, err := register(ctx, cs, ns.Name, url, caBundle)
	if err != nil {
		return err
	}
	defer cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	if err := waitCalled(ctx, cs, ns.Name, &calls); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bench-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	obj := filepath.Join(dir, "cm.yaml")
	if err := os.WriteFile(obj, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: load-}\ndata: {k: v}\n"), 0o600); err != nil {
		return err
	}
	before := calls.Load()
	rep, cpu, err := runLoad(binary, kubeconfig, ns.Name, obj, rate, steps, step)
	if err != nil {
		return err
	}
	return report(rep, cpu, calls.Load()-before)
}

// runLoad runs the load command and returns its report and CPU time.
func runLoad(binary, kubeconfig, ns, obj, rate string, steps int, step time.Duration) (*load.Report, time.Duration, error) {
	cmd := exec.Command(binary, "load", "--kubeconfig", kubeconfig, "-n", ns, "-f", obj, "--rate", rate,
		"--steps", fmt.Sprint(steps), "--step", step.String(), "--health-address", "", "--max-in-flight", "2048", "-o", "json")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, 0, fmt.Errorf("%s load: %w\n%s", binary, err, errOut.String())
	}
	var rep load.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return nil, 0, fmt.Errorf("load's report: %w", err)
	}
	return &rep, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

func report(rep *load.Report, cpu time.Duration, answered int64) error {
	fmt.Printf("| offered/s | achieved/s | sent | p50 | p99 | errors | apiserver's histogram: calls, p50, p99, mean |\n|---|---|---|---|---|---|---|\n")
	sent := 0
	for _, s := range rep.Steps {
		sent += s.Sent
		api := "not read"
		for _, w := range s.Webhooks {
			if w.Webhook == webhookName && w.Source == load.SourceAPIServer {
				api = fmt.Sprintf("%g, %.1f ms, %.1f ms, %.2f ms", w.Calls, w.P50Ms, w.P99Ms, w.MeanMs)
			}
		}
		fmt.Printf("| %g | %g | %d | %.1f ms | %.1f ms | %.2f%% | %s |\n", s.OfferedRate, s.AchievedRate, s.Sent, s.P50Ms, s.P99Ms, s.ErrorRate*100, api)
	}
	if sent == 0 {
		return fmt.Errorf("no request sent: %v", rep.Notes)
	}
	fmt.Printf("\nThe generator's CPU: %v for %d requests, %.1f µs per request (user+system of the load process, its startup, discovery and /metrics reads included). The no-op webhook answered %d calls.\n",
		cpu.Round(time.Millisecond), sent, float64(cpu.Microseconds())/float64(sent), answered)
	for _, n := range rep.Notes {
		fmt.Printf("Note: %s\n", n)
	}
	return nil
}

// serveNoop serves a validating webhook that allows everything, over
// HTTP/2 on loopback, counting its calls.
func serveNoop(calls *atomic.Int64) (url string, caBundle []byte, stop func(), err error) {
	cert, err := loopcert.New("bench-load")
	if err != nil {
		return "", nil, nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert.TLS()}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		return "", nil, nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rv struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&rv); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": rv.APIVersion, "kind": "AdmissionReview", "response": map[string]any{"uid": rv.Request.UID, "allowed": true}})
	})}
	go srv.Serve(ln) //nolint:errcheck // stopped by stop
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.DER})
	return "https://" + ln.Addr().String() + "/", ca, func() { _ = srv.Close() }, nil
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
