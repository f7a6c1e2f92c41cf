package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/hookback/hookback/builtin/controllers"
)

const memoryWebhooks = "pod-eviction"

// memSample is what hookback's /metrics said once its heap had settled.
type memSample struct {
	pods      int // pods in the cluster, all cached by hookback's informer
	ready     time.Duration
	heapAlloc float64 // right after a garbage collection that started after the cache synced
	heapInuse float64
	rss       float64
	gcs       int // garbage collections waited for
	settled   bool
	scrapes   int
	liveGC    float64 // from GODEBUG=gctrace=1: the heap marked live by the last collection
}

// memory compares hookback's memory with and without -pods extra pods in
// the cluster, and measures in this process what one cached pod costs with
// and without the informers' transform.
func (e *env) memory(ctx context.Context) error {
	log.Printf("memory: baseline, then %d pods", e.cfg.pods)
	ns, err := e.nss.create(ctx, "memory")
	if err != nil {
		return err
	}
	tmpl, err := scopedTemplate(e.tmpl, ns.Name)
	if err != nil {
		return err
	}
	path := filepath.Join(e.cfg.workdir, "memory.yaml.tmpl")
	if err := os.WriteFile(path, []byte(tmpl), 0o644); err != nil {
		return err
	}

	base, err := e.hookbackMemory(ctx, path)
	if err != nil {
		return err
	}
	t := time.Now()
	if err := e.createPods(ctx, ns.Name); err != nil {
		return err
	}
	created := time.Since(t)
	loaded, err := e.hookbackMemory(ctx, path)
	if err != nil {
		return err
	}

	without, err := e.informerHeap(ctx, false)
	if err != nil {
		return err
	}
	with, err := e.informerHeap(ctx, true)
	if err != nil {
		return err
	}
	cr, err := e.crCacheHeap(ctx)
	if err != nil {
		return err
	}
	sizes, err := e.podSizes(ctx, ns.Name)
	if err != nil {
		return err
	}

	e.reportMemory(memoryFigures{base: base, loaded: loaded, created: created, without: without, with: with, cr: cr, sizes: sizes})
	return nil
}

// extraEnv is -hookback-env's list.
func (e *env) extraEnv() []string {
	if e.cfg.hookbackEnv == "" {
		return nil
	}
	return strings.Split(e.cfg.hookbackEnv, ",")
}

