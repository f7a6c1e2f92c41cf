package session

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookback/hookback/conversion"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/record"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/upstream"
)

// conversions are the CRDs of the user's manifests and the conversion
// webhook served for each one with strategy Webhook.
type conversions struct {
	crds  []registration.CRD
	hooks []conversion.Webhook
	// installed and redirected are what the session did, for its exit.
	installed, redirected []string
}

// loadConversions reads the CRDs the intake found and builds a forwarding
// converter for each conversion webhook, to the upstream its target maps to.
func loadConversions(u *userWebhooks, log *slog.Logger) (*conversions, error) {
	c := &conversions{}
	if u.manifests == nil {
		return c, nil
	}
	crds, err := manifests.CRDsOf(u.manifests)
	if err != nil {
		return nil, err
	}
	c.crds = crds
	for _, crd := range crds {
		if crd.Conversion == nil {
			continue
		}
		up, err := upstreamFor(u.spec, *crd.Conversion)
		if err != nil {
			return nil, fmt.Errorf("conversion webhook of CustomResourceDefinition %q: %w", crd.Name, err)
		}
		opts := u.spec.UpstreamOptions(up)
		opts.Log = log
		conv, err := upstream.NewConverter(opts, crd.Conversion.UpstreamPath)
		if err != nil {
			return nil, err
		}
		c.hooks = append(c.hooks, conversion.Webhook{CRD: crd.Name, Path: crd.Conversion.Path, Converter: conv})
	}
	return c, nil
}

// handlers are the conversion webhooks' HTTP handlers by path, recorded
// with the admissions (rec may be nil) and counted in reg.
func (c *conversions) handlers(log *slog.Logger, rec admissionhttp.Recorder, reg prometheus.Registerer) (map[string]http.Handler, error) {
	if c == nil || len(c.hooks) == 0 {
		return nil, nil
	}
	m, err := conversion.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	opts := conversion.Options{Log: log, Metrics: m}
	if sr, ok := rec.(admissionhttp.ServedRecorder); ok {
		opts.Recorder = sr
	}
	out := map[string]http.Handler{}
	for _, w := range c.hooks {
		out[w.Path] = conversion.NewHTTPHandler(w, opts)
	}
	return out, nil
}

// crds is the session's CRD writer.
// crds is the session's one CRDs, so what it has said (a CRD that differs
// from the manifests) is said once, not on every re-apply.
func (r *run) crds() *registration.CRDs {
	if r.crdWriter == nil {
		r.crdWriter = &registration.CRDs{Dynamic: r.cluster.Dynamic, Session: r.cfg.Session, LeaseRef: r.leaseRef, Log: r.cfg.Log}
	}
	return r.crdWriter
}

// ensureCRDs installs the missing CRDs and points the selected conversion
// webhooks at hookback with the current caBundle.
func (r *run) ensureCRDs(ctx context.Context, objs *plan.Objects, bundle string) error {
	if r.conversions == nil || len(objs.CRDs) == 0 {
		return nil
	}
	to := registration.Target{URL: r.url, CABundle: bundle}
	if r.tunnel != nil {
		// The apiserver reaches hookback only through the relay's Service.
		svc := r.tunnel.Service()
		to.Service = &svc
	}
	installed, redirected, err := r.crds().Ensure(ctx, objs.CRDs, objs.Redirect, to)
	r.conversions.installed = appendNew(r.conversions.installed, installed...)
	r.conversions.redirected = appendNew(r.conversions.redirected, redirected...)
	return err
}

// restoreCRDs gives every redirected CRD its conversion back: the first
// step of shutdown, since conversion has no failurePolicy and reads in
// another version fail while it points at a stopped hookback.
func (r *run) restoreCRDs(ctx context.Context) error {
	if r.conversions == nil || len(r.conversions.crds) == 0 {
		return nil
	}
	_, err := r.crds().Restore(ctx)
	if len(r.conversions.installed) > 0 {
		r.cfg.Log.Info("CustomResourceDefinitions hookback installed are left in place (deleting one deletes every object of it)",
			"crds", strings.Join(r.conversions.installed, ","))
	}
	return err
}

func appendNew(s []string, vs ...string) []string {
	for _, v := range vs {
		found := false
		for _, x := range s {
			found = found || x == v
		}
		if !found {
			s = append(s, v)
		}
	}
	return s
}

// replayTarget extends the inspector's replay to the conversion webhooks
// (each replayed to its upstream, through the same checks) and names them
// as upstream webhooks in sources.
func (c *conversions) replayTarget(admissions record.Target, sources map[string]string, log *slog.Logger) record.Target {
	if c == nil || len(c.hooks) == 0 {
		return admissions
	}
	byPath := map[string]conversion.Webhook{}
	for _, w := range c.hooks {
		byPath[w.Path] = w
		sources["convert/"+w.CRD] = inspector.SourceUpstream
	}
	return func(e record.Entry) (http.Handler, error) {
		if w, ok := byPath[e.Path]; ok {
			return conversion.NewHTTPHandler(w, conversion.Options{Log: log}), nil
		}
		return admissions(e)
	}
}
