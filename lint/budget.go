package lint

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Deadline is what the apiserver gives a request without a timeout
// parameter, in seconds, webhooks included: on kube-apiserver 1.36.3 three
// never-answering 10 s webhooks under failurePolicy Ignore admit a pod
// after 30.2 s, four fail it at 34.1 s with "context deadline exceeded"
// (verified on the local control plane; kubernetes#128162).
const Deadline = 34

// target is what a fix aims for, below the deadline: the apiserver's own
// work needs some of it (30 s of 34).
func target(deadline int32) int32 { return max(1, deadline*30/34) }

func (h *Hook) reinvoked() bool {
	return h.Mutating && h.Reinvocation == admissionregistrationv1.IfNeededReinvocationPolicy
}

// weight is how often the webhook can be called for one request.
func (h *Hook) weight() int32 {
	if h.reinvoked() {
		return 2
	}
	return 1
}

// budgetRequests are one request per group, resource and operation any
// webhook's rules name, wildcards taken as pods: the chain each one
// passes through, at worst (an object every selector matches).
func budgetRequests(hooks []*Hook) []request {
	var rs []request
	seen := map[string]bool{}
	for _, h := range hooks {
		for _, rule := range h.Rules {
			ops := rule.Operations
			if slices.Contains(ops, admissionregistrationv1.OperationAll) {
				ops = []admissionregistrationv1.OperationType{create, update, admissionregistrationv1.Delete}
			}
			for _, g := range rule.APIGroups {
				if g == "*" {
					g = ""
				}
				for _, res := range rule.Resources {
					name, sub, _ := strings.Cut(res, "/")
					if name == "*" {
						name = "pods"
					}
					if sub == "*" {
						sub = ""
					}
					ns := "default"
					if clusterScoped[name] || *rule.Scope == admissionregistrationv1.ClusterScope {
						ns = ""
					}
					for _, op := range ops {
						r := request{Group: g, Version: firstVersion(rule.APIVersions), Resource: name, Sub: sub, Op: op, Namespace: ns}
						if k := r.kind(); !seen[k] {
							seen[k] = true
							rs = append(rs, r)
						}
					}
				}
			}
		}
	}
	return rs
}

// chain is the webhooks one request passes through and their worst time.
type chain struct {
	mutating, validating []*Hook
	total                int32
	requests             []string
}

func (c *chain) hooks() []*Hook { return slices.Concat(c.mutating, c.validating) }

func chainFor(hooks []*Hook, r request) *chain {
	c := &chain{}
	var longest int32
	for _, h := range hooks {
		if !h.ruleMatches(r) || (r.Namespace != "" && !selectsName(h.NamespaceSelector, r.Namespace)) {
			continue
		}
		if h.Mutating {
			c.mutating = append(c.mutating, h)
			c.total += h.timeout() * h.weight()
			continue
		}
		c.validating = append(c.validating, h)
		longest = max(longest, h.timeout())
	}
	c.total += longest
	return c
}

// worstChain is the longest chain r passes through in any namespace: each
// namespace a selector names (kubernetes.io/metadata.name), and one that
// none names.
func worstChain(hooks []*Hook, r request) *chain {
	if r.Namespace == "" {
		return chainFor(hooks, r)
	}
	var worst *chain
	for _, ns := range append(namedNamespaces(hooks), "hookback-lint-unnamed") {
		r.Namespace = ns
		if c := chainFor(hooks, r); worst == nil || c.total > worst.total {
			worst = c
		}
	}
	return worst
}

// namedNamespaces are the namespaces the hooks' namespaceSelectors name.
func namedNamespaces(hooks []*Hook) []string {
	var nss []string
	for _, h := range hooks {
		if v, ok := h.NamespaceSelector.MatchLabels[nameLabel]; ok && !slices.Contains(nss, v) {
			nss = append(nss, v)
		}
		for _, e := range h.NamespaceSelector.MatchExpressions {
			for _, v := range e.Values {
				if e.Key == nameLabel && !slices.Contains(nss, v) {
					nss = append(nss, v)
				}
			}
		}
	}
	return nss
}

// selectsName evaluates only a selector's requirements on the namespace's
// name: whatever else it asks of a namespace's labels, some namespace may
// have them (the worst case), but a name is one namespace's alone.
func selectsName(s *metav1.LabelSelector, ns string) bool {
	only := &metav1.LabelSelector{}
	if v, ok := s.MatchLabels[nameLabel]; ok {
		only.MatchLabels = map[string]string{nameLabel: v}
	}
	for _, e := range s.MatchExpressions {
		if e.Key == nameLabel {
			only.MatchExpressions = append(only.MatchExpressions, e)
		}
	}
	return selects(only, map[string]string{nameLabel: ns})
}

func checkBudget(in *Input, r *Rule) []Finding {
	// Mutating webhooks are called one after the other, validating ones
	// all at once: the worst time is the sum of the first and the longest
	// of the second.
	var chains []*chain
	byHooks := map[string]*chain{}
	for _, req := range budgetRequests(in.Hooks) {
		c := worstChain(in.Hooks, req)
		if c.total <= in.deadline {
			continue
		}
		key := names(c.hooks())
		if prev, ok := byHooks[key]; ok {
			prev.requests = append(prev.requests, req.kind())
			continue
		}
		c.requests = []string{req.kind()}
		byHooks[key] = c
		chains = append(chains, c)
	}
	var fs []Finding
	for _, c := range chains {
		fs = append(fs, budgetFinding(r, c, in.deadline))
	}
	return fs
}

func budgetFinding(r *Rule, c *chain, deadline int32) Finding {
	var ignored []string
	top := c.hooks()[0]
	for _, h := range c.hooks() {
		if !h.fails() {
			ignored = append(ignored, h.Name)
		}
		if h.timeout()*h.weight() > top.timeout()*top.weight() {
			top = h
		}
	}
	sev, consequence := Warning, "the request fails when they are slow, though each one answers within its timeout"
	if len(ignored) > 0 {
		sev = Error
		consequence = fmt.Sprintf("when they hang the request fails with \"context deadline exceeded\" although %s set failurePolicy Ignore", strings.Join(ignored, ", "))
	}
	reqs := c.requests
	if len(reqs) > 3 {
		reqs = append(slices.Clone(reqs[:3]), fmt.Sprintf("%d more", len(c.requests)-3))
	}
	var parts []string
	if len(c.mutating) > 0 {
		parts = append(parts, "mutating, one after the other: "+names(c.mutating))
	}
	if len(c.validating) > 0 {
		parts = append(parts, "validating, at once, the longest counts: "+names(c.validating))
	}
	of := "the deadline of a request without a timeout parameter"
	if deadline != Deadline {
		of = "the request's deadline"
	}
	f := top.finding(r, sev, "timeoutSeconds", "%s: %s; up to %ds against %s, %ds: %s",
		strings.Join(reqs, ", "), strings.Join(parts, "; "), c.total, of, deadline, consequence)
	goal := target(deadline)
	if t := top.timeout() - (c.total-goal+top.weight()-1)/top.weight(); t >= 1 {
		f.Fix = []PatchOp{{Op: "add", Path: top.pointer("timeoutSeconds"), Value: t}}
		f.Advice = fmt.Sprintf("the patch brings the chain to %ds; a webhook should answer in well under a second, so short timeouts everywhere are better still", goal)
	} else {
		f.Advice = fmt.Sprintf("lower the timeouts of %s until they add up to %ds or less", names(c.hooks()), goal)
	}
	return f
}
