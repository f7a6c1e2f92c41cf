// Package server runs hookback's two listeners: the webhooks over TLS, each
// admission answered first and its log line, metrics and recording done after
// (admissionhttp.Afterwards), within the limits of docs/server.md; and /healthz,
// /readyz and /metrics over plain HTTP on a separate, loopback by default,
// address.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server serves the webhooks over TLS and health and metrics over plain HTTP
// on a separate (loopback by default) address.
type Server struct {
	webhooks []admission.Webhook
	handlers map[string]http.Handler
	tls      *tls.Config
	log      *slog.Logger
	metrics  *Metrics
	recorder admissionhttp.Recorder
	limits   Limits
	ready    atomic.Bool

	webhookLn net.Listener
	healthLn  net.Listener
}

// ServerOptions configures a Server.
type ServerOptions struct {
	// Address is host:port for the webhooks.
	Address string
	// HealthAddress is host:port for /healthz, /readyz and /metrics.
	HealthAddress string
	TLS           *tls.Config
	Webhooks      []admission.Webhook
	Log           *slog.Logger
	Metrics       *Metrics
	// Recorder, when set, keeps every review and answer.
	Recorder admissionhttp.Recorder
	// Handlers are other webhooks by path (CRD conversion), served as they are.
	Handlers map[string]http.Handler
	// Limits bound what one client can hold; zero fields take
	// DefaultLimits'.
	Limits Limits
}

// Limits bound the time and memory one connection or request can hold on
// the webhook listener (docs/server.md lists them).
type Limits struct {
	// ReadHeaderTimeout closes a connection whose request headers do not
	// arrive in time (slowloris).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from its headers to the end of the
	// answer: above the apiserver's longest webhook timeout (30 s), so a
	// slow upstream is answered by its own timeout first.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps request headers (431 above it).
	MaxHeaderBytes int
	// MaxBodyBytes caps a review body (413 above it).
	MaxBodyBytes int64
}

// DefaultLimits are what start serves with.
func DefaultLimits() Limits {
	return Limits{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 40 * time.Second,
		IdleTimeout: 90 * time.Second, MaxHeaderBytes: 64 << 10, MaxBodyBytes: admissionhttp.DefaultMaxBodyBytes}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	l.ReadHeaderTimeout, l.ReadTimeout = pick(l.ReadHeaderTimeout, d.ReadHeaderTimeout), pick(l.ReadTimeout, d.ReadTimeout)
	l.WriteTimeout, l.IdleTimeout = pick(l.WriteTimeout, d.WriteTimeout), pick(l.IdleTimeout, d.IdleTimeout)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = d.MaxBodyBytes
	}
	return l
}

// NewServer binds both listeners now, so a busy port or a foreign address
// fails before anything is registered with the cluster.
func NewServer(opts ServerOptions) (*Server, error) {
	paths := map[string]string{}
	for _, w := range opts.Webhooks {
		if prev, ok := paths[w.Path]; ok {
			return nil, fmt.Errorf("webhooks %s and %s both serve %s", prev, w.Name, w.Path)
		}
		paths[w.Path] = w.Name
	}
	for p := range opts.Handlers {
		if prev, ok := paths[p]; ok {
			return nil, fmt.Errorf("webhook %s and a conversion webhook both serve %s", prev, p)
		}
	}
	wl, err := net.Listen("tcp", opts.Address)
	if err != nil {
		return nil, field.Advise("server.Options.Address", "listen for webhooks on %s: %w (is another hookback running? pick {plan.Options.Port}, or {plan.Options.BindAddress} with an address of this machine)", opts.Address, err)
	}
	hl, err := net.Listen("tcp", opts.HealthAddress)
	if err != nil {
		wl.Close()
		return nil, field.Advise("server.Options.HealthAddress", "listen for health on %s: %w (pick another {plan.Options.HealthAddress})", opts.HealthAddress, err)
	}
	return &Server{webhooks: opts.Webhooks, handlers: opts.Handlers, tls: opts.TLS, log: opts.Log, metrics: opts.Metrics, recorder: opts.Recorder, limits: opts.Limits.withDefaults(), webhookLn: wl, healthLn: hl}, nil
}

// Close releases both listeners of a server that will not be started (a
// failure between NewServer and Start). Start closes them itself; closing
// one Start already closed is harmless.
func (s *Server) Close() error {
	return errors.Join(closeListener(s.webhookLn), closeListener(s.healthLn))
}

