// Command inspector measures what one open inspector page costs hookback
// (issue 16, item 7): hookback's real transport serving the real pod-name
// built-in over loopback TLS/HTTP/2, fed 100 reviews a second (open loop,
// as the apiserver sends them), in three alternating phases: the inspector
// off, the inspector on with no page, and the inspector on with one
// Chromium page showing the live list. It reports the answer latency of
// each phase and, for the page, how responsive it stayed: how long a row
// took to appear after its answer, and how late the page's main thread ran
// a 50 ms timer (what a click or a key would wait for). Only loopback.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/server"
)

func main() {
	rate := flag.Int("rate", 100, "admissions per second")
	phase := flag.Duration("phase", 10*time.Second, "length of one phase")
	rounds := flag.Int("rounds", 3, "rounds of the three phases")
	chromium := flag.String("chromium", "chromium", "the Chromium to drive")
	flag.Parse()
	if err := run(*rate, *phase, *rounds, *chromium); err != nil {
		fmt.Fprintln(os.Stderr, "bench-inspector:", err)
		os.Exit(1)
	}
}

// toggle is the transport's recorder, switched on and off between phases
// so that all three phases share one server and one connection.
type toggle struct {
	on    atomic.Bool
	store *inspector.Store
}

var _ admissionhttp.ServedRecorder = (*toggle)(nil)

func (t *toggle) Record(webhook, path string, review, answer []byte) {
	t.RecordServed(admissionhttp.Served{Webhook: webhook, Path: path, Review: review, Answer: answer})
}

func (t *toggle) RecordServed(x admissionhttp.Served) {
	if t.on.Load() {
		t.store.RecordServed(x)
	}
}

func run(rate int, phase time.Duration, rounds int, chromium string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	hooks, err := webhooks.Build([]string{webhooks.NamePodName}, webhooks.DefaultOptions(), webhooks.Deps{Log: discard})
	if err != nil {
		return err
	}
	store := inspector.NewStore(inspector.StoreOptions{Log: discard})
	rec := &toggle{store: store}
	tlsConf, pool, err := selfSigned()
	if err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	srv, err := server.NewServer(server.ServerOptions{Address: addr, HealthAddress: "127.0.0.1:0", TLS: tlsConf,
		Webhooks: hooks, Log: discard, Metrics: server.NewMetrics(), Recorder: rec})
	if err != nil {
		return err
	}
	insp, err := inspector.New(inspector.Options{Address: "127.0.0.1:0", Store: store,
		Sources: map[string]string{webhooks.NamePodName: inspector.SourceBuiltIn}, Log: discard})
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Start(ctx) }()
	go func() { errc <- insp.Start(ctx) }()
	defer func() { cancel(); <-errc; <-errc }()

	page, err := newPage(ctx, chromium, insp.URL())
	if err != nil {
		return err
	}
	defer page.close()
	load := newLoad(addr, pool, hookPath(hooks))
	if err := load.warm(ctx, 200); err != nil {
		return err
	}
	start, _ := os.ReadFile("/proc/loadavg")
	results := map[string]*phaseResult{}
	for r := range rounds {
		for _, name := range phaseNames {
			res, err := runPhase(ctx, name, rec, page, load, rate, phase)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, name, err)
			}
			results[name] = results[name].merge(res)
		}
	}
	end, _ := os.ReadFile("/proc/loadavg")
	report(os.Stdout, results, rate, phase, rounds, string(start), string(end))
	return nil
}

// The three phases, in the order each round runs them.
const (
	phaseOff    = "inspector off"
	phaseNoPage = "inspector on, no page"
	phasePage   = "inspector on, one page open"
)

var phaseNames = []string{phaseOff, phaseNoPage, phasePage}

func runPhase(ctx context.Context, name string, rec *toggle, page *page, load *load, rate int, d time.Duration) (*phaseResult, error) {
	rec.on.Store(name != phaseOff)
	if name == phasePage {
		if err := page.open(ctx); err != nil {
			return nil, err
		}
		defer page.blank(ctx)
	}
	answered, lat, err := load.run(ctx, rate, d)
	if err != nil {
		return nil, err
	}
	res := &phaseResult{latency: lat, n: len(lat)}
	if name == phasePage {
		// Rows may still be on their way: give the last ones a moment.
		time.Sleep(200 * time.Millisecond)
		m, err := page.collect(ctx)
		if err != nil {
			return nil, err
		}
		res.addPage(m, answered)
	}
	return res, nil
}

func hookPath(hooks []admission.Webhook) string {
	for _, h := range hooks {
		if h.Name == webhooks.NamePodName {
			return h.Path
		}
	}
	return "/"
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
