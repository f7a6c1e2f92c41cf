package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// userManifests is a user's webhook configuration as written for the
// cluster (service references, failurePolicy Fail), selecting only objects
// labelled e2e-upstream=<session>, so concurrent tests never see it.
func userManifests(t *testing.T, session string) string {
	t.Helper()
	sel := fmt.Sprintf(`
    objectSelector:
      matchLabels:
        e2e-upstream: %q`, session)
	doc := `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: my-mutating
webhooks:
  - name: mpod.example.com
    clientConfig:
      service: {namespace: system, name: webhook-service, path: /mutate-pods}
    rules:
      - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}` + sel + `
    failurePolicy: Fail
    sideEffects: None
    admissionReviewVersions: ["v1"]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: my-validating
webhooks:
  - name: vpod.example.com
    clientConfig:
      service: {namespace: system, name: webhook-service, path: /validate}
    rules:
      - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods", "secrets"]}` + sel + `
    failurePolicy: Fail
    sideEffects: None
    admissionReviewVersions: ["v1"]
`
	path := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// review is the part of an AdmissionReview the test upstream reads.
type review struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    struct {
		UID    string `json:"uid"`
		Name   string `json:"name"`
		Object struct {
			Metadata struct {
				Name         string            `json:"name"`
				GenerateName string            `json:"generateName"`
				Labels       map[string]string `json:"labels"`
			} `json:"metadata"`
		} `json:"object"`
	} `json:"request"`
}

// answerReviews is a plain-HTTP webhook server on loopback: it decodes each
// AdmissionReview and replies with resp (allowed, the request's uid) as
// answer leaves it; answer returns false when it replied itself, or means
// to send nothing.
func answerReviews(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, rv review, resp map[string]any) bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(reviewHandler(answer))
	t.Cleanup(srv.Close)
	return srv
}

// answerReviewsTLS is answerReviews over HTTPS, with httptest's
// certificate for 127.0.0.1 (srv.Certificate: its own CA).
func answerReviewsTLS(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, rv review, resp map[string]any) bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(reviewHandler(answer))
	t.Cleanup(srv.Close)
	return srv
}

// reviewHandler decodes each review and answers it as answer says (allowed
// unless it changes resp; false: answer wrote the reply itself).
func reviewHandler(answer func(w http.ResponseWriter, r *http.Request, rv review, resp map[string]any) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rv review
		if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&rv); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := map[string]any{"uid": rv.Request.UID, "allowed": true}
		if !answer(w, r, rv, resp) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": rv.APIVersion, "kind": "AdmissionReview", "response": resp})
	})
}

// testUpstream is a plain-HTTP webhook server on loopback, in any language
// a user might write one: it denies pods whose name starts with "deny-",
// labels the rest, and misbehaves as the pod's "behaviour" label asks.
func testUpstream(t *testing.T, denyAll bool) *httptest.Server {
	t.Helper()
	return answerReviews(t, func(w http.ResponseWriter, r *http.Request, rv review, resp map[string]any) bool {
		switch rv.Request.Object.Metadata.Labels["behaviour"] {
		case "wrong-uid":
			resp["uid"] = "not-" + rv.Request.UID
		case "not-json":
			_, _ = w.Write([]byte("<html>oops</html>"))
			return false
		case "http-500":
			http.Error(w, "boom", http.StatusInternalServerError)
			return false
		case "slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return false
		case "bad-patch":
			resp["patchType"] = "JSONPatch"
			resp["patch"] = base64.StdEncoding.EncodeToString([]byte(`[{"op":"add","path":"/metadata/labels/a","value":"b"},{"op":"add","path":"/spec/containers/99","value":{}}]`))
		case "no-patchtype":
			resp["patch"] = base64.StdEncoding.EncodeToString([]byte(`[{"op":"add","path":"/metadata/labels/x","value":"y"}]`))
		}
		name := rv.Request.Object.Metadata.Name + rv.Request.Object.Metadata.GenerateName
		switch {
		case resp["patch"] != nil || resp["uid"] != rv.Request.UID:
		case (denyAll || strings.HasPrefix(name, "deny-")) && strings.HasPrefix(r.URL.Path, "/validate"):
			resp["allowed"] = false
			resp["status"] = map[string]any{"code": 403, "message": "upstream says no to " + name}
		case strings.HasPrefix(r.URL.Path, "/mutate-pods"):
			resp["patchType"] = "JSONPatch"
			resp["patch"] = base64.StdEncoding.EncodeToString([]byte(`[{"op":"add","path":"/metadata/labels/upstream-seen","value":"yes"}]`))
		}
		return true
	})
}

func upstreamPod(ctx context.Context, ns, name, session string, labels map[string]string) (*corev1.Pod, error) {
	l := map[string]string{"e2e-upstream": session}
	for k, v := range labels {
		l[k] = v
	}
	return env.client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{whAppContainer()}, TerminationGracePeriodSeconds: ptr.To[int64](0)},
	}, metav1.CreateOptions{})
}

