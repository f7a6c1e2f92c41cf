package load

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func validOptions() Options {
	return Options{Rate: "10", Steps: DefaultSteps, Step: time.Second, Timeout: DefaultTimeout, Budget: DefaultBudget,
		MaxInFlight: DefaultMaxInFlight, Namespace: "team-a"}
}

func TestRates(t *testing.T) {
	tests := []struct {
		name  string
		rate  string
		steps int
		want  []float64
		err   string
	}{
		{name: "fixed", rate: "200", want: []float64{200}},
		{name: "ramp", rate: "10..400", steps: 4, want: []float64{10, 140, 270, 400}},
		{name: "downward ramp", rate: "30..10", steps: 3, want: []float64{30, 20, 10}},
		{name: "fraction", rate: "0.5", want: []float64{0.5}},
		{name: "not a number", rate: "fast", err: `load.Options.Rate "fast": want requests per second`},
		{name: "half a ramp", rate: "10..", err: "want a ramp FROM..TO"},
		{name: "zero", rate: "0", err: "want rates above 0"},
		{name: "beyond the generator", rate: "1..100000", err: "want at most 20000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validOptions()
			o.Rate = tt.rate
			if tt.steps > 0 {
				o.Steps = tt.steps
			}
			got, err := o.Rates()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("Rates() = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Options)
		err    string
	}{
		{name: "valid", change: func(*Options) {}},
		{name: "no namespace", change: func(o *Options) { o.Namespace = "" }, err: "load.Options.Namespace is required"},
		{name: "high rate on a cluster elsewhere", change: func(o *Options) { o.Rate = "10..200" },
			err: "refusing 200 requests per second on a cluster that is not on this machine"},
		{name: "high rate allowed", change: func(o *Options) { o.Rate, o.AllowHighRate = "200", true }},
		{name: "high rate on this machine", change: func(o *Options) { o.Rate, o.Local = "1000", true }},
		{name: "the safe rate", change: func(o *Options) { o.Rate = "50" }},
		{name: "ramp of one step", change: func(o *Options) { o.Rate, o.Steps = "1..5", 1 }, err: "a ramp needs 2 steps or more"},
		{name: "no step length", change: func(o *Options) { o.Step = 0 }, err: "load.Options.Step 0s"},
		{name: "a fixed rate for a duration needs no step", change: func(o *Options) { o.Step, o.Duration = 0, time.Second }},
		{name: "timeout too long", change: func(o *Options) { o.Timeout = time.Hour }, err: "load.Options.Timeout 1h0m0s: want 1s to 1m"},
		{name: "negative count", change: func(o *Options) { o.Count = -1 }, err: "load.Options.Count -1"},
		{name: "no requests in flight", change: func(o *Options) { o.MaxInFlight = 0 }, err: "load.Options.MaxInFlight 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validOptions()
			tt.change(&o)
			err := o.Validate()
			if tt.err == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Validate() = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestGates(t *testing.T) {
	tests := []struct {
		name  string
		gates Gates
		rate  float64
		on    bool
		err   string
	}{
		{name: "none", gates: Gates{}},
		{name: "fraction", gates: Gates{MaxErrorRate: "0.01"}, rate: 0.01, on: true},
		{name: "percentage", gates: Gates{MaxErrorRate: "2.5%"}, rate: 0.025, on: true},
		{name: "zero errors", gates: Gates{MaxErrorRate: "0"}, rate: 0, on: true},
		{name: "above one", gates: Gates{MaxErrorRate: "5"}, err: `load.Gates.MaxErrorRate "5": want a fraction from 0 to 1`},
		{name: "negative p99", gates: Gates{MaxP99: -time.Second}, err: "load.Gates.MaxP99 -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.gates.Validate()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Validate() = %v, want %q", err, tt.err)
				}
				return
			}
			rate, on, err := tt.gates.errorRate()
			if err != nil || rate != tt.rate || on != tt.on {
				t.Errorf("errorRate() = %v, %v, %v; want %v, %v", rate, on, err, tt.rate, tt.on)
			}
		})
	}
}
