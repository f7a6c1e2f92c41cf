package e2e

import (
	"context"
	"fmt"
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
			}
			// The admission's log line is written after its answer has left.
			eventually(t, "hookback's log to show the fault and the call for "+name, func(context.Context) (bool, error) {
				log := p.stderr.String()
				return strings.Contains(log, fmt.Sprintf("name=%s", name)) && strings.Contains(log, "fault injected into your webhooks"), nil
			})
		})
	}
}
