package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// job is one object to send through one webhook, or (trip set) to
// round-trip through a conversion webhook.
type job struct {
	hook *Webhook
	trip *trip
	// stored, when set: raw is in the storage version, to be converted
	// to the target's version first.
	stored    *storedConversion
	target    Target
	raw       []byte
	namespace string
	name      string
}

// binding is a webhook's interest in one listed resource.
type binding struct {
	hook   *Webhook
	target Target
}

// Run audits the objects the webhooks match and returns one result per
// review, and one per webhook or resource that could not be audited, in a
// stable order. Its error is for what stops the whole audit (discovery
// failing outright, ctx ending); everything else is a Result.
func Run(ctx context.Context, opts Options) ([]Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	served, err := opts.Lister.Resources(ctx)
	if len(served) == 0 && err != nil {
		return nil, fmt.Errorf("discover the apiserver's resources: %w", err)
	}
	c := newCollector(opts.Progress)
	if err != nil {
		c.add(Result{Webhook: "*", Result: Error, Message: fmt.Sprintf("discovery incomplete, some resources are not audited: %v", err)})
	}
	byGVR, order := bindings(opts, served)
	nsLabels, err := namespaceLabels(ctx, opts)
	if err != nil {
		return nil, err
	}
	jobs := queue{ch: make(chan job), c: c}
	var wg sync.WaitGroup
	for range max(opts.Concurrency, 1) {
		wg.Go(func() {
			for j := range jobs.ch {
				if j.trip != nil {
					c.done(roundTrip(ctx, j))
					continue
				}
				if j.stored != nil {
					raw, res := convertStored(ctx, j)
					if res != nil {
						c.done(*res)
						continue
					}
					j.raw = raw
				}
				c.done(review(ctx, j, opts.UserInfo))
			}
		})
	}
	stored := storedConversions(ctx, opts, order)
	for _, gvr := range order {
		list, s := gvr, stored[gvr]
		if s != nil {
			list = s.storage()
		}
		err := opts.Lister.List(ctx, list, func(obj map[string]any) error {
			return dispatch(ctx, jobs, byGVR[gvr], obj, nsLabels, s)
		})
		if err != nil && ctx.Err() == nil {
			what := gvr.Resource
			if s != nil {
				what += " in the storage version " + list.Version
			}
			for _, b := range byGVR[gvr] {
				c.add(Result{Webhook: b.hook.Name, Resource: b.target.Resource(), Result: Error, Message: fmt.Sprintf("list %s: %v", what, err)})
			}
		}
	}
	dispatchConversions(ctx, opts, c, jobs, nsLabels)
	c.listed()
	close(jobs.ch)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.sorted(), nil
}

// bindings groups each webhook's targets by the resource version listed,
// so that each resource is listed once whatever the number of webhooks.
func bindings(opts Options, served []APIResource) (map[schema.GroupVersionResource][]binding, []schema.GroupVersionResource) {
	by := map[schema.GroupVersionResource][]binding{}
	var order []schema.GroupVersionResource
	for i := range opts.Webhooks {
		w := &opts.Webhooks[i]
		if w.MatchConditions > 0 {
			opts.Log.Warn("matchConditions are not evaluated: the webhook is audited as if they matched", "webhook", w.Name, "conditions", w.MatchConditions)
		}
		for _, t := range Targets(w.Rules, served, opts.Operation) {
			if _, ok := by[t.GVR]; !ok {
				order = append(order, t.GVR)
			}
			by[t.GVR] = append(by[t.GVR], binding{hook: w, target: t})
		}
	}
	return by, order
}

// namespaceLabels are every namespace's labels, listed only when a webhook
// has a namespaceSelector.
func namespaceLabels(ctx context.Context, opts Options) (map[string]map[string]string, error) {
	need := slices.ContainsFunc(opts.Webhooks, func(w Webhook) bool { return w.NamespaceSelector != nil }) ||
		slices.ContainsFunc(opts.Conversions, func(c Conversion) bool { return c.NamespaceSelector != nil })
	out := map[string]map[string]string{}
	if !need {
		return out, nil
	}
	err := opts.Lister.List(ctx, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, func(obj map[string]any) error {
		name, _, labels := identity(obj)
		out[name] = labels
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list namespaces for the webhooks' namespaceSelectors: %w", err)
	}
	return out, nil
}

// dispatch queues obj for each webhook whose selectors match it, as the
// apiserver decides: namespaceSelector against the object's namespace (the
// object itself for a Namespace; cluster-scoped objects always match),
// objectSelector against its labels.
func dispatch(ctx context.Context, jobs queue, bs []binding, obj map[string]any, nsLabels map[string]map[string]string, stored *storedConversion) error {
	name, namespace, own := identity(obj)
	var raw []byte
	for _, b := range bs {
		nsSet := nsLabels[namespace]
		if b.target.GVR.Group == "" && b.target.GVR.Resource == "namespaces" {
			nsSet = own
		}
		ok, err := selected(b.hook.ObjectSelector, b.hook.NamespaceSelector, b.target.Namespaced || b.target.GVR.Resource == "namespaces", own, nsSet)
		if err != nil || !ok {
			continue
		}
		if raw == nil {
			if raw, err = json.Marshal(obj); err != nil {
				return fmt.Errorf("encode %s/%s: %w", namespace, name, err)
			}
		}
		if err := jobs.put(ctx, job{hook: b.hook, target: b.target, raw: raw, namespace: namespace, name: name, stored: stored}); err != nil {
			return err
		}
	}
	return nil
}

// queue hands jobs to the workers, counted for Options.Progress.
type queue struct {
	ch chan job
	c  *collector
}

// put waits for a worker to take j, or for ctx to end.
func (q queue) put(ctx context.Context, j job) error {
	// Counted first: a worker may be done with it before the send returns.
	q.c.queued()
	select {
	case q.ch <- j:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// identity reads name, namespace and labels from an object's metadata.
func identity(obj map[string]any) (name, namespace string, labels map[string]string) {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ = meta["name"].(string)
	namespace, _ = meta["namespace"].(string)
	if l, ok := meta["labels"].(map[string]any); ok {
		labels = make(map[string]string, len(l))
		for k, v := range l {
			labels[k], _ = v.(string)
		}
	}
	return name, namespace, labels
}

// collector gathers results from the workers, and tells Progress how far
// they are.
type collector struct {
	mu       sync.Mutex
	results  []Result
	progress func(Progress)
	p        Progress
}

func newCollector(progress func(Progress)) *collector {
	return &collector{progress: progress, p: Progress{Listing: true}}
}

// add keeps a result that no job answered: a webhook or resource that
// could not be audited.
func (c *collector) add(r Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.results = append(c.results, r)
}

// queued counts a job handed to the workers.
func (c *collector) queued() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p.Queued++
}

// done keeps a job's result.
func (c *collector) done(r Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.results = append(c.results, r)
	c.p.Done++
	c.tell()
}

// listed notes that every job is queued: Queued is the total.
func (c *collector) listed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p.Listing = false
	c.tell()
}

// tell reports the progress; called with c.mu held, so reports come in
// order.
func (c *collector) tell() {
	if c.progress != nil {
		c.progress(c.p)
	}
}

func (c *collector) sorted() []Result {
	slices.SortStableFunc(c.results, func(a, b Result) int {
		return cmp.Or(cmp.Compare(a.Webhook, b.Webhook), cmp.Compare(a.Resource, b.Resource),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Operation, b.Operation))
	})
	return c.results
}
