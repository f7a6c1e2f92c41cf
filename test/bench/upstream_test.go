package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	hookback "github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/upstream"
)

// BenchmarkUpstream measures what hookback adds in front of a developer's
// webhook server: the same review POSTed over loopback HTTP/1.1 keep-alive
// straight to the upstream, and through hookback's transport and forwarder
// (served over loopback TLS, as the apiserver calls it). Both legs use TLS,
// as an apiserver calling the webhook directly would. The difference per op
// is hookback's added latency; docs/performance.md reports it.
func BenchmarkUpstream(b *testing.B) {
	body := fixture(b, "pod-create.v1.json")
	// The upstream: allow, echoing the UID, as a minimal webhook would.
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	}))
	defer up.Close()
	base, _ := url.Parse(up.URL)
	fwd, err := upstream.New(upstream.Options{Base: base, Insecure: true}, "/validate")
	if err != nil {
		b.Fatal(err)
	}
	hb := httptest.NewTLSServer(admissionhttp.NewHandler(hookback.Webhook{Name: "bench", Path: "/validate", Handler: fwd}, admissionhttp.Options{}))
	defer hb.Close()
	hbClient := hb.Client()
	hbClient.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback bench
	direct := up.Client()
	direct.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback bench

	for _, tc := range []struct {
		name   string
		client *http.Client
		url    string
	}{
		{"direct", direct, up.URL + "/validate"},
		{"through-hookback", hbClient, hb.URL + "/validate"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, tc.url, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := tc.client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"allowed":true`)) {
					b.Fatalf("status %d: %s", resp.StatusCode, out)
				}
			}
		})
	}
}
