package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/hookback/hookback/admission"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// AnnotationCPUOversell is where node-status records, on the node, the CPU
// the node last reported and what the webhook wrote instead.
const AnnotationCPUOversell = "hookback.dev/cpu-oversell"

// nodeStatusHandler oversells CPU (/mutate-node-status, nodes/status UPDATE):
// allocatable becomes reported allocatable x factor, and capacity keeps the
// node's reservation on top: new allocatable + (reported capacity - reported
// allocatable). Memory and every other resource are left alone.
//
// # Applying the factor once
//
// The webhook sees the result of an update, never the node's patch. kwok and
// the kubelet PATCH nodes/status on every heartbeat; a patch that does not
// touch allocatable arrives with the stored value, which is already oversold.
// Multiplying whatever arrives would compound: 2x, 4x, 8x...
//
// Comparing with oldObject alone cannot tell the cases apart either: a value
// equal to the stored one is either ours carried over or the node's own value
// never oversold (a node registers with its status on CREATE, which this
// webhook does not see, and its first status update after hookback starts
// may well leave allocatable alone); and after a restart with another factor
// nothing says what the node really has.
//
// So the webhook records what it did in the AnnotationCPUOversell annotation:
// the values the node reported and the values written in their place. The
// annotation survives a status update: the apiserver's node status strategy
// (pkg/registry/core/node/strategy.go, nodeStatusStrategy.PrepareForUpdate,
// Kubernetes v1.36) resets only spec on nodes/status, and keeps metadata.
// Then, per field (allocatable, capacity):
//
//   - equal to the value recorded as written: carried over from the stored
//     node, so the node's own value is the recorded reported one;
//   - anything else, or no record: the node sent it in this update, so it is
//     the new reported value.
//
// The result is a function of the reported values and the factor alone, so a
// carried-over value recomputes to itself and a heartbeat yields no patch:
// 2x stays 2x. A changed factor recomputes from the recorded reported value.
// Factor 1 restores the reported values and drops the record.
//
// Known limits: a node that starts reporting exactly the value the webhook
// wrote looks like a heartbeat and keeps its old reported value (a kubelet
// diffs its status against the stored node, so it would not even send it).
// Removing the annotation by hand while the oversold value is stored makes
// the next status update oversell that value again, until the node sends its
// real allocatable.
type nodeStatusHandler struct {
	factor float64
	log    *slog.Logger
}

// oversellRecord is the annotation's value.
type oversellRecord struct {
	Factor              float64           `json:"factor"`
	ReportedAllocatable resource.Quantity `json:"reportedAllocatable"`
	ReportedCapacity    resource.Quantity `json:"reportedCapacity"`
	Allocatable         resource.Quantity `json:"allocatable"`
	Capacity            resource.Quantity `json:"capacity"`
}

// Handle implements admission.Handler.
func (h *nodeStatusHandler) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update || req.SubResource != "status" || req.Kind.Group != "" || req.Kind.Kind != "Node" {
		return admission.Allowed("")
	}
	node := &corev1.Node{}
	if err := json.Unmarshal(req.Object.Raw, node); err != nil {
		// Fail open: never stall a node's heartbeat.
		h.log.Warn("cannot decode node; letting the status update through unchanged", "node", req.Name, "error", err)
		return admission.Allowed("")
	}
	rec, err := findRecord(node, req.OldObject.Raw)
	if err != nil {
		h.log.Warn("ignoring unreadable oversell record", "node", req.Name, "annotation", AnnotationCPUOversell, "error", err)
	}
	ops, err := oversell(node, rec, h.factor)
	if err != nil {
		h.log.Warn("cannot oversell CPU; letting the status update through unchanged", "node", req.Name, "error", err)
		return admission.Allowed("")
	}
	// Two quantities and one annotation: the rest of the status (new
	// kubelet fields included) is never rewritten.
	return admission.Patched("", ops...)
}

// findRecord returns the node's oversell record, or nil. It reads the updated
// object first (it carries the stored annotations unless the update rewrote
// metadata), then the old object, for a full-object update that dropped it.
func findRecord(node *corev1.Node, oldRaw []byte) (*oversellRecord, error) {
	rec, errNew := parseRecord(node.Annotations)
	if rec != nil || len(oldRaw) == 0 {
		return rec, errNew
	}
	var old corev1.Node
	if err := json.Unmarshal(oldRaw, &old); err != nil {
		return nil, errors.Join(errNew, fmt.Errorf("decode old node: %w", err))
	}
	rec, errOld := parseRecord(old.Annotations)
	return rec, errors.Join(errNew, errOld)
}

