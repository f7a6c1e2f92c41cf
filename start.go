package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/controller"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/server"
	"github.com/hookback/hookback/tunnel"
	"github.com/hookback/hookback/webhook"
)

// testWebhooks is set only in binaries built with the e2e tag.
var testWebhooks func() []admission.Webhook

// requestTimeout bounds every registration request; informers watch
// without one.
const requestTimeout = 30 * time.Second

// cluster is a connected, preflighted cluster.
type cluster struct {
	cfg *kubeconfig.Config
	// client has a request timeout; watch has none, for informers.
	client  kubernetes.Interface
	watch   kubernetes.Interface
	dynamic dynamic.Interface
}

// connect loads the kubeconfig and checks that the apiserver answers and
// that every permission the enabled parts need is granted, before anything
// is written.
func connect(c *cli.Context, log *slog.Logger, hookNames, ctlNames []string) (*cluster, error) {
	cfg, err := kubeconfig.Load(kubeconfigOptions(c))
	if err != nil {
		return nil, err
	}
	cs, err := cfg.Clientset(requestTimeout)
	if err != nil {
		return nil, err
	}
	v, err := kubeconfig.ServerVersion(c.Context, cs, cfg.Server)
	if err != nil {
		return nil, err
	}
	log.Info("connected", "server", cfg.Server, "context", cfg.Context, "version", v.GitVersion)
	perms, err := permissions(c.String("lease-namespace"), hookNames, ctlNames)
	if err != nil {
		return nil, err
	}
	results, err := kubeconfig.CheckPermissions(c.Context, cs, perms)
	if err != nil {
		return nil, err
	}
	if missing := kubeconfig.Missing(results); len(missing) > 0 {
		who, _ := kubeconfig.WhoAmI(c.Context, cs)
		return nil, kubeconfig.MissingError(who.Username, missing)
	}
	watch, err := cfg.Clientset(0)
	if err != nil {
		return nil, err
	}
	dyn, err := cfg.Dynamic(requestTimeout)
	if err != nil {
		return nil, err
	}
	return &cluster{cfg: cfg, client: cs, watch: watch, dynamic: dyn}, nil
}

// bindAddress is --bind-address, else the advertised host when this machine
// owns it, else every interface.
func bindAddress(flag, host string) string {
	if flag != "" {
		return flag
	}
	if tunnel.IsLocal(host) {
		return host
	}
	return ""
}

func runStart(c *cli.Context) error {
	log, session, err := loggerAndSession(c)
	if err != nil {
		return err
	}
	hookNames, ctlNames := list(c, "webhooks"), list(c, "controllers")
	if len(ctlNames) == 0 {
		ctlNames = []string{"none"}
	}
	cl, err := connect(c, log, hookNames, ctlNames)
	if err != nil {
		return err
	}
	decision, err := advertise(c.Context, log, c.String("advertise-address"), cl.cfg)
	if err != nil {
		return err
	}
	certs, err := newCerts(c, decision.Host, log)
	if err != nil {
		return err
	}
	defer certs.Stop()

	// Informers and the event sink outlive the run's context: controllers and
	// handlers may still use them while the session deregisters.
	infCtx, stopInformers := context.WithCancel(context.WithoutCancel(c.Context))
	factory := controller.NewInformerFactory(cl.watch, 0)
	recorders := newEventRecorders(infCtx, cl.watch)
	defer func() {
		stopInformers()
		recorders.Shutdown()
		factory.Shutdown()
	}()
	metrics := server.NewMetrics()

	hooks, ctls, err := buildParts(c, log, hookNames, ctlNames, cl, factory, recorders, metrics)
	if err != nil {
		return err
	}
	canary := server.NewCanary()
	hooks = append(hooks, admission.Webhook{Name: "canary", Path: server.CanaryPath, Handler: canary})
	srv, err := server.NewServer(server.ServerOptions{
		Address:       netJoin(bindAddress(c.String("bind-address"), decision.Host), c.Int("port")),
		HealthAddress: c.String("health-address"),
		TLS:           certs.TLSConfig(),
		Webhooks:      hooks,
		Log:           log,
		Metrics:       metrics,
	})
	if err != nil {
		return err
	}
	recorders.Start()
	factory.Start(infCtx.Done())

	sess, err := newSession(c, session, cl, srv, canary, hooks, ctls, certs, decision.Host, factory, log)
	if err != nil {
		return err
	}
	return sess.Run(c.Context)
}

