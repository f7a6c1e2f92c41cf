// Command policy measures what --policy costs, in process, beside a
// reference measured in the same run:
//
//   - latency: a pod review through hookback's admission HTTP handler
//     answering allow (the request hookback already handles), and the same
//     with a five-validation ValidatingAdmissionPolicy evaluated on it by
//     the apiserver's code, interleaved request by request; p50 and p90
//     of each, and the p50 difference (target: at most 0.2 ms);
//
//   - audit: audit.Run over -pods pods through three policies (two
//     validating, one mutating), and, as the reference, through three
//     webhooks that allow at once (the audit's own machinery); wall time
//     of each (target: the policies under 10 s for 5,000 pods).
//
// Run from test/bench/: go run ./policy -requests 20000 -pods 5000 -rounds 3
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/policy"
	"github.com/hookback/hookback/server"
)

func main() {
	requests := flag.Int("requests", 20000, "reviews per handler for the latency figure")
	pods := flag.Int("pods", 5000, "pods for the audit figure")
	rounds := flag.Int("rounds", 3, "audits of each kind")
	fixture := flag.String("review", filepath.Join("..", "..", "testdata", "admission", "pod-create.v1.json"), "AdmissionReview to send")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the audit rounds to this file")
	flag.Parse()
	if *profile != "" {
		stop, err := startProfile(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench policy:", err)
			os.Exit(1)
		}
		defer stop()
	}
	if err := run(*requests, *pods, *rounds, *fixture); err != nil {
		fmt.Fprintln(os.Stderr, "bench policy:", err)
		os.Exit(1)
	}
}

// startProfile starts a CPU profile written to path; stop writes it.
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

func run(requests, pods, rounds int, fixture string) error {
	review, err := os.ReadFile(fixture)
	if err != nil {
		return fmt.Errorf("read review: %w", err)
	}
	engine, err := engineFor(fiveValidations)
	if err != nil {
		return err
	}
	ref, withPolicy := latency(review, engine, requests)
	fmt.Printf("latency, %d reviews each (%s)\n", requests, filepath.Base(fixture))
	fmt.Printf("  reference (allow):            p50 %8s  p90 %8s\n", pct(ref, 50), pct(ref, 90))
	fmt.Printf("  with a 5-validation policy:   p50 %8s  p90 %8s\n", pct(withPolicy, 50), pct(withPolicy, 90))
	fmt.Printf("  added p50: %s (target at most 200µs)\n", pct(withPolicy, 50)-pct(ref, 50))

	three, err := engineFor(threePolicies)
	if err != nil {
		return err
	}
	for r := 1; r <= rounds; r++ {
		refTime, n, err := auditOnce(pods, allowWebhooks(3))
		if err != nil {
			return err
		}
		polTime, m, err := auditOnce(pods, policyWebhooks(three))
		if err != nil {
			return err
		}
		fmt.Printf("audit round %d, %d pods: reference (3 allowing webhooks, %d reviews) %s; 3 policies (%d reviews) %s (target under 10s)\n",
			r, pods, n, refTime.Round(time.Millisecond), m, polTime.Round(time.Millisecond))
	}
	return nil
}

func engineFor(manifest string) (*policy.Engine, error) {
	set, err := policy.Load([]string{"-"}, strings.NewReader(manifest))
	if err != nil {
		return nil, err
	}
	return policy.New(context.Background(), set, policy.Options{})
}

// latency times each review through both handlers, alternating, so that
// both see the same machine load.
func latency(review []byte, engine *policy.Engine, n int) (ref, withPolicy []time.Duration) {
	allow := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })
	evaluate := admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		if _, err := engine.Evaluate(ctx, &req.AdmissionRequest); err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		return admission.Allowed("")
	})
	opts := admissionhttp.Options{Observer: server.NewMetrics()}
	a := admissionhttp.NewHandler(admission.Webhook{Name: "reference", Handler: allow}, opts)
	b := admissionhttp.NewHandler(admission.Webhook{Name: "policy", Handler: evaluate}, opts)
	one := func(h http.Handler) time.Duration {
		req := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(review))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(w, req)
		d := time.Since(start)
		if w.Code != http.StatusOK {
			panic(fmt.Sprintf("handler answered %d: %s", w.Code, w.Body))
		}
		return d
	}
	for range 500 { // warm up both
		one(a)
		one(b)
	}
	for range n {
		ref = append(ref, one(a))
		withPolicy = append(withPolicy, one(b))
	}
	return ref, withPolicy
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100].Round(time.Microsecond / 10)
}
