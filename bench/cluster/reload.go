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
	render := func(timeout int, active bool) (string, error) {
		scope := ns.Name
		if !active {
			scope = ns.Name + "-elsewhere"
		}
		t, err := scopedTemplate(e.tmpl, scope)
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
	path := filepath.Join(e.cfg.workdir, "reload.yaml.tmpl")
	first, err := render(5, true)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(first), 0o644); err != nil {
		return err
	}
	sess := session("reload")
	p, err := e.startHookback(sess, e.stateDir, nil, "--webhooks", "pod-name", "--controllers", "none", "--template", path)
	if err != nil {
		return err
	}
	defer p.stop(30 * time.Second)
	if _, err := p.waitReady(ctx, 60*time.Second); err != nil {
		return err
	}
	name := "hookback-validating-" + sess
	vwc, err := e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if got := podNameTimeout(vwc); got != 5 {
		return fmt.Errorf("%s: pod-name timeoutSeconds = %d, want 5", name, got)
	}
	rv := vwc.ResourceVersion

	probes := 0
	probe := func() (denied bool, err error) {
		probes++
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "offensive-probe-" + strconv.Itoa(probes), Namespace: ns.Name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1"}}},
		}
		_, err = e.client.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return false, nil
		}
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "denied the request") {
			return true, nil
		}
		return false, err
	}
	if denied, err := probe(); err != nil || !denied {
		return fmt.Errorf("before any edit, a banned pod name was not denied in %s (err %v)", ns.Name, err)
	}

	var live, enforced []time.Duration
	for i := 0; i < e.cfg.edits; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		timeout, active := 6+i%20, i%2 == 1
		text, err := render(timeout, active)
		if err != nil {
			return err
		}
		w, err := e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Watch(ctx, metav1.ListOptions{
			FieldSelector: "metadata.name=" + name, ResourceVersion: rv,
		})
		if err != nil {
			return err
		}
		saved := time.Now()
		if err := writeFileAtomic(path, text); err != nil {
			w.Stop()
			return err
		}
		type result struct {
			took time.Duration
			err  error
		}
		probed := make(chan result, 1)
		go func() {
			deadline := time.Now().Add(10 * time.Second)
			for {
				denied, err := probe()
				if err != nil {
					probed <- result{err: err}
					return
				}
				if denied == active {
					probed <- result{took: time.Since(saved)}
					return
				}
				if time.Now().After(deadline) {
					probed <- result{err: fmt.Errorf("edit %d: the apiserver did not enforce it within 10s", i)}
					return
				}
			}
		}()
		var took time.Duration
		timer := time.NewTimer(10 * time.Second)
	events:
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					w.Stop()
					return fmt.Errorf("edit %d: watch closed", i)
				}
				if ev.Type == watch.Error {
					w.Stop()
					return fmt.Errorf("edit %d: watch error: %v", i, apierrors.FromObject(ev.Object))
				}
				c, ok := ev.Object.(*admissionv1.ValidatingWebhookConfiguration)
				if !ok {
					continue
				}
				rv = c.ResourceVersion
				if ev.Type == watch.Modified && podNameTimeout(c) == int32(timeout) {
					took = time.Since(saved)
					break events
				}
			case <-timer.C:
				w.Stop()
				return fmt.Errorf("edit %d: timeoutSeconds %d not seen within 10s", i, timeout)
			}
		}
		timer.Stop()
		w.Stop()
		r := <-probed
		if r.err != nil {
			return r.err
		}
		live = append(live, took)
		enforced = append(enforced, r.took)
		time.Sleep(200 * time.Millisecond)
	}
	applied := reappliedTook(p.logPath)

	fmt.Fprintf(e.out, "### Template edit to live\n\n")
	fmt.Fprintf(e.out, "hookback started with `--webhooks pod-name --template <copy of webhook-url.yaml.tmpl>`; %d edits, each renamed into place like an editor saves, changing the pod-name webhook's `timeoutSeconds` and flipping its namespaceSelector between the probe namespace and one that does not exist. Clocks start just before the rename. hookback waits %s after the last file event before it re-renders (its debounce), which is included.\n\n", e.cfg.edits, "20 ms")
	fmt.Fprintf(e.out, "| edit saved → | p50 | max | min |\n|---|---|---|---|\n")
	fmt.Fprintf(e.out, "| new configuration in a watch event on the ValidatingWebhookConfiguration | %s | %s | %s |\n", ms(quantile(live, .5)), ms(maxOf(live)), ms(quantileMin(live)))
	fmt.Fprintf(e.out, "| the apiserver enforcing it (first dry-run create of a banned pod name with the new answer) | %s | %s | %s |\n", ms(quantile(enforced, .5)), ms(maxOf(enforced)), ms(quantileMin(enforced)))
	if len(applied) > 0 {
		fmt.Fprintf(e.out, "| (hookback's log: server-side apply of the re-rendered configuration, `took`) | %s | %s | %s |\n", ms(quantile(applied, .5)), ms(maxOf(applied)), ms(quantileMin(applied)))
	}
	fmt.Fprintf(e.out, "\n%d dry-run probes were sent in all, back to back, only while an edit was pending.\n\n", probes)
	return nil
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
