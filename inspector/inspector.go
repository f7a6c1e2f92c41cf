// Package inspector is hookback's admission inspector: a local web page
// that shows, live, every review hookback served (decision, timings, the
// patch as operations and as a before/after diff, warnings, the Events the
// webhook recorded), offers each for download in the format `hookback
// replay` reads, and replays one to the same built-in or upstream to show
// whether the answer changed. Its /load page shows a hookback load run
// live, step by step, with load's own plot of latency against rate (the
// run posts itself there; package loadplot draws it for both).
//
// A Store is the admissionhttp.ServedRecorder the transport feeds: its hot path
// copies bytes into a ring bounded in count and bytes (Secrets' data
// redacted first) and parses nothing. A Server renders pages from the Store
// with html/template when they are asked for, streams new rows with
// server-sent events, and serves its assets from the binary: no network
// fetch, no frontend toolchain. It listens on loopback unless exposed.
package inspector

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hookback/hookback/advertise"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/record"
)

// DefaultAddress is where the inspector listens by default
// (--inspector-address).
const DefaultAddress = "127.0.0.1:8682"

// Sources of a webhook, as the list shows them.
const (
	SourceBuiltIn  = "built-in"
	SourceUpstream = "upstream"
)

//go:embed assets
var assets embed.FS

// Options configure New.
type Options struct {
	// Address is host:port to listen on; a host that is not loopback needs
	// Expose.
	Address string
	// Expose allows a non-loopback Address, and Host headers other than
	// loopback ones (without it they are refused, against DNS rebinding).
	Expose bool
	Store  *Store
	// Replay answers a review again through the same built-in or upstream
	// forwarder, never the cluster; nil disables replay.
	Replay record.Target
	// Sources maps each webhook's name to SourceBuiltIn or SourceUpstream.
	Sources map[string]string
	Log     *slog.Logger
	// Fault, when set, is the session's fault, shown and switched from the
	// list page.
	Fault FaultSwitch
}

// Server serves the inspector's pages.
type Server struct {
	opts Options
	log  *slog.Logger
	tmpl *template.Template
	ln   net.Listener
	// loads is the load run shown at /load.
	loads loadRuns
}

// New checks the address, parses the pages and binds the listener now, so
// a busy port fails before anything is registered with the cluster.
func New(opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, errors.New("inspector needs a store")
	}
	if !opts.Expose && !advertise.IsLoopbackAddress(opts.Address) {
		return nil, field.Clause("inspector.Options.Address", opts.Address, "is not a loopback address: pass {inspector.Options.Expose} to serve reviews beyond this machine")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	tmpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Address)
	if err != nil {
		return nil, field.Advise("inspector.Options.Address", "listen for the inspector on %s: %w (pick another {inspector.Options.Address}, or \"\" to disable it)", opts.Address, err)
	}
	if !advertise.IsLoopbackAddress(opts.Address) {
		opts.Log.Warn("the inspector is exposed beyond loopback: anyone who reaches it sees every review (Secrets' data redacted) and can replay them",
			"address", ln.Addr().String())
	}
	return &Server{opts: opts, log: opts.Log, tmpl: tmpl, ln: ln}, nil
}

// Close releases the listener of a server that will not be started.
func (s *Server) Close() error { return s.ln.Close() }

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is the page's address.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/" }

// Start serves until ctx is done, then shuts down: open live streams end
// at once, other requests get a moment to finish. A clean stop returns nil.
func (s *Server) Start(ctx context.Context) error {
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       60 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.ln) }()
	s.opts.Store.warm(ctx)
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve the inspector: %w", err)
		}
		return nil
	}
	// Streams never go idle: end them first, then shut down.
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), time.Second)
	defer scancel()
	if err = srv.Shutdown(sctx); errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("stop the inspector: %w", err)
	}
	return nil
}

// source is how the list labels webhook's origin.
func (s *Server) source(e *entry) string {
	if src, ok := s.opts.Sources[e.webhook]; ok {
		return src
	}
	if e.upstream > 0 {
		return SourceUpstream
	}
	return SourceBuiltIn
}
