// Package session is one run of `hookback start`. From a plan.Config,
// Run connects and checks every permission, decides the address the
// apiserver dials, obtains a certificate for it, serves, takes the session
// Lease, starts the controllers, registers the webhooks, proves with a
// canary that the apiserver calls back, and keeps all that alive until its
// context ends. It builds and owns what the Config only describes: the
// clients, the policy engine (--policy), the chain's observers (--chain),
// your webhooks' forwarders. Then it undoes it in reverse: deregister
// first, so the cluster stops calling, then stop the controllers, stop
// serving, clean up shared objects and release the Lease.
//
// The other exports are the runs that share start's assembly of your
// webhooks without registering it (Render, Audit, TestTargets), or
// register it once per fault (Drill), and what start leaves behind
// (Cleanup).
package session

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/internal/errkind"
	"github.com/hookback/hookback/internal/lifecycle"
	"github.com/hookback/hookback/internal/portholder"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/server"
	"github.com/hookback/hookback/tunnel"
)

// Run runs one session of c until ctx is done. A clean stop returns nil.
// It does not change c.
func Run(ctx context.Context, c *plan.Config) error {
	started := time.Now()
	perms, err := plan.Permissions(c)
	if err != nil {
		return err
	}
	// 1. The cluster, and every permission the enabled parts declare.
	cl, err := kubeconfig.Connect(ctx, c.Options().Kubeconfig, c.Options().Log, perms)
	if err != nil {
		return err
	}
	return runOn(ctx, c, cl, started)
}

// runOn is the rest of Run, on a connected cluster (tests pass fake
// clients here). cfg is the run's own copy of c's options: what the run
// resolves (the scope) it sets there.
func runOn(ctx context.Context, c *plan.Config, cl *kubeconfig.Cluster, started time.Time) (err error) {
	cfg := c.Options()
	if cfg.Scope, err = resolveScope(ctx, cfg.Scope, cfg.Log, cl); err != nil {
		return err
	}
	// --take-over: the deployed operators, and c with their configurations.
	takeOver, c, err := discoverTakeOver(ctx, c, cl, cfg)
	if err != nil {
		return err
	}
	if err := takeOver.confirm(cl, cfg); err != nil {
		return err
	}
	// 2. The address the apiserver dials: this machine's, or with --tunnel
	// the Service of the session's relay.
	leaseRef := cfg.LeaseRef()
	decision, tun, err := reach(ctx, cl, cfg.AdvertiseAddress, cfg.Tunnel, cfg.Session, leaseRef, cfg.Log)
	if err != nil {
		return err
	}
	// 3. A certificate for that address.
	bind := listenHost(cfg.BindAddress, decision.Host, tun)
	crt, err := certs.New(ctx, certOptions(cfg.Certs, decision.Host, bind, tun))
	if err != nil {
		return err
	}
	defer crt.Stop()
	// Your webhooks and CRD conversions, forwarded to your server, with the
	// serving certificate start writes for it.
	pair, err := upstreamCert(&cfg.User, cfg.Certs.StateDir, cfg.Log)
	if err != nil {
		return err
	}
	y, err := loadYours(c, cfg.User, cfg.Scope)
	if err != nil {
		return err
	}
	defer y.user.shadow.summary()
	// start --policy's engine, on the cluster's namespaces and params.
	if y.policies, err = readPolicies(cfg.Policies, cfg.Log); err != nil {
		return errkind.New(plan.ErrInvalidConfig, err)
	}
	policyObservers, err := y.policies.observers()
	if err != nil {
		return err
	}
	if err := y.policies.connect(ctx, cl.Client, cl.Dynamic); err != nil {
		return err
	}
	defer y.policies.summary()
	defer y.user.late.drain()
	// 4. The parts assembled, as serve assembles them, and the listeners
	// bound: a busy port fails before anything is written to the cluster.
	canary := registration.NewCanary()
	y.probes = []admission.Webhook{{Name: "canary", Path: registration.CanaryPath, Handler: canary}}
	y.chain = newChainRun(cfg.Chain, cfg.ChainAuditLog, cfg.Session, cfg.Log, cl, y)
	a, err := assembly.Assemble(ctx, assembly.Options{Webhooks: cfg.Webhooks, Controllers: cfg.Controllers,
		WebhookOptions: cfg.WebhookOptions, Extra: slices.Concat(cfg.Extra, plan.ObserverWebhooks(cfg.Observers), plan.ObserverWebhooks(policyObservers)), Watch: cl.Watch, TLS: crt.TLSConfig(),
		Address: net.JoinHostPort(bind, strconv.Itoa(cfg.Port)), HealthAddress: cfg.HealthAddress, Log: cfg.Log, Additions: y})
	if err != nil {
		return err
	}
	defer a.Shutdown()
	// The inspector's page, bound before anything is written too; a
	// replayed review of a built-in reads the process's informers.
	page, err := y.newInspector(a.Served, a.Informers())
	if err != nil {
		return portholder.Explain(err)
	}
	if page != nil {
		defer page.Close()
	}
	a.Start()

	// 5. to 10. The run: the Lease, the controllers, the tunnel, the
	// configurations and their drift watch, the canary, ready; at the end
	// deregistration first (steps, shutdown).
	url := plan.URL(decision.Host, cfg.Port)
	if tun != nil {
		url = "https://" + decision.Host // the relay's Service port, 443
	}
	r := newRun(cfg, cl, a.Server, canary, crt, a.Parts, url)
	r.config = c
	r.user, r.inspector, r.tunnel, r.metrics, r.upstreamPair, r.conversions = y.user, page, tun, a.Metrics.Registry, pair, y.conversions
	r.drift = newDrift(cfg.Session, cfg.Certs.StateDir, cfg.Log, cl, r.registrar, r.kubectl())
	r.registrar.Wrote = r.drift.Wrote
	r.chain, r.kinds = y.chain, y.kinds
	r.policies, r.policyObservers = y.policies, policyObservers
	r.takeOver = takeOver
	return r.run(ctx, started)
}

