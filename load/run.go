package load

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
)

// Cluster is what a run needs of the cluster.
type Cluster struct {
	// Client sends the requests and reads the apiserver's /metrics. Build
	// it with rest.HTTPClientFor: it carries the kubeconfig's credentials,
	// has no client-side rate limit and retries nothing (rest.Request's
	// retries are not in it), so every 429 is counted.
	Client *http.Client
	// Server is the apiserver's base URL (rest.DefaultServerUrlFor).
	Server *url.URL
	// Mapper finds each object's resource (the apiserver's discovery).
	Mapper meta.RESTMapper
}

// Config is one run.
type Config struct {
	Options
	Gates   Gates
	Objects []Object
	// HookbackMetrics is the /metrics URL of the hookback session that
	// serves the webhooks, when one does ("": none).
	HookbackMetrics string
	// Inspector is the base URL of an inspector (http://127.0.0.1:8682)
	// told of the run after each step, to show it live ("": none).
	Inspector string
	Log       *slog.Logger
	// Progress, when set, is told each step as it ends.
	Progress func(Step)
}

// run is the state of one run.
type run struct {
	cfg     Config
	cl      Cluster
	send    sender
	targets []target
	next    atomic.Uint64
	sent    atomic.Int64
	flight  atomic.Int64
	wg      sync.WaitGroup
	// apiserverMetrics and hookbackMetrics are the URLs read at each step's
	// edges ("" once unreadable, with a note saying why).
	apiserverMetrics, hookbackMetrics string
	// inspector is the URL the run is posted to ("" once unreachable); id
	// tells this run's reports from another's.
	inspector, id string
	notes         []string
}

// Run sends the load, step by step, and reports. Ctrl-C (ctx) stops it at
// once: the requests in flight are cancelled, and the steps measured so
// far are reported with Interrupted set. The error is for a run that
// could not start; a gate that fails is in the report (Report.Passed).
func Run(ctx context.Context, cl Cluster, cfg Config) (*Report, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if err := errors.Join(cfg.Options.Validate(), cfg.Gates.Validate()); err != nil {
		return nil, err
	}
	rates, _ := cfg.Rates()
	targets, err := resolve(cfg.Objects, cl.Mapper, cfg.Namespace, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(cl.Server.String(), "/")
	r := &run{cfg: cfg, cl: cl, targets: targets, send: sender{client: cl.Client, base: base, timeout: cfg.Timeout},
		apiserverMetrics: base + "/metrics", hookbackMetrics: cfg.HookbackMetrics,
		inspector: inspectorURL(cfg.Inspector), id: fmt.Sprintf("%s-%d", cfg.Namespace, time.Now().UnixNano())}
	rep := &Report{Server: cl.Server.String(), Namespace: cfg.Namespace, Rates: rates, BudgetMs: ms(cfg.Budget)}
	for _, t := range targets {
		rep.Sources = append(rep.Sources, t.source+" ("+t.resource+")")
	}
	r.publish(ctx, rep, false)
	before := r.scrapeAll(ctx)
	length := cfg.stepLength(len(rates))
	var deadline time.Time
	if cfg.Duration > 0 {
		deadline = time.Now().Add(cfg.Duration)
	}
	for i, rate := range rates {
		if r.done(ctx, deadline) {
			break
		}
		st, elapsed := r.step(ctx, rate, length, deadline)
		r.wg.Wait()
		s := summarize(i+1, rate, elapsed, st)
		if ctx.Err() == nil {
			// Not after Ctrl-C: stopping at once matters more than the
			// last step's per-webhook rows.
			after := r.scrapeAll(ctx)
			s.Webhooks = webhookRows(before, after)
			before = after
		}
		rep.Steps = append(rep.Steps, s)
		r.publish(ctx, rep, false)
		if cfg.Progress != nil {
			cfg.Progress(s)
		}
		if ctx.Err() != nil {
			break
		}
	}
	rep.Interrupted = ctx.Err() != nil
	rep.finish(cfg.Gates)
	r.publish(ctx, rep, true)
	rep.Notes = r.notes
	return rep, nil
}

// done says whether the run's bounds are reached.
func (r *run) done(ctx context.Context, deadline time.Time) bool {
	return ctx.Err() != nil || (!deadline.IsZero() && !time.Now().Before(deadline)) ||
		(r.cfg.Count > 0 && r.sent.Load() >= int64(r.cfg.Count))
}

// step sends at rate for length (or to the deadline), open loop: a
// request is sent when it is due, whether or not earlier ones were
// answered, up to MaxInFlight waiting; it returns when the last is sent.
func (r *run) step(ctx context.Context, rate float64, length time.Duration, deadline time.Time) (*stepStats, time.Duration) {
	start := time.Now()
	end := start.Add(length)
	if !deadline.IsZero() && deadline.Before(end) {
		end = deadline
	}
	st := newStepStats(end)
	interval := time.Duration(float64(time.Second) / rate)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for n := 0; ; {
		due := start.Add(time.Duration(n) * interval)
		if !due.Before(end) {
			return st, end.Sub(start)
		}
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return st, time.Since(start)
			case <-timer.C:
			}
		}
		// Every request due by now goes, so that a late wake-up does not
		// lower the rate offered.
		for now := time.Now(); !due.After(now) && due.Before(end); due = start.Add(time.Duration(n) * interval) {
			if r.done(ctx, time.Time{}) {
				return st, time.Since(start)
			}
			n++
			r.launch(ctx, st)
		}
	}
}

// launch sends the next target, or counts it skipped when MaxInFlight
// requests are waiting already.
func (r *run) launch(ctx context.Context, st *stepStats) {
	if r.flight.Load() >= int64(r.cfg.MaxInFlight) {
		st.skip()
		return
	}
	t := &r.targets[(r.next.Add(1)-1)%uint64(len(r.targets))]
	r.sent.Add(1)
	st.sending()
	r.flight.Add(1)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.flight.Add(-1)
		r.send.send(ctx, t, st)
	}()
}

// localClient reads hookback's /metrics.
var localClient = &http.Client{Timeout: 10 * time.Second}

// scrapeAll reads the apiserver's and hookback's histograms; a source
// that cannot be read is noted once and not read again.
func (r *run) scrapeAll(ctx context.Context) map[string]snapshot {
	out := map[string]snapshot{}
	read := func(name string, client *http.Client, u *string, spec scrapeSpec, advice string) {
		if *u == "" {
			return
		}
		s, err := scrape(ctx, client, *u, spec)
		if err != nil {
			if !errors.Is(err, errForbidden) {
				advice = ""
			}
			r.notes = append(r.notes, fmt.Sprintf("%s's metrics (%s) not read: %v%s", name, *u, err, advice))
			*u = ""
			return
		}
		out[name] = s
	}
	read(SourceAPIServer, r.cl.Client, &r.apiserverMetrics, apiserverSpec, " (reading them needs get on the nonResourceURL /metrics)")
	// A client of its own: the apiserver's carries the kubeconfig's
	// credentials, which hookback's /metrics must not see.
	read(SourceHookback, localClient, &r.hookbackMetrics, hookbackSpec, "")
	return out
}
