package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/record"
	"github.com/hookback/hookback/upstream"
)

// lateServer answers each review, denying, once release is closed for
// names starting with "stuck-", after delay for the others.
func lateServer(t *testing.T, delay time.Duration, release <-chan struct{}) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rv struct {
			APIVersion string `json:"apiVersion"`
			Request    struct{ UID, Name string }
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&rv); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if strings.HasPrefix(rv.Request.Name, "stuck-") {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		} else {
			time.Sleep(delay)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": rv.APIVersion, "kind": "AdmissionReview",
			"response": map[string]any{"uid": rv.Request.UID, "allowed": false, "status": map[string]any{"code": 403, "message": "late no to " + rv.Request.Name}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func lateRequest(t *testing.T, uid, name string) admission.Request {
	t.Helper()
	raw := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":%q,"name":%q,"namespace":"team-a",`+
		`"operation":"CREATE","kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"},`+
		`"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"team-a"}}}}`, uid, name, name)
	req, err := admission.NewRequest([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestLateDrain: hookback stops while two late answers are awaited. The one
// that comes within the drain is reported as any late answer; the one that
// does not is recorded, marked late, without an answer, with one log line
// (no object body), and hookback replay sends it again. Drain never waits
// past its bound.
func TestLateDrain(t *testing.T) {
	release := make(chan struct{})
	srv := lateServer(t, 300*time.Millisecond, release)
	// Before the server closes, which waits for its handlers.
	t.Cleanup(func() { close(release) })
	var logs syncBuffer
	l := newLateReport(slog.New(slog.NewTextHandler(&logs, nil)), time.Minute)
	dir := t.TempDir()
	// As the assembly attaches it: the record directory alone.
	if err := l.attach(sinks{recordDir: dir, log: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(srv.URL)
	opts := upstream.Options{Base: base, LateAnswerTimeout: time.Minute}
	l.forward(&opts, "vcm.example.com", "/vcm", []string{"Ignore"})
	fwd, err := upstream.New(opts, "/validate")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"slow-1", "stuck-2"} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		if resp := fwd.Handle(ctx, lateRequest(t, "uid-"+name, name)); !resp.Failed() {
			t.Fatalf("%s answered in time: %+v", name, resp)
		}
		cancel()
	}
	start := time.Now()
	l.drainWithin(2 * time.Second)
	if took := time.Since(start); took < 2*time.Second || took > 4*time.Second {
		t.Errorf("drain took %s, want its 2s bound: one answer never comes", took)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*_late.json"))
	if len(files) != 2 {
		t.Fatalf("%d late records, want 2 (slow-1 answered, stuck-2 not)", len(files))
	}
	entries, err := record.ReadEntries(files)
	if err != nil {
		t.Fatalf("hookback replay cannot read the records: %v", err)
	}
	var stuck record.NamedEntry
	for _, e := range entries {
		switch {
		case strings.Contains(e.File, "stuck-2"):
			stuck = e
		case !strings.Contains(e.Late, `would have denied it: "late no to slow-1"`) || len(e.Answer) == 0:
			t.Errorf("slow-1's record: %s %s", e.Late, e.Answer)
		}
	}
	if stuck.File == "" || len(stuck.Answer) != 0 || !strings.Contains(stuck.Late, "before your webhook answered") ||
		!strings.Contains(stuck.Late, "failurePolicy Ignore applied") {
		t.Fatalf("stuck-2's record %s: late %q, answer %s; want marked late, no answer", stuck.File, stuck.Late, stuck.Answer)
	}
	log := logs.String()
	if n := strings.Count(log, "hookback stopped before your webhook answered a late review"); n != 1 || !strings.Contains(log, "name=stuck-2") {
		t.Errorf("want one log line for stuck-2:\n%s", log)
	}
	if strings.Contains(log, `"kind":"ConfigMap"`) {
		t.Errorf("the log holds an object body:\n%s", log)
	}
	// Sent again, the review gets the answer it never got.
	target := func(record.Entry) (http.Handler, error) {
		quick := lateServer(t, 0, nil)
		u, _ := url.Parse(quick.URL)
		f, err := upstream.New(upstream.Options{Base: u}, "/validate")
		return admissionhttp.NewHandler(admission.Webhook{Name: "vcm.example.com", Path: "/vcm", Handler: f}, admissionhttp.Options{}), err
	}
	// stuck- names wait for release: replay the record under another name.
	stuck.Review = json.RawMessage(strings.ReplaceAll(string(stuck.Review), "stuck-2", "again-2"))
	if _, diffs, err := record.ReplayOne(context.Background(), stuck.Entry, target); err != nil || len(diffs) != 1 ||
		!strings.HasPrefix(diffs[0], "answer none -> ") || !strings.Contains(diffs[0], "late no to again-2") {
		t.Errorf("replay of stuck-2's record: %q (%v), want the answer it never got", diffs, err)
	}
	// An answer that comes once drain gave up is not told twice.
	l.mu.Lock()
	stopped := l.stopped
	l.mu.Unlock()
	if !stopped || l.settle("vcm.example.com\x00uid-stuck-2") {
		t.Error("an answer after the drain would be reported again")
	}
}

// The drain waits no longer than --late-answer-timeout, and not at all
// when nothing is awaited.
func TestLateDrainBound(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		await   bool
		max     time.Duration
	}{
		{name: "nothing awaited", timeout: time.Minute, max: 100 * time.Millisecond},
		{name: "a short --late-answer-timeout", timeout: 200 * time.Millisecond, await: true, max: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLateReport(slog.New(slog.DiscardHandler), tt.timeout)
			var opts upstream.Options
			l.forward(&opts, "w", "/w", nil)
			if tt.await {
				opts.Awaiting(upstream.LateAnswer{UID: "u1"})
			}
			start := time.Now()
			l.drain()
			if took := time.Since(start); took > tt.max {
				t.Errorf("drain took %s, want at most %s", took, tt.max)
			}
		})
	}
}
