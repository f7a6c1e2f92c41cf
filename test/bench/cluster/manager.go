package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/hookback/hookback/builtin/controllers"
)

// controllerRun is one controller process measured by the manager section.
type controllerRun struct {
	liveGC  float64 // live heap the last GC marked (gctrace)
	gcs     int
	latency []time.Duration // annotate -> label seen, one pod at a time
}

// manager runs pod-name-label in hookback and the same reconcile in a
// controller-runtime manager with default options, each alone, with few
// pods and then with -pods more: live heap per cached pod, and how long
// from annotating a pod to its label being visible.
func (e *env) manager(ctx context.Context) error {
	ns, err := e.nss.create(ctx, "manager")
	if err != nil {
		return err
	}
	tmpl, err := scopedTemplate(e.tmpl, ns.Name)
	if err != nil {
		return err
	}
	path := filepath.Join(e.cfg.workdir, "manager.yaml.tmpl")
	if err := os.WriteFile(path, []byte(tmpl), 0o644); err != nil {
		return err
	}
	kinds := []string{"hookback", "controller-runtime"}
	base := map[string]controllerRun{}
	for _, k := range kinds {
		if base[k], err = e.controllerRun(ctx, k, path, ns.Name, nil); err != nil {
			return fmt.Errorf("%s, baseline: %w", k, err)
		}
	}
	basePods, err := e.countPods(ctx, "")
	if err != nil {
		return err
	}
	if err := e.createPods(ctx, ns.Name); err != nil {
		return err
	}
	pods, err := e.countPods(ctx, "")
	if err != nil {
		return err
	}
	n := e.cfg.labels
	loaded := map[string]controllerRun{}
	for i, k := range kinds {
		// Each labels pods of its own, never labelled before.
		names := make([]string, n)
		for j := range names {
			names[j] = fmt.Sprintf("web-%05d", i*n+j)
		}
		if loaded[k], err = e.controllerRun(ctx, k, path, ns.Name, names); err != nil {
			return fmt.Errorf("%s, %d pods: %w", k, pods, err)
		}
	}
	dp := float64(pods - basePods)
	fmt.Fprintf(e.out, "### pod-name-label: hookback against a controller-runtime manager\n\n")
	fmt.Fprintf(e.out, "Each alone: hookback `start --webhooks none --controllers %s`, and a controller-runtime v0.24.1 manager with default options (`manager.New(cfg, manager.Options{})`, its cache of whole pods) running the same reconcile (bench/cluster/crmanager.go), in their own processes with `GODEBUG=gctrace=1`. Live heap is what the last garbage collection marked live after the cache synced (at least 2 collections, driven by scraping `/metrics`), with %d and then %d pods in the cluster. Latency: %d pods annotated `%s=true` one at a time, each timed from the patch to a watch seeing `%s` set to the pod's name.\n\n",
		controllers.PodNameLabelName, basePods, pods, n, controllers.AddPodNameLabelAnnotation, controllers.PodNameLabel)
	fmt.Fprintf(e.out, "| controller | live heap, %d pods | live heap, %d pods | per added pod | annotate → label p50 | p90 | max |\n|---|---|---|---|---|---|---|\n", basePods, pods)
	for _, k := range kinds {
		b, l := base[k], loaded[k]
		fmt.Fprintf(e.out, "| %s | %s | %s | **%s** | %s | %s | %s |\n", k, mib(b.liveGC), mib(l.liveGC), kb((l.liveGC-b.liveGC)/dp),
			ms(quantile(l.latency, 0.5)), ms(quantile(l.latency, 0.9)), ms(maxOf(l.latency)))
	}
	h, c := loaded["hookback"], loaded["controller-runtime"]
	fmt.Fprintf(e.out, "\nhookback against controller-runtime: heap per added pod **%.2f×**, label latency p50 **%.2f×**.\n\n",
		(h.liveGC-base["hookback"].liveGC)/(c.liveGC-base["controller-runtime"].liveGC), float64(quantile(h.latency, 0.5))/float64(quantile(c.latency, 0.5)))
	return nil
}

