package inspector

import (
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/hookback/hookback/audit"
	"github.com/hookback/hookback/policy"
)

// policyCell is the text of the policy column of review id's row in page.
func policyCell(page string, id uint64) (state, text string, ok bool) {
	row := regexp.MustCompile(fmt.Sprintf(`<tr class="review[^"]*" data-id="%d">.*?</tr>`, id)).FindString(page)
	m := regexp.MustCompile(`<td data-label="Policy" class="policy p-([a-z-]+)">([^<]*)</td>`).FindStringSubmatch(row)
	if m == nil {
		return "", "", false
	}
	return m[1], html.UnescapeString(m[2]), true
}

// TestPolicyColumn: under --policy each review's row says what the
// policies would do, or how they compared with the webhook's answer,
// whether the view came before the review was recorded or after; the
// page shows every binding, validation and variable, and entry.json
// carries the view.
func TestPolicyColumn(t *testing.T) {
	denied := PolicyView{Webhook: testHook.Name, Evaluation: &policy.Evaluation{Allowed: false, Message: "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: too many",
		Bindings: []policy.BindingResult{{Kind: policy.KindValidating, Policy: "p", Binding: "b", Decision: policy.Deny, Actions: []string{"deny"},
			Message:     "too many",
			Validations: []policy.ValidationResult{{Index: 0, Expression: "object.spec.replicas <= 5", Result: "false", Message: "too many"}},
			Variables:   []policy.VariableValue{{Name: "replicas", Value: 7}}}}}}
	agreed := PolicyView{Webhook: testHook.Name, Comparisons: []PolicyComparison{{Policy: "ValidatingAdmissionPolicy/p", Agree: true}}}
	differ := PolicyView{Webhook: testHook.Name, Comparisons: []PolicyComparison{{Policy: "ValidatingAdmissionPolicy/p",
		Disagreement: &audit.Disagreement{What: "message", WebhookResult: audit.Denied, WebhookMessage: "no", PolicyResult: audit.Denied, PolicyMessage: "never"}}}}
	tests := []struct {
		name        string
		view        *PolicyView
		after       bool
		state, text string
		detailHas   []string
	}{
		{name: "evaluated before the review is recorded", view: &denied, state: "deny", text: "would deny: too many",
			detailHas: []string{"object.spec.replicas &lt;= 5", "(the apiserver would deny)", `<code class="value">7</code>`}},
		{name: "compared after", view: &agreed, after: true, state: "agree", text: "agrees with 1 policy", detailHas: []string{"ValidatingAdmissionPolicy/p: agrees"}},
		{name: "disagreement", view: &differ, state: "disagree", text: "disagrees: message with ValidatingAdmissionPolicy/p",
			detailHas: []string{"message: webhook denied <code>no</code>, policy denied <code>never</code>"}},
		{name: "none", state: "none", text: "–"},
	}
	f := newFixture(t, StoreOptions{})
	f.store.PolicyColumn()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uid := fmt.Sprintf("u-%d", i)
			var b []byte
			if tt.view != nil {
				b = mustJSON(t, tt.view)
			}
			if tt.view != nil && !tt.after {
				f.store.SetPolicy(testHook.Name, uid, b)
			}
			f.admit(podReview(uid, "team-a", "fine-"+uid))
			if tt.view != nil && tt.after {
				f.store.SetPolicy(testHook.Name, uid, b)
			}
			id := f.lastID()
			_, page := f.get("/")
			if !strings.Contains(page, `>Policy</th>`) {
				t.Fatal("the list has no policy column")
			}
			if state, text, ok := policyCell(page, id); !ok || state != tt.state || text != tt.text {
				t.Errorf("policy cell %q %q (%v), want %q %q", state, text, ok, tt.state, tt.text)
			}
			_, detail := f.get(fmt.Sprintf("/reviews/%d", id))
			for _, want := range tt.detailHas {
				if !strings.Contains(detail, want) {
					t.Errorf("the review's page lacks %s", want)
				}
			}
			_, entry := f.get(fmt.Sprintf("/reviews/%d/entry.json", id))
			var e struct {
				Policy *PolicyView `json:"policy"`
			}
			if err := json.Unmarshal([]byte(entry), &e); err != nil {
				t.Fatal(err)
			}
			if (e.Policy != nil) != (tt.view != nil) {
				t.Errorf("entry.json policy %+v, want one: %v", e.Policy, tt.view != nil)
			}
		})
	}
}
