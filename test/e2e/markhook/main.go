// Command markhook is hookback with one more webhook, built the way any Go
// program embeds hookback (cli.Run with an Extension): the e2e suite runs it
// for the tests of serving and registration alone. Its /e2e-mark webhook
// labels whatever it admits, so a test can see through the apiserver that
// the call really arrived.
package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	mark := admission.Webhook{Name: "e2e-mark", Path: "/e2e-mark", Handler: admission.HandlerFunc(markSeen)}
	code := cli.Run(ctx, os.Args, cli.Extension{Webhooks: []admission.Webhook{mark}}, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
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
