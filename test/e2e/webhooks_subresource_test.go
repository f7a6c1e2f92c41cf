package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Eviction capture and node CPU oversell, end to end: the webhooks that act on
// subresources (pods/eviction, nodes/status) rather than on pod creates.

// evictFunc sends an Eviction of the pod; dryRun sets DeleteOptions.DryRun.
type evictFunc func(ctx context.Context, ns, name string, dryRun bool) error

func evictV1(ctx context.Context, ns, name string, dryRun bool) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if dryRun {
		ev.DeleteOptions = &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return env.client.PolicyV1().Evictions(ns).Evict(ctx, ev)
}

func evictV1beta1(ctx context.Context, ns, name string, dryRun bool) error {
	ev := &policyv1beta1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if dryRun {
		ev.DeleteOptions = &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return env.client.PolicyV1beta1().Evictions(ns).Evict(ctx, ev)
}

// evictDryRunQuery sends a policy/v1 Eviction with ?dryRun=All on the
// request instead of in the body (`kubectl drain --dry-run=server` uses the
// body); only then is the admission request itself marked dry-run.
func evictDryRunQuery(ctx context.Context, ns, name string, _ bool) error {
	ev := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	return env.client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(name).SubResource("eviction").
		Param("dryRun", metav1.DryRunAll).Body(ev).Do(ctx).Error()
}

func TestWebhookPodEvictionEvents(t *testing.T) {
	requireLocal(t, whyKwokRuns)
	t.Parallel()
	ns := namespace(t)
	user := whWhoAmI(t)
	p := start(t, whArgs("pod-eviction")...)
	p.ready(t)
	evicting := func(pod string) whEventQuery {
		return whEventQuery{reason: "Evicting", typ: corev1.EventTypeNormal, reportingController: "pod-eviction", regardingKind: "Pod", regardingName: pod}
	}
	// evict evicts a running pod for real and checks the Event, the log and
	// that the pod goes away.
	evict := func(t *testing.T, name string, send evictFunc) {
		t.Helper()
		pod := whRunningPod(t, ns, name)
		if err := send(context.Background(), ns, name, false); err != nil {
			t.Fatalf("evict %s: %v", name, err)
		}
		ev := whWaitEvent(t, ns, evicting(name))
		if want := "Eviction requested by " + user; !strings.Contains(ev.Note, want) {
			t.Errorf("Event note %q does not say %q", ev.Note, want)
		}
		if ev.Regarding.UID != pod.UID || ev.Action != "Evict" {
			t.Errorf("Event regarding %+v action %q, want pod UID %s, action Evict", ev.Regarding, ev.Action, pod.UID)
		}
		whPodGone(t, ns, name)
		p.whWaitLogLine(t, `msg="eviction requested"`, "namespace="+ns, "pod="+name+" ", "user="+user)
		p.whWaitLogLine(t, "msg=admission", "webhook=pod-eviction", "resource=pods/eviction", "operation=CREATE", "name="+name+" ", "decision=allowed")
	}

	for _, tc := range []struct {
		name string
		send evictFunc
	}{{"policy-v1", evictV1}, {"policy-v1beta1", evictV1beta1}} {
		t.Run(tc.name, func(t *testing.T) {
			evict(t, "evict-"+tc.name, tc.send)
		})
	}

	t.Run("dry run", func(t *testing.T) {
		dry := []struct {
			pod       string
			send      evictFunc
			requestDR bool // the admission request itself is marked dry-run
		}{
			{"dry-v1", evictV1, false},
			{"dry-v1beta1", evictV1beta1, false},
			{"dry-query", evictDryRunQuery, true},
		}
		pods := map[string]types.UID{}
		for _, d := range dry {
			pods[d.pod] = whRunningPod(t, ns, d.pod).UID
			if err := d.send(context.Background(), ns, d.pod, true); err != nil {
				t.Fatalf("dry-run evict %s: %v", d.pod, err)
			}
		}
		// Absence, without sleeping: a real eviction after the dry-run ones.
		// The handler writes its "eviction requested" line before it answers,
		// and hookback's log is one ordered stream, so once this pod's line is
		// visible a line for any earlier request would be too: that is the
		// sound proof the dry-run ones took the skip path. The Events check
		// is a second, near-certain one: the recorder queues Events in order
		// but posts each from its own goroutine.
		evict(t, "evict-after-dry-run", evictV1)
		for _, d := range dry {
			evs, err := whEvents(context.Background(), ns, evicting(d.pod))
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) > 0 {
				t.Errorf("dry-run eviction of %s recorded an Event: %q", d.pod, evs[0].Note)
			}
			switch line, ok := whLogLine(p.stderr.String(), `msg="eviction requested"`, "pod="+d.pod+" "); {
			case !ok:
				t.Errorf("no \"eviction requested\" log line for the dry-run eviction of %s: the webhook did not see it", d.pod)
			case !strings.Contains(line, "dry_run=true"):
				t.Errorf("dry-run eviction of %s was treated as real: %s", d.pod, line)
			}
			pod, err := env.client.CoreV1().Pods(ns).Get(context.Background(), d.pod, metav1.GetOptions{})
			if err != nil || pod.UID != pods[d.pod] || pod.DeletionTimestamp != nil {
				t.Errorf("dry-run eviction of %s removed it (err %v)", d.pod, err)
			}
			line := p.whWaitLogLine(t, "msg=admission", "webhook=pod-eviction", "resource=pods/eviction", "name="+d.pod+" ", "decision=allowed")
			if d.requestDR && !strings.Contains(line, "dry_run=true") {
				t.Errorf("admission log line of %s lacks dry_run=true: %s", d.pod, line)
			}
		}
	})
}

