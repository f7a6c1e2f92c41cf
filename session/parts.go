package session

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/tunnel"
)

// Permissions lists what a run of c needs: registration's own, Events,
// what the selected webhooks and controllers declare, the tunnel's, and
// your CRDs'.
func Permissions(c *Config) ([]admission.Permission, error) {
	cfg := c.opts
	ctl, err := controllers.Permissions(cfg.Controllers)
	if err != nil {
		return nil, err
	}
	var tun []admission.Permission
	if cfg.Tunnel.Enabled {
		tun = tunnel.Permissions(cfg.Tunnel.Namespace)
	}
	return admission.MergePermissions(registration.Permissions(cfg.LeaseNamespace), eventPermissions(),
		webhooks.Permissions(cfg.Webhooks), ctl, tun, manifestPermissions(c.manifests), chainPermissions(cfg), policyEnforcePermissions(cfg)), nil
}

// parts are the webhooks and controllers one run serves and runs.
type parts struct {
	webhooks    []admission.Webhook
	controllers []controllers.Controller
}

// buildParts builds the selected built-ins and the extra webhooks on the
// shared informer factory and event recorders.
func buildParts(cfg Options, cl *Cluster, factory informers.SharedInformerFactory, recorders *eventRecorders, reg prometheus.Registerer, store *inspector.Store) (*parts, error) {
	deps := webhooks.Deps{Log: cfg.Log, Recorder: recorders.For}
	if store != nil {
		// The inspector shows, with each review, the Events it caused.
		deps.Recorder = func(name string) events.EventRecorder { return store.Tap(name, recorders.For(name)) }
	}
	if slices.Contains(cfg.Webhooks, webhooks.NamePodEviction) {
		deps.Pods = factory.Core().V1().Pods().Lister()
		deps.PodsSynced = factory.Core().V1().Pods().Informer().HasSynced
	}
	hooks, err := webhooks.Build(cfg.Webhooks, cfg.WebhookOptions, deps)
	if err != nil {
		return nil, err
	}
	ctls, err := controllers.Build(cfg.Controllers, controllers.Deps{
		Client: cl.Watch, Factory: factory, Log: cfg.Log, Recorder: recorders.For,
		Metrics: reg, ManagedByLabels: managedByLabels(),
	})
	if err != nil {
		return nil, err
	}
	return &parts{webhooks: append(hooks, cfg.Extra...), controllers: ctls}, nil
}

// ServedWebhooks are the webhooks a run of cfg would serve, built only to
// learn their names and paths: render serves nothing.
func ServedWebhooks(cfg Options) ([]admission.Webhook, error) {
	pods := corev1listers.NewPodLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	discard := func(string) events.EventRecorder { return &events.FakeRecorder{} }
	hooks, err := webhooks.Build(cfg.Webhooks, cfg.WebhookOptions, webhooks.Deps{Recorder: discard, Pods: pods})
	if err != nil {
		return nil, err
	}
	return append(hooks, cfg.Extra...), nil
}

// runnables wraps the controllers for the run.
func (p *parts) runnables() []func(context.Context) error {
	out := make([]func(context.Context) error, 0, len(p.controllers))
	for _, ctl := range p.controllers {
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

// names are every webhook and controller of the run, for the session Lease:
// other sessions read them to know what this one relies on.
func (p *parts) names() []string {
	out := names(p.webhooks)
	for _, c := range p.controllers {
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
	if slices.Contains(hookNames, webhooks.NameNodeStatus) {
		out[webhooks.NameNodeStatus] = func(ctx context.Context) error { return webhooks.RestoreNodes(ctx, cs, log) }
	}
	return out
}

func managedByLabels() map[string]string {
	return map[string]string{registration.LabelManagedBy: registration.ManagedByValue}
}

// names are the webhooks' names, what the template's `enabled NAME` tests.
func names(hooks []admission.Webhook) []string {
	out := make([]string, len(hooks))
	for i, h := range hooks {
		out[i] = h.Name
	}
	return out
}

// paths are the webhooks' paths, the only ones a template may point at.
func paths(hooks []admission.Webhook) []string {
	out := make([]string, len(hooks))
	for i, h := range hooks {
		out[i] = h.Path
	}
	return out
}

// RBAC is the least-privilege ClusterRole (and lease-namespace Role) for a
// run of c, bound to subjects: the same declarations Permissions returns
// and check verifies.
func RBAC(c *Config, name string, subjects []rbacv1.Subject) (*registration.RBAC, error) {
	perms, err := Permissions(c)
	if err != nil {
		return nil, err
	}
	return registration.NewRBAC(perms, name, subjects), nil
}

// RBACYAML is RBAC as YAML, with a header saying how it was made.
func RBACYAML(c *Config, name string, subjects []rbacv1.Subject) ([]byte, error) {
	r, err := RBAC(c, name, subjects)
	if err != nil {
		return nil, err
	}
	cfg := c.opts
	list := func(names []string) string { return cmp.Or(strings.Join(names, " "), "none") }
	yours := ""
	if len(cfg.User.Manifests) > 0 {
		yours = "\nand your webhooks and CRDs from " + strings.Join(cfg.User.Manifests, ", ") + ","
	}
	return r.YAML(fmt.Sprintf(`What hookback start needs to run webhooks [%s] and controllers [%s],%s
with the session Lease in namespace %q. Generated by hookback rbac from the
permissions hookback's parts declare (the same ones hookback check verifies).
Change the subjects to the users or groups who run hookback.`,
		list(cfg.Webhooks), list(cfg.Controllers), yours, cfg.LeaseNamespace))
}