// loadYours reads your webhooks and CRDs and builds their forwarders, and
// says which conversions the scope leaves alone.
func loadYours(c *plan.Config, spec plan.UserWebhooks, scope registration.Scope) (*yours, error) {
	cfg := c.Options()
	user, err := newUserWebhooks(c, spec)
	if err != nil {
		return nil, err
	}
	conv, err := loadConversions(user, cfg.Log)
	if err != nil {
		return nil, err
	}
	// Config.Objects redirects what this filter passes; here only its
	// warning is wanted.
	scopeConversions(cfg.RedirectConversion, scope, cfg.Log, conv)
	return &yours{log: cfg.Log, inspector: cfg.Inspector, recordDir: cfg.RecordDir, builtins: cfg.Webhooks,
		builtinOpts: cfg.WebhookOptions, user: user, conversions: conv, kinds: &pathKinds{}}, nil
}

// listenHost is the host the webhook server binds: --bind-address; else,
// with --tunnel, loopback (only the tunnel needs to reach the server); else
// the advertised host when it is this machine's own.
func listenHost(configured, host string, tun *tunnel.Session) string {
	if configured == "" && tun != nil {
		return "127.0.0.1"
	}
	return bindAddress(configured, host)
}

// certOptions are the configured certificate options for the advertised
// host; with --tunnel they also cover the relay Service's names.
func certOptions(co certs.Options, host, bind string, tun *tunnel.Session) certs.Options {
	co.Host = host
	if tun != nil {
		co.Names = tun.Spec().DNSNames()[1:]
	}
	if co.ACME.ListenHost == "" {
		co.ACME.ListenHost = bind
	}
	return co
}

