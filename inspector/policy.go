package inspector

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hookback/hookback/audit"
	"github.com/hookback/hookback/policy"
)

// PolicyView is what start --policy tells about one review: the
// policies' evaluation (a review of the policies' observer), or each
// policy that matches it beside the answer of the webhook that received
// it (a migration). It is JSON on the review's entry, in --record-dir's
// policy/ directory, and in the review's entry.json.
type PolicyView struct {
	Webhook    string             `json:"webhook"`
	Path       string             `json:"path,omitempty"`
	Request    ReviewIdentity     `json:"request"`
	Evaluation *policy.Evaluation `json:"evaluation,omitempty"`
	// Error is a request the policies could not be evaluated on.
	Error       string             `json:"error,omitempty"`
	Comparisons []PolicyComparison `json:"comparisons,omitempty"`
}

// PolicyComparison is one policy beside a webhook's answer: what the
// policy made of the request alone, and how its answer differs (as audit
// --policy judges it).
type PolicyComparison struct {
	Policy       string              `json:"policy"`
	Agree        bool                `json:"agree"`
	Disagreement *audit.Disagreement `json:"disagreement,omitempty"`
	Evaluation   *policy.Evaluation  `json:"evaluation,omitempty"`
	Error        string              `json:"error,omitempty"`
}

// ReviewIdentity names a review without its object.
type ReviewIdentity struct {
	UID       string `json:"uid"`
	Operation string `json:"operation"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// maxPolicyBytes bounds one kept view, as maxChainBytes does the chain's.
const maxPolicyBytes = 256 << 10

// maxPolicyWaiting bounds the views kept for reviews not recorded yet:
// a view is made before its review's answer is sent, so it usually waits
// a moment for the review.
const maxPolicyWaiting = 1024

// PolicyColumn turns the list's policy column on (start --policy).
func (s *Store) PolicyColumn() { s.policyCol.Store(true) }

// SetPolicy attaches view (PolicyView as JSON) to the entry of webhook's
// review uid, or keeps it until that review is recorded, and tells the
// open pages.
func (s *Store) SetPolicy(webhook, uid string, view []byte) {
	if len(view) > maxPolicyBytes {
		view, _ = json.Marshal(PolicyView{Webhook: webhook, Error: fmt.Sprintf("the evaluation is %d bytes, more than the inspector keeps (%d)", len(view), maxPolicyBytes)})
	}
	view = append([]byte(nil), view...)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := s.n - 1; i >= 0; i-- {
		if e := s.ring[(s.start+i)%s.keep]; e.uid == uid && e.webhook == webhook && e.late == "" {
			e.policy = view
			s.nextID++
			e.seq = s.nextID
			s.wake()
			return
		}
	}
	if s.policyWaiting == nil {
		s.policyWaiting = map[string][]byte{}
	}
	key := webhook + "\x00" + uid
	if _, ok := s.policyWaiting[key]; !ok {
		s.policyOrder = append(s.policyOrder, key)
	}
	s.policyWaiting[key] = view
	for len(s.policyOrder) > maxPolicyWaiting {
		delete(s.policyWaiting, s.policyOrder[0])
		s.policyOrder = s.policyOrder[1:]
	}
}

// claimPolicy takes the view waiting for webhook's review uid. Called with
// s.mu held.
func (s *Store) claimPolicy(webhook, uid string) []byte {
	key := webhook + "\x00" + uid
	v, ok := s.policyWaiting[key]
	if !ok {
		return nil
	}
	delete(s.policyWaiting, key)
	for i, k := range s.policyOrder {
		if k == key {
			s.policyOrder = append(s.policyOrder[:i], s.policyOrder[i+1:]...)
			break
		}
	}
	return v
}

// policyJSON is e's view; nil when none is known.
func (e *entry) policyJSON() []byte {
	e.store.mu.Lock()
	defer e.store.mu.Unlock()
	return e.policy
}

// policyDetail is the view as the review's page shows it.
type policyDetail struct {
	PolicyView
	ParseError string
}

// policyDetailOf parses e's view; nil when it has none.
func policyDetailOf(e *entry) *policyDetail {
	b := e.policyJSON()
	if b == nil {
		return nil
	}
	var d policyDetail
	if err := json.Unmarshal(b, &d.PolicyView); err != nil {
		d.ParseError = "the policy evaluation does not parse: " + err.Error()
	}
	return &d
}

// policyOf is e's policy column: its state (admit, deny, agree,
// disagree, error, or "" with no view) and text; both "" when the list
// has no column.
func (e *entry) policyOf() (state, text string) {
	if !e.store.policyCol.Load() {
		return "", ""
	}
	d := policyDetailOf(e)
	switch {
	case d == nil:
		return "none", "–"
	case d.ParseError != "" || d.Error != "":
		return "error", short(d.ParseError + d.Error)
	case len(d.Comparisons) > 0:
		var differ []string
		for _, c := range d.Comparisons {
			if !c.Agree && c.Disagreement != nil {
				differ = append(differ, c.Disagreement.What+" with "+c.Policy)
			}
		}
		if len(differ) > 0 {
			return "disagree", short("disagrees: " + strings.Join(differ, "; "))
		}
		if len(d.Comparisons) == 1 {
			return "agree", "agrees with 1 policy"
		}
		return "agree", fmt.Sprintf("agrees with %d policies", len(d.Comparisons))
	case d.Evaluation != nil:
		return evaluationState(d.Evaluation)
	}
	return "none", "–"
}

// evaluationState is an evaluation in the list's words: what the
// apiserver would do with the request.
func evaluationState(ev *policy.Evaluation) (string, string) {
	switch {
	case len(ev.Bindings) == 0:
		return "none", "no binding matched"
	case !ev.Allowed:
		return "deny", short("would deny: " + ev.Reason())
	case len(ev.Warnings) > 0:
		return "warn", short("would warn: " + ev.Warnings[0])
	case ev.Patched:
		return "mutate", "would mutate: " + plural(len(ev.Patch), "op")
	}
	return "admit", "would admit (" + plural(len(ev.Bindings), "binding") + ")"
}
