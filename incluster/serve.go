package incluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/internal/lifecycle"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/server"
)

// Serve runs one replica until ctx is done: it serves every selected
// webhook, applies the webhook configurations with service references (and
// the shared CA's caBundle), and runs the controllers while it leads. It
// never deregisters: the install outlives any one pod, and `hookback
// uninstall` removes it. A clean stop returns nil.
func Serve(ctx context.Context, cfg ServeConfig) error {
	started := time.Now()
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	caSecret := cfg.CertFile == ""
	perms, err := ServePermissions(cfg.Namespace, caSecret, cfg.Webhooks, cfg.Controllers)
	if err != nil {
		return err
	}
	cl, err := kubeconfig.Connect(ctx, cfg.Kubeconfig, cfg.Log, perms)
	if err != nil {
		return err
	}
	return serveOn(ctx, cfg, cl, started)
}

// serveOn is the rest of Serve, on a connected cluster (tests pass fake
// clients here). From Assemble on, the listeners are bound: every return
// goes through the Assembly's Shutdown, which releases them.
func serveOn(ctx context.Context, cfg ServeConfig, cl *kubeconfig.Cluster, started time.Time) error {
	crt, err := servingCerts(ctx, cfg, cl)
	if err != nil {
		return err
	}
	defer crt.Stop()
	objs, err := configurations(cfg)
	if err != nil {
		return err
	}
	// The parts, assembled as start assembles them.
	a, err := assembly.Assemble(ctx, assembly.Options{Webhooks: cfg.Webhooks, Controllers: cfg.Controllers,
		WebhookOptions: cfg.WebhookOptions, Watch: cl.Watch, TLS: crt.TLSConfig(),
		Address: net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.Port)), HealthAddress: cfg.HealthAddress, Log: cfg.Log})
	if err != nil {
		return err
	}
	defer a.Shutdown()
	lead, err := newLeader(cl.Client, cfg, a.Parts.Runnables(), a.Metrics.Registry, cl.Now)
	if err != nil {
		return err
	}
	a.Start()
	r := &replica{cfg: cfg, cl: cl, srv: a.Server, certs: crt, parts: a, leader: lead, objs: objs, started: started}
	return r.run(ctx)
}

// servingCerts are cert-manager's files, or a leaf for the Service's names
// from the CA in the install's Secret.
func servingCerts(ctx context.Context, cfg ServeConfig, cl *kubeconfig.Cluster) (certs.Certs, error) {
	names := DNSNames(Name, cfg.Namespace)
	if cfg.CertFile != "" {
		return certs.NewFileCerts(context.WithoutCancel(ctx), certs.FileTLSOptions{CertFile: cfg.CertFile, KeyFile: cfg.KeyFile,
			CAFile: cfg.CAFile, Host: names[0], Interval: 2 * time.Second, Log: cfg.Log})
	}
	ca, err := sharedCA(ctx, cl.Client, cfg.Namespace, cfg.Log)
	if err != nil {
		return nil, err
	}
	// Leaves go to a fresh directory under /tmp (the pod's only writable
	// place) and are issued again on every start: the shared CA is what
	// must last, not them.
	dir, err := os.MkdirTemp("", "hookback-serve-")
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	crt, err := certs.NewSelfSigned(ctx, certs.TLSOptions{CA: ca, Host: names[0], Names: names[1:],
		StateDir: dir, Log: cfg.Log, LeafLifetime: 30 * 24 * time.Hour})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return tempCerts{Certs: crt, dir: dir}, nil
}

// tempCerts removes its leaves' directory on Stop.
type tempCerts struct {
	certs.Certs
	dir string
}

func (t tempCerts) Stop() {
	t.Certs.Stop()
	_ = os.RemoveAll(t.dir)
}

// replica is a running serve.
type replica struct {
	cfg    ServeConfig
	cl     *kubeconfig.Cluster
	srv    *server.Server
	certs  certs.Certs
	parts  *assembly.Process
	leader *leader
	objs   []*unstructured.Unstructured
	// started is when Serve began, for the ready line.
	started time.Time
}