// run is the part of a session that writes to the cluster, from the Lease
// to deregistration.
type run struct {
	// config is the completed Config; cfg its options as this run
	// resolved them (the scope).
	config  *plan.Config
	cfg     plan.Options
	cluster *kubeconfig.Cluster
	server  *server.Server
	canary  *registration.Canary
	certs   certs.Certs
	parts   *assembly.Parts
	user    *userWebhooks
	// upstreamPair is what start did about the upstream's certificate.
	upstreamPair *certs.UpstreamPair
	// conversions are the user's CRDs and their conversion webhooks;
	// crdWriter installs, redirects and restores them (crds).
	conversions *conversions
	crdWriter   *registration.CRDs
	url         string
	inspector   *inspector.Server
	// chain is start --chain's part; nil without.
	chain *chainRun
	// policies are start --policy's, with their observer; nil without.
	policies        *livePolicies
	policyObservers []plan.Observer
	// takeOver is start --take-over's part; nil without.
	takeOver *takeOverRun
	// kinds learns the configuration kind of each served path at each
	// render, for the recordings.
	kinds *pathKinds
	// tunnel is the session's relay, with --tunnel; metrics gets its gauges.
	tunnel    *tunnel.Session
	metrics   prometheus.Registerer
	registrar *registration.Registrar
	drift     *registration.Drift
	heartbeat *registration.Heartbeat
	leaseRef  string
	// acquired is set once the session's Lease is ours: only then may
	// shutdown delete what the session name owns.
	acquired bool
	// regained says why the apiserver must be shown again that it calls
	// back: the Lease regained, the tunnel re-attached.
	regained chan string
	// scopeNotes name the webhooks the scope left out, said once at start.
	scopeNotes []string
	// lost gets the heartbeat's one ErrSessionTakenOver.
	lost chan error
	// The run's goroutines, on one context tree: serving (the webhook
	// server, the inspector) outlives the caller's ctx, since it must keep
	// answering while the session deregisters; working (controllers,
	// heartbeat, reloads, the tunnel, drift), its child, stops right after
	// deregistration. errs collects what they return.
	serving, working *lifecycle.Group
	errs             *lifecycle.Errors
}

func newRun(cfg plan.Options, cl *kubeconfig.Cluster, srv *server.Server, canary *registration.Canary, crt certs.Certs, p *assembly.Parts, url string) *run {
	return &run{
		// runOn sets the completed Config; a run built by hand (tests) has
		// its options and no manifests.
		config: new(plan.Config).With(func(o *plan.Options) { *o = cfg }),
		cfg:    cfg, cluster: cl, server: srv, canary: canary, certs: crt, parts: p, url: url, user: &userWebhooks{},
		registrar: &registration.Registrar{Client: cl.Client, Dynamic: cl.Dynamic, Session: cfg.Session, Log: cfg.Log},
		heartbeat: &registration.Heartbeat{Client: cl.Client, Namespace: cfg.LeaseNamespace, Session: cfg.Session,
			Holder: holderIdentity(), Duration: cfg.LeaseDuration, Parts: p.Names(), Now: cl.Now, Meanwhile: ", webhooks fail open meanwhile", Log: cfg.Log},
		leaseRef: cfg.LeaseRef(),
		regained: make(chan string, 1),
		lost:     make(chan error, 1),
	}
}

// step is one stage of start, in the order run takes them.
type step struct {
	name string
	do   func(ctx context.Context) error
}

// steps are what run does, in order, once the server answers: each writes
// to the cluster only what the ones before it allow (nothing before the
// Lease is this session's; the canary only once the configurations are
// applied; ready only once verified). TestStartStepsInOrder holds them to
// this order, and the README's "What start does" follows it.
func (r *run) steps(started time.Time) []step {
	var reg *registration.Registration
	var rtt time.Duration
	var verr error
	return []step{
		// The session Lease; stale sessions are cleaned up on the way.
		{"lease", r.acquire},
		// Controllers start only once the session is ours: a refused start
		// must not write anything another session would then have to clean up.
		{"controllers", r.startControllers},
		{"tunnel", r.startTunnel},
		// The webhook configurations (and the CRDs, conversion redirected),
		// then the watch that re-applies them if someone else reverts them.
		{"register", func(ctx context.Context) (err error) { reg, err = r.register(ctx); return err }},
		{"drift", func(context.Context) error { return r.startDrift(reg) }},
		// Proof that the apiserver calls back.
		{"verify", func(ctx context.Context) error { rtt, verr = r.verify(ctx); return r.verified(verr) }},
		// Ready, once the banner is out: whoever waits on /readyz then finds
		// the URLs printed.
		{"ready", func(context.Context) error {
			r.banner(reg, time.Since(started), rtt, verr)
			r.server.SetReady(true)
			r.keepUpstreamCert()
			if r.cfg.OnReady != nil {
				r.cfg.OnReady()
			}
			return nil
		}},
	}
}

