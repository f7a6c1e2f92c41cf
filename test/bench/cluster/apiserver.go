package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
)

// webhookDuration is the apiserver's own histogram of each webhook call,
// from its side: the review's encoding, the round trip and the answer's
// decoding. It knows a webhook by its name only.
const webhookDuration = "apiserver_admission_webhook_admission_duration_seconds"

// apiserverMetrics reads the apiserver's /metrics (an admin's kubeconfig
// may; others get an error the report notes).
func (e *env) apiserverMetrics(ctx context.Context) (map[string]float64, error) {
	raw, err := e.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the apiserver's /metrics: %w", err)
	}
	return parseMetrics(bytes.NewReader(raw))
}

// shippedWebhookName is a webhook's name in the shipped template.
var shippedWebhookName = regexp.MustCompile(`(?m)^(\s*- name: [a-z-]+)\.hookback\.dev$`)

// renameWebhooks turns each pod-name.hookback.dev of a template into
// pod-name.TAG.hookback.dev.
func renameWebhooks(tmpl, tag string) (string, error) {
	if !shippedWebhookName.MatchString(tmpl) {
		return "", errors.New("the template names no webhook NAME.hookback.dev; update bench/cluster")
	}
	return shippedWebhookName.ReplaceAllString(tmpl, "${1}."+tag+".hookback.dev"), nil
}

// webhookNames are the apiserver's names of v's webhook calls, by built-in.
func (v *variant) webhookNames() map[string]string {
	names := map[string]string{}
	for _, hook := range v.hooks {
		switch {
		case v.proc != nil:
			names[hook] = hook + "." + v.tag + ".hookback.dev"
		case v.floor != nil && hook == "pod-name":
			// The allow-all stands for pod-name's validating call.
			names[hook] = "floor." + v.tag + ".bench.hookback.dev"
		case v.floor != nil:
			names[hook] = hook + ".floor." + v.tag + ".bench.hookback.dev"
		}
	}
	return names
}

// callTimes prints, from the apiserver's histogram, the mean time of one
// call of each webhook of each variant during the run, against the call of
// the same kind made to the own-process floor of that variant (floorOf).
func callTimes(out io.Writer, vs []*variant, floorOf func(*variant) *variant, before, after map[string]float64) {
	mean := func(name string) (float64, float64) {
		l := `name="` + name + `"`
		n := sumMetric(after, webhookDuration+"_count", l) - sumMetric(before, webhookDuration+"_count", l)
		s := sumMetric(after, webhookDuration+"_sum", l) - sumMetric(before, webhookDuration+"_sum", l)
		if n <= 0 {
			return 0, 0
		}
		return n, s / n * 1000
	}
	fmt.Fprintf(out, "The apiserver's own time per webhook call (`%s`, mean over the run, warm-up included), each against the same call to the own-process floor that makes the same calls:\n\n", webhookDuration)
	fmt.Fprintf(out, "| variant | call | calls | mean per call | vs own-process floor |\n|---|---|---|---|---|\n")
	for _, v := range vs {
		names := v.webhookNames()
		for _, hook := range []string{"pod-name", "pod-lifespan", "pod-sidecar"} {
			name, ok := names[hook]
			if !ok {
				continue
			}
			n, m := mean(name)
			ratio := "—"
			if f := floorOf(v); f != nil && f != v {
				if _, ref := mean(f.webhookNames()[hook]); ref > 0 && n > 0 {
					ratio = fmt.Sprintf("%.2f×", m/ref)
				}
			}
			fmt.Fprintf(out, "| %s | %s | %.0f | %.3f ms | %s |\n", v.name, hook, n, m, ratio)
		}
	}
	fmt.Fprintln(out)
}
