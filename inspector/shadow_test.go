package inspector

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/internal/admissionhttp"
)

// yourDenial is the AdmissionReview your webhook answered uid with: a
// denial, where hookback's transport (the test webhook) allowed.
func yourDenial(uid string) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,"allowed":false,"status":{"code":403,"message":"yours says no"}}}`, uid))
}

// shadowCell is the text of the shadow column of review id's row in page;
// ok false when the row has no such cell.
func shadowCell(page string, id uint64) (state, text string, ok bool) {
	row := regexp.MustCompile(fmt.Sprintf(`<tr class="review[^"]*" data-id="%d">.*?</tr>`, id)).FindString(page)
	m := regexp.MustCompile(`<td data-label="Shadow" class="shadow s-([a-z-]+)">([^<]*)</td>`).FindStringSubmatch(row)
	if m == nil {
		return "", "", false
	}
	return m[1], html.UnescapeString(m[2]), true
}

// TestShadowColumn: under --shadow each review's row carries how your
// webhook's answer compared with the deployed one's, on the review's own
// entry, whose decision is your webhook's; the page has the difference in
// full.
func TestShadowColumn(t *testing.T) {
	alike := Shadow{Answer: yourDenial("u-same"), Deployed: `denied: "yours says no"`}
	differ := Shadow{Answer: yourDenial("u-differs"), Deployed: "allowed",
		Differences: []string{"decision: yours denied, deployed allowed", `message: yours "yours says no", deployed ""`}}
	broken := Shadow{Answer: yourDenial("u-broken"), Deployed: "failed: dial tcp 127.0.0.1:1: connection refused",
		DeployedFailure: "dial tcp 127.0.0.1:1: connection refused", Differences: []string{"decision: yours denied, deployed failed"}}
	yoursFailed := Shadow{Failure: "your upstream is down", Deployed: "allowed", Differences: []string{"decision: yours failed, deployed allowed"}}
	tests := []struct {
		name       string
		uid        string
		shadow     *Shadow
		state      string
		text       string
		decision   string
		detailHas  []string
		detailLack []string
	}{
		{name: "same", uid: "u-same", shadow: &alike, state: ShadowSame, text: "same", decision: DecisionDenied,
			detailHas: []string{"same answer as the deployed webhook", "The decision and answer on this page are your webhook", "yours says no"}},
		{name: "differs", uid: "u-differs", shadow: &differ, state: ShadowDiffers,
			text: "differs: decision: yours denied, deployed allowed (+1 more difference)", decision: DecisionDenied,
			detailHas: []string{"your webhook differs from the deployed one", "message: yours &#34;yours says no&#34;, deployed &#34;&#34;", "<dd>allowed</dd>"}},
		{name: "deployed failed", uid: "u-broken", shadow: &broken, state: ShadowDeployedFailed,
			text: "deployed failed: dial tcp 127.0.0.1:1: connection refused", decision: DecisionDenied,
			detailHas: []string{"the deployed webhook failed", "its call failed: dial tcp 127.0.0.1:1: connection refused"}},
		{name: "your call failed", uid: "u-down", shadow: &yoursFailed, state: ShadowDiffers,
			text: "differs: decision: yours failed, deployed allowed", decision: DecisionErrored,
			detailHas: []string{"your upstream is down"}},
		{name: "not compared yet", uid: "u-pending", state: ShadowPending, text: "pending", decision: DecisionAllowed,
			detailHas: []string{"has not been compared with the deployed webhook"}, detailLack: []string{"The decision and answer on this page are your webhook"}},
	}
	f := newFixture(t, StoreOptions{})
	f.store.ShadowWebhooks(testHook.Name)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.shadow != nil {
				f.store.SetShadow(testHook.Name, tt.uid, *tt.shadow)
			}
			f.admit(podReview(tt.uid, "team-a", "fine-"+tt.uid))
			id := f.lastID()
			_, page := f.get("/")
			if !strings.Contains(page, `<th scope="col" title="your webhook's answer compared with the deployed webhook's">Shadow</th>`) {
				t.Fatal("the list has no shadow column")
			}
			state, text, ok := shadowCell(page, id)
			if !ok || state != tt.state || text != tt.text {
				t.Errorf("shadow cell = %q %q (%v), want %q %q", state, text, ok, tt.state, tt.text)
			}
			if want := `class="review d-` + tt.decision + `" data-id="` + fmt.Sprint(id); !strings.Contains(page, want) {
				t.Errorf("row %d is not %s (your webhook's decision)", id, tt.decision)
			}
			_, detail := f.get(fmt.Sprintf("/reviews/%d", id))
			for _, want := range tt.detailHas {
				if !strings.Contains(detail, want) {
					t.Errorf("detail lacks %q:\n%s", want, detail)
				}
			}
			for _, lack := range tt.detailLack {
				if strings.Contains(detail, lack) {
					t.Errorf("detail has %q", lack)
				}
			}
		})
	}
	if n, _ := f.store.usage(); n != len(tests) {
		t.Errorf("%d entries, want %d: one per review, never one per comparison", n, len(tests))
	}
}

