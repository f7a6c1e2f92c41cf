package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type variant struct {
	name  string
	flags string // --webhooks of its hookback; "" for none
	ns    *corev1.Namespace
	proc  *proc
	floor *floorWebhook
	// ownProcess runs the floor as a process of its own, as hookback is.
	ownProcess bool
	hooks      []string
	// tag is in its webhooks' names (pod-name.TAG.hookback.dev,
	// floor.TAG.bench.hookback.dev).
	tag string
	// edit changes the scoped template, for a variant of it.
	edit    func(string) (string, error)
	samples []time.Duration
	// creates counts every create sent to its namespace, warm-up included.
	creates   int
	discarded int
	unpatched int
	before    map[string]float64
}

// latency measures the time of a server-side dry-run pod create in one
// namespace per variant, sent in a random order on every round so that
// drift hits all alike: one no webhook selects; the floors, a constant
// allow-all webhook (and the mutating floor's precomputed patches), each
// as a process of its own and inside this one (what any webhook costs the
// apiserver); one only pod-name (validating) selects; one pod-name,
// pod-lifespan and pod-sidecar select (the mutating two really patch: the
// pods carry the lifespan label and the sidecar annotations). The
// hookbacks run side by side, each with the shipped template scoped to its
// namespace, and each is compared with the own-process floor that makes
// the same calls: both are then servers the kernel wakes for every call.
func (e *env) latency(ctx context.Context) error {
	log.Printf("latency: %d warm-up + %d measured dry-run creates per variant", e.cfg.warmup, e.cfg.creates)
	vs := latencyVariants()
	defer e.stopFloors(vs)
	ours, err := e.startVariants(ctx, vs)
	if err != nil {
		return err
	}
	if err := e.awaitVariants(ctx, vs); err != nil {
		return err
	}
	fh, stop := e.watchForeignHooks(ctx, ours)
	defer stop()
	apiBefore, apiErr := e.apiserverMetrics(ctx)
	if err := e.sampleLatency(ctx, vs, fh); err != nil {
		return err
	}
	var apiAfter map[string]float64
	if apiErr == nil {
		apiAfter, apiErr = e.apiserverMetrics(ctx)
	}
	srv, err := serverTimes(vs)
	if err != nil {
		return err
	}
	e.reportLatency(vs, srv)
	if apiErr != nil {
		fmt.Fprintf(e.out, "The apiserver's own time per webhook call: not measured (%v).\n\n", apiErr)
	} else {
		callTimes(e.out, vs, floorOf(vs), apiBefore, apiAfter)
	}
	latencyNotes(e.out, vs, fh.seen)
	return nil
}

// latencyVariants are the namespaces the creates go to, in report order;
// the first, no webhook, is the base every added figure is taken from.
func latencyVariants() []*variant {
	both := []string{"pod-name", "pod-lifespan", "pod-sidecar"}
	return []*variant{
		{name: "no webhook"},
		{name: "floor: a constant allow-all validating webhook (net/http + TLS), its own process", flags: "floor", ownProcess: true, hooks: []string{"pod-name"}},
		{name: "mutating floor: the same allow-all plus two mutating webhooks answering pod-lifespan's and pod-sidecar's precomputed patches, its own process", flags: "floor-mutating", ownProcess: true,
			hooks: both},
		{name: "floor, in the bench's process", flags: "floor", hooks: []string{"pod-name"}},
		{name: "mutating floor, in the bench's process", flags: "floor-mutating", hooks: both},
		{name: "`pod-name` (1 validating)", flags: "pod-name", hooks: []string{"pod-name"}},
		{name: "`pod-name,pod-lifespan,pod-sidecar` (1 validating + 2 mutating, patching)", flags: "pod-name,pod-lifespan,pod-sidecar", hooks: both},
		{name: "the same three, template edited to `reinvocationPolicy: IfNeeded`", flags: "pod-name,pod-lifespan,pod-sidecar", hooks: both,
			edit: func(t string) (string, error) {
				if !strings.Contains(t, "reinvocationPolicy: Never") {
					return "", errors.New("the template has no reinvocationPolicy: Never to edit; update bench/cluster")
				}
				return strings.ReplaceAll(t, "reinvocationPolicy: Never", "reinvocationPolicy: IfNeeded"), nil
			}},
	}
}

