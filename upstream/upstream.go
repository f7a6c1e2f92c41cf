// Package upstream forwards admission reviews to the developer's own webhook
// server (any language, maybe under a debugger) and checks its answers
// before the apiserver sees them: a wrong answer becomes an error that says
// what the server did wrong, instead of a puzzling apiserver message.
package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/admissionhttp"
)

// Options configure a Forwarder.
type Options struct {
	// Base is the upstream server, http or https.
	Base *url.URL
	// CAFile trusts an https upstream's certificate.
	CAFile string
	// Insecure skips verifying an https upstream's certificate; only a
	// loopback upstream may use it.
	Insecure bool
	Log      *slog.Logger
	// LateAnswerTimeout bounds how long an answer is still read after the
	// apiserver stopped waiting for it; zero, or Late nil: it is not.
	LateAnswerTimeout time.Duration
	// Late receives each answer read after the apiserver stopped waiting.
	// It runs on a goroutine of its own and may keep the LateAnswer.
	Late func(LateAnswer)
	// Awaiting, when set, is told of each review whose answer is still
	// awaited when the apiserver stops waiting, before Late receives it:
	// a LateAnswer with no answer yet (Answer, Response and Err unset). It
	// must not block, and may keep it.
	Awaiting func(LateAnswer)
	// Role names what is called, in log lines and errors: "upstream HOST"
	// when empty; --shadow's forwarder names the deployed webhook, whose
	// host may be the apiserver's (its service proxy).
	Role string
	// CAFlag is the flag that trusts its certificate: --upstream-ca when
	// empty.
	CAFlag string
}

// Validate reports every problem at once, a wrong value as a field.Error.
func (o Options) Validate() error {
	if o.Base == nil || (o.Base.Scheme != "http" && o.Base.Scheme != "https") || o.Base.Host == "" {
		return fmt.Errorf("upstream %v: want an http or https URL such as https://127.0.0.1:9443", o.Base)
	}
	var errs []error
	if o.Insecure && !isLoopback(o.Base.Hostname()) {
		errs = append(errs, field.Clause("upstream.Options.Insecure", "", fmt.Sprintf("is only accepted for a loopback upstream, not %s: pass {upstream.Options.CAFile}", o.Base.Host)))
	}
	if o.CAFile != "" {
		if _, err := loadPool(o.CAFile); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loadPool(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read %w", field.Errorf("upstream.Options.CAFile", "", "%w", err))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, field.Clause("upstream.Options.CAFile", file, "holds no PEM certificate")
	}
	return pool, nil
}

func (o Options) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pool, err := loadPool(o.CAFile)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	// Only ever for loopback (Validate): a developer's self-signed server.
	tc.InsecureSkipVerify = o.Insecure //nolint:gosec
	return tc, nil
}

// Forwarder is an admission.Handler that forwards the review, exactly as
// received, to the upstream and checks the answer.
type Forwarder struct {
	opts   Options
	target string
	client *http.Client
	// up: the upstream has answered once, so a refused connection is a
	// restart to wait for; waiting: that wait has been logged.
	up, waiting atomic.Bool
}

// restarting records whether a restart wait is on and reports whether
// that changed, so each restart is logged once.
func (f *Forwarder) restarting(on bool) bool { return f.waiting.Swap(on) != on }

var _ admission.Handler = (*Forwarder)(nil)

// New forwards to opts.Base + path (path may carry a query).
func New(opts Options, path string) (*Forwarder, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	tc, err := opts.tlsConfig()
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 16,
		IdleConnTimeout: 90 * time.Second, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
	base := strings.TrimSuffix(opts.Base.String(), "/")
	return &Forwarder{opts: opts, target: base + "/" + strings.TrimLeft(path, "/"), client: &http.Client{Transport: tr}}, nil
}

// Handle implements admission.Handler. The request's context ends when the
// apiserver stops waiting, which bounds the upstream call; with
// Options.Late set, the answer is still read after that, up to
// LateAnswerTimeout, and handed to Late.
func (f *Forwarder) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	answer, err := f.exchange(ctx, req, start)
	admission.ReportWait(ctx, time.Since(start))
	if err != nil {
		f.opts.Log.Warn(f.opts.subject()+" failed", "upstream", f.target, "namespace", req.Namespace, "name", req.Name, "error", err)
		return admission.CallFailed(err)
	}
	resp, err := check(req, answer)
	if err != nil {
		f.opts.Log.Warn(f.opts.subject()+" answered wrongly", "upstream", f.target, "namespace", req.Namespace, "name", req.Name, "error", err)
		resp = admission.CallFailed(err)
	}
	return resp
}