// A webhook that is not compared (a built-in beside your webhooks, a late
// answer) shows a dash; without --shadow there is no column at all.
func TestShadowColumnOnlyWhereCompared(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	f.admit(podReview("u1", "team-a", "fine-1"))
	if _, page := f.get("/"); strings.Contains(page, ">Shadow</th>") || strings.Contains(page, `data-label="Shadow"`) {
		t.Fatal("a shadow column without --shadow")
	}
	f.store.ShadowWebhooks("another-hook")
	f.store.RecordServed(admissionhttp.Served{Webhook: "another-hook", Path: "/other", UID: "u2", Review: podReview("u2", "team-a", "late-2"),
		Answer: yourDenial("u2"), Start: time.Now(), Late: "the apiserver had stopped waiting"})
	_, page := f.get("/")
	for _, id := range []uint64{1, 2} {
		if state, text, ok := shadowCell(page, id); !ok || state != shadowNone || text != "–" {
			t.Errorf("review %d: shadow cell %q %q (%v), want a dash", id, state, text, ok)
		}
	}
}

// A comparison that comes after its review was recorded updates the row
// where it is: the stream sends it as an update, not a new review.
func TestShadowUpdateStreams(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	f.store.ShadowWebhooks(testHook.Name)
	f.admit(podReview("u1", "team-a", "fine-1"))
	_, page := f.get("/")
	after := regexp.MustCompile(`data-after="(\d+)"`).FindStringSubmatch(page)
	if after == nil || after[1] != "1" {
		t.Fatalf("data-after = %v, want 1", after)
	}
	s := openStream(t, f.http.URL+"/stream?after="+after[1], nil)
	f.store.SetShadow(testHook.Name, "u1", Shadow{Deployed: `denied: "no"`, Differences: []string{"decision: yours allowed, deployed denied"}})
	event, id, data := s.nextEvent(t)
	if event != "update" || id != "2" || !strings.Contains(data, `data-id="1"`) ||
		!strings.Contains(data, `class="shadow s-differs">differs: decision: yours allowed, deployed denied</td>`) {
		t.Errorf("event %s %s: %s, want an update of row 1 with the difference", event, id, data)
	}
	f.admit(podReview("u3", "team-a", "fine-3"))
	if event, id, data := s.nextEvent(t); event != "review" || id != "3" || !strings.Contains(data, "pending") {
		t.Errorf("event %s %s: %s, want new review 3, pending", event, id, data)
	}
	_, detail := f.get("/reviews/1")
	if strings.Contains(detail, "The decision and answer on this page are your webhook") {
		t.Error("a comparison that came after the review claims the answer shown is yours")
	}
}

// Comparisons whose review is never recorded do not pile up.
func TestShadowWaitingIsBounded(t *testing.T) {
	s := NewStore(StoreOptions{})
	s.ShadowWebhooks("w")
	for i := range maxShadowWaiting + 10 {
		s.SetShadow("w", fmt.Sprint(i), Shadow{Answer: yourDenial(fmt.Sprint(i))})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiting) != maxShadowWaiting || len(s.waitOrder) != maxShadowWaiting {
		t.Fatalf("%d comparisons waiting (%d in order), want %d", len(s.waiting), len(s.waitOrder), maxShadowWaiting)
	}
	if _, ok := s.waiting["w\x00"+"0"]; ok {
		t.Error("the oldest comparison is still waiting")
	}
}
