package session

import (
	"context"
	"testing"

	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/plan"
)

// completed is o through Complete, with start's port, lease namespace
// and certificates where o has none (tests build partial Options).
func completed(t *testing.T, o plan.Options) *plan.Config {
	t.Helper()
	d := plan.DefaultOptions()
	if o.Port == 0 {
		o.Port = d.Port
	}
	if o.LeaseNamespace == "" {
		o.LeaseNamespace = d.LeaseNamespace
	}
	if o.WebhookOptions.SidecarImage == "" {
		o.WebhookOptions = d.WebhookOptions
	}
	if o.Certs.Mode == "" {
		o.Certs = certs.Options{Mode: certs.ModeSelfSigned, StateDir: t.TempDir()}
	}
	c, err := plan.Complete(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// render is what `hookback render` runs: Complete, then Render.
func render(ctx context.Context, o plan.Options) ([]byte, error) {
	c, err := plan.Complete(o)
	if err != nil {
		return nil, err
	}
	return Render(ctx, c)
}

// loadUser is loadUserWebhooks on spec's manifests, read as Complete reads
// them.
func loadUser(spec plan.UserWebhooks, cfg plan.Options) (*userWebhooks, error) {
	var m *manifests.Set
	if len(spec.Manifests) > 0 {
		var err error
		if m, err = manifests.Read(spec.Manifests, spec.Stdin); err != nil {
			return nil, err
		}
	}
	return loadUserWebhooks(spec, m, cfg.Session, cfg.Kubeconfig, cfg.Project, cfg.Log)
}

// resolved is o as Complete resolves it (defaults, session name), for the
// runs tests build by hand.
func resolved(o plan.Options) plan.Options {
	r, err := o.Resolve()
	if err != nil {
		panic(err) // a test's own Options
	}
	return r
}
