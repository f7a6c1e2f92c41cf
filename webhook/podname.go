package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/hookback/hookback/server"
)

// podNameHandler denies pods whose name or generateName contains a banned
// word (/validate-pod-name, pods CREATE and UPDATE).
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

// Handle implements server.Handler.
func (h *podNameHandler) Handle(_ context.Context, req server.Request) server.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return server.Allowed("")
	}
	// Only the pod itself has a name to judge: pods/status and other
	// subresources, or other kinds, are not this webhook's business.
	if req.SubResource != "" || !isPod(req) {
		return server.Allowed("")
	}
	pod, err := decodePod(req)
	if err != nil {
		// A validating webhook cannot judge what it cannot read; 400 tells
		// the client its object is the problem.
		h.log.Warn("cannot decode pod", "error", err)
		return server.Errored(http.StatusBadRequest, err)
	}
	name := pod.Name
	if name == "" {
		name = req.Name
	}
	for _, candidate := range []string{name, pod.GenerateName} {
		if word, ok := h.banned(candidate); ok {
			return server.Denied(fmt.Sprintf("pod name contains %q", word))
		}
	}
	return server.Allowed("")
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
