package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// convRun times the three paths of the conversion section. Each round
// points the CRD at the bare proxy, then at the manager, then starts
// hookback (which redirects it and restores the manager's stanza at exit):
// every path begins with a change of the CRD's spec, so the apiserver
// rebuilds the CRD's storage and no path lists from a watch cache that
// another filled.
type convRun struct {
	e                          *env
	dyn                        dynamic.Interface
	list                       dynamic.ResourceInterface
	opts                       metav1.ListOptions
	proxy                      *floorProcess
	mgrURL, manifest, stateDir string
	mgrCA                      []byte
	direct, floor, through     []time.Duration
	converted                  float64
}

func (c *convRun) round(ctx context.Context) error {
	if err := pointWidgetCRD(ctx, c.dyn, "https://"+c.proxy.addr+"/convert", c.proxy.ca); err != nil {
		return err
	}
	before, _, err := c.proxy.calls()
	if err != nil {
		return err
	}
	t, err := timedLists(ctx, c.list, c.opts, c.e.cfg.objects, c.e.cfg.lists, func() bool {
		n, _, err := c.proxy.calls()
		return err == nil && n > before
	})
	if err != nil {
		return fmt.Errorf("through the bare proxy: %w", err)
	}
	c.floor = append(c.floor, t...)
	if err := pointWidgetCRD(ctx, c.dyn, c.mgrURL+"/convert", c.mgrCA); err != nil {
		return err
	}
	// Served directly once a list leaves the proxy's count where it was.
	last, _, err := c.proxy.calls()
	if err != nil {
		return err
	}
	t, err = timedLists(ctx, c.list, c.opts, c.e.cfg.objects, c.e.cfg.lists, func() bool {
		n, _, err := c.proxy.calls()
		same := err == nil && n == last
		last = n
		return same
	})
	if err != nil {
		return fmt.Errorf("direct: %w", err)
	}
	c.direct = append(c.direct, t...)
	return c.hookback(ctx)
}

func (c *convRun) hookback(ctx context.Context) error {
	e := c.e
	p, err := e.startHookback(session("conversion"), c.stateDir, nil,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", c.manifest,
		"--upstream", c.mgrURL, "--upstream-ca", filepath.Join(e.cfg.workdir, "conversion", "tls.crt"))
	if err != nil {
		return err
	}
	defer func() { _, _ = p.stop(30 * time.Second) }()
	if _, err := p.waitReady(ctx, 60*time.Second); err != nil {
		return err
	}
	converted := func() float64 {
		m, err := p.metrics()
		if err != nil {
			return -1
		}
		return m[`hookback_conversion_objects_total{crd="`+widgetCRD+`"}`]
	}
	t, err := timedLists(ctx, c.list, c.opts, e.cfg.objects, e.cfg.lists, func() bool { return converted() > 0 })
	if err != nil {
		return fmt.Errorf("through hookback: %w", err)
	}
	c.through = append(c.through, t...)
	n := converted()
	if n < float64(e.cfg.lists*e.cfg.objects) {
		return fmt.Errorf("hookback converted %.0f objects in %d lists of %d: the lists did not all go through it", n, e.cfg.lists, e.cfg.objects)
	}
	c.converted += n
	if _, err := p.stop(30 * time.Second); err != nil {
		return err
	}
	return nil
}

func (e *env) reportConversion(c *convRun) {
	fmt.Fprintf(e.out, "### Conversion: list %d objects in the non-storage version\n\n", e.cfg.objects)
	fmt.Fprintf(e.out, "`hack/bench-cluster -sections conversion -objects %d -lists %d -rounds %d`: each round times %d lists of widgets.e2e.hookback.dev/v2 (stored as v1, read at an exact resourceVersion, so from etcd, converting every object) with the CRD's conversion calling a bare forwarding proxy in front of the e2e/crmanager manager (the floor of any second hop), then the manager directly by url, then hookback (which redirects the CRD at start and restores it at exit). hookback converted %.0f objects.\n\n",
		e.cfg.objects, e.cfg.lists, e.cfg.rounds, e.cfg.lists, c.converted)
	fmt.Fprintf(e.out, "| path | lists | p50 | mean | p90 | max |\n|---|---|---|---|---|---|\n")
	for _, row := range []struct {
		name string
		ds   []time.Duration
	}{{"direct (apiserver → manager)", c.direct}, {"bare proxy (apiserver → proxy → manager)", c.floor}, {"through hookback", c.through}} {
		fmt.Fprintf(e.out, "| %s | %d | %s | %s | %s | %s |\n", row.name, len(row.ds), ms(quantile(row.ds, 0.5)), ms(mean(row.ds)), ms(quantile(row.ds, 0.9)), ms(maxOf(row.ds)))
	}
	ratio := func(a, b []time.Duration) string {
		return fmt.Sprintf("p50 **%.2f×**, mean **%.2f×**", float64(quantile(a, 0.5))/float64(quantile(b, 0.5)), float64(mean(a))/float64(mean(b)))
	}
	fmt.Fprintf(e.out, "\nhookback against direct: %s (target: at most 1.1×).\n", ratio(c.through, c.direct))
	fmt.Fprintf(e.out, "hookback against the bare proxy: %s (standing target: within 1.1× of the floor).\n", ratio(c.through, c.floor))
	fmt.Fprintf(e.out, "bare proxy against direct: %s (what a second hop costs, before hookback does anything).\n\n", ratio(c.floor, c.direct))
}
