// Command crupstream is a webhook server written with controller-runtime
// (real third-party code, its own module so hookback's go.mod does not
// depend on it): the e2e suite runs it as the upstream a kubebuilder user
// would debug through hookback. /validate denies pods named deny-* (or
// -deny-prefix: two builds that differ in one rule, for audit and shadow);
// /mutate-pods labels pods cr-seen=yes.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func main() {
	port := flag.Int("port", 9443, "port to serve on, on 127.0.0.1")
	certDir := flag.String("cert-dir", "", "directory with tls.crt and tls.key")
	flag.StringVar(&denyPrefix, "deny-prefix", denyPrefix, "/validate denies objects whose name starts with this")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: *port, CertDir: *certDir})
	srv.Register("/validate", &admission.Webhook{Handler: admission.HandlerFunc(validate)})
	srv.Register("/mutate-pods", &admission.Webhook{Handler: admission.HandlerFunc(mutate)})
	if err := srv.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "crupstream:", err)
		os.Exit(1)
	}
}

var denyPrefix = "deny-"

func validate(_ context.Context, req admission.Request) admission.Response {
	if strings.HasPrefix(req.Name, denyPrefix) {
		return admission.Denied("controller-runtime says no to " + req.Name)
	}
	return admission.Allowed("")
}

func mutate(_ context.Context, req admission.Request) admission.Response {
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if len(pod.Labels) == 0 {
		return admission.Patched("", jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/labels", Value: map[string]string{"cr-seen": "yes"}})
	}
	return admission.Patched("", jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/labels/cr-seen", Value: "yes"})
}
