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
	"github.com/prometheus/client_golang/prometheus"
)

// Dialer opens the connection to the relay's control port.
//
// Contract: Dial returns a connection that carries bytes to the relay until
// either side closes it, or an error; it honours ctx while dialling. The
// attacher calls it again after every loss, so it must not cache a dead
// connection (a port-forward must be set up anew).
type Dialer interface {
	Dial(ctx context.Context) (net.Conn, error)
}

// DialerFunc adapts a function to Dialer.
type DialerFunc func(ctx context.Context) (net.Conn, error)

// Dial calls f.
func (f DialerFunc) Dial(ctx context.Context) (net.Conn, error) { return f(ctx) }

var _ Dialer = DialerFunc(nil)

// AttachOptions configure the laptop side.
type AttachOptions struct {
	Dialer Dialer
	Secret string
	// Local is the local TLS server each stream is handed to (host:port).
	Local string
	Log   *slog.Logger
	// OnUp is called each time the tunnel is attached (the session
	// verifies again); OnDown each time it is lost. Either may be nil.
	OnUp, OnDown func()
	// Metrics registers the tunnel's state and stream counts; nil: none.
	Metrics prometheus.Registerer
	// MinBackoff and MaxBackoff bound the wait between attempts.
	MinBackoff, MaxBackoff time.Duration
}

// Attacher keeps the laptop attached to the relay.
type Attacher struct {
	o       AttachOptions
	up      prometheus.Gauge
	streams prometheus.Counter
	active  prometheus.Gauge
	streamW sync.WaitGroup
}

// NewAttacher checks the options and registers the metrics.
func NewAttacher(o AttachOptions) (*Attacher, error) {
	if o.Dialer == nil || o.Secret == "" || o.Local == "" {
		return nil, errors.New("relay: attach needs a dialer, the session secret and the local server's address")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 15 * time.Second
	}
	a := &Attacher{o: o,
		up: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hookback_tunnel_up",
			Help: "1 while the reverse tunnel to the relay is attached."}),
		streams: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookback_tunnel_streams_total",
			Help: "Connections the relay carried to this laptop."}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hookback_tunnel_streams_active",
			Help: "Connections through the tunnel now open."}),
	}
	if o.Metrics != nil {
		for _, c := range []prometheus.Collector{a.up, a.streams, a.active} {
			if err := o.Metrics.Register(c); err != nil {
				return nil, fmt.Errorf("relay: register metrics: %w", err)
			}
		}
	}
	return a, nil
}

// Start attaches, and attaches again with backoff after every loss, until
// ctx is done; then it closes the session and waits for open streams.
func (a *Attacher) Start(ctx context.Context) error {
	defer a.streamW.Wait()
	backoff := a.o.MinBackoff
	logged := false // one line per outage
	everUp := false
	for ctx.Err() == nil {
		attached, err := a.once(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrDenied) {
			return err // retrying cannot help: another session's relay
		}
		if attached {
			backoff, logged, everUp = a.o.MinBackoff, false, true
		}
		switch {
		case logged:
			a.o.Log.Debug("reverse tunnel still down", "error", err, "retry_in", backoff)
		case !everUp:
			// A relay pod being scheduled and started is no outage: the
			// session is not ready, nor verified, until the tunnel is up.
			a.o.Log.Info("waiting for the relay", "reason", err, "retry_in", backoff)
		default:
			a.o.Log.Warn("reverse tunnel down: the webhooks fail open until it is back", "error", err, "retry_in", backoff)
		}
		logged = true
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, a.o.MaxBackoff)
	}
	return nil
}

// once attaches and serves streams until the session ends; attached says
// whether it got that far.
func (a *Attacher) once(ctx context.Context) (attached bool, err error) {
	conn, err := a.o.Dialer.Dial(ctx)
	if err != nil {
		return false, fmt.Errorf("reach the relay: %w", err)
	}
	if err := hello(conn, a.o.Secret); err != nil {
		conn.Close()
		return false, err
	}
	s, err := yamux.Server(conn, muxConfig(a.o.Log))
	if err != nil {
		conn.Close()
		return false, err
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	a.up.Set(1)
	defer a.up.Set(0)
	a.o.Log.Info("reverse tunnel attached to the relay")
	if a.o.OnUp != nil {
		a.o.OnUp()
	}
	if a.o.OnDown != nil {
		defer a.o.OnDown()
	}
	for {
		stream, err := s.Accept()
		if err != nil {
			return true, fmt.Errorf("tunnel session ended: %w", err)
		}
		a.streams.Inc()
		a.active.Inc()
		a.streamW.Go(func() {
			defer a.active.Dec()
			a.serve(stream)
		})
	}
}

// serve hands one stream to the local TLS server.
func (a *Attacher) serve(stream net.Conn) {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	local, err := d.DialContext(ctx, "tcp", a.o.Local)
	cancel()
	if err != nil {
		a.o.Log.Error("hand a tunnelled connection to the local server", "local", a.o.Local, "error", err)
		stream.Close()
		return
	}
	pipe(stream, local)
}