// controllerRun starts one controller, waits for its cache, lets its heap
// settle, times the labelling of names, and stops it.
func (e *env) controllerRun(ctx context.Context, kind, tmpl, ns string, names []string) (controllerRun, error) {
	var r controllerRun
	var p *proc
	var err error
	switch kind {
	case "hookback":
		p, err = e.startHookback(session("mgr"), e.stateDir, []string{"GODEBUG=gctrace=1"},
			"--webhooks", "none", "--controllers", controllers.PodNameLabelName, "--template", tmpl)
		if err == nil {
			_, err = p.waitReady(ctx, 120*time.Second)
		}
	default:
		var port int
		if port, err = freePort(); err != nil {
			return r, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		self, serr := os.Executable()
		if serr != nil {
			return r, serr
		}
		p, err = e.startProc(session("crm"), addr, self, nil, []string{crManagerEnv + "=" + addr, "GODEBUG=gctrace=1"})
		if err == nil {
			err = waitOutput(ctx, p, "synced", 120*time.Second)
		}
	}
	if err != nil {
		return r, err
	}
	defer p.stop(30 * time.Second)
	// Let the controller work through the initial adds, then drive two
	// collections with scrapes.
	time.Sleep(2 * time.Second)
	gc0 := gcCount(p.logPath)
	deadline := time.Now().Add(e.cfg.settle)
	for gcCount(p.logPath) < gc0+2 && time.Now().Before(deadline) && ctx.Err() == nil {
		if _, err := p.metrics(); err != nil {
			return r, fmt.Errorf("scrape %s: %w", kind, err)
		}
	}
	r.gcs = gcCount(p.logPath) - gc0
	r.liveGC = lastGCLive(p.logPath)
	if r.latency, err = e.labelLatency(ctx, ns, names); err != nil {
		return r, fmt.Errorf("%s: %w", kind, err)
	}
	log.Printf("manager: %s: live %s after %d GCs, %d labels p50 %s", kind, mib(r.liveGC), r.gcs, len(r.latency), ms(quantile(r.latency, 0.5)))
	_, err = p.stop(30 * time.Second)
	return r, err
}

func gcCount(path string) int {
	b, _ := os.ReadFile(path)
	return len(gctraceRE.FindAll(b, -1))
}

func waitOutput(ctx context.Context, p *proc, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.output(), want) {
		if p.exited() || time.Now().After(deadline) || ctx.Err() != nil {
			return p.failure(fmt.Sprintf("did not print %q within %s", want, timeout))
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// labelLatency annotates each pod in turn and times until a watch sees its
// label.
func (e *env) labelLatency(ctx context.Context, ns string, names []string) ([]time.Duration, error) {
	if len(names) == 0 {
		return nil, nil
	}
	w, err := e.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	var mu sync.Mutex
	seen := map[string]chan struct{}{}
	for _, n := range names {
		seen[n] = make(chan struct{})
	}
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || pod.Labels[controllers.PodNameLabel] != pod.Name {
				continue
			}
			mu.Lock()
			if ch, ok := seen[pod.Name]; ok {
				close(ch)
				delete(seen, pod.Name)
			}
			mu.Unlock()
		}
	}()
	patch := []byte(`{"metadata":{"annotations":{"` + controllers.AddPodNameLabelAnnotation + `":"true"}}}`)
	var out []time.Duration
	for _, n := range names {
		mu.Lock()
		ch := seen[n]
		mu.Unlock()
		t := time.Now()
		if _, err := e.client.CoreV1().Pods(ns).Patch(ctx, n, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("annotate %s: %w", n, err)
		}
		select {
		case <-ch:
			out = append(out, time.Since(t))
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("pod %s not labelled within 30s", n)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}
