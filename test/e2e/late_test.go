package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// lateUpstream answers its first /validate review after delay, denying;
// every later one at once, the same way; /mutate-pods allows at once.
func lateUpstream(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := answerReviews(t, func(w http.ResponseWriter, r *http.Request, rv review, resp map[string]any) bool {
		if strings.HasPrefix(r.URL.Path, "/validate") {
			if calls.Add(1) == 1 {
				time.Sleep(delay)
			}
			resp["allowed"] = false
			resp["status"] = map[string]any{"code": 403, "message": "late upstream says no to " + rv.Request.Name}
		}
		return true
	})
	return srv, &calls
}

// TestLateAnswer: an upstream that answers after 40 s while hookback's
// timeout is 5 s. The apiserver applies failurePolicy Ignore and admits the
// pod; the answer is still read and reported: one log line, an inspector
// entry marked late, a *_late.json record that replay sends again.
func TestLateAnswer(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	up, calls := lateUpstream(t, 40*time.Second)
	session := sessionFor(t)
	dir := t.TempDir()
	inspector := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session, "--record-dir", dir,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session), "--upstream", up.URL,
		"--timeout", "5s", "--inspector-address", inspector)
	p.ready(t)
	ctx := context.Background()
	sent := time.Now()
	if _, err := upstreamPod(ctx, ns, "late-pod", session, nil); err != nil {
		t.Fatalf("late-pod: %v: the apiserver should have applied failurePolicy Ignore and admitted it", err)
	}
	if took := time.Since(sent); took > 20*time.Second || calls.Load() != 1 {
		t.Fatalf("the create took %s with %d validate calls: want the apiserver's 5s timeout, one call", took, calls.Load())
	}
	var late string
	eventually(t, "the late answer recorded", func(context.Context) (bool, error) {
		files, err := filepath.Glob(filepath.Join(dir, "*_late.json"))
		if len(files) == 0 || err != nil {
			return false, err
		}
		late = files[0]
		return true, nil
	})
	if waited := time.Since(sent); waited < 40*time.Second {
		t.Fatalf("late record after %s, before the upstream answered", waited)
	}
	var entry struct {
		Late   string
		Answer struct{ Response struct{ Allowed bool } }
	}
	b, _ := os.ReadFile(late)
	if err := json.Unmarshal(b, &entry); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(entry.Late, "failurePolicy Ignore applied") || !strings.Contains(entry.Late, `would have denied it: "late upstream says no to late-pod"`) || entry.Answer.Response.Allowed {
		t.Errorf("late record %s", b)
	}
	if log := p.stderr.String(); strings.Count(log, "late answer from your webhook") != 1 {
		t.Errorf("want one log line for the late answer:\n%s", log)
	}
	if page := get(t, "http://"+inspector+"/"); !strings.Contains(page, `<span class="why late">late</span>`) {
		t.Errorf("the inspector's list shows no late entry:\n%s", page)
	}
	if out, errOut, code := hookback(t, env.kubeconfig, "replay", late, "--upstream", up.URL); code != 0 || calls.Load() != 2 {
		t.Errorf("replay of the late record: exit %d, %d calls\n%s\n%s", code, calls.Load(), out, errOut)
	}
}

// stuckUpstream denies each /validate review only once release is closed
// (or its caller hangs up); /mutate-pods allows at once.
func stuckUpstream(t *testing.T, release <-chan struct{}) *httptest.Server {
	t.Helper()
	return answerReviews(t, func(w http.ResponseWriter, r *http.Request, rv review, resp map[string]any) bool {
		if strings.HasPrefix(r.URL.Path, "/validate") {
			select {
			case <-release:
			case <-r.Context().Done():
				return false
			}
			resp["allowed"] = false
			resp["status"] = map[string]any{"code": 403, "message": "stuck upstream says no to " + rv.Request.Name}
		}
		return true
	})
}

// TestLateAnswerAtStop: hookback is stopped while your upstream has still
// not answered a review the apiserver gave up on. hookback waits 3s more
// (the answer never comes), then records that review marked late with no answer, says
// so in one log line, and exits; hookback replay sends the review again.
func TestLateAnswerAtStop(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	release := make(chan struct{})
	up := stuckUpstream(t, release)
	t.Cleanup(func() { close(release) }) // before the server closes
	session := sessionFor(t)
	dir := t.TempDir()
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session, "--record-dir", dir,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session), "--upstream", up.URL,
		"--timeout", "5s")
	p.ready(t)
	if _, err := upstreamPod(context.Background(), ns, "stuck-pod", session, nil); err != nil {
		t.Fatalf("stuck-pod: %v: the apiserver should have applied failurePolicy Ignore and admitted it", err)
	}
	eventually(t, "hookback awaiting the late answer", func(context.Context) (bool, error) {
		return strings.Contains(p.stderr.String(), "hookback still waits for the answer"), nil
	})
	stopped := time.Now()
	p.signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("hookback exited %d\n%s", code, p.stderr.String())
	}
	log := p.stderr.String()
	if took := time.Since(stopped); took < 3*time.Second || took > 20*time.Second {
		t.Errorf("stopping took %s: want the 3s wait for the late answer, and not much more\n%s", took, log)
	}
	if n := strings.Count(log, "hookback stopped before your webhook answered a late review"); n != 1 || !strings.Contains(log, "name=stuck-pod") {
		t.Errorf("want one log line naming stuck-pod:\n%s", log)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*_late.json"))
	if len(files) != 1 || !strings.Contains(files[0], "stuck-pod") {
		t.Fatalf("late records %v, want stuck-pod's", files)
	}
	var entry map[string]json.RawMessage
	b, _ := os.ReadFile(files[0])
	if err := json.Unmarshal(b, &entry); err != nil {
		t.Fatal(err)
	}
	if _, ok := entry["answer"]; ok || !strings.Contains(string(entry["late"]), "hookback stopped") || !strings.Contains(string(entry["late"]), "before your webhook answered") {
		t.Errorf("late record %s: want marked late, without an answer", b)
	}
	answering, _ := lateUpstream(t, 0)
	out, errOut, code := hookback(t, env.kubeconfig, "replay", files[0], "--upstream", answering.URL)
	if code != 1 || !strings.Contains(out, "answer none -> ") || !strings.Contains(out, "late upstream says no to stuck-pod") {
		t.Errorf("replay of the record: exit %d, want 1 (the answer it never got)\n%s\n%s", code, out, errOut)
	}
}
