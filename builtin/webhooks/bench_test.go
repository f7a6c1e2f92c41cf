package webhooks

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/hookback/hookback/internal/admissionhttp"
	"k8s.io/client-go/tools/events"
)

// BenchmarkPodName is pod-name's whole call through hookback's transport,
// on a small pod and a 20 KB one.
func BenchmarkPodName(b *testing.B) { benchWebhook(b, NamePodName) }

// BenchmarkPodLifespan and BenchmarkPodSidecar are the mutating pod
// webhooks' whole calls, as BenchmarkPodName.
func BenchmarkPodLifespan(b *testing.B) { benchWebhook(b, NamePodLifespan) }

func BenchmarkPodSidecar(b *testing.B) { benchWebhook(b, NamePodSidecar) }

func benchWebhook(b *testing.B, name string) {
	// A recorder without a channel drops Events rather than blocking.
	deps := Deps{Log: slog.New(slog.DiscardHandler), Recorder: func(string) events.EventRecorder { return &events.FakeRecorder{} }}
	hooks, err := Build([]string{name}, DefaultOptions(), deps)
	if err != nil {
		b.Fatal(err)
	}
	h := admissionhttp.NewHandler(hooks[0], admissionhttp.Options{})
	for _, f := range []string{"pod-create.v1.json", "pod-large.v1.json"} {
		body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "admission", f))
		if err != nil {
			b.Fatal(err)
		}
		serve := func() *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/validate?timeout=10s", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		b.Run(f, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if rec := serve(); rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
				}
			}
		})
		// As net/http's HTTP/2 server runs it: every request on a new
		// goroutine, whose stack starts small and must grow.
		b.Run(f+"/goroutine-per-request", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			codes := make(chan int)
			for b.Loop() {
				go func() { codes <- serve().Code }()
				if code := <-codes; code != http.StatusOK {
					b.Fatalf("status %d", code)
				}
			}
		})
	}
}
