//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/hookback/hookback/server"
)

// In binaries built with -tags e2e, serve a trivial webhook the end-to-end
// tests register through their own template: it labels whatever it admits,
// so a test can see through the apiserver that the call really arrived.
func init() {
	testWebhooks = func() []server.Webhook {
		return []server.Webhook{{Name: "e2e-mark", Path: "/e2e-mark", Handler: server.HandlerFunc(markSeen)}}
	}
}

func markSeen(_ context.Context, req server.Request) server.Response {
	var obj map[string]any
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return server.Errored(http.StatusBadRequest, err)
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		meta["labels"] = labels
	}
	labels["hookback.dev/e2e-seen"] = "true"
	return server.Patched("", req.Object.Raw, obj)
}
