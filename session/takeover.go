package session

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/internal/lifecycle"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/takeover"
)

// takeOverPodWait bounds the wait for a taken-over Deployment's pods to
// stop before their manager's Lease is released.
const takeOverPodWait = 30 * time.Second

// takeOverWatchInterval is how often a taken-over operator is looked at
// for someone else's changes.
const takeOverWatchInterval = 2 * time.Second

// takeOverRun is start --take-over's part of a run: the operators found,
// and the redirects of the last render.
type takeOverRun struct {
	taker     *takeover.Taker
	ops       []*takeover.Operator
	redirects takeover.Redirects
	// released are the Leases released; said in the banner.
	released []string
	leaseErr error
	// deployed names, in project mode without --take-over, where your
	// operator is deployed too: said in the banner.
	deployed []string
}

// discoverTakeOver finds what the targets touch and returns c with the
// taken-over configurations and CRDs your manifests lack added to them
// (as stored in the cluster), so that they are served and forwarded like
// yours. Without targets it takes nothing over, but still gives back what
// this session took over before a crash, and in project mode looks for
// your operator deployed.
func discoverTakeOver(ctx context.Context, c *plan.Config, cl *kubeconfig.Cluster, cfg plan.Options) (*takeOverRun, *plan.Config, error) {
	targets, err := plan.TakeOverTargets(cfg, c.Manifests())
	if err != nil {
		return nil, nil, err
	}
	clients := takeover.Clients{Client: cl.Client, Dynamic: cl.Dynamic}
	t := &takeOverRun{taker: &takeover.Taker{Clients: clients, Session: cfg.Session, LeaseRef: cfg.LeaseRef(), Log: cfg.Log, Now: cl.Now}}
	if len(targets) == 0 {
		if cfg.Project != nil && c.Manifests() != nil {
			t.deployed = takeover.Deployed(ctx, clients, c.Manifests().Services())
		}
		return t, c, nil
	}
	for _, target := range targets {
		op, err := takeover.Discover(ctx, clients, target)
		if err != nil {
			return nil, nil, err
		}
		t.ops = append(t.ops, op)
	}
	m, err := t.withLive(ctx, cl, c.Manifests())
	if err != nil {
		return nil, nil, err
	}
	return t, c.WithManifests(m), nil
}

// withLive is m plus the live objects of the take-over that m lacks.
func (t *takeOverRun) withLive(ctx context.Context, cl *kubeconfig.Cluster, m *manifests.Set) (*manifests.Set, error) {
	var docs []manifests.Document
	have := map[string]bool{}
	if m != nil {
		docs = slices.Clone(m.Webhooks)
		for _, d := range m.Webhooks {
			have[d.Object.GetKind()+"/"+d.Object.GetName()] = true
		}
		for i, crd := range m.CRDs {
			have["CustomResourceDefinition/"+crd.GetName()] = true
			docs = append(docs, m.CRDSources[i])
		}
	}
	get := func(gvr schema.GroupVersionResource, name string) error {
		o, err := cl.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("take over: read %s %q: %w", gvr.Resource, name, err)
		}
		if o, err = takeover.Original(o); err != nil {
			return err
		}
		docs = append(docs, manifests.Document{Source: "the cluster (take-over)", Index: len(docs) + 1, Object: o})
		return nil
	}
	for _, op := range t.ops {
		for _, c := range op.Configurations {
			if !have[c.Key()] {
				gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: strings.ToLower(c.Kind) + "s"}
				if err := get(gvr, c.Name); err != nil {
					return nil, err
				}
			}
		}
		for _, crd := range op.CRDs {
			if !have["CustomResourceDefinition/"+crd] {
				if err := get(registration.CRDResource, crd); err != nil {
					return nil, err
				}
			}
		}
	}
	out := manifests.Sort(docs)
	if m != nil {
		out.Skipped = m.Skipped
	}
	return out, nil
}

