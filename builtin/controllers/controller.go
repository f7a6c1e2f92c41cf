// Package controllers holds hookback's built-in controllers. Each one watches
// the cluster through the informer factory shared with the webhooks, queues
// keys in a typed rate-limited workqueue and reconciles them with its own
// workers; Build selects them by name and Run drives one until its context
// ends.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
)

// Controller is one built-in controller. Contract: Run blocks until ctx is
// done, waits for its informers' caches before working, and returns only
// after its workers stopped. It may be called again once it has returned (an
// in-cluster replica leading a second time), never twice at once. Its only
// error is caches that never synced before ctx ended; that error wraps ctx's
// cause, so a caller can tell a shutdown during startup
// (errors.Is(err, context.Canceled)).
type Controller interface {
	Name() string
	Run(ctx context.Context, workers int) error
}

// Deps is what the controllers need from the caller.
type Deps struct {
	Client kubernetes.Interface
	// Factory is shared with the webhooks. The caller starts it after Build;
	// Build registers the informers the selected controllers use.
	Factory informers.SharedInformerFactory
	Log     *slog.Logger
	// Recorder returns the Event recorder for a controller, its reporting
	// controller being the controller's name. Nil records no Events.
	Recorder func(controller string) events.EventRecorder
	// Metrics receives the workqueue metrics. Nil: no metrics.
	Metrics prometheus.Registerer
	// ManagedByLabels go on every object a controller creates.
	ManagedByLabels map[string]string
}

// The controllers' names, as --controllers accepts them.
const (
	PodNameLabelName = "pod-name-label"
	ExecRBACName     = "exec-rbac"
)

// builders is in Names order, which is also the order Build returns.
var builders = []struct {
	name  string
	build func(Deps, workqueue.MetricsProvider) Controller
}{
	{PodNameLabelName, func(d Deps, m workqueue.MetricsProvider) Controller { return newPodNameLabel(d, m) }},
	{ExecRBACName, func(d Deps, m workqueue.MetricsProvider) Controller { return newExecRBAC(d, m) }},
}

// Names returns the built-in controllers' names.
func Names() []string {
	names := make([]string, len(builders))
	for i, b := range builders {
		names[i] = b.name
	}
	return names
}

// Build returns the named controllers, in Names() order. The names are
// already resolved (no "all" or "none": see session.Select); an empty list
// builds none, and an unknown name is an error listing the valid ones.
func Build(selected []string, deps Deps) ([]Controller, error) {
	want, err := selectControllers(selected)
	if err != nil {
		return nil, err
	}
	if len(want) == 0 {
		return nil, nil
	}
	if deps.Client == nil || deps.Factory == nil {
		return nil, errors.New("build controllers: client and informer factory are required")
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	var metrics workqueue.MetricsProvider
	if deps.Metrics != nil {
		m, err := newQueueMetrics(deps.Metrics)
		if err != nil {
			return nil, fmt.Errorf("build controllers: %w", err)
		}
		metrics = m
	}
	var out []Controller
	for _, b := range builders {
		if want[b.name] {
			out = append(out, b.build(deps, metrics))
		}
	}
	return out, nil
}

// selectControllers turns resolved names into a set, refusing unknown ones.
func selectControllers(selected []string) (map[string]bool, error) {
	valid := Names()
	set := map[string]bool{}
	for _, n := range selected {
		if !slices.Contains(valid, n) {
			return nil, fmt.Errorf("unknown controller %q: valid controllers are %s", n, strings.Join(valid, ", "))
		}
		set[n] = true
	}
	return set, nil
}

// recorderFor returns the Event recorder of one controller.
func recorderFor(d Deps, name string) events.EventRecorder {
	if d.Recorder == nil {
		return nopRecorder{}
	}
	if r := d.Recorder(name); r != nil {
		return r
	}
	return nopRecorder{}
}

func loggerFor(d Deps, name string) *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log.With("controller", name)
}
