package inspector

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/hookback/hookback/chain"
	"github.com/hookback/hookback/record"
)

// TestChainView: a chain view (start --chain) attached to your review's
// entry shows on its page, in order, with its warning, and is in the
// entry.json download; a view for a review the store does not keep is
// dropped, and one too big is replaced by a note.
func TestChainView(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	f.admit(podReview("u-chain", "demo", "web"))
	id := f.lastID()
	yours := chain.Registered{Session: "s", Webhooks: []chain.RegisteredWebhook{
		{Configuration: "mine-s", Webhook: "mine", Endpoint: "https://127.0.0.1:8643/mutate-mine"}}}
	view := chainViewOf(t, yours)
	for _, tc := range []struct {
		name, webhook, uid string
		view               []byte
		pageHas            []string
		downloadHas        string
	}{
		{name: "another review's view is not this one's", webhook: testHook.Name, uid: "u-other", view: view},
		{name: "your review's view", webhook: testHook.Name, uid: "u-chain", view: view,
			pageHas: []string{`id="chain"`, "before your webhook", "MutatingWebhookConfiguration crupstream (webhook mpod.cr.io)",
				"<strong>overwritten</strong>", "reinvocation round", "ValidatingWebhookConfiguration check-pods",
				"(configuration mine-s, reinvocationPolicy IfNeeded)"},
			downloadHas: `"chain":`},
		{name: "a view before the session's configurations are listed", webhook: testHook.Name, uid: "u-chain", view: chainViewOf(t, chain.Registered{}),
			pageHas:     []string{"its configuration is not in the cluster's list yet"},
			downloadHas: `"chain":`},
		{name: "too big a view is a note", webhook: testHook.Name, uid: "u-chain", view: []byte(`{"pad":"` + strings.Repeat("x", maxChainBytes) + `"}`),
			downloadHas: "more than the inspector keeps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.store.SetChain(tc.webhook, tc.uid, func() []byte { return tc.view })
			code, page := f.get(fmt.Sprintf("/reviews/%d", id))
			if code != 200 {
				t.Fatalf("detail: %d", code)
			}
			for _, want := range tc.pageHas {
				if !strings.Contains(page, want) {
					t.Errorf("the page lacks %q", want)
				}
			}
			_, body := f.get(fmt.Sprintf("/reviews/%d/entry.json", id))
			var e record.Entry
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatal(err)
			}
			if tc.downloadHas == "" && e.Chain != nil {
				t.Errorf("entry.json has a chain view: %s", e.Chain)
			}
			if tc.downloadHas != "" && !strings.Contains(body, tc.downloadHas) {
				t.Errorf("entry.json lacks %q", tc.downloadHas)
			}
		})
	}
}

// chainViewOf is the view of chain/testdata/overwrite.json, yours being
// what the session registered.
func chainViewOf(t *testing.T, yours chain.Registered) []byte {
	t.Helper()
	b, err := os.ReadFile("../chain/testdata/overwrite.json")
	if err != nil {
		t.Fatal(err)
	}
	var tc struct {
		Chain chain.Chain `json:"chain"`
	}
	if err := json.Unmarshal(b, &tc); err != nil {
		t.Fatal(err)
	}
	cat := chain.Catalog{
		Mutating: []chain.Configuration{{Name: "crupstream", Webhooks: []chain.Webhook{{Name: "mpod.cr.io", Rules: podRules(t)}}},
			// Your configuration: the page names it with your reinvocationPolicy.
			{Name: "mine-s", Session: "s", Webhooks: []chain.Webhook{{Name: "mine", Rules: podRules(t), Path: "/mutate-mine",
				Endpoint: "https://127.0.0.1:8643/mutate-mine", Reinvocation: "IfNeeded"}}}},
		Validating: []chain.Configuration{{Name: "check-pods", Webhooks: []chain.Webhook{{Name: "check.example.com", Rules: podRules(t)}}}},
	}
	v, err := chain.Explain(&tc.Chain, cat, yours, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func podRules(t *testing.T) []admissionregistrationv1.RuleWithOperations {
	t.Helper()
	return []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
}
