package plan

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/registration"
)

// Observer is a webhook that watches the admissions hookback registers
// rather than deciding them: the admission policies and the chain view
// add them (Options.Observers). It is served beside the built-ins and
// yours, and registered by the configurations its Template renders.
type Observer struct {
	// Webhook is served at Webhook.Path.
	Webhook admission.Webhook
	// Template renders the webhook configurations that send reviews to
	// Webhook, as the webhook template does (registration.TemplateData:
	// URL, CABundle, Session, ...): every webhook in it must point at
	// {{.URL}} and Webhook.Path. Objects names them for the session,
	// labels them as hookback's and narrows them by the scope.
	Template []byte
}

// validateObservers reports every observer without a name, a path, a
// handler or a template, and every path two of them (or an extra webhook)
// share.
func validateObservers(obs []Observer, extra []admission.Webhook) []error {
	var errs []error
	paths := map[string]string{}
	for _, w := range extra {
		paths[w.Path] = w.Name
	}
	for _, o := range obs {
		w := o.Webhook
		if w.Name == "" || !strings.HasPrefix(w.Path, "/") || w.Handler == nil || len(o.Template) == 0 {
			errs = append(errs, fmt.Errorf("observer %q needs a name, a path starting with / , a handler and a template", w.Name))
		}
		if prev, ok := paths[w.Path]; ok {
			errs = append(errs, fmt.Errorf("observer %s and %s both use path %s", w.Name, prev, w.Path))
		}
		paths[w.Path] = w.Name
	}
	return errs
}

// ObserverWebhooks are the observers' webhooks, served with the others.
func ObserverWebhooks(obs []Observer) []admission.Webhook {
	out := make([]admission.Webhook, len(obs))
	for i, o := range obs {
		out[i] = o.Webhook
	}
	return out
}

// Placement is what the objects to register depend on besides the Config:
// where the apiserver reaches hookback, the Lease they name, and the scope
// as the command resolved it.
type Placement struct {
	// Target is hookback's base URL (https://host:port) and caBundle; with
	// Service set (the tunnel's relay, the in-cluster Service) every
	// webhook is pointed at that Service instead, with its own path.
	Target registration.Target
	// LeaseRef is namespace/name of the session Lease, annotated on every
	// configuration; "" for none (audit, which registers nothing).
	LeaseRef string
	// Scope is the scope as resolved for the command (start: against the
	// cluster; render and audit: --only-mine's identity only).
	Scope registration.Scope
	// Install, set with Target.Service, renders the configurations of an
	// install in the cluster (`render --in-cluster`, `serve`) rather than
	// a session's: the template's alone, named as written, labelled with
	// Install (never as a session's, which a session's cleanup deletes),
	// each webhook pointed at the Service.
	Install map[string]string
	// Observers are added for this run beside Options.Observers: the
	// observer of start --policy, built by the run that evaluates the
	// policies.
	Observers []Observer
	// Manifests, when set, replace the ones Complete read: start re-reads
	// yours when they change.
	Manifests *manifests.Set
	// Observe, when set, derives observer configurations from the ones
	// rendered (start --chain's, which match what yours match); they are
	// named, labelled and narrowed by the scope like every other.
	Observe func(objs []*unstructured.Unstructured, t registration.Target, leaseRef string) ([]*unstructured.Unstructured, error)
}

// Objects are what one run of a Config registers.
type Objects struct {
	// Configurations are the webhook configurations: the template's (the
	// built-ins and extra webhooks), yours rewritten to point at hookback,
	// and the observers', each named for the session, labelled as
	// hookback's and narrowed by the scope.
	Configurations *registration.Registration
	// CRDs are your manifests' CRDs: start installs the missing ones and
	// points the conversion webhook of those Redirect selects at hookback.
	CRDs     []registration.CRD
	Redirect func(crd string) bool
	// Notes name the webhooks the scope left out, for the log.
	Notes []string
}

// Objects turns c into the objects to register at p: the one function
// start (at every apply), render, audit, rbac and test share, so what
// render prints is what start applies.
func (c *Config) Objects(p Placement) (*Objects, error) {
	cfg := c.opts
	m := p.Manifests
	if m == nil {
		m = c.manifests
	}
	served, err := assembly.ServedWebhooks(cfg.Webhooks, cfg.WebhookOptions, cfg.Extra)
	if err != nil {
		return nil, err
	}
	name, text, err := cfg.Template.Load()
	if err != nil {
		return nil, err
	}
	mine, routes, err := rewriteYours(cfg.User, m, p, cfg.Session)
	if err != nil {
		return nil, err
	}
	observers := slices.Concat(cfg.Observers, p.Observers)
	obs := ObserverWebhooks(observers)
	paths := slices.Concat(paths(served), paths(obs))
	for _, r := range routes {
		paths = append(paths, r.Path)
	}
	data := registration.TemplateData{URL: p.Target.URL, CABundle: p.Target.CABundle, Session: cfg.Session,
		Enabled: names(served), Namespaces: p.Scope.Namespaces}
	if p.Install != nil {
		return install(name, text, data, paths, p)
	}
	reg, err := registration.Render(name, text, data, registration.RenderOptions{Paths: paths, LeaseRef: p.LeaseRef})
	if err != nil {
		return nil, err
	}
	objs := slices.Concat(reg.Objects, mine)
	for _, o := range observers {
		r, err := registration.Render("observer "+o.Webhook.Name, o.Template, data,
			registration.RenderOptions{Paths: []string{o.Webhook.Path}, LeaseRef: p.LeaseRef})
		if err != nil {
			return nil, err
		}
		objs = append(objs, r.Objects...)
	}
	if p.Observe != nil {
		more, err := p.Observe(objs, p.Target, p.LeaseRef)
		if err != nil {
			return nil, err
		}
		objs = append(objs, more...)
	}
	out := &Objects{Configurations: &registration.Registration{}, Redirect: cfg.RedirectConversion}
	if out.Configurations.Objects, out.Notes, err = p.Scope.Apply(objs); err != nil {
		return nil, err
	}
	if p.Target.Service != nil {
		if err := registration.PointAtService(out.Configurations.Objects, *p.Target.Service); err != nil {
			return nil, err
		}
	}
	if out.Redirect == nil {
		out.Redirect = p.Scope.Convert
	}
	if m != nil {
		if out.CRDs, err = manifests.CRDsOf(m); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rewriteYours rewrites your manifests' webhook configurations to point at
// p's target, with the routes they are served on.
func rewriteYours(u UserWebhooks, m *manifests.Set, p Placement, session string) ([]*unstructured.Unstructured, []registration.Route, error) {
	if m == nil || len(m.Webhooks) == 0 {
		return nil, nil, nil
	}
	reg, routes, err := manifests.Rewrite(m.Webhooks, u.ManifestOptions(p.Target.URL, p.Target.CABundle, session, p.LeaseRef))
	if err != nil {
		return nil, nil, err
	}
	return reg.Objects, routes, nil
}

// install is Objects for an install's Placement.
func install(name string, text []byte, data registration.TemplateData, paths []string, p Placement) (*Objects, error) {
	if p.Target.Service == nil {
		return nil, fmt.Errorf("render %s: an install is reached through a Service: set the placement's Target.Service", name)
	}
	data.Session = "" // an install outlives every session
	reg, err := registration.RenderService(name, text, data, paths, *p.Target.Service, p.Install)
	if err != nil {
		return nil, err
	}
	return &Objects{Configurations: reg, Redirect: func(string) bool { return false }}, nil
}
