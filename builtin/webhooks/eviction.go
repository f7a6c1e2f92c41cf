package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hookback/hookback/admission"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/events"
)

// evictionHandler captures evictions (/validate-pod-eviction, pods/eviction
// CREATE): it logs each one and records a Normal Event on the pod naming who
// asked. It only observes, so it always allows: a webhook that merely
// watches must never be why a drain or a PodDisruptionBudget-respecting
// eviction fails, not even when it cannot read the request.
type evictionHandler struct {
	pods corev1listers.PodLister
	// synced reports the pod cache's first list done; nil: always.
	synced func() bool
	log    *slog.Logger
	rec    events.EventRecorder
}

// waitSynced waits, within the request's deadline, for the pod cache's
// first list: hookback registers without waiting for it, so that a large
// cluster does not delay start, and only an eviction in the first moments
// waits here.
func (h *evictionHandler) waitSynced(ctx context.Context) bool {
	if h.synced == nil || h.synced() {
		return true
	}
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) { return h.synced(), nil })
	return err == nil
}

// Handle implements admission.Handler.
func (h *evictionHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.SubResource != "eviction" {
		return admission.Allowed("")
	}
	ev, err := decodeEviction(req)
	if err != nil {
		h.log.Warn("cannot decode eviction; allowing it", "namespace", req.Namespace, "pod", req.Name, "error", err)
		return admission.Allowed("")
	}
	// For the pods/eviction subresource the request names the pod; the
	// Eviction's own metadata is the fallback for a sparse request.
	ns, name := req.Namespace, req.Name
	if ns == "" {
		ns = ev.Namespace
	}
	if name == "" {
		name = ev.Name
	}
	user := req.UserInfo.Username
	if user == "" {
		user = "<unknown>"
	}
	// Dry-run comes either from the request (?dryRun=All on the eviction
	// call) or from the Eviction's own DeleteOptions (kubectl drain
	// --dry-run=server), which the apiserver does not flag on the request:
	// nothing will be evicted, so log it as such and record no Event.
	if req.IsDryRun() || (ev.DeleteOptions != nil && len(ev.DeleteOptions.DryRun) > 0) {
		h.log.Info("eviction requested", "namespace", ns, "pod", name, "user", user, "dry_run", true)
		return admission.Allowed("")
	}
	if !h.waitSynced(ctx) {
		h.log.Warn("pod cache still loading at the apiserver's timeout; allowing without an Event", "namespace", ns, "pod", name, "user", user)
		return admission.Allowed("")
	}
	pod, err := h.pods.Pods(ns).Get(name)
	if err != nil {
		// Not in the cache: the pod may be gone (the eviction will 404) or
		// the cache may lag. Either way allow; there is no pod to record on.
		level := slog.LevelWarn
		if apierrors.IsNotFound(err) {
			level = slog.LevelInfo
		}
		h.log.Log(ctx, level, "eviction of a pod not in the cache", "namespace", ns, "pod", name, "user", user, "error", err)
		return admission.Allowed("")
	}
	node := pod.Spec.NodeName
	h.log.Info("eviction requested", "namespace", ns, "pod", name, "node", node, "user", user)
	note := fmt.Sprintf("Eviction requested by %s", user)
	if node != "" {
		note += " (pod on node " + node + ")"
	}
	h.rec.Eventf(podRef(pod), nil, corev1.EventTypeNormal, ReasonEvicting, actionEvict, "%s", truncate(note, noteLimit))
	return admission.Allowed("")
}

// decodeEviction reads the request's Eviction as policy/v1. The apiserver
// passes the body in the version the client sent, so policy/v1beta1 (older
// kubectl, client libraries) arrives too.
func decodeEviction(req admission.Request) (*policyv1.Eviction, error) {
	raw := req.Object.Raw
	if len(raw) == 0 {
		return nil, errNoObject
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("decode eviction: %w", err)
	}
	if tm.Kind != "" && tm.Kind != "Eviction" {
		return nil, errors.New("unsupported kind " + short(tm.Kind) + ": want Eviction")
	}
	// The body's own apiVersion says how it is encoded; the request's kind
	// covers a body serialized without one.
	apiVersion := tm.APIVersion
	if apiVersion == "" {
		apiVersion = req.Kind.Group + "/" + req.Kind.Version
	}
	switch apiVersion {
	case policyv1.SchemeGroupVersion.String():
		ev := &policyv1.Eviction{}
		if err := json.Unmarshal(raw, ev); err != nil {
			return nil, fmt.Errorf("decode policy/v1 eviction: %w", err)
		}
		return ev, nil
	case policyv1beta1.SchemeGroupVersion.String():
		old := &policyv1beta1.Eviction{}
		if err := json.Unmarshal(raw, old); err != nil {
			return nil, fmt.Errorf("decode policy/v1beta1 eviction: %w", err)
		}
		// The two versions have the same fields; copy them explicitly
		// rather than trust the JSON shapes to stay the same.
		return &policyv1.Eviction{
			TypeMeta:      metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "Eviction"},
			ObjectMeta:    old.ObjectMeta,
			DeleteOptions: old.DeleteOptions,
		}, nil
	default:
		return nil, errors.New("unsupported eviction apiVersion " + short(apiVersion) + ": want policy/v1 or policy/v1beta1")
	}
}
