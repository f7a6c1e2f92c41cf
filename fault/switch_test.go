package fault

import (
	"context"
	"testing"

	"github.com/hookback/hookback/admission"
)

// TestSwitch: each call reads the fault the switch holds then, so a switch
// takes effect on the very next call, and none lets the webhook answer.
func TestSwitch(t *testing.T) {
	called := 0
	allow := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		called++
		return admission.Allowed("")
	})
	sw := NewSwitch(Fault{})
	h := WrapSwitch(allow, sw)
	for _, step := range []struct {
		name, set   string
		wantFailed  bool
		wantRefused bool
		wantCalled  int
	}{
		{name: "starts with none", set: "", wantCalled: 1},
		{name: "switched to error", set: "error", wantFailed: true},
		{name: "switched to refuse", set: "refuse", wantFailed: true, wantRefused: true},
		{name: "switched to slow", set: "slow=1ms", wantCalled: 1},
		{name: "switched back to none", set: "none", wantCalled: 1},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.set != "" {
				f, err := ParseSwitch(step.set)
				if err != nil {
					t.Fatal(err)
				}
				sw.Set(f)
				if got := sw.Load().String(); got != step.set {
					t.Errorf("Load() = %s, want %s", got, step.set)
				}
			}
			called = 0
			r := h.Handle(context.Background(), admission.Request{})
			if r.Failed() != step.wantFailed || r.Refused() != step.wantRefused || called != step.wantCalled {
				t.Fatalf("failed %v refused %v called %d, want %v %v %d", r.Failed(), r.Refused(), called, step.wantFailed, step.wantRefused, step.wantCalled)
			}
		})
	}
}

func TestParseSwitch(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Kind
		wantErr bool
	}{
		{in: "none", want: None},
		{in: "timeout", want: Timeout},
		{in: "slow=2s", want: Slow},
		{in: "off", wantErr: true},
		{in: "none=1s", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			f, err := ParseSwitch(tc.in)
			if (err != nil) != tc.wantErr || (err == nil && f.Kind != tc.want) {
				t.Fatalf("ParseSwitch(%q) = %v, %v", tc.in, f, err)
			}
		})
	}
}