// run serves, takes the steps, and runs until ctx is done, then
// deregisters before it stops serving.
func (r *run) run(ctx context.Context, started time.Time) (err error) {
	r.errs = lifecycle.NewErrors()
	// The caller's ctx only asks the run to stop: the tree outlives it, so
	// the server answers, and the controllers run, while it deregisters.
	r.serving = lifecycle.NewGroup(context.WithoutCancel(ctx), r.errs)
	r.working = r.serving.Child()
	r.serving.GoUntilStopped("the webhook server", r.server.Start)
	if r.inspector != nil {
		r.serving.GoUntilStopped("the inspector", r.inspector.Start)
	}
	r.chain.start(r)
	r.working.Wait(r.policies.watch(r.working.Context(), r.cfg.ReloadInterval))
	defer func() {
		r.shutdown()
		err = errors.Join(err, r.errs.Err())
	}()
	reloads := r.watch()
	for _, s := range r.steps(started) {
		if err := s.do(ctx); err != nil {
			return err
		}
	}
	// Heartbeat and hot reload until the end.
	return r.loop(ctx, reloads)
}

// startControllers runs every controller on the working group.
func (r *run) startControllers(context.Context) error {
	for i, run := range r.parts.Runnables() {
		r.working.GoUntilStopped("controller "+r.parts.Controllers[i].Name(), run)
	}
	return nil
}

// keepUpstreamCert renews the certificate hookback wrote for your webhook
// server while the session runs (a pair it did not write is not its own).
func (r *run) keepUpstreamCert() {
	if p := r.upstreamPair; p != nil && p.Ours() {
		r.working.Go(func(ctx context.Context) error {
			keepUpstreamCert(ctx, r.cfg.Certs.StateDir, p.Dir, time.Hour, time.Now, r.cfg.Log)
			return nil
		})
	}
}

// startDrift watches reg, the configurations register just applied. Later
// re-applies (loop) tell drift theirs before they apply.
func (r *run) startDrift(reg *registration.Registration) error {
	if reg == nil {
		return errors.New("drift: nothing registered to watch yet")
	}
	r.drift.Set(reg.Objects)
	r.working.Go(func(ctx context.Context) error {
		r.drift.Run(ctx)
		return nil
	})
	return nil
}

// verified decides what a failed verification means: the end of the run,
// or, when it is not required (--no-verify), a warning.
func (r *run) verified(err error) error {
	if err != nil && !r.cfg.NoVerify {
		return err
	}
	if err != nil {
		r.cfg.Log.Warn("running although the apiserver cannot reach hookback (verification failures are only logged)", "error", err)
	}
	return nil
}

// acquire cleans up dead sessions and takes this session's Lease.
func (r *run) acquire(ctx context.Context) error {
	opts := registration.CleanupOptions{Stale: true, Except: r.cfg.Session, DefaultLeaseNamespace: r.cfg.LeaseNamespace, Now: r.cluster.Now}
	// Operators a dead session took over are given back first.
	if _, err := restoreTakenOver(ctx, r.cluster, opts, r.cfg.Log); err != nil {
		r.cfg.Log.Warn("could not give back everything a stopped session took over", "error", err)
	}
	removed, err := r.registrar.Cleanup(ctx, opts)
	if err != nil {
		r.cfg.Log.Warn("could not clean up every stale session", "error", err)
	}
	if r.tunnel != nil {
		relays, err := r.tunnel.CleanupStale(ctx, opts)
		if err != nil {
			r.cfg.Log.Warn("could not clean up every stale relay", "error", err)
		}
		removed = append(removed, relays...)
	}
	if len(removed) > 0 {
		r.cfg.Log.Info("removed stale sessions", "sessions", strings.Join(removed, ","))
	}
	if err := r.heartbeat.Acquire(ctx, holderAlive); err != nil {
		return err
	}
	r.acquired = true
	return nil
}