// newSession wires one run: what to register, where, and what runs beside.
func newSession(c *cli.Context, session string, cl *cluster, srv *server.Server, canary *server.Canary,
	hooks []admission.Webhook, ctls []server.Runnable, certs server.Certs, host string,
	factory informers.SharedInformerFactory, log *slog.Logger,
) (*server.Session, error) {
	hookNames, ctlNames := list(c, "webhooks"), list(c, "controllers")
	hostname, _ := os.Hostname()
	return server.NewSession(server.SessionOptions{
		Client: cl.client, Dynamic: cl.dynamic, Server: srv, Canary: canary,
		Template: server.Template{Path: c.String("template"), Default: defaultTemplate},
		Data: server.TemplateData{URL: webhookURL(host, c.Int("port")),
			Session: session, Enabled: webhookNames(hooks)},
		Certs:           certs,
		LeaseNamespace:  c.String("lease-namespace"),
		Holder:          hostname + "/" + strconv.Itoa(os.Getpid()),
		HolderAlive:     holderAlive,
		LeaseDuration:   c.Duration("lease-duration"),
		RequireVerified: !c.Bool("no-verify"),
		VerifyTimeout:   c.Duration("verify-timeout"),
		Runnables:       ctls,
		Parts:           parts(hooks, ctlNames),
		Cleanups:        sharedCleanups(cl.client, log, hookNames, ctlNames),
		WaitForCaches:   func(ctx context.Context) error { return waitForCaches(ctx, factory) },
		Banner:          c.App.Writer,
		Log:             log,
	})
}

// buildParts builds the enabled webhooks and controllers on the shared
// informer factory and event broadcaster.
func buildParts(c *cli.Context, log *slog.Logger, hookNames, ctlNames []string, cl *cluster,
	factory informers.SharedInformerFactory, recorders *eventRecorders, metrics *server.Metrics,
) ([]admission.Webhook, []server.Runnable, error) {
	recorder := recorders.For
	deps := webhook.Deps{Log: log, Recorder: recorder}
	if enabled(hookNames, webhook.NamePodEviction) {
		deps.Pods = factory.Core().V1().Pods().Lister()
	}
	hooks, err := webhook.Build(hookNames, webhookOptions(c), deps)
	if err != nil {
		return nil, nil, err
	}
	if testWebhooks != nil {
		hooks = append(hooks, testWebhooks()...)
	}
	ctls, err := controller.Build(ctlNames, controller.Deps{
		Client: cl.watch, Factory: factory, Log: log, Recorder: recorder,
		Metrics: metrics.Registry, ManagedByLabels: managedByLabels(),
	})
	if err != nil {
		return nil, nil, err
	}
	runnables := make([]server.Runnable, 0, len(ctls))
	for _, ctl := range ctls {
		runnables = append(runnables, server.RunnableFunc(func(ctx context.Context) error {
			// Stopping before the caches synced is a normal shutdown.
			if err := ctl.Run(ctx, 2); err != nil && ctx.Err() == nil {
				return fmt.Errorf("controller %s: %w", ctl.Name(), err)
			}
			return nil
		}))
	}
	return hooks, runnables, nil
}

// sharedCleanups undo, per part, what the enabled parts wrote outside the
// session's own configurations.
func sharedCleanups(cs kubernetes.Interface, log *slog.Logger, hookNames, ctlNames []string) map[string]func(context.Context) error {
	out := map[string]func(context.Context) error{}
	if enabled(ctlNames, controller.ExecRBACName) {
		out[controller.ExecRBACName] = func(ctx context.Context) error {
			return controller.Cleanup(ctx, cs, []string{controller.ExecRBACName}, managedByLabels(), log)
		}
	}
	if enabled(hookNames, webhook.NameNodeStatus) {
		out[webhook.NameNodeStatus] = func(ctx context.Context) error { return webhook.RestoreNodes(ctx, cs, log) }
	}
	return out
}

// parts names every enabled webhook and controller, for the session Lease.
func parts(hooks []admission.Webhook, ctlNames []string) []string {
	out := webhookNames(hooks)
	for _, n := range controller.Names() {
		if enabled(ctlNames, n) {
			out = append(out, n)
		}
	}
	return out
}

func managedByLabels() map[string]string {
	return map[string]string{server.LabelManagedBy: server.ManagedByValue}
}

// enabled reports whether name is selected by a --webhooks or --controllers list.
func enabled(selected []string, name string) bool {
	return slices.Contains(selected, name) || slices.Contains(selected, "all")
}

func netJoin(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

func waitForCaches(ctx context.Context, factory informers.SharedInformerFactory) error {
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cache of %v did not sync: %w", typ, context.Cause(ctx))
		}
	}
	return nil
}

// holderAlive answers for a session Lease's holder, host/pid: a process on
// this host is checked with signal 0; one elsewhere is assumed alive until
// its Lease expires.
func holderAlive(holder string) bool {
	host, pidText, ok := strings.Cut(holder, "/")
	me, _ := os.Hostname()
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || host != me {
		return true
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}
