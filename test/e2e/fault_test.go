package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
)

// TestStartFault: `start --fault` on the user's webhooks (pods, Fail as
// written), through the real apiserver. With the failurePolicy kept, a
// webhook that never answers (timeout, timeoutSeconds 1) or answers HTTP
// 500 (error) fails the pod's create; with hookback's default Ignore the
// same fault admits it. The log's admission lines prove hookback was
// called, so that Ignore does not hide a dead registration.
func TestStartFault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, fault string
		keep        bool
		wantErr     string
	}{
		{name: "timeout-fail", fault: "timeout", keep: true, wantErr: "failed calling webhook"},
		{name: "error-fail", fault: "error", keep: true, wantErr: "hookback fault error"},
		{name: "timeout-ignore", fault: "timeout"},
		// No answer at all: the apiserver's own message, no body of ours.
		{name: "refuse-fail", fault: "refuse", keep: true, wantErr: "failed calling webhook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			up := testUpstream(t, false)
			session := sessionFor(t)
			args := []string{"--session", session, "--webhooks", "none", "--controllers", "none",
				"--webhook-config", userManifests(t, session), "--upstream", up.URL, "--timeout", "1s", "--fault", tc.fault}
			if tc.keep {
				args = append(args, "--keep-failure-policy")
			}
			p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), args...)
			p.ready(t)
			name := "fault-" + tc.name
			_, err := upstreamPod(context.Background(), ns, name, session, nil)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("%s: %v: failurePolicy Ignore should have admitted it", name, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("%s: err = %v, want the create failed with %q", name, err, tc.wantErr)
			case tc.fault == "refuse" && strings.Contains(err.Error(), "hookback fault"):
				t.Fatalf("%s: err = %v: hookback answered, where refuse closes the connection", name, err)
			}
			if err != nil {
				t.Logf("%s: the apiserver said: %v", name, err)
			}
			// The admission's log line is written after its answer has left.
			eventually(t, "hookback's log to show the fault and the call for "+name, func(context.Context) (bool, error) {
				log := p.stderr.String()
				return strings.Contains(log, fmt.Sprintf("name=%s", name)) && strings.Contains(log, "fault injected into your webhooks"), nil
			})
		})
	}
}

// TestStartFaultSwitch: the fault of a live session switched from the
// inspector's page (a same-origin form POST): the pod create that failed
// under error is admitted once switched to none, through the webhook (its
// admission line), and the switch is logged once and shown on the page.
func TestStartFaultSwitch(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	up := testUpstream(t, false)
	session := sessionFor(t)
	addr := "127.0.0.1:" + itoa(freePort(t))
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session, "--webhooks", "none", "--controllers", "none",
		"--webhook-config", userManifests(t, session), "--upstream", up.URL, "--timeout", "1s", "--fault", "error", "--keep-failure-policy",
		"--inspector-address", addr)
	p.ready(t)
	if !strings.Contains(p.stdout.String(), "fault:    error") {
		t.Errorf("the banner does not show the fault:\n%s", p.stdout.String())
	}
	ctx := context.Background()
	if _, err := upstreamPod(ctx, ns, "switch-error", session, nil); err == nil || !strings.Contains(err.Error(), "hookback fault error") {
		t.Fatalf("under error: err = %v, want the create failed", err)
	}
	switchFault(t, "http://"+addr, "none")
	if _, err := upstreamPod(ctx, ns, "switch-none", session, nil); err != nil {
		t.Fatalf("switched to none: %v", err)
	}
	eventually(t, "the admission line of switch-none and the switch logged once", func(context.Context) (bool, error) {
		log := p.stderr.String()
		return strings.Contains(log, "name=switch-none") && strings.Count(log, "fault switched from the inspector") == 1, nil
	})
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if !strings.Contains(string(page), `<strong id="fault" role="status">none</strong>`) {
		t.Errorf("the inspector does not show the fault now:\n%s", page)
	}
}

// switchFault posts the inspector's fault form, as the page does.
func switchFault(t *testing.T, base, to string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/fault", strings.NewReader(url.Values{"fault": {to}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	req.Header.Set("X-Hookback-Fragment", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK || string(b) != to {
		t.Fatalf("switch the fault to %s: %s %q", to, resp.Status, b)
	}
}
