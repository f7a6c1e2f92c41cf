package session

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/fault"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/errkind"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/project"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/upstream"
)

// upstreamFor picks the upstream of a route: the one mapped to its Service,
// else the default one.
func upstreamFor(u plan.UserWebhooks, r registration.Route) (plan.Upstream, error) {
	var def *plan.Upstream
	for i, up := range u.Upstreams {
		if r.Service != nil && up.Service == r.Service.Key() {
			return up, nil
		}
		if up.Service == "" {
			def = &u.Upstreams[i]
		}
	}
	if def == nil {
		target := r.URL
		if r.Service != nil {
			target = "service " + r.Service.Key()
		}
		return plan.Upstream{}, errkind.New(plan.ErrInvalidConfig, field.Advise("plan.UserWebhooks.Upstream", "webhooks %s target %s and no {plan.UserWebhooks.Upstream} takes them: pass {plan.UserWebhooks.Upstream} URL, or {plan.UserWebhooks.Upstream} NAMESPACE/SERVICE=URL",
			strings.Join(r.Webhooks, ", "), target))
	}
	return *def, nil
}

// upstreamCert writes the upstream's serving pair into CertDir (see
// there) and points UpstreamCA at hookback's CA when the pair is its own.
func upstreamCert(u *plan.UserWebhooks, stateDir string, log *slog.Logger) (*certs.UpstreamPair, error) {
	if u.CertDir == "" {
		return nil, nil
	}
	ca, caFile, err := certs.LocalCA(stateDir)
	if err != nil {
		return nil, err
	}
	pair, err := certs.WriteUpstreamPair(ca, u.CertDir, time.Now())
	if err != nil {
		return nil, fmt.Errorf("upstream serving certificate: %w", err)
	}
	switch {
	case !pair.Ours():
		// An error, not a string, so that the CLI's logger shows the
		// fields as its flags.
		log.Warn("upstream serving certificate: "+pair.String(), "what_to_do",
			field.Advise("plan.UserWebhooks.UpstreamCA", "set {plan.UserWebhooks.UpstreamCA} to the CA that signed it (or {plan.UserWebhooks.UpstreamInsecure}), or delete tls.crt and tls.key there to let hookback write its own"))
	case u.UpstreamCA == "" && !u.UpstreamInsecure:
		u.UpstreamCA = caFile
		log.Info("upstream serving certificate: "+pair.String(), "trusted", caFile)
	default:
		log.Info("upstream serving certificate: " + pair.String())
	}
	return &pair, nil
}

// userWebhooks loads the manifests once (stdin can be read only once) and
// builds a forwarding webhook per route.
type userWebhooks struct {
	spec plan.UserWebhooks
	// manifests are what the intake found: webhook configurations, CRDs
	// (for their install and conversion redirect) and the kinds skipped.
	manifests *manifests.Set
	routes    []registration.Route
	hooks     []admission.Webhook
	late      *lateReport
	shadow    *shadowReport
	// fault is what every one of hooks injects now (start --fault, the
	// inspector's switch).
	fault *faultSwitch
}

// userWebhooks loads c's webhooks with spec, c's as the command resolved
// it (the upstream CA), as every command that serves or calls them does.
func newUserWebhooks(c *plan.Config, spec plan.UserWebhooks) (*userWebhooks, error) {
	o := c.Options()
	return loadUserWebhooks(spec, c.Manifests(), o.Session, o.Kubeconfig, o.Project, o.Log)
}

// callerUpstreams are upstreams u as a command that calls your manager
// without start (audit, test) reaches them: the manager of a project
// serves the certificate start wrote into its directory, signed by
// hookback's local CA, so that CA is trusted unless you named one or
// turned the checks off.
func callerUpstreams(c *plan.Config, u plan.UserWebhooks) (plan.UserWebhooks, error) {
	if c.Options().Project == nil || u.UpstreamCA != "" || u.UpstreamInsecure {
		return u, nil
	}
	_, caFile, err := certs.LocalCA(c.Options().Certs.StateDir)
	if err != nil {
		return u, err
	}
	u.UpstreamCA = caFile
	return u, nil
}

