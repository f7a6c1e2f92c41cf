package inspector

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/record"
)

func served(review, answer []byte) admissionhttp.Served {
	return admissionhttp.Served{Webhook: "w", Path: "/w", Review: review, Answer: answer, Start: time.Now()}
}

func TestStoreBounds(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 100)
	tests := []struct {
		name      string
		keep      int
		maxBytes  int64
		add       int
		size      int
		wantIDs   []uint64
		wantBytes int64
		wantBig   bool
	}{
		{name: "under both bounds", keep: 5, maxBytes: 10_000, add: 3, size: 100, wantIDs: []uint64{1, 2, 3}, wantBytes: 300},
		{name: "count bound drops the oldest", keep: 3, maxBytes: 10_000, add: 5, size: 100, wantIDs: []uint64{3, 4, 5}, wantBytes: 300},
		{name: "byte bound drops the oldest", keep: 10, maxBytes: 250, add: 5, size: 100, wantIDs: []uint64{4, 5}, wantBytes: 200},
		{name: "a review bigger than the bound keeps no body", keep: 10, maxBytes: 50, add: 2, size: 100, wantIDs: []uint64{1, 2}, wantBytes: 0, wantBig: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore(StoreOptions{Keep: tt.keep, MaxBytes: tt.maxBytes})
			for i := 0; i < tt.add; i++ {
				s.RecordServed(served(body[:tt.size], nil))
			}
			var ids []uint64
			for _, e := range s.kept() {
				ids = append(ids, e.id)
				if e.tooBig != tt.wantBig {
					t.Errorf("entry %d tooBig = %v", e.id, e.tooBig)
				}
			}
			if fmt.Sprint(ids) != fmt.Sprint(tt.wantIDs) {
				t.Errorf("kept %v, want %v", ids, tt.wantIDs)
			}
			if _, b := s.usage(); b != tt.wantBytes {
				t.Errorf("bytes = %d, want %d", b, tt.wantBytes)
			}
			if s.get(tt.wantIDs[0]) == nil || (tt.wantIDs[0] > 1 && s.get(1) != nil) {
				t.Error("get does not follow what is kept")
			}
		})
	}
}

// The transport reuses its buffers: the store must have copied them.
func TestStoreCopies(t *testing.T) {
	s := NewStore(StoreOptions{})
	rv, ans := podReview("u1", "default", "web"), []byte(`{"response":{"allowed":true}}`)
	s.RecordServed(served(rv, ans))
	for i := range rv {
		rv[i] = 'z'
	}
	ans[0] = 'z'
	kept, keptAnswer := s.kept()[0].bodies()
	if !bytes.Contains(kept, []byte(`"name":"web"`)) || keptAnswer[0] != '{' {
		t.Errorf("the store kept the caller's buffers: %s / %s", kept, keptAnswer)
	}
}

func TestRedaction(t *testing.T) {
	patch := []byte(`[{"op":"add","path":"/data/token","value":"dG9rZW4tdmFsdWU="},{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`)
	answer := mustJSON(t, map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"response": map[string]any{"uid": "s1", "allowed": true, "patchType": "JSONPatch", "patch": patch}})
	escaped := bytes.Replace(secretReview("s2", "default", "db"), []byte(`"kind":"Secret"`), []byte(`"kind":"\u0053ecret"`), 1)
	tests := []struct {
		name       string
		review     []byte
		answer     []byte
		same       bool
		wantAbsent []string
	}{
		{name: "a pod is kept as received", review: podReview("p1", "default", "web"), same: true},
		{name: "a Secret's data is redacted", review: secretReview("s1", "default", "db"), answer: answer,
			wantAbsent: []string{secretData, "dG9rZW4tdmFsdWU="}},
		{name: "an escaped kind is a Secret too", review: escaped, wantAbsent: []string{secretData}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore(StoreOptions{})
			s.RecordServed(served(tt.review, tt.answer))
			e := s.kept()[0]
			kept, keptAnswer := e.bodies()
			if tt.same && !bytes.Equal(kept, tt.review) {
				t.Errorf("review changed:\n%s", kept)
			}
			for _, secret := range tt.wantAbsent {
				if bytes.Contains(kept, []byte(secret)) || strings.Contains(string(keptAnswer), secret) {
					t.Errorf("%q kept", secret)
				}
			}
			if !tt.same && !bytes.Contains(kept, []byte(record.Redacted)) {
				t.Errorf("no redaction marker in %s", kept)
			}
			if tt.answer != nil {
				d := detailOf(e, SourceBuiltIn)
				if len(d.Ops) != 2 || d.Ops[0].Value != `"`+record.Redacted+`"` || d.Ops[1].Value != `{"a":"b"}` {
					t.Errorf("patch ops = %+v", d.Ops)
				}
				for _, l := range d.Diff {
					if strings.Contains(l.Right, "dG9rZW4") || strings.Contains(l.Left, secretData) {
						t.Errorf("diff shows secret data: %+v", l)
					}
				}
			}
		})
	}
}

// An Event a webhook records while deciding goes with its review.
func TestEventsGoWithTheirReview(t *testing.T) {
	s := NewStore(StoreOptions{})
	start := time.Now()
	s.AddEvent("other", Event{Time: start, Reason: "NotMine"})
	s.AddEvent("w", Event{Time: start.Add(-time.Hour), Reason: "Stale"})
	s.AddEvent("w", Event{Time: start.Add(time.Millisecond), Type: "Warning", Reason: "SidecarSkipped", Note: "no annotation"})
	x := served(podReview("u", "default", "web"), []byte(`{"response":{"allowed":true}}`))
	x.Start = start
	s.RecordServed(x)
	s.RecordServed(x)
	all := s.kept()
	if len(all[0].events) != 1 || all[0].events[0].Reason != "SidecarSkipped" {
		t.Errorf("first review's events = %+v", all[0].events)
	}
	if len(all[1].events) != 0 {
		t.Errorf("second review got events %+v", all[1].events)
	}
}

// A review dropped while a page was about to show it says so, rather than
// showing the bytes of the review that took its place.
func TestStoreDroppedBeforeRead(t *testing.T) {
	s := NewStore(StoreOptions{Keep: 1})
	s.RecordServed(served(podReview("u1", "default", "first"), nil))
	first := s.kept()[0]
	s.RecordServed(served(podReview("u2", "default", "second"), nil))
	if review, _ := first.bodies(); review != nil {
		t.Errorf("a dropped review reads %s", review)
	}
	if got := first.summary(); got.Name != "" || !strings.Contains(got.ParseError, "no longer kept") {
		t.Errorf("summary of a dropped review = %+v", got)
	}
}
