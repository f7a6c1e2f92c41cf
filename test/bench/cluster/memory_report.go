package main

import (
	"fmt"
	"time"
)

// memoryFigures is what the memory section measured.
type memoryFigures struct {
	base, loaded memSample
	created      time.Duration
	without      informerHeap
	with         informerHeap
	cr           informerHeap
	sizes        podSizes
}

func (e *env) reportMemory(f memoryFigures) {
	base, loaded, created, without, with, cr, sizes := f.base, f.loaded, f.created, f.without, f.with, f.cr, f.sizes
	dp := float64(loaded.pods - base.pods)
	fmt.Fprintf(e.out, "### Informer memory at thousands of pods\n\n")
	status := "Pending (they name a scheduler that does not exist, so nothing schedules them)"
	if e.cfg.podStatus {
		status = "given a Running status like a kubelet's (5 conditions, 2 container statuses, pod and host IPs) and no node, so no scheduler or kubelet works on them"
	}
	fmt.Fprintf(e.out, "%d pods created in one namespace (10 at a time, %s), each with 2 containers (env, ports, probes, resources, mounts), 7 labels, 4 annotations and a last-applied-configuration annotation; %s. hookback runs `--webhooks %s --controllers all`: the controllers and the eviction webhook share one cluster-wide pod informer whose transform (`controllers.StripUnusedFields`) keeps only `controllers.SlimPod`'s whitelist of each pod. Figures are read from hookback's `/metrics` after ready, once two garbage collections have run since (the bench scrapes `/metrics` until `go_gc_duration_seconds_count` has gone up by 2, the scrapes' own allocations driving the collector) and a second's pause has let the sweeper free the garbage, so the heap is the live heap rather than whatever garbage the initial list left; hookback runs with `GODEBUG=gctrace=1` to cross-check it with the runtime's own figure (whole MiB). `heap_inuse` and RSS also hold the headroom the collector keeps (GOGC=100: the heap may grow to twice the live heap before the next collection) and, for RSS, memory not yet returned to the OS after the initial list.\n\n",
		e.cfg.pods, ms(created.Round(time.Millisecond)), status, memoryWebhooks)
	fmt.Fprintf(e.out, "| | pods in the cluster | exec → ready | live heap (`go_memstats_heap_alloc_bytes` after GC) | live heap at the last GC (gctrace) | `go_memstats_heap_inuse_bytes` | RSS (`process_resident_memory_bytes`) |\n|---|---|---|---|---|---|---|\n")
	for _, r := range []struct {
		name string
		s    memSample
	}{{"baseline", base}, {fmt.Sprintf("+%d pods", e.cfg.pods), loaded}} {
		note := ""
		if !r.s.settled {
			note = " (no 2 GCs within -settle)"
		}
		fmt.Fprintf(e.out, "| %s | %d | %s | %s%s | %s | %s | %s |\n", r.name, r.s.pods, ms(r.s.ready), mib(r.s.heapAlloc), note, mib(r.s.liveGC), mib(r.s.heapInuse), mib(r.s.rss))
	}
	fmt.Fprintf(e.out, "| **per added pod** | %d | %s | **%s** | %s | %s | %s |\n\n", int(dp), signedMS(loaded.ready-base.ready),
		kb((loaded.heapAlloc-base.heapAlloc)/dp), kb((loaded.liveGC-base.liveGC)/dp), kb((loaded.heapInuse-base.heapInuse)/dp), kb((loaded.rss-base.rss)/dp))

	fmt.Fprintf(e.out, "The same pod informer in the bench process (`runtime.GC()` forced before reading `runtime.MemStats.HeapAlloc`, %d pods cached):\n\n", with.pods)
	fmt.Fprintf(e.out, "| informer | heap per cached pod |\n|---|---|\n")
	fmt.Fprintf(e.out, "| plain `informers.NewSharedInformerFactory` | %s |\n", kb(without.perPod))
	fmt.Fprintf(e.out, "| `controllers.NewInformerFactory` (with `StripUnusedFields`) | %s (%+.0f%%) |\n", kb(with.perPod), 100*(with.perPod-without.perPod)/without.perPod)
	fmt.Fprintf(e.out, "| controller-runtime's cache with default options (what a manager whose controller watches pods holds) | %s (hookback's is %.2f× of it) |\n\n", kb(cr.perPod), with.perPod/cr.perPod)
	fmt.Fprintf(e.out, "Average size of one of these pods as the apiserver returns it, and after `controllers.StripUnusedFields`:\n\n")
	fmt.Fprintf(e.out, "| | JSON | protobuf |\n|---|---|---|\n")
	fmt.Fprintf(e.out, "| as returned (%.1f managedFields entries on average) | %s | %s |\n", sizes.managedEntries, kb(sizes.json), kb(sizes.proto))
	fmt.Fprintf(e.out, "| stripped | %s (%+.0f%%) | %s (%+.0f%%) |\n", kb(sizes.jsonStripped), 100*(sizes.jsonStripped-sizes.json)/sizes.json, kb(sizes.protoStripped), 100*(sizes.protoStripped-sizes.proto)/sizes.proto)
	fmt.Fprintf(e.out, "| of which `managedFields` / last-applied annotation (JSON) | %s / %s | |\n\n", kb(sizes.managedJSON), kb(sizes.lastApplied))
}
