package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
)

// foreignHooks tells which webhooks of another session select the bench's
// pods (someone running hookback with the shipped template on the same
// cluster): they would slow the creates down, so samples taken while one
// is registered are discarded.
type foreignHooks struct {
	mutating   admissionlisters.MutatingWebhookConfigurationLister
	validating admissionlisters.ValidatingWebhookConfigurationLister
	ours       []string
	pod        *corev1.Pod
	// seen is every foreign configuration found during the creates.
	seen map[string]bool
}

// watchForeignHooks starts the informers foreignHooks reads; stop ends
// them.
func (e *env) watchForeignHooks(ctx context.Context, ours []string) (fh *foreignHooks, stop func()) {
	inf := informers.NewSharedInformerFactory(e.client, 0)
	fh = &foreignHooks{
		mutating:   inf.Admissionregistration().V1().MutatingWebhookConfigurations().Lister(),
		validating: inf.Admissionregistration().V1().ValidatingWebhookConfigurations().Lister(),
		ours:       ours,
		pod:        benchPod("x", "x", 0, podOptions{hookbackMarkers: true}),
		seen:       map[string]bool{},
	}
	ictx, cancel := context.WithCancel(ctx)
	inf.Start(ictx.Done())
	inf.WaitForCacheSync(ictx.Done())
	return fh, func() { cancel(); inf.Shutdown() }
}

func (f *foreignHooks) isOurs(name string) bool {
	return slices.ContainsFunc(f.ours, func(s string) bool { return name == s || strings.HasSuffix(name, "-"+s) })
}

// selecting lists the foreign configurations with a webhook that a pod
// create in ns would call, and remembers them in seen.
func (f *foreignHooks) selecting(ns *corev1.Namespace) []string {
	type hook struct {
		config      string
		rules       []admissionv1.RuleWithOperations
		nsSel, oSel *metav1.LabelSelector
	}
	var hooks []hook
	ms, _ := f.mutating.List(labels.Everything())
	for _, c := range ms {
		for _, w := range c.Webhooks {
			hooks = append(hooks, hook{c.Name, w.Rules, w.NamespaceSelector, w.ObjectSelector})
		}
	}
	vs, _ := f.validating.List(labels.Everything())
	for _, c := range vs {
		for _, w := range c.Webhooks {
			hooks = append(hooks, hook{c.Name, w.Rules, w.NamespaceSelector, w.ObjectSelector})
		}
	}
	var hits []string
	for _, h := range hooks {
		if !f.isOurs(h.config) && selectsPod(h.rules, h.nsSel, h.oSel, ns, f.pod) {
			hits = append(hits, h.config)
			f.seen[h.config] = true
		}
	}
	return hits
}

// sampleLatency sends rounds of dry-run creates, one per variant in a
// random order, until every variant has cfg.creates clean samples past the
// warm-up.
func (e *env) sampleLatency(ctx context.Context, vs []*variant, fh *foreignHooks) error {
	enough := func() bool {
		return !slices.ContainsFunc(vs, func(v *variant) bool { return len(v.samples) < e.cfg.creates })
	}
	limit := e.cfg.warmup + 3*e.cfg.creates
	for i := 0; !enough(); i++ {
		if i >= limit {
			var got []int
			for _, v := range vs {
				got = append(got, len(v.samples))
			}
			return fmt.Errorf("only %v clean samples after %d rounds: other webhooks selecting pods kept being registered (%v)", got, i, keys(fh.seen))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, j := range rand.Perm(len(vs)) {
			if err := e.sampleOne(ctx, vs[j], i, fh); err != nil {
				return err
			}
		}
	}
	return nil
}

// sampleOne times round i's create in v's namespace and keeps the sample
// if the pod came back as v's webhooks make it and no foreign webhook
// could have been called.
func (e *env) sampleOne(ctx context.Context, v *variant, i int, fh *foreignHooks) error {
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	pod := benchPod(v.ns.Name, fmt.Sprintf("latency-%d", i), i, podOptions{hookbackMarkers: true})
	f0 := fh.selecting(v.ns)
	t := time.Now()
	got, err := e.client.CoreV1().Pods(v.ns.Name).Create(ctx, pod, dry)
	d := time.Since(t)
	if err != nil {
		return fmt.Errorf("dry-run create in %s: %w", v.ns.Name, err)
	}
	v.creates++
	f1 := fh.selecting(v.ns)
	patched := lifespanTolerations(got) > 0 || slices.ContainsFunc(got.Spec.Containers, func(c corev1.Container) bool { return c.Name == "xxl-agent" })
	wantPatched := slices.Contains(v.hooks, "pod-sidecar")
	switch {
	case patched != wantPatched || (wantPatched && (lifespanTolerations(got) != 12 || len(got.Spec.Containers) != 3)):
		// Fail-open (a webhook call that failed) or a stray webhook: not
		// the figure we want.
		v.unpatched++
	case i < e.cfg.warmup:
	case len(f0) > 0 || len(f1) > 0:
		v.discarded++
	default:
		v.samples = append(v.samples, d)
	}
	return nil
}