// TestYourWebhookThroughHookback: the user's manifests (service
// references) and a plain-HTTP server of theirs, through the real apiserver.
func TestYourWebhookThroughHookback(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	up := testUpstream(t, false)
	session := sessionFor(t)
	manifests := userManifests(t, session)
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", manifests, "--upstream", up.URL)
	p.ready(t)
	ctx := context.Background()

	_, err := upstreamPod(ctx, ns, "deny-me", session, nil)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "upstream says no to deny-me") || !strings.Contains(err.Error(), "vpod.example.com") {
		t.Fatalf("deny-me: err = %v, want the upstream's denial through vpod.example.com", err)
	}
	pod, err := upstreamPod(ctx, ns, "allow-me", session, nil)
	if err != nil {
		t.Fatalf("allow-me: %v", err)
	}
	if pod.Labels["upstream-seen"] != "yes" {
		t.Errorf("allow-me labels %v: the upstream's patch was not applied", pod.Labels)
	}
	line := p.whWaitLogLine(t, "msg=admission", "webhook=mpod.example.com", "namespace="+ns, "decision=allowed", "patch_ops=1", "upstream=")
	if !strings.Contains(line, " own=") {
		t.Errorf("admission line lacks hookback's own time: %s", line)
	}

	// The manifests are edited while start runs (as `make manifests` does):
	// the validating webhook no longer selects pods. hookback re-applies,
	// and a pod the upstream would deny is admitted, patched by the
	// mutating webhook, so the upstream was still called.
	b, err := os.ReadFile(manifests)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), `resources: ["pods", "secrets"]`, `resources: ["secrets"]`, 1)
	if err := os.WriteFile(manifests+".tmp", []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(manifests+".tmp", manifests); err != nil {
		t.Fatal(err)
	}
	p.whWaitLogLine(t, "your manifests changed: re-applying")
	n := 0
	eventually(t, "deny-me admitted once the edited rules are live", func(ctx context.Context) (bool, error) {
		n++
		pod, err := upstreamPod(ctx, ns, fmt.Sprintf("deny-me-%d", n), session, nil)
		return err == nil && pod.Labels["upstream-seen"] == "yes", nil
	})
}

// TestYourWebhookBadUpstreams: every way an upstream can answer wrongly is
// named in the log, and under the rewritten failurePolicy Ignore the
// apiserver admits the pod.
func TestYourWebhookBadUpstreams(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	up := testUpstream(t, false)
	session := sessionFor(t)
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session, "--timeout", "2s",
		"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session), "--upstream", up.URL)
	p.ready(t)
	for _, tc := range []struct{ behaviour, logged string }{
		{"wrong-uid", `upstream answered uid \"not-`},
		{"not-json", "not an AdmissionReview"},
		{"http-500", "upstream answered HTTP 500"},
		{"slow", "did not answer within"},
		{"bad-patch", "patch op 2: path /spec/containers/99"},
		{"no-patchtype", "without patchType"},
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			if _, err := upstreamPod(context.Background(), ns, "bad-"+tc.behaviour, session, map[string]string{"behaviour": tc.behaviour}); err != nil {
				t.Fatalf("pod admitted under failurePolicy Ignore expected, got %v", err)
			}
			p.whWaitLogLine(t, "namespace="+ns, "bad-"+tc.behaviour, tc.logged)
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := "http://" + l.Addr().String()
		l.Close()
		session := sessionFor(t)
		q := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session,
			"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session), "--upstream", closed)
		q.ready(t)
		if _, err := upstreamPod(context.Background(), ns, "refused", session, nil); err != nil {
			t.Fatalf("pod not admitted under failurePolicy Ignore: %v", err)
		}
		q.whWaitLogLine(t, "nothing listens on "+strings.TrimPrefix(closed, "http://"), "is your webhook running?")
	})
}

// TestYourWebhookRecordAndReplay records reviews (a Secret's data
// redacted), then replays them against the same upstream (no difference,
// exit 0) and a changed one (exit 1).
func TestYourWebhookRecordAndReplay(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	up := testUpstream(t, false)
	session := sessionFor(t)
	dir := t.TempDir()
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--session", session, "--record-dir", dir,
		"--webhooks", "none", "--controllers", "none", "--webhook-config", userManifests(t, session), "--upstream", up.URL)
	p.ready(t)
	ctx := context.Background()
	if _, err := upstreamPod(ctx, ns, "recorded", session, nil); err != nil {
		t.Fatal(err)
	}
	const secretValue = "hunter2-e2e-secret"
	if _, err := env.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"e2e-upstream": session}},
		StringData: map[string]string{"password": secretValue},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var files []string
	eventually(t, "three recorded files (two pod webhooks, one secret)", func(context.Context) (bool, error) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return false, err
		}
		files = files[:0]
		for _, e := range entries {
			files = append(files, filepath.Join(dir, e.Name()))
		}
		return len(files) >= 3, nil
	})
	for _, f := range files {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, info.Mode().Perm())
		}
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), secretValue) || strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte(secretValue))) {
			t.Errorf("%s holds the Secret's data", f)
		}
	}
	if strings.Contains(p.stderr.String(), secretValue) {
		t.Error("the log holds the Secret's data")
	}
	if out, errOut, code := hookback(t, env.kubeconfig, "replay", dir, "--upstream", up.URL); code != 0 {
		t.Errorf("replay against the same upstream: exit %d\n%s\n%s", code, out, errOut)
	}
	changed := testUpstream(t, true)
	if out, errOut, code := hookback(t, env.kubeconfig, "replay", dir, "--upstream", changed.URL); code != 1 {
		t.Errorf("replay against a changed upstream: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
}
