// Package assembly puts together the parts one hookback process serves and
// runs: the built-in webhooks and controllers on one informer factory and one
// Event sink, and the webhook server with its listeners bound. `hookback
// start` on a laptop and `hookback serve` in a pod both assemble through it,
// so their handlers cannot differ; what only start serves (your webhooks, the
// canary, --record-dir) comes in through Additions. Nothing here displays,
// records, tests or audits: start binds the inspector's page itself, over
// the Process's Served webhooks and Informers.
package assembly

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/internal/portholder"
	"github.com/hookback/hookback/server"
)

// Options choose what one process serves and runs, and where.
type Options struct {
	// Webhooks and Controllers are the built-ins selected by name.
	Webhooks, Controllers []string
	WebhookOptions        webhooks.Options
	// Extra are an embedding program's webhooks, served and registered
	// like the built-ins.
	Extra []admission.Webhook
	// Watch is the client of the informers, the controllers and the
	// Events: one without a request timeout.
	Watch kubernetes.Interface
	// TLS serves the webhooks on Address (host:port); HealthAddress serves
	// /healthz, /readyz and /metrics.
	TLS                    *tls.Config
	Address, HealthAddress string
	Log                    *slog.Logger
	// Additions are start's; nil in serve.
	Additions Additions
}

// Additions is what a process serves beside the built-ins.
//
// Contract: Assemble calls Attach, then Serve, each once and in that order,
// before it returns; an error from either fails Assemble, which then
// releases what it had bound.
type Additions interface {
	// Attach is given the process's metrics. It returns the tap the
	// built-ins' Event recorders go through (the inspector shows each
	// review's Events), or nil.
	Attach(m *server.Metrics) (EventTap, error)
	// Serve is given the built-ins (Options.Extra included) and returns
	// everything the server serves.
	Serve(builtins []admission.Webhook, reg prometheus.Registerer) (Serving, error)
}

// EventTap wraps the Event recorder of the named webhook.
type EventTap func(webhook string, rec events.EventRecorder) events.EventRecorder

// Serving is what the webhook server serves.
type Serving struct {
	// Webhooks are served in this order.
	Webhooks []admission.Webhook
	// Recorder keeps their reviews; nil keeps none.
	Recorder admissionhttp.Recorder
	// Handlers are other handlers by path (CRD conversions).
	Handlers map[string]http.Handler
}

// Process is the parts of one process put together. Nothing runs until
// Start; whoever assembled it runs Server and the controllers, and calls
// Shutdown last.
type Process struct {
	Server *server.Server
	// Served are the webhooks Server serves, in its order.
	Served  []admission.Webhook
	Metrics *server.Metrics
	Parts   *Parts
	events  *Events
	factory informers.SharedInformerFactory
	// ctx is the informers' and the Event sink's, cancelled by Shutdown.
	ctx  context.Context
	stop context.CancelFunc
}

// Assemble builds and binds the parts of o: a busy port fails here, before
// anything is written to the cluster. The informers and the Event sink
// live on a context of their own, past ctx's end, until Shutdown: handlers
// and controllers still use them while a session deregisters.
func Assemble(ctx context.Context, o Options) (_ *Process, err error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	p := &Process{Metrics: server.NewMetrics(), factory: controllers.NewInformerFactory(o.Watch, 0),
		events: NewEvents(bg, o.Watch), ctx: bg, stop: stop}
	defer func() {
		if err != nil {
			p.Shutdown()
		}
	}()
	var tap EventTap
	if o.Additions != nil {
		if tap, err = o.Additions.Attach(p.Metrics); err != nil {
			return nil, err
		}
	}
	if p.Parts, err = buildParts(o, p.factory, p.events, p.Metrics.Registry, tap); err != nil {
		return nil, err
	}
	serving := Serving{Webhooks: p.Parts.Webhooks}
	if o.Additions != nil {
		if serving, err = o.Additions.Serve(p.Parts.Webhooks, p.Metrics.Registry); err != nil {
			return nil, err
		}
	}
	p.Served = serving.Webhooks
	p.Server, err = server.NewServer(server.ServerOptions{Address: o.Address, HealthAddress: o.HealthAddress,
		TLS: o.TLS, Webhooks: serving.Webhooks, Log: o.Log, Metrics: p.Metrics, Recorder: serving.Recorder, Handlers: serving.Handlers})
	if err != nil {
		return nil, portholder.Explain(err)
	}
	return p, nil
}

// Informers is the process's informer factory, which the built-ins read:
// whatever replays a review of a built-in outside the server (start's
// inspector) reads the same caches.
func (p *Process) Informers() informers.SharedInformerFactory { return p.factory }

// Start starts the informers and Event recording, until Shutdown.
func (p *Process) Start() {
	p.events.Start()
	p.factory.Start(p.ctx.Done())
}

// Events are the process's Event recorders.
func (p *Process) Events() *Events { return p.events }

// Synced reports whether every started informer has listed once.
func (p *Process) Synced() bool {
	for _, ok := range p.factory.WaitForCacheSync(closedChan) {
		if !ok {
			return false
		}
	}
	return true
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Shutdown stops the informers and Event recording, and releases the
// listeners: whoever assembled fails after Assemble bound them, before or
// after serving, calls only Shutdown, and the ports are free again.
func (p *Process) Shutdown() {
	if p.Server != nil {
		_ = p.Server.Close()
	}
	p.stop()
	p.events.Shutdown()
	p.factory.Shutdown()
}