func parseRecord(ann map[string]string) (*oversellRecord, error) {
	v, ok := ann[AnnotationCPUOversell]
	if !ok {
		return nil, nil
	}
	rec := &oversellRecord{}
	if err := json.Unmarshal([]byte(v), rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// oversell returns the patch operations that oversell node's CPU by factor
// and keep the record current, or none when nothing changes. rec may be nil.
func oversell(node *corev1.Node, rec *oversellRecord, factor float64) ([]admission.PatchOp, error) {
	alloc, okAlloc := node.Status.Allocatable[corev1.ResourceCPU]
	capa, okCap := node.Status.Capacity[corev1.ResourceCPU]
	if !okAlloc || !okCap {
		return nil, nil // nothing reported to oversell
	}
	reportedAlloc, reportedCap := alloc, capa
	if rec != nil {
		if alloc.Cmp(rec.Allocatable) == 0 {
			reportedAlloc = rec.ReportedAllocatable
		}
		if capa.Cmp(rec.Capacity) == 0 {
			reportedCap = rec.ReportedCapacity
		}
	}
	newAlloc, newCap, err := oversold(reportedAlloc.MilliValue(), reportedCap.MilliValue(), factor)
	if err != nil {
		return nil, err
	}
	var ops []admission.PatchOp
	// Compared as amounts: "4" and "4000m" are the same, and rewriting one
	// as the other would be a needless patch.
	if alloc.MilliValue() != newAlloc {
		ops = append(ops, admission.Replace("/status/allocatable/cpu", milliCPU(newAlloc)))
	}
	if capa.MilliValue() != newCap {
		ops = append(ops, admission.Replace("/status/capacity/cpu", milliCPU(newCap)))
	}
	var want *oversellRecord
	if factor != 1 {
		want = &oversellRecord{
			Factor:              factor,
			ReportedAllocatable: *resource.NewMilliQuantity(reportedAlloc.MilliValue(), resource.DecimalSI),
			ReportedCapacity:    *resource.NewMilliQuantity(reportedCap.MilliValue(), resource.DecimalSI),
			Allocatable:         *resource.NewMilliQuantity(newAlloc, resource.DecimalSI),
			Capacity:            *resource.NewMilliQuantity(newCap, resource.DecimalSI),
		}
	}
	recOps, err := recordOps(node.Annotations, want)
	if err != nil {
		return nil, err
	}
	return append(ops, recOps...), nil
}

// recordOps writes rec into the node's annotation, or removes the annotation
// when rec is nil; no operation when that changes nothing. The encoding is
// canonical (milli quantities, fixed field order), so an unchanged record is
// byte-identical and yields no patch.
func recordOps(ann map[string]string, rec *oversellRecord) ([]admission.PatchOp, error) {
	have, ok := ann[AnnotationCPUOversell]
	if rec == nil {
		if !ok {
			return nil, nil
		}
		return []admission.PatchOp{admission.Remove(admission.Pointer("metadata", "annotations", AnnotationCPUOversell))}, nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode oversell record: %w", err)
	}
	if ok && have == string(b) {
		return nil, nil
	}
	return []admission.PatchOp{admission.SetKeyOp("/metadata/annotations", len(ann) > 0, AnnotationCPUOversell, string(b))}, nil
}

// maxMilli bounds results well inside int64 and float64's exact integers.
const maxMilli = 1 << 52

// oversold computes the new allocatable and capacity in milli-CPU. Rounding
// to the nearest milli keeps 1000m x 2.3 at 2300m despite float error.
func oversold(reportedAlloc, reportedCap int64, factor float64) (alloc, capa int64, err error) {
	if reportedAlloc < 0 || reportedCap < 0 || reportedAlloc > maxMilli || reportedCap > maxMilli {
		return 0, 0, fmt.Errorf("reported cpu allocatable %dm, capacity %dm out of range", reportedAlloc, reportedCap)
	}
	scaled := math.Round(float64(reportedAlloc) * factor)
	if math.IsNaN(scaled) || scaled > maxMilli {
		return 0, 0, fmt.Errorf("cpu allocatable %dm x %v out of range", reportedAlloc, factor)
	}
	alloc = int64(scaled)
	// What the node keeps back for itself (system and kube reservations)
	// stays the same size; it is not oversold.
	capa = alloc + (reportedCap - reportedAlloc)
	if capa < 0 {
		return 0, 0, fmt.Errorf("cpu capacity would be negative: reported allocatable %dm exceeds capacity %dm", reportedAlloc, reportedCap)
	}
	return alloc, capa, nil
}

// milliCPU formats a CPU amount the way the apiserver would store it.
func milliCPU(milli int64) string {
	return resource.NewMilliQuantity(milli, resource.DecimalSI).String()
}
