package tunnel

import (
	"errors"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/rbac"
)

// Config is `start --tunnel`: the apiserver reaches hookback through
// a relay the session deploys, and hookback reaches the relay through the
// apiserver's pod port-forward, so nothing but the kubeconfig is needed.
type Config struct {
	Enabled bool
	// Namespace holds the relay's Secret, Deployment and Service.
	Namespace string
	// Image runs `hookback relay`.
	Image string
	// AttachTimeout bounds the wait for the relay pod and the first attach.
	AttachTimeout time.Duration
}

// DefaultNamespace is --tunnel-namespace's default.
const DefaultNamespace = "hookback-system"

// DefaultAttachTimeout is how long start waits for the first attach when
// Config.AttachTimeout is zero.
const DefaultAttachTimeout = 2 * time.Minute

// WithDefaults fills what c leaves zero.
func (c Config) WithDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.AttachTimeout == 0 {
		c.AttachTimeout = DefaultAttachTimeout
	}
	return c
}

// Validate reports every problem of an enabled tunnel at once, given the
// session's advertise address (plan.Options.AdvertiseAddress) and TLS
// mode (certs.Options.Mode), which it rules out; each is a field.Error.
func (c Config) Validate(advertiseAddress, tlsMode string) error {
	if !c.Enabled {
		return nil
	}
	var errs []error
	for _, msg := range validation.IsDNS1123Label(c.Namespace) {
		errs = append(errs, field.New("tunnel.Config.Namespace", strconv.Quote(c.Namespace), msg))
	}
	if c.Image == "" {
		errs = append(errs, field.Clause("tunnel.Config.Enabled", "", "needs {tunnel.Config.Image}: this build has no released image"))
	}
	if advertiseAddress != "" {
		errs = append(errs, field.Clause("plan.Options.AdvertiseAddress", "", "and {tunnel.Config.Enabled} exclude each other: with {tunnel.Config.Enabled} the apiserver dials the relay's Service"))
	}
	if tlsMode == certs.ModeACME {
		errs = append(errs, field.Clause("certs.Options.Mode", certs.ModeACME, "cannot certify the relay's Service name (NAME.NAMESPACE.svc): use self-signed or files with {tunnel.Config.Enabled}"))
	}
	return errors.Join(errs...)
}

// labelTunnelNamespace marks a namespace a tunnel session created, so the
// last tunnel session to leave it may delete it again.
const labelTunnelNamespace = "hookback.dev/tunnel-namespace"

// relayResources are the kinds of a relay's objects, in the order they are
// deleted: the Service first, so nothing is routed to a relay on its way out.
var relayResources = []struct {
	gvr  schema.GroupVersionResource
	kind string
}{
	{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "Service"},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment"},
	{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "Secret"},
}

// Permissions are what a tunnel session needs in its namespace ns.
func Permissions(ns string) []rbac.Permission {
	var ps []rbac.Permission
	add := func(group, resource, sub, why string, verbs ...string) {
		for _, v := range verbs {
			ps = append(ps, rbac.Permission{Verb: v, Group: group, Resource: resource, Subresource: sub,
				Namespace: ns, Why: why, Part: "tunnel"})
		}
	}
	for _, r := range relayResources {
		add(r.gvr.Group, r.gvr.Resource, "", "deploy the session's relay", "create", "patch", "list", "delete")
	}
	add("", "pods", "", "find the relay pod", "list")
	// A WebSocket port-forward is a GET the apiserver also authorizes as create.
	add("", "pods", "portforward", "attach to the relay", "get", "create")
	return ps
}

// RelayName is the name of session's relay objects.
func RelayName(session string) string { return "hookback-relay-" + session }
