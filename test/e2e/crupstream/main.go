// Command crupstream is a webhook server written with controller-runtime
// (real third-party code, its own module so hookback's go.mod does not
// depend on it): the e2e suite runs it as the upstream a kubebuilder user
// would debug through hookback. /validate denies pods named deny-* (or
// -deny-prefix: two builds that differ in one rule, for audit and shadow);
// /mutate-pods labels pods cr-seen=yes; /mutate-append appends an x to the
// annotation crupstream.example.com/calls on every call, as a naive
// injector does, so that a second call with its own output changes the
// object again (hookback test and lint --probe find it); /mutate-widgets and
// /validate-widgets judge a custom resource (widgets.go). --metrics-bind-address serves
// controller-runtime's own metrics, its count of requests per webhook path
// among them.
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
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func main() {
	host := flag.String("host", "127.0.0.1", "address to serve on")
	port := flag.Int("port", 9443, "port to serve on")
	metricsAddr := flag.String("metrics-bind-address", "0", "address to serve controller-runtime's metrics on; 0: none")
	certDir := flag.String("cert-dir", "", "directory with tls.crt and tls.key")
	flag.StringVar(&denyPrefix, "deny-prefix", denyPrefix, "/validate denies objects whose name starts with this")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	metrics, err := metricsserver.NewServer(metricsserver.Options{BindAddress: *metricsAddr}, nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crupstream:", err)
		os.Exit(1)
	}
	if metrics != nil { // nil: --metrics-bind-address 0
		go func() {
			if err := metrics.Start(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "crupstream: metrics:", err)
			}
		}()
	}
	srv := webhook.NewServer(webhook.Options{Host: *host, Port: *port, CertDir: *certDir})
	srv.Register("/validate", &admission.Webhook{Handler: admission.HandlerFunc(validate)})
	srv.Register("/mutate-pods", &admission.Webhook{Handler: admission.HandlerFunc(mutate)})
	srv.Register("/mutate-append", &admission.Webhook{Handler: admission.HandlerFunc(appendCall)})
	srv.Register("/mutate-widgets", &admission.Webhook{Handler: admission.HandlerFunc(mutateWidget)})
	srv.Register("/validate-widgets", &admission.Webhook{Handler: admission.HandlerFunc(validateWidget)})
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

// callsAnnotation is what /mutate-append appends to.
const callsAnnotation = "crupstream.example.com/calls"

func appendCall(_ context.Context, req admission.Request) admission.Response {
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if len(pod.Annotations) == 0 {
		return admission.Patched("", jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/annotations", Value: map[string]string{callsAnnotation: "x"}})
	}
	return admission.Patched("", jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/annotations/crupstream.example.com~1calls", Value: pod.Annotations[callsAnnotation] + "x"})
}
