package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/internal/syncbuf"
	loadrun "github.com/hookback/hookback/load"
)

// loadPod is a pod the user's webhooks of userManifests select, for a
// session: every create goes through controller-runtime's server.
func loadPod(t *testing.T, session string) string {
	t.Helper()
	doc := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  generateName: load-
  labels: {e2e-upstream: %q}
spec:
  containers: [{name: app, image: nginx}]
`, session)
	path := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoad: `hookback load` through the real apiserver to a user's
// controller-runtime webhook server behind a hookback session: a short
// ramp whose report adds up and shows each webhook from both sides, a
// gate that fails, and Ctrl-C mid-run, which leaves nothing behind.
func TestLoad(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	upstream, _ := startCRUpstream(t)
	session := sessionFor(t)
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session),
		"--upstream", upstream, "--upstream-insecure")
	p.ready(t)
	pod := loadPod(t, session)
	metrics := "--health-address=" + p.health

	t.Run("ramp", func(t *testing.T) {
		plot := filepath.Join(t.TempDir(), "load.svg")
		out, errOut, code := hookback(t, env.kubeconfig, "load", "-n", ns, "-f", pod, "--rate", "20..40", "--steps", "2", "--step", "1s",
			metrics, "-o", "json", "--plot", plot)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		var rep loadrun.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("report: %v\n%s", err, out)
		}
		checkRamp(t, rep)
		svg, err := os.ReadFile(plot)
		if err != nil || !bytes.HasPrefix(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("<polyline")) {
			t.Errorf("plot: %v\n%.200s", err, svg)
		}
	})

	t.Run("gate fails", func(t *testing.T) {
		out, errOut, code := hookback(t, env.kubeconfig, "load", "-n", ns, "-f", pod, "--rate", "10", "--duration", "1s",
			metrics, "--max-p99", "1us", "-o", "junit")
		if code != 1 || !strings.Contains(out, `<failure message="max-p99 (ms) 0.001: worst`) || !strings.Contains(errOut, "a gate failed") {
			t.Errorf("exit %d, want 1 with the gate's failure\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("ctrl-c", func(t *testing.T) {
		cmd := exec.Command(env.binary, "load", "-n", ns, "-f", pod, "--rate", "10..20", "--steps", "60", "--step", "1s", metrics, "-o", "json")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig)
		var stdout, stderr syncbuf.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		eventually(t, "the first step reported", func(context.Context) (bool, error) {
			return strings.Contains(stderr.String(), "msg=step"), nil
		})
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("load still running 10s after Ctrl-C\n%s", stderr.String())
		}
		var rep loadrun.Report
		if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil || !rep.Interrupted || len(rep.Steps) == 0 || len(rep.Steps) > 3 {
			t.Errorf("report after Ctrl-C (%v): interrupted %v, %d steps\n%s", err, rep.Interrupted, len(rep.Steps), stdout.String())
		}
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("exit %d after Ctrl-C, want 1\n%s", code, stderr.String())
		}
		pods, err := env.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "e2e-upstream=" + session})
		if err != nil || len(pods.Items) != 0 {
			t.Errorf("pods left behind in %s: %v, %v", ns, len(pods.Items), err)
		}
	})
}

// checkRamp: the report's counts add up, the achieved rate is within
// reason, and every step shows the user's webhooks as the apiserver and
// hookback saw them, with the user's server's share and hookback's.
func checkRamp(t *testing.T, rep loadrun.Report) {
	t.Helper()
	if len(rep.Steps) != 2 || rep.Steps[0].OfferedRate != 20 || rep.Steps[1].OfferedRate != 40 {
		t.Fatalf("steps %+v, want 20/s then 40/s", rep.Steps)
	}
	answered, served := 0, map[string]float64{}
	for _, s := range rep.Steps {
		checkStep(t, s)
		answered += s.Answered
		seen := map[string]bool{}
		for _, w := range s.Webhooks {
			if !strings.Contains(w.Webhook, "pod.example.com") {
				continue
			}
			seen[w.Source] = true
			if w.P50Ms <= 0 || (w.Source == loadrun.SourceHookback && (w.UpstreamP50Ms == nil || w.OwnMeanMs == nil || *w.OwnMeanMs <= 0)) {
				t.Errorf("step %d webhook row %+v", s.Step, w)
			}
			switch w.Source {
			case loadrun.SourceHookback:
				served[w.Webhook] += w.Calls
			case loadrun.SourceAPIServer:
				// Synchronous: every answer of the step was counted (other
				// tests' sessions register the same webhook names).
				if w.Calls < float64(s.Answered) {
					t.Errorf("step %d: the apiserver counted %g calls of %s for %d answers", s.Step, w.Calls, w.Webhook, s.Answered)
				}
			}
		}
		if !seen[loadrun.SourceHookback] || !seen[loadrun.SourceAPIServer] {
			t.Errorf("step %d: webhook rows from %v, want both the apiserver's and hookback's: %+v (notes %v)", s.Step, seen, s.Webhooks, rep.Notes)
		}
	}
	// hookback counts a call just after answering it: the last few may
	// miss the last reading, none is counted twice.
	for name, n := range served {
		if n > float64(answered) || n < float64(answered)*0.9 {
			t.Errorf("hookback served %g calls of %s for %d requests", n, name, answered)
		}
	}
	if len(served) != 2 {
		t.Errorf("hookback served %v, want both of the user's webhooks", served)
	}
}

// checkStep: counts add up, the rate is within reason, percentiles in
// order, and every request was allowed.
func checkStep(t *testing.T, s loadrun.Step) {
	t.Helper()
	sum := 0
	for _, n := range s.Outcomes {
		sum += n
	}
	if s.Sent != s.Answered || sum != s.Answered || s.Outcomes[loadrun.KindOK] != s.Answered || s.Skipped != 0 {
		t.Errorf("step %d: sent %d, answered %d, outcomes %v (sum %d), skipped %d: want every request answered ok", s.Step, s.Sent, s.Answered, s.Outcomes, sum, s.Skipped)
	}
	if want := int(s.OfferedRate * s.Seconds); s.Sent < want*9/10 || s.Sent > want+1 {
		t.Errorf("step %d sent %d in %gs at %g/s", s.Step, s.Sent, s.Seconds, s.OfferedRate)
	}
	// The achieved rate counts the answers received within the step: some,
	// no more than were answered, and not beyond the rate offered (how
	// many fall within the step depends on the machine's load).
	if s.AchievedRate <= 0 || s.AchievedRate*s.Seconds > float64(s.Answered)+0.5 || s.AchievedRate > s.OfferedRate*1.1 {
		t.Errorf("step %d achieved %g/s of %g/s over %gs, %d answered", s.Step, s.AchievedRate, s.OfferedRate, s.Seconds, s.Answered)
	}
	if !(0 < s.P50Ms && s.P50Ms <= s.P95Ms && s.P95Ms <= s.P99Ms && s.P99Ms <= s.MaxMs) {
		t.Errorf("step %d percentiles out of order: %v %v %v %v", s.Step, s.P50Ms, s.P95Ms, s.P99Ms, s.MaxMs)
	}
}
