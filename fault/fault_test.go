package fault

import (
	"context"
	"testing"
	"time"

	"github.com/hookback/hookback/admission"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Fault
		wantErr  bool
	}{
		{name: "refuse", in: "refuse", want: Fault{Kind: Refuse}},
		{name: "timeout", in: "timeout", want: Fault{Kind: Timeout}},
		{name: "error", in: "error", want: Fault{Kind: Error}},
		{name: "slow", in: "slow=3s", want: Fault{Kind: Slow, Delay: 3 * time.Second}},
		{name: "slow without duration", in: "slow", wantErr: true},
		{name: "slow zero", in: "slow=0s", wantErr: true},
		{name: "value on refuse", in: "refuse=1s", wantErr: true},
		{name: "unknown", in: "crash", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			if err == nil && got.String() != tc.in {
				t.Fatalf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}

func TestWrap(t *testing.T) {
	called := 0
	allow := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		called++
		return admission.Allowed("")
	})
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name       string
		fault      Fault
		ctx        context.Context
		wantFailed bool
		wantCalls  int
		// wantRefused: the transport closes the connection
		wantRefused bool
	}{
		{name: "refuse closes the connection", fault: Fault{Kind: Refuse}, ctx: context.Background(), wantFailed: true, wantRefused: true},
		{name: "error fails the call", fault: Fault{Kind: Error}, ctx: context.Background(), wantFailed: true},
		{name: "timeout waits for the caller to give up", fault: Fault{Kind: Timeout}, ctx: canceled, wantFailed: true},
		{name: "slow forwards after the delay", fault: Fault{Kind: Slow, Delay: time.Millisecond}, ctx: context.Background(), wantCalls: 1},
		{name: "slow gives up with the caller", fault: Fault{Kind: Slow, Delay: time.Hour}, ctx: canceled, wantFailed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			called = 0
			r := Wrap(allow, tc.fault).Handle(tc.ctx, admission.Request{})
			if r.Failed() != tc.wantFailed {
				t.Fatalf("Failed() = %v, want %v (%+v)", r.Failed(), tc.wantFailed, r.Result)
			}
			if r.Refused() != tc.wantRefused {
				t.Fatalf("Refused() = %v, want %v", r.Refused(), tc.wantRefused)
			}
			if called != tc.wantCalls {
				t.Fatalf("handler called %d times, want %d", called, tc.wantCalls)
			}
		})
	}
}
