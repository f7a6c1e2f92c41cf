package session

import (
	"context"
	"fmt"
	"time"

	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/reload"
)

// render is what the session registers now, with bundle, the current
// caBundle (user-provided certificate files may change it), and your
// manifests as last read: Config.Objects, as render prints it.
func (r *run) render(bundle string) (*plan.Objects, error) {
	to := registration.Target{URL: r.url, CABundle: bundle}
	if r.tunnel != nil {
		// The apiserver reaches hookback only through the relay's Service.
		svc := r.tunnel.Service()
		to.Service = &svc
	}
	objs, err := r.config.Objects(plan.Placement{Target: to, LeaseRef: r.leaseRef, Scope: r.cfg.Scope, Manifests: r.user.manifests,
		Observers: r.policyObservers, Observe: r.chain.observe})
	if err != nil {
		return nil, err
	}
	r.scopeNotes = objs.Notes
	r.takeOver.split(objs, r.cfg.Session)
	r.policies.learn(objs.Configurations.Objects)
	r.chain.learn(objs.Configurations.Objects)
	r.kinds.learn(objs.Configurations.Objects)
	return objs, nil
}

// applied tells a staged certificate source which caBundle the cluster's
// configurations now carry.
func (r *run) applied(bundle string) {
	if s, ok := r.certs.(certs.Staged); ok {
		s.Applied(bundle)
	}
}

func (r *run) canaryKey() string {
	return registration.KindValidatingHook + "/hookback-canary-" + r.cfg.Session
}

// reloads are the changes the hot-reload watchers report, read by loop.
type reloads struct {
	// reapply: the template or the certificate changed.
	reapply chan struct{}
	// manifests: your manifests changed.
	manifests chan struct{}
}

// watch starts the template, manifests and certificate watchers. run
// starts them before its first step, so that each takes its baseline
// before the manifests are applied: an edit saved while start registers,
// or just after ready, is reported (the channels keep one change each
// until loop reads them) rather than folded into the baseline and missed.
func (r *run) watch() reloads {
	ch := reloads{reapply: make(chan struct{}, 1), manifests: make(chan struct{}, 1)}
	bg := r.working.Context()
	if r.cfg.Template.Path != "" {
		w, err := reload.New(reload.Options{Files: []string{r.cfg.Template.Path}, Interval: r.cfg.ReloadInterval, Debounce: 20 * time.Millisecond,
			Log: r.cfg.Log, OnChange: func(context.Context) { trySend(ch.reapply) }})
		if err != nil {
			r.cfg.Log.Warn("template hot reload disabled", "error", err)
		} else {
			r.working.Wait(func() { _ = w.Start(bg) })
		}
	}
	r.watchManifests(bg, ch.manifests)
	wait, err := r.certs.Watch(bg, ch.reapply)
	if err != nil {
		r.cfg.Log.Warn("certificate hot reload disabled", "error", err)
	} else if wait != nil {
		r.working.Wait(wait)
	}
	return ch
}

// loop keeps the session alive: heartbeat, template and certificate reloads,
// and a stop on ctx or on a failed server or controller.
func (r *run) loop(ctx context.Context, ch reloads) error {
	r.working.Go(func(ctx context.Context) error {
		r.heartbeat.Run(ctx, r.cfg.LeaseDuration/6, r.reverifyLater, func(err error) { r.lost <- err })
		return nil
	})
	for {
		select {
		case <-ctx.Done():
			r.cfg.Log.Info("stopping: deregistering first so the apiserver stops calling")
			return nil
		case <-r.errs.Stopped():
			return fmt.Errorf("stopped unexpectedly: %w", r.errs.First())
		case err := <-r.lost:
			// Another run of this session holds the Lease now, and what the
			// session registered is that run's: shutdown must not undo it.
			r.acquired = false
			return fmt.Errorf("%w: stopped without deregistering, the webhook configurations are the other run's now", err)
		case <-ch.reapply:
			r.reapply(ctx)
		case <-ch.manifests:
			r.reloadManifests(ctx)
		case why := <-r.regained:
			// The configurations, and a relay, may have been removed
			// meanwhile (a stale cleanup by another run), and the apiserver
			// is a new process: apply again, then prove again that it calls
			// back.
			r.redeployRelay(ctx, why)
			r.reapply(ctx)
			r.reverify(ctx, why)
		}
	}
}

// reverify runs the canary again after the session regained the cluster.
func (r *run) reverify(ctx context.Context, why string) {
	rtt, err := r.verify(ctx)
	if err != nil {
		r.cfg.Log.Warn("not verified again after "+why+"; webhooks fail open until the apiserver can call back", "error", err)
		return
	}
	r.cfg.Log.Info("verified again: the apiserver calls back", "after", why, "rtt", rtt.Round(time.Microsecond))
}

func (r *run) reapply(ctx context.Context) {
	start := time.Now()
	bundle := r.certs.CABundle()
	objs, err := r.render(bundle)
	if err != nil {
		r.cfg.Log.Error("template not applied; the previous configuration stays live", "error", err)
		return
	}
	reg := objs.Configurations
	r.drift.Set(reg.Objects)
	if err := r.drift.Own(func() error { return r.registrar.Apply(ctx, reg) }); err != nil {
		r.cfg.Log.Error("re-apply failed; will retry on the next change", "error", err)
		return
	}
	if err := r.takeOver.take(ctx); err != nil {
		r.cfg.Log.Error("take-over not re-applied; will retry on the next change", "error", err)
	}
	if err := r.ensureCRDs(ctx, objs, bundle); err != nil {
		r.cfg.Log.Error("CRD conversion not re-applied; will retry on the next change", "error", err)
	}
	r.applied(bundle)
	r.cfg.Log.Info("webhook configuration re-applied", "webhooks", len(reg.Webhooks()), "took", time.Since(start))
}

// cleanupShared runs the cleanup of every part no other live session runs.
func (r *run) cleanupShared(ctx context.Context) error {
	cleanups := assembly.SharedCleanups(r.cluster.Client, r.cfg.Log, r.cfg.Webhooks, r.cfg.Controllers)
	if len(cleanups) == 0 {
		return nil
	}
	namespaces, err := r.registrar.LeaseNamespaces(ctx, r.cfg.LeaseNamespace)
	if err != nil {
		return err
	}
	live, err := registration.LiveParts(ctx, r.cluster.Client, namespaces, r.cfg.Session, r.cluster.Now)
	if err != nil {
		return err
	}
	return registration.RunCleanups(ctx, cleanups, live, r.cfg.Log)
}

// reverifyLater asks the loop to verify again, saying why.
func (r *run) reverifyLater(why string) {
	select {
	case r.regained <- why:
	default:
	}
}

func trySend(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
