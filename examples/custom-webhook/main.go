// Command custom-webhook is hookback with a webhook of its own: everything
// `hookback start` does (serve, register, verify, run the built-ins,
// deregister), plus a validating webhook that denies pods running an image
// without a pinned tag. Build and run it like hookback itself:
//
//	go build -o custom-webhook . && ./custom-webhook start --webhooks none --controllers none
//
// Its template (webhooks.yaml.tmpl, embedded) registers its own webhook and,
// when enabled with --webhooks, the built-in pod-name.
package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/cli"
)

//go:embed webhooks.yaml.tmpl
var template []byte

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	pinned := admission.Webhook{Name: "pinned-images", Path: "/validate-pinned-images", Handler: admission.HandlerFunc(pinnedImages)}
	code := cli.Run(ctx, os.Args, cli.Extension{Template: template, Webhooks: []admission.Webhook{pinned}}, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// pinnedImages denies a pod whose containers use the latest tag or none.
func pinnedImages(_ context.Context, req admission.Request) admission.Response {
	var pod corev1.Pod
	if err := req.DecodeObject(&pod); err != nil {
		// Not ours to block: a pod this webhook cannot read is let through.
		return admission.Allowed("")
	}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		if !pinned(c.Image) {
			return admission.Denied(fmt.Sprintf("container %q uses image %q: pin a tag or digest other than latest", c.Name, c.Image))
		}
	}
	return admission.Allowed("")
}

func pinned(image string) bool {
	if strings.Contains(image, "@") {
		return true
	}
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, ok := strings.Cut(name, ":")
	return ok && tag != "latest"
}
