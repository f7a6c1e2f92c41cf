package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// Options configure the relay side, `hookback relay`.
type Options struct {
	// Listen is where the apiserver's connections arrive (the Service's
	// target port).
	Listen string
	// Control is where the laptop attaches, through a port-forward.
	Control string
	// Secret is the session's; only a laptop that knows it may attach.
	Secret string
	// Metrics is where /metrics and /healthz are served; empty: nowhere.
	Metrics string
	Log     *slog.Logger
}

// Relay accepts the apiserver's connections and carries each one as a
// stream to the attached laptop.
type Relay struct {
	opts             Options
	listen, control  net.Listener
	metricsLn        net.Listener
	metrics          *relayMetrics
	mu               sync.Mutex
	session          *yamux.Session
	conns            sync.WaitGroup
	warnedNoneAttach bool
	// stopping is set by Start under mu once ctx is done: a session
	// attach registers after that is closed at once, not waited for.
	stopping bool
	// carried are the apiserver connections being forwarded, closed by Start
	// once drain has passed: closing the laptop's session only half-closes
	// them, and a client that keeps a half-closed connection open would
	// otherwise hold the pod until the kubelet's SIGKILL.
	carried map[net.Conn]struct{}
	cut     bool // carried connections were closed; later ones are too
	drain   time.Duration
}

// DefaultDrain is how long a stopping relay lets the apiserver close the
// connections it carried before closing them itself; well inside the pod's
// default 30 s termination grace period.
const DefaultDrain = 5 * time.Second

// New binds both listeners, so a busy port fails at once.
func New(o Options) (*Relay, error) {
	if o.Secret == "" {
		return nil, errors.New("relay: the session secret is empty")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("relay: listen for the apiserver on %s: %w", o.Listen, err)
	}
	ctl, err := net.Listen("tcp", o.Control)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("relay: listen for the laptop on %s: %w", o.Control, err)
	}
	r := &Relay{opts: o, listen: ln, control: ctl, carried: map[net.Conn]struct{}{}, drain: DefaultDrain, metrics: newRelayMetrics()}
	if o.Metrics != "" {
		if r.metricsLn, err = net.Listen("tcp", o.Metrics); err != nil {
			ln.Close()
			ctl.Close()
			return nil, fmt.Errorf("relay: listen for /metrics on %s: %w", o.Metrics, err)
		}
	}
	return r, nil
}

// MetricsAddr is where /metrics is served, nil when it is not.
func (r *Relay) MetricsAddr() net.Addr {
	if r.metricsLn == nil {
		return nil
	}
	return r.metricsLn.Addr()
}

// Addr is the apiserver side's address; ControlAddr the laptop's.
func (r *Relay) Addr() net.Addr        { return r.listen.Addr() }
func (r *Relay) ControlAddr() net.Addr { return r.control.Addr() }

// Start serves until ctx is done, then closes the listeners and the
// session and waits for every connection it started: DefaultDrain for the
// apiserver to close those it carried, then it closes them.
func (r *Relay) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { r.acceptLoop(r.control, r.attach) })
	wg.Go(func() { r.acceptLoop(r.listen, r.forward) })
	var metricsErr error
	if r.metricsLn != nil {
		// Stopped with ctx, and waited for below with the accept loops.
		wg.Go(func() { metricsErr = r.metrics.serve(ctx, r.metricsLn) })
	}
	r.opts.Log.Info("relay ready", "listen", r.listen.Addr().String(), "control", r.control.Addr().String())
	<-ctx.Done()
	r.listen.Close()
	r.control.Close()
	r.mu.Lock()
	r.stopping = true
	if r.session != nil {
		r.session.Close()
	}
	r.mu.Unlock()
	wg.Wait()
	drained := make(chan struct{})
	go func() { r.conns.Wait(); close(drained) }()
	select {
	case <-drained:
		return metricsErr
	case <-time.After(r.drain):
	}
	r.mu.Lock()
	r.cut = true
	n := len(r.carried)
	for c := range r.carried {
		c.Close()
	}
	r.mu.Unlock()
	r.opts.Log.Info("closed the apiserver connections still open after the drain", "connections", n, "drain", r.drain.String())
	<-drained
	return metricsErr
}

func (r *Relay) acceptLoop(ln net.Listener, handle func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed by Start
		}
		r.conns.Go(func() { handle(c) })
	}
}

// attach authenticates a laptop and makes its session the current one; a
// newer session replaces an older one (the laptop reconnected).
func (r *Relay) attach(c net.Conn) {
	// The previous laptop's session is closed before the new laptop hears
	// OK: the apiserver connections carried over it close with it, so the
	// calls the new laptop makes it send (its canary, once attached) do not
	// go down one of them to a laptop that is gone (a restart after a
	// crash). Meanwhile connections are closed at once: fail open.
	if err := accept(c, r.opts.Secret, r.detach); err != nil {
		r.opts.Log.Warn("refused a control connection", "remote", c.RemoteAddr().String(), "error", err)
		r.metrics.attaches.WithLabelValues("refused").Inc()
		c.Close()
		return
	}
	s, err := yamux.Client(c, muxConfig(r.opts.Log))
	if err != nil {
		r.opts.Log.Error("start the multiplexed session", "error", err)
		c.Close()
		return
	}
	// The laptop has heard OK already, so Start may have begun stopping
	// in between: it closed whatever session was current then, and would
	// wait forever for this one.
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		s.Close()
		return
	}
	old := r.session
	r.session, r.warnedNoneAttach = s, false
	r.mu.Unlock()
	if old != nil {
		old.Close() // another laptop attached in between: the newest wins
	}
	r.opts.Log.Info("laptop attached", "remote", c.RemoteAddr().String())
	r.metrics.attaches.WithLabelValues("attached").Inc()
	r.metrics.attached.Set(1)
	<-s.CloseChan()
	r.mu.Lock()
	if r.session == s {
		r.session = nil
		r.metrics.attached.Set(0)
	}
	r.mu.Unlock()
	r.opts.Log.Info("laptop detached", "remote", c.RemoteAddr().String())
}

// detach closes the current laptop's session, and every connection carried
// over it.
func (r *Relay) detach() {
	r.mu.Lock()
	old := r.session
	r.session = nil
	r.metrics.attached.Set(0)
	r.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// forward carries one apiserver connection to the laptop. Without one
// attached it closes at once: the apiserver fails open fast rather than
// waiting out its timeout.
func (r *Relay) forward(c net.Conn) {
	r.mu.Lock()
	s := r.session
	warn := s == nil && !r.warnedNoneAttach
	if warn {
		r.warnedNoneAttach = true
	}
	r.mu.Unlock()
	if s == nil {
		if warn {
			r.opts.Log.Warn("a connection arrived with no laptop attached: closed (the webhooks fail open)")
		}
		r.metrics.conns.WithLabelValues("no_laptop").Inc()
		c.Close()
		return
	}
	stream, err := s.Open()
	if err != nil {
		r.opts.Log.Warn("open a stream to the laptop", "error", err)
		r.metrics.conns.WithLabelValues("stream_failed").Inc()
		c.Close()
		return
	}
	r.metrics.conns.WithLabelValues("carried").Inc()
	r.metrics.active.Inc()
	defer r.metrics.active.Dec()
	r.mu.Lock()
	if r.cut {
		r.mu.Unlock()
		stream.Close()
		c.Close()
		return
	}
	r.carried[c] = struct{}{}
	r.mu.Unlock()
	pipe(c, stream)
	r.mu.Lock()
	delete(r.carried, c)
	r.mu.Unlock()
}