// startVariants makes each variant's namespace and starts its floor or
// hookback. It returns the names of the webhook configurations they
// register (a hookback's is its session's), so that they are not taken for
// another session's.
func (e *env) startVariants(ctx context.Context, vs []*variant) ([]string, error) {
	var ours []string
	for i, v := range vs {
		ns, err := e.nss.create(ctx, "latency")
		if err != nil {
			return nil, err
		}
		v.ns = ns
		if v.flags == "" {
			continue
		}
		// Names of its own, so the apiserver's metrics tell the variants apart.
		v.tag = fmt.Sprintf("v%d", i)
		if strings.HasPrefix(v.flags, "floor") {
			if v.floor, err = e.startFloor(ctx, ns.Name, v.tag+".bench.hookback.dev", v.flags == "floor-mutating", v.ownProcess); err != nil {
				return nil, err
			}
			ours = append(ours, v.floor.name)
			continue
		}
		sess := session("lat")
		ours = append(ours, sess)
		if err := e.startLatencyHookback(v, i, sess); err != nil {
			return nil, err
		}
	}
	return ours, nil
}

// startLatencyHookback runs a hookback with the shipped template scoped to
// v's namespace, its webhooks renamed with v's tag.
func (e *env) startLatencyHookback(v *variant, i int, sess string) error {
	tmpl, err := scopedTemplate(e.tmpl, v.ns.Name)
	if err != nil {
		return err
	}
	if v.edit != nil {
		if tmpl, err = v.edit(tmpl); err != nil {
			return err
		}
	}
	if tmpl, err = renameWebhooks(tmpl, v.tag); err != nil {
		return err
	}
	path := filepath.Join(e.cfg.workdir, fmt.Sprintf("latency-%d.yaml.tmpl", i))
	if err := os.WriteFile(path, []byte(tmpl), 0o644); err != nil {
		return err
	}
	v.proc, err = e.startHookback(sess, e.stateDir, e.extraEnv(), "--webhooks", v.flags, "--controllers", "none", "--template", path)
	return err
}

// stopFloors deletes the floors' webhook configurations, last started first.
func (e *env) stopFloors(vs []*variant) {
	for _, v := range slices.Backward(vs) {
		if v.floor == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := v.floor.stop(ctx, e); err != nil {
			log.Printf("latency: delete %s: %v", v.floor.name, err)
		}
		cancel()
	}
}

// awaitVariants waits until the apiserver calls every floor and every
// hookback is ready, and takes their counters before the creates.
func (e *env) awaitVariants(ctx context.Context, vs []*variant) error {
	for _, v := range vs {
		if v.floor != nil {
			if err := e.awaitFloor(ctx, v); err != nil {
				return err
			}
		}
		if v.proc == nil {
			continue
		}
		if _, err := v.proc.waitReady(ctx, 60*time.Second); err != nil {
			return err
		}
		m, err := v.proc.metrics()
		if err != nil {
			return err
		}
		v.before = m
	}
	return nil
}

