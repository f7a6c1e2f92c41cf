package fault

import (
	"context"
	"sync/atomic"

	"github.com/hookback/hookback/admission"
)

// None is the Kind of no fault: the webhook answers as it would.
const None Kind = "none"

// ParseSwitch reads what a live session can be switched to: none, or any
// fault Parse reads.
func ParseSwitch(s string) (Fault, error) {
	if s == string(None) {
		return Fault{Kind: None}, nil
	}
	return Parse(s)
}

// Switch is the fault a live session injects now (start --fault, switched
// from the inspector): one atomic value, read once per call.
type Switch struct {
	cur atomic.Pointer[Fault]
}

// NewSwitch starts at f (Fault{} or Kind None: no fault).
func NewSwitch(f Fault) *Switch {
	s := &Switch{}
	s.Set(f)
	return s
}

// Set switches every webhook wrapped with s to f, for their next calls.
func (s *Switch) Set(f Fault) {
	if f.Kind == "" {
		f.Kind = None
	}
	s.cur.Store(&f)
}

// Load is the fault now.
func (s *Switch) Load() Fault { return *s.cur.Load() }

// WrapSwitch returns h with the fault s holds at each call injected, or
// none.
func WrapSwitch(h admission.Handler, s *Switch) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		return inject(ctx, h, s.Load(), req)
	})
}
