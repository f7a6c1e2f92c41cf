package inspector

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// fakeFault stands in for the session's switch: it accepts what the
// session's parser does, here the page's five kinds.
type fakeFault struct{ cur string }

func (f *fakeFault) Fault() string { return f.cur }

func (f *fakeFault) SetFault(s string) error {
	for _, k := range []string{"none", "refuse", "timeout", "error"} {
		if s == k {
			f.cur = s
			return nil
		}
	}
	if strings.HasPrefix(s, "slow=") && len(s) > len("slow=") {
		f.cur = s
		return nil
	}
	return errors.New(`fault "` + s + `": want refuse, timeout, error or slow=DUR`)
}

// TestSetFault: the list page shows the fault and the form; a same-origin
// POST switches it and sends the browser back to the list; a bad value
// or a cross-origin POST changes nothing.
func TestSetFault(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	sw := &fakeFault{cur: "timeout"}
	f.srv.opts.Fault = sw
	if code, body := f.get("/"); code != 200 || !strings.Contains(body, `<strong id="fault" role="status">timeout</strong>`) || !strings.Contains(body, `action="/fault"`) {
		t.Fatalf("the list page does not show the fault: %d\n%s", code, body)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		name     string
		form     url.Values
		hdr      map[string]string
		wantCode int
		want     string
	}{
		{name: "switched to error", form: url.Values{"fault": {"error"}}, wantCode: http.StatusSeeOther, want: "error"},
		{name: "switched to slow with its delay", form: url.Values{"fault": {"slow"}, "delay": {"3s"}}, wantCode: http.StatusSeeOther, want: "slow=3s"},
		{name: "switched to none", form: url.Values{"fault": {"none"}}, hdr: map[string]string{"X-Hookback-Fragment": "1"}, wantCode: http.StatusOK, want: "none"},
		{name: "a bad value changes nothing", form: url.Values{"fault": {"down"}}, wantCode: http.StatusBadRequest, want: "none"},
		{name: "cross-origin refused", form: url.Values{"fault": {"refuse"}}, hdr: map[string]string{"Origin": "http://evil.example"}, wantCode: http.StatusForbidden, want: "none"},
		{name: "cross-site refused", form: url.Values{"fault": {"refuse"}}, hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}, wantCode: http.StatusForbidden, want: "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, f.http.URL+"/fault", strings.NewReader(tc.form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode || sw.cur != tc.want {
				t.Fatalf("POST /fault %v: %d, fault %q; want %d, %q", tc.form, resp.StatusCode, sw.cur, tc.wantCode, tc.want)
			}
			if tc.wantCode == http.StatusSeeOther && resp.Header.Get("Location") != "/" {
				t.Errorf("redirected to %q, want /", resp.Header.Get("Location"))
			}
		})
	}
}

// TestSetFaultWithout: a session without your webhooks has no fault to
// switch, and the page shows no form.
func TestSetFaultWithout(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	if _, body := f.get("/"); strings.Contains(body, `action="/fault"`) {
		t.Errorf("a fault form without a fault to switch")
	}
	resp, err := http.Post(f.http.URL+"/fault", "application/x-www-form-urlencoded", strings.NewReader("fault=error"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /fault: %d, want 404", resp.StatusCode)
	}
}
