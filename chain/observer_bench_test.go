package chain

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hookback/hookback/admission"
)

// BenchmarkObserver is the three observers' calls for one request
// (first, last, validating) on a pod review, each through its handler as
// served (Handlers), with Run joining the views on its own goroutine as in
// a session; beside two references in the same run: the bare webhook of
// the chain benchmark (test/bench/chain/counter.go: decode the uid with
// encoding/json, encode the answer), and hookback's admission transport
// with three handlers that only allow (how the observers were served
// before they answered first). Each request has its own name, as distinct
// requests do.
func BenchmarkObserver(b *testing.B) {
	review, err := os.ReadFile(filepath.Join("..", "testdata", "admission", "pod-create.v1.json"))
	if err != nil {
		b.Fatal(err)
	}
	reviews := make([][]byte, 1024)
	for i := range reviews {
		reviews[i] = bytes.ReplaceAll(review, []byte(`"web-0"`), []byte(`"web-`+strconv.Itoa(i)+`"`))
	}
	allow := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })
	transport := func() []http.Handler {
		var hs []http.Handler
		for range 3 {
			hs = append(hs, admission.NewHTTPHandler(admission.Webhook{Name: "bench", Path: "/bench", Handler: allow}, admission.HTTPOptions{}))
		}
		return hs
	}
	for _, tc := range []struct {
		name     string
		handlers func(c *Collector) []http.Handler
	}{
		{"reference: three bare webhooks", func(*Collector) []http.Handler {
			return []http.Handler{http.HandlerFunc(bareAnswer), http.HandlerFunc(bareAnswer), http.HandlerFunc(bareAnswer)}
		}},
		{"before: the admission transport, three that allow", func(*Collector) []http.Handler { return transport() }},
		{"the three observers", func(c *Collector) []http.Handler {
			hs := c.Handlers(nil)
			return []http.Handler{hs[PathFirst], hs[PathLast], hs[PathValidating]}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			j := &Joiner{Done: func(*Chain) {}}
			c := NewCollector(j, CollectorOptions{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); c.Run(ctx) }()
			defer func() { cancel(); <-done }()
			hs := tc.handlers(c)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				body := reviews[i%len(reviews)]
				i++
				for _, h := range hs {
					r := httptest.NewRequest(http.MethodPost, "/bench", bytes.NewReader(body))
					r.Header.Set("Content-Type", "application/json")
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					if w.Code != http.StatusOK {
						b.Fatalf("status %d", w.Code)
					}
				}
			}
			b.StopTimer()
			j.Expire()
			if n := c.Dropped(); n > 0 {
				b.ReportMetric(float64(n), "dropped")
			}
		})
	}
}

// bareAnswer is test/bench/chain's bare webhook (counter.go's answers,
// without its counter and patch).
func bareAnswer(w http.ResponseWriter, r *http.Request) {
	var rv struct {
		APIVersion string `json:"apiVersion"`
		Request    struct {
			UID string `json:"uid"`
		} `json:"request"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&rv); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": rv.APIVersion, "kind": "AdmissionReview",
		"response": map[string]any{"uid": rv.Request.UID, "allowed": true}})
}
