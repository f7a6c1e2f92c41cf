package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/admission"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeStatus(t *testing.T) {
	tests := []struct {
		name, fixture  string
		factor         float64
		wantAlloc      string // "": the node must be unchanged
		wantCap        string
		wantReportedAC string // the record's reported "allocatable/capacity"; "": no record
	}{
		{name: "first update after registration", fixture: "v1-first-update", factor: 2, wantAlloc: "7600m", wantCap: "7800m", wantReportedAC: "3800m/4"},
		{name: "first update after registration", fixture: "v1beta1-first-update", factor: 2, wantAlloc: "16", wantCap: "16", wantReportedAC: "8/8"},
		{name: "fractional factor", fixture: "v1beta1-first-update", factor: 1.5, wantAlloc: "12", wantCap: "12", wantReportedAC: "8/8"},
		{name: "factor 1 changes nothing", fixture: "v1-first-update", factor: 1},
		{name: "heartbeat leaves allocatable alone", fixture: "v1-heartbeat", factor: 2},
		{name: "heartbeat leaves allocatable alone", fixture: "v1beta1-heartbeat", factor: 2},
		{name: "node reports the same real values again", fixture: "v1-reported-again", factor: 2, wantAlloc: "7600m", wantCap: "7800m", wantReportedAC: "3800m/4"},
		{name: "node changes its real allocatable", fixture: "v1-allocatable-changed", factor: 2, wantAlloc: "11600m", wantCap: "11800m", wantReportedAC: "5800m/6"},
		{name: "full update dropped the record", fixture: "v1beta1-put-dropped-annotation", factor: 2, wantAlloc: "7600m", wantCap: "7800m", wantReportedAC: "3800m/4"},
		{name: "factor changed since the record", fixture: "v1-heartbeat", factor: 3, wantAlloc: "11400m", wantCap: "11600m", wantReportedAC: "3800m/4"},
		{name: "factor 1 restores the reported values", fixture: "v1-heartbeat", factor: 1, wantAlloc: "3800m", wantCap: "4"},
		{name: "not the status subresource", fixture: "v1-main-resource", factor: 2},
		{name: "undecodable", fixture: "v1-undecodable", factor: 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/factor=%v", tt.fixture, tt.name, tt.factor), func(t *testing.T) {
			opts := DefaultOptions()
			opts.CPUOversellFactor = tt.factor
			deps, _, _ := testDeps()
			h := buildOne(t, NameNodeStatus, opts, deps)
			req := loadRequest(t, NameNodeStatus, tt.fixture)
			resp := h.Handle(context.Background(), req)
			checkDecision(t, resp, true, http.StatusOK, "")
			if tt.wantAlloc == "" {
				if len(resp.Patch) != 0 {
					t.Fatalf("node changed: %s", resp.Patch)
				}
				return
			}
			checkNodePatch(t, req, resp, tt.wantAlloc, tt.wantCap, tt.wantReportedAC)
		})
	}
}

// checkNodePatch asserts resp touches only CPU and the record, and what the
// node ends with; memory and pods stay as they were.
func checkNodePatch(t *testing.T, req admission.Request, resp admission.Response, wantAlloc, wantCap, wantReportedAC string) {
	t.Helper()
	for _, p := range patchPaths(t, resp.Patch) {
		switch strings.SplitN(p, " ", 2)[1] {
		case "/status/allocatable/cpu", "/status/capacity/cpu", "/metadata/annotations/hookback.dev~1cpu-oversell":
		default:
			t.Errorf("patch touches more than CPU and the record: %s", p)
		}
	}
	before := &corev1.Node{}
	decodeInto(t, req.Object.Raw, before)
	after := &corev1.Node{}
	decodeInto(t, applyPatch(t, req.Object.Raw, resp.Patch), after)
	checkCPU(t, after, wantAlloc, wantCap)
	checkRecord(t, after, wantReportedAC)
	for _, r := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourcePods} {
		if a, b := after.Status.Allocatable[r], before.Status.Allocatable[r]; a.Cmp(b) != 0 {
			t.Errorf("allocatable %s changed: %s -> %s", r, b.String(), a.String())
		}
		if a, b := after.Status.Capacity[r], before.Status.Capacity[r]; a.Cmp(b) != 0 {
			t.Errorf("capacity %s changed: %s -> %s", r, b.String(), a.String())
		}
	}
}

