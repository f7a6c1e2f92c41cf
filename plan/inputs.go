package plan

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/hookback/hookback/advertise"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/rbac"
)

// InspectorConfig is the local admission inspector (--inspector-*).
type InspectorConfig struct {
	// Address is host:port of the page; empty disables the inspector.
	Address string
	// Expose allows an Address beyond loopback.
	Expose bool
	// Keep is how many reviews are kept; zero means DefaultInspectorKeep.
	Keep int
	// Fallback serves on a free loopback port when Address is busy: set
	// when Address is the default, which another hookback may hold.
	Fallback bool
}

// Validate reports every problem at once, naming the fields (field.Error).
func (c InspectorConfig) Validate() error {
	var errs []error
	if c.Keep < 0 {
		errs = append(errs, field.New("plan.InspectorConfig.Keep", strconv.Itoa(c.Keep), fmt.Sprintf("want at least 1, or 0 for the default (%d)", DefaultInspectorKeep)))
	}
	if c.Address != "" && !c.Expose && !advertise.IsLoopbackAddress(c.Address) {
		errs = append(errs, field.Clause("plan.InspectorConfig.Address", c.Address, "is not a loopback address (host:port): pass {plan.InspectorConfig.Expose} to serve reviews beyond this machine"))
	}
	return errors.Join(errs...)
}

// PolicyInput is what --policy names: the manifests (files, directories,
// kustomize directories, "-" for Stdin).
type PolicyInput struct {
	Paths []string
	Stdin io.Reader
}

// PolicyEnforce is start --policy-enforce: the admission policies of
// --policy, with their bindings and the params the files hold, applied to
// the cluster for the session, so that the real apiserver decides. Their
// names carry the session, the bindings are narrowed to the session's
// scope, they carry hookback's labels, and they go with the webhook
// configurations: at exit, or after a crash by the next start or
// `hookback cleanup`.
type PolicyEnforce struct {
	// Enabled is --policy-enforce.
	Enabled bool
	// Input is --policy.
	Input PolicyInput
}

// policyEnforcePermissions are what applying and removing the policies
// takes; a param's own kind is checked by the apiserver when it is applied.
func policyEnforcePermissions(on bool) []rbac.Permission {
	if !on {
		return nil
	}
	var out []rbac.Permission
	for _, res := range []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"} {
		for _, verb := range []string{"list", "create", "patch", "delete"} {
			out = append(out, rbac.Permission{Verb: verb, Group: "admissionregistration.k8s.io", Resource: res,
				Why: "--policy-enforce: apply the session's copies of the policies, and remove them at exit", Part: "policy-enforce"})
		}
	}
	return out
}
