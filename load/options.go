// Package load sends server-side dry-run creates through the real
// kube-apiserver, at a fixed rate or a ramp of rates, and reports per step
// what a webhook's author needs: the rate offered and achieved, the
// end-to-end latency percentiles, errors by kind, the knee (the first step
// past the budget), and per webhook the latency the apiserver measured
// (its apiserver_admission_webhook_admission_duration_seconds) and, for a
// webhook hookback serves, the user's server's share and hookback's own.
//
// The requests are dry-run only, inside one namespace, and never retried:
// a 429 from priority and fairness is counted, not hidden.
package load

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookback/hookback/field"
)

// Defaults.
const (
	DefaultStep        = 10 * time.Second
	DefaultSteps       = 5
	DefaultTimeout     = 10 * time.Second
	DefaultBudget      = time.Second
	DefaultMaxInFlight = 512
	// SafeRate is the highest rate sent to a cluster that is not on this
	// machine without Options.AllowHighRate: a load run on a shared
	// cluster is felt by everyone on it.
	SafeRate = 50
	// MaxRate bounds any rate: beyond it the generator itself is what is
	// measured.
	MaxRate = 20000
)

// Options say what to send, how fast and for how long.
type Options struct {
	// Rate is requests per second: "200" (fixed) or "10..400" (a ramp of
	// Steps steps from the first rate to the second).
	Rate string
	// Steps is the number of steps of a ramp; Step is each step's length
	// (a fixed rate runs one step of Duration, or of Step when Duration
	// is 0).
	Steps int
	Step  time.Duration
	// Duration bounds the whole run, Count the requests sent (0: no
	// bound).
	Duration time.Duration
	Count    int
	// Namespace is where every object is created (dry-run): the scope.
	Namespace string
	// Timeout bounds each request (sent as the request's timeout too).
	Timeout time.Duration
	// Budget is the p99 a step may reach before it is the knee.
	Budget time.Duration
	// MaxInFlight bounds the requests waiting for an answer; a request due
	// while that many wait is not sent, and counted as skipped.
	MaxInFlight int
	// Local says the cluster is on this machine (registration.LocalCluster);
	// AllowHighRate allows more than SafeRate on one that is not.
	Local, AllowHighRate bool
}

// Rates returns the rate of each step.
func (o Options) Rates() ([]float64, error) {
	from, to, err := parseRate(o.Rate)
	if err != nil {
		return nil, err
	}
	if from == to {
		return []float64{from}, nil
	}
	n := max(o.Steps, 2)
	out := make([]float64, n)
	for i := range out {
		out[i] = from + (to-from)*float64(i)/float64(n-1)
	}
	return out, nil
}

// stepLength is how long each step lasts.
func (o Options) stepLength(steps int) time.Duration {
	if steps == 1 && o.Duration > 0 {
		return o.Duration
	}
	return o.Step
}

func parseRate(s string) (from, to float64, err error) {
	bad := func(detail string) error { return field.New("load.Options.Rate", strconv.Quote(s), detail) }
	a, b, ramp := strings.Cut(s, "..")
	if from, err = strconv.ParseFloat(strings.TrimSpace(a), 64); err != nil {
		return 0, 0, bad("want requests per second, such as 200, or a ramp FROM..TO, such as 10..400")
	}
	to = from
	if ramp {
		if to, err = strconv.ParseFloat(strings.TrimSpace(b), 64); err != nil {
			return 0, 0, bad("want a ramp FROM..TO in requests per second, such as 10..400")
		}
	}
	switch {
	case from <= 0 || to <= 0:
		return 0, 0, bad("want rates above 0")
	case from > MaxRate || to > MaxRate:
		return 0, 0, bad(fmt.Sprintf("want at most %d requests per second", MaxRate))
	}
	return from, to, nil
}

// Validate reports every problem at once, each naming its field.
func (o Options) Validate() error {
	var errs []error
	rates, err := o.Rates()
	errs = append(errs, err)
	if o.Namespace == "" {
		errs = append(errs, field.Clause("load.Options.Namespace", "", "is required: every request is a dry-run create in that namespace, and only there"))
	}
	if len(rates) > 1 && o.Steps < 2 {
		errs = append(errs, field.New("load.Options.Steps", strconv.Itoa(o.Steps), "a ramp needs 2 steps or more"))
	}
	if o.Step <= 0 && (len(rates) > 1 || o.Duration <= 0) {
		errs = append(errs, field.New("load.Options.Step", o.Step.String(), "want a step length above 0, such as 10s"))
	}
	if o.Duration < 0 {
		errs = append(errs, field.New("load.Options.Duration", o.Duration.String(), "want 0 (no bound) or more"))
	}
	if o.Count < 0 {
		errs = append(errs, field.New("load.Options.Count", strconv.Itoa(o.Count), "want 0 (no bound) or more"))
	}
	if o.Timeout < time.Second || o.Timeout > time.Minute {
		errs = append(errs, field.New("load.Options.Timeout", o.Timeout.String(), "want 1s to 1m"))
	}
	if o.MaxInFlight < 1 {
		errs = append(errs, field.New("load.Options.MaxInFlight", strconv.Itoa(o.MaxInFlight), "want 1 or more"))
	}
	if top := maxOf(rates); top > SafeRate && !o.Local && !o.AllowHighRate {
		errs = append(errs, field.Advise("load.Options.AllowHighRate",
			"refusing %g requests per second on a cluster that is not on this machine (more than %d/s is felt by everyone on a shared cluster): lower the rate, or set {load.Options.AllowHighRate} if the cluster is yours to load", top, SafeRate))
	}
	return errors.Join(errs...)
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
