package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/informers"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/chain"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/server"
)

// chainRun is start --chain's part of a run: the observers served beside
// your webhooks, the wrapper that reports your webhooks' answers, the
// informers of the cluster's configurations and policies, and the
// publisher of the views (inspector, --record-dir, log).
type chainRun struct {
	collector *chain.Collector
	joiner    *chain.Joiner
	publisher *chain.Publisher
	factory   informers.SharedInformerFactory
	// sinks are filled in by attach, once the inspector's store exists.
	sinks   []func(chain.Published)
	session string
	log     *slog.Logger
}

// newChainRun builds start --chain's parts on cl, or nil when --chain is
// off. Their webhooks go to y's probes (served, but not the session's
// own), and wrap has your webhooks report their answers.
func newChainRun(on bool, auditLog, session string, log *slog.Logger, cl *kubeconfig.Cluster, y *yours) *chainRun {
	if !on {
		return nil
	}
	c := &chainRun{factory: informers.NewSharedInformerFactory(cl.Watch, 0), session: session, log: log}
	catalog := chain.NewInformerCatalog(c.factory)
	c.joiner = &chain.Joiner{}
	c.collector = &chain.Collector{Joiner: c.joiner}
	c.publisher = chain.NewPublisher(chain.Publisher{Catalog: catalog.Catalog, NamespaceLabels: catalog.NamespaceLabels,
		Sinks: []func(chain.Published){c.publish}, Log: log})
	if auditLog != "" {
		audit := &chain.AuditLog{Path: auditLog}
		c.publisher.Audit = func(ch *chain.Chain, conf string) *chain.Record {
			rec, err := audit.Lookup(ch, conf)
			if err != nil {
				log.Warn("chain: the audit log cannot be read: views name candidates only", "error", err)
			}
			return rec
		}
	}
	c.joiner.Done = c.publisher.Done
	y.probes = append(y.probes, c.collector.Webhooks()...)
	return c
}

// attach sends the views to the inspector's store and the record
// directory.
func (c *chainRun) attach(s sinks) error {
	if c == nil {
		return nil
	}
	if store := s.store; store != nil {
		// The page explains a view when it shows it: a chain nobody
		// opens is never explained.
		c.sinks = append(c.sinks, func(p chain.Published) {
			store.SetChain(p.Webhook, p.UID, func() []byte {
				_, b, err := p.View()
				if err != nil {
					b, _ = json.Marshal(map[string]string{"omitted": "the view could not be made: " + err.Error()})
				}
				return b
			})
		})
	}
	if s.recordDir != "" {
		dir, err := chain.DirSink(s.recordDir, s.log)
		if err != nil {
			return err
		}
		c.sinks = append(c.sinks, dir)
	}
	return nil
}

// register exposes the views the publisher's bounded queue dropped
// (hookback_chain_views_dropped_total): a request whose view is missing
// from the inspector was one of them.
func (c *chainRun) register(m *server.Metrics) error {
	if c == nil || m == nil {
		return nil
	}
	dropped := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "hookback_chain_views_dropped_total",
		Help: "start --chain: completed chains not explained because the publisher's queue was full"},
		func() float64 { return float64(c.publisher.Dropped()) })
	if err := m.Registry.Register(dropped); err != nil {
		return fmt.Errorf("chain: register metrics: %w", err)
	}
	return nil
}

func (c *chainRun) publish(p chain.Published) {
	for _, s := range c.sinks {
		s(p)
	}
}

// start runs the informers and the publisher on the working group.
func (c *chainRun) start(r *run) {
	if c == nil {
		return
	}
	r.working.Go(func(ctx context.Context) error {
		c.factory.Start(ctx.Done())
		c.publisher.Run(ctx, c.joiner)
		c.factory.Shutdown()
		return nil
	})
}

// observe derives the observer configurations from objs, the session's
// rendered configurations (Placement.Observe): Config.Objects narrows them
// by the scope with the rest.
func (c *chainRun) observe(objs []*unstructured.Unstructured, t registration.Target, leaseRef string) ([]*unstructured.Unstructured, error) {
	if c == nil {
		return nil, nil
	}
	obs, yours, err := observers(c.session, c.log, objs, t, leaseRef)
	if err != nil || obs == nil {
		return nil, err
	}
	c.collector.SetYours(maps.Clone(yours))
	return obs, nil
}

// learn tells the publisher what the session registers, objs being its
// configurations as applied (named, scoped, pointed at a relay's Service):
// the views take only those for yours, so that another session registered
// from the same manifests is one more configuration of the chain.
func (c *chainRun) learn(objs []*unstructured.Unstructured) {
	if c == nil {
		return
	}
	r, err := chain.RegisteredFrom(c.session, objs)
	if err != nil {
		c.log.Warn("chain: your configurations are not known: views name no configuration of yours", "error", err)
	}
	c.publisher.SetRegistered(r)
}

// chainObserve is Placement.Observe for what session registers without
// running it (render): the same observers start --chain applies, with
// nothing to collect; nil when on (--chain) is false.
func chainObserve(on bool, session string, log *slog.Logger) func([]*unstructured.Unstructured, registration.Target, string) ([]*unstructured.Unstructured, error) {
	if !on {
		return nil
	}
	return func(objs []*unstructured.Unstructured, t registration.Target, leaseRef string) ([]*unstructured.Unstructured, error) {
		obs, _, err := observers(session, log, objs, t, leaseRef)
		return obs, err
	}
}

// observers are chain.Observers for the session's objs, labelled and
// annotated as the session's; none (and a warning) when no mutating
// webhook is registered.
func observers(session string, log *slog.Logger, objs []*unstructured.Unstructured, t registration.Target, leaseRef string) ([]*unstructured.Unstructured, map[string]bool, error) {
	obs, yours, err := chain.Observers(objs, chain.ObserverOptions{Session: session, URL: t.URL, CABundle: t.CABundle,
		Labels:      map[string]string{registration.LabelManagedBy: registration.ManagedByValue, registration.LabelSession: session},
		Annotations: map[string]string{registration.AnnotationLease: leaseRef}})
	if errors.Is(err, chain.ErrNoMutatingWebhook) {
		log.Warn("chain: no mutating webhook is registered, so there is no chain to tell")
		return nil, nil, nil
	}
	return obs, yours, err
}

// wrap has each of hooks report its answers to the chain; without --chain
// they are returned as they are.
func (c *chainRun) wrap(hooks []admission.Webhook) []admission.Webhook {
	if c == nil {
		return hooks
	}
	out := make([]admission.Webhook, len(hooks))
	for i, h := range hooks {
		out[i] = c.collector.Wrap(h)
	}
	return out
}
