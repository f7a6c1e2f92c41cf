// Command crmanager is a controller-runtime manager as kubebuilder
// scaffolds one (its own module, so hookback's go.mod does not depend on
// controller-runtime): the Widget API of e2e.hookback.dev in two versions,
// v1 the hub and v2 a spoke, served by the manager's conversion webhook at
// /convert, with a defaulter (color blue) and a validator (size at most 10)
// on v1 (--drop-v2-color makes the conversion to v2 lose spec.color). The e2e suite debugs it through hookback; the benchmark calls it
// directly too.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func main() {
	port := flag.Int("port", 9443, "webhook port, on 127.0.0.1")
	certDir := flag.String("cert-dir", "", "directory with tls.crt and tls.key (controller-runtime's default when empty)")
	flag.BoolVar(&dropV2Color, "drop-v2-color", false, "convert to v2 without spec.color, a spoke that loses a field the hub keeps")
	flag.Parse()
	if err := run(*port, *certDir); err != nil {
		fmt.Fprintln(os.Stderr, "crmanager:", err)
		os.Exit(1)
	}
}

func run(port int, certDir string) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := addToScheme(scheme); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
	})
	if err != nil {
		return fmt.Errorf("new manager: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &Widget{}).WithDefaulter(defaulter{}).WithValidator(validator{}).Complete(); err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

type defaulter struct{}

// Default colors a widget blue.
func (defaulter) Default(_ context.Context, w *Widget) error {
	if w.Spec.Color == "" {
		w.Spec.Color = "blue"
	}
	return nil
}

type validator struct{}

func (validator) ValidateCreate(_ context.Context, w *Widget) (admission.Warnings, error) {
	return nil, validate(w)
}

func (validator) ValidateUpdate(_ context.Context, _, w *Widget) (admission.Warnings, error) {
	return nil, validate(w)
}

func (validator) ValidateDelete(context.Context, *Widget) (admission.Warnings, error) {
	return nil, nil
}

// validate refuses a size above 10, as a field error: the apiserver answers
// 422 Invalid with the cause.
func validate(w *Widget) error {
	if w.Spec.Size <= 10 {
		return nil
	}
	return apierrors.NewInvalid(v1GV.WithKind("Widget").GroupKind(), w.Name,
		field.ErrorList{field.Invalid(field.NewPath("spec", "size"), w.Spec.Size, "must be at most 10 (crmanager's validator)")})
}
