// Command crmanager is a controller-runtime manager as kubebuilder
// scaffolds one (its own module, so hookback's go.mod does not depend on
// controller-runtime): the Widget API of e2e.hookback.dev in two versions,
// v1 the hub and v2 a spoke, served by the manager's conversion webhook at
// /convert, with a defaulter (color blue) and a validator (size at most 10)
// on v1, and a validator (count at most 10) on v2. --drop-v2-color makes
// the conversion to v2 lose spec.color; --refuse-v2-color COLOR makes it
// refuse a widget of that color, as the kubebuilder multiversion tutorial's
// conversion refuses a CronJob whose schedule "@hourly" its v2 cannot
// express; --materialize-empty makes both conversions write an absent
// spec.template as empty structures, as the tutorial's value-typed
// spec.jobTemplate does (the template is declared only by the CRD variant
// config/crd/variants/widgets_with_template.yaml). The e2e suite debugs it
// through hookback; the benchmark calls it directly too.
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
	flag.StringVar(&refuseV2Color, "refuse-v2-color", "", "refuse to convert a widget of this spec.color to v2")
	flag.BoolVar(&materializeEmpty, "materialize-empty", false, "convert an absent spec.template to an empty one, as a conversion between value-typed fields does")
	flag.StringVar(&leaderID, "leader-elect-id", "", "lead with controller-runtime's leader election under this Lease name (off when empty)")
	flag.StringVar(&leaderNamespace, "leader-elect-namespace", "", "the namespace of that Lease")
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
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          leaderID != "",
		LeaderElectionID:        leaderID,
		LeaderElectionNamespace: leaderNamespace,
		WebhookServer:           webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
	})
	if err != nil {
		return fmt.Errorf("new manager: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &Widget{}).WithDefaulter(defaulter{}).WithValidator(validator{}).Complete(); err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &WidgetV2{}).WithValidator(validatorV2{}).Complete(); err != nil {
		return fmt.Errorf("v2 webhooks: %w", err)
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// leaderID and leaderNamespace turn on leader election, with
// controller-runtime's defaults (15s lease, 2s retry), as a scaffolded
// manager run with --leader-elect.
var leaderID, leaderNamespace string

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

type validatorV2 struct{}

func (validatorV2) ValidateCreate(_ context.Context, w *WidgetV2) (admission.Warnings, error) {
	return nil, validateV2(w)
}

func (validatorV2) ValidateUpdate(_ context.Context, _, w *WidgetV2) (admission.Warnings, error) {
	return nil, validateV2(w)
}

func (validatorV2) ValidateDelete(context.Context, *WidgetV2) (admission.Warnings, error) {
	return nil, nil
}

// validateV2 refuses a count above 10, v2's name for v1's size.
func validateV2(w *WidgetV2) error {
	if w.Spec.Count <= 10 {
		return nil
	}
	return apierrors.NewInvalid(v2GV.WithKind("Widget").GroupKind(), w.Name,
		field.ErrorList{field.Invalid(field.NewPath("spec", "count"), w.Spec.Count, "must be at most 10 (crmanager's v2 validator)")})
}