// split takes the copies of the taken-over configurations out of objs:
// their webhooks go into the operator's own configurations instead (same
// name, so the apiserver's order is kept), and the taken-over CRDs'
// conversions are redirected wherever the cluster is.
func (t *takeOverRun) split(objs *plan.Objects, session string) {
	if t == nil {
		return
	}
	t.redirects = takeover.Redirects{}
	taken := map[string]bool{}
	crds := map[string]bool{}
	for _, op := range t.ops {
		for _, c := range op.Configurations {
			taken[c.Key()] = true
		}
		for _, crd := range op.CRDs {
			crds[crd] = true
		}
	}
	reg := objs.Configurations
	reg.Objects = slices.DeleteFunc(reg.Objects, func(o *unstructured.Unstructured) bool {
		key := o.GetKind() + "/" + strings.TrimSuffix(o.GetName(), "-"+session)
		if !taken[key] {
			return false
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		byName := map[string]any{}
		for _, h := range hooks {
			hm, _ := h.(map[string]any)
			name, _ := hm["name"].(string)
			byName[name] = h
		}
		t.redirects[key] = byName
		return true
	})
	redirect := objs.Redirect
	objs.Redirect = func(crd string) bool { return crds[crd] || redirect != nil && redirect(crd) }
}

// take takes every operator over, with the redirects of the last render.
func (t *takeOverRun) take(ctx context.Context) error {
	if t == nil {
		return nil
	}
	keep := map[string]bool{}
	for _, op := range t.ops {
		if err := t.taker.Take(ctx, op, t.redirects); err != nil {
			return err
		}
		keep["Deployment/"+op.Namespace+"/"+op.Name] = true
		for _, c := range op.Configurations {
			keep[c.Key()] = true
		}
		for _, crd := range op.CRDs {
			keep["CustomResourceDefinition/"+crd] = true
		}
	}
	// What this session took over before a crash and no longer names.
	_, err := t.taker.Restore(ctx, func(key string) bool { return keep[key] })
	return err
}

// releaseLeases releases the stopped managers' Leases, once their pods
// are gone; a failure is said, not fatal: the Lease then expires.
func (t *takeOverRun) releaseLeases(ctx context.Context, now func() time.Time) {
	if t == nil {
		return
	}
	for _, op := range t.ops {
		got, err := t.taker.ReleaseLeases(ctx, op, takeOverPodWait, now)
		t.released = append(t.released, got...)
		if err != nil {
			t.leaseErr = err
			t.taker.Log.Warn("leader-election Lease not released", "deployment", op.Target.String(), "error", err)
		}
	}
}

// watch says, once each, what someone else undoes of the take-over
// while the session runs (a re-deploy), on g's context.
func (t *takeOverRun) watch(g *lifecycle.Group) {
	if t == nil || len(t.ops) == 0 {
		return
	}
	g.Go(func(ctx context.Context) error {
		t.taker.Watch(ctx, t.ops, takeOverWatchInterval)
		return nil
	})
}

// restore gives every operator back: the first step of shutdown, with
// the conversions, since the operator's webhooks fail closed without it.
func (t *takeOverRun) restore(ctx context.Context) error {
	if t == nil {
		return nil
	}
	_, err := t.taker.Restore(ctx, nil)
	return err
}

// writeBanner says what was taken over, how the Lease was handled, and
// what else acts on the Deployment.
func (t *takeOverRun) writeBanner(w io.Writer, local bool) {
	if t == nil {
		return
	}
	for _, d := range t.deployed {
		fmt.Fprintf(w, "  deployed: your operator is also deployed as %s: its webhooks are called too and its controllers race yours; add --take-over %s\n", d, d)
	}
	for _, op := range t.ops {
		fmt.Fprintf(w, "  take-over: %s scaled to 0 (from %d; given back at exit)\n", op.Target, op.Replicas)
		for _, c := range op.Configurations {
			fmt.Fprintf(w, "             %s %s: %d webhook(s) call hookback under its own name\n", c.Kind, c.Name, len(c.Webhooks))
		}
		for _, crd := range op.CRDs {
			fmt.Fprintf(w, "             CRD %s: conversion calls hookback\n", crd)
		}
		for _, h := range op.HPAs {
			fmt.Fprintf(w, "             HorizontalPodAutoscaler %s: paused, Kubernetes does not autoscale a Deployment at 0 replicas\n", h)
		}
		if !local && len(op.Configurations) > 0 {
			var who []string
			for _, c := range op.Configurations {
				for _, n := range c.Namespaces {
					if !slices.Contains(who, n) {
						who = append(who, n)
					}
				}
			}
			fmt.Fprintf(w, "             shared cluster: whoever writes these webhooks' objects in %s is served by this laptop now, and by nothing once it stops (failurePolicy Ignore)\n", strings.Join(who, "; "))
		}
	}
	switch {
	case len(t.ops) == 0:
	case len(t.released) > 0:
		fmt.Fprintf(w, "  lease:    released %s: your manager leads at its next try (2s by controller-runtime's defaults);\n"+
			"            at exit it is released again, not put back to the stopped pod, so the restored pods lead at their first try\n", strings.Join(t.released, ", "))
	case t.leaseErr != nil:
		fmt.Fprintf(w, "  lease:    not released (%v): your manager leads once it expires (15s by controller-runtime's defaults)\n", t.leaseErr)
	default:
		fmt.Fprintf(w, "  lease:    no leader-election Lease held by its pods: your manager leads at once\n")
	}
}

// restoreTakenOver gives back what the sessions opts select took over,
// before their configurations are removed (those it could not give back
// are kept, see registration.AnnotationTakeOver). It returns the sessions
// restored.
func restoreTakenOver(ctx context.Context, cl *kubeconfig.Cluster, opts registration.CleanupOptions, log *slog.Logger) ([]string, error) {
	return takeover.RestoreStale(ctx, takeover.Clients{Client: cl.Client, Dynamic: cl.Dynamic}, opts, log)
}

// renderTakeOver is discoverTakeOver for render, which writes nothing:
// nil without targets.
func renderTakeOver(ctx context.Context, c *plan.Config) (*takeOverRun, *kubeconfig.Cluster, *plan.Config, error) {
	if len(c.Options().TakeOver) == 0 {
		return nil, nil, c, nil
	}
	cl, err := kubeconfig.Connect(ctx, c.Options().Kubeconfig, c.Options().Log, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	t, c, err := discoverTakeOver(ctx, c, cl, c.Options())
	return t, cl, c, err
}

// preview is what take would change, for render: each taken-over
// configuration as it would be (same name), after a comment per
// Deployment and CRD.
func (t *takeOverRun) preview(ctx context.Context, cl *kubeconfig.Cluster) ([]byte, error) {
	var b strings.Builder
	for _, op := range t.ops {
		fmt.Fprintf(&b, "---\n# take-over: %s is scaled to 0 (from %d) for the session", op.Target, op.Replicas)
		if len(op.Leases) > 0 {
			fmt.Fprintf(&b, "; Lease %s released once its pods are gone, and again at exit (the restored pods lead at once)", strings.Join(op.Leases, ", "))
		}
		b.WriteString("\n")
		for _, crd := range op.CRDs {
			fmt.Fprintf(&b, "# take-over: CustomResourceDefinition %s: its conversion is pointed at hookback, CA injection set aside\n", crd)
		}
		for _, c := range op.Configurations {
			gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: strings.ToLower(c.Kind) + "s"}
			live, err := cl.Dynamic.Resource(gvr).Get(ctx, c.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("take over: read %s %q: %w", c.Kind, c.Name, err)
			}
			if live, err = takeover.Original(live); err != nil {
				return nil, err
			}
			y, err := (&registration.Registration{Objects: []*unstructured.Unstructured{takeover.Preview(live, c, t.redirects[c.Key()])}}).YAML()
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "---\n# take-over: %s %s, under its own name\n", c.Kind, c.Name)
			b.Write(y)
		}
	}
	return []byte(b.String()), nil
}
