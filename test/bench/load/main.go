// Command load measures `hookback load` itself: that the generator is not
// the bottleneck (issue 55, item 4). It serves a no-op validating webhook
// over loopback HTTPS (HTTP/2), for ConfigMap creates in a namespace of its
// own, either through a hookback session (-via hookback, the default: a
// `hookback start` process forwards to it as to your webhook) or registered
// bare (-via direct), and runs the hookback binary's load command at a ramp
// against the cluster. It prints Markdown (docs/performance.md, "The load
// generator"): per step the rate offered and achieved and the end-to-end
// percentiles, beside the apiserver's own histogram of the calls to the
// webhook (apiserver_admission_webhook_admission_duration_seconds, as load
// read it per step) and, through hookback, hookback's; for the whole run,
// the apiserver's histogram as this program read it before and after (its
// own reading, the difference); and the generator's CPU per request apart
// from its fixed costs: the load process's user+system time (rusage) in
// two runs of the same steps, the second shorter, the slope between them
// being the cost of a request and the rest startup, discovery and /metrics
// readings. The machine's load average is printed before and after.
//
//	hack/bench-load [-rate 250..1250] [-steps 5] [-step 5s] [-short 0.25] [-via hookback|direct]
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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hookback/hookback/bench/internal/loopcert"
	"github.com/hookback/hookback/load"
)

// config is one bench run.
type config struct {
	kubeconfig, binary, rate, via string
	steps                         int
	step                          time.Duration
	short                         float64
}

func main() {
	var c config
	flag.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "the cluster's kubeconfig")
	flag.StringVar(&c.binary, "hookback", "hookback", "the hookback binary")
	flag.StringVar(&c.rate, "rate", "250..1250", "load's --rate")
	flag.IntVar(&c.steps, "steps", 5, "load's --steps")
	flag.DurationVar(&c.step, "step", 5*time.Second, "load's --step")
	flag.Float64Var(&c.short, "short", 0.25, "the second run's steps, as a fraction of -step (the CPU slope's other point)")
	flag.StringVar(&c.via, "via", "hookback", "hookback: the no-op webhook behind a hookback session; direct: registered bare")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench load:", err)
		os.Exit(1)
	}
}

const webhookName = "noop.load.bench"

func run(c config) error {
	if c.via != "hookback" && c.via != "direct" {
		return fmt.Errorf("-via %q: want hookback or direct", c.via)
	}
	if c.short <= 0 || c.short >= 1 {
		return fmt.Errorf("-short %g: want a fraction between 0 and 1", c.short)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %q: %w", c.kubeconfig, err)
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
	dir, err := os.MkdirTemp("", "bench-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	health := ""
	if c.via == "direct" {
		name, err := register(ctx, cs, ns.Name, url, caBundle)
		if err != nil {
			return err
		}
		defer cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	} else {
		var stopSession func()
		health, stopSession, err = startSession(ctx, c, dir, ns.Name, url)
		if err != nil {
			return err
		}
		defer stopSession()
	}
	if err := waitCalled(ctx, cs, ns.Name, &calls); err != nil {
		return err
	}
	obj := filepath.Join(dir, "cm.yaml")
	if err := os.WriteFile(obj, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: load-}\ndata: {k: v}\n"), 0o600); err != nil {
		return err
	}
	loadBefore := loadAverage()
	before, err := scrapeWebhook(ctx, cs)
	if err != nil {
		return err
	}
	callsBefore := calls.Load()
	full, err := runLoad(c, ns.Name, obj, health, c.step)
	if err != nil {
		return err
	}
	answered := calls.Load() - callsBefore
	after, err := scrapeWebhook(ctx, cs)
	if err != nil {
		return err
	}
	short, err := runLoad(c, ns.Name, obj, health, time.Duration(float64(c.step)*c.short))
	if err != nil {
		return err
	}
	fmt.Printf("`hack/bench-load -rate %s -steps %d -step %s -short %g -via %s`; load average %s before, %s after.\n\n",
		c.rate, c.steps, c.step, c.short, c.via, loadBefore, loadAverage())
	return report(full, short, after.minus(before), answered)
}

// loadRun is one run of the load command: its report and its CPU time.
type loadRun struct {
	rep  *load.Report
	cpu  time.Duration
	sent int
}

// runLoad runs the load command and returns its report and CPU time.
func runLoad(c config, ns, obj, health string, step time.Duration) (loadRun, error) {
	cmd := exec.Command(c.binary, "load", "--kubeconfig", c.kubeconfig, "-n", ns, "-f", obj, "--rate", c.rate,
		"--steps", fmt.Sprint(c.steps), "--step", step.String(), "--health-address", health, "--max-in-flight", "2048", "-o", "json")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return loadRun{}, fmt.Errorf("%s load: %w\n%s", c.binary, err, errOut.String())
	}
	var rep load.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return loadRun{}, fmt.Errorf("load's report: %w", err)
	}
	r := loadRun{rep: &rep, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	for _, s := range rep.Steps {
		r.sent += s.Sent
	}
	if r.sent == 0 {
		return r, fmt.Errorf("no request sent: %v", rep.Notes)
	}
	return r, nil
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
