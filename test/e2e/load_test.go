package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
	"github.com/hookback/hookback/load/loadplot"
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
// ramp whose report adds up and shows each webhook from both sides, and
// which the session's inspector shows with the same plot; a gate that
// fails; Ctrl-C mid-run, which leaves nothing behind, the inspector
// showing the run live until then; and load --start's own inspector.
func TestLoad(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	upstream, _ := startCRUpstream(t)
	session := sessionFor(t)
	inspector := "127.0.0.1:" + itoa(freePort(t))
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session),
		"--upstream", upstream, "--upstream-insecure", "--inspector-address", inspector)
	p.ready(t)
	pod := loadPod(t, session)
	metrics := "--health-address=" + p.health
	inspectorFlag := "--inspector-address=" + inspector

	t.Run("ramp", func(t *testing.T) {
		plot := filepath.Join(t.TempDir(), "load.svg")
		out, errOut, code := hookback(t, env.kubeconfig, "load", "-n", ns, "-f", pod, "--rate", "20..40", "--steps", "2", "--step", "1s",
			metrics, inspectorFlag, "-o", "json", "--plot", plot)
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
		// The session's inspector shows the same run and the same drawing.
		view := loadView(t, inspector)
		if !view.Done || len(view.Steps) != 2 || len(rep.Notes) != 0 {
			t.Errorf("the inspector's view: done %v, %d steps (notes %v)", view.Done, len(view.Steps), rep.Notes)
		}
		for i, s := range view.Steps {
			if r := rep.Steps[i]; s.OfferedRate != r.OfferedRate || s.AchievedRate != r.AchievedRate || s.P99Ms != r.P99Ms || s.Sent != r.Sent {
				t.Errorf("the inspector's step %+v differs from the report's %+v", s, r)
			}
		}
		if got := get(t, "http://"+inspector+"/load/plot.svg"); got != string(svg) {
			t.Errorf("the inspector's plot differs from --plot's:\n%.300s", got)
		}
		if page := get(t, "http://"+inspector+"/load"); !strings.Contains(page, "done, every gate passed") || strings.Contains(page, `http-equiv="refresh"`) {
			t.Errorf("the inspector's load page after the run:\n%s", page)
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
		cmd := exec.Command(env.binary, "load", "-n", ns, "-f", pod, "--rate", "10..20", "--steps", "60", "--step", "1s", metrics, inspectorFlag, "-o", "json")
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
		// Live: the inspector has the step the load logged, the run going on.
		if view := loadView(t, inspector); view.Done || len(view.Steps) == 0 || view.Planned != 60 {
			t.Errorf("the inspector mid-run: done %v, %d steps of %d", view.Done, len(view.Steps), view.Planned)
		}
		if page := get(t, "http://"+inspector+"/load"); !strings.Contains(page, `http-equiv="refresh"`) || !strings.Contains(page, "running: step") {
			t.Errorf("the inspector's load page mid-run does not reload itself:\n%s", page)
		}
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
		if view := loadView(t, inspector); !view.Done || !view.Interrupted || len(view.Steps) != len(rep.Steps) {
			t.Errorf("the inspector after Ctrl-C: done %v, interrupted %v, %d steps; the report has %d", view.Done, view.Interrupted, len(view.Steps), len(rep.Steps))
		}
	})

	t.Run("start with its inspector", func(t *testing.T) {
		loadStartInspector(t, ns, pod)
	})
}

// loadView is the load run an inspector shows.
func loadView(t *testing.T, inspector string) loadplot.Run {
	t.Helper()
	var v loadplot.Run
	if err := json.Unmarshal([]byte(get(t, "http://"+inspector+"/load.json")), &v); err != nil {
		t.Fatalf("the inspector's load.json: %v", err)
	}
	return v
}

// loadStartInspector: load --start with --inspector-address serves the
// session's inspector for the run, and it shows the run's steps and plot
// as they end (the built-in pod-name, which allows the pod, is called:
// hookback's row counts it).
func loadStartInspector(t *testing.T, ns, pod string) {
	inspector := "127.0.0.1:" + itoa(freePort(t))
	args := append([]string{"load", "--start"}, startArgs(t, sessionFor(t), freePort(t), "127.0.0.1:"+itoa(freePort(t)))[1:]...)
	args = append(args, "--webhooks", "pod-name", "--controllers", "none", "--inspector-address", inspector,
		"-n", ns, "-f", pod, "--rate", "10..20", "--steps", "3", "--step", "1s", "-o", "json")
	cmd := exec.Command(env.binary, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig)
	var stdout, stderr syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	var view loadplot.Run
	eventually(t, "the first step on the inspector of load --start", func(context.Context) (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("load --start ended before its inspector showed a step: %v\n%s\n%s", err, stdout.String(), stderr.String())
		default:
		}
		resp, err := http.Get("http://" + inspector + "/load.json")
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, nil
		}
		return json.NewDecoder(resp.Body).Decode(&view) == nil && len(view.Steps) > 0, nil
	})
	if view.Namespace != ns || view.Steps[0].OfferedRate != 10 || view.Steps[0].Sent == 0 {
		t.Errorf("the inspector of load --start: %+v", view)
	}
	if svg, err := http.Get("http://" + inspector + "/load/plot.svg"); err != nil || svg.StatusCode != http.StatusOK || svg.Header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("the inspector of load --start serves no plot: %v %v", err, svg)
	} else {
		svg.Body.Close()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("load --start: %v\n%s", err, stderr.String())
		}
	case <-time.After(deadline):
		t.Fatalf("load --start still running after %s", deadline)
	}
	var rep loadrun.Report
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil || len(rep.Steps) == 0 {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	calls := 0.0
	for _, s := range rep.Steps {
		for _, w := range s.Webhooks {
			if w.Source == loadrun.SourceHookback && w.Webhook == "pod-name" {
				calls += w.Calls
			}
		}
	}
	if calls == 0 || len(rep.Notes) != 0 {
		t.Errorf("hookback counted %g calls of pod-name (notes %v)", calls, rep.Notes)
	}
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
