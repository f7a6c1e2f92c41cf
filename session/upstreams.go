package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/fault"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/project"
	"github.com/hookback/hookback/rbac"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/upstream"
)

// Upstream is where the reviews of the user's own webhooks go: the
// developer's server. Service is empty for the default upstream, else
// NAMESPACE/NAME of the in-cluster Service whose webhooks go here.
type Upstream struct {
	Service string
	URL     string
}

// ParseUpstream reads `URL` or `NAMESPACE/SERVICE=URL`.
func ParseUpstream(s string) (Upstream, error) {
	key, raw, mapped := strings.Cut(s, "=")
	if !mapped {
		key, raw = "", s
	}
	if mapped && strings.Count(key, "/") != 1 {
		return Upstream{}, field.New("session.UserWebhooks.Upstream", strconv.Quote(s), "want URL or NAMESPACE/SERVICE=URL")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Upstream{}, field.New("session.UserWebhooks.Upstream", strconv.Quote(s), "want an http or https URL such as https://127.0.0.1:9443")
	}
	return Upstream{Service: key, URL: raw}, nil
}

// UserWebhooks are the user's own webhook manifests and where their reviews
// go: `start --webhook-config ... --upstream ...`.
type UserWebhooks struct {
	// Manifests are files, directories or "-" (Stdin).
	Manifests []string
	Stdin     io.Reader
	// Upstream are the upstreams as written (--upstream): URL or
	// NAMESPACE/SERVICE=URL. Complete parses them, after any already in
	// Upstreams; commands that complete no Config call ParseUpstreams.
	Upstream  []string
	Upstreams []Upstream
	// RecordedPaths lets the upstreams stand without Manifests (`hookback
	// test`): a recorded case then goes to the upstream at the path it was
	// recorded at (TestSetup.Recorded).
	RecordedPaths bool
	// UpstreamCA trusts the upstreams' certificates; UpstreamInsecure skips
	// verification (loopback upstreams only).
	UpstreamCA       string
	UpstreamInsecure bool
	// KeepFailurePolicy keeps each webhook's failurePolicy; by default it
	// becomes Ignore, so a stopped debugger never wedges the cluster.
	KeepFailurePolicy bool
	// Timeout, when set, overrides every timeoutSeconds (1s..30s): 30s is
	// what stepping through a handler in a debugger wants.
	Timeout time.Duration
	// LateAnswerTimeout bounds how long an answer is still read after the
	// apiserver stopped waiting (then reported as late); zero:
	// DefaultLateAnswerTimeout, negative: not read.
	LateAnswerTimeout time.Duration
	// Shadow compares each answer with the webhook deployed in the cluster
	// (start --shadow); hookback then always allows, without a patch.
	Shadow ShadowConfig
	// CertDir, when set, is where the upstream reads its serving pair
	// (controller-runtime's cert dir): start writes one there, signed by
	// hookback's CA, unless a pair it did not write is there, and then
	// trusts that CA for the upstreams (unless UpstreamCA or
	// UpstreamInsecure say otherwise).
	CertDir string
	// Fault, when set, makes every one of these webhooks misbehave on
	// purpose (start --fault): refuse, timeout, error or slow=DUR, see
	// package fault.
	Fault string
}

// permissions are what the manifests need beyond the webhook
// configurations every session may write: the CRDs'.
func manifestPermissions(m *manifests.Set) []rbac.Permission {
	if m == nil || len(m.CRDs) == 0 {
		return nil
	}
	return manifests.CRDPermissions()
}

