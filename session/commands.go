package session

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/internal/errkind"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/tunnel"
)

// Render renders the webhook configurations a run of c would apply
// (Config.Objects), without serving or writing anything: the caBundle is
// the one the run's certificate would need, and without an advertise
// address the kubeconfig decides it as Run would.
func Render(ctx context.Context, c *plan.Config) ([]byte, error) {
	cfg := c.Options()
	// The policies, read before anything else, as Run reads them.
	pol, err := readPolicies(cfg.Policies, cfg.Log)
	if err != nil {
		return nil, errkind.New(plan.ErrInvalidConfig, err)
	}
	policyObservers, err := pol.observers()
	if err != nil {
		return nil, err
	}
	sc, err := renderScope(ctx, cfg.Scope, cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	host := cfg.AdvertiseAddress
	if host == "" {
		kc, err := kubeconfig.Load(cfg.Kubeconfig)
		if err != nil {
			return nil, err
		}
		d, err := Advertise(ctx, cfg.Log, "", kc)
		if err != nil {
			return nil, err
		}
		host = d.Host
	}
	bundle, err := certs.CABundle(cfg.Certs)
	if err != nil {
		return nil, err
	}
	// --take-over: what start would find in the cluster, read only.
	tk, cl, c, err := renderTakeOver(ctx, c)
	if err != nil {
		return nil, err
	}
	// Your webhooks as start loads them: the same checks, the same log.
	if _, err := newUserWebhooks(c, cfg.User); err != nil {
		return nil, err
	}
	objs, err := c.Objects(plan.Placement{Target: registration.Target{URL: plan.URL(host, cfg.Port), CABundle: bundle},
		LeaseRef: cfg.LeaseRef(), Observers: policyObservers, Scope: sc, Observe: chainObserve(cfg.Chain, cfg.Session, cfg.Log)})
	if err != nil {
		return nil, err
	}
	for _, n := range objs.Notes {
		cfg.Log.Info(n)
	}
	if tk == nil {
		return objs.Configurations.YAML()
	}
	tk.split(objs, cfg.Session)
	out, err := objs.Configurations.YAML()
	if err != nil {
		return nil, err
	}
	more, err := tk.preview(ctx, cl)
	return append(out, more...), err
}

// CleanupConfig says what Cleanup removes.
type CleanupConfig struct {
	Kubeconfig kubeconfig.Options
	// Sessions are removed whether alive or not; dead sessions always are.
	Sessions []string
	// All removes every session, alive or not.
	All            bool
	LeaseNamespace string
	// TunnelNamespace is where `start --tunnel` deploys relays; empty:
	// tunnel.DefaultNamespace.
	TunnelNamespace string
	Log             *slog.Logger
}

// Cleanup removes the named sessions and every dead one from the cluster,
// then the shared objects (exec RBAC, node CPU) no live session still uses.
// It returns the sessions it removed.
func Cleanup(ctx context.Context, cfg CleanupConfig) ([]string, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	kc, err := kubeconfig.Load(cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kc.Clientset(kubeconfig.RequestTimeout)
	if err != nil {
		return nil, err
	}
	dyn, err := kc.Dynamic(kubeconfig.RequestTimeout)
	if err != nil {
		return nil, err
	}
	r := &registration.Registrar{Client: cs, Dynamic: dyn, Log: cfg.Log}
	opts := registration.CleanupOptions{All: cfg.All, Sessions: cfg.Sessions, Stale: true, DefaultLeaseNamespace: cfg.LeaseNamespace, Now: kc.Clock.Now}
	cl := &kubeconfig.Cluster{Config: kc, Client: cs, Dynamic: dyn}
	restored, terr := restoreTakenOver(ctx, cl, opts, cfg.Log)
	removed, err := r.Cleanup(ctx, opts)
	removed, err = appendNew(removed, restored...), errors.Join(terr, err)
	if cfg.TunnelNamespace == "" {
		cfg.TunnelNamespace = tunnel.DefaultNamespace
	}
	relays, rerr := tunnel.Cleanup(ctx, tunnel.Clients{Client: cl.Client, Dynamic: cl.Dynamic}, cfg.TunnelNamespace, "", opts, cfg.Log)
	for _, s := range relays {
		if !slices.Contains(removed, s) {
			removed = append(removed, s)
		}
	}
	slices.Sort(removed)
	return removed, errors.Join(err, rerr, assembly.CleanupShared(ctx, cs, dyn, cfg.LeaseNamespace, "", kc.Clock.Now, cfg.Log))
}

// ProbeUpstreams reports, per upstream URL, whether it accepts connections
// (nil) or why not: `hookback check --upstream`.
func ProbeUpstreams(ctx context.Context, spec plan.UserWebhooks) map[string]error {
	return probeUpstreams(ctx, spec)
}
