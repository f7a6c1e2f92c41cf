package incluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/errkind"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/rbac"
	"github.com/hookback/hookback/registration"
)

// Names of what serve keeps in the install's namespace.
const (
	// CASecretName holds the CA every replica issues its serving
	// certificate from, so the caBundle is one and stable.
	CASecretName = "hookback-ca"
	// LeaseName is the leader election Lease: only its holder runs the
	// controllers.
	LeaseName = "hookback"
	// PresenceSession names the session Lease the leader keeps, so that
	// laptop sessions see the install's parts as live.
	PresenceSession = "in-cluster"
)

// ServeConfig is one run of `hookback serve`, already parsed.
type ServeConfig struct {
	Kubeconfig kubeconfig.Options
	// Namespace is the install's: the Service, the CA Secret and the Lease
	// live there.
	Namespace string
	// Identity names this replica in the Lease (the pod's name).
	Identity string
	// BindAddress is where the webhooks listen; empty: every interface.
	BindAddress string
	Port        int
	// HealthAddress serves /healthz, /readyz and /metrics.
	HealthAddress string
	// TemplateName and Template are the webhook configuration template.
	TemplateName string
	Template     []byte
	// Webhooks and Controllers are resolved built-in names.
	Webhooks, Controllers []string
	WebhookOptions        webhooks.Options
	// CertFile and KeyFile, when set, are the serving pair (cert-manager's
	// Secret, mounted), reloaded on change; CAFile is then the caBundle,
	// empty to leave it to cert-manager's cainjector. Unset: a CA kept in
	// the Secret CASecretName.
	CertFile, KeyFile, CAFile string
	// LeaseDuration is how long a leader that stopped renewing keeps the
	// controllers from the other replicas.
	LeaseDuration time.Duration
	// ShutdownDelay is how long a stopping replica keeps answering, not
	// ready, while the Service's endpoints drop it.
	ShutdownDelay time.Duration
	// Out receives one line when the replica is first ready.
	Out io.Writer
	Log *slog.Logger
}

// Defaults of serve's own flags.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultShutdownDelay = 5 * time.Second
	DefaultHealthAddress = ":8080"
)

func (c ServeConfig) withDefaults() ServeConfig {
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c
}

// ErrInvalidConfig marks what ServeConfig.Validate and Options.Validate
// report: the CLI shows it as a usage error, and errors.Is finds it in what
// Serve and InCluster return.
var ErrInvalidConfig = errors.New("incluster: invalid configuration")

// Validate reports every problem at once. Serve runs it; a program that
// embeds hookback gets the same errors as `hookback serve`.
func (c ServeConfig) Validate() error {
	var errs []error
	for _, msg := range validation.IsDNS1123Label(c.Namespace) {
		errs = append(errs, field.New("incluster.ServeConfig.Namespace", strconv.Quote(c.Namespace), msg))
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, field.New("incluster.ServeConfig.Port", strconv.Itoa(c.Port), "want a TCP port, 1 to 65535"))
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, errors.New("give both the certificate and its key files, or neither (a CA kept in a Secret)"))
	}
	if c.CAFile != "" && c.CertFile == "" {
		errs = append(errs, errors.New("a CA file goes with certificate files"))
	}
	// client-go's leader election renews at 2/3 and retries at 2/15 of it.
	if c.LeaseDuration < 3*time.Second || c.LeaseDuration%time.Second != 0 {
		// The Lease records whole seconds.
		errs = append(errs, field.New("incluster.ServeConfig.LeaseDuration", c.LeaseDuration.String(), "want whole seconds, at least 3s"))
	}
	if c.ShutdownDelay < 0 {
		errs = append(errs, field.New("incluster.ServeConfig.ShutdownDelay", c.ShutdownDelay.String(), "want 0 or more"))
	}
	if len(c.Template) == 0 {
		errs = append(errs, errors.New("the webhook template is empty"))
	}
	if err := assembly.ValidateWebhookOptions(c.WebhookOptions); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil
	}
	return errkind.New(ErrInvalidConfig, errors.Join(errs...))
}

// DNSNames are the names the apiserver may use for the Service; it dials
// NAME.NAMESPACE.svc for a clientConfig.service.
func DNSNames(service, namespace string) []string {
	return []string{
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc.cluster.local",
		service + "." + namespace,
	}
}

// ServePermissions are what serve needs: apply the webhook configurations
// (never delete: a pod's exit must not deregister), the CA Secret, the
// leader election Lease and the leader's presence Lease, Events, and the
// selected parts' declarations. No laptop-session permissions (canary
// ConfigMaps, other sessions' Leases, deleting configurations): those are
// `hookback uninstall`'s, run by a person.
func ServePermissions(namespace string, caSecret bool, webhookNames, controllerNames []string) ([]rbac.Permission, error) {
	ctl, err := controllers.Permissions(controllerNames)
	if err != nil {
		return nil, err
	}
	var core []rbac.Permission
	add := func(verb, group, resource, ns, name, why string) {
		core = append(core, rbac.Permission{Verb: verb, Group: group, Resource: resource, Namespace: ns, Name: name,
			Why: why, Part: registration.PartCore})
	}
	for _, res := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"} {
		for _, verb := range []string{"get", "create", "patch"} {
			add(verb, "admissionregistration.k8s.io", res, "", "", "register the webhooks (server-side apply)")
		}
	}
	if caSecret {
		add("get", "", "secrets", namespace, CASecretName, "the shared serving CA")
		add("create", "", "secrets", namespace, "", "the shared serving CA, on first start")
	}
	for _, verb := range []string{"get", "update"} {
		add(verb, "coordination.k8s.io", "leases", namespace, LeaseName, "leader election")
	}
	add("create", "coordination.k8s.io", "leases", namespace, "", "leader election and the presence Lease")
	for _, verb := range []string{"get", "update", "delete"} {
		add(verb, "coordination.k8s.io", "leases", namespace, registration.LeaseName(PresenceSession),
			"the presence Lease: laptop sessions leave what the install's parts share while it is live")
	}
	add("create", "", "events", "", "", "Events")
	add("patch", "", "events", "", "", "Events (repeats)")
	return rbac.Merge(core, webhooks.Permissions(webhookNames), ctl), nil
}
