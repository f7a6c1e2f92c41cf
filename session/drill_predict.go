package session

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/lint"
)

// drillRules are the lint rules that predict a drill request fails: the
// control plane's namespace, the objects the nodes renew, and the timeouts
// that add up past any request's deadline.
func drillRules(res DrillResult) []string {
	switch {
	case strings.HasPrefix(res.Request, drillOwnPod+" "):
		return []string{"self-deadlock", "chain-budget"}
	case res.Request == drillNodeStatus || res.Request == drillLease:
		return []string{"critical-resources"}
	case res.Namespace == metav1.NamespaceSystem:
		return []string{"control-plane-namespaces", "chain-budget"}
	}
	return []string{"chain-budget"}
}

// Predict sets each result's Predicted: the rules among lint's findings
// (on your manifests as written) that predict the request fails, with
// their severities, so that the report shows prediction and outcome side
// by side.
func (r *DrillReport) Predict(findings []lint.Finding) {
	for i := range r.Results {
		rules := drillRules(r.Results[i])
		var got []string
		for _, f := range findings {
			if slices.Contains(rules, f.Rule) {
				got = append(got, f.Rule+" ("+string(f.Severity)+")")
			}
		}
		slices.Sort(got)
		r.Results[i].Predicted = strings.Join(slices.Compact(got), ", ")
	}
}