// exchange sends the review and returns the answer, or why none came
// while the apiserver waited.
func (f *Forwarder) exchange(ctx context.Context, req admission.Request, start time.Time) ([]byte, error) {
	if f.opts.Late == nil || f.opts.LateAnswerTimeout <= 0 {
		return f.post(ctx, f.url(req.Timeout), req.Review())
	}
	x := &exchange{f: f, target: f.url(req.Timeout), body: &swapBody{b: req.Review()}, waitCtx: ctx, sendCtx: ctx}
	sendCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.opts.LateAnswerTimeout)
	x.sendCtx = sendCtx
	result := make(chan sendResult, 1)
	go func() {
		defer cancel()
		answer, err := x.send()
		result <- sendResult{answer, err}
	}()
	select {
	case r := <-result:
		return r.answer, r.err
	case <-ctx.Done():
		review := x.body.detach()
		if f.opts.Awaiting != nil {
			f.opts.Awaiting(LateAnswer{Target: f.target, UID: string(req.UID), Namespace: req.Namespace, Name: req.Name, Review: review, Waited: time.Since(start)})
		}
		go f.late(req, review, start, result)
		return nil, fmt.Errorf("%s did not answer within the webhook's timeoutSeconds: the apiserver gave up and applied the failurePolicy; hookback still waits for the answer, up to %s, and reports it (raise --timeout, up to 30s, while debugging)",
			f.opts.who(), f.opts.LateAnswerTimeout)
	}
}

// url is the upstream target with the apiserver's timeout query kept.
func (f *Forwarder) url(timeout time.Duration) string {
	if timeout <= 0 {
		return f.target
	}
	sep := "?"
	if strings.Contains(f.target, "?") {
		sep = "&"
	}
	return f.target + sep + "timeout=" + url.QueryEscape(timeout.String())
}

// post sends body to target while the caller waits (ctx), a restarting
// upstream waited for; conversions use it too.
func (f *Forwarder) post(ctx context.Context, target string, body []byte) ([]byte, error) {
	x := &exchange{f: f, target: target, body: &swapBody{b: body}, waitCtx: ctx, sendCtx: ctx}
	return x.send()
}

// read sends hr and reads the answer, bounded; a transport failure is an
// error that says what to do.
func (f *Forwarder) read(hr *http.Request) ([]byte, error) {
	ctx := hr.Context()
	resp, err := f.client.Do(hr)
	if err != nil {
		return nil, f.explain(ctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, admissionhttp.DefaultMaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s answer: %w", f.opts.subject(), f.explain(ctx, err))
	}
	if len(b) > admissionhttp.DefaultMaxBodyBytes {
		return nil, fmt.Errorf("%s answer larger than %d bytes", f.opts.subject(), admissionhttp.DefaultMaxBodyBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered HTTP %d: %s", f.opts.subject(), resp.StatusCode, snippet(b))
	}
	return b, nil
}

func (f *Forwarder) explain(ctx context.Context, err error) error {
	who := f.opts.who()
	var unknown x509.UnknownAuthorityError
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return &refusedError{host: f.opts.Base.Host, what: f.opts.Role, err: err}
	case ctx.Err() != nil:
		// The apiserver gives up after the webhook's timeoutSeconds.
		return fmt.Errorf("%s did not answer within the webhook's timeoutSeconds: the apiserver gave up (raise --timeout, up to 30s, while debugging)", who)
	case errors.As(err, &unknown):
		if f.opts.CAFlag != "" {
			return fmt.Errorf("%s has a certificate hookback does not trust: pass %s", who, f.opts.CAFlag)
		}
		return fmt.Errorf("%s has a certificate hookback does not trust: pass --upstream-ca, or --upstream-insecure for a loopback upstream", who)
	case errors.As(err, &dnsErr):
		return fmt.Errorf("%s host %s not found: %w", f.opts.subject(), f.opts.Base.Hostname(), err)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s closed the connection without answering: %w", who, err)
	}
	return fmt.Errorf("%s: %w", who, err)
}

// subject is what is called, without its address: "upstream", or the
// Role's first words ("deployed webhook").
func (o Options) subject() string {
	if o.Role == "" {
		return "upstream"
	}
	return o.Role
}

// who is what is called, with its address where the Role does not say.
func (o Options) who() string {
	if o.Role == "" {
		return "upstream " + o.Base.Host
	}
	return o.Role
}

// refusedError is a refused connection, explained; it unwraps to the
// cause, so that a restarting upstream is told from a dead one.
type refusedError struct {
	// what is Options.Role: "" for the user's webhook.
	host, what string
	err        error
}

func (e *refusedError) Error() string {
	if e.what != "" {
		return fmt.Sprintf("nothing listens on %s: is the %s running?", e.host, e.what)
	}
	return fmt.Sprintf("nothing listens on %s: is your webhook running?", e.host)
}

func (e *refusedError) Unwrap() error { return e.err }

// Probe says whether the upstream accepts connections (a TLS handshake for
// https), in the same words as a failed forward.
func (o Options) Probe(ctx context.Context) error {
	f, err := New(o, "/")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", hostPort(o.Base))
	if err != nil {
		return f.explain(ctx, err)
	}
	defer conn.Close()
	if o.Base.Scheme == "https" {
		tc, _ := o.tlsConfig()
		tc.ServerName = o.Base.Hostname()
		if err := tls.Client(conn, tc).HandshakeContext(ctx); err != nil {
			return f.explain(ctx, err)
		}
	}
	return nil
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// snippet is the start of a body for a message, printable: the upstream's
// own error text or page helps the developer, but JSON is not shown, since
// an upstream that echoes its review (a Secret's, say) answers with the
// object in it, and hookback never logs objects.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[") {
		return fmt.Sprintf("%d bytes of JSON, not shown: they may hold the object", len(b))
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return fmt.Sprintf("%q", s)
}
