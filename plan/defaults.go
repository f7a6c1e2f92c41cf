package plan

import (
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/tunnel"
	"github.com/hookback/hookback/upstream"
)

// The defaults of start, given by DefaultOptions (the one place they are
// set: the CLI's flags bind to its fields, so their defaults and help are
// these). The ports stay clear of a controller-runtime manager's (webhooks
// 9443, probes 8081, metrics 8080 or 8443), so both run side by side.
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
	// zero reads none.
	DefaultLateAnswerTimeout = upstream.DefaultLateAnswerTimeout
	// DefaultInspectorAddress is the inspector's page, on loopback; when
	// another hookback holds it, a free loopback port serves instead.
	DefaultInspectorAddress = "127.0.0.1:8682"
	// DefaultInspectorKeep is how many reviews the inspector keeps.
	DefaultInspectorKeep = 500
	// AutoProject, as ProjectDir, is project mode when the current
	// directory holds a kubebuilder or Operator SDK PROJECT file and no
	// manifests are given.
	AutoProject = "auto"
	// All and None select every built-in, or none (Webhooks, Controllers).
	All  = "all"
	None = "none"
)

// DefaultOptions are start's defaults. A program that embeds hookback
// starts from them and changes what it needs; Complete resolves what
// depends on the machine, the project or the cluster (the session name,
// project mode, the relay image, HOOKBACK_KUBECTL).
func DefaultOptions() Options {
	return Options{
		Port: DefaultPort, HealthAddress: DefaultHealthAddress, LeaseNamespace: DefaultLeaseNamespace,
		LeaseDuration: DefaultLeaseDuration, VerifyTimeout: DefaultVerifyTimeout, ReloadInterval: DefaultReloadInterval,
		Certs: certs.Options{Mode: certs.ModeSelfSigned, StateDir: DefaultStateDir(),
			ACME: certs.ACMEOptions{CA: certs.LetsEncryptCA, Profile: "shortlived", HTTPPort: 80, RenewCheckInterval: 10 * time.Minute}},
		Webhooks: []string{All}, Controllers: []string{All},
		WebhookOptions: webhooks.DefaultOptions(),
		Tunnel:         tunnel.Config{Namespace: tunnel.DefaultNamespace},
		User:           UserWebhooks{LateAnswerTimeout: DefaultLateAnswerTimeout, Stdin: os.Stdin},
		Inspector:      InspectorConfig{Address: DefaultInspectorAddress, Keep: DefaultInspectorKeep},
		Policies:       PolicyInput{Stdin: os.Stdin},
		ProjectDir:     AutoProject,
	}
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

// pseudoVersion matches a Go pseudo-version's tail: the commit time and
// the 12-hex commit prefix (v0.0.0-20261123055517-0ea58dc0ffee).
var pseudoVersion = regexp.MustCompile(`[-.]\d{14}-[0-9a-f]{12}$`)

// DefaultImage is the released image of hookback at version, for the
// tunnel's relay. The release workflow pushes
// ghcr.io/hookback/hookback:<git describe> for every tag and every commit
// on main, and :latest for main. A build from a tree with uncommitted
// changes runs the image of its commit (it has none of its own); a dev
// build, a go-command pseudo-version or a release snapshot (goreleaser
// --snapshot, never pushed) runs :latest.
func DefaultImage(version string) string {
	v := strings.TrimSuffix(strings.TrimSuffix(version, "+dirty"), "-dirty")
	if v == "" || v == "dev" || pseudoVersion.MatchString(v) || strings.Contains(v, "-SNAPSHOT-") {
		return "ghcr.io/hookback/hookback:latest"
	}
	return "ghcr.io/hookback/hookback:" + v
}
