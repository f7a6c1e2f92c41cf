package webhooks

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hookback/hookback/admission"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cachedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f8-abcde", Namespace: "demo", UID: "7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d"},
		Spec:       corev1.PodSpec{NodeName: "kwok-node-0"},
	}
}

func TestEviction(t *testing.T) {
	const (
		alice = "Normal Evicting Eviction requested by alice@example.com (pod on node kwok-node-0)"
		bob   = "Normal Evicting Eviction requested by system:serviceaccount:ops:drainer (pod on node kwok-node-0)"
	)
	tests := []struct {
		fixture    string
		wantEvents []string
		wantLog    string // a fragment of the log line
	}{
		{fixture: "v1-policy-v1", wantEvents: []string{alice}, wantLog: `"msg":"eviction requested","webhook":"pod-eviction","namespace":"demo","pod":"web-7d9f8-abcde","node":"kwok-node-0","user":"alice@example.com"`},
		{fixture: "v1beta1-policy-v1beta1", wantEvents: []string{bob}, wantLog: `"user":"system:serviceaccount:ops:drainer"`},
		{fixture: "v1-policy-v1beta1", wantEvents: []string{alice}},
		{fixture: "v1beta1-policy-v1", wantEvents: []string{bob}},
		{fixture: "v1-dryrun-request"},
		{fixture: "v1beta1-dryrun-request"},
		{fixture: "v1-dryrun-deleteoptions-v1"},
		{fixture: "v1beta1-dryrun-deleteoptions-v1beta1"},
		{fixture: "v1-pod-not-cached", wantLog: `"msg":"eviction of a pod not in the cache","webhook":"pod-eviction","namespace":"demo","pod":"ghost"`},
		{fixture: "v1-undecodable", wantLog: `"msg":"cannot decode eviction; allowing it"`},
		{fixture: "v1beta1-malformed", wantLog: `"msg":"cannot decode eviction; allowing it"`},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			var logs bytes.Buffer
			deps, rec, _ := testDeps(cachedPod())
			deps.Log = slog.New(slog.NewJSONHandler(&logs, nil))
			h := buildOne(t, NamePodEviction, DefaultOptions(), deps)
			resp := h.Handle(context.Background(), loadRequest(t, NamePodEviction, tt.fixture))
			// Always allowed: the webhook observes, it never blocks.
			checkDecision(t, resp, true, http.StatusOK, "")
			if len(resp.Patch) != 0 {
				t.Errorf("validating webhook returned a patch: %s", resp.Patch)
			}
			if got := drain(rec); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events = %q, want %q", got, tt.wantEvents)
			}
			if !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("log %s lacks %s", logs.String(), tt.wantLog)
			}
			if strings.Contains(logs.String(), `"kind":"Eviction"`) {
				t.Errorf("log carries the object body: %s", logs.String())
			}
		})
	}
}

// The v1beta1 body is read into policy/v1 with its delete options intact.
func TestDecodeEvictionV1beta1(t *testing.T) {
	body := `{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"p","namespace":"demo"},` +
		`"deleteOptions":{"gracePeriodSeconds":5,"preconditions":{"uid":"u-1"}}}`
	var req admission.Request
	req.Object.Raw = []byte(body)
	ev, err := decodeEviction(req)
	if err != nil {
		t.Fatal(err)
	}
	if ev.APIVersion != "policy/v1" || ev.Name != "p" || ev.Namespace != "demo" ||
		ev.DeleteOptions == nil || *ev.DeleteOptions.GracePeriodSeconds != 5 || *ev.DeleteOptions.Preconditions.UID != "u-1" {
		t.Errorf("decoded %+v", ev)
	}
	// Without an apiVersion in the body, the request's kind says which.
	req.Object.Raw = []byte(`{"metadata":{"name":"p"}}`)
	req.Kind = metav1.GroupVersionKind{Group: "policy", Version: "v1beta1", Kind: "Eviction"}
	if ev, err := decodeEviction(req); err != nil || ev.Name != "p" {
		t.Errorf("decodeEviction without apiVersion = %+v, %v", ev, err)
	}
	req.Object.Raw = []byte(`{"apiVersion":"v1","kind":"Pod"}`)
	if _, err := decodeEviction(req); err == nil {
		t.Error("a Pod body decoded as an Eviction")
	}
}