// hookbackMemory starts hookback, waits for ready, lets the garbage
// collector run twice and reads its memory, then stops it.
func (e *env) hookbackMemory(ctx context.Context, tmpl string) (memSample, error) {
	var s memSample
	extra := append([]string{"GODEBUG=gctrace=1"}, e.extraEnv()...)
	p, err := e.startHookback(session("mem"), e.stateDir, extra, "--webhooks", memoryWebhooks, "--controllers", "all", "--template", tmpl)
	if err != nil {
		return s, err
	}
	defer p.stop(30 * time.Second)
	if s.ready, err = p.waitReady(ctx, 120*time.Second); err != nil {
		return s, err
	}
	// Let the controllers work through the initial adds.
	time.Sleep(2 * time.Second)
	m0, err := p.metrics()
	if err != nil {
		return s, err
	}
	gc0 := m0["go_gc_duration_seconds_count"]
	deadline := time.Now().Add(e.cfg.settle)
	m := m0
	for {
		if m, err = p.metrics(); err != nil {
			return s, err
		}
		s.scrapes++
		if m["go_gc_duration_seconds_count"] >= gc0+2 {
			s.settled = true
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
	}
	s.gcs = int(m["go_gc_duration_seconds_count"] - gc0)
	// Right after a collection the heap still counts the garbage the
	// background sweeper has not freed yet: let it finish, allocating
	// nothing, then read once more.
	time.Sleep(time.Second)
	if m, err = p.metrics(); err != nil {
		return s, err
	}
	s.liveGC = lastGCLive(p.logPath)
	s.heapAlloc, s.heapInuse, s.rss = m["go_memstats_heap_alloc_bytes"], m["go_memstats_heap_inuse_bytes"], m["process_resident_memory_bytes"]
	if s.pods, err = e.countPods(ctx, ""); err != nil {
		return s, err
	}
	log.Printf("memory: %d pods: ready in %s, heap alloc %s, inuse %s, rss %s after %d scrapes, %d GCs; gctrace live %s, next_gc/2 %s",
		s.pods, s.ready, mib(s.heapAlloc), mib(s.heapInuse), mib(s.rss), s.scrapes, s.gcs, mib(s.liveGC), mib(m["go_memstats_next_gc_bytes"]/2))
	if _, err := p.stop(30 * time.Second); err != nil {
		return s, err
	}
	return s, nil
}

var gctraceRE = regexp.MustCompile(`(?m)^gc \d+ @.* (\d+)->(\d+)->(\d+) MB`)

// lastGCLive is the live heap the last collection in a gctrace log marked
// (gctrace's "MB" are MiB).
func lastGCLive(path string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	all := gctraceRE.FindAllStringSubmatch(string(b), -1)
	if len(all) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(all[len(all)-1][3], 64)
	return v * (1 << 20)
}

func (e *env) countPods(ctx context.Context, ns string) (int, error) {
	n, cont := 0, ""
	for {
		l, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
		if err != nil {
			return 0, err
		}
		n += len(l.Items)
		if cont = l.Continue; cont == "" {
			return n, nil
		}
	}
}

// createPods creates -pods pods, -concurrency at a time, and gives each a
// Running status when -pod-status is set.
func (e *env) createPods(ctx context.Context, ns string) error {
	jobs := make(chan int)
	var done atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, e.cfg.concurrency)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < e.cfg.concurrency; w++ {
		wg.Go(func() {
			for i := range jobs {
				pod := benchPod(ns, fmt.Sprintf("web-%05d", i), i, podOptions{schedulerName: "hookback-bench-nobody"})
				got, err := e.client.CoreV1().Pods(ns).Create(wctx, pod, metav1.CreateOptions{})
				if err == nil && e.cfg.podStatus {
					got.Status = runningStatus(got, i)
					_, err = e.client.CoreV1().Pods(ns).UpdateStatus(wctx, got, metav1.UpdateOptions{})
				}
				if err != nil {
					errc <- fmt.Errorf("pod %d: %w", i, err)
					cancel()
					return
				}
				if n := done.Add(1); n%500 == 0 {
					log.Printf("memory: %d pods created", n)
				}
			}
		})
	}
feed:
	for i := 0; i < e.cfg.pods; i++ {
		select {
		case jobs <- i:
		case <-wctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return ctx.Err()
	}
}

type informerHeap struct {
	pods   int
	perPod float64
}

// informerHeap runs a cluster-wide pod informer in this process, with or
// without hookback's transform, and returns the live heap it holds per
// cached pod.
func (e *env) informerHeap(ctx context.Context, transform bool) (informerHeap, error) {
	before := liveHeap()
	ictx, stop := context.WithCancel(ctx)
	var f informers.SharedInformerFactory
	if transform {
		f = controllers.NewInformerFactory(e.client, 0)
	} else {
		f = informers.NewSharedInformerFactory(e.client, 0)
	}
	inf := f.Core().V1().Pods().Informer()
	f.Start(ictx.Done())
	if !cacheSynced(ictx, f) {
		stop()
		return informerHeap{}, fmt.Errorf("pod informer did not sync: %v", ctx.Err())
	}
	after := liveHeap()
	n := len(inf.GetStore().ListKeys())
	stop()
	f.Shutdown()
	runtime.KeepAlive(inf)
	return informerHeap{pods: n, perPod: (after - before) / float64(n)}, nil
}

// crCacheHeap is informerHeap for controller-runtime's cache with a
// manager's default options: a pod informer with no transform.
func (e *env) crCacheHeap(ctx context.Context) (informerHeap, error) {
	before := liveHeap()
	ictx, stop := context.WithCancel(ctx)
	defer stop()
	c, err := crcache.New(e.rest, crcache.Options{})
	if err != nil {
		return informerHeap{}, err
	}
	inf, err := c.GetInformer(ictx, &corev1.Pod{})
	if err != nil {
		return informerHeap{}, err
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ictx) }()
	if !c.WaitForCacheSync(ictx) {
		return informerHeap{}, fmt.Errorf("controller-runtime cache did not sync: %v", ctx.Err())
	}
	after := liveHeap()
	var pods corev1.PodList
	if err := c.List(ictx, &pods); err != nil {
		return informerHeap{}, err
	}
	n := len(pods.Items)
	pods.Items = nil
	runtime.KeepAlive(inf)
	stop()
	<-done
	return informerHeap{pods: n, perPod: (after - before) / float64(n)}, nil
}

// liveHeap is the heap after two forced collections.
func liveHeap() float64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc)
}

func cacheSynced(ctx context.Context, f informers.SharedInformerFactory) bool {
	for _, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return false
		}
	}
	return true
}

type podSizes struct {
	json, jsonStripped, proto, protoStripped float64
	managedJSON, lastApplied, managedEntries float64
}

// podSizes averages the serialized size of the pods in ns before and after
// StripUnusedFields.
func (e *env) podSizes(ctx context.Context, ns string) (podSizes, error) {
	var s podSizes
	n, cont := 0, ""
	for {
		l, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
		if err != nil {
			return s, err
		}
		for i := range l.Items {
			p := &l.Items[i]
			p.APIVersion, p.Kind = "v1", "Pod"
			j, err := json.Marshal(p)
			if err != nil {
				return s, err
			}
			mf, _ := json.Marshal(p.ManagedFields)
			s.json += float64(len(j))
			s.proto += float64(p.Size())
			s.managedJSON += float64(len(mf))
			s.managedEntries += float64(len(p.ManagedFields))
			s.lastApplied += float64(len(p.Annotations["kubectl.kubernetes.io/last-applied-configuration"]))
			obj, err := controllers.StripUnusedFields(p)
			if err != nil {
				return s, err
			}
			slim := obj.(*corev1.Pod)
			slim.APIVersion, slim.Kind = "v1", "Pod"
			j, _ = json.Marshal(slim)
			s.jsonStripped += float64(len(j))
			s.protoStripped += float64(slim.Size())
			n++
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	if n == 0 {
		return s, fmt.Errorf("no pods in %s", ns)
	}
	for _, f := range []*float64{&s.json, &s.jsonStripped, &s.proto, &s.protoStripped, &s.managedJSON, &s.lastApplied, &s.managedEntries} {
		*f /= float64(n)
	}
	return s, nil
}
