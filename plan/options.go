package plan

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/errkind"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/project"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/tunnel"
)

// Options is everything one run of start needs, as the user chose it.
// Start from DefaultOptions (the one place start's defaults are set: the
// CLI binds each flag to a field of it, so a program that embeds hookback
// runs as `hookback start` does) and change what you need; Complete then
// resolves what depends on the machine, the project and the environment
// and validates it into the Config every command takes. A zero duration or
// address takes DefaultOptions' value there; Log discards and Out is
// io.Discard when nil. Nothing listens on every interface unless asked:
// health is on loopback, and an empty BindAddress binds the advertised
// host when this machine owns it; every interface only when the apiserver
// is to dial an address this machine does not own (NAT, a forwarded
// port), where no single local address would do.
type Options struct {
	Kubeconfig kubeconfig.Options
	// Session names the run; every object it writes is suffixed with it.
	// Empty: <user>-<host> (DefaultSession).
	Session string
	// AdvertiseAddress is the IP or DNS name the apiserver dials; empty:
	// decided from the kubeconfig (see advertise.Decide).
	AdvertiseAddress string
	// BindAddress is where the webhooks listen; empty: the advertised host
	// when this machine owns it, else every interface.
	BindAddress string
	Port        int
	// HealthAddress serves /healthz, /readyz and /metrics.
	HealthAddress string
	Template      registration.Template
	// Tunnel, when enabled, has the apiserver reach this process through a
	// relay in the cluster instead of at AdvertiseAddress.
	Tunnel tunnel.Config
	// Certs chooses the serving certificate; Run fills in Host.
	Certs          certs.Options
	LeaseNamespace string
	LeaseDuration  time.Duration
	// NoVerify keeps the run going (the failure logged) when verification
	// shows the apiserver cannot reach hookback; by default the run stops,
	// deregistering.
	NoVerify      bool
	VerifyTimeout time.Duration
	// Webhooks and Controllers select built-ins by name, All or None (an
	// element may be a comma list; nil selects none). The default, All,
	// selects none in project mode: name the built-ins to serve beside a
	// project's webhooks. Complete resolves them into names.
	Webhooks       []string
	Controllers    []string
	WebhookOptions webhooks.Options
	// Extra are webhooks of a program that embeds hookback, served beside
	// the built-ins; the template registers them like any other.
	Extra []admission.Webhook
	// Observers are webhooks that watch rather than decide (the policies
	// and the chain view add them): each served at its path and registered
	// by the configurations of its own template (Config.Objects).
	Observers []Observer
	// Policies are start --policy's admission policies, evaluated on
	// every review of an observer registered for them, and beside your
	// webhooks' answers (docs/policies.md); Complete reads them and adds
	// the observer.
	Policies PolicyInput
	// User are the user's own webhook manifests and upstream servers.
	User UserWebhooks
	// ProjectDir is the root of a kubebuilder or Operator SDK project:
	// project mode reads its config/default (User.Manifests), turns the
	// built-ins off and sends your webhooks to controller-runtime's server
	// (project.DefaultUpstream), with a certificate in its directory, where
	// you set none of those. AutoProject: the current directory when it
	// holds a PROJECT file and no manifests are given; empty: none.
	ProjectDir string
	// Project is the project of project mode, as Complete read it from
	// ProjectDir (set it to skip the read).
	Project *project.Project
	// Version is hookback's version, for the tunnel relay's default image
	// (DefaultImage); the CLI passes its build's.
	Version string
	// RedirectConversion selects the CRDs whose conversion webhook is
	// pointed at hookback; nil selects every one.
	RedirectConversion func(crd string) bool
	// TakeOver are deployed operators to pause for the session and give
	// back at its end, each [NAMESPACE/]deployment/NAME (package takeover,
	// docs/take-over.md).
	TakeOver []string
	// TakeOverConfirm allows TakeOver on a cluster that is not local
	// (confirmTakeOver).
	TakeOverConfirm bool
	// Scope narrows every webhook registered (the canary excepted); Run
	// resolves it against the cluster.
	Scope registration.Scope
	// RecordDir, when set, keeps every review and answer there.
	RecordDir string
	// Chain registers observer webhooks around your mutating webhooks and
	// tells, per request, what the whole admission chain did (start
	// --chain, docs/chain.md).
	Chain bool
	// ChainAuditLog is the apiserver's audit log, where hookback can read
	// it (a local cluster's file): the chain views then name each webhook
	// from its audit annotations (--chain-audit-log).
	ChainAuditLog string
	// PolicyEnforce applies --policy's admission policies to the cluster
	// for the session (start --policy-enforce, session/policy_enforce.go).
	PolicyEnforce PolicyEnforce
	// Inspector is the local page of the last reviews; a zero value
	// disables it.
	Inspector InspectorConfig
	// ReloadInterval is the backstop re-read period of watched files.
	ReloadInterval time.Duration
	// Out receives the ready banner.
	Out io.Writer
	Log *slog.Logger
	// Kubectl is the kubectl command the ready banner's suggestions use;
	// empty: $HOOKBACK_KUBECTL, else "kubectl".
	Kubectl string
	// OnReady, when set, is called once the session is registered,
	// verified and ready: the drill sends its requests then.
	OnReady func()
}

