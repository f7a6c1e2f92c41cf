package audit

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// Comparison is one webhook beside one admission policy, over every
// object both were sent: the migration's question, "does the policy
// behave the same?".
type Comparison struct {
	Webhook       string         `json:"webhook"`
	Policy        string         `json:"policy"`
	Agreements    int            `json:"agreements"`
	Disagreements []Disagreement `json:"disagreements,omitempty"`
}

// Disagreement is one object the webhook and the policy answered
// differently. What says how: decision (one denies, the other does not),
// message (both deny, with different messages), patch (the objects their
// patches produce differ), error (either could not answer).
type Disagreement struct {
	Resource       string  `json:"resource"`
	Namespace      string  `json:"namespace,omitempty"`
	Name           string  `json:"name"`
	Operation      string  `json:"operation"`
	What           string  `json:"what"`
	WebhookResult  Outcome `json:"webhookResult"`
	WebhookMessage string  `json:"webhookMessage,omitempty"`
	PolicyResult   Outcome `json:"policyResult"`
	PolicyMessage  string  `json:"policyMessage,omitempty"`
}

// Compare pairs every webhook with every policy of results (Result.Policy)
// on the objects both reviewed with the same operation, in the order the
// pairs first appear. A policy's message is its failing validation's
// message, without the apiserver's prefix, so that it compares with what
// the webhook says.
func Compare(results []Result) []Comparison {
	type key struct{ resource, ns, name, op string }
	webhooks := map[key][]Result{}
	for _, r := range results {
		if !r.Policy && r.Name != "" {
			k := key{r.Resource, r.Namespace, r.Name, r.Operation}
			webhooks[k] = append(webhooks[k], r)
		}
	}
	var out []Comparison
	index := map[[2]string]int{}
	for _, p := range results {
		if !p.Policy || p.Name == "" {
			continue
		}
		for _, w := range webhooks[key{p.Resource, p.Namespace, p.Name, p.Operation}] {
			pair := [2]string{w.Webhook, p.Webhook}
			i, ok := index[pair]
			if !ok {
				i = len(out)
				index[pair] = i
				out = append(out, Comparison{Webhook: w.Webhook, Policy: p.Webhook})
			}
			if what := disagreement(w, p); what == "" {
				out[i].Agreements++
			} else {
				out[i].Disagreements = append(out[i].Disagreements, Disagreement{
					Resource: p.Resource, Namespace: p.Namespace, Name: p.Name, Operation: p.Operation, What: what,
					WebhookResult: w.Result, WebhookMessage: detail(w), PolicyResult: p.Result, PolicyMessage: detail(p),
				})
			}
		}
	}
	return out
}

// disagreement says how w and p differ, or "" when they agree.
func disagreement(w, p Result) string {
	switch {
	case w.Result == Error || p.Result == Error:
		if w.Result == p.Result && w.Message == p.Message {
			return ""
		}
		return "error"
	case (w.Result == Denied) != (p.Result == Denied):
		return "decision"
	case w.Result == Denied:
		if strings.TrimSpace(w.Message) != strings.TrimSpace(p.Message) {
			return "message"
		}
		return ""
	case w.Result == Patched || p.Result == Patched:
		if !samePatched(w, p) {
			return "patch"
		}
	}
	return ""
}

// samePatched applies each side's patch to the object sent and compares
// the objects: two patches may say the same thing differently.
func samePatched(w, p Result) bool {
	a, errA := patched(w)
	b, errB := patched(p)
	return errA == nil && errB == nil && reflect.DeepEqual(a, b)
}

func patched(r Result) (any, error) {
	doc := r.object
	if len(r.Patch) > 0 {
		ops, err := json.Marshal(r.Patch)
		if err != nil {
			return nil, err
		}
		patch, err := jsonpatch.DecodePatch(ops)
		if err != nil {
			return nil, err
		}
		if doc, err = patch.Apply(doc); err != nil {
			return nil, err
		}
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// DisagreementCount sums the disagreements of every comparison.
func DisagreementCount(cs []Comparison) int {
	n := 0
	for _, c := range cs {
		n += len(c.Disagreements)
	}
	return n
}

// sortComparisons keeps the output stable: by webhook, then policy.
func sortComparisons(cs []Comparison) {
	slices.SortStableFunc(cs, func(a, b Comparison) int {
		if c := strings.Compare(a.Webhook, b.Webhook); c != 0 {
			return c
		}
		return strings.Compare(a.Policy, b.Policy)
	})
}

func (d Disagreement) object() string {
	if d.Namespace == "" {
		return d.Name
	}
	return d.Namespace + "/" + d.Name
}

func (d Disagreement) String() string {
	return fmt.Sprintf("%s %s %s: %s: webhook %s %q, policy %s %q", d.Resource, d.object(), d.Operation, d.What,
		d.WebhookResult, oneLine(d.WebhookMessage), d.PolicyResult, oneLine(d.PolicyMessage))
}
