package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/certs"
)

var allow = admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })

func TestNewServerRefusesTwoWebhooksOnOnePath(t *testing.T) {
	_, err := NewServer(ServerOptions{Address: "127.0.0.1:0", HealthAddress: "127.0.0.1:0", Log: slog.New(slog.DiscardHandler),
		Webhooks: []admission.Webhook{{Name: "a", Path: "/x", Handler: allow}, {Name: "b", Path: "/x", Handler: allow}}})
	if err == nil || !strings.Contains(err.Error(), "webhooks a and b both serve /x") {
		t.Fatalf("err = %v", err)
	}
}

// TestServerServesAndStops serves over TLS, answers health and readiness,
// names the served paths on a 404, and stops cleanly when ctx ends.
func TestServerServesAndStops(t *testing.T) {
	crt, err := certs.NewSelfSigned(context.Background(), certs.TLSOptions{StateDir: t.TempDir(), Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer crt.Stop()
	s, err := NewServer(ServerOptions{Address: "127.0.0.1:0", HealthAddress: "127.0.0.1:0", TLS: crt.TLSConfig(),
		Log: slog.New(slog.DiscardHandler), Metrics: NewMetrics(), Webhooks: []admission.Webhook{{Name: "a", Path: "/validate-a", Handler: allow}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()

	health := "http://" + s.HealthAddr().String()
	get := func(c *http.Client, url string) (int, string) {
		t.Helper()
		var code int
		var body []byte
		err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			resp, err := c.Get(url)
			if err != nil {
				return false, nil
			}
			defer resp.Body.Close()
			code = resp.StatusCode
			body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			return true, nil
		})
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		return code, string(body)
	}
	if code, _ := get(http.DefaultClient, health+"/healthz"); code != 200 {
		t.Errorf("/healthz = %d", code)
	}
	if code, _ := get(http.DefaultClient, health+"/readyz"); code != 503 {
		t.Errorf("/readyz before SetReady = %d, want 503", code)
	}
	s.SetReady(true)
	if code, _ := get(http.DefaultClient, health+"/readyz"); code != 200 {
		t.Errorf("/readyz after SetReady = %d, want 200", code)
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if code, body := get(insecure, "https://"+s.Addr().String()+"/nope"); code != 404 || !strings.Contains(body, "/validate-a") {
		t.Errorf("unknown path: %d %q, want 404 naming the served paths", code, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start after cancel = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return after cancel")
	}
}

type countingRecorder struct{ n atomic.Int32 }

func (c *countingRecorder) Record(string, string, []byte, []byte) { c.n.Add(1) }

// TestStartWaitsForReviewsInFlight: a review still running when the server
// stops (an upstream at a breakpoint) has its context cancelled, and Start
// returns only after it did, with its bookkeeping done.
func TestStartWaitsForReviewsInFlight(t *testing.T) {
	crt, err := certs.NewSelfSigned(context.Background(), certs.TLSOptions{StateDir: t.TempDir(), Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer crt.Stop()
	// The handler sees its context cancelled, then takes until release to
	// return, as an upstream call unwinding would.
	entered, cancelled, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	block := admission.HandlerFunc(func(ctx context.Context, _ admission.Request) admission.Response {
		close(entered)
		<-ctx.Done()
		close(cancelled)
		<-release
		return admission.Allowed("")
	})
	rec := &countingRecorder{}
	s, err := NewServer(ServerOptions{Address: "127.0.0.1:0", HealthAddress: "127.0.0.1:0", TLS: crt.TLSConfig(), Recorder: rec,
		Log: slog.New(slog.DiscardHandler), Webhooks: []admission.Webhook{{Name: "block", Path: "/block", Handler: block}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()

	body, err := os.ReadFile(filepath.Join("..", "testdata", "admission", "pod-create.v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
	go func() {
		resp, err := client.Post("https://"+s.Addr().String()+"/block", "application/json", bytes.NewReader(body))
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the review never reached the handler")
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the review's context was not cancelled when the server stopped")
	}
	// Without the wait, Start returns within milliseconds of the close; with
	// it, not before release (or inFlightBound, 2 s, far beyond the window).
	select {
	case <-done:
		t.Fatal("Start returned while a review was still running")
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return")
	}
	if n := rec.n.Load(); n != 1 {
		t.Errorf("reviews recorded when Start returned: %d, want 1 (the one in flight, its bookkeeping done)", n)
	}
}
