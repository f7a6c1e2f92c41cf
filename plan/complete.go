package plan

import (
	"github.com/hookback/hookback/internal/errkind"
	"github.com/hookback/hookback/manifests"
)

// Config is Options completed: every default resolved (once, here), every
// rule checked, and your manifests read (once: stdin can be read only
// once). Build it with Complete; start (Run), render (Render), audit
// (Audit), rbac (RBAC) and check (Permissions) all take it, and none of
// them changes it: what a run resolves against the cluster (the scope, the
// advertise address) it keeps in its own state.
type Config struct {
	opts Options
	// manifests are your --webhook-config manifests as read at Complete;
	// nil without any.
	manifests *manifests.Set
}

// Complete resolves o into a Config (the session name, project mode and
// its defaults, the built-ins selected, HOOKBACK_KUBECTL, the relay image;
// see Options), validates it, and reads your manifests. Its errors are
// what Validate and the intake report.
func Complete(o Options) (*Config, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o, err := o.Resolve()
	if err != nil {
		return nil, errkind.New(ErrInvalidConfig, err)
	}
	o.User, _ = o.User.ParseUpstreams() // Validate reported any error
	return read(o)
}

// read reads o's manifests into a Config.
func read(o Options) (*Config, error) {
	c := &Config{opts: o}
	if len(o.User.Manifests) > 0 {
		m, err := manifests.Read(o.User.Manifests, o.User.Stdin)
		if err != nil {
			return nil, err
		}
		c.manifests = m
	}
	return c, nil
}

// Options are the completed options: resolved and valid. The slices
// and pointers are shared with c: read them, do not change them.
func (c *Config) Options() Options { return c.opts }

// Manifests are your manifests as Complete read them; nil without any.
func (c *Config) Manifests() *manifests.Set { return c.manifests }

// WithManifests is c reading m instead of the manifests Complete read:
// start --take-over's, with the deployed operator's configurations.
func (c *Config) WithManifests(m *manifests.Set) *Config {
	out := *c
	out.manifests = m
	return &out
}

// With is a copy of c with its options changed by change, for a run
// derived from another (the drill's, with a fault; a test's run built by
// hand). The change is not validated again: keep it valid.
func (c *Config) With(change func(*Options)) *Config {
	out := *c
	change(&out.opts)
	return &out
}
