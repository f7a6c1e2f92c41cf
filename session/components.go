package session

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/controller"
)

// Components are the selected built-in webhooks and controllers with what
// they share, the informer factory and the Event recorders, for a run that
// is not a session: `hookback serve` in a pod builds them exactly as start
// does, so the handlers cannot differ between the laptop and the cluster.
type Components struct {
	Webhooks  []admission.Webhook
	parts     *parts
	factory   informers.SharedInformerFactory
	recorders *eventRecorders
	ctx       context.Context
	stop      context.CancelFunc
}

// NewComponents builds cfg's webhooks and controllers (cfg.Webhooks,
// cfg.Controllers, cfg.WebhookOptions, cfg.Extra) on watch, a client
// without a request timeout. Nothing runs until Start.
func NewComponents(cfg Config, watch kubernetes.Interface, metrics prometheus.Registerer) (*Components, error) {
	cfg = cfg.withDefaults()
	ctx, stop := context.WithCancel(context.Background())
	factory := controller.NewInformerFactory(watch, 0)
	recorders := newEventRecorders(ctx, watch)
	p, err := buildParts(cfg, &Cluster{Watch: watch}, factory, recorders, metrics, nil)
	if err != nil {
		stop()
		return nil, err
	}
	return &Components{Webhooks: p.webhooks, parts: p, factory: factory, recorders: recorders, ctx: ctx, stop: stop}, nil
}

// Start starts the informers and Event recording, until Shutdown.
func (c *Components) Start() {
	c.recorders.Start()
	c.factory.Start(c.ctx.Done())
}

// Synced reports whether every started informer has listed once.
func (c *Components) Synced() bool {
	for _, ok := range c.factory.WaitForCacheSync(closedChan) {
		if !ok {
			return false
		}
	}
	return true
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Controllers returns one function per controller that runs it until its
// context ends.
func (c *Components) Controllers() []func(context.Context) error { return c.parts.runnables() }

// Shutdown stops the informers and Event recording.
func (c *Components) Shutdown() {
	c.stop()
	c.recorders.Shutdown()
	c.factory.Shutdown()
}
