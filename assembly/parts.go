package assembly

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/registration"
)

// Parts are the webhooks and controllers one process serves and runs.
type Parts struct {
	Webhooks    []admission.Webhook
	Controllers []controllers.Controller
}

// buildParts builds the selected built-ins and the extra webhooks on the
// shared informer factory and Event recorders; tap, when set, wraps each
// webhook's recorder.
func buildParts(o Options, factory informers.SharedInformerFactory, ev *Events, reg prometheus.Registerer, tap EventTap) (*Parts, error) {
	deps := webhooks.Deps{Log: o.Log, Recorder: ev.For}
	if tap != nil {
		deps.Recorder = func(name string) events.EventRecorder { return tap(name, ev.For(name)) }
	}
	if webhooks.NeedsPods(o.Webhooks) {
		deps.Pods = factory.Core().V1().Pods().Lister()
		deps.PodsSynced = factory.Core().V1().Pods().Informer().HasSynced
	}
	hooks, err := webhooks.Build(o.Webhooks, o.WebhookOptions, deps)
	if err != nil {
		return nil, err
	}
	ctls, err := controllers.Build(o.Controllers, controllers.Deps{
		Client: o.Watch, Factory: factory, Log: o.Log, Recorder: ev.For,
		Metrics: reg, ManagedByLabels: managedByLabels(),
	})
	if err != nil {
		return nil, err
	}
	return &Parts{Webhooks: append(hooks, o.Extra...), Controllers: ctls}, nil
}

// ServedWebhooks are the webhooks a process of these built-ins and extra
// webhooks would serve, built only to learn their names and paths: render
// serves nothing.
func ServedWebhooks(names []string, opts webhooks.Options, extra []admission.Webhook) ([]admission.Webhook, error) {
	pods := corev1listers.NewPodLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	discard := func(string) events.EventRecorder { return &events.FakeRecorder{} }
	hooks, err := webhooks.Build(names, opts, webhooks.Deps{Recorder: discard, Pods: pods})
	if err != nil {
		return nil, err
	}
	return append(hooks, extra...), nil
}

// Runnables returns one function per controller that runs it until its
// context ends.
func (p *Parts) Runnables() []func(context.Context) error {
	out := make([]func(context.Context) error, 0, len(p.Controllers))
	for _, ctl := range p.Controllers {
		out = append(out, func(ctx context.Context) error {
			// Stopping before the caches synced is a normal shutdown.
			if err := ctl.Run(ctx, 2); err != nil && ctx.Err() == nil {
				return fmt.Errorf("controller %s: %w", ctl.Name(), err)
			}
			return nil
		})
	}
	return out
}

// Names are every webhook and controller, for the session Lease: other
// sessions read them to know what this one relies on.
func (p *Parts) Names() []string {
	var out []string
	for _, h := range p.Webhooks {
		out = append(out, h.Name)
	}
	for _, c := range p.Controllers {
		out = append(out, c.Name())
	}
	return out
}

// SharedCleanups undo, per part, what the parts wrote outside the session's
// own configurations, shared between sessions (exec RBAC, node CPU).
func SharedCleanups(cs kubernetes.Interface, log *slog.Logger, hookNames, ctlNames []string) map[string]func(context.Context) error {
	out := map[string]func(context.Context) error{}
	if slices.Contains(ctlNames, controllers.ExecRBACName) {
		out[controllers.ExecRBACName] = func(ctx context.Context) error {
			return controllers.Cleanup(ctx, cs, []string{controllers.ExecRBACName}, managedByLabels(), log)
		}
	}
	maps.Copy(out, webhooks.Restores(cs, log, hookNames))
	return out
}

// CleanupShared undoes what the built-ins wrote outside any session's
// configurations (SharedCleanups) for every part no live session but
// except still relies on.
func CleanupShared(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, leaseNamespace, except string, now func() time.Time, log *slog.Logger) error {
	r := &registration.Registrar{Client: cs, Dynamic: dyn, Log: log}
	namespaces, err := r.LeaseNamespaces(ctx, leaseNamespace)
	if err != nil {
		return err
	}
	live, err := registration.LiveParts(ctx, cs, namespaces, except, now)
	if err != nil {
		return err
	}
	shared := SharedCleanups(cs, log, webhooks.Names(), controllers.Names())
	return registration.RunCleanups(ctx, shared, live, log)
}

// managedByLabels mark what the built-ins create as hookback's.
func managedByLabels() map[string]string {
	return map[string]string{registration.LabelManagedBy: registration.ManagedByValue}
}
