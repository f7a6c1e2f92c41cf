//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/hookback/hookback/admission"
)

// In binaries built with -tags e2e, serve a trivial webhook the end-to-end
// tests register through their own template: it labels whatever it admits,
// so a test can see through the apiserver that the call really arrived.
func init() {
	testWebhooks = func() []admission.Webhook {
		return []admission.Webhook{{Name: "e2e-mark", Path: "/e2e-mark", Handler: admission.HandlerFunc(markSeen)}}
	}
}

func markSeen(_ context.Context, req admission.Request) admission.Response {
	var obj struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	return admission.Patched("", admission.SetKeyOp("/metadata/labels", len(obj.Metadata.Labels) > 0, "hookback.dev/e2e-seen", "true"))
}
