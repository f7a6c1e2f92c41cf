package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// reload edits the template of a running hookback -edits times. Each edit
// changes the pod-name webhook's timeoutSeconds and flips its
// namespaceSelector between the probe namespace and a namespace that does
// not exist. Two clocks start just before the edited file is renamed into
// place: one stops when a watch on the ValidatingWebhookConfiguration
// delivers the new timeoutSeconds (the configuration is live in the API),
// the other when a dry-run create of a pod with a banned name in the probe
// namespace first gets the new answer (the apiserver enforces the edit: its
// own webhook informer has seen it).
func (e *env) reload(ctx context.Context) error {
	log.Printf("reload: %d template edits", e.cfg.edits)
	ns, err := e.nss.create(ctx, "reload")
	if err != nil {
		return err
	}
	r := &reloadRig{e: e, ns: ns.Name, path: filepath.Join(e.cfg.workdir, "reload.yaml.tmpl")}
	first, err := r.render(5, true)
	if err != nil {
		return err
	}
	if err := os.WriteFile(r.path, []byte(first), 0o644); err != nil {
		return err
	}
	sess := session("reload")
	p, err := e.startHookback(sess, e.stateDir, nil, "--webhooks", "pod-name", "--controllers", "none", "--template", r.path)
	if err != nil {
		return err
	}
	defer p.stop(30 * time.Second)
	if _, err := p.waitReady(ctx, 60*time.Second); err != nil {
		return err
	}
	r.name = "hookback-validating-" + sess
	if err := r.check(ctx); err != nil {
		return err
	}
	var live, enforced []time.Duration
	for i := 0; i < e.cfg.edits; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		l, en, err := r.edit(ctx, i)
		if err != nil {
			return err
		}
		live, enforced = append(live, l), append(enforced, en)
		time.Sleep(200 * time.Millisecond)
	}
	e.reportReload(live, enforced, reappliedTook(p.logPath), r.probes)
	return nil
}

// reloadRig is one hookback's template, the configuration it renders to,
// and the probes that tell whether the apiserver enforces it.
type reloadRig struct {
	e    *env
	ns   string
	path string // the template hookback watches
	name string // its ValidatingWebhookConfiguration
	rv   string // the configuration's last resourceVersion seen
	// probes counts the dry-run creates sent.
	probes int
}

// render is the shipped template scoped to the probe namespace (active) or
// to one that does not exist, with pod-name's timeoutSeconds set.
func (r *reloadRig) render(timeout int, active bool) (string, error) {
	scope := r.ns
	if !active {
		scope = r.ns + "-elsewhere"
	}
	t, err := scopedTemplate(r.e.tmpl, scope)
	if err != nil {
		return "", err
	}
	i := strings.Index(t, "- name: pod-name.hookback.dev")
	j := strings.Index(t[max(i, 0):], "timeoutSeconds: 5")
	if i < 0 || j < 0 {
		return "", errors.New("the template has no pod-name webhook with timeoutSeconds: 5; update bench/cluster")
	}
	j += i
	return t[:j] + "timeoutSeconds: " + strconv.Itoa(timeout) + t[j+len("timeoutSeconds: 5"):], nil
}

// check makes sure the first rendering is registered and enforced.
func (r *reloadRig) check(ctx context.Context) error {
	vwc, err := r.e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, r.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if got := podNameTimeout(vwc); got != 5 {
		return fmt.Errorf("%s: pod-name timeoutSeconds = %d, want 5", r.name, got)
	}
	r.rv = vwc.ResourceVersion
	if denied, err := r.probe(ctx); err != nil || !denied {
		return fmt.Errorf("before any edit, a banned pod name was not denied in %s (err %v)", r.ns, err)
	}
	return nil
}

// probe dry-run creates a pod with a banned name: denied says whether
// pod-name judged it.
func (r *reloadRig) probe(ctx context.Context) (denied bool, err error) {
	r.probes++
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "offensive-probe-" + strconv.Itoa(r.probes), Namespace: r.ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1"}}},
	}
	_, err = r.e.client.CoreV1().Pods(r.ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil {
		return false, nil
	}
	if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "denied the request") {
		return true, nil
	}
	return false, err
}

