package chain

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hookback/hookback/admission"
)

// BenchmarkObserver is the three observers' calls for one request
// (first, last, validating) through hookback's admission transport
// (decode, handler, encode) on a pod review, beside the same transport
// with three handlers that only allow (the reference, same run): the
// difference is what the observers' own work (the identity, the redacted
// copy, the join) adds to the apiserver's wait. Each request has its own
// name, as distinct requests do.
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
	c := &Collector{Joiner: &Joiner{Done: func(*Chain) {}}}
	obs := c.Webhooks()
	for _, tc := range []struct {
		name     string
		handlers []admission.Handler
	}{
		{"reference: three that allow", []admission.Handler{allow, allow, allow}},
		{"the three observers", []admission.Handler{obs[0].Handler, obs[1].Handler, obs[2].Handler}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var hs []http.Handler
			for _, h := range tc.handlers {
				hs = append(hs, admission.NewHTTPHandler(admission.Webhook{Name: "bench", Path: "/bench", Handler: h}, admission.HTTPOptions{}))
			}
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
			c.Joiner.Expire()
		})
	}
}