// TestNodeStatusHeartbeats plays a node's life through the webhook: every
// status update is admitted, patched and stored, and the stored node is the
// next update's oldObject. 2x must stay 2x.
func TestNodeStatusHeartbeats(t *testing.T) {
	deps, _, _ := testDeps()
	h := buildOne(t, NameNodeStatus, DefaultOptions(), deps)
	first := loadRequest(t, NameNodeStatus, "v1-first-update")
	stored := &corev1.Node{}
	decodeInto(t, applyPatch(t, first.Object.Raw, h.Handle(context.Background(), first).Patch), stored)
	checkCPU(t, stored, "7600m", "7800m")

	realAlloc, realCap := "3800m", "4"
	beat := func(t *testing.T, mutate func(n *corev1.Node)) {
		t.Helper()
		update := stored.DeepCopy()
		update.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(update.Status.Conditions[0].LastHeartbeatTime.Add(20 * time.Second))
		mutate(update)
		req := nodeStatusRequest(t, update, stored)
		resp := h.Handle(context.Background(), req)
		checkDecision(t, resp, true, http.StatusOK, "")
		stored = &corev1.Node{}
		decodeInto(t, applyPatch(t, req.Object.Raw, resp.Patch), stored)
	}
	kwok := func(*corev1.Node) {}     // a status patch that leaves allocatable alone
	kubelet := func(n *corev1.Node) { // a status patch re-sending the real values
		n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse(realAlloc)
		n.Status.Capacity[corev1.ResourceCPU] = resource.MustParse(realCap)
	}
	put := func(n *corev1.Node) { delete(n.Annotations, AnnotationCPUOversell) } // a full update from a stale copy of metadata

	for i := range 30 {
		beat(t, []func(*corev1.Node){kwok, kwok, kubelet, kwok, put}[i%5])
		checkCPU(t, stored, "7600m", "7800m")
		checkRecord(t, stored, "3800m/4")
	}
	// The node's real CPU grows (say, a resized VM): 2x of the new value.
	realAlloc, realCap = "5800m", "6"
	beat(t, kubelet)
	checkCPU(t, stored, "11600m", "11800m")
	for i := range 10 {
		beat(t, []func(*corev1.Node){kwok, kubelet}[i%2])
		checkCPU(t, stored, "11600m", "11800m")
		checkRecord(t, stored, "5800m/6")
	}
}

func nodeStatusRequest(t *testing.T, obj, old *corev1.Node) admission.Request {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	oldRaw, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	var req admission.Request
	req.Kind = metav1.GroupVersionKind{Version: "v1", Kind: "Node"}
	req.Resource = metav1.GroupVersionResource{Version: "v1", Resource: "nodes"}
	req.SubResource = "status"
	req.Name = obj.Name
	req.Operation = "UPDATE"
	req.Object.Raw = raw
	req.OldObject.Raw = oldRaw
	return req
}

func checkCPU(t *testing.T, n *corev1.Node, alloc, capa string) {
	t.Helper()
	a, c := n.Status.Allocatable[corev1.ResourceCPU], n.Status.Capacity[corev1.ResourceCPU]
	if a.Cmp(resource.MustParse(alloc)) != 0 || c.Cmp(resource.MustParse(capa)) != 0 {
		t.Fatalf("cpu allocatable/capacity = %s/%s, want %s/%s", a.String(), c.String(), alloc, capa)
	}
}

// checkRecord asserts the recorded reported "allocatable/capacity", or that
// there is no record when want is "".
func checkRecord(t *testing.T, n *corev1.Node, want string) {
	t.Helper()
	rec, err := parseRecord(n.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case want == "" && rec != nil:
		t.Errorf("record %s left on the node", n.Annotations[AnnotationCPUOversell])
	case want == "":
	case rec == nil:
		t.Errorf("no record on the node, want reported %s", want)
	default:
		if got := rec.ReportedAllocatable.String() + "/" + rec.ReportedCapacity.String(); got != want {
			t.Errorf("recorded reported = %s, want %s", got, want)
		}
		a, c := n.Status.Allocatable[corev1.ResourceCPU], n.Status.Capacity[corev1.ResourceCPU]
		if rec.Allocatable.Cmp(a) != 0 || rec.Capacity.Cmp(c) != 0 {
			t.Errorf("record says written %s/%s, node has %s/%s", rec.Allocatable.String(), rec.Capacity.String(), a.String(), c.String())
		}
	}
}

func TestOversold(t *testing.T) {
	tests := []struct {
		name               string
		alloc, capa        int64
		factor             float64
		wantAlloc, wantCap int64
		wantErr            bool
	}{
		{name: "double", alloc: 3800, capa: 4000, factor: 2, wantAlloc: 7600, wantCap: 7800},
		{name: "float error rounds to the milli", alloc: 1000, capa: 1000, factor: 2.3, wantAlloc: 2300, wantCap: 2300},
		{name: "milli precision", alloc: 333, capa: 500, factor: 1.1, wantAlloc: 366, wantCap: 533},
		{name: "factor 1", alloc: 1500, capa: 2000, factor: 1, wantAlloc: 1500, wantCap: 2000},
		{name: "overflow", alloc: 1 << 40, capa: 1 << 40, factor: 1e9, wantErr: true},
		{name: "negative", alloc: -1, capa: 0, factor: 2, wantErr: true},
		{name: "allocatable above capacity", alloc: 4000, capa: 1000, factor: 1, wantAlloc: 4000, wantCap: 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, c, err := oversold(tt.alloc, tt.capa, tt.factor)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if !tt.wantErr && (a != tt.wantAlloc || c != tt.wantCap) {
				t.Errorf("oversold = %d/%d, want %d/%d", a, c, tt.wantAlloc, tt.wantCap)
			}
		})
	}
}
