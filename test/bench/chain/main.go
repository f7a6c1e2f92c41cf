// Command chain measures what start --chain's observers cost a request
// through a real kube-apiserver: the same dry-run pod creates with hookback
// serving one mutating webhook of yours, without --chain (the reference)
// and with it, and the floor: hookback without --chain plus three bare
// webhooks (bare.go, no hookback) registered where the observers sit, what
// any three webhooks cost the apiserver; in rounds that alternate; and
// creates outside the session's scope, which must call no observer
// (hookback's per-webhook counters say so). It prints a Markdown report
// (docs/performance.md, "The admission chain").
//
//	hack/bench-chain [-n 300] [-rounds 3]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "the cluster's kubeconfig")
	binary := flag.String("hookback", "hookback", "the hookback binary")
	before := flag.String("before", "", "another hookback binary (an earlier commit's), measured with --chain in the same rounds")
	n := flag.Int("n", 300, "timed creates per variant and round")
	rounds := flag.Int("rounds", 3, "rounds, each running both variants")
	flag.Parse()
	if err := run(*kubeconfig, *binary, *before, *n, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "bench chain:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, binary, before string, n, rounds int) error {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %q: %w", kubeconfig, err)
	}
	rc.QPS, rc.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	in, err := benchNamespace(ctx, cs)
	if err != nil {
		return err
	}
	defer cs.CoreV1().Namespaces().Delete(context.Background(), in, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	out, err := benchNamespace(ctx, cs)
	if err != nil {
		return err
	}
	defer cs.CoreV1().Namespaces().Delete(context.Background(), out, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	up, calls, err := upstream()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bench-chain-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	manifest := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(manifest, []byte(yourWebhook), 0o600); err != nil {
		return err
	}
	floor, err := startBare(false)
	if err != nil {
		return err
	}
	defer floor.close()
	floorH2, err := startBare(true)
	if err != nil {
		return err
	}
	defer floorH2.close()
	b := &bench{cs: cs, binary: binary, before: before, kubeconfig: kubeconfig, dir: dir, manifest: manifest, up: up, in: in, out: out,
		n: n, calls: calls, floors: map[string]*bare{floorName: floor, floorH2Name: floorH2}, times: map[string][]time.Duration{}, cpu: map[string]time.Duration{}}
	variants := []string{without, with, floorName, floorH2Name}
	if before != "" {
		variants = append(variants, withBefore)
	}
	for r := range rounds {
		for _, v := range variants {
			if err := b.variant(ctx, v, r); err != nil {
				return err
			}
		}
	}
	fmt.Printf("| dry-run pod create, %d per variant (%d rounds) | p50 | p99 | hookback's CPU per create |\n|---|---|---|---|\n", n*rounds, rounds)
	for _, v := range variants {
		fmt.Printf("| %s | %.2f ms | %.2f ms | %d µs |\n", v, msf(quantile(b.times[v], 0.5)), msf(quantile(b.times[v], 0.99)), b.cpu[v].Microseconds()/int64(n*rounds))
	}
	ref := quantile(b.times[without], 0.5)
	added, floor1, floor2 := quantile(b.times[with], 0.5)-ref, quantile(b.times[floorName], 0.5)-ref, quantile(b.times[floorH2Name], 0.5)-ref
	fmt.Printf("\nAdded at p50 by the observers: %.2f ms; by three bare webhooks in their places: %.2f ms over HTTP/1.1, %.2f ms over HTTP/2.\n",
		msf(added), msf(floor1), msf(floor2))
	if floor1 > 0 && floor2 > 0 {
		fmt.Printf("The observers are %.2fx the HTTP/2 floor (hookback serves HTTP/2) and %.2fx the HTTP/1.1 one (target: at most 1.2x).\n",
			float64(added)/float64(floor2), float64(added)/float64(floor1))
	}
	if before != "" {
		fmt.Printf("Added at p50 by the observers of %s: %.2f ms.\n", before, msf(quantile(b.times[withBefore], 0.5)-ref))
	}
	fmt.Printf("Outside the scope, with --chain: %d creates; your webhook's configuration was called for none of them (%d calls), and no observer was (%d calls beyond the in-scope ones; the first observer saw %d in-scope creates).\n",
		50*rounds, b.yoursOutside, b.outside, b.observed)
	return nil
}

// The variants, measured in this order in every round (withBefore only
// with -before).
const (
	without     = "without --chain"
	with        = "with --chain"
	floorName   = "without --chain, three bare webhooks where the observers sit"
	floorH2Name = "without --chain, three bare webhooks over HTTP/2 where the observers sit"
	withBefore  = "with --chain, the -before binary"
)

type bench struct {
	cs                                            kubernetes.Interface
	binary, before, kubeconfig, dir, manifest, up string
	in, out                                       string
	n                                             int
	calls                                         *atomicCounter
	floors                                        map[string]*bare
	times                                         map[string][]time.Duration
	cpu                                           map[string]time.Duration
	observed, outside, yoursOutside               int64
}

// variant runs one variant of one round: hookback started (with --chain
// or not), the bare webhooks registered for the floor, a warm-up, n timed
// creates in the scope, 50 outside it.
func (b *bench) variant(ctx context.Context, v string, r int) error {
	chain, binary := v == with || v == withBefore, b.binary
	if v == withBefore {
		binary = b.before
	}
	h, err := startHookback(binary, b.kubeconfig, b.dir, b.manifest, b.up, b.in, chain, v, r)
	if err != nil {
		return err
	}
	defer h.stop()
	floor := b.floors[v]
	if floor != nil {
		if err := floor.register(ctx, b.cs, b.in, r); err != nil {
			return err
		}
		defer func() {
			if err := floor.unregister(ctx, b.cs, b.in, r); err != nil {
				fmt.Fprintln(os.Stderr, "bench chain:", err)
			}
		}()
	}
	if _, err := creates(ctx, b.cs, b.in, 20); err != nil { // warm-up
		return err
	}
	var floorBefore int64
	if floor != nil {
		floorBefore = floor.total()
	}
	cpuBefore, err := h.cpu()
	if err != nil {
		return err
	}
	ds, err := creates(ctx, b.cs, b.in, b.n)
	if err != nil {
		return err
	}
	b.times[v] = append(b.times[v], ds...)
	cpuAfter, err := h.cpu()
	if err != nil {
		return err
	}
	b.cpu[v] += cpuAfter - cpuBefore
	if floor != nil {
		// Each timed create called the three (the last one once per round
		// it was called in): the floor is three webhooks, not fewer.
		if got := floor.total() - floorBefore; got < int64(3*b.n) {
			return fmt.Errorf("round %d: the bare webhooks answered %d calls for %d creates, want at least %d", r, got, b.n, 3*b.n)
		}
		if floor.h2 && floor.http2.Load() < int64(3*b.n) {
			return fmt.Errorf("round %d: the HTTP/2 bare webhooks answered %d calls over HTTP/2 for %d creates, want at least %d", r, floor.http2.Load(), b.n, 3*b.n)
		}
	}
	before := b.calls.Load()
	if _, err := creates(ctx, b.cs, b.out, 50); err != nil {
		return err
	}
	if !chain {
		return nil
	}
	m, err := h.metrics()
	if err != nil {
		return err
	}
	for _, w := range []string{"chain-first", "chain-last", "chain-validating", "mine.bench.hookback.dev"} {
		if m[w] > 0 {
			fmt.Fprintf(os.Stderr, "round %d, %s: hookback's own time in %s: %d µs mean over %d calls\n", r, v, w, m["µs:"+w]/m[w], m[w])
		}
	}
	if v != with {
		return nil
	}
	b.observed += m["chain-first"]
	b.outside += m["chain-first"] + m["chain-validating"] - 2*int64(b.n+20)
	b.yoursOutside += b.calls.Load() - before
	return nil
}

// yourWebhook is a mutating webhook of yours as a developer would write
// it; hookback forwards to the bench's upstream. It selects every pod: the
// scope (--namespace) alone keeps the other namespace out.
const yourWebhook = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: bench-chain
webhooks:
  - name: mine.bench.hookback.dev
    clientConfig:
      service: {namespace: system, name: webhook-service, path: /mutate}
    rules:
      - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
    sideEffects: None
    admissionReviewVersions: ["v1"]
`

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func benchNamespace(ctx context.Context, cs kubernetes.Interface) (string, error) {
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "hookback-bench-chain-"}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create namespace: %w", err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return ns.Name, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", fmt.Errorf("namespace %s: no default ServiceAccount after a minute", ns.Name)
}

// creates times n dry-run pod creates, one after the other.
func creates(ctx context.Context, cs kubernetes.Interface, ns string, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := range n {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p" + strconv.Itoa(i), Labels: map[string]string{"app": "bench"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
		start := time.Now()
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			return nil, fmt.Errorf("create pod in %s: %w", ns, err)
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// upstream is your webhook's server: it labels each pod (a one-operation
// patch) and counts its calls.
func upstream() (string, *atomicCounter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	c := &atomicCounter{}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second,
		Handler: answers(c, []byte(`[{"op":"add","path":"/metadata/labels/seen","value":"yes"}]`))}
	go srv.Serve(ln) //nolint:errcheck // lives as long as the program
	return "http://" + ln.Addr().String(), c, nil
}

type hookbackProc struct {
	cmd    *exec.Cmd
	health string
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func startHookback(binary, kubeconfig, dir, manifest, up, ns string, chain bool, variant string, round int) (*hookbackProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	hp, err := freePort()
	if err != nil {
		return nil, err
	}
	h := &hookbackProc{health: "127.0.0.1:" + strconv.Itoa(hp)}
	args := []string{"start", "--session", fmt.Sprintf("bench-chain-%d-%d", round, slices.Index(allVariants, variant)), "--port", strconv.Itoa(port), "--health-address", h.health,
		"--state-dir", filepath.Join(dir, "state"), "--inspector-address", "", "--webhooks", "none", "--controllers", "none",
		"--webhook-config", manifest, "--upstream", up, "--namespace", ns, "--log-level", "warn"}
	if chain {
		args = append(args, "--chain")
	}
	h.cmd = exec.Command(binary, args...)
	h.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	h.cmd.Stdout, h.cmd.Stderr = io.Discard, os.Stderr
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + h.health + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return h, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.stop()
	return nil, fmt.Errorf("hookback (chain %t) not ready within a minute", chain)
}

var allVariants = []string{without, with, floorName, floorH2Name, withBefore}

var (
	requestsLine = regexp.MustCompile(`^hookback_admission_requests_total\{decision="[a-z]+",webhook="([^"]+)"\} (\d+)`)
	durationLine = regexp.MustCompile(`^hookback_admission_duration_seconds_sum\{webhook="([^"]+)"\} ([0-9.e+-]+)`)
)

// metrics are hookback's admission counts by webhook.
func (h *hookbackProc) metrics() (map[string]int64, error) {
	resp, err := http.Get("http://" + h.health + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if m := requestsLine.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseInt(m[2], 10, 64)
			out[m[1]] += v
		}
		if m := durationLine.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			out["µs:"+m[1]] += int64(v * 1e6)
		}
	}
	return out, nil
}

// cpu is the CPU time hookback's process has used (its
// process_cpu_seconds_total, from /proc: 10 ms resolution, so compare
// totals over many creates).
func (h *hookbackProc) cpu() (time.Duration, error) {
	resp, err := http.Get("http://" + h.health + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "process_cpu_seconds_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("process_cpu_seconds_total %q: %w", v, err)
			}
			return time.Duration(f * float64(time.Second)), nil
		}
	}
	return 0, errors.New("hookback's /metrics has no process_cpu_seconds_total")
}

func (h *hookbackProc) stop() {
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	_ = h.cmd.Wait()
}
