package load

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkSend is the generator's own cost per request, the path each
// request takes in a run (a goroutine, the request, the answer counted),
// against a loopback HTTP/2 server that answers at once as a dry-run
// create does. hack/bench-load measures the same through the apiserver.
func BenchmarkSend(b *testing.B) {
	answer := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"load-x","namespace":"bench"},"data":{"k":"v"}}`)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(answer)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	s := sender{client: srv.Client(), base: srv.URL, timeout: 10 * time.Second}
	t := &target{path: "/api/v1/namespaces/bench/configmaps?dryRun=All&timeout=10s", body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"load-","namespace":"bench"},"data":{"k":"v"}}`)}
	st := newStepStats(time.Now().Add(time.Hour))
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.send(ctx, t, st)
		}
	})
	if st.kinds[KindOK] == 0 {
		b.Fatalf("no request answered ok: %v %v", st.kinds, st.firstError)
	}
}
