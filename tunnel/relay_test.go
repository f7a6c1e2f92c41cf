package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// echo is the laptop's TLS server: it answers each request with its body.
func echo(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		_, _ = w.Write(b)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// startRelay runs a relay on loopback until the test ends (or stop).
func startRelay(t *testing.T, control string) (*Relay, context.CancelFunc) {
	t.Helper()
	r, err := New(Options{Listen: "127.0.0.1:0", Control: control, Secret: "s3cret", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Start(ctx); close(done) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return r, stop
}

// errNoRelay is what the tests' dialer answers while control is "": a
// refused dial, as through a port-forward to a relay pod not there yet.
// Tests that stop and start relays follow their addresses this way rather
// than closing a port and binding it again, which a parallel test binary
// may take in between.
var errNoRelay = errors.New("dial tcp: connect: connection refused (no relay in this test yet)")

// relayAddr is the control address a test's relay has now ("" for none).
type relayAddr struct{ v atomic.Value }

func (a *relayAddr) set(s string) { a.v.Store(s) }
func (a *relayAddr) get() string  { s, _ := a.v.Load().(string); return s }

// attach runs an attacher to the relay's control port until the test ends;
// log, when given, gets its lines.
func attach(t *testing.T, control func() string, secret, local string, reg prometheus.Registerer, log ...*slog.Logger) (*atomic.Int32, chan error, context.CancelFunc) {
	t.Helper()
	var ups atomic.Int32
	o := AttachOptions{
		Dialer: DialerFunc(func(ctx context.Context) (net.Conn, error) {
			addr := control()
			if addr == "" {
				return nil, errNoRelay
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}),
		Secret: secret, Local: local, OnUp: func() { ups.Add(1) }, Metrics: reg,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
	}
	if len(log) > 0 {
		o.Log = log[0]
	}
	a, err := NewAttacher(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &ups, done, cancel
}

// client speaks TLS to the laptop's server through the relay's address,
// as the apiserver does through the Service.
func client(srv *httptest.Server, relay net.Addr, h2 bool) *http.Client {
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = h2
	if !h2 {
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", relay.String())
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTunnelCarriesConcurrentRequests sends many requests at once, over
// HTTP/2 (one connection, interleaved streams) and HTTP/1.1 (a connection
// each), and checks every answer is its own request's.
func TestTunnelCarriesConcurrentRequests(t *testing.T) {
	srv := echo(t)
	r, _ := startRelay(t, "127.0.0.1:0")
	reg := prometheus.NewRegistry()
	ups, _, _ := attach(t, func() string { return r.ControlAddr().String() }, "s3cret", srv.Listener.Addr().String(), reg)
	waitFor(t, "attached", func() bool { return ups.Load() == 1 })
	for _, h2 := range []bool{true, false} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			c := client(srv, r.Addr(), h2)
			var wg sync.WaitGroup
			for i := range 64 {
				wg.Go(func() {
					body := strings.Repeat(fmt.Sprintf("request %d;", i), 100+i*37)
					resp, err := c.Post("https://127.0.0.1/", "text/plain", strings.NewReader(body))
					if err != nil {
						t.Error(err)
						return
					}
					defer resp.Body.Close()
					got, _ := io.ReadAll(resp.Body)
					if string(got) != body {
						t.Errorf("request %d: answer of %d bytes is not its own body (%d bytes)", i, len(got), len(body))
					}
					if wantProto := map[bool]int{true: 2, false: 1}[h2]; resp.ProtoMajor != wantProto {
						t.Errorf("proto %s, want HTTP/%d", resp.Proto, wantProto)
					}
				})
			}
			wg.Wait()
		})
	}
	if got := metricValue(t, reg, "hookback_tunnel_up"); got != 1 {
		t.Errorf("hookback_tunnel_up = %v, want 1", got)
	}
	if got := metricValue(t, reg, "hookback_tunnel_streams_total"); got < 65 {
		t.Errorf("hookback_tunnel_streams_total = %v, want at least 65 (one h2 connection, 64 h1)", got)
	}
}

// TestSecret checks that only the session's secret attaches.
func TestSecret(t *testing.T) {
	srv := echo(t)
	r, _ := startRelay(t, "127.0.0.1:0")
	for _, secret := range []string{"wrong", "s3cret-and-more", "S3CRET"} {
		t.Run(secret, func(t *testing.T) {
			ups, done, _ := attach(t, func() string { return r.ControlAddr().String() }, secret, srv.Listener.Addr().String(), nil)
			select {
			case err := <-done:
				if !errors.Is(err, ErrDenied) {
					t.Fatalf("Start returned %v, want ErrDenied", err)
				}
				done <- nil // for the cleanup's receive
			case <-time.After(10 * time.Second):
				t.Fatal("a wrong secret did not stop the attacher")
			}
			if ups.Load() != 0 {
				t.Error("attached with a wrong secret")
			}
		})
	}
	t.Run("no hello at all", func(t *testing.T) {
		c, err := net.Dial("tcp", r.ControlAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, strings.Repeat("x", 2*maxHello))
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(c)
		if strings.Contains(string(b), answerOK) {
			t.Errorf("relay answered %q to garbage", b)
		}
	})
	// With no laptop attached, the apiserver's connection is closed at
	// once rather than left to time out.
	c, err := net.Dial("tcp", r.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("no laptop attached: read %d, %v; want EOF at once", n, err)
	}
}

// TestReattach kills the relay and brings another one up: the attacher
// attaches again by itself and requests pass.
func TestReattach(t *testing.T) {
	srv := echo(t)
	var control relayAddr
	r, stop := startRelay(t, "127.0.0.1:0")
	control.set(r.ControlAddr().String())
	ups, _, _ := attach(t, control.get, "s3cret", srv.Listener.Addr().String(), nil)
	waitFor(t, "attached", func() bool { return ups.Load() == 1 })
	control.set("")
	stop()
	r2, _ := startRelay(t, "127.0.0.1:0")
	control.set(r2.ControlAddr().String())
	waitFor(t, "attached again", func() bool { return ups.Load() == 2 })
	resp, err := client(srv, r2.Addr(), true).Post("https://127.0.0.1/", "text/plain", strings.NewReader("after"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "after" {
		t.Errorf("after reattach: %q", b)
	}
}

// TestShutdownWithOpenStreams stops both sides while a request hangs:
// both Starts return, and the open stream is closed.
func TestShutdownWithOpenStreams(t *testing.T) {
	hung := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(hung)
		<-r.Context().Done()
	}))
	srv.StartTLS()
	defer srv.Close()
	r, stopRelay := startRelay(t, "127.0.0.1:0")
	ups, done, stopAttach := attach(t, func() string { return r.ControlAddr().String() }, "s3cret", srv.Listener.Addr().String(), nil)
	waitFor(t, "attached", func() bool { return ups.Load() == 1 })
	errc := make(chan error, 1)
	go func() {
		_, err := client(srv, r.Addr(), false).Get("https://127.0.0.1/")
		errc <- err
	}()
	<-hung
	stopAttach()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("attacher: %v", err)
		}
		done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("attacher did not stop with a stream open")
	}
	stopRelay()
	if err := <-errc; err == nil {
		t.Error("the hung request succeeded although the tunnel stopped")
	}
}

// metricValue is the value of an unlabelled gauge or counter in reg.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestStopRightAfterAttach stops the relay the moment a laptop hears OK,
// before the relay may have made the laptop's session its current one:
// Start still returns (it once waited forever for that session to end).
func TestStopRightAfterAttach(t *testing.T) {
	for i := range 200 {
		r, err := New(Options{Listen: "127.0.0.1:0", Control: "127.0.0.1:0", Secret: "s3cret"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = r.Start(ctx); close(done) }()
		c, err := net.Dial("tcp", r.ControlAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		if err := hello(c, "s3cret"); err != nil {
			t.Fatal(err)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("attempt %d: Start did not return after a laptop attached as it stopped", i)
		}
		c.Close()
	}
}

// TestShutdownClosesHalfClosedConnections: an apiserver connection whose
// laptop side has ended is half-closed, and a client that never closes its
// end does not hold a stopping relay past its drain.
func TestShutdownClosesHalfClosedConnections(t *testing.T) {
	local, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	go func() {
		for {
			c, err := local.Accept()
			if err != nil {
				return
			}
			c.Close() // the laptop's side ends at once
		}
	}()
	r, err := New(Options{Listen: "127.0.0.1:0", Control: "127.0.0.1:0", Secret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	r.drain = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	ups, _, _ := attach(t, func() string { return r.ControlAddr().String() }, "s3cret", local.Addr().String(), nil)
	waitFor(t, "attached", func() bool { return ups.Load() == 1 })

	c, err := net.Dial("tcp", r.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The relay half-closes towards this client once the laptop's side has
	// ended: the client reads EOF, and keeps its own end open.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("read = %d, %v; want EOF once the laptop's side ended", n, err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return while a client kept a half-closed connection open")
	}
	// The relay closed its end for good: a write fails once its reset is back.
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	waitFor(t, "a write to fail", func() bool {
		_, err := c.Write([]byte("x"))
		return err != nil
	})
}
