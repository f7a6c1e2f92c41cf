package main

import (
	"bytes"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestConvProxy runs the conversion floor as a child process in front of a
// TLS upstream it must verify: the request reaches the upstream as sent,
// path included, the answer comes back as given, and the call is counted.
func TestConvProxy(t *testing.T) {
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<10))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append([]byte(r.URL.Path+" "), b...))
	}))
	t.Cleanup(upstream.Close)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: upstream.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := startConvProxy(upstream.URL, ca)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	resp, err := p.client.Post("https://"+p.addr+"/convert", "application/json", bytes.NewReader([]byte(`{"kind":"ConversionReview"}`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if want := `/convert {"kind":"ConversionReview"}`; resp.StatusCode != http.StatusOK || string(got) != want {
		t.Fatalf("status %d, body %q: want 200 and %q", resp.StatusCode, got, want)
	}
	if n, took, err := p.calls(); err != nil || n != 1 || took <= 0 {
		t.Errorf("calls %d (took %v, %v), want 1 with its time", n, took, err)
	}
}