// ParseUpstreams returns u with Upstream parsed into Upstreams (after
// those already there), and every upstream that does not parse.
func (u UserWebhooks) ParseUpstreams() (UserWebhooks, error) {
	var errs []error
	ups := slices.Clone(u.Upstreams)
	for _, s := range u.Upstream {
		up, err := ParseUpstream(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ups = append(ups, up)
	}
	u.Upstream, u.Upstreams = nil, ups
	return u, errors.Join(errs...)
}

// Validate reports every problem at once, each a field.Error naming its
// field: the CLI runs it with its own flag checks, so they are listed
// together, with flag names.
func (u UserWebhooks) Validate() error {
	var errs []error
	u, err := u.ParseUpstreams()
	if err != nil {
		errs = append(errs, err)
	}
	if len(u.Manifests) > 0 && len(u.Upstreams) == 0 {
		errs = append(errs, field.Clause("session.UserWebhooks.Manifests", "", "needs {session.UserWebhooks.Upstream}: the URL of your webhook server, such as https://127.0.0.1:9443"))
	}
	if len(u.Manifests) == 0 && len(u.Upstreams) > 0 && !u.RecordedPaths {
		errs = append(errs, field.Clause("session.UserWebhooks.Upstream", "", "needs {session.UserWebhooks.Manifests}: the manifests that say which requests go to it"))
	}
	if u.CertDir != "" && len(u.Manifests) == 0 && !u.RecordedPaths {
		errs = append(errs, field.Clause("session.UserWebhooks.CertDir", "", "needs {session.UserWebhooks.Manifests} (or a project): the certificate is for your webhook server"))
	}
	if u.Timeout != 0 && (u.Timeout < time.Second || u.Timeout > 30*time.Second) {
		errs = append(errs, field.New("session.UserWebhooks.Timeout", u.Timeout.String(), "want 1s to 30s (the apiserver's limit)"))
	}
	if u.Fault != "" {
		if _, err := fault.Parse(u.Fault); err != nil {
			errs = append(errs, field.New("session.UserWebhooks.Fault", strconv.Quote(u.Fault), "want refuse, timeout, error or slow=DUR (such as slow=3s)"))
		}
		if len(u.Manifests) == 0 {
			errs = append(errs, field.Clause("session.UserWebhooks.Fault", "", "needs {session.UserWebhooks.Manifests}: faults go into your own webhooks, never the built-ins"))
		}
	}
	if err := u.Shadow.Validate(u); err != nil {
		errs = append(errs, err)
	}
	for _, up := range u.Upstreams {
		if err := u.options(up).Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (u UserWebhooks) options(up Upstream) upstream.Options {
	base, _ := url.Parse(up.URL)
	return upstream.Options{Base: base, CAFile: u.UpstreamCA, Insecure: u.UpstreamInsecure}
}

// manifestOptions are the rewrite options for hookback's URL and caBundle.
func (u UserWebhooks) manifestOptions(url, caBundle, session, leaseRef string) manifests.RewriteOptions {
	return manifests.RewriteOptions{URL: url, CABundle: caBundle, Session: session, LeaseRef: leaseRef,
		KeepFailurePolicy: u.KeepFailurePolicy, TimeoutSeconds: int32(u.Timeout / time.Second)}
}

// checkMapped refuses an --upstream NAMESPACE/SERVICE=URL that no webhook
// and no CRD conversion of the manifests sends to: a typo, or the name
// before kustomize's namePrefix, would otherwise go unnoticed.
func (u UserWebhooks) checkMapped(m *manifests.Set) error {
	named := m.Services()
	var errs []error
	for _, up := range u.Upstreams {
		if up.Service == "" || slices.Contains(named, up.Service) {
			continue
		}
		list := "none: every webhook there has a clientConfig.url"
		if len(named) > 0 {
			list = strings.Join(named, ", ")
		}
		errs = append(errs, field.New("session.UserWebhooks.Upstream", up.Service+"="+up.URL, fmt.Sprintf("no webhook or CRD conversion in the manifests sends to Service %s; the Services they name (as rendered, kustomize's namespace and namePrefix applied): %s",
			up.Service, list)))
	}
	return errors.Join(errs...)
}

// upstreamFor picks the upstream of a route: the one mapped to its Service,
// else the default one.
func (u UserWebhooks) upstreamFor(r registration.Route) (Upstream, error) {
	var def *Upstream
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
		return Upstream{}, field.Advise("session.UserWebhooks.Upstream", "webhooks %s target %s and no {session.UserWebhooks.Upstream} takes them: pass {session.UserWebhooks.Upstream} URL, or {session.UserWebhooks.Upstream} NAMESPACE/SERVICE=URL",
			strings.Join(r.Webhooks, ", "), target)
	}
	return *def, nil
}

// upstreamCert writes the upstream's serving pair into CertDir (see
// there) and points UpstreamCA at hookback's CA when the pair is its own.
func (u *UserWebhooks) upstreamCert(stateDir string, log *slog.Logger) (*certs.UpstreamPair, error) {
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
			field.Advise("session.UserWebhooks.UpstreamCA", "set {session.UserWebhooks.UpstreamCA} to the CA that signed it (or {session.UserWebhooks.UpstreamInsecure}), or delete tls.crt and tls.key there to let hookback write its own"))
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
	spec UserWebhooks
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
func (c *Config) userWebhooks(spec UserWebhooks) (*userWebhooks, error) {
	o := c.opts
	return loadUserWebhooks(spec, c.manifests, o.Session, o.Kubeconfig, o.Project, o.Log)
}

// callerUpstreams are upstreams u as a command that calls your manager
// without start (audit, test) reaches them: the manager of a project
// serves the certificate start wrote into its directory, signed by
// hookback's local CA, so that CA is trusted unless you named one or
// turned the checks off.
func (c *Config) callerUpstreams(u UserWebhooks) (UserWebhooks, error) {
	if c.opts.Project == nil || u.UpstreamCA != "" || u.UpstreamInsecure {
		return u, nil
	}
	_, caFile, err := certs.LocalCA(c.opts.Certs.StateDir)
	if err != nil {
		return u, err
	}
	u.UpstreamCA = caFile
	return u, nil
}

func loadUserWebhooks(spec UserWebhooks, m *manifests.Set, session string, kco kubeconfig.Options, proj *project.Project, log *slog.Logger) (*userWebhooks, error) {
	if m == nil {
		return &userWebhooks{spec: spec, late: newLateReport(log, spec.LateAnswerTimeout), shadow: newShadowReport(log, false)}, nil
	}
	if proj != nil && log != nil {
		proj.Log(log)
	}
	if s := m.SkippedSummary(); s != "" && log != nil {
		log.Info("manifests: objects skipped, hookback takes only webhook configurations and CRDs", "skipped", s)
	}
	if err := spec.checkMapped(m); err != nil {
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
	reg, routes, err := manifests.Rewrite(m.Webhooks, spec.manifestOptions("https://hookback.invalid", "", session, ""))
	if err != nil {
		return nil, err
	}
	u.routes = routes
	policies := failurePolicies(reg)
	for _, r := range routes {
		up, err := spec.upstreamFor(r)
		if err != nil {
			return nil, err
		}
		opts := spec.options(up)
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
	if u.hooks, err = spec.Shadow.wrap(kco, log, routes, u.hooks, u.shadow); err != nil {
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
			return field.New("session.UserWebhooks.Fault", strconv.Quote(u.spec.Fault), err.Error())
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
func (spec UserWebhooks) probe(ctx context.Context) map[string]error {
	out := map[string]error{}
	for _, up := range spec.Upstreams {
		out[up.URL] = spec.options(up).Probe(ctx)
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