// The kwok node's heartbeat patches of nodes/status carry allocatable
// unchanged (kwok never manages it), so they arrive at the webhook with the
// already oversold value: the test proves it is not compounded.
func TestWebhookNodeStatusOversellsCPU(t *testing.T) {
	requireLocal(t, whyKwokHeartbeats)
	t.Parallel()
	ctx := context.Background()
	node := kwokNode(t)
	origAlloc, origCap := originalCPU(t, node)
	origMemAlloc, origMemCap := node.Status.Allocatable[corev1.ResourceMemory], node.Status.Capacity[corev1.ResourceMemory]
	wantAlloc := 2 * origAlloc.MilliValue()
	wantCap := wantAlloc + origCap.MilliValue() - origAlloc.MilliValue()

	var p *proc
	// Registered before start, so it runs after start's own cleanup has
	// stopped hookback; it stops hookback itself too, in case.
	t.Cleanup(func() {
		if p != nil && !p.exited() {
			p.signal(syscall.SIGTERM)
			p.wait(t)
		}
		restoreNode(t, node.Name, origAlloc, origCap)
	})
	p = start(t, whArgs("node-status", "--cpu-oversell-factor", "2")...)
	p.ready(t)

	// oversold reports how the node's CPU differs from 2x, or nil.
	oversold := func(ctx context.Context) error {
		n, err := env.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		alloc, capa := n.Status.Allocatable[corev1.ResourceCPU], n.Status.Capacity[corev1.ResourceCPU]
		if alloc.MilliValue() != wantAlloc || capa.MilliValue() != wantCap {
			return fmt.Errorf("cpu allocatable %s, capacity %s; want %dm, %dm (original %s, %s)",
				alloc.String(), capa.String(), wantAlloc, wantCap, origAlloc.String(), origCap.String())
		}
		memAlloc, memCap := n.Status.Allocatable[corev1.ResourceMemory], n.Status.Capacity[corev1.ResourceMemory]
		if memAlloc.Cmp(origMemAlloc) != 0 || memCap.Cmp(origMemCap) != 0 {
			return fmt.Errorf("memory allocatable %s, capacity %s changed from %s, %s",
				memAlloc.String(), memCap.String(), origMemAlloc.String(), origMemCap.String())
		}
		return nil
	}
	check := func(when string) {
		t.Helper()
		if err := oversold(ctx); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	// Every status update is one admission line; counting them proves the
	// webhook was consulted (with failurePolicy Ignore a skipped call would
	// also leave the value alone).
	calls := func() int {
		return strings.Count(p.stderr.String(), "msg=admission webhook=node-status resource=nodes/status operation=UPDATE")
	}

	current, err := env.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hb := whReadyHeartbeat(current)
	for i := 1; i <= 3; i++ {
		// A natural heartbeat: kwok's own PATCH of nodes/status, seen by the
		// webhook.
		before := calls()
		eventually(t, fmt.Sprintf("kwok heartbeat %d of node %s through the webhook", i, node.Name), func(ctx context.Context) (bool, error) {
			n, err := env.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if next := whReadyHeartbeat(n); next.After(hb) && calls() > before {
				hb = next
				return true, nil
			}
			return false, nil
		})
		if i == 1 {
			// The apiserver learns of the mutating configuration through its
			// own watch; a heartbeat racing that is not this test's concern.
			eventually(t, "the first kwok heartbeat to oversell CPU", func(ctx context.Context) (bool, error) {
				err := oversold(ctx)
				return err == nil, err
			})
		}
		check(fmt.Sprintf("after kwok heartbeat %d", i))
		// A simulated heartbeat: a status patch that leaves allocatable alone.
		before = calls()
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"hookback.dev/e2e-heartbeat":"%d"}}}`, i)
		if _, err := env.client.CoreV1().Nodes().PatchStatus(ctx, node.Name, []byte(patch)); err != nil {
			t.Fatalf("patch node status: %v", err)
		}
		eventually(t, "the node-status webhook to see the simulated heartbeat", func(context.Context) (bool, error) {
			return calls() > before, nil
		})
		check(fmt.Sprintf("after simulated heartbeat %d", i))
	}
	// Once oversold, no status update needs a patch: the first update
	// oversells, every later one recomputes the same values.
	var patched []string
	for _, line := range strings.Split(p.stderr.String(), "\n") {
		if strings.Contains(line, "msg=admission webhook=node-status") && !strings.Contains(line, " patch_ops=0 ") {
			patched = append(patched, line)
		}
	}
	if len(patched) > 1 {
		t.Errorf("the webhook patched node status %d times, want once:\n%s", len(patched), strings.Join(patched, "\n"))
	}

	n, err := env.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d node-status admissions; node annotations %v", calls(), n.Annotations)
	var rec struct {
		Factor              float64           `json:"factor"`
		ReportedAllocatable resource.Quantity `json:"reportedAllocatable"`
		ReportedCapacity    resource.Quantity `json:"reportedCapacity"`
	}
	if err := json.Unmarshal([]byte(n.Annotations["hookback.dev/cpu-oversell"]), &rec); err != nil {
		t.Fatalf("annotation hookback.dev/cpu-oversell: %v", err)
	}
	if rec.Factor != 2 || rec.ReportedAllocatable.Cmp(origAlloc) != 0 || rec.ReportedCapacity.Cmp(origCap) != 0 {
		t.Errorf("oversell record %+v, want factor 2, reported %s/%s", rec, origAlloc.String(), origCap.String())
	}

	// The last session running node-status restores the node before it
	// exits. Checked here, once, right after exit: the test's own cleanup
	// restores the node too, and must not be what makes this pass.
	p.signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("hookback exited %d after SIGTERM", code)
	}
	p.whWaitLogLine(t, `msg="restored node CPU"`, "node="+node.Name)
	n, err = env.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc, capa := n.Status.Allocatable[corev1.ResourceCPU], n.Status.Capacity[corev1.ResourceCPU]
	if alloc.Cmp(origAlloc) != 0 || capa.Cmp(origCap) != 0 {
		t.Errorf("after the last node-status session stopped: cpu allocatable %s, capacity %s; want the node's own %s, %s",
			alloc.String(), capa.String(), origAlloc.String(), origCap.String())
	}
	if v, ok := n.Annotations["hookback.dev/cpu-oversell"]; ok {
		t.Errorf("after the last node-status session stopped the node still carries hookback.dev/cpu-oversell=%s", v)
	}
}

// kwokNode returns a node kwok fakes; other nodes' heartbeats (a kubelet's
// every few minutes) are too slow for the node test.
func kwokNode(t *testing.T) *corev1.Node {
	t.Helper()
	nodes, err := env.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Annotations["kwok.x-k8s.io/node"] == "fake" {
			return &nodes.Items[i]
		}
	}
	t.Skip("no kwok node in this cluster")
	return nil
}

// originalCPU is the node's own CPU allocatable and capacity: what it
// reports, or, when an earlier run left it oversold, what the oversell
// record says it reported.
func originalCPU(t *testing.T, node *corev1.Node) (alloc, capa resource.Quantity) {
	t.Helper()
	alloc, capa = node.Status.Allocatable[corev1.ResourceCPU], node.Status.Capacity[corev1.ResourceCPU]
	raw, ok := node.Annotations["hookback.dev/cpu-oversell"]
	if !ok {
		return alloc, capa
	}
	var rec struct {
		ReportedAllocatable resource.Quantity `json:"reportedAllocatable"`
		ReportedCapacity    resource.Quantity `json:"reportedCapacity"`
	}
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		t.Fatalf("node %s carries an unreadable oversell record %q: %v", node.Name, raw, err)
	}
	t.Logf("node %s was left oversold (%s); its own cpu is %s/%s", node.Name, raw, rec.ReportedAllocatable.String(), rec.ReportedCapacity.String())
	return rec.ReportedAllocatable, rec.ReportedCapacity
}

// restoreNode puts the node's own CPU back and removes what the test and
// the webhook annotated, once hookback no longer serves.
func restoreNode(t *testing.T, name string, alloc, capa resource.Quantity) {
	t.Helper()
	status := fmt.Sprintf(`{"status":{"allocatable":{"cpu":%q},"capacity":{"cpu":%q}}}`, alloc.String(), capa.String())
	meta := `{"metadata":{"annotations":{"hookback.dev/cpu-oversell":null,"hookback.dev/e2e-heartbeat":null}}}`
	nodes := env.client.CoreV1().Nodes()
	eventually(t, "node "+name+" restored", func(ctx context.Context) (bool, error) {
		if _, err := nodes.PatchStatus(ctx, name, []byte(status)); err != nil {
			return false, err
		}
		if _, err := nodes.Patch(ctx, name, types.MergePatchType, []byte(meta), metav1.PatchOptions{}); err != nil {
			return false, err
		}
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		a, c := n.Status.Allocatable[corev1.ResourceCPU], n.Status.Capacity[corev1.ResourceCPU]
		_, annotated := n.Annotations["hookback.dev/cpu-oversell"]
		return a.Cmp(alloc) == 0 && c.Cmp(capa) == 0 && !annotated, nil
	})
}