func (r *replica) run(ctx context.Context) (err error) {
	errs := lifecycle.NewErrors()
	// The server outlives ctx by ShutdownDelay: a stopping replica keeps
	// answering while the endpoints drop it. Leading (the controllers) is
	// its child and stops first.
	serving := lifecycle.NewGroup(context.WithoutCancel(ctx), errs)
	leading := serving.Child()
	serving.GoUntilStopped("the webhook server", r.srv.Start)
	leading.GoUntilStopped("leader election", r.leader.Run)
	defer func() {
		r.srv.SetReady(false)
		leading.Stop()
		r.cfg.Log.Info("stopping: not ready, still answering", "for", r.cfg.ShutdownDelay)
		time.Sleep(r.cfg.ShutdownDelay)
		serving.Stop()
		err = errors.Join(err, errs.Err())
	}()
	if err := r.register(ctx); err != nil {
		return err
	}
	changed := make(chan struct{}, 1)
	// The watchers keep the certificate fresh while the replica answers,
	// through the shutdown delay.
	wait, err := r.certs.Watch(serving.Context(), changed)
	if err != nil {
		return err
	}
	if wait != nil {
		serving.Wait(wait)
	}
	r.cfg.Log.Info("serving", "after", time.Since(r.started).Round(time.Millisecond), "service", Name+"."+r.cfg.Namespace+".svc",
		"port", r.cfg.Port, "health", r.srv.HealthAddr().String(), "identity", r.cfg.Identity)
	return r.loop(ctx, changed, errs)
}

// loop keeps readiness true while the replica can serve (and, leading, its
// caches have synced), and re-applies the configurations when the caBundle
// changes, until ctx is done or a part fails.
func (r *replica) loop(ctx context.Context, changed <-chan struct{}, errs *lifecycle.Errors) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	announced := false
	for {
		ready := !r.leader.leading.Load() || r.parts.Synced()
		r.srv.SetReady(ready)
		if ready && !announced {
			announced = true
			fmt.Fprintf(r.cfg.Out, "hookback is ready in %s: serving %s as %s (https :%d, health %s); the Lease %s/%s decides who runs the controllers\n",
				time.Since(r.started).Round(time.Millisecond), Name+"."+r.cfg.Namespace+".svc", r.cfg.Identity, r.cfg.Port,
				r.srv.HealthAddr(), r.cfg.Namespace, LeaseName)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-errs.Stopped():
			return fmt.Errorf("stopped unexpectedly: %w", errs.First())
		case <-changed:
			if err := r.register(ctx); err != nil {
				r.cfg.Log.Error("re-apply the webhook configurations after a certificate change", "error", err)
			}
		case <-tick.C:
		}
	}
}

// register server-side-applies the configurations with the current
// caBundle; an empty one is left to cert-manager's cainjector.
func (r *replica) register(ctx context.Context) error {
	bundle := r.certs.CABundle()
	reg := &registration.Registrar{Dynamic: r.cl.Dynamic, Log: r.cfg.Log}
	for _, o := range r.objs {
		o = o.DeepCopy()
		if bundle != "" {
			if err := setCABundle(o, bundle); err != nil {
				return err
			}
		}
		if err := reg.ApplyObject(ctx, o); err != nil {
			return fmt.Errorf("register: %w", err)
		}
	}
	if s, ok := r.certs.(certs.Staged); ok {
		s.Applied(bundle)
	}
	r.cfg.Log.Info("webhook configurations applied", "count", len(r.objs), "caBundle", bundle != "")
	return nil
}

// configurations are the template's, as render --in-cluster prints them.
func configurations(cfg ServeConfig) ([]*unstructured.Unstructured, error) {
	objs, err := webhookConfigurations(Options{Namespace: cfg.Namespace, Webhooks: cfg.Webhooks,
		Controllers: cfg.Controllers, Template: cfg.Template})
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*unstructured.Unstructured))
	}
	return out, nil
}

// setCABundle sets every webhook's clientConfig.caBundle.
func setCABundle(o *unstructured.Unstructured, bundle string) error {
	hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
	if err != nil {
		return fmt.Errorf("%s %q: %w", o.GetKind(), o.GetName(), err)
	}
	for _, h := range hooks {
		if hm, ok := h.(map[string]any); ok {
			if cc, ok := hm["clientConfig"].(map[string]any); ok {
				cc["caBundle"] = bundle
			}
		}
	}
	return unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
}
