package inspector

import (
	"net/http"
	"strings"
)

// FaultSwitch is the live session's fault (start --fault), which the list
// page shows and switches: none, refuse, timeout, error or slow=DUR. The
// inspector knows it as text only; the session parses and applies it.
type FaultSwitch interface {
	Fault() string
	SetFault(string) error
}

// faultKinds are the page's choices; slow takes its delay from a field of
// its own.
var faultKinds = []string{"none", "refuse", "timeout", "error", "slow"}

// faultForm is the list page's fault block.
type faultForm struct {
	Current string
	Kinds   []string
	// Kind and Delay are Current split for the form's fields.
	Kind, Delay string
}

func (s *Server) faultForm() *faultForm {
	if s.opts.Fault == nil {
		return nil
	}
	cur := s.opts.Fault.Fault()
	kind, delay, _ := strings.Cut(cur, "=")
	if delay == "" {
		delay = "2s"
	}
	return &faultForm{Current: cur, Kinds: faultKinds, Kind: kind, Delay: delay}
}

// setFault switches the session's fault (POST /fault, form fields fault
// and, for slow, delay), behind guard's same-origin check as replay is,
// and sends the browser back to the list, which shows the fault now. A
// request with X-Hookback-Fragment gets the fault as text instead.
func (s *Server) setFault(w http.ResponseWriter, r *http.Request) {
	if s.opts.Fault == nil {
		http.Error(w, "no fault to switch: this session serves none of your webhooks (--webhook-config)", http.StatusNotFound)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	v := strings.TrimSpace(r.FormValue("fault"))
	if v == "slow" {
		v += "=" + strings.TrimSpace(r.FormValue("delay"))
	}
	if err := s.opts.Fault.SetFault(v); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Header.Get("X-Hookback-Fragment") != "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(s.opts.Fault.Fault()))
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