// ErrInvalidConfig marks what Options.Validate reports: the CLI shows it as
// a usage error, and errors.Is finds it in what Run, Render and Audit return.
var ErrInvalidConfig = errors.New("plan: invalid configuration")

// validSession is a session name: it suffixes the names of what the session
// writes, so it must stay a DNS label with room for the prefixes.
var validSession = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)

// Validate reports every problem at once, a wrong value as a field.Error
// naming its field (the CLI shows the flag that sets it). Run, Render and
// Audit run it once; a program that embeds hookback gets the same errors as
// the CLI, with field names.
func (c Options) Validate() error {
	r, err := c.Resolve()
	if err != nil {
		// With the other problems, so every one is said at once.
		return errkind.New(ErrInvalidConfig, errors.Join(err, errors.Unwrap(r.validate())))
	}
	return r.validate()
}

// validate is Validate of resolved options.
func (c Options) validate() error {
	var errs []error
	switch {
	case !validSession.MatchString(c.Session):
		errs = append(errs, field.New("plan.Options.Session", strconv.Quote(c.Session), "use lowercase letters, digits and '-', at most 40 characters"))
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, field.New("plan.Options.Port", strconv.Itoa(c.Port), "want a TCP port, 1 to 65535"))
	}
	if c.LeaseNamespace == "" {
		errs = append(errs, errors.New("the lease namespace is empty"))
	}
	// Zero durations take their defaults (Complete).
	if c.VerifyTimeout < 0 {
		errs = append(errs, field.New("plan.Options.VerifyTimeout", c.VerifyTimeout.String(), "want more than 0"))
	}
	if c.LeaseDuration != 0 && c.LeaseDuration < time.Second {
		errs = append(errs, field.New("plan.Options.LeaseDuration", c.LeaseDuration.String(), "want at least 1s"))
	}
	if c.User.LateAnswerTimeout < 0 {
		errs = append(errs, field.New("plan.UserWebhooks.LateAnswerTimeout", c.User.LateAnswerTimeout.String(), "want 0 (off) or more"))
	}
	if err := c.Tunnel.Validate(c.AdvertiseAddress, c.Certs.Mode); err != nil {
		errs = append(errs, err)
	}
	if err := c.Certs.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := assembly.ValidateWebhookOptions(c.WebhookOptions); err != nil {
		errs = append(errs, err)
	}
	if err := takeOverUser(c).Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := validateTakeOver(c); err != nil {
		errs = append(errs, err)
	}
	if err := c.Scope.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.PolicyEnforce.Enabled && len(c.PolicyEnforce.Input.Paths) == 0 {
		errs = append(errs, field.Clause("plan.PolicyEnforce.Enabled", "", "applies the policies of {plan.PolicyInput.Paths}: name them"))
	}
	if slices.Contains(slices.Concat(c.Policies.Paths, c.PolicyEnforce.Input.Paths), "-") && slices.Contains(c.User.Manifests, "-") {
		errs = append(errs, field.Clause("plan.PolicyInput.Paths", "-", "and {plan.UserWebhooks.Manifests} - both read stdin: give one of them a file"))
	}
	if c.ChainAuditLog != "" && !c.Chain {
		errs = append(errs, field.New("plan.Options.ChainAuditLog", c.ChainAuditLog, "it serves {plan.Options.Chain} only: add {plan.Options.Chain}"))
	}
	if err := c.Inspector.Validate(); err != nil {
		errs = append(errs, err)
	}
	paths := map[string]string{}
	for _, w := range c.Extra {
		if w.Name == "" || !strings.HasPrefix(w.Path, "/") || w.Handler == nil {
			errs = append(errs, fmt.Errorf("extra webhook %q needs a name, a path starting with / and a handler", w.Name))
		}
		if prev, ok := paths[w.Path]; ok {
			errs = append(errs, fmt.Errorf("extra webhooks %s and %s both use path %s", prev, w.Name, w.Path))
		}
		paths[w.Path] = w.Name
	}
	errs = append(errs, validateObservers(c.Observers, c.Extra)...)
	if len(errs) == 0 {
		return nil
	}
	return errkind.New(ErrInvalidConfig, errors.Join(errs...))
}

// URL is the webhook URL for host and port, IPv6 hosts bracketed.
func URL(host string, port int) string {
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// LeaseRef is the session Lease as namespace/name: every object the
// session writes names it, and the relay's Pod holds on to it.
func (c Options) LeaseRef() string {
	return c.LeaseNamespace + "/" + registration.LeaseName(c.Session)
}