func closeListener(ln net.Listener) error {
	if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// Addr is the bound webhook address.
func (s *Server) Addr() net.Addr { return s.webhookLn.Addr() }

// HealthAddr is the bound health address.
func (s *Server) HealthAddr() net.Addr { return s.healthLn.Addr() }

// SetReady flips /readyz.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// Paths lists the paths the webhooks serve.
func (s *Server) Paths() []string {
	out := make([]string, 0, len(s.webhooks))
	for _, w := range s.webhooks {
		out = append(out, w.Path)
	}
	slices.Sort(out)
	return out
}

func (s *Server) webhookMux(after *admissionhttp.Afterwards) http.Handler {
	opts := admissionhttp.Options{Log: s.log, Recorder: s.recorder, MaxBodyBytes: s.limits.MaxBodyBytes, Afterwards: after}
	if s.metrics != nil {
		opts.Observer = s.metrics
	}
	mux := http.NewServeMux()
	for _, w := range s.webhooks {
		mux.Handle(w.Path, admissionhttp.NewHandler(w, opts))
	}
	for p, h := range s.handlers {
		mux.Handle(p, h)
	}
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		http.Error(rw, fmt.Sprintf("no webhook at %s; served paths: %v", r.URL.Path, s.Paths()), http.StatusNotFound)
	})
	return mux
}

func (s *Server) healthMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready: registration not verified yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	if s.metrics != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{}))
	}
	return mux
}

// afterwardsQueue bounds the answered admissions whose bookkeeping waits
// (tens of µs each), and so the reviews held for it: more than the
// apiserver's usual concurrency, and beyond it an answer waits for room.
const afterwardsQueue = 64

// Start serves until ctx is done, then shuts down gracefully, letting
// in-flight reviews finish and their bookkeeping be done. A clean shutdown
// returns nil.
//
// Reviews still running after shutdown's bound (an upstream stopped at a
// breakpoint) have their contexts cancelled by the close; Start waits up to
// inFlightBound more for them to return, so that no review, nor its log
// line, outlives it.
func (s *Server) Start(ctx context.Context) error {
	after := admissionhttp.NewAfterwards(afterwardsQueue)
	afterDone := make(chan struct{})
	go func() {
		defer close(afterDone)
		after.Run()
	}()
	defer func() {
		after.Close()
		<-afterDone
	}()
	tlsConf := s.tls.Clone()
	serving := newInFlight()
	webhookSrv := &http.Server{
		Handler:           serving.wrap(s.webhookMux(after)),
		TLSConfig:         tlsConf,
		ReadHeaderTimeout: s.limits.ReadHeaderTimeout,
		ReadTimeout:       s.limits.ReadTimeout,
		WriteTimeout:      s.limits.WriteTimeout,
		IdleTimeout:       s.limits.IdleTimeout,
		MaxHeaderBytes:    s.limits.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	healthSrv := &http.Server{Handler: s.healthMux(), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- serve(webhookSrv.Serve(tls.NewListener(s.webhookLn, tlsConf))) }()
	go func() { errc <- serve(healthSrv.Serve(s.healthLn)) }()

	pending := 2
	var err error
	select {
	case <-ctx.Done():
	case e := <-errc:
		pending--
		err = fmt.Errorf("serve: %w", e)
	}
	err = errors.Join(err, shutdown(webhookSrv), shutdown(healthSrv))
	if n := serving.wait(inFlightBound); n > 0 {
		s.log.Warn("reviews still running at shutdown ignore their cancelled context; their log lines may be lost", "reviews", n)
	}
	// Wait for the serve goroutines so none outlives Start.
	for ; pending > 0; pending-- {
		err = errors.Join(err, <-errc)
	}
	return err
}

// inFlightBound is how long Start waits, after closing, for reviews that
// were still running: long enough for any handler that honours its
// context, short enough for a Ctrl-C.
const inFlightBound = 2 * time.Second

// shutdown lets in-flight reviews finish, then closes what is left. The
// apiserver was deregistered first, so nothing new arrives; without the
// bound, HTTP/2 keeps every idle apiserver connection for a second after its
// GOAWAY, and each Ctrl-C would wait for it.
func shutdown(srv *http.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return srv.Close()
}

func serve(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
