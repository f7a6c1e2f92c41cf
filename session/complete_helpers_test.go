package session

import (
	"context"
	"testing"

	"github.com/hookback/hookback/manifests"
)

// completed is o through CompleteWhatRuns (defaults, manifests read, no
// validation): tests build partial Options.
func completed(t *testing.T, o Options) *Config {
	t.Helper()
	c, err := CompleteWhatRuns(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// render is what `hookback render` runs: Complete, then Render.
func render(ctx context.Context, o Options) ([]byte, error) {
	c, err := Complete(o)
	if err != nil {
		return nil, err
	}
	return Render(ctx, c)
}

// loadUser is loadUserWebhooks on spec's manifests, read as Complete reads
// them.
func loadUser(spec UserWebhooks, cfg Options) (*userWebhooks, error) {
	var m *manifests.Set
	if len(spec.Manifests) > 0 {
		var err error
		if m, err = manifests.Read(spec.Manifests, spec.Stdin); err != nil {
			return nil, err
		}
	}
	return loadUserWebhooks(spec, m, cfg.Session, cfg.Kubeconfig, cfg.Project, cfg.Log)
}
