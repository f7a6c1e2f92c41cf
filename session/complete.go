package session

import (
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/hookback/hookback/internal/errkind"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/upstream"
)

// The defaults of start: Complete gives them to a zero field (Port,
// LeaseNamespace and Session excepted: the CLI sets those, and a zero one
// is an error), and the CLI's flags default to the same values (cli's
// TestDefaultsAreTheLibrarys holds them together). The ports stay clear of
// a controller-runtime manager's (webhooks 9443, probes 8081, metrics 8080
// or 8443), so both run side by side.
const (
	DefaultPort = 8643
	// DefaultHealthAddress is loopback: an empty HealthAddress never
	// listens on every interface.
	DefaultHealthAddress  = "127.0.0.1:8681"
	DefaultLeaseNamespace = "default"
	DefaultLeaseDuration  = 30 * time.Second
	DefaultVerifyTimeout  = 15 * time.Second
	DefaultReloadInterval = 2 * time.Second
	// DefaultLateAnswerTimeout is how long a late answer is still read;
	// a negative UserWebhooks.LateAnswerTimeout reads none.
	DefaultLateAnswerTimeout = upstream.DefaultLateAnswerTimeout
	// LateAnswersOff, as UserWebhooks.LateAnswerTimeout, reads no late
	// answer (any negative value does).
	LateAnswersOff time.Duration = -1
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
	// policies are start --policy's, with their observer in opts.Observers;
	// nil without.
	policies *livePolicies
}

// Complete resolves o into a Config: zero fields take their defaults
// (documented on Options and above), then Validate runs, then your
// manifests are read. Its errors are what Validate and the intake report.
func Complete(o Options) (*Config, error) {
	o = o.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.User, _ = o.User.ParseUpstreams() // Validate reported any error
	return read(o)
}

// CompleteWhatRuns is Complete for the commands that ask only what a run
// of o would need (check, rbac): the defaults and your manifests, without
// the rules of serving (ports, certificates, upstreams, session name).
func CompleteWhatRuns(o Options) (*Config, error) {
	o = o.withDefaults()
	var err error
	if o.User, err = o.User.ParseUpstreams(); err != nil {
		return nil, errkind.New(ErrInvalidConfig, err)
	}
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
	if err := c.readPolicies(); err != nil {
		return nil, err
	}
	return c, nil
}

// Options are the completed options: the defaults filled in. The slices
// and pointers are shared with c: read them, do not change them.
func (c *Config) Options() Options { return c.opts }

// Manifests are your manifests as Complete read them; nil without any.
func (c *Config) Manifests() *manifests.Set { return c.manifests }

// withDefaults fills what a zero Options leaves open; Complete calls it,
// once.
func (c Options) withDefaults() Options {
	if c.HealthAddress == "" {
		c.HealthAddress = DefaultHealthAddress
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.VerifyTimeout == 0 {
		c.VerifyTimeout = DefaultVerifyTimeout
	}
	if c.ReloadInterval == 0 {
		c.ReloadInterval = DefaultReloadInterval
	}
	if c.User.LateAnswerTimeout == 0 {
		c.User.LateAnswerTimeout = DefaultLateAnswerTimeout
	}
	c.Tunnel = c.Tunnel.WithDefaults()
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Certs.Log == nil {
		c.Certs.Log = c.Log
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c
}

// DefaultStateDir is $XDG_STATE_HOME/hookback, else
// ~/.local/state/hookback: where the local CA and certificates live.
func DefaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "hookback")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "hookback")
	}
	return filepath.Join(os.TempDir(), "hookback-state")
}

var notDNSLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// DefaultSession derives <user>-<host> as a DNS label, so names stay
// valid.
func DefaultSession() string {
	name := "hookback"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		name += "-" + strings.SplitN(h, ".", 2)[0]
	}
	return SanitizeSession(name)
}

// SanitizeSession turns s into a session name: lowercase letters, digits
// and '-', at most 40 characters.
func SanitizeSession(s string) string {
	s = notDNSLabel.ReplaceAllString(strings.ToLower(s), "-")
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.Trim(s, "-")
}