// edit saves edit i and times it until the configuration is live (live)
// and until the apiserver enforces it (enforced).
func (r *reloadRig) edit(ctx context.Context, i int) (live, enforced time.Duration, err error) {
	timeout, active := 6+i%20, i%2 == 1
	text, err := r.render(timeout, active)
	if err != nil {
		return 0, 0, err
	}
	w, err := r.e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + r.name, ResourceVersion: r.rv,
	})
	if err != nil {
		return 0, 0, err
	}
	defer w.Stop()
	saved := time.Now()
	if err := writeFileAtomic(r.path, text); err != nil {
		return 0, 0, err
	}
	type result struct {
		took time.Duration
		err  error
	}
	// Probe while the watch is read; only that goroutine counts probes
	// until it reports.
	probed := make(chan result, 1)
	go func() {
		took, err := r.awaitEnforced(ctx, active, saved)
		probed <- result{took, err}
	}()
	live, err = r.awaitLive(w, int32(timeout), saved)
	res := <-probed
	if err != nil {
		return 0, 0, fmt.Errorf("edit %d: %w", i, err)
	}
	if res.err != nil {
		return 0, 0, fmt.Errorf("edit %d: %w", i, res.err)
	}
	return live, res.took, nil
}

// awaitLive reads the watch until the configuration carries timeout.
func (r *reloadRig) awaitLive(w watch.Interface, timeout int32, saved time.Time) (time.Duration, error) {
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, errors.New("watch closed")
			}
			if ev.Type == watch.Error {
				return 0, fmt.Errorf("watch error: %v", apierrors.FromObject(ev.Object))
			}
			c, ok := ev.Object.(*admissionv1.ValidatingWebhookConfiguration)
			if !ok {
				continue
			}
			r.rv = c.ResourceVersion
			if ev.Type == watch.Modified && podNameTimeout(c) == timeout {
				return time.Since(saved), nil
			}
		case <-timer.C:
			return 0, fmt.Errorf("timeoutSeconds %d not seen within 10s", timeout)
		}
	}
}

// awaitEnforced probes back to back until the answer is the edit's.
func (r *reloadRig) awaitEnforced(ctx context.Context, active bool, saved time.Time) (time.Duration, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		denied, err := r.probe(ctx)
		if err != nil {
			return 0, err
		}
		if denied == active {
			return time.Since(saved), nil
		}
		if time.Now().After(deadline) {
			return 0, errors.New("the apiserver did not enforce it within 10s")
		}
	}
}

func (e *env) reportReload(live, enforced, applied []time.Duration, probes int) {
	fmt.Fprintf(e.out, "### Template edit to live\n\n")
	fmt.Fprintf(e.out, "hookback started with `--webhooks pod-name --template <copy of webhook-url.yaml.tmpl>`; %d edits, each renamed into place like an editor saves, changing the pod-name webhook's `timeoutSeconds` and flipping its namespaceSelector between the probe namespace and one that does not exist. Clocks start just before the rename. hookback waits %s after the last file event before it re-renders (its debounce), which is included.\n\n", e.cfg.edits, "20 ms")
	fmt.Fprintf(e.out, "| edit saved → | p50 | max | min |\n|---|---|---|---|\n")
	fmt.Fprintf(e.out, "| new configuration in a watch event on the ValidatingWebhookConfiguration | %s | %s | %s |\n", ms(quantile(live, .5)), ms(maxOf(live)), ms(quantileMin(live)))
	fmt.Fprintf(e.out, "| the apiserver enforcing it (first dry-run create of a banned pod name with the new answer) | %s | %s | %s |\n", ms(quantile(enforced, .5)), ms(maxOf(enforced)), ms(quantileMin(enforced)))
	if len(applied) > 0 {
		fmt.Fprintf(e.out, "| (hookback's log: server-side apply of the re-rendered configuration, `took`) | %s | %s | %s |\n", ms(quantile(applied, .5)), ms(maxOf(applied)), ms(quantileMin(applied)))
	}
	fmt.Fprintf(e.out, "\n%d dry-run probes were sent in all, back to back, only while an edit was pending.\n\n", probes)
}

func quantileMin(ds []time.Duration) time.Duration { return quantile(ds, 1e-9) }

func podNameTimeout(c *admissionv1.ValidatingWebhookConfiguration) int32 {
	for _, w := range c.Webhooks {
		if w.Name == "pod-name.hookback.dev" && w.TimeoutSeconds != nil {
			return *w.TimeoutSeconds
		}
	}
	return -1
}

var reappliedRE = regexp.MustCompile(`msg="webhook configuration re-applied".* took=(\S+)`)

// reappliedTook reads hookback's own timing of each re-apply from its log.
func reappliedTook(path string) []time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var ds []time.Duration
	for _, m := range reappliedRE.FindAllStringSubmatch(string(b), -1) {
		if d, err := time.ParseDuration(m[1]); err == nil {
			ds = append(ds, d)
		}
	}
	return ds
}
