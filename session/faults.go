package session

import (
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/hookback/hookback/fault"
)

// faultSwitch is the live session's fault, as the inspector shows and
// switches it (inspector.FaultSwitch): every one of your webhooks reads it
// once per review (fault.WrapSwitch).
type faultSwitch struct {
	sw    *fault.Switch
	log   *slog.Logger
	hooks int
	// mu orders switches, so that each logged "was" is the one replaced.
	mu sync.Mutex
}

// Fault is the fault now: none, refuse, timeout, error or slow=DUR.
func (f *faultSwitch) Fault() string { return f.sw.Load().String() }

// SetFault switches every one of your webhooks to s at once, and logs it
// once; a value that does not parse changes nothing.
func (f *faultSwitch) SetFault(s string) error {
	nf, err := fault.ParseSwitch(s)
	if err != nil {
		return fmt.Errorf("%w (or none)", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	was := f.sw.Load()
	if was == nf {
		return nil
	}
	f.sw.Set(nf)
	if f.log != nil {
		f.log.Warn("fault switched from the inspector: the apiserver applies each webhook's failurePolicy", "fault", nf.String(), "was", was.String(), "webhooks", f.hooks)
	}
	return nil
}

// writeFault is the banner's line for a fault: what your webhooks do now,
// and where to switch it.
func (u *userWebhooks) writeFault(w io.Writer, inspector bool) {
	if u == nil || u.fault == nil || u.fault.sw.Load().Kind == fault.None {
		return
	}
	where := ""
	if inspector {
		where = "; switch it (or to none) from the inspector's page"
	}
	fmt.Fprintf(w, "  fault:    %s, injected into your %d webhooks%s\n", u.fault.Fault(), u.fault.hooks, where)
}
