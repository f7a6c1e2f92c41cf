package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// RestoreNodes undoes node-status on every node it touched: CPU allocatable
// and capacity go back to what the node reported, and the record annotation
// goes away. hookback runs it after deregistering, because whatever it
// wrote into the cluster must not outlive it. A node whose CPU no longer
// equals what the webhook wrote has re-reported since; only the annotation
// is removed there.
func RestoreNodes(ctx context.Context, cs kubernetes.Interface, log *slog.Logger) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes to restore: %w", err)
	}
	var errs []error
	for i := range nodes.Items {
		n := &nodes.Items[i]
		raw, ok := n.Annotations[AnnotationCPUOversell]
		if !ok {
			continue
		}
		patch, err := restorePatch(n, raw)
		if err != nil {
			log.Warn("unreadable oversell record; removing it only", "node", n.Name, "error", err)
		}
		if _, err := cs.CoreV1().Nodes().PatchStatus(ctx, n.Name, patch); err != nil {
			errs = append(errs, fmt.Errorf("restore node %s: %w", n.Name, err))
			continue
		}
		log.Info("restored node CPU", "node", n.Name)
	}
	return errors.Join(errs...)
}

// restorePatch is a merge patch for nodes/status: the status strategy keeps
// metadata changes, so one patch restores CPU and drops the record.
func restorePatch(n *corev1.Node, raw string) ([]byte, error) {
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnotationCPUOversell: nil}}}
	var rec oversellRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		b, merr := json.Marshal(patch)
		return b, errors.Join(err, merr)
	}
	status := map[string]any{}
	if q, ok := n.Status.Allocatable[corev1.ResourceCPU]; ok && q.Cmp(rec.Allocatable) == 0 {
		status["allocatable"] = map[string]any{"cpu": rec.ReportedAllocatable.String()}
	}
	if q, ok := n.Status.Capacity[corev1.ResourceCPU]; ok && q.Cmp(rec.Capacity) == 0 {
		status["capacity"] = map[string]any{"cpu": rec.ReportedCapacity.String()}
	}
	if len(status) > 0 {
		patch["status"] = status
	}
	return json.Marshal(patch)
}