// register applies the template. It does not wait for the informer caches:
// at thousands of pods their first list takes longer than the rest of start,
// the controllers wait for them on their own, and pod-eviction waits within
// a request's deadline if an eviction comes first.
func (r *run) register(ctx context.Context) (*registration.Registration, error) {
	bundle := r.certs.CABundle()
	objs, err := r.render(bundle)
	if err != nil {
		return nil, err
	}
	reg := objs.Configurations
	if err := r.registrar.Apply(ctx, reg, r.canaryKey()); err != nil {
		return nil, err
	}
	if err := r.enforcePolicies(ctx); err != nil {
		return nil, err
	}
	if err := r.takeOver.take(ctx); err != nil {
		return nil, err
	}
	if err := r.ensureCRDs(ctx, objs, bundle); err != nil {
		return nil, err
	}
	r.takeOver.releaseLeases(ctx, r.cluster.Now)
	r.takeOver.watch(r.working)
	r.applied(bundle)
	for _, n := range r.scopeNotes {
		r.cfg.Log.Info(n)
	}
	return reg, nil
}

// verify registers the canary webhook, proves the apiserver calls it, and
// removes it again.
func (r *run) verify(ctx context.Context) (time.Duration, error) {
	canary := registration.CanaryConfiguration(r.cfg.Session, r.url, r.certs.CABundle(), r.leaseRef)
	if r.tunnel != nil {
		if err := registration.PointAtService([]*unstructured.Unstructured{canary}, r.tunnel.Service()); err != nil {
			return 0, err
		}
	}
	if err := r.registrar.ApplyObject(ctx, canary); err != nil {
		return 0, err
	}
	v := &registration.Verifier{Client: r.cluster.Client, Canary: r.canary, Namespace: r.cfg.LeaseNamespace,
		Session: r.cfg.Session, URL: r.url, Tunnel: r.tunnel != nil, Timeout: r.cfg.VerifyTimeout}
	rtt, err := v.Verify(ctx)
	if derr := r.registrar.DeleteObject(context.WithoutCancel(ctx), registration.KindValidatingHook, canary.GetName()); derr != nil {
		r.cfg.Log.Warn("could not delete the canary webhook configuration", "error", derr)
	}
	return rtt, err
}

// shutdown undoes the run in the safe order: delete the configurations so
// the apiserver stops calling, stop the controllers and wait for them (a
// write in flight must not land after the cleanup), stop serving, clean up
// shared objects, and release the Lease last. It runs on a fresh context:
// the run's context is already cancelled when we stop.
func (r *run) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r.drift.Stop()
	r.server.SetReady(false)
	if !r.acquired {
		r.working.Stop()
		r.serving.Stop()
		return
	}
	errs := []error{r.takeOver.restore(ctx), r.restoreCRDs(ctx), r.registrar.Deregister(ctx)}
	r.working.Stop()
	// The apiserver drops deleted configurations asynchronously; with the
	// server stopped, a late call fails open instead of reaching a handler
	// that would undo the cleanup (a restored node oversold again).
	r.serving.Stop()
	if r.tunnel != nil {
		errs = append(errs, r.tunnel.Remove(ctx))
	}
	errs = append(errs, r.cleanupShared(ctx), r.heartbeat.Release(ctx))
	if err := errors.Join(errs...); err != nil {
		r.cfg.Log.Error("deregistration incomplete: run `"+r.cleanupCommand()+"`", "error", err)
		return
	}
	r.cfg.Log.Info("deregistered", "session", r.cfg.Session)
}