func loadUserWebhooks(spec plan.UserWebhooks, m *manifests.Set, session string, kco kubeconfig.Options, proj *project.Project, log *slog.Logger) (*userWebhooks, error) {
	if m == nil {
		return &userWebhooks{spec: spec, late: newLateReport(log, spec.LateAnswerTimeout), shadow: newShadowReport(log, false)}, nil
	}
	if proj != nil && log != nil {
		proj.Log(log)
	}
	if s := m.SkippedSummary(); s != "" && log != nil {
		log.Info("manifests: objects skipped, hookback takes only webhook configurations and CRDs", "skipped", s)
	}
	if err := spec.CheckMapped(m); err != nil {
		return nil, err
	}
	u := &userWebhooks{spec: spec, manifests: m, late: newLateReport(log, spec.LateAnswerTimeout), shadow: newShadowReport(log, spec.Shadow.Target != "")}
	if len(m.Webhooks) == 0 && len(m.CRDs) > 0 {
		return u, nil // conversion webhooks only
	}
	if len(m.Webhooks) == 0 {
		return nil, fmt.Errorf("%s: no webhook configurations or CRDs in them (only %s)", strings.Join(spec.Manifests, ", "), orNothing(m.SkippedSummary()))
	}
	// The routes depend on the manifests alone; URL and caBundle are known
	// later and filled in at every render.
	reg, routes, err := manifests.Rewrite(m.Webhooks, spec.ManifestOptions("https://hookback.invalid", "", session, ""))
	if err != nil {
		return nil, err
	}
	u.routes = routes
	policies := failurePolicies(reg)
	for _, r := range routes {
		up, err := upstreamFor(spec, r)
		if err != nil {
			return nil, err
		}
		opts := spec.UpstreamOptions(up)
		opts.Log = log
		if spec.LateAnswerTimeout > 0 { // negative: off
			opts.LateAnswerTimeout = spec.LateAnswerTimeout
			u.late.forward(&opts, routeName(r), r.Path, routePolicies(r, policies))
		}
		fwd, err := upstream.New(opts, r.UpstreamPath)
		if err != nil {
			return nil, err
		}
		u.hooks = append(u.hooks, admission.Webhook{Name: routeName(r), Path: r.Path, Handler: fwd})
	}
	if u.hooks, err = shadowWrap(spec.Shadow, kco, log, routes, u.hooks, u.shadow); err != nil {
		return nil, err
	}
	return u, u.injectFault(log)
}

// injectFault wraps every webhook with the session's fault switch, last,
// so that the apiserver sees the fault whatever the upstream or the shadow
// answers: spec.Fault at first (none when unset), then what the inspector
// switches it to (faults.go).
func (u *userWebhooks) injectFault(log *slog.Logger) error {
	f := fault.Fault{Kind: fault.None}
	if u.spec.Fault != "" {
		var err error
		if f, err = fault.Parse(u.spec.Fault); err != nil {
			return field.New("plan.UserWebhooks.Fault", strconv.Quote(u.spec.Fault), err.Error())
		}
	}
	u.fault = &faultSwitch{sw: fault.NewSwitch(f), log: log, hooks: len(u.hooks)}
	for i := range u.hooks {
		u.hooks[i].Handler = fault.WrapSwitch(u.hooks[i].Handler, u.fault.sw)
	}
	if log != nil && f.Kind != fault.None {
		log.Warn("fault injected into your webhooks: the apiserver applies each one's failurePolicy", "fault", f.String(), "webhooks", len(u.hooks))
	}
	return nil
}

// probe reports, per upstream, whether it accepts connections.
func probeUpstreams(ctx context.Context, spec plan.UserWebhooks) map[string]error {
	out := map[string]error{}
	for _, up := range spec.Upstreams {
		out[up.URL] = spec.UpstreamOptions(up).Probe(ctx)
	}
	return out
}

// routeName names a route's webhook in logs and metrics: the user's first
// webhook name routed there.
func routeName(r registration.Route) string {
	if len(r.Webhooks) > 0 {
		return r.Webhooks[0]
	}
	return r.Path
}

func orNothing(s string) string {
	if s == "" {
		return "empty documents"
	}
	return s
}

// keepUpstreamCert rewrites the upstream's pair, while the session runs,
// when it nears expiry (see certs.WriteUpstreamPair), checking every
// `every`: a manager left running for weeks keeps a valid certificate
// (controller-runtime reloads it from disk). It stops with ctx.
func keepUpstreamCert(ctx context.Context, stateDir, dir string, every time.Duration, now func() time.Time, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ca, _, err := certs.LocalCA(stateDir)
		if err == nil {
			var pair certs.UpstreamPair
			pair, err = certs.WriteUpstreamPair(ca, dir, now())
			if err == nil && pair.Action == certs.UpstreamRenewed {
				log.Info("upstream serving certificate: " + pair.String())
			}
		}
		if err != nil {
			log.Warn("upstream serving certificate not renewed", "dir", dir, "error", err)
		}
	}
}
