// Command audit measures `hookback audit` over many existing pods through a
// local upstream (a plain net/http webhook server on loopback), against the
// floor of the same run: listing those pods alone, in the same pages.
//
//	go run ./audit -hookback ../bin/hookback -kubeconfig ../.cache/cluster/kubeconfig -pods 5000
//
// The pods are created once (in namespace -namespace, labelled
// bench-audit=yes) and kept for the next run; -cleanup deletes the namespace.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/pager"
)

func main() {
	bin := flag.String("hookback", "", "hookback binary to measure")
	kc := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (a local one)")
	pods := flag.Int("pods", 5000, "pods to audit")
	ns := flag.String("namespace", "bench-audit", "namespace of the pods")
	rounds := flag.Int("rounds", 3, "audits to time")
	cleanup := flag.Bool("cleanup", false, "delete the namespace at the end")
	flag.Parse()
	if err := run(*bin, *kc, *ns, *pods, *rounds, *cleanup); err != nil {
		fmt.Fprintln(os.Stderr, "bench audit:", err)
		os.Exit(1)
	}
}

func run(bin, kc, ns string, n, rounds int, cleanup bool) error {
	if bin == "" {
		return fmt.Errorf("-hookback is required: the binary to measure")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return fmt.Errorf("load kubeconfig %q: %w", kc, err)
	}
	rc.QPS, rc.Burst = 500, 1000
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := ensurePods(ctx, cs, ns, n); err != nil {
		return err
	}
	if cleanup {
		defer cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	}
	up, reviews, stop, err := upstream()
	if err != nil {
		return err
	}
	defer stop()
	dir, err := os.MkdirTemp("", "bench-audit")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	manifest := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(manifest, []byte(webhooks), 0o644); err != nil {
		return err
	}
	fmt.Printf("hookback audit of %d pods through a local upstream (%s), %d rounds\n", n, up, rounds)
	for i := range rounds {
		floor, err := listFloor(ctx, cs, ns)
		if err != nil {
			return err
		}
		before := reviews()
		start := time.Now()
		cmd := exec.Command(bin, "audit", "--webhooks", "none", "--webhook-config", manifest, "--upstream", up, "-o", "json")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kc)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		took := time.Since(start)
		var rows []map[string]any
		if jerr := json.Unmarshal(out.Bytes(), &rows); jerr != nil || err != nil {
			return fmt.Errorf("audit: %v %v\n%s", err, jerr, errOut.String())
		}
		fmt.Printf("round %d: audit %s (%d rows, %d reviews at the upstream), floor (paged list alone) %s, %.1fx the floor, %.0f reviews/s\n",
			i+1, took.Round(time.Millisecond), len(rows), reviews()-before, floor.Round(time.Millisecond), took.Seconds()/floor.Seconds(), float64(len(rows))/took.Seconds())
	}
	return nil
}

// webhooks select the benchmark's pods only.
const webhooks = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: bench-audit
webhooks:
  - name: bench-audit.example.com
    clientConfig:
      service: {namespace: bench, name: webhook, path: /validate}
    rules:
      - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
    objectSelector:
      matchLabels: {bench-audit: "yes"}
    sideEffects: None
    admissionReviewVersions: ["v1"]
`

// upstream is a webhook server on loopback that allows every pod.
func upstream() (string, func() int, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, err
	}
	var mu sync.Mutex
	count := 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rv struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&rv); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		count++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":%q,"kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, rv.APIVersion, rv.Request.UID)
	})}
	go srv.Serve(l)
	reviews := func() int { mu.Lock(); defer mu.Unlock(); return count }
	return "http://" + l.Addr().String(), reviews, func() { srv.Close() }, nil
}

// ensurePods creates the missing pods, 32 at a time.
func ensurePods(ctx context.Context, cs kubernetes.Interface, ns string, n int) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	have := map[string]bool{}
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().Pods(ns).List(ctx, o)
	})
	if err := p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		have[o.(*corev1.Pod).Name] = true
		return nil
	}); err != nil {
		return err
	}
	names := make(chan string)
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for name := range names {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench-audit": "yes", "app": "bench"}},
					Spec: corev1.PodSpec{NodeName: "bench-unscheduled", Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:v1"}}}}
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	created := 0
	for i := range n {
		name := fmt.Sprintf("pod-%05d", i)
		if !have[name] {
			names <- name
			created++
		}
	}
	close(names)
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("create pods: %w", err)
	default:
	}
	if created > 0 {
		fmt.Printf("created %d pods in %s\n", created, ns)
	}
	return nil
}

// listFloor is the time to list the namespace's pods in audit's pages.
func listFloor(ctx context.Context, cs kubernetes.Interface, ns string) (time.Duration, error) {
	start := time.Now()
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().Pods(ns).List(ctx, o)
	})
	p.PageSize = 500
	n := 0
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(runtime.Object) error { n++; return nil })
	return time.Since(start), err
}
