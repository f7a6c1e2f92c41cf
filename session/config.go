package session

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
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

// Options is everything one run needs, already parsed: the CLI builds it
// from flags, and a Go program that embeds hookback builds it itself, then
// Complete turns it into the Config every command takes. A zero field
// takes its default there: HealthAddress DefaultHealthAddress (loopback),
// LeaseDuration DefaultLeaseDuration, VerifyTimeout DefaultVerifyTimeout,
// ReloadInterval DefaultReloadInterval, User.LateAnswerTimeout
// DefaultLateAnswerTimeout, the tunnel's tunnel.Config.WithDefaults; Log
// discards, Out is io.Discard, Inspector is off. Session, Port,
// LeaseNamespace and Certs.Mode have no default: zero is an error
// (DefaultSession, DefaultPort, DefaultLeaseNamespace and DefaultStateDir
// are what the CLI passes). Nothing listens on every
// interface unless asked: health is on loopback, and an empty BindAddress
// binds the advertised host when this machine owns it; every interface
// only when the apiserver is to dial an address this machine does not own
// (NAT, a forwarded port), where no single local address would do.
type Options struct {
	Kubeconfig kubeconfig.Options
	// Session names the run; every object it writes is suffixed with it.
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
	// RequireVerified stops the run (deregistering) when verification fails;
	// without it a failure is logged and the run goes on (--no-verify).
	RequireVerified bool
	VerifyTimeout   time.Duration
	// Webhooks and Controllers select built-ins by name; nil or empty
	// selects none. Resolve "all" with Select before.
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
	// Project is the kubebuilder or Operator SDK project whose manifests
	// User reads (project mode), for the banner; nil otherwise.
	Project *project.Project
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
	// empty: "kubectl".
	Kubectl string
	// OnReady, when set, is called once the session is registered,
	// verified and ready: the drill sends its requests then.
	OnReady func()
}

// ErrInvalidConfig marks what Options.Validate reports: the CLI shows it as
// a usage error, and errors.Is finds it in what Run, Render and Audit return.
var ErrInvalidConfig = errors.New("session: invalid configuration")

// validSession is a session name: it suffixes the names of what the session
// writes, so it must stay a DNS label with room for the prefixes.
var validSession = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)

// Validate reports every problem at once, a wrong value as a field.Error
// naming its field (the CLI shows the flag that sets it). Run, Render and
// Audit run it once; a program that embeds hookback gets the same errors as
// the CLI, with field names.
func (c Options) Validate() error {
	var errs []error
	switch {
	case c.Session == "":
		errs = append(errs, errors.New("the session name is empty"))
	case !validSession.MatchString(c.Session):
		errs = append(errs, field.New("session.Options.Session", strconv.Quote(c.Session), "use lowercase letters, digits and '-', at most 40 characters"))
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, field.New("session.Options.Port", strconv.Itoa(c.Port), "want a TCP port, 1 to 65535"))
	}
	if c.LeaseNamespace == "" {
		errs = append(errs, errors.New("the lease namespace is empty"))
	}
	// Zero durations take their defaults (Complete).
	if c.VerifyTimeout < 0 {
		errs = append(errs, field.New("session.Options.VerifyTimeout", c.VerifyTimeout.String(), "want more than 0"))
	}
	if c.LeaseDuration != 0 && c.LeaseDuration < time.Second {
		errs = append(errs, field.New("session.Options.LeaseDuration", c.LeaseDuration.String(), "want at least 1s"))
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
	if c.ChainAuditLog != "" && !c.Chain {
		errs = append(errs, field.New("session.Options.ChainAuditLog", c.ChainAuditLog, "it serves {session.Options.Chain} only: add {session.Options.Chain}"))
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

// leaseRef is the session Lease as namespace/name: every object the
// session writes names it, and the relay's Pod holds on to it.
func (c Options) leaseRef() string {
	return c.LeaseNamespace + "/" + registration.LeaseName(c.Session)
}
