package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

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
		return Upstream{}, fmt.Errorf("--upstream %q: want URL or NAMESPACE/SERVICE=URL", s)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Upstream{}, fmt.Errorf("--upstream %q: want an http or https URL such as https://127.0.0.1:9443", s)
	}
	return Upstream{Service: key, URL: raw}, nil
}

// UserWebhooks are the user's own webhook manifests and where their reviews
// go: `start --webhook-config ... --upstream ...`.
type UserWebhooks struct {
	// Manifests are files, directories or "-" (Stdin).
	Manifests []string
	Stdin     io.Reader
	Upstreams []Upstream
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
	// apiserver stopped waiting (then reported as late); zero: not read.
	LateAnswerTimeout time.Duration
	// Shadow compares each answer with the webhook deployed in the cluster
	// (start --shadow); hookback then always allows, without a patch.
	Shadow ShadowConfig
}

// Validate reports every problem at once, naming the flags: the CLI runs
// it with its own flag checks, so they are listed together.
func (u UserWebhooks) Validate() error {
	var errs []error
	if len(u.Manifests) > 0 && len(u.Upstreams) == 0 {
		errs = append(errs, errors.New("--webhook-config needs --upstream: the URL of your webhook server, such as https://127.0.0.1:9443"))
	}
	if len(u.Manifests) == 0 && len(u.Upstreams) > 0 {
		errs = append(errs, errors.New("--upstream needs --webhook-config: the manifests that say which requests go to it"))
	}
	if u.Timeout != 0 && (u.Timeout < time.Second || u.Timeout > 30*time.Second) {
		errs = append(errs, fmt.Errorf("--timeout %s: want 1s to 30s (the apiserver's limit)", u.Timeout))
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
func (u UserWebhooks) manifestOptions(url, caBundle, session, leaseRef string) registration.ManifestOptions {
	return registration.ManifestOptions{URL: url, CABundle: caBundle, Session: session, LeaseRef: leaseRef,
		KeepFailurePolicy: u.KeepFailurePolicy, TimeoutSeconds: int32(u.Timeout / time.Second)}
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
		return Upstream{}, fmt.Errorf("webhooks %s target %s and no --upstream takes them: pass --upstream URL, or --upstream NAMESPACE/SERVICE=URL",
			strings.Join(r.Webhooks, ", "), target)
	}
	return *def, nil
}

// userWebhooks loads the manifests once (stdin can be read only once) and
// builds a forwarding webhook per route.
type userWebhooks struct {
	spec   UserWebhooks
	docs   []registration.Document
	routes []registration.Route
	hooks  []admission.Webhook
	late   *lateReport
	shadow *shadowReport
}

func loadUserWebhooks(spec UserWebhooks, cfg Config) (*userWebhooks, error) {
	if len(spec.Manifests) == 0 {
		return &userWebhooks{spec: spec, late: &lateReport{log: cfg.Log}, shadow: newShadowReport(cfg.Log, false)}, nil
	}
	docs, err := registration.LoadManifests(spec.Manifests, spec.Stdin)
	if err != nil {
		return nil, err
	}
	// The routes depend on the manifests alone; URL and caBundle are known
	// later and filled in at every render.
	reg, routes, err := registration.RewriteManifests(docs, spec.manifestOptions("https://hookback.invalid", "", cfg.Session, ""))
	if err != nil {
		return nil, err
	}
	u := &userWebhooks{spec: spec, docs: docs, routes: routes, late: &lateReport{log: cfg.Log}, shadow: newShadowReport(cfg.Log, spec.Shadow.Target != "")}
	policies := failurePolicies(reg)
	for _, r := range routes {
		up, err := spec.upstreamFor(r)
		if err != nil {
			return nil, err
		}
		opts := spec.options(up)
		opts.Log = cfg.Log
		if spec.LateAnswerTimeout > 0 {
			opts.LateAnswerTimeout = spec.LateAnswerTimeout
			opts.Late = u.late.forward(routeName(r), r.Path, routePolicies(r, policies))
		}
		fwd, err := upstream.New(opts, r.UpstreamPath)
		if err != nil {
			return nil, err
		}
		u.hooks = append(u.hooks, admission.Webhook{Name: routeName(r), Path: r.Path, Handler: fwd})
	}
	if u.hooks, err = spec.Shadow.wrap(cfg, routes, u.hooks, u.shadow); err != nil {
		return nil, err
	}
	return u, nil
}

// render rewrites the manifests for hookback's URL and current caBundle.
func (u *userWebhooks) render(url, caBundle, session, leaseRef string) (*registration.Registration, error) {
	if len(u.docs) == 0 {
		return &registration.Registration{}, nil
	}
	reg, _, err := registration.RewriteManifests(u.docs, u.spec.manifestOptions(url, caBundle, session, leaseRef))
	return reg, err
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
