package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Runnable is something the session runs beside the server (controllers,
// informers). Contract: Run blocks until ctx is done and returns only after
// everything it started has stopped.
type Runnable interface {
	Run(ctx context.Context) error
}

// RunnableFunc adapts a function to Runnable.
type RunnableFunc func(ctx context.Context) error

// Run calls f.
func (f RunnableFunc) Run(ctx context.Context) error { return f(ctx) }

var _ Runnable = RunnableFunc(nil)

// Template is the webhook configuration template and where it comes from.
type Template struct {
	// Path is the file to read and watch; empty means Default (embedded).
	Path    string
	Default []byte
}

// Load returns the template text and a name for messages.
func (t Template) Load() (string, []byte, error) {
	if t.Path == "" {
		return "webhook-url.yaml.tmpl (built in)", t.Default, nil
	}
	b, err := os.ReadFile(t.Path)
	if err != nil {
		return "", nil, fmt.Errorf("read template: %w", err)
	}
	return t.Path, b, nil
}

// SessionOptions wires one `hookback start` run.
type SessionOptions struct {
	Client   kubernetes.Interface
	Dynamic  dynamic.Interface
	Server   *Server
	Canary   *Canary
	Template Template
	// Data is the template data; its CABundle is taken from Certs when set.
	Data TemplateData
	// Certs, when set, is watched: a change re-applies the configurations
	// with the new caBundle.
	Certs          Certs
	LeaseNamespace string
	Holder         string
	LeaseDuration  time.Duration
	// RequireVerified stops the run (deregistering) when verification fails;
	// without it a failure is logged and the run goes on (--no-verify).
	RequireVerified bool
	VerifyTimeout   time.Duration
	// Runnables run for the whole session (controllers, informers).
	Runnables []Runnable
	// WaitForCaches blocks until the informer caches the handlers read have
	// synced; nil when there are none.
	WaitForCaches func(ctx context.Context) error
	// Banner receives the ready banner.
	Banner io.Writer
	// Parts names the enabled webhooks and controllers; they are recorded on
	// the session Lease so other sessions know what this one relies on.
	Parts []string
	// HolderAlive says whether another holder of this session's Lease still
	// runs; nil treats every live Lease as held.
	HolderAlive HolderAlive
	// Cleanups remove, per part, objects that part wrote outside the
	// session's own configurations and that sessions share (exec RBAC, node
	// CPU). Each runs after the part has stopped, unless another live
	// session runs the same part.
	Cleanups map[string]func(ctx context.Context) error
	// ReloadInterval is the backstop re-read period of the template file.
	ReloadInterval time.Duration
	Log            *slog.Logger
}

// Session is one `hookback start` run against a cluster.
type Session struct {
	opts      SessionOptions
	registrar *Registrar
	heartbeat *Heartbeat
	leaseRef  string
	// acquired is set once the session's Lease is ours: only then may
	// shutdown delete what the session name owns.
	acquired bool
	// bg tracks the runnables and loops, srv the server: Run waits for both,
	// the server last, so it answers until the apiserver stops calling.
	bg, srv sync.WaitGroup
}

// NewSession checks the options and builds a session.
func NewSession(opts SessionOptions) (*Session, error) {
	if opts.Data.Session == "" {
		return nil, errors.New("server: session name is empty")
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = 30 * time.Second
	}
	if opts.ReloadInterval == 0 {
		opts.ReloadInterval = 2 * time.Second
	}
	return &Session{
		opts:      opts,
		registrar: &Registrar{Client: opts.Client, Dynamic: opts.Dynamic, Session: opts.Data.Session, Log: opts.Log},
		heartbeat: &Heartbeat{Client: opts.Client, Namespace: opts.LeaseNamespace, Session: opts.Data.Session,
			Holder: opts.Holder, Duration: opts.LeaseDuration, Parts: opts.Parts, Log: opts.Log},
		leaseRef: opts.LeaseNamespace + "/" + LeaseName(opts.Data.Session),
	}, nil
}

// Render renders the current template for this session.
func (s *Session) Render() (*Registration, error) {
	name, text, err := s.opts.Template.Load()
	if err != nil {
		return nil, err
	}
	return Render(name, text, s.data(), RenderOptions{Paths: s.opts.Server.Paths(), LeaseRef: s.leaseRef})
}

// data is the template data with the current caBundle, which changes when
// user-provided certificate files do.
func (s *Session) data() TemplateData {
	d := s.opts.Data
	if s.opts.Certs != nil {
		d.CABundle = s.opts.Certs.CABundle()
	}
	return d
}

// Run serves, registers, verifies and runs until ctx is done, then
// deregisters before it stops serving, so the cluster stops calling first.
func (s *Session) Run(ctx context.Context) (err error) {
	start := time.Now()
	// The server outlives ctx: it must keep answering while we deregister.
	srvCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	// Controllers too: they stop after deregistration (shutdown).
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	errc := make(chan error, 1+len(s.opts.Runnables))
	s.srv.Go(func() { errc <- s.opts.Server.Start(srvCtx) })
	defer func() {
		s.shutdown(stopBackground, func() { stopServer(); s.srv.Wait() })
		close(errc)
		for e := range errc {
			err = errors.Join(err, e)
		}
	}()

	if err := s.acquire(ctx); err != nil {
		return err
	}
	// Controllers start only once the session is ours: a refused start must
	// not write anything another session would then have to clean up.
	for _, r := range s.opts.Runnables {
		s.bg.Go(func() { errc <- r.Run(bgCtx) })
	}
	reg, err := s.register(ctx)
	if err != nil {
		return err
	}
	rtt, verr := s.verify(ctx)
	if verr != nil && s.opts.RequireVerified {
		return verr
	}
	if verr != nil {
		s.opts.Log.Warn("running although the apiserver cannot reach hookback (--no-verify)", "error", verr)
	}
	s.opts.Server.SetReady(true)
	s.banner(reg, time.Since(start), rtt, verr)
	return s.loop(ctx, bgCtx, errc)
}

// acquire cleans up dead sessions and takes this session's Lease.
func (s *Session) acquire(ctx context.Context) error {
	log := s.opts.Log
	removed, err := s.registrar.Cleanup(ctx, CleanupOptions{Stale: true, Except: s.opts.Data.Session, DefaultLeaseNamespace: s.opts.LeaseNamespace})
	if err != nil {
		log.Warn("could not clean up every stale session", "error", err)
	}
	if len(removed) > 0 {
		log.Info("removed stale sessions", "sessions", strings.Join(removed, ","))
	}
	if err := s.heartbeat.Acquire(ctx, s.holderAlive); err != nil {
		return err
	}
	s.acquired = true
	return nil
}

// register waits for the caches the handlers read and applies the template.
func (s *Session) register(ctx context.Context) (*Registration, error) {
	if s.opts.WaitForCaches != nil {
		if err := s.opts.WaitForCaches(ctx); err != nil {
			return nil, fmt.Errorf("wait for informer caches: %w", err)
		}
	}
	reg, err := s.Render()
	if err != nil {
		return nil, err
	}
	if err := s.registrar.Apply(ctx, reg, s.canaryKey()); err != nil {
		return nil, err
	}
	return reg, nil
}

func (s *Session) holderAlive(holder string) bool {
	if s.opts.HolderAlive == nil {
		return true
	}
	return s.opts.HolderAlive(holder)
}

func (s *Session) canaryKey() string {
	return kindValidatingHook + "/hookback-canary-" + s.opts.Data.Session
}

func (s *Session) verify(ctx context.Context) (time.Duration, error) {
	canary := CanaryConfiguration(s.opts.Data.Session, s.opts.Data.URL, s.data().CABundle, s.leaseRef)
	if err := s.registrar.ApplyObject(ctx, canary); err != nil {
		return 0, err
	}
	v := &Verifier{Client: s.opts.Client, Canary: s.opts.Canary, Namespace: s.opts.LeaseNamespace,
		Session: s.opts.Data.Session, URL: s.opts.Data.URL, Timeout: s.opts.VerifyTimeout}
	rtt, err := v.Verify(ctx)
	if derr := s.registrar.DeleteObject(context.WithoutCancel(ctx), kindValidatingHook, canary.GetName()); derr != nil {
		s.opts.Log.Warn("could not delete the canary webhook configuration", "error", derr)
	}
	return rtt, err
}

// loop keeps the session alive: heartbeat, template reloads, and a stop on
// ctx or on a failed server or runnable.
func (s *Session) loop(ctx, bgCtx context.Context, errc <-chan error) error {
	reapply := make(chan struct{}, 1)
	s.bg.Go(func() { s.heartbeat.Run(bgCtx, s.opts.LeaseDuration/6, func() { trySend(reapply) }) })
	if s.opts.Template.Path != "" {
		w := &FileWatcher{Path: s.opts.Template.Path, Interval: s.opts.ReloadInterval, Debounce: 20 * time.Millisecond, Log: s.opts.Log}
		wait, err := w.Watch(bgCtx, reapply)
		if err != nil {
			s.opts.Log.Warn("template hot reload disabled", "error", err)
		} else {
			s.bg.Go(wait)
		}
	}
	if s.opts.Certs != nil {
		wait, err := s.opts.Certs.Watch(bgCtx, reapply)
		if err != nil {
			s.opts.Log.Warn("certificate hot reload disabled", "error", err)
		} else if wait != nil {
			s.bg.Go(wait)
		}
	}
	for {
		select {
		case <-ctx.Done():
			s.opts.Log.Info("stopping: deregistering first so the apiserver stops calling")
			return nil
		case err := <-errc:
			return fmt.Errorf("stopped unexpectedly: %w", err)
		case <-reapply:
			s.reapply(ctx)
		}
	}
}

func (s *Session) reapply(ctx context.Context) {
	start := time.Now()
	reg, err := s.Render()
	if err != nil {
		s.opts.Log.Error("template not applied; the previous configuration stays live", "error", err)
		return
	}
	if err := s.registrar.Apply(ctx, reg); err != nil {
		s.opts.Log.Error("re-apply failed; will retry on the next change", "error", err)
		return
	}
	s.opts.Log.Info("webhook configuration re-applied", "webhooks", len(reg.Webhooks()), "took", time.Since(start))
}

// shutdown undoes the run in the safe order: delete the configurations so
// the apiserver stops calling, stop the controllers and wait for them (a
// write in flight must not land after the cleanup), stop serving, clean up
// shared objects, and release the Lease last. It runs on a fresh context: the run's context
// is already cancelled when we stop.
func (s *Session) shutdown(stopBackground, stopServer func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	s.opts.Server.SetReady(false)
	if !s.acquired {
		stopBackground()
		s.bg.Wait()
		stopServer()
		return
	}
	errs := []error{s.registrar.Deregister(ctx)}
	stopBackground()
	s.bg.Wait()
	// The apiserver drops deleted configurations asynchronously; with the
	// server stopped, a late call fails open instead of reaching a handler
	// that would undo the cleanup (a restored node oversold again).
	stopServer()
	errs = append(errs, s.cleanupShared(ctx), s.heartbeat.Release(ctx))
	if err := errors.Join(errs...); err != nil {
		s.opts.Log.Error("deregistration incomplete: run `hookback cleanup --session "+s.opts.Data.Session+"`", "error", err)
		return
	}
	s.opts.Log.Info("deregistered", "session", s.opts.Data.Session)
}

// cleanupShared runs the cleanup of every part no other live session runs.
func (s *Session) cleanupShared(ctx context.Context) error {
	if len(s.opts.Cleanups) == 0 {
		return nil
	}
	namespaces, err := s.registrar.LeaseNamespaces(ctx, s.opts.LeaseNamespace)
	if err != nil {
		return err
	}
	live, err := LiveParts(ctx, s.opts.Client, namespaces, s.opts.Data.Session)
	if err != nil {
		return err
	}
	return RunCleanups(ctx, s.opts.Cleanups, live, s.opts.Log)
}

func (s *Session) banner(reg *Registration, took, rtt time.Duration, verr error) {
	w := s.opts.Banner
	if w == nil {
		return
	}
	verified := fmt.Sprintf("verified: the apiserver called back in %s", rtt.Round(time.Microsecond))
	if verr != nil {
		verified = "NOT verified (--no-verify): the apiserver could not call hookback, see the log"
	}
	fmt.Fprintf(w, "hookback is ready in %s, %s\n", took.Round(time.Millisecond), verified)
	fmt.Fprintf(w, "  url:      %s\n  session:  %s\n  health:   http://%s/readyz\n", s.opts.Data.URL, s.opts.Data.Session, s.opts.Server.HealthAddr())
	for _, h := range reg.Webhooks() {
		fmt.Fprintf(w, "  webhook:  %s\n", h)
	}
	fmt.Fprintf(w, "Stop with Ctrl-C to deregister. After a crash, `hookback cleanup --session %s` removes what is left.\n", s.opts.Data.Session)
}

func trySend(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
