package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/conversion"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/upstream"
)

// TestWebhook is one webhook a run of cfg would register, exactly as its
// configuration declares it (rules, selectors, matchConditions), with the
// handler that answers it: `hookback test` matches each case against the
// declaration as the apiserver would, then calls the handler.
type TestWebhook struct {
	// Configuration is the configuration's name as written, before the
	// session suffix.
	Configuration string
	// Path is where hookback would serve it.
	Path string
	// Exactly one of Mutating and Validating is set.
	Mutating   *admissionregistrationv1.MutatingWebhook
	Validating *admissionregistrationv1.ValidatingWebhook
	Handler    admission.Handler
}

// Name is the webhook's name in its configuration.
func (w TestWebhook) Name() string {
	if w.Mutating != nil {
		return w.Mutating.Name
	}
	return w.Validating.Name
}

// TestTargets finds what `hookback test` runs cases against: the admission
// webhooks of c (built-ins, template, your manifests forwarding to your
// upstreams with start's answer checks), read from c.Objects as start
// would register them, and the conversion webhooks of the manifests' CRDs.
// No cluster is read; the scope flags do not apply (a case says its own
// namespace and user).
//
// When the options' User.CertDir is set (--exec, project mode), a serving
// pair signed by hookback's CA in Certs.StateDir is written there first, as
// start writes it, and that CA is trusted for the upstreams.
func TestTargets(c *plan.Config) (*TestSetup, error) {
	cfg := c.Options()
	// --exec (project mode) writes the pair its manager serves, as start
	// does, and trusts the CA that signed it.
	if _, err := upstreamCert(&cfg.User, cfg.Certs.StateDir, cfg.Log); err != nil {
		return nil, err
	}
	user, err := callerUpstreams(c, cfg.User)
	if err != nil {
		return nil, err
	}
	served, err := assembly.ServedWebhooks(cfg.Webhooks, cfg.WebhookOptions, cfg.Extra)
	if err != nil {
		return nil, err
	}
	yours, err := newUserWebhooks(c, user)
	if err != nil {
		return nil, err
	}
	convs, err := loadConversions(yours, cfg.Log)
	if err != nil {
		return nil, err
	}
	objs, err := c.Objects(plan.Placement{Target: registration.Target{URL: auditBase}})
	if err != nil {
		return nil, err
	}
	handlers := map[string]admission.Handler{}
	for _, h := range slices.Concat(served, plan.ObserverWebhooks(cfg.Observers), yours.hooks) {
		handlers[h.Path] = h.Handler
	}
	var out []TestWebhook
	for _, o := range objs.Configurations.Objects {
		hooks, err := testHooks(o, cfg.Session, handlers)
		if err != nil {
			return nil, err
		}
		out = append(out, hooks...)
	}
	setup := &TestSetup{Webhooks: out, Conversions: convs.hooks, user: user}
	if len(user.Manifests) == 0 && len(user.Upstreams) > 0 {
		setup.Recorded = recordedUpstreams(user, cfg.Log)
		setup.Unmatched = field.Advise("plan.UserWebhooks.Manifests",
			"which of your webhooks it goes to is decided by their configurations, and none were given: pass {plan.UserWebhooks.Manifests} (a recorded case needs none)")
	}
	for _, c := range convs.crds {
		if c.Conversion != nil {
			setup.CRDs = append(setup.CRDs, c.Object)
		}
	}
	return setup, nil
}

// TestSetup is what TestTargets found.
type TestSetup struct {
	Webhooks    []TestWebhook
	Conversions []conversion.Webhook
	// CRDs are the manifests' CRDs whose conversion is a webhook, in the
	// order of Conversions: what the conversion fuzzer reads the schemas of.
	CRDs []*unstructured.Unstructured
	// Recorded, set when upstreams are given without manifests
	// (UserWebhooks.RecordedPaths), answers a recorded case at the path it
	// was recorded at: the upstream mapped to the Service the path names,
	// else the default one, with start's answer checks. Unmatched is then
	// why a case that must be matched against your configurations cannot
	// run.
	Recorded  func(path string) (admission.Handler, error)
	Unmatched error
	user      plan.UserWebhooks
}

// recorded forwards to u's upstreams by recorded path, one forwarder per
// path.
func recordedUpstreams(u plan.UserWebhooks, log *slog.Logger) func(path string) (admission.Handler, error) {
	var mu sync.Mutex
	made := map[string]admission.Handler{}
	return func(path string) (admission.Handler, error) {
		mu.Lock()
		defer mu.Unlock()
		if h, ok := made[path]; ok {
			return h, nil
		}
		r := registration.Route{Path: path, URL: path, Webhooks: []string{"recorded at " + path}}
		if svc, ok := registration.ServiceOf(path); ok {
			r.Service = &svc
		} else if !strings.HasPrefix(path, registration.RoutePrefixURL) {
			return nil, fmt.Errorf("path %s is no webhook of yours that hookback forwarded (one of hookback's own?)", path)
		}
		up, err := upstreamFor(u, r)
		if err != nil {
			return nil, err
		}
		opts := u.UpstreamOptions(up)
		opts.Log = log
		h, err := upstream.New(opts, registration.UpstreamPathOf(path))
		if err != nil {
			return nil, err
		}
		made[path] = h
		return h, nil
	}
}

// Probe reports every upstream that does not accept connections (a TLS
// handshake verified as the forwarding verifies it), named.
func (t *TestSetup) Probe(ctx context.Context) error {
	var errs []error
	for up, err := range probeUpstreams(ctx, t.user) {
		if err != nil {
			errs = append(errs, fmt.Errorf("upstream %s: %w", up, err))
		}
	}
	return errors.Join(errs...)
}

// testHooks reads one rendered configuration's webhooks.
func testHooks(o *unstructured.Unstructured, sessionName string, handlers map[string]admission.Handler) ([]TestWebhook, error) {
	config := strings.TrimSuffix(o.GetName(), "-"+sessionName)
	handler := func(name string, cc admissionregistrationv1.WebhookClientConfig) (string, admission.Handler, error) {
		path := "/"
		if cc.URL != nil {
			path = strings.TrimPrefix(*cc.URL, auditBase)
		}
		h, ok := handlers[path]
		if !ok {
			return "", nil, fmt.Errorf("webhook %s: nothing serves path %s", name, path)
		}
		return path, h, nil
	}
	var out []TestWebhook
	switch o.GetKind() {
	case "MutatingWebhookConfiguration":
		var c admissionregistrationv1.MutatingWebhookConfiguration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &c); err != nil {
			return nil, fmt.Errorf("read %s: %w", o.GetName(), err)
		}
		for i := range c.Webhooks {
			path, h, err := handler(c.Webhooks[i].Name, c.Webhooks[i].ClientConfig)
			if err != nil {
				return nil, err
			}
			out = append(out, TestWebhook{Configuration: config, Path: path, Mutating: &c.Webhooks[i], Handler: h})
		}
	case "ValidatingWebhookConfiguration":
		var c admissionregistrationv1.ValidatingWebhookConfiguration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &c); err != nil {
			return nil, fmt.Errorf("read %s: %w", o.GetName(), err)
		}
		for i := range c.Webhooks {
			path, h, err := handler(c.Webhooks[i].Name, c.Webhooks[i].ClientConfig)
			if err != nil {
				return nil, err
			}
			out = append(out, TestWebhook{Configuration: config, Path: path, Validating: &c.Webhooks[i], Handler: h})
		}
	}
	return out, nil
}
