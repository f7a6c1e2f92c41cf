package admissionhttp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookback/hookback/internal/syncbuf"

	"github.com/hookback/hookback/admission"
)

// blockingRecorder holds every RecordServed until release is closed.
type blockingRecorder struct {
	release chan struct{}
	mu      sync.Mutex
	served  []Served
}

func (b *blockingRecorder) Record(string, string, []byte, []byte) {
	panic("Record instead of RecordServed")
}

func (b *blockingRecorder) RecordServed(s Served) {
	<-b.release
	s.Review, s.Answer = bytes.Clone(s.Review), bytes.Clone(s.Answer)
	b.mu.Lock()
	b.served = append(b.served, s)
	b.mu.Unlock()
}

// post sends body to url as a review and returns the answer, read to its end.
func post(t *testing.T, c *http.Client, url string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// With Afterwards, the apiserver has its whole answer (over HTTP/2 the
// stream has ended) while the recorder is still busy with it; Close then
// lets Run finish every queued admission's log line and recording before it
// returns, answered and failed calls alike.
func TestAfterwardsAnswerFirst(t *testing.T) {
	rec := &blockingRecorder{release: make(chan struct{})}
	var logs syncbuf.Buffer
	after := NewAfterwards(4)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		after.Run()
	}()
	failing := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.CallFailed(io.ErrUnexpectedEOF)
	})
	opts := Options{Recorder: rec, Log: slog.New(slog.NewTextHandler(&logs, nil)), Afterwards: after}
	mux := http.NewServeMux()
	mux.Handle("/label", NewHandler(admission.Webhook{Name: "label", Path: "/label", Handler: labelPod}, opts))
	mux.Handle("/fail", NewHandler(admission.Webhook{Name: "fail", Path: "/fail", Handler: failing}, opts))
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := srv.Client()
	client.Timeout = 10 * time.Second
	client.Transport.(*http.Transport).TLSClientConfig.NextProtos = []string{"h2"}

	body := fixture(t, "pod-create.v1.json")
	resp, answer := post(t, client, srv.URL+"/label", body)
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || !strings.Contains(string(answer), `"patch"`) {
		t.Fatalf("answer over %s: %d %s", resp.Proto, resp.StatusCode, answer)
	}
	if resp, _ := post(t, client, srv.URL+"/fail", body); resp.StatusCode != 500 {
		t.Fatalf("failed call answered %d, want 500", resp.StatusCode)
	}
	if strings.Contains(logs.String(), "webhook=fail") {
		t.Errorf("the failed call's log line came before the earlier recording finished:\n%s", logs.String())
	}
	close(rec.release)
	after.Close()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Close")
	}
	if len(rec.served) != 2 || !bytes.Equal(rec.served[0].Review, body) || !bytes.Equal(rec.served[0].Answer, answer) ||
		rec.served[1].Failure == "" || rec.served[1].Answer != nil {
		t.Errorf("recorded %+v", rec.served)
	}
	for _, want := range []string{"webhook=label", "webhook=fail"} {
		if !strings.Contains(logs.String(), "msg=admission "+want) {
			t.Errorf("no admission line for %s:\n%s", want, logs.String())
		}
	}
}

// panicRecorder's bug must cost only its own recording.
type panicRecorder struct{ calls int }

func (p *panicRecorder) Record(string, string, []byte, []byte) {
	p.calls++
	if p.calls == 1 {
		panic("recorder bug")
	}
}

// After Close, admissions still being answered (http.Server.Close does not
// wait for handlers) do their own bookkeeping; a panicking recorder is
// logged, and the next admission is still recorded.
func TestAfterwardsClosedAndPanics(t *testing.T) {
	var logs syncbuf.Buffer
	after := NewAfterwards(1)
	after.Close()
	after.Close() // twice is harmless
	after.Run()   // returns at once: nothing queued
	rec := &panicRecorder{}
	h := NewHandler(admission.Webhook{Name: "w", Handler: labelPod}, Options{Recorder: rec, Afterwards: after,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	for i := range 2 {
		req := httptest.NewRequest(http.MethodPost, "/w", bytes.NewReader(fixture(t, "pod-create.v1.json")))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("admission %d answered %d", i, w.Code)
		}
	}
	if rec.calls != 2 {
		t.Errorf("recorder called %d times, want 2", rec.calls)
	}
	if n := strings.Count(logs.String(), "msg=admission "); n != 2 {
		t.Errorf("%d admission lines, want 2:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "admission bookkeeping panicked") || !strings.Contains(logs.String(), "recorder bug") {
		t.Errorf("the recorder's panic was not logged:\n%s", logs.String())
	}
}
