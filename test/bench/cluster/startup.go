package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"
)

// startWebhooks is every built-in webhook but node-status, which would
// oversell the shared cluster's node while the bench runs.
const startWebhooks = "pod-name,pod-lifespan,pod-sidecar,pod-eviction"

type startRun struct {
	ready, banner, verified, stop time.Duration
}

// startup runs `hookback start` once with an empty state directory (it
// creates its CA) and then -starts times reusing it, each time measuring
// from exec to the first 200 of /readyz, reading the banner's own figures,
// then SIGTERM to exit (deregistration included).
func (e *env) startup(ctx context.Context) error {
	log.Printf("start: 1 cold + %d warm runs", e.cfg.starts)
	ns, err := e.nss.create(ctx, "start")
	if err != nil {
		return err
	}
	tmpl, err := scopedTemplate(e.tmpl, ns.Name)
	if err != nil {
		return err
	}
	path := filepath.Join(e.cfg.workdir, "start.yaml.tmpl")
	if err := os.WriteFile(path, []byte(tmpl), 0o644); err != nil {
		return err
	}
	state := filepath.Join(e.cfg.workdir, "state-start")
	if err := os.RemoveAll(state); err != nil {
		return err
	}
	var cold startRun
	var warm []startRun
	for i := 0; i <= e.cfg.starts; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r, err := e.startOnce(ctx, path, state)
		if err != nil {
			return err
		}
		if i == 0 {
			cold = r
		} else {
			warm = append(warm, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.reportStartup(cold, warm)
	return nil
}

// startOnce starts a hookback with a fresh session, times it to ready and
// verified, and stops it.
func (e *env) startOnce(ctx context.Context, path, state string) (startRun, error) {
	var r startRun
	p, err := e.startHookback(session("start"), state, nil,
		"--webhooks", startWebhooks, "--controllers", "all", "--template", path)
	if err != nil {
		return r, err
	}
	if r.ready, err = p.waitReady(ctx, 60*time.Second); err != nil {
		return r, err
	}
	if r.banner, r.verified, err = p.banner(10 * time.Second); err != nil {
		return r, err
	}
	// Nobody stops it the instant it is ready; let the controllers
	// settle into their loops first.
	time.Sleep(300 * time.Millisecond)
	r.stop, err = p.stop(30 * time.Second)
	return r, err
}

func (e *env) reportStartup(cold startRun, warm []startRun) {
	pick := func(f func(startRun) time.Duration) []time.Duration {
		var ds []time.Duration
		for _, r := range warm {
			ds = append(ds, f(r))
		}
		return ds
	}
	ready := pick(func(r startRun) time.Duration { return r.ready })
	banner := pick(func(r startRun) time.Duration { return r.banner })
	verified := pick(func(r startRun) time.Duration { return r.verified })
	stop := pick(func(r startRun) time.Duration { return r.stop })

	fmt.Fprintf(e.out, "### `hookback start` to verified\n\n")
	fmt.Fprintf(e.out, "`hookback start --webhooks %s --controllers all`: one cold run with an empty `--state-dir` (it creates its CA), then %d runs reusing it, each with a fresh session. *exec → ready* is measured by the bench from `exec` to the first 200 of `/readyz` (polled every 2 ms), which hookback answers only after registering and verifying; *banner* is hookback's own `ready in`, and *verified* the canary round trip it prints. SIGTERM → exit includes deleting the webhook configurations and the Lease.\n\n", startWebhooks, e.cfg.starts)
	fmt.Fprintf(e.out, "| | exec → /readyz 200 | banner: ready in | banner: verified in | SIGTERM → exit |\n|---|---|---|---|---|\n")
	fmt.Fprintf(e.out, "| cold run (new CA) | %s | %s | %s | %s |\n", ms(cold.ready), ms(cold.banner), ms(cold.verified), ms(cold.stop))
	fmt.Fprintf(e.out, "| warm, p50 of %d | %s | %s | %s | %s |\n", len(warm), ms(quantile(ready, .5)), ms(quantile(banner, .5)), ms(quantile(verified, .5)), ms(quantile(stop, .5)))
	fmt.Fprintf(e.out, "| warm, max of %d | %s | %s | %s | %s |\n", len(warm), ms(maxOf(ready)), ms(maxOf(banner)), ms(maxOf(verified)), ms(maxOf(stop)))
	fmt.Fprintln(e.out)
}
