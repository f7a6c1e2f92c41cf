package webhooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"unicode/utf8"

	"github.com/hookback/hookback/admission"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
)

// Event reasons the webhooks record.
const (
	// ReasonSidecarSkipped: pod-sidecar was asked to inject but could not.
	ReasonSidecarSkipped = "SidecarSkipped"
	// ReasonLifespanInvalid: pod-lifespan found a label value outside 1..14.
	ReasonLifespanInvalid = "LifespanInvalid"
	// ReasonEvicting: pod-eviction saw an eviction of the pod.
	ReasonEvicting = "Evicting"
)

// Event actions: what the reporting webhook was doing, in UpperCamelCase as
// the events API asks.
const (
	actionInjectSidecar  = "InjectSidecar"
	actionAddTolerations = "AddTolerations"
	actionEvict          = "Evict"
)

// noteLimit is the events API's cap on a note (1 KiB); longer notes make the
// apiserver reject the Event.
const noteLimit = 1024

// eventer records Warning Events about pods a mutating webhook had to let
// through unchanged.
type eventer struct {
	rec events.EventRecorder
	log *slog.Logger
}

// warn records a Warning Event about pod, except for dry-run requests: the
// object will not be persisted, so there is nothing for anyone to look at,
// and NoneOnDryRun promises the apiserver no side effects.
func (e eventer) warn(req admission.Request, pod *corev1.Pod, reason, action, note string) {
	target := podEventTarget(pod, req.Namespace)
	e.log.Info("webhook let the pod through unchanged", "reason", reason, "note", note,
		"target", target.Kind+" "+target.Namespace+"/"+target.Name, "dry_run", req.IsDryRun())
	if req.IsDryRun() {
		return
	}
	// The note goes through "%s": it quotes user-written annotation values,
	// which must not be read as a format string.
	e.rec.Eventf(target, nil, corev1.EventTypeWarning, reason, action, "%s", truncate(note, noteLimit))
}

// podEventTarget chooses what a Warning Event about pod is recorded against:
// its controlling owner (a ReplicaSet's pods are what a user's Deployment
// makes, and the owner is where `kubectl describe` shows it), else the pod,
// else its namespace. On CREATE a pod from generateName has no name yet, and
// no pod has a UID before it is persisted, so the pod itself is only usable
// when it was named.
//
// The reference is built by hand rather than from the object: the recorder
// would need the pod's GroupVersionKind from its scheme, and admission
// objects carry no UID on CREATE anyway.
func podEventTarget(pod *corev1.Pod, reqNamespace string) *corev1.ObjectReference {
	ns := pod.Namespace
	if ns == "" {
		ns = reqNamespace
	}
	if owner := metav1.GetControllerOf(pod); owner != nil {
		return &corev1.ObjectReference{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID, Namespace: ns}
	}
	if pod.Name != "" {
		return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, Namespace: ns, UID: pod.UID}
	}
	// A Namespace is cluster-scoped, but a reference without a namespace
	// puts the Event into "default", where nobody working in ns looks. With
	// the namespace set the Event lands in ns (`kubectl events -n ns`), which
	// the events API accepts.
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: ns, Namespace: ns}
}

// podRef refers to a stored pod, for Events about it.
func podRef(pod *corev1.Pod) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion}
}

// errNoObject is returned when a request carries no object to decide on.
var errNoObject = errors.New("request carries no object")

// isPod reports whether the request is about a core/v1 Pod. A webhook
// registered against the wrong resource must not decode, say, a Deployment
// into a Pod and patch it.
func isPod(req admission.Request) bool {
	return req.Kind.Group == "" && req.Kind.Kind == "Pod"
}

// createdPod returns the pod of a pods CREATE request, or ok=false when the
// request is anything else or its pod cannot be read; mutating webhooks then
// let it through unchanged (fail open: a pod this webhook cannot read is not
// its to block).
func createdPod(req admission.Request, log *slog.Logger) (pod *corev1.Pod, ok bool) {
	if req.Operation != admissionv1.Create || req.SubResource != "" || !isPod(req) {
		return nil, false
	}
	pod, err := decodeCreatedPod(req)
	if err != nil {
		log.Warn("cannot decode pod; letting it through unchanged", "error", err)
		return nil, false
	}
	return pod, true
}

// decodePod decodes the request's pod.
func decodePod(req admission.Request) (*corev1.Pod, error) {
	if len(req.Object.Raw) == 0 {
		return nil, errNoObject
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return nil, fmt.Errorf("decode pod: %w", err)
	}
	return pod, nil
}

// truncate shortens s to at most n bytes without splitting a rune.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "..."
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// short quotes a user-written value for a message, bounded so a huge
// annotation cannot bloat a warning, an Event or a log line.
func short(s string) string {
	return fmt.Sprintf("%q", truncate(s, 64))
}
