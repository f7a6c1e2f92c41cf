package takeover

import (
	"fmt"
	"strings"
)

// Target is one Deployment to take over.
type Target struct {
	Namespace, Name string
}

// String is NAMESPACE/deployment/NAME, the form ParseTarget reads.
func (t Target) String() string { return t.Namespace + "/deployment/" + t.Name }

// ParseTarget reads [NAMESPACE/]deployment/NAME (deploy and deployments
// are accepted, as kubectl does); without NAMESPACE the Deployment is in
// defaultNS, and an empty defaultNS is an error that says how to name it.
func ParseTarget(s, defaultNS string) (Target, error) {
	parts := strings.Split(s, "/")
	ns := defaultNS
	if len(parts) == 3 {
		ns, parts = parts[0], parts[1:]
	}
	if len(parts) != 2 || parts[1] == "" {
		return Target{}, fmt.Errorf("want [NAMESPACE/]deployment/NAME")
	}
	switch parts[0] {
	case "deployment", "deployments", "deploy", "deployment.apps", "deployments.apps":
	default:
		return Target{}, fmt.Errorf("only a Deployment can be taken over, not %q: want [NAMESPACE/]deployment/NAME", parts[0])
	}
	if ns == "" {
		return Target{}, fmt.Errorf("its namespace is unknown: write NAMESPACE/deployment/%s", parts[1])
	}
	return Target{Namespace: ns, Name: parts[1]}, nil
}
