package webhooks

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestRestorePatch(t *testing.T) {
	rec := `{"factor":2,"reportedAllocatable":"3800m","reportedCapacity":"4","allocatable":"7600m","capacity":"7800m"}`
	node := func(alloc, capacity string) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{AnnotationCPUOversell: rec}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(alloc)},
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(capacity)},
			},
		}
	}
	tests := []struct {
		name       string
		node       *corev1.Node
		wantStatus map[string]any
	}{
		{name: "oversold values go back to the reported ones", node: node("7600m", "7800m"),
			wantStatus: map[string]any{"allocatable": map[string]any{"cpu": "3800m"}, "capacity": map[string]any{"cpu": "4"}}},
		{name: "node re-reported since: only the annotation goes", node: node("3", "4")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := restorePatch(tc.node, rec)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			ann := got["metadata"].(map[string]any)["annotations"].(map[string]any)
			if v, ok := ann[AnnotationCPUOversell]; !ok || v != nil {
				t.Errorf("annotation not removed: %s", b)
			}
			gotStatus, _ := got["status"].(map[string]any)
			gs, _ := json.Marshal(gotStatus)
			ws, _ := json.Marshal(tc.wantStatus)
			if tc.wantStatus == nil && gotStatus != nil || tc.wantStatus != nil && string(gs) != string(ws) {
				t.Errorf("status patch = %s, want %s", gs, ws)
			}
		})
	}
}

func TestRestoreNodesSkipsUntouchedNodes(t *testing.T) {
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "plain"}})
	if err := RestoreNodes(context.Background(), cs, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "patch" {
			t.Errorf("patched a node hookback never touched: %v", a)
		}
	}
}
