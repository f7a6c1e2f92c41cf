package admissionhttp

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/internal/syncbuf"
)

// TestRefuse: a CallRefused answer reaches the client as no answer at all,
// over HTTP/1 (the connection reset) and HTTP/2 (the stream reset, the
// connection kept for other calls), and is still logged once.
func TestRefuse(t *testing.T) {
	refused := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.CallRefused(errors.New("fault refuse"))
	})
	for _, tc := range []struct {
		name  string
		http2 bool
		proto string
		// what the client reads, one of
		want []string
	}{
		{name: "HTTP/1.1 connection reset", proto: "HTTP/1.1", want: []string{"connection reset", "EOF"}},
		{name: "HTTP/2 stream reset", http2: true, proto: "HTTP/2.0", want: []string{"stream error", "INTERNAL_ERROR"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The log line is written after the answer: Close waits for it.
			var logs syncbuf.Buffer
			after := NewAfterwards(4)
			ran := make(chan struct{})
			go func() {
				defer close(ran)
				after.Run()
			}()
			h := NewHandler(admission.Webhook{Name: "refused", Handler: refused}, Options{Log: slog.New(slog.NewTextHandler(&logs, nil)), Afterwards: after})
			mux := http.NewServeMux()
			mux.Handle("/refuse", h)
			mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(r.Proto)) })
			srv := httptest.NewUnstartedServer(mux)
			srv.EnableHTTP2 = tc.http2
			srv.StartTLS()
			defer srv.Close()
			c := srv.Client()
			resp, refuseErr := c.Post(srv.URL+"/refuse", "application/json", bytes.NewReader(fixture(t, "pod-create.v1.json")))
			if refuseErr == nil {
				resp.Body.Close()
				t.Fatalf("a refused call answered %s", resp.Status)
			}
			if !slices.ContainsFunc(tc.want, func(w string) bool { return strings.Contains(refuseErr.Error(), w) }) {
				t.Errorf("the client read %q, want one of %q", refuseErr, tc.want)
			}
			// The server still serves: on HTTP/2 over the same connection.
			ok, err := c.Get(srv.URL + "/ok")
			if err != nil {
				t.Fatalf("after a refused call: %v", err)
			}
			defer ok.Body.Close()
			if ok.Proto != tc.proto {
				t.Errorf("served over %s, want %s", ok.Proto, tc.proto)
			}
			after.Close()
			<-ran
			if !strings.Contains(logs.String(), "fault refuse") {
				t.Errorf("the refused call was not logged: %q", logs.String())
			}
		})
	}
}

// TestRefuseRecorder: a writer that cannot be hijacked and is not HTTP/2
// (the inspector's replay records into one) gets HTTP 500 with the
// message instead.
func TestRefuseRecorder(t *testing.T) {
	h := NewHandler(admission.Webhook{Name: "refused", Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.CallRefused(errors.New("fault refuse"))
	})}, Options{})
	req := httptest.NewRequest(http.MethodPost, "/refuse", bytes.NewReader(fixture(t, "pod-create.v1.json")))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "fault refuse") {
		t.Fatalf("%d %q, want 500 with the message", rec.Code, rec.Body.String())
	}
}
