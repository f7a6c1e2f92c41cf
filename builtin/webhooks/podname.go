package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/hookback/hookback/admission"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podNameHandler denies pods whose name or generateName contains a banned
// word (/validate-pod-name, pods CREATE and UPDATE).
//
// A pod's name is immutable, so on UPDATE a denial protects nothing by
// itself; it only blocks other writers. UPDATEs that leave the spec alone
// (labels, annotations, finalizers, ownerReferences: the Job controller
// removing its tracking finalizer, kubectl label, hookback's own controllers)
// and UPDATEs of a pod being deleted are therefore allowed; UPDATEs that
// change the spec of a banned-name pod are still denied.
type podNameHandler struct {
	words []string // as configured, for the message
	lower []string // lower-cased, for matching
	log   *slog.Logger
}

func newPodNameHandler(words []string, log *slog.Logger) *podNameHandler {
	h := &podNameHandler{log: log}
	for _, w := range words {
		w = strings.TrimSpace(w)
		if w == "" {
			continue // Options.Validate rejects these; never match everything
		}
		h.words = append(h.words, w)
		h.lower = append(h.lower, strings.ToLower(w))
	}
	return h
}

// Handle implements admission.Handler.
func (h *podNameHandler) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	// Only the pod itself has a name to judge: pods/status and other
	// subresources, or other kinds, are not this webhook's business.
	if req.SubResource != "" || !isPod(req) {
		return admission.Allowed("")
	}
	meta, err := h.decode(req)
	if err != nil {
		// A validating webhook cannot judge what it cannot read; 400 tells
		// the client its object is the problem.
		h.log.Warn("cannot decode pod", "error", err)
		return admission.Errored(http.StatusBadRequest, err)
	}
	if meta == nil {
		return admission.Allowed("") // an UPDATE let through whatever the name
	}
	name := meta.Name
	if name == "" {
		name = req.Name
	}
	for _, candidate := range []string{name, meta.GenerateName} {
		if word, ok := h.banned(candidate); ok {
			return admission.Denied(fmt.Sprintf("pod name contains %q", word))
		}
	}
	return admission.Allowed("")
}

// podNames is all a CREATE is judged on. Decoding only these fields, not
// a whole typed pod, is most of the call's time saved: through the
// apiserver, building the typed pod took 300 µs of a 20 KB pod's call on
// a 2-core machine (bench/JOURNAL.md, "Where hookback's time per call goes").
type podNames struct {
	Metadata struct {
		Name         string `json:"name"`
		GenerateName string `json:"generateName"`
	} `json:"metadata"`
}

// decode returns the names to judge, or nil when an UPDATE is let through
// whatever its name (updateAllowed).
func (h *podNameHandler) decode(req admission.Request) (*metav1.ObjectMeta, error) {
	if req.Operation == admissionv1.Update {
		pod, err := decodePod(req)
		if err != nil {
			return nil, err
		}
		if h.updateAllowed(req, pod) {
			return nil, nil
		}
		return &pod.ObjectMeta, nil
	}
	if len(req.Object.Raw) == 0 {
		return nil, errNoObject
	}
	var p podNames
	if err := jsonv2.Unmarshal(req.Object.Raw, &p); err != nil {
		return nil, fmt.Errorf("decode pod: %w", err)
	}
	return &metav1.ObjectMeta{Name: p.Metadata.Name, GenerateName: p.Metadata.GenerateName}, nil
}

// updateAllowed reports whether an UPDATE of pod is let through whatever its
// name: the pod is being deleted, or its spec is unchanged from the old
// object. An old object that is missing or cannot be decoded gives false, so
// the name is judged as before.
func (h *podNameHandler) updateAllowed(req admission.Request, pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return true
	}
	if len(req.OldObject.Raw) == 0 {
		return false
	}
	old := &corev1.Pod{}
	if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
		h.log.Warn("cannot decode old pod; judging the name", "error", err)
		return false
	}
	return equality.Semantic.DeepEqual(old.Spec, pod.Spec)
}

// banned returns the first configured word name contains, ignoring case.
func (h *podNameHandler) banned(name string) (string, bool) {
	if name == "" {
		return "", false
	}
	name = strings.ToLower(name)
	for i, w := range h.lower {
		if strings.Contains(name, w) {
			return h.words[i], true
		}
	}
	return "", false
}
