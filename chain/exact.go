package chain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hookback/hookback/internal/jsondiff"
)

// The apiserver's audit annotations of mutating webhooks (k8s.io/apiserver
// pkg/admission/plugin/webhook/mutating/dispatcher.go): one per webhook
// called, per round, with the webhook's index among every mutating
// webhook in the apiserver's order. The patch one is kept at audit level
// Request and above, the mutation one at Metadata.
const (
	AnnotationPatch    = "patch.webhook.admission.k8s.io/"
	AnnotationMutation = "mutation.webhook.admission.k8s.io/"
)

// Exact is the apiserver's own record of which webhook patched what in
// one request.
type Exact struct {
	// Calls are the mutating webhooks called, by round and index.
	Calls []ExactCall `json:"calls"`
}

// ExactCall is one webhook call the audit annotations record.
type ExactCall struct {
	Round         int    `json:"round"`
	Index         int    `json:"index"`
	Configuration string `json:"configuration"`
	Webhook       string `json:"webhook"`
	Mutated       bool   `json:"mutated"`
	// Patch is the JSON patch it answered, when the audit level kept it.
	Patch json.RawMessage `json:"patch,omitempty"`
}

// ExactFromAnnotations reads an audit event's annotations; nil when they
// record no mutating webhook call.
func ExactFromAnnotations(annotations map[string]string) (*Exact, error) {
	calls := map[[2]int]*ExactCall{}
	for k, v := range annotations {
		var prefix string
		switch {
		case strings.HasPrefix(k, AnnotationPatch):
			prefix = AnnotationPatch
		case strings.HasPrefix(k, AnnotationMutation):
			prefix = AnnotationMutation
		default:
			continue
		}
		var round, index int
		if _, err := fmt.Sscanf(strings.TrimPrefix(k, prefix), "round_%d_index_%d", &round, &index); err != nil {
			return nil, fmt.Errorf("chain: audit annotation %q: want round_R_index_I: %w", k, err)
		}
		var val struct {
			Configuration, Webhook string
			Mutated                bool
			Patch                  json.RawMessage
		}
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			return nil, fmt.Errorf("chain: audit annotation %q: %w", k, err)
		}
		c := calls[[2]int{round, index}]
		if c == nil {
			c = &ExactCall{Round: round, Index: index}
			calls[[2]int{round, index}] = c
		}
		c.Configuration, c.Webhook = val.Configuration, val.Webhook
		if prefix == AnnotationPatch {
			c.Patch, c.Mutated = val.Patch, true
		} else {
			c.Mutated = c.Mutated || val.Mutated
		}
	}
	if len(calls) == 0 {
		return nil, nil
	}
	e := &Exact{}
	for _, c := range calls {
		e.Calls = append(e.Calls, *c)
	}
	slices.SortFunc(e.Calls, func(a, b ExactCall) int {
		if a.Round != b.Round {
			return a.Round - b.Round
		}
		return a.Index - b.Index
	})
	return e, nil
}

// attribute names the webhooks whose patch in round touched path, other
// than yours (yourConf's); in round 0, only those called before yours
// when before is set, after it otherwise.
func (e *Exact) attribute(round int, path, yourConf string, before bool) ([]Actor, bool) {
	yours := -1
	for _, c := range e.Calls {
		if c.Round == round && c.Configuration == yourConf {
			yours = c.Index
		}
	}
	var out []Actor
	for _, c := range e.Calls {
		if c.Round != round || len(c.Patch) == 0 || c.Configuration == yourConf {
			continue
		}
		if round == 0 && yours >= 0 && (before && c.Index > yours || !before && c.Index < yours) {
			continue
		}
		for _, p := range patchPaths(c.Patch) {
			if jsondiff.Related(p, path) {
				out = append(out, Actor{Kind: KindMutatingConfiguration, Name: c.Configuration, Webhook: c.Webhook})
				break
			}
		}
	}
	return out, len(out) > 0
}
