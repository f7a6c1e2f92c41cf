package session

import (
	"context"
	"crypto/tls"
	"log/slog"
	"slices"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/internal/portholder"
	"github.com/hookback/hookback/server"
)

// AssemblyOptions choose what one hookback process serves and runs, and
// where: `hookback start` and the in-cluster `hookback serve` both fill it,
// so their handlers cannot differ between the laptop and the cluster.
type AssemblyOptions struct {
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
	// yours is what only start serves; nil in serve.
	yours *yours
}

// yours are start's additions: your webhooks and CRD conversions forwarded
// to your server, the canary, the inspector and the record directory.
type yours struct {
	user        *userWebhooks
	conversions *conversions
	// probes are served but are no part of the session (the canary): the
	// template and the Lease do not name them.
	probes    []admission.Webhook
	inspector InspectorConfig
	recordDir string
	// chain is start --chain's part; nil without.
	chain *chainRun
}

// Assembly is the parts of one process put together: the built-ins on one
// informer factory and one Event sink, the webhook server with its
// listeners bound, the inspector where enabled, and the controllers ready
// to run. Nothing runs until Start; whoever assembled it runs Server (and
// Inspector) and the controllers, and calls Shutdown last.
type Assembly struct {
	Server *server.Server
	// Inspector is the inspector's page; nil when disabled.
	Inspector *inspector.Server
	Metrics   *server.Metrics
	parts     *parts
	factory   informers.SharedInformerFactory
	recorders *eventRecorders
	// ctx is the informers' and the Event sink's, cancelled by Shutdown.
	ctx  context.Context
	stop context.CancelFunc
}

// Assemble builds and binds the parts of o: a busy port fails here, before
// anything is written to the cluster. The informers and the Event sink
// live on a context of their own, past ctx's end, until Shutdown: handlers
// and controllers still use them while a session deregisters.
func Assemble(ctx context.Context, o AssemblyOptions) (_ *Assembly, err error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	y := o.yours
	if y == nil {
		y = &yours{user: &userWebhooks{}, conversions: &conversions{}}
	}
	cfg := o.config()
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	a := &Assembly{Metrics: server.NewMetrics(), factory: controllers.NewInformerFactory(o.Watch, 0),
		recorders: newEventRecorders(bg, o.Watch), ctx: bg, stop: stop}
	defer func() {
		if err != nil {
			a.Shutdown()
		}
	}()
	store := newInspectorStore(cfg)
	if err := y.attach(cfg, store, a.Metrics); err != nil {
		return nil, err
	}
	if a.parts, err = buildParts(cfg, &Cluster{Watch: o.Watch}, a.factory, a.recorders, a.Metrics.Registry, store); err != nil {
		return nil, err
	}
	hooks := slices.Concat(y.chain.wrap(a.parts.webhooks), y.chain.wrap(y.user.hooks), y.probes)
	rec, err := newRecorder(cfg, store)
	if err != nil {
		return nil, err
	}
	handlers, err := y.conversions.handlers(cfg, rec, a.Metrics.Registry)
	if err != nil {
		return nil, err
	}
	if a.Inspector, err = newInspector(cfg, store, hooks, y.user, y.conversions, a.factory); err != nil {
		return nil, portholder.Explain(err)
	}
	a.Server, err = server.NewServer(server.ServerOptions{Address: o.Address, HealthAddress: o.HealthAddress,
		TLS: o.TLS, Webhooks: hooks, Log: o.Log, Metrics: a.Metrics, Recorder: rec, Handlers: handlers})
	if err != nil {
		if a.Inspector != nil {
			_ = a.Inspector.Close()
		}
		return nil, portholder.Explain(err)
	}
	return a, nil
}

// config is the view of o the part builders read.
func (o AssemblyOptions) config() Options {
	cfg := Options{Webhooks: o.Webhooks, Controllers: o.Controllers, WebhookOptions: o.WebhookOptions, Extra: o.Extra, Log: o.Log}
	if o.yours != nil {
		cfg.Inspector, cfg.RecordDir = o.yours.inspector, o.yours.recordDir
	}
	return cfg
}

// attach gives your webhooks' late-answer and shadow reports the
// inspector's store, the record directory and the metrics.
func (y *yours) attach(cfg Options, store *inspector.Store, m *server.Metrics) error {
	if err := y.chain.attach(cfg, store); err != nil {
		return err
	}
	if y.user.late != nil {
		if err := y.user.late.attach(cfg, store); err != nil {
			return err
		}
	}
	if y.user.shadow == nil {
		return nil
	}
	if err := y.user.shadow.attach(cfg, store); err != nil {
		return err
	}
	return y.user.shadow.register(m.Registry)
}

// Start starts the informers and Event recording, until Shutdown.
func (a *Assembly) Start() {
	a.recorders.Start()
	a.factory.Start(a.ctx.Done())
}

// Controllers returns one function per controller that runs it until its
// context ends.
func (a *Assembly) Controllers() []func(context.Context) error { return a.parts.runnables() }

// Synced reports whether every started informer has listed once.
func (a *Assembly) Synced() bool {
	for _, ok := range a.factory.WaitForCacheSync(closedChan) {
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
func (a *Assembly) Shutdown() {
	if a.Server != nil {
		_ = a.Server.Close()
	}
	if a.Inspector != nil {
		_ = a.Inspector.Close()
	}
	a.stop()
	a.recorders.Shutdown()
	a.factory.Shutdown()
}
