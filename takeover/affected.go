package takeover

import (
	"fmt"
	"strings"
)

// Affected says, for the confirmation a take-over needs off a local
// cluster, who the take-over of ops affects: each Deployment paused, each
// webhook configuration that calls this machine instead (whose objects, by
// its namespaceSelector) and each CRD whose conversion does (every reader
// of its objects).
func Affected(ops []*Operator) string {
	var out []string
	for _, op := range ops {
		out = append(out, fmt.Sprintf("Deployment %s paused (%d replicas to 0)", op.Target, op.Replicas))
		for _, c := range op.Configurations {
			out = append(out, fmt.Sprintf("%s %s (%s) served by this machine for objects in %s", c.Kind, c.Name, strings.Join(c.Webhooks, ", "), strings.Join(c.Namespaces, "; ")))
		}
		for _, crd := range op.CRDs {
			out = append(out, "CustomResourceDefinition "+crd+": its conversion served by this machine for every reader")
		}
	}
	return strings.Join(out, "; ")
}
