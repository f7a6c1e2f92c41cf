package tunnel

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestRelayMetrics: /metrics says whether a laptop is attached and how the
// apiserver's connections went: closed for want of a laptop, then carried.
func TestRelayMetrics(t *testing.T) {
	r, err := New(Options{Listen: "127.0.0.1:0", Control: "127.0.0.1:0", Metrics: "127.0.0.1:0", Secret: "s3cret", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	metrics := func() string {
		resp, err := http.Get("http://" + r.MetricsAddr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return string(b)
	}
	// No laptop yet: the connection is closed at once and counted.
	c, err := net.Dial("tcp", r.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Read(make([]byte, 1))
	c.Close()
	waitFor(t, "a no_laptop connection counted", func() bool {
		return strings.Contains(metrics(), `hookback_relay_connections_total{result="no_laptop"} 1`)
	})
	if m := metrics(); !strings.Contains(m, "hookback_relay_laptop_attached 0") {
		t.Errorf("attached before any laptop:\n%s", m)
	}
	srv := echo(t)
	attach(t, func() string { return r.ControlAddr().String() }, "s3cret", srv.Listener.Addr().String(), nil)
	waitFor(t, "the laptop attached", func() bool { return strings.Contains(metrics(), "hookback_relay_laptop_attached 1") })
	resp, err := client(srv, r.Addr(), false).Post("https://127.0.0.1/", "text/plain", strings.NewReader("hi"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitFor(t, "a carried connection counted", func() bool {
		return strings.Contains(metrics(), `hookback_relay_connections_total{result="carried"} 1`)
	})
	hz, err := http.Get("http://" + r.MetricsAddr().String() + "/healthz")
	if err != nil || hz.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", hz, err)
	}
	hz.Body.Close()
}