// awaitFloor sends probe creates until the apiserver's webhook informer has
// v's floor and calls it.
func (e *env) awaitFloor(ctx context.Context, v *variant) error {
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for deadline := time.Now().Add(30 * time.Second); ; {
		n, took, err := v.floor.calls()
		if err != nil {
			return err
		}
		if n > 0 {
			v.before = map[string]float64{"calls": float64(n), "seconds": took.Seconds()}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the apiserver never called %s", v.floor.name)
		}
		if _, err := e.client.CoreV1().Pods(v.ns.Name).Create(ctx, benchPod(v.ns.Name, "floor-probe", 0, podOptions{}), dry); err != nil {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// served is a server's own count of the admission requests it answered
// during the creates, and its mean time per request.
type served struct {
	calls   float64
	handler time.Duration
}

// serverTimes reads each server's counters after the creates, and stops
// the hookbacks.
func serverTimes(vs []*variant) (map[*variant]served, error) {
	srv := map[*variant]served{}
	for _, v := range vs {
		if v.floor != nil {
			n, took, err := v.floor.calls()
			if err != nil {
				return nil, err
			}
			calls := float64(n) - v.before["calls"]
			srv[v] = served{calls: calls, handler: time.Duration((took.Seconds() - v.before["seconds"]) / calls * float64(time.Second))}
		}
		if v.proc == nil {
			continue
		}
		m, err := v.proc.metrics()
		if err != nil {
			return nil, err
		}
		var calls, secs float64
		for _, h := range v.hooks {
			l := `webhook="` + h + `"`
			calls += sumMetric(m, "hookback_admission_requests_total", l) - sumMetric(v.before, "hookback_admission_requests_total", l)
			secs += sumMetric(m, "hookback_admission_duration_seconds_sum", l) - sumMetric(v.before, "hookback_admission_duration_seconds_sum", l)
		}
		srv[v] = served{calls: calls, handler: time.Duration(secs / calls * float64(time.Second))}
		if _, err := v.proc.stop(30 * time.Second); err != nil {
			return nil, err
		}
	}
	return srv, nil
}

// floorOf finds, for a hookback variant, the own-process floor that makes
// the same calls: one validating, or one validating and two patching.
func floorOf(vs []*variant) func(*variant) *variant {
	return func(v *variant) *variant {
		want := "floor"
		if slices.Contains(v.hooks, "pod-sidecar") {
			want = "floor-mutating"
		}
		for _, f := range vs {
			if f.flags == want && f.ownProcess {
				return f
			}
		}
		return nil
	}
}

// reportLatency writes the table of added latency, vs[0] being the base.
func (e *env) reportLatency(vs []*variant, srv map[*variant]served) {
	base, floor := vs[0], floorOf(vs)
	fmt.Fprintf(e.out, "### Added latency to a pod create\n\n")
	fmt.Fprintf(e.out, "%d server-side dry-run pod creates per variant (`dryRun: All`, sequential, after %d warm-up creates), the variants in a random order on every round, each in its own namespace; client-side round trip through client-go. The pod has 2 containers and a 1.5 KB last-applied annotation; with the mutating webhooks it comes back with 12 tolerations and a third container. *calls/create* counts the calls the webhook servers saw (the apiserver reinvokes `reinvocationPolicy: IfNeeded` webhooks once the other mutating webhook has changed the pod). *time per call in the server* is hookback's `hookback_admission_duration_seconds` histogram: from the request's headers to the decision, reading the body included; the floors time the same span.\n\n", e.cfg.creates, e.cfg.warmup)
	fmt.Fprintf(e.out, "| webhooks selecting the pod | calls/create | p50 | p90 | p99 | added p50 | added p99 | added p50 / floor's | added p99 / floor's | time per call in the server, mean |\n|---|---|---|---|---|---|---|---|---|---|\n")
	added := func(v *variant, q float64) time.Duration { return quantile(v.samples, q) - quantile(base.samples, q) }
	for _, v := range vs {
		calls, added50, added99, handler, r50, r99 := "0", "—", "—", "—", "—", "—"
		// The reinvoking variant makes more calls than any floor: no ratio.
		if f := floor(v); v.proc != nil && f != nil && v.edit == nil {
			ratio := func(q float64) string {
				if added(f, q) <= 0 {
					return "n/a (floor within noise)"
				}
				return fmt.Sprintf("%.2f×", float64(added(v, q))/float64(added(f, q)))
			}
			r50, r99 = ratio(.5), ratio(.99)
		}
		if v != base {
			s := srv[v]
			calls = fmt.Sprintf("%.2f", s.calls/float64(v.creates))
			added50, added99 = signedMS(added(v, .5)), signedMS(added(v, .99))
			if v.proc != nil || v.floor != nil {
				handler = fmt.Sprintf("%.0f µs", float64(s.handler)/float64(time.Microsecond))
			}
		}
		fmt.Fprintf(e.out, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v.name, calls,
			ms(quantile(v.samples, .5)), ms(quantile(v.samples, .9)), ms(quantile(v.samples, .99)), added50, added99, r50, r99, handler)
	}
	fmt.Fprintln(e.out)
}

// latencyNotes says which samples were left out, and why.
func latencyNotes(out io.Writer, vs []*variant, foreign map[string]bool) {
	var notes []string
	for _, v := range vs {
		if v.discarded > 0 {
			notes = append(notes, fmt.Sprintf("%d samples of %q discarded while another session's webhook selected the pods (%v)", v.discarded, v.name, keys(foreign)))
		}
		if v.unpatched > 0 {
			notes = append(notes, fmt.Sprintf("%d creates of %q came back not patched as expected (failed open?) and were not counted", v.unpatched, v.name))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(out, "Notes: %s.\n\n", strings.Join(notes, "; "))
	}
}

func lifespanTolerations(p *corev1.Pod) int {
	n := 0
	for _, t := range p.Spec.Tolerations {
		if t.Key == "acme.com/lifespan-remaining" {
			n++
		}
	}
	return n
}

// sumMetric adds up every series of name whose labels carry label
// (`webhook="pod-name"`).
func sumMetric(m map[string]float64, name, label string) float64 {
	var sum float64
	for k, v := range m {
		if strings.HasPrefix(k, name+"{") && strings.Contains(k, label) {
			sum += v
		}
	}
	return sum
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
